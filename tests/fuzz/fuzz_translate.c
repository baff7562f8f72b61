/* tests/fuzz/fuzz_translate.c — libFuzzer target for the λcu translation.
 *
 * Bytes that parse, link and check as a VCODE program are inlined, split
 * into basic blocks, and every block with vector instructions is planned
 * with fusion off and on: dataflow graph, lowering, length classes, the
 * fusion ILP (lp_solve, bounded by solver work) or greedy schedule, rewriting,
 * and the validator on every resulting kernel. A block may be refused
 * (plan_build returns -1 for a type conflict, say), but a kernel the
 * validator rejects after fusion is a bug in the rewriter: the target
 * aborts so that libFuzzer records the input. Nothing is executed. */
#include "translate/dfg.h"
#include "translate/inline.h"
#include "translate/plan.h"
#include "vcode/program.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Keep each input cheap: the ILP is exponential in the worst case. */
#define MAX_CODE 3000

static void plan_all(const Program *p, int fusion)
{
    Block *blocks = NULL;
    int nb = dfg_blocks(p, &blocks);
    for (int k = 0; k < nb; k++) {
        if (blocks[k].nvector == 0)
            continue;
        PlanOptions po;
        memset(&po, 0, sizeof po);
        po.fusion = fusion;
        po.fuse.ilp_max_work = 2000000; /* about 0.05 s */
        po.fuse.max_nodes = 40;
        BlockPlan bp;
        char msg[400];
        if (plan_build(p, &blocks[k], &po, &bp, msg, sizeof msg) == 0) {
            plan_free(&bp);
        } else if (strstr(msg, "invalid kernel")) {
            fprintf(stderr, "fuzz_translate: %s\n", msg);
            abort();
        }
    }
    free(blocks);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Program p, inl;
    VcError err;
    if (vc_parse_string("fuzz.vcode", (const char *)data, size, &p, &err) == 0 && vc_link(&p, &err) == 0 &&
        p.ncode <= MAX_CODE && vc_check(&p, &err) == 0) {
        InlineStats st;
        inline_program(&p, &inl, NULL, &st);
        if (inl.ncode <= 4 * MAX_CODE && vc_check(&inl, &err) == 0) {
            plan_all(&inl, 0);
            plan_all(&inl, 1);
        }
        vc_free(&inl);
    }
    vc_free(&p);
    return 0;
}

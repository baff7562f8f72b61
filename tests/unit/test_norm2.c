/* tests/unit/test_norm2.c — the norm2 example of the λcu paper (§5) as one
 * VCODE block: sum1 = sum(xs); gts = the positive xs; sum2 = sum(gts);
 * results xs / sum1 and xs / sum2. The ILP must choose the paper's two
 * clusters, and the rewrite must give its KF1 (one REDUCE producing both
 * sums, the filter folded in) and KF2 (one MAP producing both results).
 *
 * The expected kernels are the paper's, written in this project's
 * notation by hand: variables are the block's values (x1 the descriptor,
 * x2 xs, x4 the constant 0.0 that DIST spreads), the filter's predicate
 * `x > 0` reads the spread zero, and divisions read the spread sums
 * through seg_of. */
#include "check.h"
#include "translate/dfg.h"
#include "translate/lcu.h"
#include "translate/plan.h"
#include "vcode/program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *norm2 =
    "FUNC MAIN\n"
    "CONST INT 4\n"
    "MAKE_SEGDES\n"
    "CONST FLOAT (1.0 -2.0 3.0 4.0)\n"
    "{ the block under test: [sd xs] -> [xs/sum1 xs/sum2] }\n"
    "COPY 2 0\n"
    "CPOP 1 1\n"
    "+_REDUCE FLOAT\n"          /* sum1 */
    "CONST FLOAT 0.0\n"
    "COPY 1 3\n"
    "DIST FLOAT\n"
    "COPY 1 2\n"
    "CPOP 1 1\n"
    "> FLOAT\n"                 /* flags: x > 0 */
    "COPY 1 2\n"
    "CPOP 1 1\n"
    "COPY 1 4\n"
    "PACK FLOAT\n"              /* gts and its descriptor */
    "+_REDUCE FLOAT\n"          /* sum2 */
    "COPY 1 1\n"
    "COPY 1 4\n"
    "DIST FLOAT\n"
    "COPY 1 3\n"
    "CPOP 1 1\n"
    "/ FLOAT\n"                 /* res1 */
    "COPY 1 1\n"
    "COPY 1 5\n"
    "DIST FLOAT\n"
    "COPY 1 4\n"
    "CPOP 1 1\n"
    "/ FLOAT\n"                 /* res2 */
    "CPOP 2 4\n"
    "POP 2 0\n"
    "POP 2 2\n"
    "RET\n";

static const char *kf1 =
    "kernel K0 (x1 : segdes, x2 : [float], x4 : [float]) -> (x3, x9) {\n"
    "  let (x3, x9) = SEG_REDUCE { i => (x2[i], if x2[i] > x4[seg_of(x1, i)] then x2[i] else 0.0) "
    "using x1, x2, x4 } (fadd, fadd) x1\n"
    "  return (x3, x9)\n"
    "}\n";

static const char *kf2 =
    "kernel K1 (x1 : segdes, x2 : [float], x3 : [float], x9 : [float]) -> (x11, x13) {\n"
    "  let (x11, x13) = MAP { i => (x2[i] / x3[seg_of(x1, i)], x2[i] / x9[seg_of(x1, i)]) "
    "using x1, x2, x3, x9 } (#x2)\n"
    "  return (x11, x13)\n"
    "}\n";

int main(void)
{
    Program p;
    VcError e;
    CHECK(vc_parse_string("norm2.vcode", norm2, strlen(norm2), &p, &e) == 0);
    CHECK(vc_link(&p, &e) == 0);
    CHECK(vc_check(&p, &e) == 0);
    Block *blocks;
    int nb = dfg_blocks(&p, &blocks);
    CHECK(nb == 1);
    PlanOptions po;
    memset(&po, 0, sizeof po);
    po.fusion = 1;
    po.fuse.max_nodes = 60;
    BlockPlan bp;
    char msg[300];
    CHECK(plan_build(&p, &blocks[0], &po, &bp, msg, sizeof msg) == 0);
    /* Two kernels, after four host steps (two constants, MAKE_SEGDES, 0.0). */
    int nk = 0;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    for (int i = 0; i < bp.nsteps; i++)
        if (bp.steps[i].kind == STEP_KERNEL) {
            nk++;
            lcu_print_kernel(f, bp.steps[i].k, bp.types);
        }
    fclose(f);
    CHECK(nk == 2);
    CHECK(!bp.fr.fell_back);
    CHECK(bp.kernels_unfused == 9 && bp.kernels_fused == 2);
    char want[2000];
    snprintf(want, sizeof want, "%s%s", kf1, kf2);
    CHECK(text && strcmp(text, want) == 0);
    if (text && strcmp(text, want) != 0)
        fprintf(stderr, "--- expected:\n%s--- got:\n%s", want, text);
    free(text);
    plan_free(&bp);
    free(blocks);
    vc_free(&p);
    return check_report("norm2");
}

/* tests/unit/test_dev_ops.c — which instructions the interpreter shows the
 * device tier's hook (interp.h dev_ops, runtime/fused/cuda_tier.h
 * cuda_tier_ops): every one with operands or a device implementation, IF
 * (taken ahead of its condition) and CONST (a long vector constant), never
 * the stack's moves, calls and branches' ends, the timers and I/O; and
 * the interpreter asks the hook about those alone, running the rest
 * itself with the same results. */
#include "check.h"
#include "runtime/fused/cuda_tier.h"
#include "runtime/interp/interp.h"
#include "vcode/optable.h"
#include "vcode/program.h"

#include <string.h>

static int seen[OP_COUNT];

/* A hook that takes nothing: it counts what it is asked about. */
static int counting_hook(void *ctx, Interp *it, const Instr *ins, int run)
{
    (void)ctx, (void)it;
    CHECK(!run);
    seen[ins->op]++;
    return 0;
}

/* SRC run with the counting hook and MASK (NULL: every instruction); its
 * stack's top as an Int. */
static int32_t run_with(const char *src, const uint8_t *mask)
{
    Program p;
    VcError e;
    memset(&p, 0, sizeof p);
    if (vc_parse_string("t.vcode", src, strlen(src), &p, &e) < 0 || vc_link(&p, &e) < 0) {
        fprintf(stderr, "parse: %s\n", e.msg);
        return -1;
    }
    InterpOptions opt;
    memset(&opt, 0, sizeof opt);
    Interp it;
    interp_init(&it, &p, &opt);
    it.dev_op = counting_hook;
    it.dev_ops = mask;
    memset(seen, 0, sizeof seen);
    int rc = interp_run(&it);
    int32_t top = -1;
    if (rc == 0 && it.sp > 0 && it.stk[it.sp - 1]->type == VT_INT)
        top = ((const int32_t *)it.stk[it.sp - 1]->data)[0];
    interp_free(&it);
    vc_free(&p);
    return top;
}

int main(void)
{
    const uint8_t *w = cuda_tier_ops();
    /* what the tier runs or must see */
    int want[] = { OP_ADD, OP_LT, OP_SELECT, OP_PLUS_SCAN, OP_PLUS_REDUCE, OP_PERMUTE, OP_BPERMUTE, OP_DPERMUTE,
                   OP_PACK, OP_EXTRACT, OP_REPLACE, OP_DIST, OP_INDEX, OP_RAND, OP_MAKE_SEGDES, OP_LENGTHS,
                   OP_RANK_UP, OP_CONST, OP_IF, OP_LENGTH };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        CHECK(w[want[k]] == 1);
    /* what it never runs and that reads no operand */
    int not_[] = { OP_COPY, OP_POP, OP_CPOP, OP_PAIR, OP_UNPAIR, OP_CALL, OP_RET, OP_ELSE, OP_ENDIF, OP_EXIT,
                   OP_START_TIMER, OP_STOP_TIMER, OP_WRITE, OP_READ };
    for (size_t k = 0; k < sizeof not_ / sizeof not_[0]; k++)
        CHECK(w[not_[k]] == 0);
    /* the interpreter asks about the masked-in ones alone, the same answer */
    const char *src = "FUNC MAIN1_1\nCONST INT 3\nCOPY 1 0\nCALL F_2\nCONST BOOL T\nIF\nCONST INT 1\nELSE\n"
                      "CONST INT 2\nENDIF\nPOP 1 0\nRET\nFUNC F_2\n+ INT\nRET\n";
    CHECK(run_with(src, NULL) == 6);
    CHECK(seen[OP_COPY] == 1 && seen[OP_CALL] == 1 && seen[OP_RET] == 2 && seen[OP_ADD] == 1 && seen[OP_IF] == 1);
    CHECK(run_with(src, w) == 6);
    CHECK(seen[OP_COPY] == 0 && seen[OP_CALL] == 0 && seen[OP_RET] == 0 && seen[OP_ELSE] == 0 &&
          seen[OP_ENDIF] == 0 && seen[OP_POP] == 0);
    CHECK(seen[OP_ADD] == 1 && seen[OP_IF] == 1 && seen[OP_CONST] == 3);
    return check_report("test_dev_ops");
}

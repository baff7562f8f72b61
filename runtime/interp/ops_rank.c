/* runtime/interp/ops_rank.c — RANK_UP and RANK_DOWN (vcode/SPEC.md §4.7). */
#include "runtime/interp/ops.h"
#include "runtime/core/rank.h"

void op_rank(Interp *it, const Instr *ins)
{
    Value *d = vs_at(it, 1), *sd = vs_at(it, 0);
    ops_check_segments(sd);
    Value *r = val_new(VT_INT, d->len);
    rank_segments(d, sd, ins->op == OP_RANK_DOWN, VI(r));
    ops_finish(it, 2, r);
}

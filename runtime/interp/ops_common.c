/* runtime/interp/ops_common.c — helpers shared by the op implementations. */
#include "runtime/interp/ops.h"
#include "runtime/core/errors.h"

void ops_finish(Interp *it, int k, Value *res)
{
    for (int i = 0; i < k; i++)
        val_release(it->stk[--it->sp]);
    it->stk[it->sp++] = res; /* k >= 1, so there is room */
}

Value *ops_reusable(Interp *it, ValType t, int64_t len, const int *depths)
{
    size_t es = val_esize(t);
    for (; *depths >= 0; depths++) {
        Value *v = vs_at(it, *depths);
        if (v->rc == 1 && !v->lazy && v->len == len && v->type != VT_PAIR && v->type != VT_SEGDES &&
            val_esize((ValType)v->type) == es && val_unique(v))
            return v;
    }
    return NULL;
}

void ops_check_segments(Value *sd)
{
    if (!sd->sane && seg_check_ranges(sd) != 0)
        rt_fatal("segment descriptor with negative lengths does not fit its data");
}

/* runtime/fused/lcu_eval.h — the reference evaluator for λcu kernels: runs a
 * kernel on the host, one index at a time in increasing order, so that its
 * results are bit-identical to the reference interpreter's (same order of
 * float operations, same integer wrap-around, same VCODE conversion
 * rules). Errors (a subscript outside its array, integer division by zero,
 * RAND of 0, a segment index outside its descriptor) are fatal through
 * rt_fatal, naming the current instruction. */
#ifndef TRANSLATE_LCU_EVAL_H
#define TRANSLATE_LCU_EVAL_H

#include "translate/lcu.h"
#include "runtime/core/value.h"

/* The value type of a λcu variable type. */
static inline ValType lcu_val_type(const LcuVarType *t)
{
    if (t->kind == LV_SEGDES)
        return VT_SEGDES;
    return t->base == VS_FLOAT ? VT_FLOAT : t->base == VS_BOOL ? VT_BOOL : VT_INT;
}

/* ENV maps plan variables to values. The kernel's params must be bound
 * (non-NULL); every variable the kernel binds is stored into ENV as a new
 * reference (a previous value there is released). Internal variables the
 * kernel binds but does not return are released before returning. TYPES
 * gives each variable's type (arrays: element type). */
void lcu_eval_kernel(const LcuKernel *k, Value **env, const LcuVarType *types, int nvars);

/* One SOAC alone (the compiled backends' library calls): its results are
 * stored into ENV as lcu_eval_kernel stores a kernel's. */
void lcu_eval_soac(const LcuSoac *s, Value **env, const LcuVarType *types, int nvars);

/* Evaluation counters, for -d stats: kernels run, SOACs run, elements
 * visited by thunks. */
typedef struct {
    int64_t kernels;
    int64_t soacs;
    int64_t thunk_calls;
} LcuEvalStats;
const LcuEvalStats *lcu_eval_stats(void);

/* After a kernel of K ran: release the values of its internal variables
 * (SOAC results it does not return), ENV indexed through MAP (NULL: by
 * the variable itself). Every executor does this. */
void lcu_release_internal(const LcuKernel *k, const int *map, Value **env);

#endif

/* runtime/fused/exec_lcu.c — the lcu executor: kernels run by the λcu reference
 * evaluator (runtime/fused/lcu_eval.c), one element at a time. */
#include "runtime/fused/executor.h"
#include "runtime/core/errors.h"
#include "runtime/fused/lcu_eval.h"

#include <stdlib.h>

static void lcu_run(Executor *x, int block, const BlockPlan *bp, int step, Value **env)
{
    (void)x;
    (void)block;
    lcu_eval_kernel(bp->steps[step].k, env, bp->types, bp->nvars);
}

static void lcu_report(Executor *x, FILE *f)
{
    (void)x;
    const LcuEvalStats *s = lcu_eval_stats();
    fprintf(f, "stats: lcu evaluator: %lld kernels, %lld SOACs, %lld thunk calls\n", (long long)s->kernels,
            (long long)s->soacs, (long long)s->thunk_calls);
}

static void lcu_free(Executor *x) { free(x); }

Executor *exec_lcu_new(void)
{
    Executor *x = rt_xcalloc(1, sizeof *x);
    x->name = "lcu";
    x->run_kernel = lcu_run;
    x->report = lcu_report;
    x->free = lcu_free;
    return x;
}

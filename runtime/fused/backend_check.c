/* runtime/fused/backend_check.c — --check: a fused block's run compared
 * with the reference's, one instruction at a time, with error bounds
 * (check_bound.h). */
#include "runtime/fused/backend_impl.h"
#include "runtime/core/clock.h"
#include "runtime/core/errors.h"
#include "runtime/fused/lcu_eval.h"
#include "runtime/interp/ops.h"
#include "vcode/optable.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void describe(FILE *f, const Value *v, int64_t i)
{
    if (v->type == VT_PAIR) {
        fputs("a pair", f);
        return;
    }
    fprintf(f, "%s of length %lld", val_type_name((ValType)v->type), (long long)v->len);
    if (i >= 0 && i < v->len) {
        if (v->type == VT_FLOAT)
            fprintf(f, ", element %lld = %.17g", (long long)i, VF(v)[i]);
        else
            fprintf(f, ", element %lld = %d", (long long)i, VI(v)[i]);
    }
}

/* The block's outputs are on the stack (the backend's); INS holds its
 * inputs (bottom to top, owned). Run the reference over the inputs from
 * the same random state and compare; the first difference ends the run. */
void check_block(Backend *b, Interp *it, int k, Value **ins, const RandState *rand_before)
{
    BlockEntry *e = &b->entries[k];
    BlockPlan *bp = &e->plan;
    const Dfg *g = &bp->dfg;
    int nout = g->nout;
    Value **outs = rt_xmalloc((size_t)(nout ? nout : 1) * sizeof *outs);
    for (int i = nout - 1; i >= 0; i--) {
        outs[i] = vs_pop(it);
        val_for_host(outs[i]);
    }
    for (int j = 0; j < g->nin; j++)
        val_for_host(ins[j]);
    RandState rand_after = *rnd_global();
    *rnd_global() = *rand_before;
    for (int j = 0; j < g->nin; j++)
        vs_push(it, ins[j]);
    /* The reference, one instruction at a time, with the error bound of
     * every value (check_bound.h): what the backend may differ by. */
    CbOptions co = { b->x->libm_ulps };
    CbRun *cr = cb_run_block(it, bp->blk.start, bp->blk.end, &co);
    const Program *p = b->prog;
    int bad = -1;
    int64_t at = -1;
    double bound_at = 0.0;
    for (int i = 0; i < nout && bad < 0; i++) {
        const CbBound *cb = cb_bound_at(cr, nout - 1 - i);
        if (cb && cb->unverifiable) {
            b->check_unverifiable++;
            continue;
        }
        at = cb_first_difference(outs[i], it->stk[it->sp - nout + i], cb, b->opt.check_rel, &bound_at);
        if (at >= 0)
            bad = i;
        else if (cb)
            b->check_bounded++, b->check_free += cb_free_elements(cb);
        else
            b->check_exact++;
    }
    cb_run_free(cr);
    int rand_bad = memcmp(&rand_after, rnd_global(), sizeof rand_after) != 0;
    if (bad >= 0 || rand_bad) {
        FILE *f = stderr;
        fflush(stdout);
        int lo, hi;
        vc_line_range(p, bp->blk.start, bp->blk.end, &lo, &hi);
        fprintf(f, "vinterp: --check: the %s backend and the reference differ in the block at lines %d-%d "
                   "(function %s)\n",
                b->x->name, lo, hi, p->funcs[bp->blk.func].name);
        if (bad >= 0) {
            fprintf(f, "  output %d (stack depth %d): %s gives ", bad, nout - 1 - bad, b->x->name);
            describe(f, outs[bad], at);
            fputs("; the reference gives ", f);
            describe(f, it->stk[it->sp - nout + bad], at);
            const Value *o = outs[bad];
            if (o->type == it->stk[it->sp - nout + bad]->type && o->len == it->stk[it->sp - nout + bad]->len) {
                if (o->type != VT_FLOAT)
                    fputs("; it must be exact there", f);
                else if (bound_at > 0.0)
                    fprintf(f, "; the bound there is %.2g", bound_at);
                else
                    fputs("; the bound there is 0 (exact)", f);
                if (o->type == VT_FLOAT && b->opt.check_rel > 0.0)
                    fprintf(f, ", plus --check-rel=%g relative", b->opt.check_rel);
            }
            fputs("\n", f);
        } else {
            fprintf(f, "  the random number stream advanced differently\n");
        }
        fprintf(f, "  fused kernels of the block:\n");
        for (int s = 0; s < bp->nsteps; s++) {
            if (bp->steps[s].kind != STEP_KERNEL)
                continue;
            lcu_print_kernel(f, bp->steps[s].k, bp->types);
            char buf[1024];
            const char *w = b->x->where ? b->x->where(b->x, k, s, buf, sizeof buf) : NULL;
            if (w)
                fprintf(f, "  generated code: %s\n", w);
        }
        for (int i = 0; i < nout; i++)
            val_release(outs[i]);
        free(outs);
        rt_exit_status(1);
    }
    /* Keep the backend's values (equal within the bounds). */
    for (int i = 0; i < nout; i++)
        val_release(vs_pop(it));
    for (int i = 0; i < nout; i++)
        vs_push(it, outs[i]);
    free(outs);
    *rnd_global() = rand_after;
    b->checked++;
}

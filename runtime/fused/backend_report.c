/* runtime/fused/backend_report.c — the block-plan driver's figures: -d
 * stats (backend_report, backend_times, the tiers' lines) and --profile's
 * kernel table. */
#include "runtime/fused/backend_impl.h"
#include "runtime/core/clock.h"
#include "runtime/core/errors.h"
#include "runtime/fused/lcu_eval.h"
#include "runtime/fused/tuning.h"
#include "runtime/interp/ops.h"
#include "vcode/optable.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A plan that is there to read (not one the worker may still write). */
int plan_readable(const Backend *b, const BlockEntry *e)
{
    int st = atomic_load(&e->state);
    return e->planned && !(b->worker_stuck && st == BS_QUEUED);
}

static void tier_report(const Backend *b, FILE *f)
{
    const TierOptions *t = &b->opt.tier;
    int64_t queued = 0, fused = 0, never = 0, abandoned = b->abandoned;
    double compile = 0.0;
    for (int k = 0; k < b->nblocks; k++) {
        const BlockEntry *e = &b->entries[k];
        int st = atomic_load(&e->state);
        int killed = st == BS_FAILED && e->abandoned;
        queued += st == BS_QUEUED || st == BS_READY || killed;
        abandoned += killed;
        fused += st == BS_FUSED;
        never += e->promoted_t < 0 && e->entries > 0;
        if (plan_readable(b, e))
            compile += e->compile_s;
    }
    fprintf(f, "stats: tiers (%s; promote at work %lld, runs under %lld elements interpreted): %lld promoted, "
               "%lld installed, %lld demoted, %lld failed, %lld not ready by the end (%lld abandoned), %lld blocks "
               "run only interpreted (%lld of them hot, untranslated: slower fused in earlier runs); background "
               "compile %.6f s\n",
            tier_mode_name(t->mode), (long long)t->work, (long long)t->min_len, (long long)b->promotions,
            (long long)b->installs, (long long)b->demotions, (long long)b->failures, (long long)queued,
            (long long)abandoned, (long long)never, (long long)b->slow_skipped, compile);
    (void)fused;
    int64_t after = tier_after_count(b);
    if (after > 0)
        fprintf(f, "stats: tiers: %lld hot blocks without their code at the end: compiled into the cache after the "
                   "output (VINTERP_TIER_AFTER=%s), for the next run\n",
                (long long)after, t->after == TIER_AFTER_WAIT ? "wait" : "detach");
    if (b->quick_installs) {
        /* staged (Executor.staged): quick code first, the full code later */
        int64_t pending = 0;
        double full_s = 0.0;
        for (int k = 0; k < b->nblocks; k++) {
            int r = atomic_load(&b->entries[k].refine);
            pending += r == RF_QUEUED || r == RF_RUNNING || r == RF_READY;
            if (r == RF_READY || r == RF_FAILED || r == RF_DONE)
                full_s += b->entries[k].refine_s;
        }
        fprintf(f, "stats: tiers: staged compiles: %lld blocks installed with quick code first, %lld of them given "
                   "their full code (compiled in %.6f s), %lld full compiles failed, %lld not swapped in by the end\n",
                (long long)b->quick_installs, (long long)b->refines, full_s, (long long)b->refines_failed,
                (long long)pending);
    }
    /* Per block: the promoted ones, then the busiest of the others. */
    int top[8], ntop = 0;
    for (int k = 0; k < b->nblocks; k++) {
        const BlockEntry *e = &b->entries[k];
        if (e->promoted_t >= 0 || !e->entries)
            continue;
        int at = ntop < 8 ? ntop++ : 8;
        while (at > 0 && b->entries[top[at - 1]].elements < e->elements) {
            if (at < 8)
                top[at] = top[at - 1];
            at--;
        }
        if (at < 8)
            top[at] = k;
    }
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? ntop : b->nblocks;
        for (int i = 0; i < n; i++) {
            int k = pass ? top[i] : i;
            const BlockEntry *e = &b->entries[k];
            if (!pass && e->promoted_t < 0)
                continue;
            int st = atomic_load(&e->state);
            const char *tier = st == BS_FUSED ? "fused" : e->demoted ? "demoted" : st == BS_QUEUED ? "compiling"
                               : st == BS_READY ? "ready, unused" : "interpreted";
            int lo, hi;
            vc_line_range(b->prog, b->blocks[k].start, b->blocks[k].end, &lo, &hi);
            fprintf(f, "stats: tier: block %d (lines %d-%d, %s): %s; %lld entries (%lld short", k, lo, hi,
                    b->prog->funcs[b->blocks[k].func].name, tier, (long long)e->entries, (long long)e->short_runs);
            if (e->lazy_runs)
                fprintf(f, ", %lld with a lazy fill", (long long)e->lazy_runs);
            fprintf(f, "), %lld elements, %lld fused runs", (long long)e->elements, (long long)e->runs);
            if (e->promoted_t >= 0) {
                fprintf(f, "; promoted at entry %lld (%.6f s)", (long long)e->promoted_entry, e->promoted_t);
                if (plan_readable(b, e) && (st != BS_QUEUED))
                    fprintf(f, ", translated in %.6f s, compiled in %.6f s (%d compiled, %d cache hits)",
                            e->translate_s, e->compile_s, e->compiled, e->hits);
                if (e->installed_t < 0)
                    fprintf(f, ", code not ready in time");
                else
                    fprintf(f, ", in use from %.6f s", e->installed_t);
                if (e->refined_t >= 0)
                    fprintf(f, " (quick code; the full code, compiled in %.6f s, from %.6f s)", e->refine_s,
                            e->refined_t);
                else if (e->installed_t >= 0 && e->quick)
                    fprintf(f, " (quick code to the end)");
            }
            if (e->late_work && e->fused_work)
                fprintf(f, "; ns per element-instruction: interpreted %.3f (%lld runs sampled after the install), "
                           "fused %.3f",
                        1e9 * e->late_secs / (double)e->late_work, (long long)e->late_n,
                        1e9 * e->fused_secs / (double)e->fused_work);
            if (e->interp_timed || e->fused_timed)
                fprintf(f, "; seconds: interpreted %.6f (%lld timed runs), fused %.6f (%lld timed runs)",
                        e->interp_secs, (long long)e->interp_timed, e->fused_secs, (long long)e->fused_timed);
            if (e->why[0])
                fprintf(f, "; %s", e->why);
            fputc('\n', f);
        }
    }
}

void backend_times(const Backend *b, BackendTimes *t)
{
    memset(t, 0, sizeof *t);
    t->fused_s = b->kernel_seconds + b->host_seconds;
    for (int k = 0; k < b->nblocks; k++) {
        const BlockEntry *e = &b->entries[k];
        t->compile_s += e->compile_s;
        if (plan_readable(b, e))
            t->translate_s += e->plan.translate_seconds;
    }
    if (b->x->times) {
        double c = 0.0, m = 0.0;
        b->x->times(b->x, &c, &m);
        t->compile_s += c;
        t->transfer_s += m;
    }
}

void backend_report(const Backend *b, FILE *f)
{
    int planned = 0, kb = 0, ka = 0, ab = 0, aa = 0, fellback = 0;
    int big_vars = 0, big_cons = 0;
    double big_time = 0.0, max_time = 0.0, translate = 0.0, ilp = 0.0;
    int64_t fallbacks = 0;
    for (int k = 0; k < b->nblocks; k++) {
        const BlockEntry *e = &b->entries[k];
        fallbacks += e->fallbacks;
        if (!plan_readable(b, e))
            continue;
        translate += e->plan.translate_seconds;
        ilp += e->plan.fr.seconds;
        planned++;
        kb += e->plan.kernels_unfused;
        ka += e->plan.kernels_fused;
        ab += e->plan.arrays_unfused;
        aa += e->plan.arrays_fused;
        const FuseResult *fr = &e->plan.fr;
        fellback += e->plan.fused && fr->fell_back;
        if (fr->nvars > big_vars) {
            big_vars = fr->nvars;
            big_cons = fr->nconstraints;
            big_time = fr->seconds;
        }
        if (fr->seconds > max_time)
            max_time = fr->seconds;
    }
    fprintf(f, "stats: blocks translated %d of %d; kernels %d unfused, %d fused; arrays materialised %d unfused, "
               "%d fused\n",
            planned, b->nblocks, kb, ka, ab, aa);
    fprintf(f, "stats: kernel launches %lld, host steps %lld, fallbacks to the interpreter %lld\n",
            (long long)b->launches, (long long)b->host_steps, (long long)fallbacks);
    fprintf(f, "stats: kernel results written over an argument: %lld of %lld offered\n",
            (long long)b->written_in_place, (long long)b->donated);
    fprintf(f, "stats: block runs past -m at their peak: %lld run again on the reference, %lld kept (an input's "
               "storage written over); %lld of the reruns within -m where the reference might not have been\n",
            (long long)b->mem_reruns, (long long)b->mem_kept, (long long)b->mem_bound_reruns);
    if (b->x->defer_errors)
        fprintf(f, "stats: block runs whose kernels' checks were read with a later wait: %lld (%lld read at once: "
                   "over %lld bytes held for replays)\n",
                (long long)b->deferred_runs, (long long)b->deferred_refused, (long long)DEFER_HOLD_BYTES);
    fprintf(f, "stats: REPLACE host steps: %lld in place, %lld copied\n", (long long)b->replace_inplace,
            (long long)b->replace_copied);
    fprintf(f, "stats: translation %.6f s, of which ILP %.6f s; largest ILP %d variables, %d constraints, "
               "solved in %.6f s; slowest ILP %.6f s; %d blocks fell back to the greedy schedule\n",
            translate, ilp, big_vars, big_cons, big_time, max_time, fellback);
    fprintf(f, "stats: executor %s: time in kernels %.6f s, in host steps %.6f s\n", b->x->name, b->kernel_seconds,
            b->host_seconds);
    if (b->opt.check) {
        fprintf(f, "stats: --check: %lld block runs compared with the reference, no difference\n",
                (long long)b->checked);
        fprintf(f, "stats: --check: block outputs: %lld bit for bit, %lld within error bounds (%lld elements "
                   "free to differ), %lld not verifiable\n",
                (long long)b->check_exact, (long long)b->check_bounded, (long long)b->check_free,
                (long long)b->check_unverifiable);
    }
    if (b->tiered)
        tier_report(b, f);
    if (b->x->report)
        b->x->report(b->x, f);
    /* The busiest kernels. */
    int top[5] = { -1, -1, -1, -1, -1 }, tops[5] = { 0, 0, 0, 0, 0 };
    for (int k = 0; k < b->nblocks; k++) {
        const BlockEntry *e = &b->entries[k];
        if (!e->launches)
            continue;
        for (int s = 0; s < e->plan.nsteps; s++) {
            if (!e->launches[s])
                continue;
            for (int t = 0; t < 5; t++) {
                if (top[t] < 0 || e->launches[s] > b->entries[top[t]].launches[tops[t]]) {
                    for (int u = 4; u > t; u--) {
                        top[u] = top[u - 1];
                        tops[u] = tops[u - 1];
                    }
                    top[t] = k;
                    tops[t] = s;
                    break;
                }
            }
        }
    }
    for (int t = 0; t < 5 && top[t] >= 0; t++) {
        const BlockEntry *e = &b->entries[top[t]];
        const PlanStep *ps = &e->plan.steps[tops[t]];
        fprintf(f, "stats: kernel K%d of the block at line %d (%s): %lld launches, %.6f s\n", ps->k->id,
                b->prog->code[e->plan.blk.start].line, b->prog->funcs[e->plan.blk.func].name,
                (long long)e->launches[tops[t]], e->seconds[tops[t]]);
    }
}

void backend_profile_on(Backend *b) { b->profiling = 1; }

typedef struct {
    int block, step;
    double seconds;
} KernelRow;

static int by_seconds(const void *x, const void *y)
{
    const KernelRow *a = x, *b = y;
    return (a->seconds < b->seconds) - (a->seconds > b->seconds);
}

void backend_profile_report(const Backend *b, FILE *f, int json)
{
    int n = 0;
    for (int k = 0; k < b->nblocks; k++)
        if (b->entries[k].launches)
            n += b->entries[k].plan.nsteps;
    KernelRow *rows = calloc((size_t)(n ? n : 1), sizeof *rows);
    if (!rows)
        return;
    int m = 0;
    for (int k = 0; k < b->nblocks; k++) {
        const BlockEntry *e = &b->entries[k];
        if (!e->launches)
            continue;
        for (int s = 0; s < e->plan.nsteps; s++)
            if (e->launches[s]) {
                rows[m].block = k;
                rows[m].step = s;
                rows[m].seconds = e->seconds[s];
                m++;
            }
    }
    qsort(rows, (size_t)m, sizeof *rows, by_seconds);
    if (json)
        fprintf(f, "{\"kernels\": [");
    else if (m == 0)
        fprintf(f, "profile: no fused kernel ran (every block interpreted)\n");
    else
        fprintf(f, "profile: %d fused kernels run; by time\n%-36s %6s %12s %12s\n", m, "kernel (function, first line)",
                "soacs", "launches", "seconds");
    for (int i = 0; i < m; i++) {
        const BlockEntry *e = &b->entries[rows[i].block];
        const PlanStep *ps = &e->plan.steps[rows[i].step];
        const Instr *in = &b->prog->code[e->plan.dfg.nodes[ps->node].instr];
        const char *fn = b->prog->funcs[e->plan.blk.func].name;
        if (json)
            fprintf(f, "%s\n  {\"function\": \"%s\", \"kernel\": %d, \"line\": %d, \"soacs\": %d, "
                       "\"launches\": %lld, \"seconds\": %.9f}",
                    i ? "," : "", fn, ps->k->id, in->line, ps->k->nsoacs, (long long)e->launches[rows[i].step],
                    rows[i].seconds);
        else
            fprintf(f, "%-24.24s K%-4d l%-5d %6d %12lld %12.6f\n", fn, ps->k->id, in->line, ps->k->nsoacs,
                    (long long)e->launches[rows[i].step], rows[i].seconds);
    }
    if (json)
        fprintf(f, "\n]}\n");
    free(rows);
}


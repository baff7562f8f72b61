/* runtime/fused/tier_prep.c — inlining, checking and the backend made on the
 * tier worker while the interpreter runs the program as written (see
 * tier_prep.h). The worker's first job (-1) is this preparation; its
 * later jobs are the backend's promoted blocks. */
#include "runtime/fused/tier_prep.h"
#include "runtime/core/clock.h"
#include "runtime/core/errors.h"
#include "runtime/fused/tier.h"
#include "translate/inline.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct TierPrep {
    const Program *src;
    BackendOptions opt;
    Executor *x;        /* until the backend owns it */
    Interp *it;
    TierWorker *w;
    Program inl;
    int *pcmap;
    InlineStats ist;
    Backend *_Atomic b;
    InterpSwitch sw;
    int stuck;          /* the worker did not stop in time: leave everything */
    atomic_int ready;   /* the switch was published */
    atomic_int prepared;    /* the preparation has ended, switch or not */
    double t0, ready_t;
    double busy, throttled, stopped; /* the worker's, when it stopped */
    char why[200];      /* why there is no switch */
};

static void prepare(TierPrep *tp)
{
    tp->pcmap = malloc((size_t)(tp->src->ncode ? tp->src->ncode : 1) * sizeof *tp->pcmap);
    if (!tp->pcmap) {
        snprintf(tp->why, sizeof tp->why, "out of host memory");
        return;
    }
    InlineOptions io;
    inline_default_options(&io);
    io.cancel = tier_worker_stop_flag(tp->w);
    if (inline_program_map(tp->src, &tp->inl, &io, &tp->ist, tp->pcmap) < 0 || tier_worker_stopping(tp->w))
        return;
    VcError err;
    memset(&err, 0, sizeof err);
    tp->inl.cancel = io.cancel;
    if (vc_check(&tp->inl, &err) < 0) {
        snprintf(tp->why, sizeof tp->why, "the inlined program does not check: %.150s", err.msg);
        return;
    }
    vc_check_forget(&tp->inl);
    if (tier_worker_stopping(tp->w))
        return;
    char msg[400];
    Executor *x = tp->x;
    tp->x = NULL;
    Backend *b = backend_new(&tp->inl, &tp->opt, x, msg, sizeof msg);
    if (!b) {
        snprintf(tp->why, sizeof tp->why, "%.190s", msg);
        return;
    }
    backend_use_worker(b, tp->w);
    atomic_store(&tp->b, b);
    tp->sw.prog = &tp->inl;
    tp->sw.run_block = backend_block_hook;
    tp->sw.block_ctx = b;
    tp->sw.block_at = backend_block_map(b);
    tp->sw.pcmap = tp->pcmap;
    tp->ready_t = rt_seconds() - tp->t0;
    atomic_store(&tp->ready, 1);
    atomic_store_explicit(&tp->it->pending, &tp->sw, memory_order_release);
}

static void job(void *arg, int k)
{
    TierPrep *tp = arg;
    if (k == TIER_JOB_PREPARE) {
        prepare(tp);
        atomic_store(&tp->prepared, 1);
    } else
        backend_tier_job(atomic_load(&tp->b), k);
}

TierPrep *tier_prep_start(const Program *src, const BackendOptions *o, Executor *x, Interp *it)
{
    TierPrep *tp = rt_xcalloc(1, sizeof *tp);
    tp->src = src;
    tp->opt = *o;
    tp->x = x;
    tp->it = it;
    tp->t0 = rt_seconds();
    tp->ready_t = -1.0;
    TierWorkerConfig wc = tier_worker_config(&o->tier, 1);
    if (!(tp->w = tier_worker_start(job, tp, &wc))) {
        x->free(x);
        free(tp);
        return NULL;
    }
    tier_worker_push(tp->w, TIER_JOB_PREPARE);
    return tp;
}

/* How long a test's gate waits before it gives up (a hang guard: the
 * gates decide by events). */
#define GATE_LIMIT_S 600.0

void tier_prep_wait_ready(TierPrep *tp)
{
    if (!tp || !tp->w || !tp->opt.tier.start_ready)
        return;
    struct timespec nap = { 0, 1000000 };
    double t_end = rt_seconds() + GATE_LIMIT_S;
    while (!atomic_load(&tp->prepared) && !tier_worker_stopping(tp->w) && rt_seconds() < t_end)
        nanosleep(&nap, NULL);
    if (!atomic_load(&tp->prepared))
        fprintf(stderr, "vinterp: VINTERP_TEST_TIER_START=ready: the worker did not prepare the program in %.0f s\n",
                GATE_LIMIT_S);
}

void tier_prep_end(TierPrep *tp, double grace)
{
    if (!tp || !tp->w)
        return;
    static const char *const gates[] = { "", "compiling", "stopped", "done" };
    TierGate gate = tp->opt.tier.end_gate;
    if (gate != TIER_GATE_NONE && atomic_load(&tp->ready)) {
        int r = tier_worker_wait(tp->w, gate, GATE_LIMIT_S);
        if (r <= 0)
            fprintf(stderr, "vinterp: VINTERP_TEST_TIER_END=%s: %s\n", gates[gate],
                    r == 0 ? "the worker had no job left first" : "not reached in the time allowed");
    }
    if (atomic_load(&tp->ready))
        tier_worker_drain(tp->w, grace);
    tier_worker_figures(tp->w, &tp->busy, &tp->throttled, &tp->stopped);
    int r = tier_worker_stop(tp->w);
    tp->w = NULL;
    Backend *b = atomic_load(&tp->b);
    if (r < 0) {
        tp->stuck = 1;
        return;
    }
    if (b)
        backend_worker_stopped(b, r);
}

void tier_prep_report(TierPrep *tp, FILE *f)
{
    if (tp->stuck) {
        fprintf(f, "stats: tiers: the worker did not stop at the end (its job inside a compile): no report\n");
        return;
    }
    Backend *b = atomic_load(&tp->b);
    if (tp->ist.code_before)
        fprintf(f, "inline: %d calls inlined, %d kept, %d recursive functions, %d -> %d instructions\n",
                tp->ist.calls_inlined, tp->ist.calls_kept, tp->ist.recursive_funcs, tp->ist.code_before,
                tp->ist.code_after);
    if (!b) {
        fprintf(f, "stats: tiers: the whole run interpreted: the inlined program was %s\n",
                tp->why[0] ? tp->why : "not ready before the end");
        return;
    }
    fprintf(f,
            "stats: tiers: the worker ran %.6f s (%lld%% of the run at most), waited %.6f s for its share "
            "(its compilers stopped %.6f s)\n",
            tp->busy, (long long)tp->opt.tier.share_pct, tp->throttled, tp->stopped);
    fprintf(f, "stats: tiers: the inlined program ready after %.6f s; %s\n", tp->ready_t,
            tp->sw.taken == 1 ? "the interpreter switched to it" : tp->sw.taken < 0 ? "the switch was refused"
                                                                                  : "the run ended before the switch");
    if (tp->sw.taken == 1)
        backend_report(b, f);
}

int tier_prep_times(TierPrep *tp, BackendTimes *t, double *worker_s)
{
    memset(t, 0, sizeof *t);
    *worker_s = tp->busy;
    Backend *b = tp->stuck ? NULL : atomic_load(&tp->b);
    if (!b)
        return -1;
    backend_times(b, t);
    return 0;
}

void tier_prep_profile_report(TierPrep *tp, FILE *f, int json)
{
    Backend *b = tp->stuck ? NULL : atomic_load(&tp->b);
    if (b && tp->sw.taken == 1)
        backend_profile_report(b, f, json);
}

void tier_prep_free(TierPrep *tp)
{
    if (!tp || tp->stuck)
        return; /* the worker still reads it: left to the exit */
    tier_prep_end(tp, 0.0);
    backend_free(atomic_load(&tp->b));
    if (tp->x)
        tp->x->free(tp->x);
    vc_free(&tp->inl);
    free(tp->pcmap);
    free(tp);
}

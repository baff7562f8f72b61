/* runtime/fused/backend_tier.c — the tiers' policy over the blocks: the
 * profile of interpreted runs, promotion, the worker's job, installation,
 * the cache's hot, warm and slow sets, and the judgement of fused runs
 * against interpreted ones (tier.h, tier_hot.h, tier_verdict.h). */
#include "runtime/fused/backend_impl.h"
#include "runtime/core/clock.h"
#include "runtime/core/trace.h"
#include "runtime/core/errors.h"
#include "runtime/fused/lcu_eval.h"
#include "runtime/fused/tier_after.h"
#include "runtime/fused/tuning.h"
#include "runtime/interp/ops.h"
#include "vcode/optable.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- tiers ---------------------------------------------------------------- */

/* Build block K's code alone into the cache through the plan list PLANS
 * (the worker's or the main thread's: every entry NULL but K's while
 * this runs). */
static int build_one(Backend *b, BlockPlan **plans, int k, JitBuildStats *st, char *msg, size_t len)
{
    plans[k] = &b->entries[k].plan;
    int rc = b->x->build(b->x, b->nblocks, plans, st, msg, len);
    plans[k] = NULL;
    return rc;
}

/* Staged: the worker's second job for block K (tier_job_second): its full
 * code into the cache, swapped in by tier_refine_check. */
static void tier_refine_job(Backend *b, int k)
{
    BlockEntry *e = &b->entries[k];
    if (tier_worker_stopping(b->worker))
        return;
    atomic_store_explicit(&e->refine, RF_RUNNING, memory_order_release);
    JitBuildStats st;
    memset(&st, 0, sizeof st);
    char msg[400] = "";
    double tt = trace_now();
    int rc = build_one(b, b->bg_plans, k, &st, msg, sizeof msg);
    trace_span("compile", "a block's full compile (staged)", tt, trace_now(), -1);
    e->refine_s = st.compile_seconds;
    atomic_store_explicit(&e->refine, rc == 0 ? RF_READY : RF_FAILED, memory_order_release);
}

/* The worker's job: plan block K and build its code into the cache (or a
 * staged block's full code, tier_refine_job). Staged,
 * the code is the full one when the cache has it, else the quick one. */
void tier_job(void *arg, int k)
{
    Backend *b = arg;
    if (k <= tier_job_second(0)) {
        tier_refine_job(b, tier_job_second_block(k));
        return;
    }
    BlockEntry *e = &b->entries[k];
    if (tier_worker_stopping(b->worker))
        return;
    if (!e->planned && plan_block(b, k) < 0) {
        atomic_store_explicit(&e->state, BS_FAILED, memory_order_release);
        return;
    }
    if (tier_worker_stopping(b->worker))
        return;
    JitBuildStats st;
    memset(&st, 0, sizeof st);
    /* the worker's plan list, or under --tier=sync the main thread's (the
     * worker may be running a staged block's full compile with its own) */
    BlockPlan **plans = b->worker && tier_worker_is_self(b->worker) ? b->bg_plans : b->fg_plans;
    char msg[400] = "";
    int rc = 1;
    e->quick = 0;
    if (b->x->staged) {
        st.probe = 1;
        rc = build_one(b, plans, k, &st, msg, sizeof msg);
        st.probe = 0;
        if (rc == 1 && !tier_worker_stopping(b->worker)) {
            st.fast = 1;
            e->quick = 1;
        }
    }
    if (rc == 1) {
        double tt = trace_now();
        rc = build_one(b, plans, k, &st, msg, sizeof msg);
        trace_span("compile", st.fast ? "a block's compile (quick)" : "a block's compile", tt, trace_now(), -1);
    }
    e->compile_s = st.compile_seconds;
    e->compiled = st.compiled;
    e->hits = st.hits;
    if (rc != 0)
    {
        if (tier_worker_stopping(b->worker)) {
            e->abandoned = 1;
            snprintf(e->why, sizeof e->why, "abandoned at the end of the run");
        }
        else
            snprintf(e->why, sizeof e->why, "build failed: %.130s", msg);
    }
    e->ready_t = rt_seconds() - b->t_start;
    atomic_store_explicit(&e->state, rc == 0 ? BS_READY : BS_FAILED, memory_order_release);
    if (b->opt.tier.test_hold)
        tier_test_hold_forever();
}

static void tier_trace(const Backend *b, int k, const char *what)
{
    const BlockEntry *e = &b->entries[k];
    const Block *bl = &b->blocks[k];
    int lo, hi;
    vc_line_range(b->prog, bl->start, bl->end, &lo, &hi);
    fprintf(b->opt.tier.trace, "tier: %.6f s: block %d (lines %d-%d, %s): %s after %lld entries, work %lld%s%s\n",
            rt_seconds() - b->t_start, k, lo, hi, b->prog->funcs[bl->func].name, what, (long long)e->entries,
            (long long)e->work, e->why[0] ? "; " : "", e->why);
}

/* Block K was found slower fused (this run or earlier ones): later runs
 * of the program leave it interpreted without translating it
 * (tier_slow_path). */
static void tier_remember_slow(Backend *b, int k)
{
    if (b->slow_path && tier_hot_add(&b->slow_new, tier_block_hash(b->prog, &b->blocks[k])) < 0)
        rt_fatal("out of host memory");
}

/* Staged: queue block K's full compile on the worker (started here when
 * there is none: --tier=sync), after every quick compile. */
static void tier_queue_refine(Backend *b, int k)
{
    BlockEntry *e = &b->entries[k];
    TierWorkerConfig wc = tier_worker_config(&b->opt.tier, 0);
    if (!b->worker && !(b->worker = tier_worker_start(tier_job, b, &wc)))
        return; /* no thread: the quick code stays */
    atomic_store(&e->refine, RF_QUEUED);
    tier_worker_push_later(b->worker, tier_job_second(k));
}

/* (tests, VINTERP_TEST_TIER_REFINE=wait) Wait until *A is no longer one
 * of W1, W2 or the worker stops, for at most ten minutes (a hang guard,
 * as the other test gates have; then a line on stderr). Returns *A. */
static int test_wait(Backend *b, atomic_int *a, int w1, int w2, const char *what)
{
    int v = atomic_load_explicit(a, memory_order_acquire);
    double t_end = rt_seconds() + 600.0;
    while ((v == w1 || v == w2) && b->worker && !tier_worker_stopping(b->worker)) {
        if (rt_seconds() > t_end) {
            fprintf(stderr, "vinterp: VINTERP_TEST_TIER_REFINE=wait: %s not ready in 600 s\n", what);
            break;
        }
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
        v = atomic_load_explicit(a, memory_order_acquire);
    }
    return v;
}

void tier_refine_check(Backend *b, int k)
{
    BlockEntry *e = &b->entries[k];
    int r = atomic_load_explicit(&e->refine, memory_order_acquire);
    if (b->opt.tier.test_refine_wait)
        r = test_wait(b, &e->refine, RF_QUEUED, RF_RUNNING, "a block's full code");
    if (r != RF_READY && r != RF_FAILED)
        return;
    char msg[400] = "";
    int rc = -1;
    if (r == RF_READY) {
        b->fg_plans[k] = &e->plan;
        rc = b->x->refine(b->x, b->nblocks, b->fg_plans, msg, sizeof msg);
        b->fg_plans[k] = NULL;
    }
    atomic_store(&e->refine, RF_DONE);
    if (rc != 0) {
        b->refines_failed++;
        snprintf(e->why, sizeof e->why, "full compile failed, the quick code stays: %.110s", msg);
        e->quick = 2; /* for good: no more checks, and never judged */
        if (b->opt.tier.trace)
            tier_trace(b, k, "full code failed");
        return;
    }
    e->quick = 0;
    e->refined_t = rt_seconds() - b->t_start;
    b->refines++;
    if (b->opt.tier.trace)
        tier_trace(b, k, "full code installed");
}

/* Load block K's code (on the main thread): READY -> FUSED, or INTERP. */
static void tier_install(Backend *b, int k)
{
    BlockEntry *e = &b->entries[k];
    if (e->planned) { /* what translation costs, for tier_promote's estimate */
        b->tr_secs += e->translate_s;
        b->tr_instrs += b->blocks[k].nvector;
    }
    char msg[400] = "";
    b->fg_plans[k] = &e->plan;
    int rc = b->x->prepare(b->x, b->prog, b->nblocks, b->fg_plans, e->quick, msg, sizeof msg);
    b->fg_plans[k] = NULL;
    e->installed_t = rt_seconds() - b->t_start;
    if (rc != 0) {
        snprintf(e->why, sizeof e->why, "load failed: %.140s", msg);
        b->failures++;
        atomic_store(&e->state, BS_INTERP);
        if (b->opt.tier.trace)
            tier_trace(b, k, "stays interpreted");
        return;
    }
    b->installs++;
    char unit[1200], vpath[1300];
    if (b->x->unit_file && b->x->unit_file(b->x, k, unit, sizeof unit) &&
        tier_verdict_path(unit, b->program_id, vpath, sizeof vpath) == 0 && (e->vpath = strdup(vpath)) != NULL &&
        tier_verdict_read(vpath, &e->prior) && tier_verdict_slower(&e->prior) == 1) {
        /* earlier runs of the program found its fused runs the slower */
        e->demoted = 1;
        b->demotions++;
        tier_remember_slow(b, k);
        snprintf(e->why, sizeof e->why, "its fused runs were the slower in earlier runs");
        atomic_store(&e->state, BS_INTERP);
        if (b->opt.tier.trace)
            tier_trace(b, k, "demoted");
        return;
    }
    e->sample_first = e->prior.fused_n >= 2 && e->prior.late_n < 2;
    atomic_store(&e->state, BS_FUSED);
    if (e->quick) {
        b->quick_installs++;
        tier_queue_refine(b, k);
    }
    if (b->opt.tier.trace)
        tier_trace(b, k, e->quick ? "fused code installed (quick compile)" : "fused code installed");
}

/* This run's speeds of block K added to the earlier runs'. */
static TierSpeeds tier_speeds(const BlockEntry *e)
{
    TierSpeeds t = e->prior;
    t.late_n += e->late_n;
    t.late_secs += e->late_secs;
    t.late_work += e->late_work;
    t.fused_n += e->fused_timed;
    t.fused_secs += e->fused_secs;
    t.fused_work += e->fused_work;
    if (e->runs == 1 && e->fused_timed == 0 && e->first_work > 0) {
        /* its only fused run this time: page faults on fresh vectors and
         * all, they are what that block costs fused in every run (a MAP
         * whose result the interpreter writes over an argument) */
        t.fused_n++;
        t.fused_secs += e->first_secs;
        t.fused_work += e->first_work;
    }
    return t;
}

/* At the end: every block's speeds, earlier runs' included, kept beside
 * its unit for the next run. */
void tier_save_speeds(Backend *b)
{
    for (int k = 0; k < b->nblocks; k++) {
        BlockEntry *e = &b->entries[k];
        if (e->vpath && (e->late_n || e->fused_timed || (e->runs == 1 && e->first_work > 0))) {
            TierSpeeds t = tier_speeds(e);
            tier_verdict_write(e->vpath, &t);
        }
    }
}

/* Is block K's code already in the kernel cache? (Its plan is built.) */
static int tier_cached(Backend *b, int k)
{
    JitBuildStats st;
    memset(&st, 0, sizeof st);
    st.probe = 1;
    char msg[400];
    int rc = build_one(b, b->fg_plans, k, &st, msg, sizeof msg);
    return rc == 0;
}

/* Probe the kernel cache for block K, whose run now has W work, when
 * translating it here is predicted to cost under 2% of interpreting this
 * run, and the cache has not proved cold for this program (3 misses, no
 * hit). On a hit its code is installed for this very run: a block that
 * runs once over long vectors gets its fused code whenever the cache has
 * it. 1: a hit (installed, or demoted by earlier runs' verdicts); 0: a
 * miss or not probed; -1: not plannable (it stays interpreted). */
static int tier_probe(Backend *b, int k, int64_t w, int force)
{
    BlockEntry *e = &b->entries[k];
    double interp_rate = b->interp_work > 0 ? b->interp_secs / (double)b->interp_work : 1e-9;
    /* no vector instruction here runs under 0.2 ns an element: a lower
     * measured rate is a block of lazy fills (value.h), whose DISTs and
     * arithmetic cost nothing per element (dotp_50m: 4 us for 150M
     * element-instructions), not a guide to the others */
    if (interp_rate < 2e-10)
        interp_rate = 2e-10;
    double tr_rate = b->tr_instrs > 0 ? b->tr_secs / (double)b->tr_instrs : 5e-5;
    int cold = b->probe_misses >= 3 && b->probe_hits == 0;
    if (!force && (cold || (double)b->blocks[k].nvector * tr_rate > 0.02 * (double)w * interp_rate))
        return 0;
    if (!e->planned && plan_block(b, k) < 0) {
        b->failures++;
        atomic_store(&e->state, BS_INTERP);
        if (b->opt.tier.trace)
            tier_trace(b, k, "stays interpreted");
        return -1;
    }
    int hit = tier_cached(b, k);
    b->probe_hits += hit;
    b->probe_misses += !hit;
    if (!hit) {
        if (force && tier_hot_add(&b->warm_gone, tier_block_hash(b->prog, &b->blocks[k])) < 0)
            rt_fatal("out of host memory");
        return 0;
    }
    e->hits = 1;
    e->ready_t = rt_seconds() - b->t_start;
    if (b->opt.tier.trace)
        tier_trace(b, k, "promoted, its code in the cache");
    tier_install(b, k);
    return 1;
}

static void tier_mark_promoted(Backend *b, int k)
{
    BlockEntry *e = &b->entries[k];
    e->promoted_entry = e->entries;
    e->promoted_t = rt_seconds() - b->t_start;
    b->promotions++;
}

/* Did an earlier run find block K's unit in the cache, or put it there?
 * (Looked up once per block.) */
static int tier_warm(Backend *b, int k)
{
    BlockEntry *e = &b->entries[k];
    if (e->warm < 0)
        e->warm = b->warm_prior.n && tier_hot_has(&b->warm_prior, tier_block_hash(b->prog, &b->blocks[k]));
    return e->warm;
}

/* Block K's code was hot in its only run so far: the program's next run
 * probes the cache for it at its first run. */
static void tier_remember_hot(Backend *b, int k)
{
    if (b->hot_path && tier_hot_add(&b->hot_new, tier_block_hash(b->prog, &b->blocks[k])) < 0)
        rt_fatal("out of host memory");
}

/* Block K's first run with W work past the threshold, when it has not
 * been seen to recur and no earlier run of the program found it hot:
 * fused code pays only in later runs of the block, and a block that runs
 * once gets none before its run ends. So nothing is done now, not even a
 * probe of the cache (translating on the main thread leaves small
 * allocations between the program's vectors, which then cannot merge:
 * quickhull_5m needed 60 MB more); the block is remembered as hot for the
 * program's next run (tier_hot.h), which probes the cache for it and
 * compiles it in the background on a miss. A block that runs again is
 * promoted. */
static void tier_first_run(Backend *b, int k, int64_t w)
{
    (void)w;
    BlockEntry *e = &b->entries[k];
    e->remembered = 1;
    if (b->opt.tier.mode != TIER_BACKGROUND)
        return;
    tier_remember_hot(b, k);
    if (b->opt.tier.trace)
        tier_trace(b, k, "hot, ran once: remembered for the next run");
}

/* Promote block K, whose run now has W work. The worker translates and
 * compiles it while the interpreter goes on; under --tier=sync it is
 * compiled here, at once. Code already in the kernel cache is used at
 * once (tier_probe). */
static void tier_promote(Backend *b, int k, int64_t w)
{
    BlockEntry *e = &b->entries[k];
    if (b->slow_prior.n && tier_hot_has(&b->slow_prior, tier_block_hash(b->prog, &b->blocks[k]))) {
        b->slow_skipped++;
        snprintf(e->why, sizeof e->why, "its fused runs were the slower in earlier runs: not translated");
        atomic_store(&e->state, BS_INTERP);
        if (b->opt.tier.trace)
            tier_trace(b, k, "left interpreted: slower fused in earlier runs");
        return;
    }
    tier_mark_promoted(b, k);
    if (e->big_runs == 1)
        tier_remember_hot(b, k); /* a later run probes the cache for it at its first run */
    if (b->opt.tier.mode == TIER_BACKGROUND && tier_probe(b, k, w, tier_warm(b, k)) != 0)
        return;
    if (b->opt.tier.mode == TIER_SYNC) {
        atomic_store(&e->state, BS_QUEUED);
        tier_job(b, k);
        if (atomic_load(&e->state) == BS_READY)
            tier_install(b, k);
        else {
            b->failures++;
            atomic_store(&e->state, BS_INTERP);
            if (b->opt.tier.trace)
                tier_trace(b, k, "stays interpreted");
        }
        return;
    }
    TierWorkerConfig wc = tier_worker_config(&b->opt.tier, 0);
    if (!b->worker && !(b->worker = tier_worker_start(tier_job, b, &wc))) {
        atomic_store(&e->state, BS_INTERP); /* no thread: stay in the interpreter */
        return;
    }
    if (b->opt.tier.trace)
        tier_trace(b, k, "promoted");
    atomic_store(&e->state, BS_QUEUED);
    tier_worker_push(b->worker, k);
}

/* The number of stack inputs of block K, from its dataflow graph; -1 when
 * the block cannot be expressed as one (it is then always interpreted). */
static int block_inputs(const Backend *b, int k)
{
    Dfg g;
    memset(&g, 0, sizeof g);
    if (dfg_build(b->prog, &b->blocks[k], &g) < 0)
        return -1;
    int nin = g.nin;
    dfg_free(&g);
    return nin;
}

/* The largest element count among the block's NIN inputs on the stack. */
int64_t largest_input(const Interp *it, int nin)
{
    int64_t m = 0;
    for (int j = 0; j < nin && j < it->sp; j++) {
        const Value *v = it->stk[it->sp - 1 - j];
        int64_t n = v->type == VT_SEGDES ? (v->n > v->len ? v->n : v->len) : v->type == VT_PAIR ? 0 : v->len;
        if (n > m)
            m = n;
    }
    return m;
}

/* 1 when one of the top NIN entries is a lazy fill (runtime/core/value.h).
 * The tiers run such a block in the interpreter, which reads the fill as a
 * scalar: fused code would first write it out (a DIST of 8M floats: 64 MB),
 * and for that block that costs more than fusion saves (black_scholes_8m,
 * whose constants are such fills: fused blocks 2.2x slower than the
 * interpreter). Forced compilation (--tier=eager) still runs them fused.
 * An executor that takes lazy fills (the cuda one) runs them fused. */
int lazy_input(const Backend *b, const Interp *it, int nin)
{
    if (!val_lazy_live || b->x->takes_lazy)
        return 0;
    for (int j = 0; j < nin && j < it->sp; j++)
        if (it->stk[it->sp - 1 - j]->lazy)
            return 1;
    return 0;
}

/* A tiered block's entry in any state but FUSED: profile it, promote it,
 * install its code. Returns the pc after the block when it ran here, -1
 * when the interpreter runs it, -2 when it is to run fused now. */
int tier_entry(Backend *b, Interp *it, int k, int st)
{
    BlockEntry *e = &b->entries[k];
    if (st == BS_QUEUED && b->opt.tier.test_refine_wait) /* (tests) every install an event */
        st = test_wait(b, &e->state, BS_QUEUED, BS_QUEUED, "a block's code");
    if (st == BS_READY) {
        tier_install(b, k);
        if (atomic_load(&e->state) == BS_FUSED)
            return -2;
        return -1;
    }
    if (st == BS_FAILED) {
        b->failures++;
        atomic_store(&e->state, BS_INTERP);
        if (b->opt.tier.trace)
            tier_trace(b, k, "stays interpreted");
        return -1;
    }
    if (e->nin < 0 && (e->nin = block_inputs(b, k)) < 0) {
        atomic_store(&e->state, BS_INTERP);
        return -1;
    }
    e->entries++;
    int64_t len = largest_input(it, e->nin);
    e->elements += len;
    if (len < b->opt.tier.min_len) {
        e->short_runs++;
        return -1;
    }
    if (lazy_input(b, it, e->nin)) { /* not work fused code would do */
        e->lazy_runs++;
        return -1;
    }
    int64_t w = len * b->blocks[k].nvector;
    e->big_runs++;
    e->work += w;
    /* a block whose unit earlier runs put in the cache: promoted at its
     * first long run, whatever its work (it was hot then) */
    if (st == BS_PROFILE && b->opt.tier.mode != TIER_OFF && (e->work >= b->opt.tier.work || tier_warm(b, k))) {
        if (e->big_runs >= 2 || b->opt.tier.mode == TIER_SYNC || b->opt.tier.work == 0 ||
            (b->hot_prior.n && tier_hot_has(&b->hot_prior, tier_block_hash(b->prog, &b->blocks[k]))) ||
            tier_warm(b, k))
            tier_promote(b, k, w);
        else if (!e->remembered)
            tier_first_run(b, k, w);
        if (atomic_load(&e->state) == BS_FUSED)
            return -2;
    }
    if (it->opt.max_steps || it->opt.progress)
        return -1; /* the interpreter loop counts the instructions */
    /* Interpreted here, timed: the fused code must beat this. */
    double t0 = rt_seconds();
    interp_exec_tier(it, b->blocks[k].start, b->blocks[k].end);
    double dt = rt_seconds() - t0;
    if (e->interp_timed == 0) {
        e->interp_first_secs = dt;
        e->interp_first_work = w;
    }
    e->interp_secs += dt;
    e->interp_work += w;
    e->interp_timed++;
    b->interp_secs += dt;
    b->interp_work += w;
    return b->blocks[k].end;
}

/* After a fused run of W work in DT seconds: back to the interpreter for
 * good when the fused runs are the slower per unit of work. The fused
 * runs are compared with the interpreted runs sampled after the install,
 * every 8th run of the block (see backend_run_block), so that both sides
 * cover the same phases of the program: the cost of a block's run is not
 * proportional to its work measure in every phase (batcher_1m: stages of
 * one size but other segment counts), and a block's first runs pay for
 * page faults on fresh vectors, so the interpreted runs before the
 * promotion misjudged it (they kept a 2x slower fused block in use). The
 * first fused run is not counted. Checked from the 5th timed fused run
 * on, once two interpreted runs are sampled, or sooner with the speeds
 * of earlier runs of the program (tier_verdict.h). */
void tier_judge(Backend *b, int k, int64_t w, double dt)
{
    BlockEntry *e = &b->entries[k];
    if (e->quick)
        return; /* quick code is not what the block runs fused for good */
    if (e->runs == 0) {
        e->first_secs = dt;
        e->first_work = w;
        /* earlier runs timed it interpreted (after their install, or
         * before the compile after the run): a first fused run far slower
         * than those goes back at once, page faults and all, for this run
         * only (one sample: not remembered as slow; it is kept among the
         * fused samples at the end, tier_speeds, for the verdict of later
         * runs) */
        const TierSpeeds *p = &e->prior;
        double ratio = p->late_n >= 2 && p->late_work > 0 && p->late_secs > 0 && w > 0
                           ? dt / (double)w / (p->late_secs / (double)p->late_work)
                           : 0;
        if (ratio > TIER_FIRST_RUN_SLOWER) {
            e->demoted = 1;
            snprintf(e->why, sizeof e->why,
                     "demoted at its first fused run: %.1fx the interpreter's time per element in earlier runs", ratio);
            b->demotions++;
            atomic_store(&e->state, BS_INTERP);
            if (b->opt.tier.trace)
                tier_trace(b, k, "demoted");
        }
        return;
    }
    e->fused_work += w;
    e->fused_secs += dt;
    e->fused_timed++;
    /* this run alone from its 5th fused run, or with the earlier runs'
     * speeds once they are enough together */
    TierSpeeds t = tier_speeds(e);
    int slower = e->fused_timed >= 5 || e->prior.late_n || e->prior.fused_n ? tier_verdict_slower(&t) : -1;
    if (slower == 1) {
        e->demoted = 1;
        b->demotions++;
        tier_remember_slow(b, k);
        atomic_store(&e->state, BS_INTERP);
        if (b->opt.tier.trace)
            tier_trace(b, k, "demoted: its fused runs are slower than the interpreter's");
    }
}


/* ---- the compiles after the run (tier_after.h) ------------------------------ */

/* Is block K hot and still without its (full) code? Promoted but queued or
 * abandoned, installed with quick code whose full compile did not run, or
 * hot in its only run. Not a block that cannot be planned, failed its
 * build, or ran slower fused. */
static int after_wanted(const Backend *b, int k)
{
    const BlockEntry *e = &b->entries[k];
    int st = atomic_load(&e->state);
    int rf = atomic_load(&e->refine);
    if (e->demoted)
        return 0;
    return st == BS_QUEUED || e->abandoned || (st == BS_PROFILE && e->remembered) ||
           (st == BS_FUSED && e->quick && (rf == RF_QUEUED || rf == RF_RUNNING));
}

int64_t tier_after_count(const Backend *b)
{
    if (!b->tiered || !b->warm_path || b->opt.tier.mode != TIER_BACKGROUND || b->opt.tier.after == TIER_AFTER_OFF)
        return 0;
    int64_t n = 0;
    for (int k = 0; k < b->nblocks; k++)
        n += after_wanted(b, k);
    return n;
}

/* The compiles after the run: block K's interpreted runs of this run
 * (the first left out) added to the speeds kept beside its unit UNIT
 * (tier_verdict.h), so that the next run, which installs the unit at the
 * block's first entry, can judge its first fused run at once
 * (tier_judge). Nothing with fewer than two timed runs. */
static void keep_interp_speeds(Backend *b, int k, const char *unit)
{
    const BlockEntry *e = &b->entries[k];
    char vpath[1300];
    if (e->interp_timed < 2 || tier_verdict_path(unit, b->program_id, vpath, sizeof vpath) != 0)
        return;
    TierSpeeds s;
    tier_verdict_read(vpath, &s);
    s.late_n += e->interp_timed - 1;
    s.late_secs += e->interp_secs - e->interp_first_secs;
    s.late_work += e->interp_work - e->interp_first_work;
    tier_verdict_write(vpath, &s);
}

void tier_after_compile(void *backend)
{
    Backend *b = backend;
    HotSet done = { 0 }, now = { 0 }, none = { 0 };
    for (int k = 0; k < b->nblocks; k++) {
        if (!after_wanted(b, k))
            continue;
        BlockEntry *e = &b->entries[k];
        if (!e->planned && plan_block(b, k) < 0)
            continue;
        JitBuildStats st;
        memset(&st, 0, sizeof st); /* the full code (not st.fast): what later runs probe for */
        char msg[400] = "";
        int rc = build_one(b, b->fg_plans, k, &st, msg, sizeof msg);
        if (rc == 0 && st.unit[0])
            keep_interp_speeds(b, k, st.unit);
        if (rc == 0 && tier_hot_add(&done, tier_block_hash(b->prog, &b->blocks[k])) < 0)
            break;
    }
    /* the set as it is now (the parent wrote its own at its end), and these */
    tier_hot_read(b->warm_path, &now);
    tier_warm_write(b->warm_path, &now, &done, &none);
    tier_hot_free(&now);
    tier_hot_free(&done);
}

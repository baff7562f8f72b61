/* tests/unit/test_tier_worker.c — the tier worker (runtime/fused/tier.c) on a
 * clock the test steps, with a compiler the test starts, stops and ends by
 * hand: the start delay, the share and the budget a job waits for, the
 * pacer stopping and resuming a compile at the points its rule gives,
 * drain, stop, and the gates the process-level tests wait at. Every check
 * waits for an event the worker reports (TierHooks.event), never for time
 * to pass, so it gives the same answer on an idle and on a busy machine. */
#include "check.h"
#include "runtime/core/settings.h"
#include "runtime/fused/tier.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the world the worker sees ---- */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double now;         /* the stepped clock */
    double cpu;         /* the worker thread's CPU seconds */
    int compiling;      /* a "compile" runs (the job in progress is in it) */
    int stopped;        /* the pacer stopped it */
    int abandoned;      /* abandon() was called */
    int looks_compiling;    /* the pacer's looks that found the compile running */
    int counts[TIER_EV_STOP + 1];
    int last_k[TIER_EV_STOP + 1];
    double last_t[TIER_EV_STOP + 1];
    /* jobs */
    int started[16], ended[16];
    int release[16];    /* the test lets job k end */
    int compile_in[16]; /* job k "compiles" while it runs */
    int order[16], norder;
} World;

static World W;

static double w_now(void *c)
{
    World *w = c;
    pthread_mutex_lock(&w->mu);
    double t = w->now;
    pthread_mutex_unlock(&w->mu);
    return t;
}

static double w_cpu(void *c)
{
    World *w = c;
    pthread_mutex_lock(&w->mu);
    double t = w->cpu;
    pthread_mutex_unlock(&w->mu);
    return t;
}

static int w_pace(void *c, int stop)
{
    World *w = c;
    pthread_mutex_lock(&w->mu);
    int running = w->compiling;
    if (running) {
        w->stopped = stop;
        w->looks_compiling++;
    }
    pthread_mutex_unlock(&w->mu);
    return running;
}

static void w_abandon(void *c)
{
    World *w = c;
    pthread_mutex_lock(&w->mu);
    w->abandoned = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static int w_compiling(void *c)
{
    World *w = c;
    pthread_mutex_lock(&w->mu);
    int r = w->compiling;
    pthread_mutex_unlock(&w->mu);
    return r;
}

static void w_event(void *c, TierEvent ev, int k, double t)
{
    World *w = c;
    pthread_mutex_lock(&w->mu);
    w->counts[ev]++;
    w->last_k[ev] = k;
    w->last_t[ev] = t;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* The job: it "compiles" when told to, and ends when released (or
 * abandoned). */
static void job(void *arg, int k)
{
    World *w = arg;
    int i = k < 0 ? 15 : k;
    pthread_mutex_lock(&w->mu);
    w->started[i]++;
    w->order[w->norder++ % 16] = k;
    if (w->compile_in[i])
        w->compiling = 1;
    pthread_cond_broadcast(&w->cv);
    while (!w->release[i] && !w->abandoned)
        pthread_cond_wait(&w->cv, &w->mu);
    w->compiling = 0;
    w->stopped = 0;
    w->ended[i]++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static const TierHooks hooks = { w_now, w_cpu, w_pace, w_abandon, w_compiling, w_event, 1, &W };

/* CHECK with W's lock held: every read of W by the test is synchronised
 * with the worker's threads (ThreadSanitizer runs this test). COND must
 * not call the worker (its lock is taken before W's) nor started(). */
#define CHECK_W(cond)                                                               \
    do {                                                                            \
        pthread_mutex_lock(&W.mu);                                                  \
        int ok_ = !!(cond);                                                         \
        pthread_mutex_unlock(&W.mu);                                                \
        if (ok_) {                                                                  \
            check_passed++;                                                         \
        } else {                                                                    \
            check_failed++;                                                         \
            fprintf(stderr, "FAIL: %s:%d: %s\n", __FILE__, __LINE__, #cond);        \
        }                                                                           \
    } while (0)

/* One int of W, read under its lock. */
static int wget(const int *p)
{
    pthread_mutex_lock(&W.mu);
    int v = *p;
    pthread_mutex_unlock(&W.mu);
    return v;
}

/* Wait (a minute at most: a hang guard, not a measurement) until PRED
 * holds, with W's lock held. */
#define WAIT_UNTIL(pred)                                                                \
    do {                                                                                \
        struct timespec ts_;                                                            \
        clock_gettime(CLOCK_REALTIME, &ts_);                                            \
        ts_.tv_sec += 60;                                                               \
        pthread_mutex_lock(&W.mu);                                                      \
        while (!(pred))                                                                 \
            if (pthread_cond_timedwait(&W.cv, &W.mu, &ts_) != 0)                        \
                break;                                                                  \
        pthread_mutex_unlock(&W.mu);                                                    \
    } while (0)

static void reset(void)
{
    pthread_mutex_lock(&W.mu);
    W.now = 0;
    W.cpu = 0;
    W.compiling = W.stopped = W.abandoned = W.looks_compiling = 0;
    memset(W.counts, 0, sizeof W.counts);
    memset(W.started, 0, sizeof W.started);
    memset(W.ended, 0, sizeof W.ended);
    memset(W.release, 0, sizeof W.release);
    memset(W.compile_in, 0, sizeof W.compile_in);
    W.norder = 0;
    pthread_mutex_unlock(&W.mu);
}

static TierWorker *start(double delay, double share, double budget)
{
    TierWorkerConfig c;
    memset(&c, 0, sizeof c);
    c.delay = delay;
    c.share = share;
    c.budget = budget;
    c.hooks = &hooks;
    return tier_worker_start(job, &W, &c);
}

/* Step the clock to T (and the worker's CPU time to CPU when >= 0), then
 * wake the worker's timed waits. */
static void step(TierWorker *w, double t, double cpu)
{
    pthread_mutex_lock(&W.mu);
    W.now = t;
    if (cpu >= 0)
        W.cpu = cpu;
    pthread_mutex_unlock(&W.mu);
    tier_worker_tick(w);
}

/* Step to T and wait for the pacer's next look (or the worker's next
 * event of kind EV) made at T: what the worker decides at T is then known
 * (a look still under way at the old time, or one before the step, does
 * not count: events carry the clock's reading they were decided on). */
static void step_seen(TierWorker *w, double t, double cpu, TierEvent ev)
{
    pthread_mutex_lock(&W.mu);
    int n = W.counts[ev];
    pthread_mutex_unlock(&W.mu);
    step(w, t, cpu);
    WAIT_UNTIL(W.counts[ev] > n && W.last_t[ev] >= t);
}

static void release(int k)
{
    pthread_mutex_lock(&W.mu);
    W.release[k < 0 ? 15 : k] = 1;
    pthread_cond_broadcast(&W.cv);
    pthread_mutex_unlock(&W.mu);
}

static int started(int k)
{
    pthread_mutex_lock(&W.mu);
    int r = W.started[k < 0 ? 15 : k];
    pthread_mutex_unlock(&W.mu);
    return r;
}

static int near(double a, double b) { return fabs(a - b) < 1e-9; }

/* ---- the cases ---- */

/* The first job waits for the delay; stepping past it starts the job. */
static void test_delay(void)
{
    reset();
    TierWorker *w = start(1.0, 1.0, 0.0);
    tier_worker_push(w, -1);
    WAIT_UNTIL(W.counts[TIER_EV_WAIT_DELAY] >= 1);
    step_seen(w, 0.5, -1, TIER_EV_WAIT_DELAY); /* looked again at 0.5, waits on */
    CHECK(started(-1) == 0);
    step(w, 1.0, -1);
    WAIT_UNTIL(W.started[15] == 1);
    CHECK_W(W.started[15] == 1 && near(W.last_t[TIER_EV_JOB_START], 1.0) && W.last_k[TIER_EV_JOB_START] == -1);
    release(-1);
    WAIT_UNTIL(W.counts[TIER_EV_JOB_END] == 1);
    CHECK(tier_worker_stop(w) == 0);
}

/* Told to stop during the delay: no job runs, the queued ones are dropped. */
static void test_stop_in_delay(void)
{
    reset();
    TierWorker *w = start(5.0, 1.0, 0.0);
    tier_worker_push(w, -1);
    tier_worker_push(w, 3);
    WAIT_UNTIL(W.counts[TIER_EV_WAIT_DELAY] >= 1);
    CHECK(tier_worker_stop(w) == 2);
    CHECK_W(W.started[15] == 0 && W.started[3] == 0 && W.counts[TIER_EV_STOP] == 1 && W.last_k[TIER_EV_STOP] == 2);
}

/* Jobs run in order; under a share of 50% the next job starts once the
 * busy time so far (the worker's CPU time: there is a pacer) is within
 * half the time since the start, and a block's job (k >= 0) once the
 * budget more is; the program's preparation (k < 0) waits for no budget. */
static void test_share_and_budget(void)
{
    reset();
    TierWorker *w = start(0.0, 0.5, 0.2);
    tier_worker_push(w, -1);
    tier_worker_push(w, 1);
    WAIT_UNTIL(W.started[15] == 1);
    CHECK_W(near(W.last_t[TIER_EV_JOB_START], 0.0));
    step(w, 0.3, 0.3); /* the preparation took 0.3 s of CPU */
    release(-1);
    /* job 1 may start at (0.3 + 0.2) / 0.5 = 1.0 */
    WAIT_UNTIL(W.counts[TIER_EV_WAIT_SHARE] >= 1);
    CHECK_W(W.last_k[TIER_EV_WAIT_SHARE] == 1 && W.started[1] == 0);
    step_seen(w, 0.99, -1, TIER_EV_WAIT_SHARE);
    CHECK(started(1) == 0);
    step(w, 1.0, -1);
    WAIT_UNTIL(W.started[1] == 1);
    CHECK_W(W.started[1] == 1 && near(W.last_t[TIER_EV_JOB_START], 1.0));
    CHECK(near(tier_worker_busy(w), 0.3));
    CHECK(near(tier_worker_throttled(w), 0.7) && near(tier_worker_stopped(w), 0.0));
    release(1);
    WAIT_UNTIL(W.counts[TIER_EV_JOB_END] == 2);
    CHECK_W(W.norder == 2 && W.order[0] == -1 && W.order[1] == 1);
    CHECK(tier_worker_stop(w) == 0);
}

/* The pacer, at a share of 10%: a compile that started at t = 1 runs
 * unstopped until its busy time passes the share by 20 ms (at 1.13: 0.13 <=
 * 0.113 + 0.02, at 1.2: 0.2 > 0.12 + 0.02), stays stopped until the share is 20 ms past it (0.2 <
 * 0.1 t - 0.02: after t = 2.2), then runs again. */
static void test_pacer(void)
{
    reset();
    pthread_mutex_lock(&W.mu);
    W.compile_in[0] = 1;
    pthread_mutex_unlock(&W.mu);
    TierWorker *w = start(0.0, 0.1, 0.0);
    step(w, 1.0, -1);
    tier_worker_push(w, 0);
    WAIT_UNTIL(W.started[0] == 1);
    /* the pacer's first look may come before the job's compile started:
     * look again, at the same time, until one finds it running */
    for (int i = 0; i < 1000 && !wget(&W.looks_compiling); i++)
        step_seen(w, 1.0, -1, TIER_EV_LOOK);
    CHECK_W(W.compiling == 1 && W.stopped == 0 && W.looks_compiling >= 1);
    CHECK(tier_worker_wait(w, TIER_GATE_COMPILING, 60) == 1);
    step_seen(w, 1.1, -1, TIER_EV_LOOK);
    CHECK_W(W.stopped == 0 && W.counts[TIER_EV_COMPILE_STOPPED] == 0);
    step_seen(w, 1.13, -1, TIER_EV_LOOK); /* 0.13 > 0.113, but not by 20 ms */
    CHECK_W(W.stopped == 0 && W.counts[TIER_EV_COMPILE_STOPPED] == 0);
    step_seen(w, 1.2, -1, TIER_EV_LOOK);
    CHECK_W(W.stopped == 1 && W.counts[TIER_EV_COMPILE_STOPPED] == 1 && near(W.last_t[TIER_EV_COMPILE_STOPPED], 1.2));
    CHECK(tier_worker_wait(w, TIER_GATE_STOPPED, 60) == 1);
    step_seen(w, 2.0, -1, TIER_EV_LOOK);
    CHECK_W(W.stopped == 1);
    CHECK(near(tier_worker_stopped(w), 0.8));
    double fb, ft, fs;
    tier_worker_figures(w, &fb, &ft, &fs);
    CHECK(near(fb, 0.2) && near(ft, 0.8) && near(fs, 0.8));
    step_seen(w, 2.19, -1, TIER_EV_LOOK);
    CHECK_W(W.stopped == 1 && W.counts[TIER_EV_COMPILE_RESUMED] == 0);
    step_seen(w, 2.3, -1, TIER_EV_LOOK);
    CHECK_W(W.stopped == 0 && W.counts[TIER_EV_COMPILE_RESUMED] == 1);
    /* running again from 2.3: at 2.4 its busy time is 0.3 */
    step_seen(w, 2.4, -1, TIER_EV_LOOK);
    CHECK(near(tier_worker_busy(w), 0.3) && near(tier_worker_stopped(w), 1.1));
    release(0);
    WAIT_UNTIL(W.counts[TIER_EV_JOB_END] == 1);
    CHECK(near(tier_worker_busy(w), 0.3) && near(tier_worker_stopped(w), 1.1) && near(tier_worker_throttled(w), 1.1));
    CHECK(tier_worker_stop(w) == 0);
}

typedef struct {
    TierWorker *w;
    double limit;
    int result;
    int done;
} DrainArg;

static void *drainer(void *p)
{
    DrainArg *d = p;
    int r = tier_worker_drain(d->w, d->limit);
    pthread_mutex_lock(&W.mu);
    d->result = r;
    d->done = 1;
    pthread_cond_broadcast(&W.cv);
    pthread_mutex_unlock(&W.mu);
    return NULL;
}

/* At the end of the run the share no longer holds: drain starts the
 * queued jobs at once, resumes a stopped compile, and returns 1 when they
 * are done; a drain whose time runs out (on the stepped clock) returns 0. */
static void test_drain(void)
{
    reset();
    pthread_mutex_lock(&W.mu);
    W.compile_in[2] = 1;
    pthread_mutex_unlock(&W.mu);
    TierWorker *w = start(0.0, 0.01, 10.0);
    step(w, 1.0, -1);
    tier_worker_push(w, 2);
    WAIT_UNTIL(W.counts[TIER_EV_WAIT_SHARE] >= 1); /* (0 + 10) / 0.01 = 1000 s */
    CHECK(started(2) == 0);
    DrainArg d = { w, 100.0, -1, 0 };
    pthread_t th;
    pthread_create(&th, NULL, drainer, &d);
    WAIT_UNTIL(W.started[2] == 1);
    CHECK_W(W.started[2] == 1 && near(W.last_t[TIER_EV_JOB_START], 1.0));
    pthread_mutex_lock(&W.mu);
    CHECK(!d.done);
    pthread_mutex_unlock(&W.mu);
    release(2);
    WAIT_UNTIL(d.done);
    pthread_join(th, NULL);
    CHECK(d.result == 1);

    /* a job that does not end: the drain's 5 s (stepped) run out */
    tier_worker_push(w, 3);
    WAIT_UNTIL(W.started[3] == 1);
    pthread_mutex_lock(&W.mu);
    int drains = W.counts[TIER_EV_DRAIN];
    pthread_mutex_unlock(&W.mu);
    DrainArg e = { w, 5.0, -1, 0 };
    pthread_create(&th, NULL, drainer, &e);
    WAIT_UNTIL(W.counts[TIER_EV_DRAIN] > drains); /* its time counted from 1.0: until 6.0 */
    step_seen(w, 3.0, -1, TIER_EV_DRAIN);
    pthread_mutex_lock(&W.mu);
    CHECK(!e.done);
    pthread_mutex_unlock(&W.mu);
    step(w, 6.0, -1);
    WAIT_UNTIL(e.done);
    pthread_join(th, NULL);
    CHECK(e.result == 0 && started(3) == 1);
    CHECK_W(W.ended[3] == 0);
    release(3);
    WAIT_UNTIL(W.ended[3] == 1);
    CHECK(tier_worker_stop(w) == 0);
}

/* Stop with a job in progress: the compile is abandoned (the job then
 * ends), the queued jobs are dropped. */
static void test_stop_abandons(void)
{
    reset();
    pthread_mutex_lock(&W.mu);
    W.compile_in[4] = 1;
    pthread_mutex_unlock(&W.mu);
    TierWorker *w = start(0.0, 1.0, 0.0);
    tier_worker_push(w, 4);
    WAIT_UNTIL(W.started[4] == 1);
    tier_worker_push(w, 5);
    tier_worker_push(w, 6);
    CHECK(tier_worker_wait(w, TIER_GATE_COMPILING, 60) == 1);
    CHECK(tier_worker_stop(w) == 2);
    CHECK_W(W.abandoned == 1 && W.ended[4] == 1 && W.started[5] == 0 && W.started[6] == 0);
}

/* The gates: a worker that runs out of jobs without the event says so (0). */
static void test_gates(void)
{
    reset();
    TierWorker *w = start(0.0, 1.0, 0.0);
    release(7); /* job 7 ends at once, no compile */
    tier_worker_push(w, 7);
    WAIT_UNTIL(W.counts[TIER_EV_JOB_END] == 1);
    CHECK(tier_worker_wait(w, TIER_GATE_COMPILING, 60) == 0);
    CHECK(tier_worker_wait(w, TIER_GATE_STOPPED, 60) == 0);
    CHECK(tier_worker_wait(w, TIER_GATE_DONE, 60) == 1);
    CHECK(tier_worker_wait(w, TIER_GATE_NONE, 0) == 1);
    CHECK(tier_worker_stop(w) == 0);
}

/* The order of the queue: jobs pushed later (a staged block's full
 * compile) run after every job, also after those pushed since. Job 8
 * holds the worker while the queue fills. */
static void test_push_later(void)
{
    reset();
    TierWorker *w = start(0.0, 1.0, 0.0);
    tier_worker_push(w, 8);
    WAIT_UNTIL(W.started[8] == 1);
    tier_worker_push_later(w, 12);
    tier_worker_push(w, 9);
    tier_worker_push_later(w, 13);
    tier_worker_push(w, 10);
    tier_worker_push(w, 11);
    for (int k = 8; k <= 13; k++)
        release(k);
    WAIT_UNTIL(W.ended[13] == 1);
    CHECK_W(W.norder == 6 && W.order[0] == 8 && W.order[1] == 9 && W.order[2] == 10 && W.order[3] == 11 &&
            W.order[4] == 12 && W.order[5] == 13);
    /* stop drops what is queued, of either kind */
    tier_worker_push(w, 14);
    WAIT_UNTIL(W.started[14] == 1);
    tier_worker_push_later(w, 12);
    tier_worker_push(w, 9);
    CHECK(tier_worker_stop(w) == 2);
}

/* The options: the gates and the worker's priority from the environment. */
static void test_options(void)
{
    TierOptions o;
    FILE *devnull = fopen("/dev/null", "w");
    setenv("VINTERP_TEST_TIER_START", "ready", 1);
    setenv("VINTERP_TEST_TIER_END", "stopped", 1);
    setenv("VINTERP_TIER_IDLE", "0", 1);
    CHECK(settings_load(devnull) == 0);
    tier_defaults(&o, "cpu");
    CHECK(o.start_ready == 1 && o.end_gate == TIER_GATE_STOPPED && o.idle == 0);
    setenv("VINTERP_TEST_TIER_END", "later", 1);
    CHECK(settings_load(devnull) == -1);
    unsetenv("VINTERP_TEST_TIER_END");
    setenv("VINTERP_TEST_TIER_START", "soon", 1);
    CHECK(settings_load(devnull) == -1);
    unsetenv("VINTERP_TEST_TIER_START");
    setenv("VINTERP_TIER_IDLE", "2", 1);
    CHECK(settings_load(devnull) == -1);
    unsetenv("VINTERP_TIER_IDLE");
    CHECK(settings_load(devnull) == 0);
    fclose(devnull);
    tier_defaults(&o, "cpu");
    CHECK(o.start_ready == 0 && o.end_gate == TIER_GATE_NONE && o.idle == 1);
    TierWorkerConfig c = tier_worker_config(&o, 0);
    CHECK(c.delay == 0 && near(c.share, 0.01 * (double)o.share_pct) && near(c.budget, 1e-3 * (double)o.budget_ms));
    c = tier_worker_config(&o, 1);
    CHECK(near(c.delay, 1e-3 * (double)o.delay_ms));
}

int main(void)
{
    pthread_mutex_init(&W.mu, NULL);
    pthread_cond_init(&W.cv, NULL);
    test_delay();
    test_stop_in_delay();
    test_share_and_budget();
    test_pacer();
    test_drain();
    test_stop_abandons();
    test_gates();
    test_push_later();
    test_options();
    return check_report("tier_worker");
}

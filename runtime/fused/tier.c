/* runtime/fused/tier.c — the tier options and the tier worker thread (see
 * tier.h). The worker runs one job at a time; a job is a block's
 * translation and compilation into the kernel cache. At the end of the run
 * (or at exit()) queued jobs are dropped, a compiler still running is
 * killed, and the job in progress gets a bounded time to notice. */
#define _GNU_SOURCE
#include "runtime/fused/tier.h"
#include "runtime/core/clock.h"
#include "runtime/core/errors.h"
#include "runtime/core/settings.h"
#include "runtime/fused/tuning.h"
#include "runtime/jit/jit.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *const mode_names[] = { "background", "sync", "eager", "off" };

int tier_parse_mode(const char *s, TierMode *m)
{
    if (!strcmp(s, "on")) {
        *m = TIER_BACKGROUND;
        return 0;
    }
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, mode_names[i])) {
            *m = (TierMode)i;
            return 0;
        }
    return -1;
}

const char *tier_mode_name(TierMode m) { return mode_names[m]; }

void tier_defaults(TierOptions *o, const char *backend)
{
    memset(o, 0, sizeof *o);
    o->mode = TIER_BACKGROUND;
    /* the defaults and what set them: runtime/fused/tuning.h */
    int cuda = backend && !strcmp(backend, "cuda");
    o->min_len = cuda ? TIER_MIN_LEN_CUDA : TIER_MIN_LEN_CPU;
    o->work = cuda ? TIER_WORK_CUDA : TIER_WORK_CPU;
    o->delay_ms = TIER_DELAY_MS;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o->share_pct = ncpu > 0 && ncpu <= 2 ? TIER_SHARE_PCT_2CPU : 100;
    o->budget_ms = TIER_BUDGET_MS;
    static const TierMode modes[] = { TIER_BACKGROUND, TIER_BACKGROUND, TIER_SYNC, TIER_EAGER, TIER_OFF };
    o->mode = modes[settings_choice(SET_TIER, 0)]; /* background|on|sync|eager|off */
    o->work = settings_count(SET_TIER_WORK, o->work);
    o->min_len = settings_count(SET_TIER_MIN_LEN, o->min_len);
    o->delay_ms = settings_count(SET_TIER_DELAY_MS, o->delay_ms);
    o->share_pct = settings_count(SET_TIER_SHARE, o->share_pct);
    o->grace_ms = settings_count(SET_TIER_GRACE_MS, o->grace_ms);
    o->budget_ms = settings_count(SET_TIER_BUDGET_MS, o->budget_ms);
    o->after = (TierAfter)settings_choice(SET_TIER_AFTER, cuda ? TIER_AFTER_CUDA : TIER_AFTER_CPU); /* detach|wait|off */
    o->after_gate = settings_given(SET_TEST_TIER_AFTER_GATE) ? settings_text(SET_TEST_TIER_AFTER_GATE) : NULL;
    o->idle = (int)settings_count(SET_TIER_IDLE, 1);
    o->test_hold = (int)settings_count(SET_TEST_TIER_HOLD, 0);
    o->test_refine_wait = settings_given(SET_TEST_TIER_REFINE);
    o->start_ready = settings_given(SET_TEST_TIER_START);
    /* compiling|stopped|done */
    o->end_gate = settings_given(SET_TEST_TIER_END) ? (TierGate)(TIER_GATE_COMPILING + settings_choice(SET_TEST_TIER_END, 0))
                                                    : TIER_GATE_NONE;
}

/* ---- the worker ------------------------------------------------------------- */

TierWorkerConfig tier_worker_config(const TierOptions *o, int with_delay)
{
    TierWorkerConfig c;
    memset(&c, 0, sizeof c);
    c.delay = with_delay ? 1e-3 * (double)o->delay_ms : 0.0;
    c.share = 0.01 * (double)o->share_pct;
    c.budget = 1e-3 * (double)o->budget_ms;
    c.idle = o->idle;
    c.trace = o->trace;
    return c;
}

struct TierWorker {
    pthread_t th;
    pthread_t pacer;    /* share < 1: the thread that stops and resumes the compiler */
    int has_pacer;      /* set before the worker starts, then only read */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_cond_t pcv; /* wakes the pacer: a job started, or stop */
    int *q;
    int qhead, qlen, qcap;
    int nlater;         /* of the queued jobs, the last NLATER were pushed by tier_worker_push_later */
    atomic_int stop;
    atomic_int done;    /* the thread has returned */
    int late_stop;      /* (tests) VINTERP_TEST_TIER_LATE_STOP: see late_gaveup */
    int busy;           /* a job is running (under mu) */
    int job_k;          /* which (under mu, while busy) */
    pthread_cond_t idle;    /* signalled when the queue is empty and no job runs */
    TierJob job;
    void *arg;
    TierHooks hooks;    /* the test's, or all NULL */
    int idle_prio;      /* SCHED_IDLE */
    FILE *trace;
    double delay;       /* seconds to wait before the first job */
    double share;       /* jobs take at most this share of the wall time */
    double budget;      /* share < 1: a block's job starts with this much of its share unused */
    double t0;          /* the clock at the start */
    double busy_s;      /* seconds the jobs have run (under mu) */
    double throttled;   /* seconds jobs waited for the share (under mu) */
    double stopped;     /* of which their compilers were stopped (under mu) */
    int nstops;         /* times the pacer stopped a compiler (under mu) */
    int draining;       /* the run has ended: no share to keep (under mu) */
    /* the job in progress, for the pacer (under mu) */
    double job_t0;      /* when it started */
    double job_cpu0;    /* the worker thread's CPU time then */
    clockid_t cpu_clock;    /* the worker thread's CPU clock (set before its first job) */
    double job_paused;  /* seconds its compiler was stopped */
    double pause_t0;    /* when the compiler was stopped (paused) */
    double compile_run; /* seconds its compiler has run unstopped, as the pacer saw it */
    double pace_prev;   /* the pacer's last look, when a compile ran then (else 0) */
    int paused;
};

/* ---- the world, real or the test's (TierHooks) ---- */

static double now_of(const TierWorker *w) { return w->hooks.now ? w->hooks.now(w->hooks.ctx) : rt_seconds(); }

/* CPU seconds of the clock CID so far (0 when it cannot be read). */
static double cpu_seconds(clockid_t cid)
{
    struct timespec ts;
    if (clock_gettime(cid, &ts) != 0)
        return 0.0;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double worker_cpu(const TierWorker *w)
{
    return w->hooks.worker_cpu ? w->hooks.worker_cpu(w->hooks.ctx) : cpu_seconds(w->cpu_clock);
}

static int pace(TierWorker *w, int stop) { return w->hooks.pace ? w->hooks.pace(w->hooks.ctx, stop) : jit_pace(stop); }

static void abandon(TierWorker *w)
{
    if (w->hooks.abandon)
        w->hooks.abandon(w->hooks.ctx);
    else
        jit_abandon();
}

/* A job held by tier_test_hold_forever: a compile that never ends. */
static atomic_int held;
/* (tests) VINTERP_TEST_TIER_LATE_STOP: set when a stop has given up on a
 * worker (join_or_keep); its job, held until then, ends. */
static atomic_int late_gaveup;

static int compiling(TierWorker *w)
{
    if (atomic_load(&held))
        return 1;
    return w->hooks.compiling ? w->hooks.compiling(w->hooks.ctx) : jit_compiling();
}

/* The teardown of a library still in use crashes; so does the held job's
 * (registered like a library's, at exit). */
static void held_teardown(void)
{
    static const char msg[] = "vinterp: the held tier job's library was torn down under it\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
    }
    abort();
}

void tier_test_hold_forever(void)
{
    atexit(held_teardown);
    atomic_store(&held, 1);
    for (;;)
        pause();
}

/* Tell the test (mu held) what happened at T: the clock's reading the
 * decision was made on. */
static void emit(TierWorker *w, TierEvent ev, int k, double t)
{
    if (w->hooks.event)
        w->hooks.event(w->hooks.ctx, ev, k, t);
}

/* Wait on CV (W's mu held) until the clock reads T_END, or W is told to
 * stop, or (ANY) CV is signalled. On a stepped clock, the clock is looked
 * at when tier_worker_tick (or anything else) wakes CV. */
static void wait_until(TierWorker *w, pthread_cond_t *cv, double t_end, int any)
{
    if (w->hooks.stepped) {
        while (!atomic_load(&w->stop) && now_of(w) < t_end) {
            pthread_cond_wait(cv, &w->mu);
            if (any)
                break;
        }
        return;
    }
    double left = t_end - now_of(w);
    if (left <= 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)((left - (double)(long)left) * 1e9);
    ts.tv_sec += (time_t)left + ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    while (!atomic_load(&w->stop))
        if (pthread_cond_timedwait(cv, &w->mu, &ts) == ETIMEDOUT || any)
            break;
}

/* Workers still running, for the exit() hook (one per backend: at most a
 * couple per process). */
static TierWorker *live[4];
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static int hooked;

/* The job in progress so far (mu held, a job running, T now): with a
 * pacer, the worker thread's CPU time (an idle-priority thread that waits
 * for a CPU costs the program nothing) plus the time its compiler ran
 * unstopped (wall time: the compiler's CPU time is not ours to read while
 * it runs); without one, the wall time. */
static double job_busy(const TierWorker *w, double t)
{
    if (!w->has_pacer)
        return t - w->job_t0;
    double cpu = worker_cpu(w) - w->job_cpu0;
    return (cpu > 0 ? cpu : 0.0) + w->compile_run;
}

/* The job in progress (mu held, T now): add the time its compile ran
 * unstopped since the pacer's last look. */
static void note_compile_run(TierWorker *w, double t)
{
    if (w->pace_prev > 0 && !w->paused)
        w->compile_run += t - w->pace_prev;
}

/* Seconds the compiler of the job in progress has been stopped so far (mu
 * held, T now). */
static double job_stopped(const TierWorker *w, double t)
{
    return w->job_paused + (w->paused ? t - w->pause_t0 : 0.0);
}

/* The pacer's stops and resumes, on -d tier (mu held). */
static void trace_pace(const TierWorker *w, double t, double busy, double allowed, int stopped)
{
    if (!w->trace)
        return;
    char what[48] = "the preparation";
    if (w->job_k >= 0)
        snprintf(what, sizeof what, "block %d", w->job_k);
    else if (w->job_k != TIER_JOB_PREPARE)
        snprintf(what, sizeof what, "block %d's full compile", tier_job_second_block(w->job_k));
    fprintf(w->trace, "tier: %.6f s: %s: its compile %s: the worker busy %.6f s, its share %.6f s\n", t - w->t0,
            what, stopped ? "stopped for the share" : "resumed", busy, allowed);
}

/* The pacer of the worker's compiles (jit_pace), on a thread of its own at
 * the program's priority while a job runs: it stops the compiler while the
 * worker's busy time (its finished jobs and this one) exceeds its share of
 * the run so far; a compile longer than the share allows is then spread
 * over the run instead of overshooting it. 20 ms either way against
 * flapping; a look every 5 ms. (On the worker's own thread, at idle
 * priority, the look would wait for a CPU as long as the compiler did, and
 * on a busy machine come after the compile.) */
static void *pacer_main(void *p)
{
    TierWorker *w = p;
    pthread_mutex_lock(&w->mu);
    while (!atomic_load(&w->stop)) {
        if (!w->busy) {
            pthread_cond_wait(&w->pcv, &w->mu);
            continue;
        }
        double t = now_of(w);
        note_compile_run(w, t);
        double allowed = w->share * (t - w->t0);
        double running = job_busy(w, t);
        int stop = w->paused;
        if (!w->paused && !w->draining && w->busy_s + running > allowed + 0.02)
            stop = 1;
        else if (w->paused && (w->draining || w->busy_s + running < allowed - 0.02))
            stop = 0;
        /* Only a compile can be stopped: the translation before it runs on. */
        int running_cc = pace(w, stop);
        if (!running_cc)
            stop = 0;
        if (stop && !w->paused) {
            w->paused = 1;
            w->pause_t0 = t;
            w->nstops++;
            trace_pace(w, t, w->busy_s + running, allowed, 1);
            emit(w, TIER_EV_COMPILE_STOPPED, w->job_k, t);
        } else if (!stop && w->paused) {
            w->paused = 0;
            w->job_paused += t - w->pause_t0;
            trace_pace(w, t, w->busy_s + running, allowed, 0);
            emit(w, TIER_EV_COMPILE_RESUMED, w->job_k, t);
        }
        w->pace_prev = running_cc ? t : 0.0;
        emit(w, TIER_EV_LOOK, w->job_k, t);
        wait_until(w, &w->pcv, now_of(w) + 0.005, 1);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void *worker_main(void *p)
{
    TierWorker *w = p;
    if (w->share < 1.0 && !w->hooks.pace)
        jit_set_paced(1);
    /* The program comes first: this thread, and the compilers it starts
     * (they inherit it), yield the CPU to it (Linux: per thread). Nice 10
     * still takes a tenth of a core that the program's threads want (the
     * reference splits long loops between the CPUs: black_scholes_8m's
     * timed region was 5-15% slower while the worker translated blocks
     * beside it); SCHED_IDLE runs only on a CPU that nothing else wants.
     * (Which is also why, on a machine busy with other work, the worker
     * may wait minutes for a CPU: VINTERP_TIER_IDLE=0 keeps nice 10.) */
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
#ifdef SCHED_IDLE
    if (w->idle_prio) {
        struct sched_param sp = { 0 };
        pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
    }
#endif
    pthread_mutex_lock(&w->mu);
    if (pthread_getcpuclockid(pthread_self(), &w->cpu_clock) != 0)
        w->cpu_clock = CLOCK_THREAD_CPUTIME_ID; /* read on this thread: right here, 0 on the pacer's */
    if (w->delay > 0) { /* a run that ends first costs no more than this thread */
        double t_end = w->t0 + w->delay;
        for (double t; !atomic_load(&w->stop) && (t = now_of(w)) < t_end;) {
            emit(w, TIER_EV_WAIT_DELAY, -1, t);
            wait_until(w, &w->cv, t_end, w->hooks.stepped);
        }
    }
    for (;;) {
        while (!w->qlen && !atomic_load(&w->stop))
            pthread_cond_wait(&w->cv, &w->mu);
        if (atomic_load(&w->stop))
            break;
        /* The share: the next job starts when the busy time so far is
         * within SHARE of the time since the start, and a block's job (not
         * the program's preparation) when BUDGET more is. */
        double need = w->share < 1.0 && w->q[w->qhead] != TIER_JOB_PREPARE ? w->budget : 0.0;
        double t_ok = w->t0 + (w->busy_s + need) / w->share;
        double t = now_of(w);
        if (!w->draining && t_ok > t) {
            emit(w, TIER_EV_WAIT_SHARE, w->q[w->qhead], t);
            wait_until(w, &w->cv, t_ok, 1);
            w->throttled += now_of(w) - t;
            continue; /* stopped, drained or the share reached: look again */
        }
        int k = w->q[w->qhead];
        if (w->qlen <= w->nlater)
            w->nlater--;
        w->qhead = (w->qhead + 1) % w->qcap;
        w->qlen--;
        w->busy = 1;
        w->job_k = k;
        w->job_t0 = t;
        w->job_cpu0 = worker_cpu(w);
        w->job_paused = 0.0;
        w->paused = 0;
        w->compile_run = 0.0;
        w->pace_prev = 0.0;
        emit(w, TIER_EV_JOB_START, k, t);
        pthread_cond_signal(&w->pcv);
        pthread_mutex_unlock(&w->mu);
        if (w->late_stop) { /* (tests) in a job until the stop gives up on it, then gone */
            struct timespec nap = { 0, 1000000 };
            while (!atomic_load(&late_gaveup))
                nanosleep(&nap, NULL);
            pthread_mutex_lock(&w->mu);
            w->busy = 0;
            break;
        }
        w->job(w->arg, k);
        pthread_mutex_lock(&w->mu);
        double now = now_of(w);
        note_compile_run(w, now);
        w->pace_prev = 0.0;
        double busy = job_busy(w, now);
        double stopped = job_stopped(w, now); /* paused at the end: killed then */
        w->paused = 0;
        w->busy = 0;
        w->busy_s += busy;
        w->throttled += stopped;
        w->stopped += stopped;
        emit(w, TIER_EV_JOB_END, k, now);
        if (!w->qlen)
            pthread_cond_broadcast(&w->idle);
    }
    pthread_mutex_unlock(&w->mu);
    atomic_store(&w->done, 1);
    return NULL;
}

/* Wait up to SECONDS (real ones, whatever the clock) for the thread; 1
 * when it ended (and was joined). */
static int join_bounded(TierWorker *w, double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)seconds;
    return pthread_timedjoin_np(w->th, NULL, &ts) == 0;
}

/* Tell W to stop (mu not held): its waits end, its compiler is killed.
 * Returns the number of queued jobs, dropped. */
static int tell_stop(TierWorker *w)
{
    pthread_mutex_lock(&w->mu);
    int dropped = w->qlen;
    w->qlen = 0;
    w->nlater = 0;
    atomic_store(&w->stop, 1);
    emit(w, TIER_EV_STOP, dropped, now_of(w));
    pthread_cond_broadcast(&w->cv);
    pthread_cond_broadcast(&w->pcv);
    pthread_cond_broadcast(&w->idle);
    pthread_mutex_unlock(&w->mu);
    abandon(w);
    return dropped;
}

/* Workers that did not stop in time (tier_worker_stop returned -1), kept
 * here: what such a worker uses stays allocated, and reachable, until the
 * process ends (a leak checker must not see it lost once the thread
 * finishes on its own, as on a busy machine). */
static atomic_int nstuck;
static TierWorker *volatile stuck[8]; /* volatile: kept, never read */

/* Stop W's thread: joined within the bound (1), or given up on and kept
 * (0; the caller detaches it or leaves it to the exit). Under
 * VINTERP_TEST_TIER_LATE_STOP the bound is nought and the thread, given
 * up on, ends at once, joined here: the case a busy machine makes by
 * chance (the test that it is not a leak). */
static int join_or_keep(TierWorker *w)
{
    if (join_bounded(w, w->late_stop ? 0.0 : 2.0))
        return 1;
    int at = atomic_fetch_add(&nstuck, 1);
    if (at < (int)(sizeof stuck / sizeof *stuck))
        stuck[at] = w;
    if (w->late_stop) {
        atomic_store(&late_gaveup, 1);
        pthread_join(w->th, NULL);
        w->late_stop = 2; /* joined: nothing to detach */
    }
    return 0;
}

int tier_workers_stuck(void) { return atomic_load(&nstuck) > 0; }

/* Stop the live workers (a bounded wait each); 1 when one of them, or an
 * earlier one, is still running. */
static int stop_live(void)
{
    int stuck = 0;
    pthread_mutex_lock(&live_mu);
    for (int i = 0; i < 4; i++) {
        TierWorker *w = live[i];
        if (!w)
            continue;
        tell_stop(w);
        /* exit() on the worker itself (a fatal error there): nothing to
         * wait for. Else give the job in progress a moment to clean up its
         * temporary files. */
        if (!pthread_equal(pthread_self(), w->th) && !join_or_keep(w))
            stuck = 1;
        live[i] = NULL;
    }
    pthread_mutex_unlock(&live_mu);
    return stuck || tier_workers_stuck();
}

/* At exit(): a worker still running would meet a torn-down process (the
 * CUDA driver, NVRTC's static state: a crash after the output): end here. */
static void at_exit(int status, void *arg)
{
    (void)arg;
    if (stop_live()) {
        fflush(NULL);
        _exit(status);
    }
}

TierWorker *tier_worker_start(TierJob job, void *arg, const TierWorkerConfig *cfg)
{
    TierWorker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->job = job;
    w->arg = arg;
    if (cfg->hooks)
        w->hooks = *cfg->hooks;
    w->idle_prio = cfg->idle;
    w->late_stop = settings_count(SET_TEST_TIER_LATE_STOP, 0) == 1;
    w->trace = cfg->trace;
    w->delay = cfg->delay;
    w->share = cfg->share > 0 && cfg->share <= 1 ? cfg->share : 1.0;
    w->budget = cfg->budget > 0 ? cfg->budget : 0.0;
    w->t0 = now_of(w);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    pthread_cond_init(&w->pcv, NULL);
    pthread_cond_init(&w->idle, NULL);
    /* The pacer, created here on the program's thread, runs at the
     * program's priority (a thread the worker made would be idle like the
     * worker). Without it the compiles run unpaced. */
    if (w->share < 1.0)
        w->has_pacer = pthread_create(&w->pacer, NULL, pacer_main, w) == 0;
    if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
        if (w->has_pacer) {
            pthread_mutex_lock(&w->mu);
            atomic_store(&w->stop, 1);
            pthread_cond_broadcast(&w->pcv);
            pthread_mutex_unlock(&w->mu);
            pthread_join(w->pacer, NULL);
        }
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        pthread_cond_destroy(&w->pcv);
        pthread_cond_destroy(&w->idle);
        free(w);
        return NULL;
    }
    pthread_mutex_lock(&live_mu);
    for (int i = 0; i < 4; i++)
        if (!live[i]) {
            live[i] = w;
            break;
        }
    if (!hooked) {
        hooked = 1;
        on_exit(at_exit, NULL);
        rt_set_exit_guard(stop_live);
    }
    pthread_mutex_unlock(&live_mu);
    return w;
}

/* Queue K: before the jobs pushed later (LATER 0), or after every job. */
static void push(TierWorker *w, int k, int later)
{
    pthread_mutex_lock(&w->mu);
    if (w->qlen == w->qcap) {
        int cap = w->qcap ? 2 * w->qcap : 16;
        int *q = malloc((size_t)cap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&w->mu);
            return; /* the block stays in the interpreter */
        }
        for (int i = 0; i < w->qlen; i++)
            q[i] = w->q[(w->qhead + i) % w->qcap];
        free(w->q);
        w->q = q;
        w->qhead = 0;
        w->qcap = cap;
    }
    int at = later ? w->qlen : w->qlen - w->nlater; /* its place in the queue */
    for (int i = w->qlen; i > at; i--)
        w->q[(w->qhead + i) % w->qcap] = w->q[(w->qhead + i - 1) % w->qcap];
    w->q[(w->qhead + at) % w->qcap] = k;
    w->qlen++;
    w->nlater += later;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void tier_worker_push(TierWorker *w, int k) { push(w, k, 0); }

void tier_worker_push_later(TierWorker *w, int k) { push(w, k, 1); }

void tier_worker_tick(TierWorker *w)
{
    pthread_mutex_lock(&w->mu);
    pthread_cond_broadcast(&w->cv);
    pthread_cond_broadcast(&w->pcv);
    pthread_cond_broadcast(&w->idle);
    pthread_mutex_unlock(&w->mu);
}

double tier_worker_busy(const TierWorker *w)
{
    pthread_mutex_lock((pthread_mutex_t *)&w->mu);
    double t = w->busy_s;
    if (w->busy) /* the job in progress, so far */
        t += job_busy(w, now_of(w));
    pthread_mutex_unlock((pthread_mutex_t *)&w->mu);
    return t;
}

/* TOTAL (a field of W under mu) with the job in progress's stopped time. */
static double with_stopped_so_far(const TierWorker *w, const double *total)
{
    pthread_mutex_lock((pthread_mutex_t *)&w->mu);
    double t = *total;
    if (w->busy)
        t += job_stopped(w, now_of(w));
    pthread_mutex_unlock((pthread_mutex_t *)&w->mu);
    return t;
}

double tier_worker_throttled(const TierWorker *w) { return with_stopped_so_far(w, &w->throttled); }

void tier_worker_figures(const TierWorker *w, double *busy, double *throttled, double *stopped)
{
    pthread_mutex_lock((pthread_mutex_t *)&w->mu);
    double now = now_of(w), b = w->busy_s, t = w->throttled, s = w->stopped;
    if (w->busy) { /* the job in progress, so far, at one reading of the clock */
        b += job_busy(w, now);
        t += job_stopped(w, now);
        s += job_stopped(w, now);
    }
    pthread_mutex_unlock((pthread_mutex_t *)&w->mu);
    *busy = b;
    *throttled = t;
    *stopped = s;
}

double tier_worker_stopped(const TierWorker *w) { return with_stopped_so_far(w, &w->stopped); }

int tier_worker_is_self(const TierWorker *w) { return w && pthread_equal(pthread_self(), w->th); }

int tier_worker_stopping(const TierWorker *w) { return w && atomic_load(&w->stop); }

const _Atomic int *tier_worker_stop_flag(const TierWorker *w) { return &w->stop; }

int tier_worker_drain(TierWorker *w, double seconds)
{
    if (!w || seconds <= 0)
        return 0;
    pthread_mutex_lock(&w->mu);
    double t_end = now_of(w) + seconds;
    w->draining = 1; /* the interpreter is done: the worker may use the time */
    pthread_cond_broadcast(&w->cv);
    pthread_cond_broadcast(&w->pcv); /* a stopped compile goes on */
    for (double t; (w->qlen || w->busy) && !atomic_load(&w->stop) && (t = now_of(w)) < t_end;) {
        emit(w, TIER_EV_DRAIN, w->qlen + w->busy, t);
        wait_until(w, &w->idle, t_end, 1);
    }
    int drained = !w->qlen && !w->busy;
    pthread_mutex_unlock(&w->mu);
    return drained;
}

int tier_worker_wait(TierWorker *w, TierGate gate, double limit)
{
    if (!w || gate == TIER_GATE_NONE)
        return 1;
    if (gate == TIER_GATE_DONE)
        return tier_worker_drain(w, limit) ? 1 : -1;
    /* The compiler runs in a process of its own, seen by polling. */
    struct timespec nap = { 0, 1000000 };
    for (double t_end = rt_seconds() + limit; rt_seconds() < t_end;) {
        pthread_mutex_lock(&w->mu);
        int stopped = w->nstops > 0;
        int idle = !w->qlen && !w->busy;
        pthread_mutex_unlock(&w->mu);
        if (gate == TIER_GATE_COMPILING ? compiling(w) : stopped)
            return 1;
        if (idle || atomic_load(&w->stop))
            return 0;
        nanosleep(&nap, NULL);
    }
    return -1;
}

int tier_worker_stop(TierWorker *w)
{
    if (!w)
        return 0;
    pthread_mutex_lock(&live_mu);
    for (int i = 0; i < 4; i++)
        if (live[i] == w)
            live[i] = NULL;
    pthread_mutex_unlock(&live_mu);
    int dropped = tell_stop(w);
    if (w->has_pacer) /* it only waits on pcv: it ends at once */
        pthread_join(w->pacer, NULL);
    if (!join_or_keep(w)) {
        /* Still translating: leave it, and what it reads, to the exit
         * (which must then not tear anything down: tier_workers_stuck). */
        if (w->late_stop != 2)
            pthread_detach(w->th);
        return -1;
    }
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    pthread_cond_destroy(&w->pcv);
    pthread_cond_destroy(&w->idle);
    free(w->q);
    free(w);
    return dropped;
}

/* runtime/fused/tier.c — the tier options and the tier worker thread (see
 * tier.h). The worker runs one job at a time; a job is a block's
 * translation and compilation into the kernel cache. At the end of the run
 * (or at exit()) queued jobs are dropped, a compiler still running is
 * killed, and the job in progress gets a bounded time to notice. */
#define _GNU_SOURCE
#include "runtime/fused/tier.h"
#include "runtime/core/clock.h"
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

static int env_count(const char *name, int64_t *out)
{
    const char *e = getenv(name);
    if (!e || !*e)
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(e, &end, 10);
    if (*end || v < 0 || errno) {
        fprintf(stderr, "vinterp: %s takes a count >= 0, not '%s'\n", name, e);
        return -1;
    }
    *out = v;
    return 0;
}

int tier_defaults(TierOptions *o, const char *backend)
{
    memset(o, 0, sizeof *o);
    o->mode = TIER_BACKGROUND;
    /* A fused run costs a few microseconds more than an interpreted one
     * (variable table, length checks, allocation callbacks; on a GPU the
     * launches): worth it from some thousands of elements (cpu) or a
     * hundred thousand (cuda). Promotion at about 20 ms of interpreter
     * work: a block that hot is likely to run long enough for a
     * background compile (0.1-0.5 s) to come back in time. */
    int cuda = backend && !strcmp(backend, "cuda");
    o->min_len = cuda ? 65536 : 4096;
    o->work = cuda ? 50000000 : 20000000;
    /* Most programs a NESL session runs take a few milliseconds: they end
     * before the worker starts inlining (which costs the interpreter some
     * memory bandwidth and page-table work, and a SPAWN's fork more). */
    o->delay_ms = 20;
    /* A compiler on the other core slows the interpreter (shared cache,
     * memory bandwidth): by 0.3-0.5 s per second of compiling on the bench
     * programs (2 cores; black_scholes_8m: +12% at a 30% share, about +4%
     * at 10%). With more cores the compiler has one of its own: no share. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o->share_pct = ncpu > 0 && ncpu <= 2 ? 10 : 100;
    /* Under a share, a block's compile starts only once the share holds
     * this much unused time: no sooner than 1 s into a run at 10%. A
     * shorter run could not use the code (a unit takes 0.1-0.5 s to
     * compile), and the compile would only slow it (qs_5m, quickhull_5m:
     * 6-12% cold). */
    o->budget_ms = 100;
    const char *e = getenv("VINTERP_TIER");
    if (e && *e && tier_parse_mode(e, &o->mode) < 0) {
        fprintf(stderr, "vinterp: VINTERP_TIER takes background, sync, eager or off, not '%s'\n", e);
        return -1;
    }
    if (env_count("VINTERP_TIER_WORK", &o->work) < 0 || env_count("VINTERP_TIER_MIN_LEN", &o->min_len) < 0 ||
        env_count("VINTERP_TIER_DELAY_MS", &o->delay_ms) < 0 || env_count("VINTERP_TIER_SHARE", &o->share_pct) < 0 ||
        env_count("VINTERP_TIER_GRACE_MS", &o->grace_ms) < 0 || env_count("VINTERP_TIER_BUDGET_MS", &o->budget_ms) < 0)
        return -1;
    if (o->share_pct < 1 || o->share_pct > 100) {
        fprintf(stderr, "vinterp: VINTERP_TIER_SHARE takes a percentage from 1 to 100, not %lld\n",
                (long long)o->share_pct);
        return -1;
    }
    return 0;
}

/* ---- the worker ------------------------------------------------------------- */

struct TierWorker {
    pthread_t th;
    pthread_t pacer;    /* share < 1: the thread that stops and resumes the compiler */
    int has_pacer;      /* set before the worker starts, then only read */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_cond_t pcv; /* wakes the pacer: a job started, or stop */
    int *q;
    int qhead, qlen, qcap;
    atomic_int stop;
    atomic_int done;    /* the thread has returned */
    int busy;           /* a job is running (under mu) */
    pthread_cond_t idle;    /* signalled when the queue is empty and no job runs */
    TierJob job;
    void *arg;
    double delay;       /* seconds to wait before the first job */
    double share;       /* jobs take at most this share of the wall time */
    double budget;      /* share < 1: a block's job starts with this much of its share unused */
    double t0;          /* CLOCK_MONOTONIC at the start */
    double busy_s;      /* seconds the jobs have run (under mu) */
    double throttled;   /* seconds jobs waited for the share (under mu) */
    double stopped;     /* of which their compilers were stopped (under mu) */
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

/* The CLOCK_REALTIME time SECONDS from now, for the timed waits. */
static struct timespec deadline_in(double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)((seconds - (double)(long)seconds) * 1e9);
    ts.tv_sec += (time_t)seconds + ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    return ts;
}

/* Wait on CV (W's mu held) until SECONDS have passed, or W is told to
 * stop, or (ANY) CV is signalled. */
static void wait_for(TierWorker *w, pthread_cond_t *cv, double seconds, int any)
{
    struct timespec ts = deadline_in(seconds);
    while (!atomic_load(&w->stop))
        if (pthread_cond_timedwait(cv, &w->mu, &ts) == ETIMEDOUT || any)
            break;
}

/* Workers still running, for the exit() hook (one per backend: at most a
 * couple per process). */
static TierWorker *live[4];
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static int hooked;

/* CPU seconds of the clock CID so far (0 when it cannot be read). */
static double cpu_seconds(clockid_t cid)
{
    struct timespec ts;
    if (clock_gettime(cid, &ts) != 0)
        return 0.0;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The job in progress so far (mu held, a job running, T now): with a
 * pacer, the worker thread's CPU time (an idle-priority thread that waits
 * for a CPU costs the program nothing) plus the time its compiler ran
 * unstopped (wall time: the compiler's CPU time is not ours to read while
 * it runs); without one, the wall time. */
static double job_busy(const TierWorker *w, double t)
{
    if (!w->has_pacer)
        return t - w->job_t0;
    double cpu = cpu_seconds(w->cpu_clock) - w->job_cpu0;
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
        double t = rt_seconds();
        note_compile_run(w, t);
        double allowed = w->share * (t - w->t0);
        double running = job_busy(w, t);
        int stop = w->paused;
        if (!w->paused && !w->draining && w->busy_s + running > allowed + 0.02)
            stop = 1;
        else if (w->paused && (w->draining || w->busy_s + running < allowed - 0.02))
            stop = 0;
        /* Only a compile can be stopped: the translation before it runs on. */
        int compiling = jit_pace(stop);
        if (!compiling)
            stop = 0;
        if (stop && !w->paused) {
            w->paused = 1;
            w->pause_t0 = t;
        } else if (!stop && w->paused) {
            w->paused = 0;
            w->job_paused += t - w->pause_t0;
        }
        w->pace_prev = compiling ? t : 0.0;
        wait_for(w, &w->pcv, 0.005, 1);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void *worker_main(void *p)
{
    TierWorker *w = p;
    if (w->share < 1.0)
        jit_set_paced(1);
    /* The program comes first: this thread, and the compilers it starts
     * (they inherit it), yield the CPU to it (Linux: per thread). Nice 10
     * still takes a tenth of a core that the program's threads want (the
     * reference splits long loops between the CPUs: black_scholes_8m's
     * timed region was 5-15% slower while the worker translated blocks
     * beside it); SCHED_IDLE runs only on a CPU that nothing else wants. */
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
#ifdef SCHED_IDLE
    struct sched_param sp = { 0 };
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
#endif
    pthread_mutex_lock(&w->mu);
    if (pthread_getcpuclockid(pthread_self(), &w->cpu_clock) != 0)
        w->cpu_clock = CLOCK_THREAD_CPUTIME_ID; /* read on this thread: right here, 0 on the pacer's */
    if (w->delay > 0) /* a run that ends first costs no more than this thread */
        wait_for(w, &w->cv, w->delay, 0);
    for (;;) {
        while (!w->qlen && !atomic_load(&w->stop))
            pthread_cond_wait(&w->cv, &w->mu);
        if (atomic_load(&w->stop))
            break;
        /* The share: the next job starts when the busy time so far is
         * within SHARE of the time since the start, and a block's job (not
         * the program's preparation, k < 0) when BUDGET more is. */
        double need = w->share < 1.0 && w->q[w->qhead] >= 0 ? w->budget : 0.0;
        double early = w->draining ? 0.0 : (w->busy_s + need) / w->share - (rt_seconds() - w->t0);
        if (early > 0) {
            double t = rt_seconds();
            wait_for(w, &w->cv, early, 1);
            w->throttled += rt_seconds() - t;
            continue; /* stopped, drained or the share reached: look again */
        }
        int k = w->q[w->qhead];
        w->qhead = (w->qhead + 1) % w->qcap;
        w->qlen--;
        w->busy = 1;
        w->job_t0 = rt_seconds();
        w->job_cpu0 = cpu_seconds(w->cpu_clock);
        w->job_paused = 0.0;
        w->paused = 0;
        w->compile_run = 0.0;
        w->pace_prev = 0.0;
        pthread_cond_signal(&w->pcv);
        pthread_mutex_unlock(&w->mu);
        w->job(w->arg, k);
        pthread_mutex_lock(&w->mu);
        double now = rt_seconds();
        note_compile_run(w, now);
        w->pace_prev = 0.0;
        double t = job_busy(w, now);
        double stopped = job_stopped(w, now); /* paused at the end: killed then */
        w->paused = 0;
        w->busy = 0;
        w->busy_s += t;
        w->throttled += stopped;
        w->stopped += stopped;
        if (!w->qlen)
            pthread_cond_broadcast(&w->idle);
    }
    pthread_mutex_unlock(&w->mu);
    atomic_store(&w->done, 1);
    return NULL;
}

/* Wait up to SECONDS for the thread; 1 when it ended (and was joined). */
static int join_bounded(TierWorker *w, double seconds)
{
    struct timespec ts = deadline_in(seconds);
    return pthread_timedjoin_np(w->th, NULL, &ts) == 0;
}

static void at_exit(void)
{
    pthread_mutex_lock(&live_mu);
    for (int i = 0; i < 4; i++) {
        TierWorker *w = live[i];
        if (!w)
            continue;
        atomic_store(&w->stop, 1);
        jit_abandon();
        pthread_mutex_lock(&w->mu);
        pthread_cond_broadcast(&w->cv);
        pthread_cond_broadcast(&w->pcv);
        pthread_mutex_unlock(&w->mu);
        /* exit() on the worker itself (a fatal error there): nothing to
         * wait for. Else give the job in progress a moment to clean up its
         * temporary files; the process ends either way. */
        if (!pthread_equal(pthread_self(), w->th))
            join_bounded(w, 2.0);
        live[i] = NULL;
    }
    pthread_mutex_unlock(&live_mu);
}

TierWorker *tier_worker_start(TierJob job, void *arg, double delay, double share, double budget)
{
    TierWorker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->job = job;
    w->arg = arg;
    w->delay = delay;
    w->share = share > 0 && share <= 1 ? share : 1.0;
    w->budget = budget > 0 ? budget : 0.0;
    w->t0 = rt_seconds();
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
        atexit(at_exit);
    }
    pthread_mutex_unlock(&live_mu);
    return w;
}

void tier_worker_push(TierWorker *w, int k)
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
    w->q[(w->qhead + w->qlen) % w->qcap] = k;
    w->qlen++;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

double tier_worker_busy(const TierWorker *w)
{
    pthread_mutex_lock((pthread_mutex_t *)&w->mu);
    double t = w->busy_s, now = rt_seconds();
    if (w->busy) /* the job in progress, so far */
        t += job_busy(w, now);
    pthread_mutex_unlock((pthread_mutex_t *)&w->mu);
    return t;
}

/* TOTAL (a field of W under mu) with the job in progress's stopped time. */
static double with_stopped_so_far(const TierWorker *w, const double *total)
{
    pthread_mutex_lock((pthread_mutex_t *)&w->mu);
    double t = *total;
    if (w->busy)
        t += job_stopped(w, rt_seconds());
    pthread_mutex_unlock((pthread_mutex_t *)&w->mu);
    return t;
}

double tier_worker_throttled(const TierWorker *w) { return with_stopped_so_far(w, &w->throttled); }

double tier_worker_stopped(const TierWorker *w) { return with_stopped_so_far(w, &w->stopped); }

int tier_worker_is_self(const TierWorker *w) { return w && pthread_equal(pthread_self(), w->th); }

int tier_worker_stopping(const TierWorker *w) { return w && atomic_load(&w->stop); }

const _Atomic int *tier_worker_stop_flag(const TierWorker *w) { return &w->stop; }

int tier_worker_drain(TierWorker *w, double seconds)
{
    if (!w || seconds <= 0)
        return 0;
    struct timespec ts = deadline_in(seconds);
    pthread_mutex_lock(&w->mu);
    w->draining = 1; /* the interpreter is done: the worker may use the time */
    pthread_cond_broadcast(&w->cv);
    int rc = 0;
    while ((w->qlen || w->busy) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&w->idle, &w->mu, &ts);
    int drained = !w->qlen && !w->busy;
    pthread_mutex_unlock(&w->mu);
    return drained;
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
    pthread_mutex_lock(&w->mu);
    int dropped = w->qlen;
    w->qlen = 0;
    atomic_store(&w->stop, 1);
    pthread_cond_broadcast(&w->cv);
    pthread_cond_broadcast(&w->pcv);
    pthread_mutex_unlock(&w->mu);
    jit_abandon();
    if (w->has_pacer) /* it only waits on pcv: it ends at once */
        pthread_join(w->pacer, NULL);
    if (!join_bounded(w, 2.0)) {
        /* Still translating: leave it, and what it reads, to the exit. */
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

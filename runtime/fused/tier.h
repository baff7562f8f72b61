/* runtime/fused/tier.h — tiered execution: every block starts in the reference
 * interpreter; a per-block profile decides when fused code will pay; the
 * block is then translated and compiled on a background thread (the tier
 * worker) while the program goes on, and switches over at its next entry.
 *
 * The profile counts, per block, its runs and its work: the elements of
 * its largest input times its vector instructions, over the runs whose
 * largest input has at least `min_len` elements (shorter runs are always
 * interpreted: a fused run has a fixed cost). A block is promoted when its
 * work reaches `work`. Once fused, the interpreted and the fused runs'
 * seconds per unit of work are compared; a block whose fused runs are the
 * slower goes back to the interpreter for good. Timing chooses only which
 * tier runs a block, never what code is generated. */
#ifndef RUNTIME_TIER_H
#define RUNTIME_TIER_H

#include <stdint.h>
#include <stdio.h>

typedef enum {
    TIER_BACKGROUND = 0, /* the default: promote, compile on the tier worker */
    TIER_SYNC,           /* promote by the same model, compile at once on the main thread */
    TIER_EAGER,          /* every block translated and compiled before the run (one unit) */
    TIER_OFF             /* never promote: every block interpreted */
} TierMode;

/* Tests on a busy machine ($VINTERP_TEST_TIER_END): what the end of a run
 * waits for before it stops the worker, so that what the worker has done
 * by then is decided by events, not by how fast the machine is. */
typedef enum {
    TIER_GATE_NONE = 0, /* nothing: the run ends when the program does */
    TIER_GATE_COMPILING, /* a compile of the worker's runs */
    TIER_GATE_STOPPED,  /* the pacer has stopped a compile for the share */
    TIER_GATE_DONE      /* the worker has done every job (no share, no bound) */
} TierGate;

/* Hot blocks still without code when the run ends (promoted but not
 * ready, or hot in their only run): compiled into the kernel cache after
 * the output, so that the program's next run uses them (tier_after.h). */
typedef enum {
    TIER_AFTER_DETACH = 0, /* in a process of their own; vinterp exits at once (cuda's default) */
    TIER_AFTER_WAIT,       /* the same process, before the exit (tests, scripts that want it done) */
    TIER_AFTER_OFF         /* not compiled (cpu's default: runtime/fused/tuning.h) */
} TierAfter;

typedef struct {
    TierMode mode;
    int64_t work;       /* promote at this much work (elements x vector instructions) */
    int64_t min_len;    /* runs with a shorter largest input are interpreted */
    int64_t delay_ms;   /* background: the worker starts inlining this long after the run starts */
    int64_t share_pct;  /* background: the worker's jobs take at most this % of the run's wall time */
    int64_t grace_ms;   /* background: at the end, the worker may finish its jobs for this long */
    int64_t budget_ms;  /* background, under a share: a block's compile waits for this much unused share */
    TierAfter after;    /* background: what becomes of the hot blocks without code at the end */
    const char *after_gate; /* tests: the compiles after the run wait until this file exists (NULL: none) */
    int idle;           /* background: the worker under SCHED_IDLE (1, the default) or at nice 10 (0) */
    int test_hold;      /* tests: a block's job, after its build, never returns (as if in NVRTC) */
    int test_refine_wait; /* tests: a promoted block's entries wait for its code, and (staged) its full code */
    int start_ready;    /* tests: the run starts once the worker has the inlined program (or gave up) */
    TierGate end_gate;  /* tests: what the end of the run waits for */
    FILE *trace;        /* -d tier: promotions, installs, demotions, the pacer's stops */
} TierOptions;

/* Parse "background|sync|eager|off" (and "on" = background). 0 or -1. */
int tier_parse_mode(const char *s, TierMode *m);
const char *tier_mode_name(TierMode m);

/* The defaults of a backend ("cpu", "cuda", "lcu"), then $VINTERP_TIER,
 * $VINTERP_TIER_WORK, $VINTERP_TIER_MIN_LEN, $VINTERP_TIER_DELAY_MS,
 * $VINTERP_TIER_SHARE, $VINTERP_TIER_GRACE_MS, $VINTERP_TIER_BUDGET_MS,
 * $VINTERP_TIER_IDLE and the test settings $VINTERP_TEST_TIER_START
 * (ready), $VINTERP_TEST_TIER_END (compiling, stopped, done) and
 * $VINTERP_TEST_TIER_HOLD (1), from the settings table
 * (runtime/core/settings.h, which rejects malformed ones at start-up). */
void tier_defaults(TierOptions *o, const char *backend);

/* The worker: one thread running JOB(ARG, k) for each block k pushed, in
 * order, the first no sooner than DELAY seconds after the start (sooner
 * when told to stop: then none). Its jobs together take at most SHARE of
 * the wall time since the start (0 < SHARE <= 1; 1: no limit): a job waits
 * until the busy time so far is within that share. A compiler on the
 * other core slows the interpreter (shared cache and memory bandwidth:
 * about 5% on the developers' machines), so the share bounds what
 * background work costs a run that never uses its results. A block's job
 * (K >= 0) also waits until BUDGET seconds of the share are unused (a run
 * too short for a compile to finish pays for none). */
typedef struct TierWorker TierWorker;
typedef void (*TierJob)(void *arg, int k);
/* The jobs K: a block (K >= 0), the program's preparation, or a block's
 * second stage (a staged compile's full code, queued by push_later). */
enum { TIER_JOB_PREPARE = -1 };
static inline int tier_job_second(int block) { return -2 - block; }
static inline int tier_job_second_block(int k) { return -2 - k; }

/* What happened in the worker, for a trace (-d tier) and for tests. K is
 * the job's block (-1: the program's preparation), or for TIER_EV_STOP the
 * number of queued jobs dropped. */
typedef enum {
    TIER_EV_WAIT_DELAY,     /* the worker waits for its start delay */
    TIER_EV_WAIT_SHARE,     /* job K waits for the share (and its budget) */
    TIER_EV_JOB_START,      /* job K starts */
    TIER_EV_JOB_END,        /* job K ended */
    TIER_EV_LOOK,           /* the pacer looked at the job in progress */
    TIER_EV_COMPILE_STOPPED, /* the pacer stopped job K's compiler for the share */
    TIER_EV_COMPILE_RESUMED, /* ... and let it go on */
    TIER_EV_DRAIN,          /* the end of the run: waiting for the K jobs left (tier_worker_drain) */
    TIER_EV_STOP            /* told to stop */
} TierEvent;

/* The worker's view of the world: its clock, the compiler it paces, and
 * whom it tells what happens. A NULL member is the real one: the monotonic
 * clock, the worker thread's CPU clock, runtime/jit's pacing of the
 * compiler in progress (jit_pace, jit_abandon, jit_compiling). EVENT's T
 * is the clock's reading the worker decided on. A test
 * (tests/unit/test_tier_worker.c) gives its own: a clock it steps (STEPPED:
 * then every timed wait waits for tier_worker_tick instead of the time),
 * a compiler it stops and resumes by hand, events it waits for. EVENT is
 * called with the worker's lock held: it must not call the worker. */
typedef struct {
    double (*now)(void *ctx);               /* seconds */
    double (*worker_cpu)(void *ctx);        /* the worker thread's CPU seconds */
    int (*pace)(void *ctx, int stop);       /* stop (1) or resume (0) the compile in progress; 1 when one runs */
    void (*abandon)(void *ctx);             /* kill the compile in progress and start none */
    int (*compiling)(void *ctx);            /* 1 while a compile runs */
    void (*event)(void *ctx, TierEvent ev, int k, double t);
    int stepped;
    void *ctx;
} TierHooks;

typedef struct {
    double delay;   /* seconds before the first job */
    double share;   /* 0 < share <= 1 */
    double budget;  /* seconds of unused share a block's job waits for */
    int idle;       /* the worker (and its compilers) under SCHED_IDLE, else nice 10 only */
    FILE *trace;    /* the pacer's stops and resumes (-d tier), or NULL */
    const TierHooks *hooks; /* NULL: the real clock and compiler */
} TierWorkerConfig;

/* The worker configuration of O (its delay only when WITH_DELAY). */
TierWorkerConfig tier_worker_config(const TierOptions *o, int with_delay);
TierWorker *tier_worker_start(TierJob job, void *arg, const TierWorkerConfig *cfg);
/* Seconds W's jobs have run, seconds jobs waited for the share, and of
 * those the seconds their compilers were stopped (the pacer). */
double tier_worker_busy(const TierWorker *w);
double tier_worker_throttled(const TierWorker *w);
double tier_worker_stopped(const TierWorker *w);
/* The three at one reading of the clock (the stopped time is part of the
 * throttled: read apart, the later could pass the earlier). */
void tier_worker_figures(const TierWorker *w, double *busy, double *throttled, double *stopped);
/* A stepped clock moved: timed waits look at it again. */
void tier_worker_tick(TierWorker *w);
void tier_worker_push(TierWorker *w, int k);
/* Queue K after every job, and after the jobs tier_worker_push queues
 * from now on (a staged block's full compile waits for the quick compiles
 * of blocks promoted since). */
void tier_worker_push_later(TierWorker *w, int k);
/* Drop what is queued, kill a compiler still running (jit_abandon), and
 * wait (bounded) for the job in progress; then free W. Also run at exit()
 * for a worker still alive. Returns the number of queued jobs dropped, or
 * -1 when the job in progress did not end in time: then the worker still
 * runs, and what its job reads must not be freed. */
int tier_worker_stop(TierWorker *w);
/* Wait up to SECONDS for W to finish what it has queued (the end of a
 * run: what the worker completes now the next run finds in the cache).
 * 1 when it did. */
int tier_worker_drain(TierWorker *w, double seconds);
/* Wait until W reaches GATE (a compile runs, a compile was stopped by
 * the pacer, or every job done: then the share no longer holds, as in
 * tier_worker_drain), for at most LIMIT seconds. 1 when it did; 0 when W
 * has no job left and GATE did not happen; -1 when the time ran out. */
int tier_worker_wait(TierWorker *w, TierGate gate, double limit);
/* Exit safety. A worker that did not stop in time (tier_worker_stop
 * returned -1: its job inside a compiler library that cannot be
 * interrupted, NVRTC) may still use what exit() tears down (the library's
 * static state, the CUDA driver). 1 when there is such a worker: then the
 * process must end with _exit after flushing its streams. At exit()
 * (tier.c's handler) and at rt_exit_status(0) (its exit guard) the live
 * workers are stopped first, and the process ends so when one does not. */
int tier_workers_stuck(void);
/* Tests ($VINTERP_TEST_TIER_HOLD): the calling job goes on forever, as one
 * inside NVRTC, which cannot be interrupted; it counts as a compile in
 * progress (TIER_GATE_COMPILING), whether or not it compiled anything.
 * Like a library that the job loaded, it registers a teardown at exit
 * that crashes: the run must end without exit()'s teardown
 * (tier_workers_stuck). */
void tier_test_hold_forever(void);
/* 1 when called on W's thread. */
int tier_worker_is_self(const TierWorker *w);
/* Abandon: set by tier_worker_stop; jobs poll it between phases. */
int tier_worker_stopping(const TierWorker *w);
/* The flag itself, for long loops elsewhere to poll (InlineOptions.cancel,
 * Program.cancel). */
const _Atomic int *tier_worker_stop_flag(const TierWorker *w);

#endif

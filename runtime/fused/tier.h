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

typedef struct {
    TierMode mode;
    int64_t work;       /* promote at this much work (elements x vector instructions) */
    int64_t min_len;    /* runs with a shorter largest input are interpreted */
    int64_t delay_ms;   /* background: the worker starts inlining this long after the run starts */
    int64_t share_pct;  /* background: the worker's jobs take at most this % of the run's wall time */
    int64_t grace_ms;   /* background: at the end, the worker may finish its jobs for this long */
    int64_t budget_ms;  /* background, under a share: a block's compile waits for this much unused share */
    FILE *trace;        /* -d tier: promotions, installs, demotions */
} TierOptions;

/* Parse "background|sync|eager|off" (and "on" = background). 0 or -1. */
int tier_parse_mode(const char *s, TierMode *m);
const char *tier_mode_name(TierMode m);

/* The defaults of a backend ("cpu", "cuda", "lcu"), then $VINTERP_TIER,
 * $VINTERP_TIER_WORK, $VINTERP_TIER_MIN_LEN and $VINTERP_TIER_DELAY_MS. Returns -1 with a message
 * on stderr when one of them is malformed. */
int tier_defaults(TierOptions *o, const char *backend);

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
TierWorker *tier_worker_start(TierJob job, void *arg, double delay, double share, double budget);
/* Seconds W's jobs have run, seconds jobs waited for the share, and of
 * those the seconds their compilers were stopped (the pacer). */
double tier_worker_busy(const TierWorker *w);
double tier_worker_throttled(const TierWorker *w);
double tier_worker_stopped(const TierWorker *w);
void tier_worker_push(TierWorker *w, int k);
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
/* 1 when called on W's thread. */
int tier_worker_is_self(const TierWorker *w);
/* Abandon: set by tier_worker_stop; jobs poll it between phases. */
int tier_worker_stopping(const TierWorker *w);
/* The flag itself, for long loops elsewhere to poll (InlineOptions.cancel,
 * Program.cancel). */
const _Atomic int *tier_worker_stop_flag(const TierWorker *w);

#endif

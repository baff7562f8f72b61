/* runtime/fused/backend_impl.h — the block-plan driver's state, shared by
 * its files and no one else: backend.c (building the backend, running a
 * block's plan, host steps, error replay), backend_tier.c (the tiers'
 * policy: profile, promote, install, judge), backend_check.c (--check
 * against the reference), backend_report.c (-d stats, --profile). */
#ifndef RUNTIME_FUSED_BACKEND_IMPL_H
#define RUNTIME_FUSED_BACKEND_IMPL_H

#include "runtime/fused/backend.h"
#include "runtime/fused/check_bound.h"
#include "runtime/fused/replace_step.h"
#include "runtime/fused/tier_hot.h"
#include "runtime/fused/tier_verdict.h"
#include "runtime/core/rand.h"
#include "translate/plan.h"

#include <stdatomic.h>
#include <stdio.h>

/* Block states. Tiered: PROFILE -> QUEUED (the worker translates and
 * builds) -> READY (the main thread loads it at the next entry) -> FUSED,
 * or INTERP for good (not plannable, failed, demoted). Untiered:
 * PROFILE means "not translated yet". */
enum { BS_PROFILE = 0, BS_FUSED = 1, BS_INTERP = 2, BS_QUEUED = 3, BS_READY = 4, BS_FAILED = 5 };

typedef struct {
    atomic_int state;   /* BS_*; the worker writes QUEUED -> READY|FAILED */
    int planned;        /* plan holds a plan (to free) */
    BlockPlan plan;
    int64_t runs, fallbacks;
    int64_t *launches;  /* --profile: per plan step */
    double *seconds;
    /* the tier profile (main thread) */
    int nin;            /* stack inputs; -1 not known yet */
    int demoted;
    int remembered;     /* hot in its only run so far: kept for the next run (tier_first_run) */
    int abandoned;      /* its compile was stopped by the end of the run (tier_job) */
    int warm;           /* its unit in the cache by earlier runs (tier_warm): -1 not looked up yet */
    int64_t entries, big_runs, work, elements;
    int64_t interp_work, fused_work, fused_timed, short_runs, interp_timed;
    int64_t lazy_runs;          /* runs interpreted for a lazy fill among the inputs */
    double interp_secs, fused_secs;
    /* the first timed interpreted run's (its page faults on fresh vectors
     * are not what the block costs in later runs: tier_after_compile
     * leaves it out of the speeds it keeps) */
    double interp_first_secs;
    int64_t interp_first_work;
    /* after the install: every 8th run is interpreted, timed (late_*) */
    int64_t since_install, late_n, late_work;
    double late_secs;
    TierSpeeds prior;   /* earlier runs' (tier_verdict.h) */
    char *vpath;        /* where they are kept; NULL: nowhere */
    /* The first fused run of this program run (not counted by tier_judge),
     * counted at the end when it was the only one: a block that runs once
     * a program run is judged across runs. sample_first: earlier runs have
     * fused samples of it but too few interpreted ones, so its first run
     * after the install is interpreted, timed. */
    double first_secs;
    int64_t first_work;
    int sample_first;
    int64_t promoted_entry;     /* entries when promoted */
    double promoted_t, ready_t, installed_t;  /* seconds since the start; < 0: never */
    /* the worker's figures (read after READY/FAILED) */
    double translate_s, compile_s;
    int compiled, hits;
    char why[160];      /* why it failed */
    /* Staged (Executor.staged): QUICK while its code is the quick compile;
     * its full compile on the worker, queued at the install (RF_*) and
     * swapped in at the block's next entry once ready. */
    int quick;          /* written by the job before READY, then the main thread's */
    atomic_int refine;
    double refine_s, refined_t;     /* the full compile's seconds; when it was swapped in (< 0: never) */
} BlockEntry;

enum { RF_NONE = 0, RF_QUEUED, RF_RUNNING, RF_READY, RF_FAILED, RF_DONE };

struct Backend {
    const Program *prog;
    BackendOptions opt;
    Executor *x;
    int nblocks;
    Block *blocks;
    BlockEntry *entries;
    int *block_at;
    Value **env;        /* scratch, sized for the largest plan */
    int64_t *classval;
    int envcap, classcap;
    int profiling;
    /* totals */
    int64_t launches, host_steps, checked;
    /* --check: block outputs compared bit for bit, within a bound, not
     * compared (unverifiable), and elements of compared outputs that were
     * free to differ (check_bound.h) */
    int64_t check_exact, check_bounded, check_unverifiable, check_free;
    CbPerturb perturb;  /* opt.perturb under --check, else none */
    /* the block now running, for rt_set_replay */
    Interp *rp_it;
    int64_t rp_used;
    int rp_nin;
    int rp_start, rp_end;
    RandState rp_rand;
    UndoLog undo;       /* in-place REPLACEs of the block now running */
    /* tiers */
    int tiered;         /* blocks promoted one by one (cpu, cuda unless --tier=eager) */
    TierWorker *worker;
    BlockPlan **bg_plans, **fg_plans;   /* one-block plan lists: the worker's, the main thread's */
    double t_start;
    int64_t promotions, installs, demotions, failures, abandoned;
    int64_t quick_installs, refines, refines_failed;    /* staged: quick code installed, replaced by the full */
    int64_t probe_hits, probe_misses; /* main-thread cache probes at promotion */
    uint64_t program_id;                /* tier_program_id: the speeds kept per program */
    HotSet hot_prior, hot_new; /* blocks hot in earlier runs, in this one (tier_hot.h) */
    char *hot_path;     /* NULL: no cache to keep them in */
    HotSet slow_prior, slow_new; /* blocks found slower fused in earlier runs, in this one */
    char *slow_path;    /* NULL: no cache to keep them in */
    HotSet warm_prior, warm_new, warm_gone; /* blocks with units in the cache: earlier runs, this one, found not */
    char *warm_path;    /* NULL: no cache to keep them in */
    int64_t slow_skipped;   /* promotions left interpreted untranslated: slow_prior */
    int worker_stuck;   /* the worker did not stop in time */
    int shared_worker;  /* the worker is tier_prep's: it stops it */
    double interp_secs, tr_secs;        /* timed interpreted runs; translations on the main thread */
    int64_t interp_work, tr_instrs;
    int64_t replace_inplace, replace_copied;
    int64_t donated, written_in_place;  /* results offered an argument's storage, and those that took it */
    int input_overwritten;              /* this block run wrote a result over an input's storage */
    /* the block run's input descriptors without their offsets cached at
     * its start (value.h seg_offsets, charged against -m while cached) */
    Value **offs_new;
    int noffs_new, offs_cap;
    int64_t mem_reruns, mem_kept;       /* block runs past -m at their peak: rerun on the reference; kept */
    /* of mem_reruns, runs within -m whose reference run might not have
     * been (ref_charge_bound); units of the dead inputs bind_inputs let
     * go, which the reference holds until the block pops them */
    int64_t mem_bound_reruns, rp_dead_units;
    int *dead_j;                        /* those inputs' depths on the stack */
    int ndead_j, dead_cap;
    /* block runs whose kernels' failures are read with a later wait (the
     * executor's defer_errors); runs that read theirs at the end for want
     * of room under DEFER_HOLD_BYTES */
    int64_t deferred_runs, deferred_refused;
    double kernel_seconds, host_seconds;
};


/* backend.c */
int plan_block(Backend *b, int k);
void translate_block(Backend *b, int k);
/* backend_tier.c: the tiers' side of backend_run_block. tier_entry
 * returns -2 when the block runs fused now, else what backend_run_block
 * returns. */
int tier_entry(Backend *b, Interp *it, int k, int st);
void tier_judge(Backend *b, int k, int64_t w, double dt);
void tier_save_speeds(Backend *b);
/* The hot blocks without their code at the end of the run (tier_after.h):
 * how many, and (in the child) their units compiled into the cache and
 * the blocks added to the warm set. */
int64_t tier_after_count(const Backend *b);
void tier_after_compile(void *backend);
void tier_job(void *arg, int k);
/* Staged: block K runs its quick code; its full code, when the worker has
 * it, replaces it now (between block runs, on the main thread). */
void tier_refine_check(Backend *b, int k);
/* The largest element count among a block's NIN inputs on the stack;
 * whether one of them is a lazy fill that the block should not take fused
 * (see backend_tier.c). */
int64_t largest_input(const Interp *it, int nin);
int lazy_input(const Backend *b, const Interp *it, int nin);
/* backend_check.c: --check of block K's run (its inputs INS, the RAND
 * state before it) against the reference. */
void check_block(Backend *b, Interp *it, int k, Value **ins, const RandState *rand_before);
/* backend_report.c */
int plan_readable(const Backend *b, const BlockEntry *e);

#endif

/* runtime/fused/executor.h — what runs the kernels of block plans. The backend
 * (runtime/fused/backend.c) owns translation, host steps, shape checks and
 * --check; an executor only runs kernel steps.
 *
 *   lcu   the λcu reference evaluator (runtime/fused/exec_lcu.c)
 *   cpu   generated C, compiled and cached (runtime/fused/exec_cpu.c)
 *   cuda  generated CUDA, NVRTC, the GPU (runtime/fused/exec_cuda.c)
 */
#ifndef RUNTIME_EXECUTOR_H
#define RUNTIME_EXECUTOR_H

#include <stdio.h>
#include "runtime/jit/jit.h"
#include "runtime/core/value.h"
#include "translate/plan.h"

typedef struct Executor Executor;

/* A fused block run whose kernels' failures are read later (defer_errors):
 * what reports them as the reference would. REPLAY runs the block on the
 * reference from the inputs it holds (fatal there, or it returns: the
 * reference found nothing); DROP gives back what it holds. The backend
 * makes it; the executor keeps it until the record is read. */
typedef struct ErrReplay ErrReplay;
struct ErrReplay {
    void (*replay)(ErrReplay *r);
    void (*drop)(ErrReplay *r);
    const Program *prog;    /* where a failure is reported when the replay finds none */
    const Instr *where;
};

struct Executor {
    const char *name;
    /* 1: wants every block's plan before the run (one compilation). */
    int eager;
    /* --check: how many ulps its libm functions (exp, log, sin, ...) may
     * differ from the host's, whose the reference calls (0: it calls the
     * host's too; check_bound.h, rule 3). */
    int libm_ulps;
    /* 1: its kernels take lazy fills (runtime/core/value.h) as they are
     * (the cuda executor fills their device copies on the device); 0: the
     * backend writes them out before a block's kernels run, and the tiers
     * leave a block with such an input to the interpreter. */
    int takes_lazy;
    /* Set by the backend: 1 when it never offers donated storage (under
     * --check, which reruns blocks from their inputs), so that an executor
     * preparing steps ahead need not expect offers (exec_cuda.c
     * speculate_donation). */
    int no_donations;
    /* Set by the backend: 1 when the run reports its kernels' time (-d
     * stats, --profile). Otherwise an executor need not time them: the
     * cuda executor then records no events around its launches (each a
     * driver call). */
    int time_kernels;
    /* 1: a tiered block's code may come in two stages (the cuda executor
     * on a GPU: NVRTC's quick compile, then the full one): build with
     * JitBuildStats.fast and prepare with FAST give the quick code, and
     * refine replaces it by the full code once build (without fast) has
     * put that in the cache. 0: fast is ignored, refine is NULL. */
    int staged;
    /* Generate, compile (or find in the cache) and load the code of the
     * blocks whose PLANS[k] is not NULL, as one unit. Eager: once, with
     * every planned block; tiered: once per promoted block (a block is
     * prepared at most once). NULL: nothing to compile (lcu). Returns 0,
     * or -1 with MSG. */
    int (*prepare)(Executor *x, const Program *p, int nblocks, BlockPlan *const *plans, int fast, char *msg,
                   size_t msglen);
    /* Staged: the block of PLANS (prepared with its quick code) gets its
     * full code from the cache, on the main thread between block runs. 0,
     * or -1 with MSG (the quick code stays). */
    int (*refine)(Executor *x, int nblocks, BlockPlan *const *plans, char *msg, size_t msglen);
    /* Tiered: compile what prepare of the same PLANS will load into the
     * kernel cache, without loading (so prepare finds it). Runs on the
     * tier thread beside run_kernel: it reads only the executor's
     * options. NULL: nothing to build. 0, or -1 with MSG; with ST->probe
     * nothing is compiled, and 1 says that something is not cached. */
    int (*build)(Executor *x, int nblocks, BlockPlan *const *plans, JitBuildStats *st, char *msg, size_t msglen);
    /* Run kernel step STEP of block BLOCK's plan over ENV (as
     * lcu_eval_kernel does: params bound, results stored, internal
     * variables released). */
    void (*run_kernel)(Executor *x, int block, const BlockPlan *bp, int step, Value **env);
    /* A host step on metadata (OP_MAKE_SEGDES of ARG's lengths, OP_LENGTHS
     * of descriptor ARG) done where ARG lives: the result (a new
     * reference), or NULL for the host's way (val_for_host, then the
     * reference's code). NULL: always the host's. */
    Value *(*meta_step)(Executor *x, int op, Value *arg);
    /* Report the failures of the kernels run so far (the cuda executor
     * reads its error record here rather than after every kernel): called
     * before a step that may change the block's inputs in place (a
     * REPLACE host step, a kernel given an input's storage, before and
     * after it runs), before any read back, and
     * after the block's last step, so that a failure is replayed from
     * intact inputs. NULL:
     * run_kernel reports them itself. */
    void (*check_errors)(Executor *x);
    /* Instead of check_errors at the block run's end: leave the failures
     * of its kernels (since the last check) on the device, to be read
     * with the host's next wait, in program order with the other checks
     * left there, and replayed by R. Returns 1 when taken (R is then the
     * executor's until drain_deferred drops it), 0 when not (the caller
     * checks now and drops R). NULL: never. */
    int (*defer_errors)(Executor *x, ErrReplay *r);
    /* A host step of the running block run has run (its results may be
     * bound in the next steps' tables). NULL: nothing to note. */
    void (*host_step_ran)(Executor *x);
    /* Drop the replays whose records were read and found clean (between
     * block runs, on the main thread: dropping may free vectors). */
    void (*drain_deferred)(Executor *x);
    /* A run of block BLOCK's plan BP over ENV begins (its inputs bound,
     * before its first step) or ends (after its last step and the final
     * check_errors). The cuda executor lays out the variable tables of
     * the run's kernel steps in one image here, to upload them together.
     * NULL: nothing to do. A run cut short (a kernel's failure replayed)
     * may miss its end: the next begin starts afresh. */
    void (*block_begin)(Executor *x, int block, const BlockPlan *bp, Value **env);
    void (*block_end)(Executor *x);
    /* Before a block run binds its inputs (the stack's values): the
     * values the executor left unwritten for later (the cuda device
     * tier's pending chains) written now. NULL: nothing to do. */
    void (*flush)(Executor *x);
    /* Where the code of a kernel lives (a file and function), for --check
     * reports; NULL when nothing was generated. */
    const char *(*where)(Executor *x, int block, int step, char *buf, size_t len);
    /* The cached source file of block BLOCK's unit (tiered: the unit of
     * that block alone), in BUF; NULL when it has none (not loaded, not
     * cached, or an executor without units). The tiers keep the block's
     * measured speeds beside it (runtime/fused/tier_verdict.h). */
    const char *(*unit_file)(Executor *x, int block, char *buf, size_t len);
    /* -d stats lines of its own. */
    void (*report)(Executor *x, FILE *f);
    /* For -d stats' summary: the seconds its prepare calls spent compiling
     * and loading code, and (a device) moving data: allocations, copies,
     * reads back. NULL: none of either. */
    void (*times)(Executor *x, double *compile_s, double *transfer_s);
    void (*free)(Executor *x);
};

Executor *exec_lcu_new(void);

#endif

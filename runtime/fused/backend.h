/* runtime/fused/backend.h — fused backends: the interpreter hands each basic
 * block with vector instructions to the backend, which translates it
 * (lowering, fusion) once and runs its plan: host steps here, kernels by an
 * executor.
 *
 * Backends: ref (no backend object: every instruction interpreted), lcu
 * (kernels run by the λcu reference evaluator), cpu (kernels compiled to C
 * by the system compiler, runtime/fused/exec_cpu.c) and cuda (kernels compiled
 * with NVRTC and run on the GPU, runtime/fused/exec_cuda.c). */
#ifndef RUNTIME_BACKEND_H
#define RUNTIME_BACKEND_H

#include <stdio.h>
#include "runtime/fused/check_bound.h"
#include "runtime/fused/executor.h"
#include "runtime/interp/interp.h"
#include "runtime/fused/tier.h"

typedef struct Backend Backend;

typedef struct {
    int fusion;         /* --fusion=on|off */
    FILE *trace;        /* -d fusion */
    int stats;          /* -d stats: summary at exit */
    int check;          /* --check: the reference runs beside, block by block */
    int float_reassoc;  /* --float-reassoc: chunked float reductions (plans) */
    double check_rel;   /* --check-rel: a relative allowance beyond the error bounds (default 0) */
    CbPerturb perturb;  /* under --check, $VINTERP_CHECK_PERTURB: a wrong kernel, for tests */
    int profiling;      /* --profile: per kernel figures */
    TierOptions tier;   /* --tier and its thresholds (cpu, cuda; lcu translates every block it meets) */
    const char *cache_dir; /* the kernel cache, where the tiers keep hot blocks (tier_hot.h); NULL: none */
} BackendOptions;

/* A backend for program P (already inlined and checked) whose kernels run
 * with executor X (the backend owns it). Under --tier=eager an eager
 * executor gets every block's plan before the run; when its prepare
 * fails, backend_new returns NULL with the reason in MSG (and X is freed).
 * Otherwise blocks are promoted one by one (runtime/fused/tier.h). */
Backend *backend_new(const Program *p, const BackendOptions *o, Executor *x, char *msg, size_t msglen);
/* Block starts: block_at[pc] is a block index or -1. */
const int *backend_block_map(const Backend *b);
/* Run the block starting at PC. Returns the pc after it, or -1 when the
 * interpreter should run the block's instructions itself. */
int backend_run_block(Backend *b, Interp *it, int pc);
/* The same as an InterpBlockFn (Interp.run_block), CTX the backend. */
int backend_block_hook(void *ctx, Interp *it, int pc);
/* Tiers: B's promoted blocks go to W, which another owns (tier_prep.c):
 * it runs backend_tier_job for them, and says when it has stopped. */
void backend_use_worker(Backend *b, TierWorker *w);
void backend_tier_job(Backend *b, int k);
void backend_worker_stopped(Backend *b, int dropped);
/* The run is over: stop the tier worker (queued blocks dropped, a
 * compile in progress abandoned, a bounded wait). */
void backend_end_run(Backend *b);
/* -d stats summary. */
void backend_report(const Backend *b, FILE *f);
/* The figures of -d stats' summary (seconds): fused code (kernels and host
 * steps), translation, compiles and loads (the tiers' worker's and the
 * executor's), data moved to and from a device. */
typedef struct {
    double fused_s, translate_s, compile_s, transfer_s;
} BackendTimes;
void backend_times(const Backend *b, BackendTimes *t);
/* --profile: per fused kernel, launches and time (JSON when JSON). */
void backend_profile_on(Backend *b);
void backend_profile_report(const Backend *b, FILE *f, int json);
void backend_free(Backend *b);

#endif

/* runtime/backend.h — fused backends: the interpreter hands each basic
 * block with vector instructions to the backend, which translates it once
 * (lowering, fusion) on first execution and runs its plan.
 *
 * Backends: ref (no backend object: every instruction interpreted) and
 * lcu (plans run by the λcu reference evaluator). */
#ifndef RUNTIME_BACKEND_H
#define RUNTIME_BACKEND_H

#include <stdio.h>
#include "runtime/interp.h"

typedef struct Backend Backend;

typedef struct {
    int fusion;         /* --fusion=on|off */
    FILE *trace;        /* -d fusion */
    int stats;          /* -d stats: summary at exit */
    double ilp_timeout; /* seconds */
} BackendOptions;

/* A backend for program P (already inlined and checked). */
Backend *backend_lcu_new(const Program *p, const BackendOptions *o);
/* Block starts: block_at[pc] is a block index or -1. */
const int *backend_block_map(const Backend *b);
/* Run the block starting at PC. Returns the pc after it, or -1 when the
 * interpreter should run the block's instructions itself. */
int backend_run_block(Backend *b, Interp *it, int pc);
/* -d stats summary. */
void backend_report(const Backend *b, FILE *f);
/* --profile: per fused kernel, launches and time (JSON when JSON). Kernel
 * times are measured only when profiling was asked for (backend_profile_on). */
void backend_profile_on(Backend *b);
void backend_profile_report(const Backend *b, FILE *f, int json);
void backend_free(Backend *b);

#endif

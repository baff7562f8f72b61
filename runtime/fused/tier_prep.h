/* runtime/fused/tier_prep.h — the start of a tiered run. The interpreter starts
 * at once on the program as written; the tier worker meanwhile inlines it,
 * checks the result and makes the fused backend over it, then hands the
 * interpreter the switch (InterpSwitch): at its next CALL or RET the
 * interpreter goes on in the inlined program, where blocks can be
 * promoted. A program that ends first never waits for any of it. */
#ifndef RUNTIME_TIER_PREP_H
#define RUNTIME_TIER_PREP_H

#include <stdio.h>
#include "runtime/fused/backend.h"
#include "runtime/interp/interp.h"

typedef struct TierPrep TierPrep;

/* Start the worker on SRC (checked, linked) for IT, which must not run
 * yet; O and X as for backend_new (X is owned from here on). NULL when no
 * thread can be started (X freed: the caller goes on without tiers). */
TierPrep *tier_prep_start(const Program *src, const BackendOptions *o, Executor *x, Interp *it);
/* Tests ($VINTERP_TEST_TIER_START=ready): wait until the worker has the
 * switch ready or has given up, before the run starts. Nothing otherwise. */
void tier_prep_wait_ready(TierPrep *tp);
/* The run is over: wait for the test's gate ($VINTERP_TEST_TIER_END), give
 * the worker up to GRACE seconds to finish the compiles it has queued
 * (they warm the cache for the next run), then stop it (what is left is
 * abandoned). */
void tier_prep_end(TierPrep *tp, double grace);
/* -d stats: inlining and when the switch came, then the backend's report. */
void tier_prep_report(TierPrep *tp, FILE *f);
/* -d stats' summary figures (backend_times) of the backend the worker
 * made, and its own busy time in *WORKER_S; -1 when there is none to read
 * (not made, or the worker still running). */
int tier_prep_times(TierPrep *tp, BackendTimes *t, double *worker_s);
/* --profile's kernel table, when the backend ran. */
void tier_prep_profile_report(TierPrep *tp, FILE *f, int json);
void tier_prep_free(TierPrep *tp);

#endif

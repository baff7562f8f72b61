/* runtime/core/par.h — an elementwise loop over a long vector split between the
 * calling thread and a few helper threads.
 *
 * For the reference's operations whose element i depends on element i of
 * their arguments only and that cannot fail (float arithmetic, compares,
 * the math functions, selects): the result is the same whatever the
 * split, so results stay bit-identical. Helpers are started on first use
 * and wait, blocked, between loops. */
#ifndef RUNTIME_PAR_H
#define RUNTIME_PAR_H

#include "runtime/core/tuning.h"

#include <stdint.h>

/* FN(ARG, LO, HI) does elements [LO, HI). */
typedef void (*ParFn)(void *arg, int64_t lo, int64_t hi);

/* Run FN over [0, N): split into contiguous ranges (multiples of 64
 * elements) when N is at least MIN_SPLIT and more than one thread is
 * allowed, else FN(ARG, 0, N) on the calling thread. Returns when every
 * range is done. $VINTERP_PAR_MIN, when set, replaces every MIN_SPLIT that
 * is not INT64_MAX (tests: split the short vectors of the golden programs
 * and the corpus). */
void par_for(int64_t n, int64_t min_split, ParFn fn, void *arg);

/* PAR_MIN_CHEAP, PAR_MIN_MATH: runtime/core/tuning.h. */

/* Threads par_for may use, the caller included: $VINTERP_THREADS when set
 * (1: never split), else the CPUs online, at most 8. */
int par_threads(void);

#endif

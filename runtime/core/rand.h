/* runtime/core/rand.h — the C library random() stream (glibc TYPE_3 additive
 * feedback generator), implemented here so that RAND gives the same numbers
 * on every platform (vcode/SPEC.md §4.14).
 *
 * With r[0..30] from the seed, r[31..33] = r[0..2] and
 * r[i] = r[i-31] + r[i-3] (mod 2^32) for i >= 34, output k is
 * r[k + 344] >> 1. */
#ifndef RUNTIME_RAND_H
#define RUNTIME_RAND_H

#include <stdint.h>

#include "vcode/semantics.h"

typedef struct {
    uint32_t ring[31];  /* r[k-31 .. k-1], r[j] at ring[j % 31] */
    uint64_t k;         /* index of the next r[] to compute */
} RandState;

/* srandom(seed): seed 0 is taken as 1. */
void rnd_seed(RandState *st, uint32_t seed);
/* random(): the next value, in [0, 2^31). */
static inline int32_t rnd_next(RandState *st) { return vs_random_next(st->ring, &st->k); }
/* Fill OUT[0..n) with the next N values, faster than N calls. */
void rnd_fill(RandState *st, int32_t *out, int64_t n);

/* The process-wide stream used by RAND and SRAND (seeded with 0 at start). */
RandState *rnd_global(void);

#endif

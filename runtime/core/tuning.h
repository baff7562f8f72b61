/* runtime/core/tuning.h — the tuning constants of the core layer, each
 * with what set it. Results never depend on them (only where work runs);
 * the tests move them through the settings where one exists. */
#ifndef RUNTIME_CORE_TUNING_H
#define RUNTIME_CORE_TUNING_H

#include <stdint.h>

/* par_for: loops of cheap operations (an add, a compare: memory-bound) are
 * split between threads from PAR_MIN_CHEAP elements, of the math functions
 * from PAR_MIN_MATH (a libm call costs some 20-50 ns, an add under 1 ns:
 * the split pays 30-100x sooner). Set by hand on the 2-core machine; not
 * measured elsewhere. $VINTERP_PAR_MIN replaces both (tests). */
#define PAR_MIN_CHEAP (INT64_C(1) << 18)
#define PAR_MIN_MATH (INT64_C(1) << 14)

/* par_for's threads, the caller included, at most ($VINTERP_THREADS):
 * memory-bound loops stop gaining well before 8 cores. Not measured on
 * more than 2. */
#define PAR_MAX_THREADS 8

/* A one-segment DIST of at least VAL_LAZY_MIN elements is a lazy fill
 * (value.h): below it the fill costs less than the bookkeeping.
 * $VINTERP_LAZY_MIN (tests: 1). */
#define VAL_LAZY_MIN 1024

#endif

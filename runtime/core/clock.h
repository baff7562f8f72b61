/* runtime/core/clock.h — seconds on the monotonic clock: the figures of
 * -d stats and --profile, the tiers' timing and pacing, --progress. (The
 * program's own timers read the wall clock: vcode/SPEC.md §4.13.) */
#ifndef RUNTIME_CORE_CLOCK_H
#define RUNTIME_CORE_CLOCK_H

#include <time.h>

static inline double rt_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif

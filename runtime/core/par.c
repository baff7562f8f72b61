/* runtime/core/par.c — par_for: one loop split between the calling thread and
 * helper threads that wait, blocked on a condition variable, in between. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/core/par.h"
#include "runtime/core/settings.h"
#include "runtime/core/tuning.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>


static int nthreads;            /* 0: not decided yet */
static int nhelpers;            /* helpers running */
static pthread_t helpers[PAR_MAX_THREADS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;

/* The loop in progress: part k (1 .. nhelpers) of [0, job_n) is helper k's. */
static uint64_t generation;
static ParFn job_fn;
static void *job_arg;
static int64_t job_bounds[PAR_MAX_THREADS + 1];
static int pending;

static int64_t min_override = -1; /* $VINTERP_PAR_MIN, -1: none */

int par_threads(void)
{
    if (nthreads == 0) {
        int64_t t = settings_count(SET_THREADS, sysconf(_SC_NPROCESSORS_ONLN));
        nthreads = t < 1 ? 1 : t > PAR_MAX_THREADS ? PAR_MAX_THREADS : (int)t;
        min_override = settings_count(SET_PAR_MIN, -1);
    }
    return nthreads;
}

static void *helper(void *p)
{
    int k = (int)(intptr_t)p;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are the main thread's */
    uint64_t seen = 0;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (generation == seen)
            pthread_cond_wait(&go, &mu);
        seen = generation;
        ParFn fn = job_fn;
        void *arg = job_arg;
        int64_t lo = job_bounds[k], hi = job_bounds[k + 1];
        pthread_mutex_unlock(&mu);
        if (lo < hi)
            fn(arg, lo, hi);
        pthread_mutex_lock(&mu);
        if (--pending == 0)
            pthread_cond_signal(&done);
    }
    return NULL;
}

/* Start the helpers (once, on the first split loop). */
static int start_helpers(void)
{
    static int tried;
    if (!tried) {
        tried = 1;
        for (int k = 1; k < par_threads(); k++) {
            if (pthread_create(&helpers[k], NULL, helper, (void *)(intptr_t)k) != 0)
                break;
            nhelpers = k;
        }
    }
    return nhelpers;
}

void par_for(int64_t n, int64_t min_split, ParFn fn, void *arg)
{
    if (par_threads() >= 2 && min_override >= 0 && min_split != INT64_MAX)
        min_split = min_override;
    if (n < min_split || n < 2 || par_threads() < 2 || start_helpers() < 1) {
        fn(arg, 0, n);
        return;
    }
    int parts = nhelpers + 1;
    /* contiguous ranges of whole 64-element blocks, so that no two threads
     * write one cache line (short vectors, split only under
     * $VINTERP_PAR_MIN, element by element) */
    int64_t align = n >= 4096 ? 64 : 1;
    int64_t per = ((n + parts - 1) / parts + align - 1) / align * align;
    pthread_mutex_lock(&mu);
    for (int k = 0; k <= parts; k++) {
        int64_t b = (int64_t)k * per;
        job_bounds[k] = b < n ? b : n;
    }
    job_fn = fn;
    job_arg = arg;
    pending = nhelpers;
    generation++;
    pthread_cond_broadcast(&go);
    pthread_mutex_unlock(&mu);
    fn(arg, job_bounds[0], job_bounds[1]);
    pthread_mutex_lock(&mu);
    while (pending > 0)
        pthread_cond_wait(&done, &mu);
    pthread_mutex_unlock(&mu);
}

/* runtime/device/emul_grid.c — a kernel's grid run on the host, threads as
 * fibers at barriers, in order or shuffled, with ThreadSanitizer's fibers
 * in a race-detecting build (see emul_grid.h). */
#include "runtime/device/emul_grid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define RACES 1
/* The emulator's own bookkeeping is shared by the scheduler and the
 * fibers, which ThreadSanitizer is told are unordered: not watched. */
#define NO_TSAN __attribute__((no_sanitize_thread, noinline))
#define NOSYNC __tsan_switch_to_fiber_no_sync
#else
#define RACES 0
#define NO_TSAN
#endif

enum { F_READY, F_BAR, F_DONE };
#define FIBER_STACK (256 * 1024) /* ThreadSanitizer reports from a fiber, on its stack */
#define SHM_BYTES (EMU_SHMEM_SLOTS * EMU_SHMEM_SLOT)
/* Race builds: consecutive blocks run on two pools of fibers (with their
 * own stacks and shared memory), each made once: a block's threads and the
 * next block's are unordered, so races between blocks show; a pool's
 * threads are ordered after its previous block (their stacks and shared
 * memory are theirs again), which hides races between blocks two apart. */
#define POOLS (RACES ? 2 : 1)

static struct {
    ucontext_t sched;
    ucontext_t *uc;
    char *stacks;       /* POOLS * n fiber stacks */
    int *state;
    unsigned *order;    /* the order the threads of a block run in */
    unsigned n;
    unsigned cur;
    unsigned pool;      /* the running block's */
    unsigned gen;       /* its pool's blocks before it (this launch) */
    EmuThread thread;
    void *arg;
    int misuse;         /* __syncthreads in a launch made without SYNC */
    unsigned char *shm; /* the running block's shared memory */
#if RACES
    void **tf;          /* POOLS * n ThreadSanitizer fibers */
    void *sched_fiber;
    unsigned *epoch;    /* the barriers each thread has passed */
#endif
} fb;

static unsigned char shm_pool[POOLS][SHM_BYTES];
#if RACES
/* sync addresses: the launch before its threads, the threads before the
 * host, a pool's block before its next, a block's barriers */
static char tok_start, tok_end, tok_pool[POOLS][2], tok_bar[POOLS][2];
#endif

int emu_grid_races(void) { return RACES; }

#if RACES
/* ThreadSanitizer calls this after printing each report: a launch during
 * which the count moves has failed. */
static volatile int reports;
void __tsan_on_report(const void *rep);
NO_TSAN void __tsan_on_report(const void *rep) /* not watched: inside a report */
{
    (void)rep;
    reports++;
}
#endif

/* ---- order ----------------------------------------------------------------------- */

static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* ORDER = 0..n-1, shuffled when SHUFFLE. */
static void make_order(unsigned *order, unsigned n, uint64_t *shuffle)
{
    for (unsigned i = 0; i < n; i++)
        order[i] = i;
    if (!shuffle)
        return;
    for (unsigned i = n; i > 1; i--) {
        unsigned j = (unsigned)(next_rand(shuffle) % i), t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

/* ---- fibers ---------------------------------------------------------------------- */

static NO_TSAN void fiber_main(void)
{
#if RACES
    __tsan_acquire(&tok_start);
    __tsan_acquire(&tok_pool[fb.pool][(fb.gen + 1) & 1]); /* the pool's previous block */
#endif
    fb.thread(fb.arg);
    fb.state[fb.cur] = F_DONE;
#if RACES
    __tsan_release(&tok_pool[fb.pool][fb.gen & 1]);
    __tsan_release(&tok_end);
    __tsan_switch_to_fiber(fb.sched_fiber, NOSYNC);
    setcontext(&fb.sched);
#endif
}

static NO_TSAN void fiber_sync(void)
{
    unsigned t = fb.cur;
#if RACES
    char *tok = &tok_bar[fb.pool][fb.epoch[t]++ & 1];
    __tsan_release(tok);
    __tsan_release(&tok_end);
    __tsan_release(&tok_pool[fb.pool][fb.gen & 1]);
    fb.state[t] = F_BAR;
    __tsan_switch_to_fiber(fb.sched_fiber, NOSYNC);
    swapcontext(&fb.uc[t], &fb.sched);
    __tsan_acquire(tok);
#else
    fb.state[t] = F_BAR;
    swapcontext(&fb.uc[t], &fb.sched);
#endif
}

static void no_sync(void) {}
static NO_TSAN void bad_sync(void) { fb.misuse = 1; }

/* VK_SHARED's array SLOT of BYTES in the running block's shared memory. */
static NO_TSAN void *block_shmem(int slot, unsigned long bytes)
{
    if (slot < 0 || slot >= EMU_SHMEM_SLOTS || bytes > EMU_SHMEM_SLOT) {
        fprintf(stderr, "vinterp: internal error: a kernel's shared array %d of %lu bytes is past the emulated "
                        "device's %d arrays of %d bytes\n",
                slot, bytes, EMU_SHMEM_SLOTS, EMU_SHMEM_SLOT);
        abort();
    }
    return fb.shm + (size_t)slot * EMU_SHMEM_SLOT;
}

static int fibers_reserve(unsigned n)
{
    if (fb.n >= n)
        return 0;
    emu_grid_free();
    fb.uc = calloc(n, sizeof *fb.uc);
    fb.stacks = malloc((size_t)POOLS * n * FIBER_STACK);
    fb.state = calloc(n, sizeof *fb.state);
    fb.order = calloc(n, sizeof *fb.order);
    int ok = fb.uc && fb.stacks && fb.state && fb.order;
#if RACES
    fb.tf = calloc((size_t)POOLS * n, sizeof *fb.tf);
    fb.epoch = calloc(n, sizeof *fb.epoch);
    ok = ok && fb.tf && fb.epoch;
    for (unsigned i = 0; ok && i < POOLS * n; i++)
        fb.tf[i] = __tsan_create_fiber(0);
#endif
    fb.n = ok ? n : 0;
    return fb.n ? 0 : -1;
}

void emu_grid_free(void)
{
    free(fb.uc);
    free(fb.stacks);
    free(fb.state);
    free(fb.order);
#if RACES
    for (unsigned i = 0; fb.tf && i < POOLS * fb.n; i++)
        __tsan_destroy_fiber(fb.tf[i]);
    free(fb.tf);
    free(fb.epoch);
#endif
    memset(&fb, 0, sizeof fb);
}

/* Fiber T, ready to start the kernel (its own function: getcontext may
 * return twice, which the caller's loop variables need not survive). */
static NO_TSAN int fiber_init(unsigned t)
{
    if (getcontext(&fb.uc[t]) != 0)
        return -1;
    fb.uc[t].uc_stack.ss_sp = fb.stacks + ((size_t)fb.pool * fb.n + t) * FIBER_STACK;
    fb.uc[t].uc_stack.ss_size = FIBER_STACK;
    fb.uc[t].uc_link = &fb.sched;
    makecontext(&fb.uc[t], fiber_main, 0);
    fb.state[t] = F_READY;
#if RACES
    fb.epoch[t] = 0;
#endif
    return 0;
}

/* One block of B threads as fibers; 0, or -1 on divergence. */
static NO_TSAN int run_block_fibers(const EmuDims *dm, unsigned B, uint64_t *shuffle)
{
    for (unsigned t = 0; t < B; t++)
        if (fiber_init(t) != 0)
            return -1;
    for (;;) {
        unsigned done = 0, bar = 0;
        make_order(fb.order, B, shuffle);
        for (unsigned k = 0; k < B; k++) {
            unsigned t = fb.order[k];
            if (fb.state[t] == F_READY) {
                fb.cur = t;
                dm->tidx[0] = t;
#if RACES
                __tsan_switch_to_fiber(fb.tf[fb.pool * fb.n + t], NOSYNC);
#endif
                swapcontext(&fb.sched, &fb.uc[t]);
            }
        }
        for (unsigned t = 0; t < B; t++) {
            done += fb.state[t] == F_DONE;
            bar += fb.state[t] == F_BAR;
        }
        if (done == B)
            return 0;
        if (bar != B)
            return -1;
        for (unsigned t = 0; t < B; t++)
            fb.state[t] = F_READY;
    }
}

/* Block K of the run (in the order run): its pool's shared memory, filled
 * with ones, the host's setup ordered before its threads. */
static NO_TSAN void block_begin(unsigned k)
{
    fb.pool = k % POOLS;
    fb.gen = k / POOLS;
    fb.shm = shm_pool[fb.pool];
    memset(fb.shm, 0xff, SHM_BYTES);
#if RACES
    __tsan_release(&tok_start);
#endif
}

int NO_TSAN emu_run_grid(const EmuDims *dm, const EmuLaunch *l, char *err, size_t errlen)
{
    unsigned grid = l->grid < 1 ? 1 : l->grid, B = l->block;
    int fibers = RACES || (l->sync && B > 1);
    unsigned *border = malloc(grid * sizeof *border), *torder = malloc(B * sizeof *torder);
    if (!border || !torder || (fibers && fibers_reserve(B) != 0)) {
        free(border);
        free(torder);
        snprintf(err, errlen, "out of host memory for a grid of %u blocks of %u threads", grid, B);
        return -1;
    }
    make_order(border, grid, l->shuffle);
    dm->gdim[0] = grid;
    dm->bdim[0] = B;
    dm->warp[0] = l->warp;
    dm->sync[0] = !l->sync ? bad_sync : fibers ? fiber_sync : no_sync;
    dm->shmem[0] = block_shmem;
    fb.misuse = 0;
    fb.thread = l->thread;
    fb.arg = l->arg;
#if RACES
    fb.sched_fiber = __tsan_get_current_fiber();
    int reports0 = reports;
#endif
    int rc = 0;
    for (unsigned k = 0; k < grid && rc == 0; k++) {
        unsigned b = border[k];
        block_begin(k);
        dm->bidx[0] = b;
        if (fibers) {
            if (run_block_fibers(dm, B, l->shuffle) != 0) {
                snprintf(err, errlen, "emulated block %u: threads diverged at __syncthreads", b);
                rc = -1;
            }
        } else {
            make_order(torder, B, l->shuffle);
            for (unsigned k = 0; k < B; k++) {
                dm->tidx[0] = torder[k];
                l->thread(l->arg);
            }
        }
    }
#if RACES
    __tsan_acquire(&tok_end);
    if (rc == 0 && !fb.misuse && reports != reports0) {
        snprintf(err, errlen, "ThreadSanitizer reported a data race between its threads (the report is above)");
        rc = -1;
    }
#endif
    free(border);
    free(torder);
    if (rc == 0 && fb.misuse) {
        snprintf(err, errlen, "a kernel launched without SYNC called __syncthreads");
        rc = -1;
    }
    return rc;
}

/* runtime/device/emul_grid.c — a kernel's grid run on the host, threads as fibers
 * at barriers (see emul_grid.h). */
#include "runtime/device/emul_grid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

enum { F_READY, F_BAR, F_DONE };
#define FIBER_STACK (256 * 1024)

static struct {
    ucontext_t sched;
    ucontext_t *uc;
    char *stacks;
    int *state;
    unsigned n;
    unsigned cur;
    EmuThread thread;
    void *arg;
    int misuse;         /* __syncthreads in a launch made without SYNC */
} fb;

static void fiber_main(void)
{
    fb.thread(fb.arg);
    fb.state[fb.cur] = F_DONE;
}

static void fiber_sync(void)
{
    fb.state[fb.cur] = F_BAR;
    swapcontext(&fb.uc[fb.cur], &fb.sched);
}

static void no_sync(void) {}
static void bad_sync(void) { fb.misuse = 1; }

static int fibers_reserve(unsigned n)
{
    if (fb.n >= n)
        return 0;
    free(fb.uc);
    free(fb.stacks);
    free(fb.state);
    fb.uc = calloc(n, sizeof *fb.uc);
    fb.stacks = malloc((size_t)n * FIBER_STACK);
    fb.state = calloc(n, sizeof *fb.state);
    fb.n = fb.uc && fb.stacks && fb.state ? n : 0;
    return fb.n ? 0 : -1;
}

void emu_grid_free(void)
{
    free(fb.uc);
    free(fb.stacks);
    free(fb.state);
    memset(&fb, 0, sizeof fb);
}

/* Fiber T, ready to start the kernel (its own function: getcontext may
 * return twice, which the caller's loop variables need not survive). */
static __attribute__((noinline)) int fiber_init(unsigned t)
{
    if (getcontext(&fb.uc[t]) != 0)
        return -1;
    fb.uc[t].uc_stack.ss_sp = fb.stacks + (size_t)t * FIBER_STACK;
    fb.uc[t].uc_stack.ss_size = FIBER_STACK;
    fb.uc[t].uc_link = &fb.sched;
    makecontext(&fb.uc[t], fiber_main, 0);
    fb.state[t] = F_READY;
    return 0;
}

/* One block of B threads with barriers; 0, or -1 on divergence. */
static int run_block_fibers(const EmuDims *dm, unsigned B)
{
    for (unsigned t = 0; t < B; t++)
        if (fiber_init(t) != 0)
            return -1;
    for (;;) {
        unsigned done = 0, bar = 0;
        for (unsigned t = 0; t < B; t++) {
            if (fb.state[t] == F_READY) {
                fb.cur = t;
                dm->tidx[0] = t;
                swapcontext(&fb.sched, &fb.uc[t]);
            }
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

int emu_run_grid(const EmuDims *dm, unsigned grid, unsigned B, unsigned warp, int sync, EmuThread thread, void *arg,
                 char *err, size_t errlen)
{
    if (grid < 1)
        grid = 1;
    int fibers = sync && B > 1;
    if (fibers && fibers_reserve(B) != 0) {
        snprintf(err, errlen, "out of host memory for %u fibers", B);
        return -1;
    }
    dm->gdim[0] = grid;
    dm->bdim[0] = B;
    dm->warp[0] = warp;
    dm->sync[0] = fibers ? fiber_sync : sync ? no_sync : bad_sync;
    fb.misuse = 0;
    fb.thread = thread;
    fb.arg = arg;
    for (unsigned b = 0; b < grid; b++) {
        dm->bidx[0] = b;
        if (fibers) {
            if (run_block_fibers(dm, B) != 0) {
                snprintf(err, errlen, "emulated block %u: threads diverged at __syncthreads", b);
                return -1;
            }
            continue;
        }
        for (unsigned t = 0; t < B; t++) {
            dm->tidx[0] = t;
            thread(arg);
        }
    }
    if (fb.misuse) {
        snprintf(err, errlen, "a kernel launched without SYNC called __syncthreads");
        return -1;
    }
    return 0;
}

/* runtime/device/emul_grid.h — running a kernel's grid on the host, for the
 * emulated device (runtime/device/cuda_emul.c): every thread of every block in
 * turn, with the thread coordinates written into the unit's globals before
 * each thread runs. A kernel with barriers runs each block's threads as
 * fibers (ucontext) that meet at __syncthreads: a fiber runs until it
 * reaches the barrier or returns, and the waiting ones resume once all
 * have arrived. Some waiting while others have returned is a divergent
 * barrier — undefined behaviour on a GPU, a failed launch here. One grid
 * at a time per process. */
#ifndef RUNTIME_EMUL_GRID_H
#define RUNTIME_EMUL_GRID_H

#include <stddef.h>

/* A unit's thread coordinates and barrier hook (the generated prelude
 * defines them as extern "C" globals in every unit built for the emulated
 * device: vk_emu_bidx, _tidx, _bdim, _gdim, _warp, _sync). */
typedef struct {
    unsigned *bidx, *tidx, *bdim, *gdim, *warp;
    void (**sync)(void);
} EmuDims;

/* One thread's work: the kernel called with its arguments. */
typedef void (*EmuThread)(void *arg);

/* Run THREAD(ARG) for each thread of GRID blocks of BLOCK threads (WARP the
 * unit's warp-group size). SYNC: the kernel uses __syncthreads (fibers;
 * without SYNC a barrier fails the launch). 0, or -1 with the reason in
 * ERR. */
int emu_run_grid(const EmuDims *dims, unsigned grid, unsigned block, unsigned warp, int sync, EmuThread thread,
                 void *arg, char *err, size_t errlen);

/* Free the fibers' stacks. */
void emu_grid_free(void);

#endif

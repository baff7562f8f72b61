/* runtime/device/emul_grid.h — running a kernel's grid on the host, for the
 * emulated device (runtime/device/cuda_emul.c): every thread of every block
 * in turn, with the thread coordinates written into the unit's globals
 * before each thread runs. A kernel with barriers runs each block's
 * threads as fibers (ucontext) that meet at __syncthreads: a fiber runs
 * until it reaches the barrier or returns, and the waiting ones resume once
 * all have arrived. Some waiting while others have returned is a divergent
 * barrier — undefined behaviour on a GPU, a failed launch here. One grid
 * at a time per process.
 *
 * Adversarial on request:
 *   - shuffled order: the blocks, and the threads of a block between two
 *     barriers, run in a pseudo-random order drawn from a seed, so that a
 *     kernel that leans on the emulator's in-order runs gives other
 *     answers;
 *   - shared memory (VK_SHARED) is each block's own and starts filled with
 *     ones (NaN as a double, -1 as an Int), as uninitialised as a GPU's;
 *   - race detection, in a build with ThreadSanitizer (make tsan): every
 *     thread of every block is a fiber of its own, with a happens-before
 *     edge only where CUDA gives one: the launch before every thread, each
 *     barrier between the threads of its block, every thread before what
 *     follows the launch. Two threads touching one address, one of them
 *     writing and not both atomically, with no barrier between them (or in
 *     different blocks) is a data race that ThreadSanitizer reports with
 *     both stacks: the kernel's name and the generated unit's line. Each
 *     block's stacks and shared memory are mapped fresh and unmapped after
 *     it, so that reuse of the memory by the next block is not a race. */
#ifndef RUNTIME_EMUL_GRID_H
#define RUNTIME_EMUL_GRID_H

#include <stddef.h>
#include <stdint.h>

/* A unit's thread coordinates, barrier and shared-memory hooks (the
 * generated prelude defines them as extern "C" globals in every unit built
 * for the emulated device: vk_emu_bidx, _tidx, _bdim, _gdim, _warp, _sync,
 * _shmem). */
typedef struct {
    unsigned *bidx, *tidx, *bdim, *gdim, *warp;
    void (**sync)(void);
    void *(**shmem)(int slot, unsigned long bytes);
} EmuDims;

/* One thread's work: the kernel called with its arguments. */
typedef void (*EmuThread)(void *arg);

/* The shared memory of a block: EMU_SHMEM_SLOTS arrays (VK_SHARED's slot
 * numbers) of at most EMU_SHMEM_SLOT bytes each. */
#define EMU_SHMEM_SLOTS 4
#define EMU_SHMEM_SLOT 2048

/* One launch: GRID blocks of BLOCK threads (WARP the unit's warp-group
 * size). SYNC: the kernel uses __syncthreads (fibers; without SYNC a
 * barrier fails the launch). SHUFFLE: the state of the order's generator
 * (advanced), or NULL for the plain order. */
typedef struct {
    unsigned grid, block, warp;
    int sync;
    EmuThread thread;
    void *arg;
    uint64_t *shuffle;
} EmuLaunch;

/* Run the launch. 0, or -1 with the reason in ERR. */
int emu_run_grid(const EmuDims *dims, const EmuLaunch *l, char *err, size_t errlen);

/* 1 in a build whose emulated launches detect races (ThreadSanitizer). */
int emu_grid_races(void);

/* Free the fibers' stacks. */
void emu_grid_free(void);

#endif

/* kernels/seg_plan.h — how a segmented reduction or scan is spread over a
 * GPU, from the distribution of its segments' lengths: one rule for the
 * generated skeletons (runtime/fused/exec_cuda.c, choose_run) and the
 * precompiled primitives (kernels/vk_scan.cu). Plain C, also CUDA C++.
 *
 * A group of threads walks a segment in steps: a thread one element a
 * step, a warp 32, a block of VK_PLAN_BLOCK_THREADS. A launch lasts as long
 * as its slowest group, so the average length alone misleads: one segment
 * of a million elements among many of three would be walked by one thread.
 * The longest segment bounds each group's walk:
 *
 *   THREAD  average under VK_PLAN_THREAD_AVG and no segment longer than
 *           VK_PLAN_THREAD_LONGEST (a few hundred steps at most);
 *   WARP    average under VK_PLAN_WARP_AVG, longest at most
 *           VK_PLAN_WARP_LONGEST (as many steps of 32);
 *   BLOCK   (the generated skeletons only) enough segments to fill the
 *           device, longest at most VK_PLAN_BLOCK_LONGEST;
 *   CHUNK   otherwise: every segment cut into chunks of equal size spread
 *           over the whole device, partials combined per segment with a
 *           carry (vk_scan.cu's chunked strategy), whatever the lengths.
 *
 * LONGEST < 0 (unknown: a descriptor made on the device) counts as N. */
#ifndef KERNELS_SEG_PLAN_H
#define KERNELS_SEG_PLAN_H

#include <stdint.h>

typedef enum { VK_PLAN_THREAD, VK_PLAN_WARP, VK_PLAN_BLOCK, VK_PLAN_CHUNK } VkSegPlan;

#define VK_PLAN_THREAD_AVG 16
#define VK_PLAN_THREAD_LONGEST 256
#define VK_PLAN_WARP_AVG 1024
#define VK_PLAN_WARP_LONGEST (32 * 256)
#define VK_PLAN_BLOCK_THREADS 256
#define VK_PLAN_BLOCK_LONGEST (256 * 256)

/* The plan for M segments holding N elements, the longest LONGEST; FILL:
 * the segments that make enough blocks to fill the device, 0 when there is
 * no block strategy. */
static inline VkSegPlan vk_seg_plan(int64_t n, int64_t m, int64_t longest, int64_t fill)
{
    if (m <= 0 || n <= 0)
        return VK_PLAN_THREAD;
    if (longest < 0 || longest > n)
        longest = n;
    int64_t avg = n / m;
    if (avg < VK_PLAN_THREAD_AVG && longest <= VK_PLAN_THREAD_LONGEST)
        return VK_PLAN_THREAD;
    if (avg < VK_PLAN_WARP_AVG && longest <= VK_PLAN_WARP_LONGEST)
        return VK_PLAN_WARP;
    if (fill > 0 && m >= fill && longest <= VK_PLAN_BLOCK_LONGEST)
        return VK_PLAN_BLOCK;
    return VK_PLAN_CHUNK;
}

#endif

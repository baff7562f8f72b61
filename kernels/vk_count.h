/* kernels/vk_count.h — how much device work one call of a libvkernels
 * primitive queues: its kernels, and its copies and clears on the device
 * (cudaMemsetAsync, a device-to-device copy). The model of -d stats
 * (runtime/fused/tuning.h) prices each as a launch, on the real device
 * and on the emulated one alike, so the counts come from here and not
 * from the emulated primitives. Plain C, also CUDA C++.
 *
 * Read off kernels/vk_*.cu and the CUB algorithms they call (CCCL of
 * CUDA 13: DeviceScan an init kernel and a scan kernel; DeviceSelect the
 * same; DeviceRadixSort one kernel up to a single tile, else the
 * onesweep passes: two clears, a histogram and an exclusive sum, then a
 * clear and a kernel a pass of 8 bits). Change it with them: test_kernels
 * checks the counts against the library's own tally on a GPU (vk_queued;
 * CUB's kernels are counted there by these rules too, so that check is
 * of our own launches and clears).
 *
 * Approximations, stated: a sort's single tile is taken for the H100's
 * tuning and 8-byte keys (2432). The strategy of the segmented folds is
 * the library's default (auto) and float sums are not folded in sequence
 * (vk_set_float_exact off). */
#ifndef KERNELS_VK_COUNT_H
#define KERNELS_VK_COUNT_H

#include <stdint.h>
#include "kernels/seg_plan.h"

typedef struct {
    int64_t k; /* kernels */
    int64_t c; /* copies and clears on the device */
} VkCount;

#define VK_COUNT_SORT_TILE 2432
/* A scatter's stamps are kept between calls up to this many destination
 * elements (vk_permute.cu); a longer destination's are cleared each call. */
#define VK_STAMPS_KEPT (1LL << 24)
/* CUB's onesweep sorts in portions of about 2^28 keys. */
#define VK_COUNT_SORT_PORTION (1LL << 28)

static inline VkCount vk_count_of(int64_t k, int64_t c)
{
    VkCount r;
    r.k = k;
    r.c = c;
    return r;
}

static inline VkCount vk_count_add(VkCount a, VkCount b) { return vk_count_of(a.k + b.k, a.c + b.c); }

/* An unsegmented scan of up to this many elements that would be chunked
 * is one block's (vk_scan.cu run(): one kernel, no partials). */
#define VK_SCAN_ONE_BLOCK 8192

/* vk_scan.cu run(): M segments (SEGMENTED: a descriptor given) of N
 * elements, the longest LONGEST (< 0 unknown), a scan or a reduction. */
static inline VkCount vk_count_fold(int64_t n, int64_t m, int64_t longest, int segmented, int scan)
{
    if (m <= 0)
        return vk_count_of(0, 0);
    if (n < 0)
        n = 0;
    VkSegPlan p = vk_seg_plan(n, m, segmented ? longest : n, 0);
    if (p != VK_PLAN_CHUNK || (scan && !segmented && m == 1 && n <= VK_SCAN_ONE_BLOCK))
        return vk_count_of(1, 0);
    /* chunk partials, per segment (one segment: by the first kernel's
     * last block), [scan] */
    VkCount r = vk_count_of((segmented ? 2 : 1) + (scan ? 1 : 0), 0);
    if (segmented) /* the chunks a segment: counted, then scanned */
        r = vk_count_add(r, vk_count_add(vk_count_of(1, 0), vk_count_fold(m, 1, m, 0, 1)));
    return r;
}

/* vk_seg_ids_internal: a clear, the heads marked, a max scan. */
static inline VkCount vk_count_seg_ids(int64_t m, int64_t n)
{
    if (n <= 0)
        return vk_count_of(0, 0);
    (void)m;
    return vk_count_add(vk_count_of(1, 1), vk_count_fold(n, 1, n, 0, 1));
}

static inline VkCount vk_count_reduce(int64_t n) { return vk_count_fold(n, 1, n, 0, 0); }
static inline VkCount vk_count_scan(int64_t n) { return n <= 0 ? vk_count_of(0, 0) : vk_count_fold(n, 1, n, 0, 1); }

/* vk_seg_offsets: DeviceScan, and the total read back when asked. */
static inline VkCount vk_count_seg_offsets(int64_t m, int total)
{
    return m > 0 ? vk_count_of(2 + (total ? 1 : 0), 0) : vk_count_of(0, 0);
}

/* vk_seg_shape: up to VK_SHAPE_ONE_BLOCK segments one block's kernel,
 * else one DeviceScan of the lengths' shapes (M >= 1). */
#define VK_SHAPE_ONE_BLOCK 8192
static inline VkCount vk_count_seg_shape(int64_t m) { return vk_count_of(m > 0 ? (m <= VK_SHAPE_ONE_BLOCK ? 1 : 2) : 0, 0); }

/* vk_map, vk_dist, vk_index, vk_seg_positions, vk_elems_get/put, vk_rand:
 * one kernel over N (or M) items, none when there are none. */
static inline VkCount vk_count_one(int64_t n) { return vk_count_of(n > 0 ? 1 : 0, 0); }

/* vk_expr: a chain over N elements; GATHER: it has a gather's record,
 * made by the run's last block (with no element, a clear of it). */
static inline VkCount vk_count_expr(int64_t n, int gather)
{
    return vk_count_of(n > 0 ? 1 : 0, gather && n <= 0 ? 1 : 0);
}

/* vk_expr_reduce: TREE when the operator folds as a tree (not a float
 * max or min): one kernel, per-block partials folded by its last block;
 * else the node written out and vk_reduce of it. */
static inline VkCount vk_count_expr_reduce(int64_t n, int gather, int tree)
{
    VkCount r = vk_count_of(0, gather && n <= 0 ? 1 : 0);
    if (n <= 0 || !tree)
        return vk_count_add(r, vk_count_add(vk_count_one(n), vk_count_reduce(n > 0 ? n : 0)));
    return vk_count_add(r, vk_count_of(1, 0)); /* the last block folds the partials */
}

/* The one-pass scatter (vk_permute.cu): up to this many source elements
 * a scatter that must settle collisions does so in one kernel (its last
 * block writes the winners again when there was one), where that is the
 * whole answer: without ZERO, or with ZERO where every position is
 * written unless two elements collide (no flags, N_DST = N). */
#define VK_SCATTER_ONE_PASS 65536

static inline int vk_scatter_one_pass(int64_t n, int64_t n_dst, int mode, int flagged)
{
    if (n <= 0 || n > VK_SCATTER_ONE_PASS || n_dst > VK_STAMPS_KEPT)
        return 0;
    return !(mode & 2) || (!flagged && n_dst == n);
}

/* vk_scatter: N source elements over M segments (SEGMENTED: descriptors
 * given), N_DST destination elements, FLAGGED (flags given); MODE
 * (kernels.h): UNIQUE without ZERO, one pass; up to VK_SCATTER_ONE_PASS,
 * one pass (vk_scatter_one_pass); else a claim pass and the writing pass
 * (the stamps growing, rarely, add a clear not counted here); RECORD: a
 * caller's fault record (with nothing to scatter, a clear of it). The
 * segments are searched, not listed; the record is made by the last
 * kernel's last block from the library's error word, which needs no
 * clearing. */
static inline VkCount vk_count_scatter(int64_t n, int64_t m, int segmented, int64_t n_dst, int mode, int flagged,
                                       int record)
{
    int zero = (mode & 2) != 0, claim = zero || !(mode & 1);
    if (n == 0 || (segmented && m == 0))
        return vk_count_of(0, (record ? 1 : 0) + (zero && n_dst > 0 ? 1 : 0));
    if (!claim || vk_scatter_one_pass(n, n_dst, mode, flagged))
        return vk_count_of(1, 0);
    if (n >= (int64_t)UINT32_MAX - 1) /* wide winners: cleared, and the result when ZERO */
        return vk_count_of(2, 1 + (zero && n_dst > 0 ? 1 : 0));
    return vk_count_of(2, n_dst > VK_STAMPS_KEPT ? 1 : 0); /* claim, write; long: the stamps cleared */
}

/* vk_scatter_many (kernels.h): NV vectors in one kernel where one
 * vk_scatter would take one pass, else NV vk_scatters. */
static inline VkCount vk_count_scatter_many(int nv, int64_t n, int64_t m, int segmented, int64_t n_dst, int mode,
                                            int record)
{
    int claim = (mode & 2) || !(mode & 1);
    if (nv > 1 && claim && vk_scatter_one_pass(n, n_dst, mode, 0) && !(segmented && m == 0))
        return vk_count_of(1, 0);
    VkCount one = vk_count_scatter(n, m, segmented, n_dst, mode, 0, record), all = vk_count_of(0, 0);
    for (int v = 0; v < nv; v++)
        all = vk_count_add(all, one);
    return all;
}

/* vk_scatter_fill (kernels.h): up to VK_SCATTER_FILL_ONE source elements
 * (and the stamps kept) one kernel, whose last block scatters them after
 * every block's fill; else the fill (vk_dist's kernel) and vk_scatter. */
#define VK_SCATTER_FILL_ONE 1024

static inline int vk_scatter_fill_one(int64_t n, int64_t n_dst)
{
    return n_dst > 0 && n <= VK_SCATTER_FILL_ONE && n_dst <= VK_STAMPS_KEPT;
}

static inline VkCount vk_count_scatter_fill(int64_t n, int64_t m, int segmented, int64_t n_dst, int flagged,
                                            int record)
{
    if (vk_scatter_fill_one(n, n_dst))
        return vk_count_of(1, 0);
    return vk_count_add(vk_count_of(n_dst > 0 ? 1 : 0, 0), vk_count_scatter(n, m, segmented, n_dst, 0, flagged, record));
}

/* vk_scatter_fill_many (kernels.h): one vector, vk_scatter_fill's; up to
 * VK_SCATTER_FILL_ONE source elements one kernel; else the fills' kernel
 * and vk_scatter_many. */
static inline VkCount vk_count_scatter_fill_many(int nv, int64_t n, int64_t m, int segmented, int64_t n_dst, int record)
{
    if (nv == 1)
        return vk_count_scatter_fill(n, m, segmented, n_dst, 0, record);
    if (vk_scatter_fill_one(n, n_dst))
        return vk_count_of(1, 0);
    return vk_count_add(vk_count_of(n_dst > 0 ? 1 : 0, 0), vk_count_scatter_many(nv, n, m, segmented, n_dst, 0, record));
}

/* vk_gather: N_DST destination elements over M segments. */
static inline VkCount vk_count_gather(int64_t n_dst, int64_t m, int segmented, int record)
{
    if (n_dst == 0 || (segmented && m == 0))
        return vk_count_of(0, record ? 1 : 0);
    return vk_count_of(1, 0);
}

/* vk_select_flagged: DeviceSelect (VK_SELECT_ONE_BLOCK: one block). */
#define VK_SELECT_ONE_BLOCK 8192 /* up to it, one block's kernel */
static inline VkCount vk_count_select(int64_t n) { return vk_count_of(n > 0 ? (n <= VK_SELECT_ONE_BLOCK ? 1 : 2) : 0, 0); }

/* vk_rank.cu sort_pairs: N pairs of 8-byte keys sorted on BITS bits. */
static inline VkCount vk_count_sort(int64_t n, int bits)
{
    if (n <= 0 || bits <= 0)
        return vk_count_of(0, 0);
    if (n <= VK_COUNT_SORT_TILE)
        return vk_count_of(1, 0);
    int64_t passes = (bits + 7) / 8 * ((n + VK_COUNT_SORT_PORTION - 1) / VK_COUNT_SORT_PORTION);
    return vk_count_of(2 + passes, 2 + passes);
}

/* vk_seg_rank: N keys (FLOAT or Int) in M segments (SEGMENTED). */
static inline VkCount vk_count_seg_rank(int64_t n, int64_t m, int segmented, int isfloat)
{
    if (n <= 0)
        return vk_count_of(0, 0);
    if (!segmented)
        m = 1;
    int segbits = 0;
    while (m > 1 && segbits < 63 && ((m - 1) >> segbits) != 0)
        segbits++;
    VkCount r = vk_count_of(1, 0); /* the keys */
    if (segbits > 0)
        r = vk_count_add(r, vk_count_seg_ids(m, n));
    r = vk_count_add(r, vk_count_sort(n, isfloat ? 64 : 32 + segbits));
    if (!isfloat || segbits == 0)
        return vk_count_add(r, vk_count_of(1, 0));
    r = vk_count_add(r, vk_count_of(1, 0)); /* the segments gathered */
    return vk_count_add(r, vk_count_add(vk_count_sort(n, segbits), vk_count_of(1, 0)));
}

#endif

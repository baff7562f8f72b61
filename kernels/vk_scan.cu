/* kernels/vk_scan.cu — reductions and exclusive scans, plain and segmented
 * (vcode/SPEC.md §4.2, §4.3), and segment ids.
 *
 * Strategies (VkStrategy), chosen from the average segment length
 * avg = n / m and the longest segment by kernels/seg_plan.h's rule (the
 * generated skeletons' too) unless forced with vk_set_strategy:
 *
 *   THREAD (avg < 16 and no segment over 256, and always for Float ADD/MUL under
 *     vk_set_float_exact): one thread per segment runs the reference rule
 *     left to right (step()), so it is bit-exact for every type. Adjacent
 *     threads read adjacent short segments, so the reads stay mostly
 *     coalesced.
 *   WARP (avg < 1024 and no segment over 8192): one warp per segment, 32
 *     elements per step, a warp scan of the lifted states plus a carry.
 *   CHUNK (otherwise, which includes the unsegmented calls of 1024 or
 *     more elements, and a long segment among short ones): every non-empty segment is cut into chunks of C
 *     elements (C a multiple of the tile, 2048 elements or 1024 for Float
 *     MAX/MIN, chosen so the whole
 *     data makes about 4 chunks per SM); a chunk's index range comes from an
 *     exclusive scan of the per-segment chunk counts (cstart) and a binary
 *     search. Three kernels (an unsegmented scan of at most
 *     VK_SCAN_ONE_BLOCK elements: (3) alone, one block, one chunk from the
 *     identity): (1) a block per chunk reduces it tile by tile
 *     (partial[v]); (2) a warp per segment scans its chunks' partials in
 *     order (exclusive prefixes in place; for a reduction the total is the
 *     result); (3, scans only) a block per chunk rescans it from its prefix
 *     and writes the outputs. Load-balanced whatever the lengths, one or
 *     many segments; about 2 reads + 1 write per element for a scan.
 *
 * CUB's DeviceSegmentedReduce is one block per segment: idle threads for
 * short segments and no parallelism inside one long segment, hence our own
 * kernels; CUB's block and warp collectives (BlockLoad/BlockStore with warp
 * transposes, BlockReduce, BlockScan, WarpScan) do the inner work. Every
 * combination is in element order (the rules need associativity only; the
 * Float MAX/MIN state is not commutative).
 *
 * Only three rule classes are instantiated (Int/Bool with the op chosen at
 * run time, Float ADD/MUL, Float MAX/MIN), five kernels each. */
#include "kernels/seg_plan.h"
#include "kernels/vk_internal.cuh"

#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cub/util_ptx.cuh>
#include <cub/warp/warp_scan.cuh>

#include <limits.h>

namespace {

constexpr int TB = 256;           /* threads per block */
constexpr int WARPS = TB / 32;

/* ---- THREAD: one thread per segment, the reference rule ---- */

template <class R>
__global__ void k_thread_seg(R r, const typename R::T *in, VkSegs sg, typename R::T *out,
                             int scan, int incl)
{
    typedef typename R::T T;
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < sg.m;
         k += (int64_t)gridDim.x * blockDim.x) {
        int64_t l = sg.length(k), b = sg.start(k);
        T acc = r.seq_init();
        if (scan) {
            for (int64_t i = 0; i < l; i++) {
                T v = in[b + i];
                T next = r.step(acc, v);
                out[b + i] = incl ? next : acc;
                acc = next;
            }
        } else {
            for (int64_t i = 0; i < l; i++)
                acc = r.step(acc, in[b + i]);
            out[k] = acc;
        }
    }
}

/* ---- WARP: one warp per segment ---- */

template <class R>
__global__ void __launch_bounds__(TB) k_warp_seg(R r, const typename R::T *in, VkSegs sg,
                                                 typename R::T *out, int scan, int incl)
{
    typedef typename R::S S;
    typedef cub::WarpScan<S> WS;
    __shared__ typename WS::TempStorage tmp[WARPS];
    int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int64_t k = blockIdx.x * (int64_t)WARPS + w; k < sg.m; k += (int64_t)gridDim.x * WARPS) {
        int64_t l = sg.length(k), b = sg.start(k);
        S carry = r.ident();
        for (int64_t i0 = 0; i0 < l; i0 += 32) {
            int64_t i = i0 + lane;
            S x = i < l ? r.lift(in[b + i]) : r.ident();
            S inc, agg;
            WS(tmp[w]).InclusiveScan(x, inc, r, agg);
            if (scan) { /* uniform across the warp */
                S ex = cub::ShuffleUp<32>(inc, 1, 0, 0xffffffffu);
                if (lane == 0)
                    ex = r.ident();
                if (i < l)
                    out[b + i] = r.fin(r(carry, incl ? inc : ex));
            }
            carry = r(carry, agg);
            __syncwarp();
        }
        if (!scan && lane == 0)
            out[k] = r.fin(carry);
    }
}

/* ---- CHUNK ---- */

struct Chunks {
    const int32_t *cstart; /* exclusive scan of the chunk counts; NULL: unsegmented */
    int64_t c;             /* chunk size in elements (multiple of TILE) */
    __device__ __forceinline__ int64_t count(const VkSegs &sg, int64_t k) const
    {
        return (sg.length(k) + c - 1) / c;
    }
    __device__ __forceinline__ int64_t total(const VkSegs &sg) const
    {
        if (!cstart)
            return (sg.n + c - 1) / c;
        return sg.m > 0 ? cstart[sg.m - 1] + count(sg, sg.m - 1) : 0;
    }
    /* The segment of chunk v: the largest k with cstart[k] <= v (segments
     * with no chunk share the next one's cstart and lose to it). */
    __device__ __forceinline__ int64_t segment(const VkSegs &sg, int64_t v) const
    {
        if (!cstart)
            return 0;
        int64_t lo = 0, hi = sg.m - 1;
        while (lo < hi) {
            int64_t mid = (lo + hi + 1) / 2;
            if (cstart[mid] <= v)
                lo = mid;
            else
                hi = mid - 1;
        }
        return lo;
    }
    __device__ __forceinline__ int64_t first(int64_t k) const { return cstart ? cstart[k] : 0; }
};

template <class R> struct ChunkTypes {
    typedef typename R::T T;
    typedef typename R::S S;
    /* items per thread: 8, or 4 for the 16-byte Float MAX/MIN state (fewer
     * registers); a tile is TB * IPT elements */
    static constexpr int IPT = sizeof(S) > 8 ? 4 : 8;
    static constexpr int TILE = TB * IPT;
    typedef cub::BlockLoad<T, TB, IPT, cub::BLOCK_LOAD_WARP_TRANSPOSE> Load;
    typedef cub::BlockStore<T, TB, IPT, cub::BLOCK_STORE_WARP_TRANSPOSE> Store;
    typedef cub::BlockReduce<S, TB> Reduce;
    typedef cub::BlockScan<S, TB> Scan;
};

/* (2) A warp per segment over its chunk partials: scan -> exclusive
 * prefixes in place; reduce -> out[k] = fin(total). Segment K by the
 * warp whose lane is LANE. */
template <class R>
__device__ __forceinline__ void chunk_partials_of(R r, VkSegs sg, Chunks ch, typename R::S *partial,
                                                  typename R::T *out, int scan, int64_t k, int lane,
                                                  typename cub::WarpScan<typename R::S>::TempStorage &tmp)
{
    typedef typename R::S S;
    typedef cub::WarpScan<S> WS;
    int64_t nc = ch.count(sg, k), b = ch.first(k);
    S carry = r.ident();
    for (int64_t i0 = 0; i0 < nc; i0 += 32) {
        int64_t i = i0 + lane;
        S x = i < nc ? partial[b + i] : r.ident();
        S inc, agg;
        WS(tmp).InclusiveScan(x, inc, r, agg);
        S ex = cub::ShuffleUp<32>(inc, 1, 0, 0xffffffffu);
        if (lane == 0)
            ex = r.ident();
        if (scan && i < nc)
            partial[b + i] = r(carry, ex);
        carry = r(carry, agg);
        __syncwarp();
    }
    if (!scan && lane == 0)
        out[k] = r.fin(carry);
}

template <class R>
__global__ void __launch_bounds__(TB) k_chunk_partials(R r, VkSegs sg, Chunks ch,
                                                       typename R::S *partial,
                                                       typename R::T *out, int scan)
{
    typedef typename R::S S;
    typedef cub::WarpScan<S> WS;
    __shared__ typename WS::TempStorage tmp[WARPS];
    int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int64_t k = blockIdx.x * (int64_t)WARPS + w; k < sg.m; k += (int64_t)gridDim.x * WARPS)
        chunk_partials_of(r, sg, ch, partial, out, scan, k, lane, tmp[w]);
}

/* (1) partial[v] = the state of chunk v. ONE: one segment, whose
 * partials the last block combines (2) in the same order (DONE: the
 * library's count of finished blocks), so no launch of its own. */
template <class R>
__global__ void __launch_bounds__(TB) k_chunk_reduce(R r, const typename R::T *in, VkSegs sg,
                                                     Chunks ch, typename R::S *partial, int one,
                                                     typename R::T *out, int scan, unsigned int *done)
{
    typedef ChunkTypes<R> CT;
    typedef typename R::T T;
    typedef typename R::S S;
    constexpr int IPT = CT::IPT, TILE = CT::TILE;
    __shared__ union {
        typename CT::Load::TempStorage load;
        typename CT::Reduce::TempStorage reduce;
    } tmp;
    __shared__ int64_t s_lo, s_hi;
    int64_t total = ch.total(sg);
    for (int64_t v = blockIdx.x; v < total; v += gridDim.x) {
        if (threadIdx.x == 0) {
            int64_t k = ch.segment(sg, v);
            int64_t g = v - ch.first(k);
            int64_t b = sg.start(k), l = sg.length(k);
            s_lo = b + g * ch.c;
            s_hi = b + (l < (g + 1) * ch.c ? l : (g + 1) * ch.c);
        }
        __syncthreads();
        int64_t lo = s_lo, hi = s_hi;
        S carry = r.ident();
        for (int64_t t0 = lo; t0 < hi; t0 += TILE) {
            int valid = hi - t0 < TILE ? (int)(hi - t0) : TILE;
            T raw[IPT];
            typename CT::Load(tmp.load).Load(in + t0, raw, valid, T());
            __syncthreads();
            S x[IPT];
#pragma unroll
            for (int j = 0; j < IPT; j++)
                x[j] = (int)threadIdx.x * IPT + j < valid ? r.lift(raw[j]) : r.ident();
            S agg = typename CT::Reduce(tmp.reduce).Reduce(x, r);
            __syncthreads();
            if (threadIdx.x == 0)
                carry = r(carry, agg);
        }
        if (threadIdx.x == 0)
            partial[v] = carry;
        __syncthreads();
    }
    if (one) {
        __shared__ typename cub::WarpScan<S>::TempStorage wtmp;
        if (vk_is_last_block(done) && threadIdx.x < 32)
            chunk_partials_of(r, sg, ch, partial, out, scan, 0, (int)threadIdx.x, wtmp);
    }
}

template <class R> struct CarryIn {
    typedef typename R::S S;
    R r;
    S carry;
    __device__ __forceinline__ S operator()(S block_aggregate)
    {
        S old = carry;
        carry = r(carry, block_aggregate);
        return old;
    }
};

/* (3) Rescan chunk v from its prefix and write the outputs. */
template <class R>
__global__ void __launch_bounds__(TB, 2) k_chunk_scan(R r, const typename R::T *in, VkSegs sg,
                                                   Chunks ch, const typename R::S *prefix,
                                                   typename R::T *out, int incl)
{
    typedef ChunkTypes<R> CT;
    typedef typename R::T T;
    typedef typename R::S S;
    constexpr int IPT = CT::IPT, TILE = CT::TILE;
    __shared__ union {
        typename CT::Load::TempStorage load;
        typename CT::Store::TempStorage store;
        typename CT::Scan::TempStorage scan;
    } tmp;
    __shared__ int64_t s_lo, s_hi;
    int64_t total = ch.total(sg);
    for (int64_t v = blockIdx.x; v < total; v += gridDim.x) {
        if (threadIdx.x == 0) {
            int64_t k = ch.segment(sg, v);
            int64_t g = v - ch.first(k);
            int64_t b = sg.start(k), l = sg.length(k);
            s_lo = b + g * ch.c;
            s_hi = b + (l < (g + 1) * ch.c ? l : (g + 1) * ch.c);
        }
        __syncthreads();
        int64_t lo = s_lo, hi = s_hi;
        CarryIn<R> cin;
        cin.r = r;
        cin.carry = prefix ? prefix[v] : r.ident(); /* no prefixes: one chunk, from the identity */
        for (int64_t t0 = lo; t0 < hi; t0 += TILE) {
            int valid = hi - t0 < TILE ? (int)(hi - t0) : TILE;
            T raw[IPT];
            typename CT::Load(tmp.load).Load(in + t0, raw, valid, T());
            __syncthreads();
            S x[IPT], e[IPT];
#pragma unroll
            for (int j = 0; j < IPT; j++)
                x[j] = (int)threadIdx.x * IPT + j < valid ? r.lift(raw[j]) : r.ident();
            typename CT::Scan(tmp.scan).ExclusiveScan(x, e, r, cin);
            __syncthreads();
#pragma unroll
            for (int j = 0; j < IPT; j++)
                raw[j] = r.fin(incl ? r(e[j], x[j]) : e[j]);
            typename CT::Store(tmp.store).Store(out + t0, raw, valid);
            __syncthreads();
        }
        __syncthreads(); /* s_lo and s_hi read by all before thread 0 sets the next chunk's */
    }
}

__global__ void k_chunk_counts(VkSegs sg, int64_t c, int32_t *cnt)
{
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < sg.m;
         k += (int64_t)gridDim.x * blockDim.x)
        cnt[k] = (int32_t)((sg.length(k) + c - 1) / c);
}

/* ---- Dispatch ---- */

/* An Int or Bool operator (a Bool's operands read as 0/1). */
VkIntRule int_rule(VsRop rop)
{
    VkIntRule r;
    r.rop = rop;
    r.norm = vs_rop_elem(rop) == VS_BOOL;
    r.id = vs_rop_iident(rop);
    return r;
}

template <class R>
int run(const R &r, const typename R::T *in, VkSegs sg, typename R::T *out, int scan, int incl,
        int exact_seq);

int run_int_scan(VkIntRule r, const int32_t *in, int64_t n, int32_t *out, int incl)
{
    VkSegs sg = { nullptr, nullptr, 1, n, n };
    return run(r, in, sg, out, 1, incl, 0);
}

template <class R>
int run(const R &r, const typename R::T *in, VkSegs sg, typename R::T *out, int scan, int incl,
        int exact_seq)
{
    typedef typename R::S S;
    if (sg.m <= 0)
        return 0;
    int64_t n = sg.n > 0 ? sg.n : 0;
    VkStrategy st = vk_opt_strategy();
    if (exact_seq)
        st = VK_STRAT_THREAD;
    if (st == VK_STRAT_AUTO) {
        VkSegPlan pl = vk_seg_plan(n, sg.m, sg.len ? sg.longest : n, 0);
        st = pl == VK_PLAN_THREAD ? VK_STRAT_THREAD : pl == VK_PLAN_WARP ? VK_STRAT_WARP : VK_STRAT_CHUNK;
    }
    if (st == VK_STRAT_THREAD) {
        k_thread_seg<R><<<vk_grid(sg.m, TB), TB>>>(r, in, sg, out, scan, incl);
        VK_LAUNCHED();
        return 0;
    }
    if (st == VK_STRAT_WARP) {
        k_warp_seg<R><<<vk_grid(sg.m, WARPS), TB>>>(r, in, sg, out, scan, incl);
        VK_LAUNCHED();
        return 0;
    }
    /* CHUNK */
    const int64_t TILE = ChunkTypes<R>::TILE;
    if (scan && !sg.len && sg.m == 1 && n <= VK_SCAN_ONE_BLOCK) { /* one chunk, one block: no partials */
        Chunks one;
        one.cstart = nullptr;
        one.c = (n + TILE - 1) / TILE * TILE;
        k_chunk_scan<R><<<1, TB>>>(r, in, sg, one, nullptr, out, incl);
        VK_LAUNCHED();
        return 0;
    }
    int64_t tiles = (n + TILE - 1) / TILE;
    int64_t target = 4 * (int64_t)vk_sm_count();
    int64_t per = (tiles + target - 1) / target;
    if (per < 1)
        per = 1;
    Chunks ch;
    ch.c = per * TILE;
    ch.cstart = nullptr;
    int64_t bound = (n + ch.c - 1) / ch.c + (sg.len ? sg.m : 0);
    if (bound >= INT32_MAX)
        return vk_fail("too many segments for the chunked strategy (%lld)", (long long)sg.m);
    VkTemp cst, part;
    if (sg.len) {
        if (cst.alloc((size_t)sg.m * sizeof(int32_t)) != 0)
            return -1;
        k_chunk_counts<<<vk_grid(sg.m, TB), TB>>>(sg, ch.c, cst.as<int32_t>());
        VK_LAUNCHED();
        VkIntRule add = int_rule(VS_IADD);
        if (run_int_scan(add, cst.as<int32_t>(), sg.m, cst.as<int32_t>(), 0) != 0)
            return -1;
        ch.cstart = cst.as<int32_t>();
    }
    if (part.alloc((size_t)(bound > 0 ? bound : 1) * sizeof(S)) != 0)
        return -1;
    unsigned grid = vk_grid(bound, 1, 8);
    /* one segment: its partials combined by (1)'s last block */
    int one = !sg.len && sg.m == 1;
    unsigned long long *ew = nullptr;
    unsigned int *done = nullptr;
    if (one && vk_words(&ew, &done) != 0)
        return -1;
    k_chunk_reduce<R><<<grid, TB>>>(r, in, sg, ch, part.as<S>(), one, out, scan, done);
    VK_LAUNCHED();
    if (!one) {
        k_chunk_partials<R><<<vk_grid(sg.m, WARPS), TB>>>(r, sg, ch, part.as<S>(), out, scan);
        VK_LAUNCHED();
    }
    if (scan) {
        k_chunk_scan<R><<<grid, TB>>>(r, in, sg, ch, part.as<S>(), out, incl);
        VK_LAUNCHED();
    }
    return 0;
}

int dispatch(VsRop rop, const void *in, VkSegs sg, void *out, int scan, const char *what)
{
    if (vk_ready() != 0)
        return -1;
    if ((unsigned)rop >= (unsigned)VS_NROPS)
        return vk_fail("%s: operator %d is not a reduction operator", what, (int)rop);
    if (sg.m < 0)
        return vk_fail("%s: negative segment count", what);
    if (rop == VS_FADD || rop == VS_FMUL) {
        VkFltArith r;
        r.mul = rop == VS_FMUL;
        return run(r, (const double *)in, sg, (double *)out, scan, 0, vk_opt_float_exact());
    }
    if (rop == VS_FMAX || rop == VS_FMIN) {
        VkFltMinMax r;
        r.max = rop == VS_FMAX;
        return run(r, (const double *)in, sg, (double *)out, scan, 0, 0);
    }
    return run(int_rule(rop), (const int32_t *)in, sg, (int32_t *)out, scan, 0, 0);
}

__global__ void k_mark_heads(VkSegs sg, int32_t *segid)
{
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < sg.m;
         k += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = sg.start(k);
        if (sg.length(k) > 0 && b >= 0 && b < sg.n)
            segid[b] = (int32_t)k;
    }
}

} // namespace

int vk_seg_ids_internal(const int32_t *len_d, const int64_t *off_d, int64_t m, int64_t n,
                        int32_t *segid_d)
{
    if (n <= 0)
        return 0;
    if (m > INT32_MAX)
        return vk_fail("vk_seg_ids: too many segments (%lld)", (long long)m);
    VK_CLEAR(cudaMemsetAsync(segid_d, 0, (size_t)n * sizeof(int32_t), 0));
    VkSegs sg = { len_d, off_d, m, n, -1 };
    k_mark_heads<<<vk_grid(m, TB), TB>>>(sg, segid_d);
    VK_LAUNCHED();
    return run_int_scan(int_rule(VS_IMAX), segid_d, n, segid_d, 1);
}

extern "C" int vk_seg_ids(const int32_t *len_d, const int64_t *off_d, int64_t m, int64_t n,
                          int32_t *segid_d)
{
    if (vk_ready() != 0)
        return -1;
    return vk_seg_ids_internal(len_d, off_d, m, n, segid_d);
}

extern "C" int vk_reduce(VsRop rop, const void *in_d, int64_t n, void *out_d)
{
    VkSegs sg = { nullptr, nullptr, 1, n > 0 ? n : 0, n > 0 ? n : 0 };
    return dispatch(rop, in_d, sg, out_d, 0, "vk_reduce");
}

extern "C" int vk_scan(VsRop rop, const void *in_d, int64_t n, void *out_d)
{
    if (n <= 0)
        return 0;
    VkSegs sg = { nullptr, nullptr, 1, n, n };
    return dispatch(rop, in_d, sg, out_d, 1, "vk_scan");
}

extern "C" int vk_seg_reduce(VsRop rop, const void *in_d, const int32_t *len_d, const int64_t *off_d, int64_t m,
                             int64_t n, int64_t longest, void *out_d)
{
    if (!len_d || !off_d)
        return vk_fail("vk_seg_reduce: missing segment descriptor");
    VkSegs sg = { len_d, off_d, m, n, longest };
    return dispatch(rop, in_d, sg, out_d, 0, "vk_seg_reduce");
}

extern "C" int vk_seg_scan(VsRop rop, const void *in_d, const int32_t *len_d, const int64_t *off_d, int64_t m,
                           int64_t n, int64_t longest, void *out_d)
{
    if (!len_d || !off_d)
        return vk_fail("vk_seg_scan: missing segment descriptor");
    VkSegs sg = { len_d, off_d, m, n, longest };
    return dispatch(rop, in_d, sg, out_d, 1, "vk_seg_scan");
}

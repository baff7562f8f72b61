/* kernels/vk_map.cu — the device tier's elementwise instructions (one
 * by one, or a chain of them as one kernel), DIST,
 * INDEX and EXTRACT's and REPLACE's positions (kernels.h): grid-stride loops over kernels/vk_elem.h's meaning
 * of an element. The instruction is a kernel argument, the same for every
 * thread, so its switch does not diverge; the loops are bound by memory. */
#include "kernels/vk_internal.cuh"
#include "kernels/vk_elem.h"

#include <cub/block/block_reduce.cuh>

namespace {

const int MAP_BLOCK = 256;

/* Up to three arguments by value (a launch copies them). */
struct Args3 {
    VkArg a[3];
};

__global__ void k_map(int op, int ty, int fmask, int out_f, Args3 args, int nargs, int64_t n, void *out,
                      unsigned long long *fault)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int f = vk_map_at(op, ty, fmask, out_f, args.a, nargs, i, out);
        if (f != VS_OK && fault)
            vk_fault_min(fault, vk_fault_pack(i, f));
    }
}

__global__ void k_dist(int f, VkArg val, const int64_t *off, int64_t m, int64_t n, void *out)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        vk_dist_at(f, &val, off, m, i, out);
}

__global__ void k_index(VkArg start, VkArg stride, const int64_t *off, int64_t m, int64_t n, int32_t *out)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        vk_index_at(&start, &stride, off, m, i, out);
}

__global__ void k_positions(VkArg idx, const int32_t *len, const int64_t *off, int64_t m, int64_t *pos,
                            unsigned long long *fault)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < m; k += step)
        if (vk_position_at(&idx, len, off, k, pos))
            vk_fault_min(fault, vk_fault_pack(k, 1));
}

/* A chain's gathers' record (E.gfault), made by the last block from the
 * library's working word E.gword, which it sets back to all ones. */
__device__ __forceinline__ void expr_record(const VkExpr &e, unsigned int *done)
{
    if (vk_last_block(done)) {
        unsigned long long w = *(volatile unsigned long long *)e.gword;
        *e.gword = ~0ull;
        vk_expr_fault_record(&e, w);
    }
}

/* A thread evaluates a chain at EXPR_U elements together: each node's
 * leaf loads (and a gather's) for all of them are issued before any is
 * used, so that a thread has EXPR_U loads in flight where one element at
 * a time has one: the chains are bound by memory latency, not by their
 * instructions (the interpreted node loop leaves a thread little else to
 * overlap). */
const int EXPR_U = 4;
/* ... for chains of at most UNODES nodes (vk_opt_expr_four_nodes, 16 by
 * default): a thread's nodes' values live in local memory (R below),
 * EXPR_U times as many of them at once, and a larger chain's four
 * elements' would overflow the caches (a 60-node chain, 2 KB a thread);
 * 16 nodes four times take what 64 nodes took once. A larger chain runs
 * one element at a time. */

/* Elements I[u] = I0 + u * STRIDE (u < U) of every node of chain E into
 * R[u] (vk_expr_eval, U elements at once). */
template <int U>
__device__ __forceinline__ void expr_eval_u(const VkExpr *e, int64_t i0, int64_t stride, int64_t *i,
                                            VkCell (*r)[VK_EXPR_NODES])
{
#pragma unroll
    for (int u = 0; u < U; u++)
        i[u] = i0 + u * stride;
    for (int k = 0; k < e->nn; k++) {
        const VkExprNode *nd = &e->node[k];
        int na = vk_expr_nargs(nd);
        VkCell x[U][3];
#pragma unroll
        for (int j = 0; j < 3; j++) {
            int a = j < na ? nd->a[j] : 0;
#pragma unroll
            for (int u = 0; u < U; u++) {
                if (j >= na)
                    x[u][j].f = 0.0;
                else
                    x[u][j] = a >= 0 ? r[u][a] : vk_expr_leaf(e, -1 - a, i[u]);
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++)
            vk_expr_apply(e, nd, x[u], i[u], &r[u][k]);
    }
}

__global__ void __launch_bounds__(MAP_BLOCK, 4) k_expr(const __grid_constant__ VkExpr e, int64_t n, int unodes,
                                                       unsigned int *done)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    VkCell r[EXPR_U][VK_EXPR_NODES];
    for (; e.nn <= unodes && i + (EXPR_U - 1) * step < n; i += EXPR_U * step) {
        int64_t at[EXPR_U];
        expr_eval_u<EXPR_U>(&e, i, step, at, r);
#pragma unroll
        for (int u = 0; u < EXPR_U; u++)
            vk_expr_store(&e, at[u], r[u]);
    }
    for (; i < n; i += step) {
        vk_expr_eval(&e, i, r[0]);
        vk_expr_store(&e, i, r[0]);
    }
    if (e.gfault)
        expr_record(e, done);
}

/* A chain's outputs and a block's partial reduction of node NODE over
 * its CHUNK of the N elements (element order within a thread, a fixed
 * tree across the block's threads). */
template <class T> struct RopCombine {
    int rop;
    __device__ T operator()(const T &a, const T &b) const;
};
template <> __device__ int32_t RopCombine<int32_t>::operator()(const int32_t &a, const int32_t &b) const
{
    return vs_rop_icombine(rop, a, b);
}
template <> __device__ double RopCombine<double>::operator()(const double &a, const double &b) const
{
    return vs_rop_fcombine(rop, a, b);
}

template <class T> __device__ T cell_as(const VkCell &c);
template <> __device__ int32_t cell_as<int32_t>(const VkCell &c) { return c.i; }
template <> __device__ double cell_as<double>(const VkCell &c) { return c.f; }

/* ... and the last block folds the blocks' partials into OUT[0] (a
 * fixed order: each thread's stride in turn, then the block's tree) and
 * makes the gathers' record: one launch in all. */
template <class T>
__global__ void __launch_bounds__(MAP_BLOCK, 4) k_expr_reduce(const __grid_constant__ VkExpr e, int node, int rop, int64_t n, int64_t chunk, T ident,
                              int unodes, T *partial, T *out, unsigned int *done)
{
    typedef cub::BlockReduce<T, MAP_BLOCK> BR;
    __shared__ typename BR::TempStorage tmp;
    RopCombine<T> op{ rop };
    T acc = ident;
    int64_t b0 = (int64_t)blockIdx.x * chunk, b1 = b0 + chunk < n ? b0 + chunk : n;
    int64_t i = b0 + threadIdx.x;
    VkCell r[EXPR_U][VK_EXPR_NODES];
    /* EXPR_U elements at once, combined in the thread's order as one by one */
    for (; e.nn <= unodes && i + (EXPR_U - 1) * MAP_BLOCK < b1; i += EXPR_U * MAP_BLOCK) {
        int64_t at[EXPR_U];
        expr_eval_u<EXPR_U>(&e, i, MAP_BLOCK, at, r);
#pragma unroll
        for (int u = 0; u < EXPR_U; u++) {
            vk_expr_store(&e, at[u], r[u]);
            acc = op(acc, cell_as<T>(r[u][node]));
        }
    }
    for (; i < b1; i += MAP_BLOCK) {
        vk_expr_eval(&e, i, r[0]);
        vk_expr_store(&e, i, r[0]);
        acc = op(acc, cell_as<T>(r[0][node]));
    }
    T tot = BR(tmp).Reduce(acc, op);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = tot;
    if (vk_is_last_block(done)) {
        T all = ident;
        for (int64_t b = threadIdx.x; b < gridDim.x; b += MAP_BLOCK)
            all = op(all, partial[b]);
        all = BR(tmp).Reduce(all, op);
        if (threadIdx.x == 0) {
            *out = all;
            if (e.gfault) {
                unsigned long long w = *(volatile unsigned long long *)e.gword;
                *e.gword = ~0ull;
                vk_expr_fault_record(&e, w);
            }
        }
    }
}

template <class T>
int expr_reduce(const VkExpr *e, int node, VsRop rop, int64_t n, T ident, void *out_d, unsigned int *done)
{
    unsigned grid = vk_grid(n, MAP_BLOCK, 4);
    int64_t chunk = (n + grid - 1) / grid;
    VkTemp part;
    if (part.alloc((size_t)grid * sizeof(T)) != 0)
        return -1;
    unsigned long long *ew;
    if (!done && vk_words(&ew, &done) != 0)
        return -1;
    k_expr_reduce<T><<<grid, MAP_BLOCK>>>(*e, node, (int)rop, n, chunk, ident, vk_opt_expr_four_nodes(),
                                                                part.as<T>(), (T *)out_d, done);
    VK_LAUNCHED();
    return 0;
}

/* A chain with a gather (kernels.h VK_EXPR_GATHER): its working word the
 * library's (all ones between runs), into *W with the count of finished
 * blocks (*DONE); the record is made by the run's last block. With no
 * element to run over, the record says every index was good (a clear). */
int expr_prepare(const VkExpr *e, int64_t n, VkExpr *w, unsigned int **done)
{
    *w = *e;
    *done = nullptr;
    if (!e->gfault)
        return 0;
    if (n >= VK_EXPR_GATHER_MAX)
        return vk_fail("vk_expr: a chain with a gather over %lld elements (fewer than 2^32 - 1)", (long long)n);
    if (vk_words(&w->gword, done) != 0)
        return -1;
    if (n <= 0)
        VK_CLEAR(cudaMemsetAsync(&e->gfault->err, 0xff, sizeof e->gfault->err, 0));
    return 0;
}

int expr_reduce_run(const VkExpr *e, int node, VsRop rop, int64_t n, void *out_d, unsigned int *done);

} // namespace

extern "C" int vk_map(int op, int ty, int fmask, int out_f, const VkArg *args, int nargs, int64_t n, void *out_d,
                      unsigned long long *fault_d)
{
    if (!vk_map_takes(op) || nargs < 1 || nargs > 3)
        return vk_fail("vk_map: instruction %d with %d arguments is not elementwise", op, nargs);
    if (vk_ready() != 0)
        return -1;
    if (n <= 0)
        return 0;
    Args3 a;
    memset(&a, 0, sizeof a);
    for (int k = 0; k < nargs; k++)
        a.a[k] = args[k];
    k_map<<<vk_grid(n, MAP_BLOCK), MAP_BLOCK>>>(op, ty, fmask, out_f, a, nargs, n, out_d, fault_d);
    VK_LAUNCHED();
    return 0;
}

extern "C" int vk_expr(const VkExpr *e, int64_t n)
{
    if (!vk_expr_ok(e))
        return vk_fail("vk_expr: a chain of %d nodes, %d leaves and %d outputs that is not well formed", (int)e->nn,
                       (int)e->nl, (int)e->no);
    if (vk_ready() != 0)
        return -1;
    VkExpr w;
    unsigned int *done;
    if (expr_prepare(e, n, &w, &done) != 0)
        return -1;
    if (n > 0) {
        k_expr<<<vk_grid(n, MAP_BLOCK), MAP_BLOCK>>>(w, n, vk_opt_expr_four_nodes(), done);
        VK_LAUNCHED();
    }
    return 0;
}

extern "C" int vk_expr_reduce(const VkExpr *e, int node, VsRop rop, int64_t n, void *out_d)
{
    if (!vk_expr_ok(e) || node < 0 || node >= e->nn)
        return vk_fail("vk_expr_reduce: a chain of %d nodes, %d leaves and %d outputs, node %d, that is not well "
                       "formed", (int)e->nn, (int)e->nl, (int)e->no, node);
    if ((unsigned)rop >= (unsigned)VS_NROPS)
        return vk_fail("vk_expr_reduce: operator %d is not a reduction operator", (int)rop);
    if (vk_ready() != 0)
        return -1;
    VkExpr w;
    unsigned int *done;
    if (expr_prepare(e, n, &w, &done) != 0)
        return -1;
    return expr_reduce_run(&w, node, rop, n, out_d, done);
}

namespace {
int expr_reduce_run(const VkExpr *e, int node, VsRop rop, int64_t n, void *out_d, unsigned int *done)
{
    int f = vs_rop_elem(rop) == 2;
    if (n <= 0 || !vs_rop_tree_ok(rop) || (f && vk_opt_float_exact())) {
        /* the node's values through a temporary, then vk_reduce's own order */
        VkTemp vals;
        if (vals.alloc((size_t)(n > 0 ? n : 1) * (f ? 8 : 4)) != 0)
            return -1;
        VkExpr w = *e;
        if (w.no >= VK_EXPR_OUTS)
            return vk_fail("vk_expr_reduce: no output left for the reduced node");
        w.out[w.no].d = vals.p;
        w.out[w.no].pos = NULL;
        w.out[w.no].node = node;
        w.out[w.no].f = f;
        w.no++;
        if (n > 0) {
            k_expr<<<vk_grid(n, MAP_BLOCK), MAP_BLOCK>>>(w, n, vk_opt_expr_four_nodes(), done);
            VK_LAUNCHED();
        }
        return vk_reduce(rop, vals.p, n > 0 ? n : 0, out_d);
    }
    return f ? expr_reduce<double>(e, node, rop, n, vs_rop_fident(rop), out_d, done)
             : expr_reduce<int32_t>(e, node, rop, n, vs_rop_iident(rop), out_d, done);
}
} // namespace

extern "C" int vk_dist(size_t esize, const VkArg *val, const int64_t *off_d, int64_t m, int64_t n, void *out_d)
{
    if (esize != 4 && esize != 8)
        return vk_fail("vk_dist: element size %zu", esize);
    if (vk_ready() != 0)
        return -1;
    if (n <= 0)
        return 0;
    if (m > 1 && !off_d)
        return vk_fail("vk_dist: %lld segments without offsets", (long long)m);
    k_dist<<<vk_grid(n, MAP_BLOCK), MAP_BLOCK>>>(esize == 8, *val, off_d, m, n, out_d);
    VK_LAUNCHED();
    return 0;
}

extern "C" int vk_index(const VkArg *start, const VkArg *stride, const int64_t *off_d, int64_t m, int64_t n,
                        int32_t *out_d)
{
    if (vk_ready() != 0)
        return -1;
    if (n <= 0)
        return 0;
    if (m > 1 && !off_d)
        return vk_fail("vk_index: %lld segments without offsets", (long long)m);
    k_index<<<vk_grid(n, MAP_BLOCK), MAP_BLOCK>>>(*start, *stride, off_d, m, n, out_d);
    VK_LAUNCHED();
    return 0;
}

extern "C" int vk_seg_positions(const VkArg *idx, const int32_t *len_d, const int64_t *off_d, int64_t m, int64_t *pos_d,
                                unsigned long long *fault_d)
{
    if (vk_ready() != 0)
        return -1;
    if (m <= 0)
        return 0;
    if (!len_d || !off_d || !fault_d)
        return vk_fail("vk_seg_positions: %lld segments without lengths, offsets or a fault record", (long long)m);
    k_positions<<<vk_grid(m, MAP_BLOCK), MAP_BLOCK>>>(*idx, len_d, off_d, m, pos_d, fault_d);
    VK_LAUNCHED();
    return 0;
}

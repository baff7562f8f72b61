/* kernels/vk_internal.cuh — shared by the kernels/ sources (not part of
 * the API): errors, device properties, temporary buffers, segment access,
 * and the combine rules of the scans and reductions. */
#ifndef KERNELS_VK_INTERNAL_CUH
#define KERNELS_VK_INTERNAL_CUH

#include "kernels/kernels.h"
#include "kernels/vk_count.h"

#include <cuda_runtime.h>
#include <stdint.h>

/* ---- Errors (vk_core.cu) ---- */

/* Set the message (printf-style) and return -1. */
int vk_fail(const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 1, 2)))
#endif
    ;
int vk_cuda_fail(cudaError_t e, const char *what, const char *file, int line);

#define VK_CUDA(call)                                                         \
    do {                                                                      \
        cudaError_t vk_e_ = (call);                                           \
        if (vk_e_ != cudaSuccess)                                             \
            return vk_cuda_fail(vk_e_, #call, __FILE__, __LINE__);            \
    } while (0)
/* What the primitives queued (vk_queued, kernels/vk_count.h): kernels,
 * and copies and clears on the device. */
extern long long vk_q_kernels, vk_q_copies;
/* After a kernel launch. */
#define VK_LAUNCHED()                                                         \
    do {                                                                      \
        vk_q_kernels++;                                                       \
        VK_CUDA(cudaGetLastError());                                          \
    } while (0)
/* A clear or copy on the device queued by a primitive (CALL). */
#define VK_CLEAR(call)                                                        \
    do {                                                                      \
        vk_q_copies++;                                                        \
        VK_CUDA(call);                                                        \
    } while (0)
/* A CUB algorithm's run (CALL) that queues K kernels and C clears
 * (kernels/vk_count.h says how many). */
#define VK_CUB(call, k, c)                                                    \
    do {                                                                      \
        VK_CUDA(call);                                                        \
        vk_q_kernels += (k);                                                  \
        vk_q_copies += (c);                                                   \
    } while (0)

/* The library's two words (vk_core.cu, made once): an error word, all
 * ones between calls (the kernel that reads it sets it back), and a count
 * of finished blocks, 0 between kernels (vk_last_block sets it back).
 * 0 or -1. */
int vk_words(unsigned long long **err, unsigned int **done);
/* The library's collision word (the one-pass scatter, vk_permute.cu): 0
 * between kernels. 0 or -1. */
int vk_collide_word(unsigned int **collide);

/* At the end of a kernel, reached by every thread of every block: true in
 * every thread of the block that finishes last, when every block's
 * writes and atomics are visible to it (CUDA's threadfence pattern); the
 * count set back for the next kernel. A kernel's epilogue (a record made
 * from the error word, partials folded) without a launch of its own. */
__device__ __forceinline__ bool vk_is_last_block(unsigned int *done)
{
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int t = atomicAdd(done, 1u);
        last = t == gridDim.x - 1;
        if (last) {
            __threadfence();
            atomicExch(done, 0u);
        }
    }
    __syncthreads();
    return last;
}

/* The same, true only in thread 0 of that block (a one-thread epilogue). */
__device__ __forceinline__ bool vk_last_block(unsigned int *done) { return vk_is_last_block(done) && threadIdx.x == 0; }

/* The scatter's kept stamps freed (vk_permute.cu; vk_pool_trim calls it). */
void vk_permute_release(void);

/* Make sure a device is selected and its properties known; 0 or -1. */
int vk_ready(void);
/* Streaming multiprocessors of the current device (after vk_ready). */
int vk_sm_count(void);
/* Options (vk_core.cu). */
int vk_opt_float_exact(void);
/* vk_set_expr_four_nodes: the chains a thread evaluates four elements of
 * at once have at most this many nodes (VK_EXPR_FOUR_NODES by default). */
#define VK_EXPR_FOUR_NODES 16
int vk_opt_expr_four_nodes(void);
VkStrategy vk_opt_strategy(void);

/* A pool block freed when it goes out of scope (the single ordered stream
 * makes the reuse safe, see kernels.h). */
struct VkTemp {
    void *p = nullptr;
    VkTemp() = default;
    VkTemp(const VkTemp &) = delete;
    VkTemp &operator=(const VkTemp &) = delete;
    ~VkTemp() { vk_free(p); }
    /* 0 or -1 (message set). */
    int alloc(size_t bytes)
    {
        vk_free(p);
        p = vk_alloc(bytes);
        return p ? 0 : -1;
    }
    template <class T> T *as() const { return static_cast<T *>(p); }
};

/* Grid size for a grid-stride loop over ITEMS with BLOCK threads. */
static inline unsigned vk_grid(int64_t items, int block, int per_sm = 16)
{
    int64_t g = (items + block - 1) / block;
    int64_t cap = (int64_t)vk_sm_count() * per_sm;
    if (g > cap)
        g = cap;
    if (g < 1)
        g = 1;
    return (unsigned)g;
}

/* ---- Segments ---- */

/* A segment descriptor seen from the device: len == NULL means one segment
 * of n elements at offset 0. Lengths <= 0 are empty. */
struct VkSegs {
    const int32_t *len;
    const int64_t *off;
    int64_t m;
    int64_t n;
    int64_t longest;    /* the longest segment, -1: unknown (the strategy, seg_plan.h) */
    __device__ __forceinline__ int64_t length(int64_t k) const
    {
        if (!len)
            return n;
        int32_t l = len[k];
        return l > 0 ? l : 0;
    }
    __device__ __forceinline__ int64_t start(int64_t k) const { return off ? off[k] : 0; }
};

/* Internal entry (vk_scan.cu): segment ids, for rank and the permutes. */
int vk_seg_ids_internal(const int32_t *len_d, const int64_t *off_d, int64_t m, int64_t n,
                        int32_t *segid_d);

/* ---- Combine rules ----
 * Each rule is a class with
 *   T            the element type (int32_t or double);
 *   S            the scan state: an associative (not necessarily
 *                commutative) monoid;
 *   lift(x)      the state of one element;
 *   ident()      the monoid identity;
 *   operator()   combine(a, b), a before b;
 *   fin(s)       the result of folding the reference rule from its identity
 *                over the elements summarised by s;
 *   seq_init()   the reference identity, and step(acc, x) the reference
 *                rule itself (used by the strictly sequential strategy).
 * A parallel scan combines lifted states in order; fin() maps a prefix to
 * the reference result. */

/* Int and Bool: the state is the value (every Int rule is a monoid with
 * its identity; Bool inputs are normalised to 0/1 first). */
struct VkIntRule {
    typedef int32_t T;
    typedef int32_t S;
    int rop;    /* vcode/semantics.h's operator */
    int32_t id; /* identity */
    int norm;   /* Bool: read x != 0 */
    __device__ __forceinline__ S lift(T x) const { return norm ? (x != 0) : x; }
    __device__ __forceinline__ S ident() const { return id; }
    __device__ __forceinline__ S operator()(S a, S b) const { return vs_rop_icombine(rop, a, b); }
    __device__ __forceinline__ T fin(S s) const { return s; }
    __device__ __forceinline__ T seq_init() const { return id; }
    __device__ __forceinline__ T step(T acc, T x) const { return (*this)(acc, lift(x)); }
};

/* Float ADD / MUL: the state is the partial sum (product); the monoid
 * identity is -0.0 (x + -0.0 == x for every x) or 1.0; the reference starts
 * from +0.0, which fin() applies. Not bit-exact against the sequential
 * rule except through step(). */
struct VkFltArith {
    typedef double T;
    typedef double S;
    int mul;
    __device__ __forceinline__ S lift(T x) const { return x; }
    __device__ __forceinline__ S ident() const { return mul ? 1.0 : -0.0; }
    __device__ __forceinline__ S operator()(S a, S b) const { return mul ? a * b : a + b; }
    __device__ __forceinline__ T fin(S s) const { return vs_rop_fcombine(mul ? VS_FMUL : VS_FADD, seq_init(), s); }
    __device__ __forceinline__ T seq_init() const { return vs_rop_fident(mul ? VS_FMUL : VS_FADD); }
    __device__ __forceinline__ T step(T acc, T x) const { return vs_rop_fcombine(mul ? VS_FMUL : VS_FADD, acc, x); }
};

/* Float MAX / MIN, exactly. The reference step f_x(acc) = acc > x ? acc : x
 * (MAX; MIN with <) is not associative as a value operation with NaNs and
 * signed zeros, but compositions of steps are functions of the form
 *     g(acc) = acc > t ? acc : c      (c numerically equal to t), or
 *     g(acc) = c                      (constant: a NaN was seen),
 * closed under composition: for g1 then g2, both non-constant,
 * t = max(t1, t2) and c = c1 > c2 ? c1 : c2; if g2 is constant the result
 * is g2; if only g1 is, the result is the constant g2(c1). So the state is
 * (v, f) with f = 0 (non-constant, t == c == v), 1 (constant v), or
 * 2 (the identity function); fin() applies the state to the identity
 * ±(double)1.0e36f. */
struct VkMinMaxState {
    double v;
    int f;
};

struct VkFltMinMax {
    typedef double T;
    typedef VkMinMaxState S;
    int max;
    __device__ __forceinline__ bool better(double a, double b) const { return max ? a > b : a < b; }
    __device__ __forceinline__ S lift(T x) const
    {
        S s;
        s.v = x;
        s.f = x != x ? 1 : 0;
        return s;
    }
    __device__ __forceinline__ S ident() const
    {
        S s;
        s.v = 0.0;
        s.f = 2;
        return s;
    }
    __device__ __forceinline__ S operator()(S a, S b) const
    {
        if (b.f == 2)
            return a;
        if (a.f == 2 || b.f == 1)
            return b;
        S r;
        r.v = better(a.v, b.v) ? a.v : b.v;
        r.f = a.f;
        return r;
    }
    __device__ __forceinline__ T seq_init() const
    {
        return vs_rop_fident(max ? VS_FMAX : VS_FMIN);
    }
    __device__ __forceinline__ T fin(S s) const
    {
        if (s.f == 2)
            return seq_init();
        if (s.f == 1)
            return s.v;
        double id = seq_init();
        return better(id, s.v) ? id : s.v;
    }
    __device__ __forceinline__ T step(T acc, T x) const { return better(acc, x) ? acc : x; }
};

#endif

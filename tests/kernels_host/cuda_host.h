/* tests/kernels_host/cuda_host.h — what the kernels/ sources use of CUDA, CUB and
 * Thrust, for running the library's own kernels on the host (no GPU): the
 * sources are rewritten by tests/kernels_host/host_cu.py (a launch becomes
 * vkh_launch, the CUDA includes this header) and compiled by g++.
 *
 * A launch runs its grid at once, block after block; a block's threads are
 * fibers (host_grid.cc) that meet at __syncthreads (every thread of the
 * block) and at warp collectives and __syncwarp (the 32 lanes of a warp).
 * A barrier some threads never reach is a failed launch (the next
 * cudaGetLastError says so), as a divergent barrier is undefined on a GPU.
 * Device memory is host memory; atomics are plain (one fiber runs at a
 * time and switches only at a barrier). __shared__ variables are static:
 * blocks run one at a time.
 *
 * CUB's block and warp collectives are written here by their documented
 * meaning (a blocked arrangement; the combination in element order, the
 * result where CUB defines it), with the barriers they need; the device-
 * wide algorithms (scan, select, radix sort) run sequentially on the host.
 * Float sums are therefore combined in another order than on a GPU: these
 * runs check the kernels' logic (indexing, barriers, the last-block
 * records, the stamps), not their last bits. */
#ifndef TESTS_KERNELS_HOST_CUDA_HOST_H
#define TESTS_KERNELS_HOST_CUDA_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <vector>

/* ---- qualifiers ---- */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __grid_constant__

/* ---- runtime ---- */
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorLaunchFailure = 719, cudaErrorMemoryAllocation = 2 };
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice,
                      cudaMemcpyDefault };
typedef void *cudaStream_t;
typedef struct VkhEvent *cudaEvent_t;
struct cudaDeviceProp {
    char name[256];
    int multiProcessorCount;
};

cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaGetLastError(void);
const char *cudaGetErrorName(cudaError_t e);
const char *cudaGetErrorString(cudaError_t e);
cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaMallocHost(void **p, size_t bytes);
template <class T> cudaError_t cudaMalloc(T **p, size_t bytes) { return cudaMalloc((void **)p, bytes); }
cudaError_t cudaFree(void *p);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s = 0);
cudaError_t cudaMemset(void *p, int v, size_t bytes);
cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s = 0);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b);
cudaError_t cudaEventDestroy(cudaEvent_t e);

/* kernels/vk_core.cu's pool hands out and takes back a block of CLS bytes
 * for BYTES: under AddressSanitizer the rest of the block is poisoned, so
 * that a kernel reading or writing past what was asked is reported (a
 * GPU's rounded-up block would hide it). */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define VKH_POOL_HANDOUT(p, bytes, cls) ASAN_POISON_MEMORY_REGION((char *)(p) + (bytes), (cls) - (bytes))
#define VKH_POOL_RETURN(p, cls) ASAN_UNPOISON_MEMORY_REGION((p), (cls))
#endif

/* ---- threads ---- */
struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
extern uint3 threadIdx, blockIdx, blockDim, gridDim;

/* Run GRID blocks of BLOCK threads of BODY(ARG) (host_grid.cc). */
void vkh_run(void (*body)(void *), void *arg, unsigned grid, unsigned block);
template <class F> static void vkh_body(void *f) { (*(F *)f)(); }
/* kernel<<<g, b[, shared, stream]>>>(args) as rewritten by host_cu.py */
template <class F> void vkh_launch(F f, dim3 g, dim3 b, size_t shared = 0, cudaStream_t s = 0)
{
    (void)shared;
    (void)s;
    vkh_run(vkh_body<F>, &f, g.x, b.x);
}

/* Barriers: every thread of the block; the 32 lanes of the caller's warp. */
void __syncthreads(void);
void vkh_syncwarp(void);
#define __syncwarp(...) vkh_syncwarp()
static inline void __threadfence(void) {}
/* Scratch for the collectives: the block's (all threads, one collective
 * at a time) and the caller's warp's. */
void *vkh_block_scratch(size_t bytes);
void *vkh_warp_scratch(size_t bytes);

/* ---- atomics and intrinsics (plain: no fiber switches inside) ---- */
static inline unsigned atomicAdd(unsigned *p, unsigned v) { unsigned o = *p; *p = o + v; return o; }
static inline int atomicAdd(int *p, int v) { int o = *p; *p = o + v; return o; }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
    unsigned long long o = *p;
    *p = o + v;
    return o;
}
static inline unsigned atomicExch(unsigned *p, unsigned v) { unsigned o = *p; *p = v; return o; }
static inline unsigned long long atomicExch(unsigned long long *p, unsigned long long v)
{
    unsigned long long o = *p;
    *p = v;
    return o;
}
template <class T> static inline T atomicMin(T *p, T v) { T o = *p; if (v < o) *p = v; return o; }
template <class T> static inline T atomicMax(T *p, T v) { T o = *p; if (v > o) *p = v; return o; }
template <class T> static inline T atomicCAS(T *p, T cmp, T v) { T o = *p; if (o == cmp) *p = v; return o; }
static inline long long __double_as_longlong(double d)
{
    long long r;
    memcpy(&r, &d, sizeof r);
    return r;
}
static inline double __longlong_as_double(long long v)
{
    double r;
    memcpy(&r, &v, sizeof r);
    return r;
}

/* ---- CUB ---- */
namespace cub {

enum BlockLoadAlgorithm { BLOCK_LOAD_DIRECT, BLOCK_LOAD_WARP_TRANSPOSE };
enum BlockStoreAlgorithm { BLOCK_STORE_DIRECT, BLOCK_STORE_WARP_TRANSPOSE };

/* Each collective's TempStorage is a placeholder (its data is the
 * scratch above); the kernels declare it __shared__ and pass it in. */
struct VkhTemp {
    char unused;
};

/* The warp's lanes exchange X: VAL[lane] for every lane, after a warp
 * barrier; a second barrier before the scratch is used again. */
template <class T> struct WarpSlots {
    T *v;
    int lane;
    explicit WarpSlots(const T &x)
    {
        v = (T *)vkh_warp_scratch(32 * sizeof(T));
        lane = (int)(threadIdx.x % 32);
        v[lane] = x;
        vkh_syncwarp();
    }
    ~WarpSlots() { vkh_syncwarp(); }
};

template <int LANES, class T> T ShuffleUp(T x, int offset, int first, unsigned mask)
{
    (void)mask;
    static_assert(LANES == 32, "whole warps only");
    WarpSlots<T> s(x);
    return s.lane >= first + offset ? s.v[s.lane - offset] : x;
}

template <class T> struct WarpScan {
    typedef VkhTemp TempStorage;
    explicit WarpScan(TempStorage &) {}
    template <class Op> void InclusiveScan(T x, T &inc, Op op, T &agg)
    {
        WarpSlots<T> s(x);
        T a = s.v[0];
        for (int j = 1; j <= s.lane; j++)
            a = op(a, s.v[j]);
        inc = a;
        for (int j = s.lane + 1; j < 32; j++)
            a = op(a, s.v[j]);
        agg = a;
    }
    template <class Op> void InclusiveScan(T x, T &inc, Op op)
    {
        T agg;
        InclusiveScan(x, inc, op, agg);
    }
};

/* A block's items in blocked arrangement: thread t holds items
 * t * IPT .. t * IPT + IPT - 1. */
template <class T, int TB, int IPT, BlockLoadAlgorithm A = BLOCK_LOAD_DIRECT> struct BlockLoad {
    typedef VkhTemp TempStorage;
    explicit BlockLoad(TempStorage &) {}
    template <class It> void Load(It in, T (&items)[IPT], int valid, T oob)
    {
        for (int j = 0; j < IPT; j++) {
            int i = (int)threadIdx.x * IPT + j;
            items[j] = i < valid ? (T)in[i] : oob;
        }
        vkh_syncwarp(); /* a warp collective (its lanes exchange through shared memory) */
    }
    template <class It> void Load(It in, T (&items)[IPT])
    {
        for (int j = 0; j < IPT; j++)
            items[j] = in[(int)threadIdx.x * IPT + j];
        vkh_syncwarp();
    }
};

template <class T, int TB, int IPT, BlockStoreAlgorithm A = BLOCK_STORE_DIRECT> struct BlockStore {
    typedef VkhTemp TempStorage;
    explicit BlockStore(TempStorage &) {}
    template <class It> void Store(It out, T (&items)[IPT], int valid)
    {
        vkh_syncwarp();
        for (int j = 0; j < IPT; j++) {
            int i = (int)threadIdx.x * IPT + j;
            if (i < valid)
                out[i] = items[j];
        }
    }
    template <class It> void Store(It out, T (&items)[IPT])
    {
        vkh_syncwarp();
        for (int j = 0; j < IPT; j++)
            out[(int)threadIdx.x * IPT + j] = items[j];
    }
};

/* The block's threads' values in thread order, in the block's scratch
 * (every thread writes, a barrier, FN(values) runs in thread 0, a
 * barrier); the result is thread 0's. */
template <class T, int TB> struct BlockReduce {
    typedef VkhTemp TempStorage;
    explicit BlockReduce(TempStorage &) {}
    template <class Op> T Reduce(T x, Op op)
    {
        T *v = (T *)vkh_block_scratch(sizeof(T) * blockDim.x);
        v[threadIdx.x] = x;
        __syncthreads();
        T r = x;
        if (threadIdx.x == 0)
            for (unsigned t = 1; t < blockDim.x; t++)
                r = op(r, v[t]);
        __syncthreads();
        return r;
    }
    template <int N, class Op> T Reduce(T (&x)[N], Op op)
    {
        T a = x[0];
        for (int j = 1; j < N; j++)
            a = op(a, x[j]);
        return Reduce(a, op);
    }
    T Sum(T x)
    {
        return Reduce(x, [](const T &a, const T &b) { return a + b; });
    }
};

template <class T, int TB> struct BlockScan {
    typedef VkhTemp TempStorage;
    explicit BlockScan(TempStorage &) {}
    /* Exclusive scan of the block's IPT items a thread, in blocked order,
     * from the prefix PREFIX_OP(block aggregate) returns (called by thread
     * 0; CUB calls it in the first warp and takes lane 0's). */
    template <int IPT, class Op, class P> void ExclusiveScan(T (&x)[IPT], T (&e)[IPT], Op op, P &prefix_op)
    {
        unsigned nt = blockDim.x;
        T *v = (T *)vkh_block_scratch(sizeof(T) * nt * IPT);
        for (int j = 0; j < IPT; j++)
            v[threadIdx.x * IPT + j] = x[j];
        __syncthreads();
        if (threadIdx.x == 0) {
            T agg = v[0];
            for (unsigned i = 1; i < nt * IPT; i++)
                agg = op(agg, v[i]);
            T acc = prefix_op(agg);
            for (unsigned i = 0; i < nt * IPT; i++) {
                T xi = v[i];
                v[i] = acc;
                acc = op(acc, xi);
            }
        }
        __syncthreads();
        for (int j = 0; j < IPT; j++)
            e[j] = v[threadIdx.x * IPT + j];
        __syncthreads();
    }
};

/* Device-wide algorithms: run at once, in order, on the host. A call with
 * no temporary storage asks its size. */
struct DeviceScan {
    template <class In, class Out, class Op, class N>
    static cudaError_t InclusiveScan(void *tmp, size_t &bytes, In in, Out out, Op op, N n, cudaStream_t = 0)
    {
        if (!tmp) {
            bytes = 16;
            return cudaSuccess;
        }
        if (n <= 0)
            return cudaSuccess;
        auto acc = in[0];
        out[0] = acc;
        for (N i = 1; i < n; i++) {
            acc = op(acc, in[i]);
            out[i] = acc;
        }
        return cudaSuccess;
    }
    template <class In, class Out, class Op, class I, class N>
    static cudaError_t ExclusiveScan(void *tmp, size_t &bytes, In in, Out out, Op op, I init, N n,
                                     cudaStream_t = 0)
    {
        if (!tmp) {
            bytes = 16;
            return cudaSuccess;
        }
        I acc = init;
        for (N i = 0; i < n; i++) {
            I x = in[i];
            out[i] = acc;
            acc = op(acc, x);
        }
        return cudaSuccess;
    }
};

struct DeviceSelect {
    template <class In, class F, class Out, class C, class N>
    static cudaError_t Flagged(void *tmp, size_t &bytes, In in, F flags, Out out, C count, N n, cudaStream_t = 0)
    {
        if (!tmp) {
            bytes = 16;
            return cudaSuccess;
        }
        N k = 0;
        for (N i = 0; i < n; i++)
            if (flags[i])
                out[k++] = in[i];
        *count = k;
        return cudaSuccess;
    }
};

struct DeviceRadixSort {
    /* Stable, by the key bits [BEGIN, END). */
    template <class K, class V, class N>
    static cudaError_t SortPairs(void *tmp, size_t &bytes, const K *kin, K *kout, const V *vin, V *vout, N n,
                                 int begin = 0, int end = (int)sizeof(K) * 8, cudaStream_t = 0)
    {
        if (!tmp) {
            bytes = 16;
            return cudaSuccess;
        }
        int w = end - begin;
        K mask = w >= (int)sizeof(K) * 8 ? (K)~(K)0 : (K)(((K)1 << w) - 1);
        std::vector<N> ord((size_t)(n > 0 ? n : 0));
        for (N i = 0; i < n; i++)
            ord[(size_t)i] = i;
        std::stable_sort(ord.begin(), ord.end(),
                         [&](N a, N b) { return ((kin[a] >> begin) & mask) < ((kin[b] >> begin) & mask); });
        std::vector<K> k2((size_t)(n > 0 ? n : 0));
        std::vector<V> v2((size_t)(n > 0 ? n : 0));
        for (N i = 0; i < n; i++) {
            k2[(size_t)i] = kin[ord[(size_t)i]];
            v2[(size_t)i] = vin[ord[(size_t)i]];
        }
        std::copy(k2.begin(), k2.end(), kout);
        std::copy(v2.begin(), v2.end(), vout);
        return cudaSuccess;
    }
};

} // namespace cub

/* ---- Thrust's iterators (what vk_core.cu uses) ---- */
namespace thrust {

template <class Base, class F> struct transform_iterator {
    Base b;
    F f;
    auto operator[](ptrdiff_t i) const -> decltype(f(b[i])) { return f(b[i]); }
};
template <class Base, class F> transform_iterator<Base, F> make_transform_iterator(Base b, F f)
{
    return transform_iterator<Base, F>{ b, f };
}

template <class F> struct tabulate_output_iterator {
    F f;
    struct Ref {
        const F &f;
        ptrdiff_t i;
        template <class V> Ref &operator=(const V &v)
        {
            f(i, v);
            return *this;
        }
    };
    Ref operator[](ptrdiff_t i) const { return Ref{ f, i }; }
};
template <class F> tabulate_output_iterator<F> make_tabulate_output_iterator(F f)
{
    return tabulate_output_iterator<F>{ f };
}

} // namespace thrust

#endif

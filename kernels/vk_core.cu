/* kernels/vk_core.cu — device selection, errors, the caching memory pool,
 * copies, options, segment offsets. */
#include "kernels/vk_internal.cuh"

#include <cub/block/block_scan.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/tabulate_output_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <limits.h>
#include <mutex>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unordered_map>
#include <vector>

/* ---- Errors ---- */

static thread_local char err_msg[512];

int vk_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
    va_end(ap);
    return -1;
}

int vk_cuda_fail(cudaError_t e, const char *what, const char *file, int line)
{
    (void)cudaGetLastError(); /* clear a non-sticky error */
    return vk_fail("CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(e),
                   cudaGetErrorString(e), what, file, line);
}

extern "C" const char *vk_last_error(void) { return err_msg; }

/* ---- Device ---- */

static struct {
    int ready;
    int device;
    int sms;
    char name[256];
} dev;

extern "C" int vk_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

static int query(int device)
{
    cudaDeviceProp p;
    VK_CUDA(cudaGetDeviceProperties(&p, device));
    dev.device = device;
    dev.sms = p.multiProcessorCount > 0 ? p.multiProcessorCount : 1;
    snprintf(dev.name, sizeof dev.name, "%s", p.name);
    dev.ready = 1;
    return 0;
}

extern "C" int vk_init(int device)
{
    if (vk_device_count() <= 0)
        return vk_fail("no CUDA device");
    VK_CUDA(cudaSetDevice(device));
    VK_CUDA(cudaFree(0)); /* create the context now */
    return query(device);
}

int vk_ready(void)
{
    if (dev.ready)
        return 0;
    if (vk_device_count() <= 0)
        return vk_fail("no CUDA device");
    int d = 0;
    VK_CUDA(cudaGetDevice(&d));
    return query(d);
}

int vk_sm_count(void) { return dev.ready ? dev.sms : 1; }

extern "C" const char *vk_device_name(void) { return dev.ready ? dev.name : ""; }

extern "C" int vk_sync(void)
{
    VK_CUDA(cudaDeviceSynchronize());
    return 0;
}

/* ---- Options ---- */

long long vk_q_kernels, vk_q_copies;

static unsigned long long *err_word_d;
static unsigned int *done_word_d;

int vk_words(unsigned long long **err, unsigned int **done)
{
    if (!err_word_d) {
        if (vk_ready() != 0)
            return -1;
        void *p = nullptr;
        VK_CUDA(cudaMalloc(&p, 16));
        VK_CUDA(cudaMemset(p, 0, 16)); /* the count 0 */
        VK_CUDA(cudaMemset(p, 0xff, 8)); /* the error word all ones */
        err_word_d = (unsigned long long *)p;
        done_word_d = (unsigned int *)((char *)p + 8);
    }
    *err = err_word_d;
    *done = done_word_d;
    return 0;
}

int vk_collide_word(unsigned int **collide)
{
    unsigned long long *e;
    unsigned int *done;
    if (vk_words(&e, &done) != 0)
        return -1;
    *collide = done + 1; /* the words' last four bytes, 0 from the start */
    return 0;
}

extern "C" void vk_queued(int64_t *kernels, int64_t *copies)
{
    *kernels = vk_q_kernels;
    *copies = vk_q_copies;
}

static int opt_exact;
static VkStrategy opt_strategy = VK_STRAT_AUTO;
static int opt_four_nodes = VK_EXPR_FOUR_NODES;

extern "C" void vk_set_float_exact(int on) { opt_exact = on != 0; }
extern "C" void vk_set_expr_four_nodes(int n) { opt_four_nodes = n < 0 ? 0 : n; }
int vk_opt_expr_four_nodes(void) { return opt_four_nodes; }
extern "C" void vk_set_strategy(VkStrategy s) { opt_strategy = s; }
int vk_opt_float_exact(void) { return opt_exact; }
VkStrategy vk_opt_strategy(void) { return opt_strategy; }

/* ---- Pool ----
 * Size classes: 256 bytes, then 4 per power of two (5/4, 6/4, 7/4, 8/4 of
 * the power below), so a block is at most 25% larger than asked. Free
 * blocks wait in a list per class; `live` maps each handed-out pointer to
 * its class so vk_free needs no size. */

static std::mutex pool_mu;
static std::unordered_map<void *, size_t> pool_live;
static std::unordered_map<size_t, std::vector<void *>> pool_free;
static size_t pool_in_use, pool_cached;

static size_t size_class(size_t b)
{
    if (b <= 256)
        return 256;
    int e = 63 - __builtin_clzll((unsigned long long)(b - 1)); /* 2^e <= b-1 */
    size_t step = ((size_t)1 << e) / 4;
    return (b + step - 1) / step * step;
}

static void trim_locked(void)
{
    for (auto &kv : pool_free)
        for (void *p : kv.second)
            cudaFree(p);
    pool_free.clear();
    pool_cached = 0;
}

extern "C" void *vk_alloc(size_t bytes)
{
    if (vk_ready() != 0)
        return nullptr;
    size_t c = size_class(bytes);
    std::lock_guard<std::mutex> lock(pool_mu);
    void *p = nullptr;
    auto it = pool_free.find(c);
    if (it != pool_free.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
        pool_cached -= c;
    } else {
        cudaError_t e = cudaMalloc(&p, c);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            trim_locked();
            e = cudaMalloc(&p, c);
        }
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            vk_fail("out of device memory allocating %zu bytes (%s)", bytes, cudaGetErrorString(e));
            return nullptr;
        }
    }
    pool_live[p] = c;
#ifdef VKH_POOL_HANDOUT /* the host's stand-in for a device (tests/kernels_host): past BYTES is off limits */
    VKH_POOL_HANDOUT(p, bytes, c);
#endif
    pool_in_use += c;
    return p;
}

extern "C" void vk_free(void *p)
{
    if (!p)
        return;
    std::lock_guard<std::mutex> lock(pool_mu);
    auto it = pool_live.find(p);
    if (it == pool_live.end()) {
        vk_fail("vk_free of a pointer the pool did not hand out");
        return;
    }
    size_t c = it->second;
    pool_live.erase(it);
#ifdef VKH_POOL_HANDOUT
    VKH_POOL_RETURN(p, c);
#endif
    pool_in_use -= c;
    pool_free[c].push_back(p);
    pool_cached += c;
}

extern "C" void vk_pool_trim(void)
{
    vk_permute_release();
    std::lock_guard<std::mutex> lock(pool_mu);
    trim_locked();
}

extern "C" void vk_pool_stats(size_t *in_use, size_t *cached)
{
    std::lock_guard<std::mutex> lock(pool_mu);
    if (in_use)
        *in_use = pool_in_use;
    if (cached)
        *cached = pool_cached;
}

/* ---- Copies ---- */

extern "C" int vk_memcpy_h2d(void *dst_d, const void *src, size_t bytes)
{
    if (bytes == 0)
        return 0;
    VK_CUDA(cudaMemcpy(dst_d, src, bytes, cudaMemcpyHostToDevice));
    return 0;
}

/* The staging ring of vk_memcpy_h2d_staged: pinned, STAGE_BYTES; what lies
 * before stage_pos may still be in flight until the stream is drained
 * (a waiting copy, or the ring's own synchronize when it is full). */
namespace {
constexpr size_t STAGE_BYTES = 1 << 20;
std::mutex stage_mu;
char *stage_buf;
size_t stage_pos;
} // namespace

extern "C" int vk_memcpy_h2d_staged(void *dst_d, const void *src, size_t bytes)
{
    if (bytes == 0)
        return 0;
    std::lock_guard<std::mutex> lock(stage_mu);
    if (!stage_buf && cudaMallocHost((void **)&stage_buf, STAGE_BYTES) != cudaSuccess) {
        (void)cudaGetLastError();
        stage_buf = nullptr;
    }
    if (!stage_buf || bytes > STAGE_BYTES) {
        VK_CUDA(cudaMemcpy(dst_d, src, bytes, cudaMemcpyHostToDevice));
        return 0;
    }
    size_t at = (stage_pos + 15) & ~(size_t)15;
    if (at + bytes > STAGE_BYTES) {
        VK_CUDA(cudaStreamSynchronize(0)); /* every staged copy has landed */
        at = 0;
    }
    memcpy(stage_buf + at, src, bytes);
    VK_CUDA(cudaMemcpyAsync(dst_d, stage_buf + at, bytes, cudaMemcpyHostToDevice, 0));
    stage_pos = at + bytes;
    return 0;
}

/* The pinned buffer the reads back go through (the driver reads into
 * pinned memory with less delay than into pageable memory, which it
 * stages), grown by doubling from BACK_SMALL to hold the largest batch,
 * up to BACK_MAX. */
namespace {
constexpr size_t BACK_MAX = 16 << 20;
/* a single read back of at most this many bytes goes through it too (the
 * waits for a reduction's sum or a descriptor's shape) */
constexpr size_t BACK_SMALL = 64 << 10;
std::mutex back_mu;
char *back_buf;
size_t back_cap;

/* The N pieces read back through the pinned buffer, one wait: 1, or 0
 * (nothing read) when the buffer cannot hold them. */
int read_pinned(int n, void *const *dst, const void *const *src_d, const size_t *bytes, int *rc)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += (bytes[i] + 15) & ~(size_t)15;
    std::lock_guard<std::mutex> lock(back_mu);
    if (total > back_cap && total <= BACK_MAX) {
        /* at least BACK_SMALL, else twice as large: few reallocations
         * (each a pinned allocation, slow) */
        size_t cap = back_cap ? 2 * back_cap : BACK_SMALL;
        while (cap < total)
            cap *= 2;
        if (cap > BACK_MAX)
            cap = BACK_MAX;
        if (back_buf)
            (void)cudaFreeHost(back_buf);
        back_buf = nullptr;
        back_cap = 0;
        if (cudaMallocHost((void **)&back_buf, cap) == cudaSuccess)
            back_cap = cap;
        else
            (void)cudaGetLastError();
    }
    if (total > back_cap)
        return 0;
    *rc = 0;
    size_t at = 0;
    cudaError_t e;
    for (int i = 0; i < n; i++) {
        if (bytes[i] &&
            (e = cudaMemcpyAsync(back_buf + at, src_d[i], bytes[i], cudaMemcpyDeviceToHost, 0)) != cudaSuccess) {
            *rc = vk_cuda_fail(e, "cudaMemcpyAsync (a read back)", __FILE__, __LINE__);
            return 1;
        }
        at += (bytes[i] + 15) & ~(size_t)15;
    }
    if ((e = cudaStreamSynchronize(0)) != cudaSuccess) {
        *rc = vk_cuda_fail(e, "cudaStreamSynchronize (a read back)", __FILE__, __LINE__);
        return 1;
    }
    at = 0;
    for (int i = 0; i < n; i++) {
        memcpy(dst[i], back_buf + at, bytes[i]);
        at += (bytes[i] + 15) & ~(size_t)15;
    }
    return 1;
}

/* The stream is drained up to here: the staging ring is free again. */
void stage_drained()
{
    std::lock_guard<std::mutex> lock(stage_mu);
    stage_pos = 0;
}
} // namespace

extern "C" int vk_memcpy_d2h(void *dst, const void *src_d, size_t bytes)
{
    if (bytes == 0)
        return 0;
    int rc;
    if (bytes <= BACK_SMALL && read_pinned(1, &dst, &src_d, &bytes, &rc)) {
        if (rc == 0)
            stage_drained();
        return rc;
    }
    VK_CUDA(cudaMemcpy(dst, src_d, bytes, cudaMemcpyDeviceToHost));
    stage_drained();
    return 0;
}

extern "C" int vk_memcpy_d2h_many(int n, void *const *dst, const void *const *src_d, const size_t *bytes)
{
    int rc;
    if (read_pinned(n, dst, src_d, bytes, &rc)) {
        if (rc == 0)
            stage_drained();
        return rc;
    }
    for (int i = 0; i < n; i++) /* too large for the buffer, or none to be had: one by one */
        if ((rc = vk_memcpy_d2h(dst[i], src_d[i], bytes[i])) != 0)
            return rc;
    return 0;
}

extern "C" int vk_memcpy_d2d(void *dst_d, const void *src_d, size_t bytes)
{
    if (bytes == 0)
        return 0;
    VK_CUDA(cudaMemcpyAsync(dst_d, src_d, bytes, cudaMemcpyDeviceToDevice, 0));
    return 0;
}

extern "C" int vk_memset0(void *dst_d, size_t bytes)
{
    if (bytes == 0)
        return 0;
    VK_CUDA(cudaMemsetAsync(dst_d, 0, bytes, 0));
    return 0;
}

/* ---- Segment offsets ---- */

namespace {
struct AddI64 {
    __device__ __forceinline__ int64_t operator()(int64_t a, int64_t b) const { return a + b; }
};
struct ShapeOf {
    __host__ __device__ VkShape operator()(int32_t l) const
    {
        VkShape s;
        s.n = l;
        s.lo = s.hi = l;
        return s;
    }
};
struct ShapeJoin {
    __host__ __device__ VkShape operator()(const VkShape &a, const VkShape &b) const
    {
        VkShape s;
        s.n = a.n + b.n;
        s.lo = a.lo < b.lo ? a.lo : b.lo;
        s.hi = a.hi > b.hi ? a.hi : b.hi;
        return s;
    }
};
} // namespace

static __global__ void k_seg_total(const int32_t *len, const int64_t *off, int64_t m,
                                   int64_t *total)
{
    *total = m > 0 ? off[m - 1] + (int64_t)len[m - 1] : 0;
}

/* One scan of the lengths' shapes writes the offsets (off[i + 1] the
 * prefix's sum through segment i, off[0] 0) and the record (the whole
 * prefix's shape) as the scan hands out each position's prefix. */
struct ShapeOut {
    int64_t *off;
    VkShape *rec;
    int64_t m;
    __host__ __device__ void operator()(ptrdiff_t i, VkShape s) const
    {
        if (i == 0)
            off[0] = 0;
        if (i + 1 < m)
            off[i + 1] = s.n;
        else
            *rec = s;
    }
};

namespace {
constexpr int SH_TB = 256, SH_IPT = 8;

/* The tiles' running shape, for BlockScan (its first warp calls it). */
struct ShapeCarry {
    VkShape c;
    __device__ __forceinline__ VkShape operator()(const VkShape &tile)
    {
        VkShape old = c;
        c = ShapeJoin()(c, tile);
        return old;
    }
};
} // namespace

/* vk_seg_shape of up to VK_SHAPE_ONE_BLOCK segments: one block walks them
 * in tiles, the running shape carried from tile to tile. */
static __global__ void __launch_bounds__(SH_TB) k_seg_shape_block(const int32_t *len, int64_t m, int64_t *off,
                                                                   VkShape *rec)
{
    typedef cub::BlockScan<VkShape, SH_TB> Scan;
    __shared__ typename Scan::TempStorage tmp;
    VkShape none;
    none.n = 0;
    none.lo = INT32_MAX;
    none.hi = INT32_MIN;
    ShapeCarry carry;
    carry.c = none;
    ShapeOut out{ off, rec, m };
    for (int64_t t0 = 0; t0 < m; t0 += SH_TB * SH_IPT) {
        VkShape x[SH_IPT], e[SH_IPT];
#pragma unroll
        for (int j = 0; j < SH_IPT; j++) {
            int64_t i = t0 + (int64_t)threadIdx.x * SH_IPT + j;
            x[j] = i < m ? ShapeOf()(len[i]) : none;
        }
        Scan(tmp).ExclusiveScan(x, e, ShapeJoin(), carry);
        __syncthreads();
#pragma unroll
        for (int j = 0; j < SH_IPT; j++) {
            int64_t i = t0 + (int64_t)threadIdx.x * SH_IPT + j;
            if (i < m)
                out(i, ShapeJoin()(e[j], x[j])); /* the shape up to element i, inclusive */
        }
    }
}

extern "C" int vk_seg_shape(const int32_t *len_d, int64_t m, int64_t *off_d, VkShape *rec_d)
{
    if (vk_ready() != 0)
        return -1;
    if (m < 1 || !len_d || !off_d || !rec_d)
        return vk_fail("vk_seg_shape: %lld segments", (long long)m);
    if (m <= VK_SHAPE_ONE_BLOCK) {
        k_seg_shape_block<<<1, SH_TB>>>(len_d, m, off_d, rec_d);
        VK_LAUNCHED();
        return 0;
    }
    auto in = thrust::make_transform_iterator(len_d, ShapeOf());
    auto out = thrust::make_tabulate_output_iterator(ShapeOut{ off_d, rec_d, m });
    size_t bytes = 0;
    VK_CUDA(cub::DeviceScan::InclusiveScan(nullptr, bytes, in, out, ShapeJoin(), m));
    VkTemp tmp;
    if (tmp.alloc(bytes) != 0)
        return -1;
    VK_CUB(cub::DeviceScan::InclusiveScan(tmp.p, bytes, in, out, ShapeJoin(), m), 2, 0);
    return 0;
}

extern "C" int vk_seg_offsets(const int32_t *len_d, int64_t m, int64_t *off_d, int64_t *n_host)
{
    if (vk_ready() != 0)
        return -1;
    if (m < 0)
        return vk_fail("vk_seg_offsets: negative segment count");
    if (m > 0) {
        size_t bytes = 0;
        VK_CUDA(cub::DeviceScan::ExclusiveScan(nullptr, bytes, len_d, off_d, AddI64(), (int64_t)0,
                                               m));
        VkTemp tmp;
        if (tmp.alloc(bytes) != 0)
            return -1;
        VK_CUB(cub::DeviceScan::ExclusiveScan(tmp.p, bytes, len_d, off_d, AddI64(), (int64_t)0, m), 2, 0);
    }
    if (n_host) {
        if (m == 0) {
            *n_host = 0;
            return 0;
        }
        VkTemp t;
        if (t.alloc(sizeof(int64_t)) != 0)
            return -1;
        k_seg_total<<<1, 1>>>(len_d, off_d, m, t.as<int64_t>());
        VK_LAUNCHED();
        VK_CUDA(cudaMemcpy(n_host, t.p, sizeof(int64_t), cudaMemcpyDeviceToHost));
    }
    return 0;
}

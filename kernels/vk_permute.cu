/* kernels/vk_permute.cu — scatter and gather with checked segment-relative
 * indices (vcode/SPEC.md §4.4, runtime/interp/ops_permute.c), and PACK's select.
 *
 * One thread per element; the element's segment comes from vk_seg_ids (a
 * scan) when there are several segments. Errors are reported through one
 * 64-bit word, atomicMin'ed with (position << 1 | kind), so the reported
 * error is the one at the smallest position: the one the sequential
 * runtime would stop at.
 *
 * Scatter collisions: the runtime writes in increasing source position, so
 * the last writer wins. Unless the caller promises unique destinations, a
 * first pass has every source element atomicMax its position + 1 into a
 * winner word per destination (32-bit when positions fit), and the second
 * pass writes only the winners. */
#include "kernels/vk_internal.cuh"

#include <cub/device/device_select.cuh>

#include <limits.h>

namespace {

enum { E_INDEX = 0, E_PARTNER = 1 };

__device__ __forceinline__ void report(unsigned long long *err, int64_t pos, int kind)
{
    atomicMin(err, ((unsigned long long)pos << 1) | (unsigned long long)kind);
}

struct Side {
    const int32_t *len; /* NULL: unsegmented */
    const int64_t *off;
    int64_t m;
    int64_t n; /* data length (the unsegmented length) */
    __device__ __forceinline__ int64_t length(int64_t k) const
    {
        if (!len)
            return n;
        if (k >= m)
            return 0;
        int32_t l = len[k];
        return l > 0 ? l : 0;
    }
    __device__ __forceinline__ int64_t start(int64_t k) const { return len ? off[k] : 0; }
};

/* Destination of source element i, or -1 (skipped or bad, reported). */
__device__ __forceinline__ int64_t scatter_dest(int64_t i, const int32_t *idx,
                                                const int32_t *flags, const int32_t *segid,
                                                const Side &src, const Side &dst,
                                                unsigned long long *err)
{
    int64_t k = segid ? segid[i] : 0;
    if (src.len && k >= dst.m) {
        report(err, i, E_PARTNER);
        return -1;
    }
    if (flags && !flags[i])
        return -1;
    int64_t j = idx[i], dl = dst.length(k);
    if (j < 0 || j >= dl) {
        report(err, i, E_INDEX);
        return -1;
    }
    return dst.start(k) + j;
}

template <class W>
__global__ void k_scatter_claim(int64_t n, const int32_t *idx, const int32_t *flags,
                                const int32_t *segid, Side src, Side dst, W *winner,
                                unsigned long long *err)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t d = scatter_dest(i, idx, flags, segid, src, dst, err);
        if (d >= 0)
            atomicMax(&winner[d], (W)(i + 1));
    }
}

template <class U, class W>
__global__ void k_scatter(const U *in, int64_t n, const int32_t *idx, const int32_t *flags,
                          const int32_t *segid, Side src, Side dst, const W *winner, U *out,
                          unsigned long long *err)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t d;
        if (winner) { /* the claim pass checked and reported */
            int64_t k = segid ? segid[i] : 0;
            if ((src.len && k >= dst.m) || (flags && !flags[i]))
                continue;
            int64_t j = idx[i];
            if (j < 0 || j >= dst.length(k))
                continue;
            d = dst.start(k) + j;
            if (winner[d] != (W)(i + 1))
                continue;
        } else {
            d = scatter_dest(i, idx, flags, segid, src, dst, err);
            if (d < 0)
                continue;
        }
        out[d] = in[i];
    }
}

template <class U>
__global__ void k_gather(const U *in, int64_t n, const int32_t *idx, const int32_t *flags,
                         const int32_t *segid, Side src, Side dst, U *out,
                         unsigned long long *err)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (flags && !flags[i]) {
            out[i] = 0;
            continue;
        }
        int64_t k = segid ? segid[i] : 0;
        int64_t j = idx[i], sl = src.length(k);
        if (j < 0 || j >= sl) {
            report(err, i, dst.len && k >= src.m ? E_PARTNER : E_INDEX);
            continue;
        }
        out[i] = in[src.start(k) + j];
    }
}

/* The error word and what its message needs, into the caller's record
 * (one thread, after the checking kernel, in stream order: no wait). */
__global__ void k_fault_info(const unsigned long long *err, const int32_t *idx, const int32_t *segid, Side checked,
                             VkPermFault *rec)
{
    unsigned long long e = *err;
    rec->err = e;
    if (e == ULLONG_MAX)
        return;
    long long pos = (long long)(e >> 1);
    int32_t k = segid ? segid[pos] : 0;
    rec->k = k;
    rec->j = idx[pos];
    rec->len = checked.len ? (k < checked.m ? (checked.len[k] > 0 ? checked.len[k] : 0) : 0) : checked.n;
}

/* Nothing to check: the caller's record says so (no wait). */
int no_fault(VkPermFault *fault)
{
    if (fault)
        VK_CUDA(cudaMemsetAsync(&fault->err, 0xff, sizeof fault->err, 0));
    return 0;
}

/* The check's outcome: k_fault_info into the caller's record FAULT (no
 * wait), or, without one, into a record of its own read back at once: 0,
 * or -1 with the runtime's message (PARTNER_SIDE names the descriptor a
 * segment without a partner belongs to). */
int finish_check(unsigned long long *err_d, const int32_t *idx, const int32_t *segid, const Side &checked,
                 const char *partner_side, VkPermFault *fault)
{
    VkTemp own;
    if (!fault) {
        if (own.alloc(sizeof(VkPermFault)) != 0)
            return -1;
    }
    VkPermFault *rec = fault ? fault : own.as<VkPermFault>();
    k_fault_info<<<1, 1>>>(err_d, idx, segid, checked, rec);
    VK_LAUNCHED();
    if (fault)
        return 0;
    VkPermFault h;
    VK_CUDA(cudaMemcpy(&h, rec, sizeof h, cudaMemcpyDeviceToHost));
    if (h.err == ULLONG_MAX)
        return 0;
    if ((h.err & 1) == E_PARTNER)
        return vk_fail(VS_MSG_PERMUTE_PARTNER, h.k, partner_side);
    return vk_fail(VS_MSG_PERMUTE_INDEX, h.j, (long long)(h.err >> 1), h.len);
}

int setup(size_t esize, const int32_t *slen, const int64_t *soff, int64_t sm, const int32_t *dlen,
          const int64_t *doff, int64_t dm, int64_t n_src, int64_t n_dst, Side *src, Side *dst,
          const char *what)
{
    if (vk_ready() != 0)
        return -1;
    if (esize != 4 && esize != 8)
        return vk_fail("%s: element size %zu (must be 4 or 8)", what, esize);
    if (!slen != !dlen || (slen && (!soff || !doff)))
        return vk_fail("%s: give both segment descriptors or neither", what);
    if (n_src < 0 || n_dst < 0 || (slen && (sm < 0 || dm < 0)))
        return vk_fail("%s: negative length", what);
    if (slen && (sm > INT32_MAX || dm > INT32_MAX))
        return vk_fail("%s: too many segments", what);
    *src = Side{ slen, soff, slen ? sm : 1, n_src };
    *dst = Side{ dlen, doff, dlen ? dm : 1, n_dst };
    return 0;
}

} // namespace

extern "C" int vk_scatter(size_t esize, const void *in_d, int64_t n_src, const int32_t *idx_d,
                          const int32_t *flags_d, const int32_t *slen_d, const int64_t *soff_d,
                          int64_t sm, const int32_t *dlen_d, const int64_t *doff_d, int64_t dm,
                          void *out_d, int64_t n_dst, int unique, VkPermFault *fault_d)
{
    Side src, dst;
    if (setup(esize, slen_d, soff_d, sm, dlen_d, doff_d, dm, n_src, n_dst, &src, &dst,
              "vk_scatter") != 0)
        return -1;
    if (n_src == 0 || src.m == 0)
        return no_fault(fault_d);
    VkTemp segid, err, win;
    if (err.alloc(sizeof(unsigned long long)) != 0)
        return -1;
    VK_CUDA(cudaMemsetAsync(err.p, 0xff, sizeof(unsigned long long), 0));
    if (src.len && src.m > 1) {
        if (segid.alloc((size_t)n_src * 4) != 0 ||
            vk_seg_ids_internal(src.len, src.off, src.m, n_src, segid.as<int32_t>()) != 0)
            return -1;
    }
    unsigned grid = vk_grid(n_src, 256);
    const int32_t *sid = segid.as<int32_t>();
    unsigned long long *e = err.as<unsigned long long>();
    int wide = n_src >= (int64_t)UINT32_MAX;
    if (!unique && n_dst > 0) {
        size_t wsize = wide ? 8 : 4;
        if (win.alloc((size_t)n_dst * wsize) != 0)
            return -1;
        VK_CUDA(cudaMemsetAsync(win.p, 0, (size_t)n_dst * wsize, 0));
        if (wide)
            k_scatter_claim<unsigned long long><<<grid, 256>>>(n_src, idx_d, flags_d, sid, src, dst,
                                                               win.as<unsigned long long>(), e);
        else
            k_scatter_claim<unsigned int><<<grid, 256>>>(n_src, idx_d, flags_d, sid, src, dst,
                                                         win.as<unsigned int>(), e);
        VK_LAUNCHED();
    }
#define SCATTER(U, W)                                                                       \
    k_scatter<U, W><<<grid, 256>>>((const U *)in_d, n_src, idx_d, flags_d, sid, src, dst,   \
                                   win.as<W>(), (U *)out_d, e)
    if (esize == 4) {
        if (wide)
            SCATTER(uint32_t, unsigned long long);
        else
            SCATTER(uint32_t, unsigned int);
    } else {
        if (wide)
            SCATTER(unsigned long long, unsigned long long);
        else
            SCATTER(unsigned long long, unsigned int);
    }
#undef SCATTER
    VK_LAUNCHED();
    return finish_check(e, idx_d, sid, dst, "destination", fault_d);
}

extern "C" int vk_gather(size_t esize, const void *in_d, int64_t n_src, const int32_t *idx_d,
                         const int32_t *flags_d, const int32_t *slen_d, const int64_t *soff_d,
                         int64_t sm, const int32_t *dlen_d, const int64_t *doff_d, int64_t dm,
                         void *out_d, int64_t n_dst, VkPermFault *fault_d)
{
    Side src, dst;
    if (setup(esize, slen_d, soff_d, sm, dlen_d, doff_d, dm, n_src, n_dst, &src, &dst,
              "vk_gather") != 0)
        return -1;
    if (n_dst == 0 || dst.m == 0)
        return no_fault(fault_d);
    VkTemp segid, err;
    if (err.alloc(sizeof(unsigned long long)) != 0)
        return -1;
    VK_CUDA(cudaMemsetAsync(err.p, 0xff, sizeof(unsigned long long), 0));
    if (dst.len && dst.m > 1) {
        if (segid.alloc((size_t)n_dst * 4) != 0 ||
            vk_seg_ids_internal(dst.len, dst.off, dst.m, n_dst, segid.as<int32_t>()) != 0)
            return -1;
    }
    unsigned grid = vk_grid(n_dst, 256);
    const int32_t *sid = segid.as<int32_t>();
    unsigned long long *e = err.as<unsigned long long>();
    if (esize == 4)
        k_gather<uint32_t><<<grid, 256>>>((const uint32_t *)in_d, n_dst, idx_d, flags_d, sid, src,
                                          dst, (uint32_t *)out_d, e);
    else
        k_gather<unsigned long long><<<grid, 256>>>((const unsigned long long *)in_d, n_dst, idx_d,
                                                    flags_d, sid, src, dst,
                                                    (unsigned long long *)out_d, e);
    VK_LAUNCHED();
    return finish_check(e, idx_d, sid, src, "source", fault_d);
}

/* ---- PACK ---- */

template <class U>
static int select_flagged(const U *in, const int32_t *flags, int64_t n, U *out, int64_t *count)
{
    VkTemp cnt;
    if (cnt.alloc(sizeof(int64_t)) != 0)
        return -1;
    size_t bytes = 0;
    VK_CUDA(cub::DeviceSelect::Flagged(nullptr, bytes, in, flags, out, cnt.as<int64_t>(), n));
    VkTemp tmp;
    if (tmp.alloc(bytes) != 0)
        return -1;
    VK_CUDA(cub::DeviceSelect::Flagged(tmp.p, bytes, in, flags, out, cnt.as<int64_t>(), n));
    if (count)
        VK_CUDA(cudaMemcpy(count, cnt.p, sizeof(int64_t), cudaMemcpyDeviceToHost));
    return 0;
}

extern "C" int vk_select_flagged(VsElem type, const void *in_d, const int32_t *flags_d, int64_t n,
                                 void *out_d, int64_t *count_host)
{
    if (vk_ready() != 0)
        return -1;
    if (n <= 0) {
        if (count_host)
            *count_host = 0;
        return 0;
    }
    if (type == VS_FLOAT)
        return select_flagged((const unsigned long long *)in_d, flags_d, n,
                              (unsigned long long *)out_d, count_host);
    if (type == VS_INT || type == VS_BOOL)
        return select_flagged((const uint32_t *)in_d, flags_d, n, (uint32_t *)out_d, count_host);
    return vk_fail("vk_select_flagged: bad type %d", (int)type);
}

/* ---- Scattered elements ---- */

template <typename T>
__global__ void k_elems(T *dst, const T *src, const int64_t *pos, int64_t m, int put)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < m; k += (int64_t)blockDim.x * gridDim.x) {
        if (put)
            dst[pos[k]] = src[k];
        else
            dst[k] = src[pos[k]];
    }
}

static int elems(size_t esize, void *dst, const void *src, const int64_t *pos, int64_t m, int put, const char *who)
{
    if (esize != 4 && esize != 8)
        return vk_fail("%s: element size %zu", who, esize);
    if (m <= 0)
        return 0;
    unsigned grid = vk_grid(m, 256);
    if (esize == 4)
        k_elems<uint32_t><<<grid, 256>>>((uint32_t *)dst, (const uint32_t *)src, pos, m, put);
    else
        k_elems<unsigned long long><<<grid, 256>>>((unsigned long long *)dst, (const unsigned long long *)src, pos, m,
                                                   put);
    VK_LAUNCHED();
    return 0;
}

extern "C" int vk_elems_get(size_t esize, const void *src_d, const int64_t *pos_d, int64_t m, void *dst_d)
{
    return elems(esize, dst_d, src_d, pos_d, m, 0, "vk_elems_get");
}

extern "C" int vk_elems_put(size_t esize, void *dst_d, const int64_t *pos_d, int64_t m, const void *src_d)
{
    return elems(esize, dst_d, src_d, pos_d, m, 1, "vk_elems_put");
}

/* kernels/vk_rank.cu — stable segmented rank (vcode/SPEC.md §4.7), the GPU
 * counterpart of runtime/core/rank.c.
 *
 * Keys are mapped, as rank.c maps them, to unsigned integers whose
 * ascending order is the wanted order (descending: complemented), so that
 * one stable ascending sort handles both directions with ties in original
 * order. The element indices ride along as the payload of CUB's
 * DeviceRadixSort::SortPairs (an LSD radix sort, stable):
 *   Int:   key = segment << 32 | key32, one sort over 32 + bits(m-1) bits;
 *   Float: key = key64, one sort over 64 bits, then (for m > 1) a second
 *          stable sort of the permuted indices by segment id
 *          (bits(m-1) bits), which keeps the key order inside a segment.
 * Then rank[index at sorted place p] = p - start of its segment. Only one
 * sort instantiation (uint64 keys, int32 payload). */
#include "kernels/vk_internal.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <limits.h>
#include <string.h>

namespace {

__device__ __forceinline__ uint64_t float_key(double d, int down)
{
    uint64_t b = (uint64_t)__double_as_longlong(d);
    uint64_t k = (b >> 63) ? ~b : b ^ (UINT64_C(1) << 63);
    return down ? ~k : k;
}

__device__ __forceinline__ uint64_t int_key(int32_t x, int down)
{
    uint32_t k = (uint32_t)x ^ 0x80000000u;
    return down ? (uint64_t)(~k) : (uint64_t)k;
}

__global__ void k_rank_keys(const void *keys, int isf, int down, const int32_t *segid, int64_t n,
                            uint64_t *key, int32_t *idx)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint64_t k;
        if (isf) {
            k = float_key(((const double *)keys)[i], down);
        } else {
            k = int_key(((const int32_t *)keys)[i], down);
            if (segid)
                k |= (uint64_t)(uint32_t)segid[i] << 32;
        }
        key[i] = k;
        idx[i] = (int32_t)i;
    }
}

__global__ void k_gather_segid(const int32_t *segid, const int32_t *idx, int64_t n, uint64_t *key)
{
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < n;
         p += (int64_t)gridDim.x * blockDim.x)
        key[p] = (uint64_t)(uint32_t)segid[idx[p]];
}

/* SHIFT: where the segment id sits in the sorted key (32 for Int, 0 for the
 * Float second pass); key NULL: one segment. */
__global__ void k_rank_out(const uint64_t *key, int shift, const int32_t *idx,
                           const int64_t *off, int64_t n, int32_t *rank)
{
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < n;
         p += (int64_t)gridDim.x * blockDim.x) {
        int64_t base = 0;
        if (key)
            base = off[(int64_t)(key[p] >> shift)];
        else if (off)
            base = off[0];
        rank[idx[p]] = (int32_t)(p - base);
    }
}

int bits_for(int64_t v)
{
    int b = 0;
    while (b < 63 && (v >> b) != 0)
        b++;
    return b;
}

int sort_pairs(const uint64_t *kin, uint64_t *kout, const int32_t *vin, int32_t *vout, int n,
               int end_bit)
{
    size_t bytes = 0;
    VK_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, bytes, kin, kout, vin, vout, n, 0, end_bit));
    VkTemp tmp;
    if (tmp.alloc(bytes) != 0)
        return -1;
    VkCount q = vk_count_sort(n, end_bit);
    VK_CUB(cub::DeviceRadixSort::SortPairs(tmp.p, bytes, kin, kout, vin, vout, n, 0, end_bit), q.k, q.c);
    return 0;
}

} // namespace

extern "C" int vk_seg_rank(int down, VsElem type, const void *keys_d, const int32_t *len_d,
                           const int64_t *off_d, int64_t m, int64_t n, int32_t *rank_d)
{
    if (vk_ready() != 0)
        return -1;
    if (type != VS_INT && type != VS_FLOAT)
        return vk_fail("vk_seg_rank: type %d is neither INT nor FLOAT", (int)type);
    if (n <= 0)
        return 0;
    if (n > INT32_MAX)
        return vk_fail("vk_seg_rank: %lld elements is too many (at most 2^31-1)", (long long)n);
    if (len_d && (!off_d || m < 1))
        return vk_fail("vk_seg_rank: bad segment descriptor");
    if (!len_d)
        m = 1;
    int isf = type == VS_FLOAT;
    int segbits = m > 1 ? bits_for(m - 1) : 0;
    if (segbits > 31)
        return vk_fail("vk_seg_rank: too many segments (%lld)", (long long)m);
    unsigned grid = vk_grid(n, 256);

    VkTemp segid, k0, k1, v0, v1;
    if (k0.alloc((size_t)n * 8) || k1.alloc((size_t)n * 8) || v0.alloc((size_t)n * 4) ||
        v1.alloc((size_t)n * 4))
        return -1;
    if (segbits > 0) {
        if (segid.alloc((size_t)n * 4) != 0)
            return -1;
        if (vk_seg_ids_internal(len_d, off_d, m, n, segid.as<int32_t>()) != 0)
            return -1;
    }
    k_rank_keys<<<grid, 256>>>(keys_d, isf, down != 0, segid.as<int32_t>(), n,
                               k0.as<uint64_t>(), v0.as<int32_t>());
    VK_LAUNCHED();
    int end_bit = isf ? 64 : 32 + segbits;
    if (sort_pairs(k0.as<uint64_t>(), k1.as<uint64_t>(), v0.as<int32_t>(), v1.as<int32_t>(),
                   (int)n, end_bit) != 0)
        return -1;
    /* sorted keys in k1, indices in v1 */
    if (!isf) {
        k_rank_out<<<grid, 256>>>(segbits ? k1.as<uint64_t>() : nullptr, 32, v1.as<int32_t>(),
                                  len_d ? off_d : nullptr, n, rank_d);
        VK_LAUNCHED();
        return 0;
    }
    if (segbits == 0) {
        k_rank_out<<<grid, 256>>>(nullptr, 0, v1.as<int32_t>(), len_d ? off_d : nullptr, n, rank_d);
        VK_LAUNCHED();
        return 0;
    }
    k_gather_segid<<<grid, 256>>>(segid.as<int32_t>(), v1.as<int32_t>(), n, k0.as<uint64_t>());
    VK_LAUNCHED();
    if (sort_pairs(k0.as<uint64_t>(), k1.as<uint64_t>(), v1.as<int32_t>(), v0.as<int32_t>(),
                   (int)n, segbits) != 0)
        return -1;
    k_rank_out<<<grid, 256>>>(k1.as<uint64_t>(), 0, v0.as<int32_t>(), off_d, n, rank_d);
    VK_LAUNCHED();
    return 0;
}

/* kernels/vk_map.cu — the device tier's elementwise instructions, DIST and
 * INDEX (kernels.h): grid-stride loops over kernels/vk_elem.h's meaning
 * of an element. The instruction is a kernel argument, the same for every
 * thread, so its switch does not diverge; the loops are bound by memory. */
#include "kernels/vk_internal.cuh"
#include "kernels/vk_elem.h"

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
    VkCell zero;
    zero.f = 0.0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        VkCell x = vk_cell(&args.a[0], fmask & 1, i);
        VkCell y = nargs > 1 ? vk_cell(&args.a[1], fmask & 2, i) : zero;
        VkCell z = nargs > 2 ? vk_cell(&args.a[2], fmask & 4, i) : zero;
        VkCell r;
        int f = vk_elem(op, ty, x, y, z, &r);
        if (f != VS_OK) {
            if (fault)
                atomicMin(fault, vk_fault_pack(i, f));
            continue;
        }
        if (out_f)
            ((double *)out)[i] = r.f;
        else
            ((int32_t *)out)[i] = r.i;
    }
}

__global__ void k_dist(int f, VkArg val, const int64_t *off, int64_t m, int64_t n, void *out)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t s = m > 1 ? vk_seg_find(off, m, i) : 0;
        VkCell c = vk_cell(&val, f, s);
        if (f)
            ((double *)out)[i] = c.f;
        else
            ((int32_t *)out)[i] = c.i;
    }
}

__global__ void k_index(VkArg start, VkArg stride, const int64_t *off, int64_t m, int64_t n, int32_t *out)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t s = m > 1 ? vk_seg_find(off, m, i) : 0;
        int64_t j = i - (m > 1 ? off[s] : 0);
        uint32_t c = (uint32_t)vk_cell(&start, 0, s).i, d = (uint32_t)vk_cell(&stride, 0, s).i;
        out[i] = (int32_t)(c + (uint32_t)j * d);
    }
}

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

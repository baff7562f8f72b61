/* kernels/vk_rand.cu — RAND's draws in parallel, bit-identical to the
 * sequential random() stream (vcode/SPEC.md §4.14, runtime/core/rand.c), through the
 * polynomial jump-ahead of kernels/rand_jump.h.
 *
 * Layout: thread t of block b produces the C = 31 * 32 = 992 draws starting
 * at draw b * BS + t * C, BS = 128 * C. Its window is the caller's window
 * jumped by that distance:
 *   - the block's jump b * BS is the product of x^(2^i * BS) over the set
 *     bits i of b: warp 0 applies those precomputed polynomials one after
 *     the other to the window held in shared memory (lane j computes
 *     element j of the next window: 31 multiply-adds);
 *   - thread t then applies x^(t * C) (a 128-entry precomputed table) to
 *     the block's window: 31 x 31 multiply-adds, the extended block window
 *     being read from shared memory by all threads at once (broadcast);
 *   - it then runs the recurrence in registers, 31 draws per step (fully
 *     unrolled, so the ring positions are compile-time), and the block
 *     writes each step's 128 x 31 draws through shared memory so that the
 *     global stores come out as runs of 31 consecutive words.
 * The polynomial tables are built on the host once (vkr_poly_xpow /
 * vkr_poly_mulmod) and kept on the device. */
#include "kernels/rand_jump.h"
#include "kernels/vk_internal.cuh"

#include <limits.h>
#include <mutex>

namespace {

constexpr int RT = 128;                     /* threads per block */
constexpr int STEPS = 32;                   /* 31-draw steps per thread */
constexpr int64_t CH = VKR_DEG * STEPS;     /* draws per thread */
constexpr int64_t BS = CH * RT;             /* draws per block */
constexpr int NBITS = 40;                   /* block-jump table: up to 2^40 blocks */

struct Window {
    uint32_t w[VKR_DEG];
};

struct Tables {
    uint32_t *thread_poly; /* RT x 31: x^(t*CH) */
    uint32_t *block_poly;  /* NBITS x 31: x^(2^i * BS) */
};

std::mutex tab_mu;
int tab_device = -1;
Tables tab;

int tables(Tables *out)
{
    std::lock_guard<std::mutex> lock(tab_mu);
    int d = 0;
    VK_CUDA(cudaGetDevice(&d));
    if (tab_device == d) {
        *out = tab;
        return 0;
    }
    static uint32_t host_t[RT * VKR_DEG], host_b[NBITS * VKR_DEG];
    VkrPoly step, p;
    vkr_poly_xpow((uint64_t)CH, &step);
    vkr_poly_one(&p);
    for (int t = 0; t < RT; t++) {
        for (int i = 0; i < VKR_DEG; i++)
            host_t[t * VKR_DEG + i] = p.c[i];
        vkr_poly_mulmod(&p, &step, &p);
    }
    vkr_poly_xpow((uint64_t)BS, &p);
    for (int b = 0; b < NBITS; b++) {
        for (int i = 0; i < VKR_DEG; i++)
            host_b[b * VKR_DEG + i] = p.c[i];
        vkr_poly_mulmod(&p, &p, &p);
    }
    Tables t;
    VK_CUDA(cudaMalloc(&t.thread_poly, sizeof host_t));
    VK_CUDA(cudaMalloc(&t.block_poly, sizeof host_b));
    VK_CUDA(cudaMemcpy(t.thread_poly, host_t, sizeof host_t, cudaMemcpyHostToDevice));
    VK_CUDA(cudaMemcpy(t.block_poly, host_b, sizeof host_b, cudaMemcpyHostToDevice));
    tab = t; /* one set per process (the last device used); the old one leaks on a device switch */
    tab_device = d;
    *out = t;
    return 0;
}

__global__ void __launch_bounds__(RT) k_rand(Window w0, int64_t n, Tables tb, int32_t *out)
{
    __shared__ uint32_t e[2 * VKR_DEG - 1];
    __shared__ int32_t buf[RT * VKR_DEG];
    const int64_t b = blockIdx.x;
    const int t = threadIdx.x;

    /* The block's window, by warp 0. */
    if (t < 32) {
        if (t < VKR_DEG)
            e[t] = w0.w[t];
        __syncwarp();
        for (int i = 0; i < NBITS && (b >> i) != 0; i++) {
            if (!((b >> i) & 1))
                continue;
            if (t == 0)
                for (int j = VKR_DEG; j < 2 * VKR_DEG - 1; j++)
                    e[j] = e[j - VKR_DEG] + e[j - (VKR_DEG - VKR_TAP)];
            __syncwarp();
            uint32_t acc = 0;
            if (t < VKR_DEG) {
                const uint32_t *c = tb.block_poly + i * VKR_DEG;
                for (int q = 0; q < VKR_DEG; q++)
                    acc += c[q] * e[q + t];
            }
            __syncwarp();
            if (t < VKR_DEG)
                e[t] = acc;
            __syncwarp();
        }
        if (t == 0)
            for (int j = VKR_DEG; j < 2 * VKR_DEG - 1; j++)
                e[j] = e[j - VKR_DEG] + e[j - (VKR_DEG - VKR_TAP)];
    }
    __syncthreads();

    /* The thread's window: apply x^(t*CH). */
    uint32_t w[VKR_DEG];
#pragma unroll
    for (int j = 0; j < VKR_DEG; j++)
        w[j] = 0;
    const uint32_t *c = tb.thread_poly + t * VKR_DEG;
    for (int q = 0; q < VKR_DEG; q++) {
        uint32_t cq = c[q];
#pragma unroll
        for (int j = 0; j < VKR_DEG; j++)
            w[j] += cq * e[q + j];
    }

    /* Draw, 31 at a time, and store through shared memory. */
    const int64_t base = b * BS;
    for (int s = 0; s < STEPS; s++) {
        if (base + (int64_t)s * VKR_DEG >= n)
            break; /* uniform across the block */
#pragma unroll
        for (int j = 0; j < VKR_DEG; j++) {
            w[j] += w[(j + VKR_TAP) % VKR_DEG];
            buf[t * VKR_DEG + j] = (int32_t)(w[j] >> 1);
        }
        __syncthreads();
        for (int q = t; q < RT * VKR_DEG; q += RT) {
            int tt = q / VKR_DEG, j = q - tt * VKR_DEG;
            int64_t g = base + tt * CH + (int64_t)s * VKR_DEG + j;
            if (g < n)
                out[g] = buf[q];
        }
        __syncthreads();
    }
}

int run(const uint32_t ring[VKR_DEG], uint64_t k, int64_t n, int32_t *out)
{
    if (vk_ready() != 0)
        return -1;
    if (n <= 0)
        return 0;
    Tables tb;
    if (tables(&tb) != 0)
        return -1;
    Window w0;
    vkr_ring_to_linear(ring, k, w0.w);
    int64_t blocks = (n + BS - 1) / BS;
    if (blocks > INT32_MAX)
        return vk_fail("vk_rand: %lld draws is too many", (long long)n);
    k_rand<<<(unsigned)blocks, RT>>>(w0, n, tb, out);
    VK_LAUNCHED();
    return 0;
}

} // namespace

extern "C" int vk_rand(const uint32_t ring[31], uint64_t k, int64_t n, int32_t *out_d)
{
    return run(ring, k, n, out_d);
}

/* kernels/rand_jump.h — jump-ahead for the RAND stream (glibc random(),
 * TYPE_3; vcode/SPEC.md §4.14, runtime/core/rand.h), usable from C11 and CUDA C++.
 *
 * The stream is r[i] = r[i-31] + r[i-3] (mod 2^32), output (int32)(r[i] >> 1).
 * A state is the window of the last 31 values: runtime/core/rand.h keeps it as
 * ring[31] with r[j] at ring[j % 31] plus k, the index of the next r[] to
 * compute, so the window is r[k-31 .. k-1]. Here a "linear window" w[31] is
 * the same values in order: w[j] = r[k-31+j].
 *
 * Method (polynomial jump-ahead). Let E be the shift r[i] -> r[i+1]. The
 * recurrence says P(E) = E^31 - E^28 - 1 annihilates the sequence (it holds
 * for every index >= 34, i.e. for every window with k >= 34, which is all a
 * seeded state ever has). Hence for any d, with
 *     x^d mod P(x) = c_0 + c_1 x + ... + c_30 x^30   (coefficients in Z/2^32)
 * we have r[s+d] = sum_i c_i r[s+i]. Applying that to s, s+1, ..., s+30 gives
 * the whole window d draws later; the values r[s+31 .. s+60] it needs come
 * from 30 more steps of the recurrence. So:
 *   - vkr_poly_xpow(d): x^d mod P by square-and-multiply: about log2(d)
 *     squarings of 31x31 coefficient products (O(31^2 log d)); a
 *     multiplication by x is a shift plus one reduction step.
 *   - vkr_apply: 30 recurrence steps + 31x31 multiply-adds, O(31^2).
 * A GPU kernel builds the polynomials for multiples of its chunk size once
 * (host side, vkr_poly_xpow / vkr_poly_mulmod) and each thread applies one.
 *
 * Everything is static inline, with VK_HD marking the functions
 * __host__ __device__ under nvcc. Pure integer code, no libc calls. */
#ifndef KERNELS_RAND_JUMP_H
#define KERNELS_RAND_JUMP_H

#include <stdint.h>

#ifdef __CUDACC__
#define VK_HD __host__ __device__
#else
#define VK_HD
#endif

#define VKR_DEG 31 /* degree of P, size of the window */
#define VKR_TAP 28 /* P(x) = x^31 - x^28 - 1, i.e. x^31 = x^28 + 1 */

/* A polynomial of degree < 31 over Z/2^32: c[i] is the coefficient of x^i. */
typedef struct {
    uint32_t c[VKR_DEG];
} VkrPoly;

/* The polynomial 1 (= x^0). */
VK_HD static inline void vkr_poly_one(VkrPoly *p)
{
    for (int i = 0; i < VKR_DEG; i++)
        p->c[i] = 0;
    p->c[0] = 1;
}

/* Reduce t[0 .. 2*31-2] (61 coefficients) modulo P in place, from the top:
 * x^i = x^(i-3) + x^(i-31) for i >= 31. */
VK_HD static inline void vkr_reduce61(uint32_t t[2 * VKR_DEG - 1])
{
    for (int i = 2 * VKR_DEG - 2; i >= VKR_DEG; i--) {
        uint32_t v = t[i];
        t[i - (VKR_DEG - VKR_TAP)] += v;
        t[i - VKR_DEG] += v;
        t[i] = 0;
    }
}

/* out = a * b mod P. out may alias a or b. */
VK_HD static inline void vkr_poly_mulmod(const VkrPoly *a, const VkrPoly *b, VkrPoly *out)
{
    uint32_t t[2 * VKR_DEG - 1];
    for (int i = 0; i < 2 * VKR_DEG - 1; i++)
        t[i] = 0;
    for (int i = 0; i < VKR_DEG; i++) {
        uint32_t ai = a->c[i];
        if (ai == 0)
            continue;
        for (int j = 0; j < VKR_DEG; j++)
            t[i + j] += ai * b->c[j];
    }
    vkr_reduce61(t);
    for (int i = 0; i < VKR_DEG; i++)
        out->c[i] = t[i];
}

/* p = p * x mod P. */
VK_HD static inline void vkr_poly_mulx(VkrPoly *p)
{
    uint32_t top = p->c[VKR_DEG - 1];
    for (int i = VKR_DEG - 1; i > 0; i--)
        p->c[i] = p->c[i - 1];
    p->c[0] = top;          /* x^31 = 1 + x^28 */
    p->c[VKR_TAP] += top;
}

/* p = x^d mod P, square-and-multiply from the most significant bit. */
VK_HD static inline void vkr_poly_xpow(uint64_t d, VkrPoly *p)
{
    vkr_poly_one(p);
    int top = 63;
    while (top >= 0 && !((d >> top) & 1))
        top--;
    for (int b = top; b >= 0; b--) {
        vkr_poly_mulmod(p, p, p);
        if ((d >> b) & 1)
            vkr_poly_mulx(p);
    }
}

/* Linear window w[j] = r[k-31+j] from a ring (r[j] at ring[j % 31]). */
VK_HD static inline void vkr_ring_to_linear(const uint32_t ring[VKR_DEG], uint64_t k,
                                            uint32_t w[VKR_DEG])
{
    unsigned s = (unsigned)(k % VKR_DEG); /* (k - 31 + j) % 31 == (k + j) % 31 */
    for (int j = 0; j < VKR_DEG; j++) {
        unsigned q = s + (unsigned)j;
        w[j] = ring[q >= VKR_DEG ? q - VKR_DEG : q];
    }
}

/* The inverse: ring from a linear window whose next index is k. */
VK_HD static inline void vkr_linear_to_ring(const uint32_t w[VKR_DEG], uint64_t k,
                                            uint32_t ring[VKR_DEG])
{
    unsigned s = (unsigned)(k % VKR_DEG);
    for (int j = 0; j < VKR_DEG; j++) {
        unsigned q = s + (unsigned)j;
        ring[q >= VKR_DEG ? q - VKR_DEG : q] = w[j];
    }
}

/* Extend a linear window w (r[s .. s+30]) to e[0 .. 60] = r[s .. s+60]. */
VK_HD static inline void vkr_extend(const uint32_t w[VKR_DEG], uint32_t e[2 * VKR_DEG - 1])
{
    for (int j = 0; j < VKR_DEG; j++)
        e[j] = w[j];
    for (int j = VKR_DEG; j < 2 * VKR_DEG - 1; j++)
        e[j] = e[j - VKR_DEG] + e[j - (VKR_DEG - VKR_TAP)];
}

/* out = the linear window d draws after w, where p = x^d mod P.
 * out may alias w. */
VK_HD static inline void vkr_apply(const VkrPoly *p, const uint32_t w[VKR_DEG],
                                   uint32_t out[VKR_DEG])
{
    uint32_t e[2 * VKR_DEG - 1];
    uint32_t acc[VKR_DEG];
    vkr_extend(w, e);
    for (int j = 0; j < VKR_DEG; j++)
        acc[j] = 0;
    for (int i = 0; i < VKR_DEG; i++) {
        uint32_t ci = p->c[i];
        if (ci == 0)
            continue;
        for (int j = 0; j < VKR_DEG; j++)
            acc[j] += ci * e[i + j];
    }
    for (int j = 0; j < VKR_DEG; j++)
        out[j] = acc[j];
}

/* Advance the ring state (ring, *k) by d draws without producing them, as if
 * rnd_next had been called d times. O(31^2 log d). */
VK_HD static inline void vkr_jump(uint32_t ring[VKR_DEG], uint64_t *k, uint64_t d)
{
    if (d == 0)
        return;
    VkrPoly p;
    uint32_t w[VKR_DEG];
    vkr_poly_xpow(d, &p);
    vkr_ring_to_linear(ring, *k, w);
    vkr_apply(&p, w, w);
    *k += d;
    vkr_linear_to_ring(w, *k, ring);
}

/* out[0 .. n) = the next n draws of the ring state (ring, *k), which is
 * advanced, exactly like rnd_fill. Works in place on the ring: the next
 * value overwrites r[k-31] at ring[k % 31], as rnd_next does. */
VK_HD static inline void vkr_fill(uint32_t ring[VKR_DEG], uint64_t *k, int32_t *out, int64_t n)
{
    unsigned a = (unsigned)(*k % VKR_DEG);     /* slot of r[k-31] */
    unsigned b = a + VKR_TAP;                  /* slot of r[k-3] */
    if (b >= VKR_DEG)
        b -= VKR_DEG;
    for (int64_t i = 0; i < n; i++) {
        uint32_t v = ring[a] + ring[b];
        ring[a] = v;
        out[i] = (int32_t)(v >> 1);
        if (++a == VKR_DEG)
            a = 0;
        if (++b == VKR_DEG)
            b = 0;
    }
    *k += (uint64_t)(n > 0 ? n : 0);
}

/* The same on a linear window: out[0 .. n) from w, which is advanced by n
 * draws. */
VK_HD static inline void vkr_fill_linear(uint32_t w[VKR_DEG], int32_t *out, int64_t n)
{
    uint32_t ring[VKR_DEG];
    uint64_t k = 0; /* any k with k % 31 == 0: ring == linear window */
    for (int j = 0; j < VKR_DEG; j++)
        ring[j] = w[j];
    vkr_fill(ring, &k, out, n);
    vkr_ring_to_linear(ring, k, w);
}

#endif

/* tests/unit/test_rand_jump.c — the RAND jump-ahead of kernels/rand_jump.h
 * against the sequential stream of runtime/core/rand.c. */
#include "check.h"
#include "kernels/rand_jump.h"
#include "runtime/core/rand.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int same_state(const RandState *a, const uint32_t ring[VKR_DEG], uint64_t k)
{
    return a->k == k && memcmp(a->ring, ring, sizeof a->ring) == 0;
}

/* Jump a fresh state of SEED by D, draw 100, and compare with rnd_fill's
 * draws D .. D+99 of the same seed; also compare the states. */
static void check_offset(uint32_t seed, uint64_t d)
{
    static int32_t ref[1000007 + 100];
    RandState s;
    rnd_seed(&s, seed);
    rnd_fill(&s, ref, (int64_t)d); /* s is now d draws in */

    RandState j;
    rnd_seed(&j, seed);
    uint32_t ring[VKR_DEG];
    memcpy(ring, j.ring, sizeof ring);
    uint64_t k = j.k;
    vkr_jump(ring, &k, d);
    CHECK(same_state(&s, ring, k));

    /* The same through a prebuilt polynomial and a linear window. */
    VkrPoly p;
    vkr_poly_xpow(d, &p);
    uint32_t w[VKR_DEG], w2[VKR_DEG];
    vkr_ring_to_linear(j.ring, j.k, w);
    vkr_apply(&p, w, w2);
    uint32_t ring2[VKR_DEG];
    vkr_linear_to_ring(w2, j.k + d, ring2);
    CHECK(same_state(&s, ring2, j.k + d));

    int32_t got[100];
    vkr_fill(ring, &k, got, 100);
    rnd_fill(&s, ref, 100);
    CHECK(memcmp(got, ref, sizeof got) == 0);
    CHECK(same_state(&s, ring, k));

    int32_t got2[100];
    vkr_fill_linear(w2, got2, 100);
    CHECK(memcmp(got2, ref, sizeof got2) == 0);
    vkr_linear_to_ring(w2, k, ring2);
    CHECK(same_state(&s, ring2, k));
}

int main(void)
{
    static const uint32_t seeds[] = { 0, 1, 12345 };
    static const uint64_t offs[] = { 0, 1, 2, 3, 30, 31, 32, 34, 61, 62, 1000, 4097,
                                     65536, 99991, 262143, 1000007 };
    for (size_t a = 0; a < sizeof seeds / sizeof *seeds; a++)
        for (size_t b = 0; b < sizeof offs / sizeof *offs; b++)
            check_offset(seeds[a], offs[b]);

    /* Random-ish seeds and offsets. */
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int t = 0; t < 12; t++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        check_offset((uint32_t)x, (x >> 32) % 600000);
    }

    /* Polynomial identities: x^a * x^b = x^(a+b), and mulx = xpow(1). */
    VkrPoly pa, pb, pab, pc;
    vkr_poly_xpow(123456789, &pa);
    vkr_poly_xpow(987654321, &pb);
    vkr_poly_mulmod(&pa, &pb, &pc);
    vkr_poly_xpow(123456789 + 987654321, &pab);
    CHECK(memcmp(pc.c, pab.c, sizeof pc.c) == 0);
    vkr_poly_xpow(1, &pa);
    vkr_poly_one(&pb);
    vkr_poly_mulx(&pb);
    CHECK(memcmp(pa.c, pb.c, sizeof pa.c) == 0);

    /* Jumps compose: d1 then d2 equals d1 + d2, even for huge distances,
     * and a jump of 2^40 agrees with jumping 2^39 twice. */
    RandState s;
    rnd_seed(&s, 777);
    uint32_t r1[VKR_DEG], r2[VKR_DEG];
    memcpy(r1, s.ring, sizeof r1);
    memcpy(r2, s.ring, sizeof r2);
    uint64_t k1 = s.k, k2 = s.k;
    vkr_jump(r1, &k1, UINT64_C(1) << 39);
    vkr_jump(r1, &k1, UINT64_C(1) << 39);
    vkr_jump(r2, &k2, UINT64_C(1) << 40);
    CHECK(k1 == k2 && memcmp(r1, r2, sizeof r1) == 0);
    vkr_jump(r1, &k1, 5);
    vkr_jump(r1, &k1, 1000000);
    vkr_jump(r2, &k2, 1000005);
    CHECK(k1 == k2 && memcmp(r1, r2, sizeof r1) == 0);

    /* The first draws after srandom(0) (vcode/SPEC.md §4.14). */
    rnd_seed(&s, 0);
    int32_t first[3];
    vkr_fill(s.ring, &s.k, first, 3);
    CHECK(first[0] == 1804289383 && first[1] == 846930886 && first[2] == 1681692777);

    return check_report("rand_jump");
}

/* runtime/core/rank.c — the stable rank of every element within its segment
 * (vcode/SPEC.md §4.7), shared by the RANK instructions and the λcu evaluator. Floats rank in true
 * numeric order (-0.0 before +0.0, NaNs by bit pattern at the ends).
 *
 * Keys are mapped to unsigned integers whose ascending order is the wanted
 * order (descending: complemented), then each segment is sorted stably:
 * insertion sort for short segments, LSD radix sort otherwise. */
#include "runtime/core/rank.h"
#include "runtime/core/errors.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t float_key(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return (b >> 63) ? ~b : b ^ (UINT64_C(1) << 63);
}

/* Sort positions 0..n-1 of KEY stably by key; write rank[pos] = place. */
static void rank_segment(const uint64_t *key, int64_t n, int keybytes, int32_t *rank,
                         uint32_t *perm, uint32_t *tmp)
{
    if (n <= 32) {
        for (int64_t i = 0; i < n; i++) {
            uint32_t p = (uint32_t)i;
            int64_t j = i;
            while (j > 0 && key[perm[j - 1]] > key[p]) {
                perm[j] = perm[j - 1];
                j--;
            }
            perm[j] = p;
        }
    } else {
        for (int64_t i = 0; i < n; i++)
            perm[i] = (uint32_t)i;
        /* 8-bit digits for mid-sized segments, 16-bit for large ones;
         * skip digits on which all keys agree. */
        int bits = n < 4096 ? 8 : 16;
        uint32_t mask = (1u << bits) - 1;
        static uint32_t count[65536];
        for (int shift = 0; shift < keybytes * 8; shift += bits) {
            memset(count, 0, (size_t)(mask + 1) * sizeof *count);
            for (int64_t i = 0; i < n; i++)
                count[(key[i] >> shift) & mask]++;
            if (count[(key[0] >> shift) & mask] == (uint32_t)n)
                continue;
            uint32_t sum = 0;
            for (uint32_t dg = 0; dg <= mask; dg++) {
                uint32_t c = count[dg];
                count[dg] = sum;
                sum += c;
            }
            for (int64_t i = 0; i < n; i++) {
                uint32_t p = perm[i];
                tmp[count[(key[p] >> shift) & mask]++] = p;
            }
            memcpy(perm, tmp, (size_t)n * sizeof *perm);
        }
    }
    for (int64_t j = 0; j < n; j++)
        rank[perm[j]] = (int32_t)j;
}

void rank_segments(const Value *d, Value *sd, int down, int32_t *out)
{
    int64_t n = d->len, m = sd->len;
    int isf = d->type == VT_FLOAT;
    uint64_t *key = malloc((size_t)(n ? n : 1) * sizeof *key);
    uint32_t *perm = malloc((size_t)(n ? n : 1) * sizeof *perm);
    uint32_t *tmp = malloc((size_t)(n ? n : 1) * sizeof *tmp);
    if (!key || !perm || !tmp) {
        free(key);
        free(perm);
        free(tmp);
        rt_fatal("out of host memory for RANK of %lld elements", (long long)n);
    }
    for (int64_t i = 0; i < n; i++) {
        uint64_t k = isf ? float_key(VF(d)[i]) : (uint64_t)((uint32_t)VI(d)[i] ^ 0x80000000u);
        if (down)
            k = isf ? ~k : (~k & 0xffffffffu);
        key[i] = k;
    }
    /* the segments' offsets summed here, none cached on the descriptor
     * (cached offsets count against -m for as long as it lives, and the
     * classic's RANK keeps none) */
    const int32_t *L = VI(sd);
    int64_t at = 0;
    for (int64_t k = 0; k < m; k++) {
        if (L[k] > 0)
            rank_segment(key + at, L[k], isf ? 8 : 4, out + at, perm, tmp);
        at += L[k];
    }
    free(key);
    free(perm);
    free(tmp);
}

/* tests/unit/test_chain_host.c — a chain evaluated on the host node by
 * node over blocks (runtime/fused/chain_host.h) against the same chain
 * element by element (kernels/vk_elem.h vk_expr_at): random chains of
 * every operation the column loops take and some they leave to the
 * element path, over Int, Float and Bool, with vector, scalar and spread
 * leaves, outputs written in order or at positions, at lengths around
 * the block's; every output bit for bit the same. */
#include "check.h"
#include "runtime/fused/chain_host.h"
#include "kernels/vk_elem.h"

#include <stdlib.h>
#include <string.h>

enum { KI, KF, KB }; /* a value's kind: Int, Float, Bool */

static uint64_t state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (uint32_t)(state >> 16);
}

/* The leaves: 0 Int vector, 1 Float vector, 2 Int scalar, 3 Float scalar,
 * 4 Int spread over M segments, 5 Float spread, 6 Bool vector, 7 Int
 * spread over one segment. */
static const int leaf_kind[8] = { KI, KF, KI, KF, KI, KF, KB, KI };

/* An argument of kind K for node AT: a node before it of that kind, or a leaf. */
static int arg_of(const int *kind, int at, int k)
{
    for (int tries = 0; tries < 4 && at > 0; tries++) {
        int a = (int)(rnd() % (unsigned)at);
        if (kind[a] == k)
            return a;
    }
    int cand[8], nc = 0;
    for (int l = 0; l < 8; l++)
        if (leaf_kind[l] == k)
            cand[nc++] = l;
    return -1 - cand[rnd() % (unsigned)nc];
}

static VkExprNode mk(int op, int ty, int na, int a0, int a1, int a2)
{
    VkExprNode nd;
    memset(&nd, 0, sizeof nd);
    nd.op = (uint8_t)op;
    nd.ty = (uint8_t)ty;
    nd.nargs = (uint8_t)na;
    nd.a[0] = (int8_t)a0;
    nd.a[1] = (int8_t)a1;
    nd.a[2] = (int8_t)a2;
    return nd;
}

/* One random node at AT; its kind into KIND[AT]. */
static VkExprNode random_node(int *kind, int at)
{
    int c = (int)(rnd() % 16), f = rnd() & 1;
    int t = f ? KF : KI, ty = f ? VS_FLOAT : VS_INT;
    static const int cmp[6] = { VK_OP_LT, VK_OP_LE, VK_OP_GT, VK_OP_GE, VK_OP_EQ, VK_OP_NE };
    static const int arith[3] = { VK_OP_ADD, VK_OP_SUB, VK_OP_MUL };
    switch (c) {
    case 0: case 1: case 2:
        kind[at] = t;
        return mk(arith[rnd() % 3], ty, 2, arg_of(kind, at, t), arg_of(kind, at, t), 0);
    case 3: case 4:
        kind[at] = KB;
        return mk(cmp[rnd() % 6], ty, 2, arg_of(kind, at, t), arg_of(kind, at, t), 0);
    case 5: { /* AND, OR of Bools or Ints */
        int b = rnd() & 1, k = b ? KB : KI;
        kind[at] = k;
        return mk((rnd() & 1) ? VK_OP_AND : VK_OP_OR, b ? VS_BOOL : VS_INT, 2, arg_of(kind, at, k), arg_of(kind, at, k), 0);
    }
    case 6: {
        int b = rnd() & 1, k = b ? KB : KI;
        kind[at] = k;
        return mk(VK_OP_NOT, b ? VS_BOOL : VS_INT, 1, arg_of(kind, at, k), 0, 0);
    }
    case 7: { /* SELECT of any kind */
        int k = (int)(rnd() % 3);
        kind[at] = k;
        return mk(VK_OP_SELECT, k == KF ? VS_FLOAT : k == KB ? VS_BOOL : VS_INT, 3, arg_of(kind, at, KB),
                  arg_of(kind, at, k), arg_of(kind, at, k));
    }
    case 8:
        kind[at] = KF;
        return mk(VK_OP_I_TO_F, VS_INT, 1, arg_of(kind, at, KI), 0, 0);
    case 9:
        kind[at] = KB;
        return mk(VK_OP_I_TO_B, VS_INT, 1, arg_of(kind, at, KI), 0, 0);
    case 10:
        kind[at] = KI;
        return mk(VK_OP_B_TO_I, VS_BOOL, 1, arg_of(kind, at, KB), 0, 0);
    case 11: { /* a copy */
        int k = (int)(rnd() % 3);
        kind[at] = k;
        return mk(VK_EXPR_COPY, k == KF ? VS_FLOAT : k == KB ? VS_BOOL : VS_INT, 1, arg_of(kind, at, k), 0, 0);
    }
    /* the element path's */
    case 12:
        kind[at] = KI;
        return mk(VK_OP_XOR, VS_INT, 2, arg_of(kind, at, KI), arg_of(kind, at, KI), 0);
    case 13:
        kind[at] = KF;
        return mk((rnd() & 1) ? VK_OP_SQRT : VK_OP_EXP, VS_FLOAT, 1, arg_of(kind, at, KF), 0, 0);
    case 14:
        kind[at] = KI;
        return mk((rnd() & 1) ? VK_OP_FLOOR : VK_OP_ROUND, VS_FLOAT, 1, arg_of(kind, at, KF), 0, 0);
    default: /* INDEX over the spread Int leaf: start and stride */
        kind[at] = KI;
        return mk(VK_EXPR_INDEX, VS_INT, 2, -1 - 4, -1 - 4, 0);
    }
}

/* One random chain over N elements, run both ways; 1 when every output agrees. */
static int one_chain(int64_t n)
{
    int64_t m = 1 + (int64_t)(rnd() % 7), nn = n ? n : 1;
    int32_t *iv = malloc((size_t)nn * 4), *bv = malloc((size_t)nn * 4), *is = malloc((size_t)m * 4);
    double *fv = malloc((size_t)nn * 8), *fs = malloc((size_t)m * 8);
    int64_t *off = malloc((size_t)m * 8), *pos = malloc((size_t)nn * 8);
    for (int64_t i = 0; i < n; i++) {
        iv[i] = (int32_t)(rnd() % 2001) - 1000;
        bv[i] = (int32_t)(rnd() & 1);
        fv[i] = ((double)(int32_t)rnd()) / 65536.0;
        pos[i] = i;
    }
    for (int64_t i = n - 1; i > 0; i--) { /* a permutation for the positioned outputs */
        int64_t j = (int64_t)(rnd() % (uint32_t)(i + 1)), x = pos[i];
        pos[i] = pos[j];
        pos[j] = x;
    }
    for (int64_t s = 0; s < m; s++) { /* M segments tiling N (some empty) */
        off[s] = s == 0 ? 0 : off[s - 1] + (int64_t)(rnd() % (uint32_t)(n / m + 2));
        if (off[s] > n)
            off[s] = n;
        is[s] = (int32_t)(rnd() % 21) - 10;
        fs[s] = (double)(int32_t)(rnd() % 2001) / 8.0;
    }
    VkExpr e;
    memset(&e, 0, sizeof e);
    e.nl = 8;
    e.leaf[0].d = iv;
    e.leaf[1].d = fv;
    e.leaf[2].i = (int32_t)(rnd() % 11) - 5;
    e.leaf[3].f = 0.75;
    e.leaf[4].d = is, e.loff[4] = off, e.lm[4] = m;
    e.leaf[5].d = fs, e.loff[5] = off, e.lm[5] = m;
    e.leaf[6].d = bv;
    e.leaf[7].d = is, e.loff[7] = off, e.lm[7] = 1;
    e.lmask = (1 << 1) | (1 << 3) | (1 << 5);
    int kind[VK_EXPR_NODES];
    e.nn = 1 + (int)(rnd() % 24);
    for (int k = 0; k < e.nn; k++)
        e.node[k] = random_node(kind, k);
    e.no = 1 + (int)(rnd() % 4);
    void *want[VK_EXPR_OUTS], *got[VK_EXPR_OUTS];
    for (int k = 0; k < e.no; k++) {
        int node = k == 0 ? e.nn - 1 : (int)(rnd() % (unsigned)e.nn);
        e.out[k].node = node;
        e.out[k].f = kind[node] == KF;
        e.out[k].pos = (rnd() & 1) ? pos : NULL;
        want[k] = calloc((size_t)nn, 8);
        got[k] = calloc((size_t)nn, 8);
    }
    for (int k = 0; k < e.no; k++)
        e.out[k].d = want[k];
    /* (through a pointer: inlined here, gcc sees the gather path read
     * the null record this chain never reaches) */
    static void (*volatile at)(const VkExpr *, int64_t) = vk_expr_at;
    for (int64_t i = 0; i < n; i++)
        at(&e, i);
    for (int k = 0; k < e.no; k++)
        e.out[k].d = got[k];
    chain_host_eval(&e, n);
    int same = 1;
    for (int k = 0; k < e.no; k++) {
        same &= memcmp(want[k], got[k], (size_t)nn * 8) == 0;
        free(want[k]);
        free(got[k]);
    }
    free(iv), free(bv), free(is), free(fv), free(fs), free(off), free(pos);
    return same;
}

int main(void)
{
    static const int64_t lens[] = { 0, 1, 5, 127, 128, 129, 300, 1000, 3162 };
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
        for (int r = 0; r < 60; r++) {
            int ok = one_chain(lens[l]);
            CHECK(ok);
            if (!ok)
                fprintf(stderr, "  a chain over %lld elements differs (round %d)\n", (long long)lens[l], r);
        }
    return check_report("test_chain_host");
}

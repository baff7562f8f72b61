/* runtime/fused/chain_host.c — a chain evaluated on the host, node by node
 * over blocks of elements (see chain_host.h). */
#include "runtime/fused/chain_host.h"
#include "kernels/vk_elem.h"

/* Elements of a block: every node's values for them stay in the cache. */
enum { BLOCK = 128 };

/* Leaf K's elements I0 .. I0 + NB into C. */
static void leaf_column(const VkExpr *e, int k, int64_t i0, int nb, VkCell *c)
{
    const VkArg *l = &e->leaf[k];
    int f = (e->lmask >> k) & 1;
    int64_t m = e->lm[k];
    if (!l->d || m == 1) { /* one value for all */
        VkCell v = vk_cell(l, f, 0);
        for (int t = 0; t < nb; t++)
            c[t] = v;
    } else if (m == 0 && f) {
        const double *d = (const double *)l->d + i0;
        for (int t = 0; t < nb; t++)
            c[t].f = d[t];
    } else if (m == 0) {
        const int32_t *d = (const int32_t *)l->d + i0;
        for (int t = 0; t < nb; t++)
            c[t].i = d[t];
    } else { /* spread over segments: each element's segment found */
        for (int t = 0; t < nb; t++)
            c[t] = vk_expr_leaf(e, k, i0 + t);
    }
}

#define COL1(OUT, EXPR)                                                       \
    do {                                                                      \
        for (int t = 0; t < nb; t++) {                                        \
            const VkCell p = x0[t];                                           \
            o[t].OUT = (EXPR);                                                \
        }                                                                     \
    } while (0)
#define COL2(OUT, EXPR)                                                       \
    do {                                                                      \
        for (int t = 0; t < nb; t++) {                                        \
            const VkCell p = x0[t], q = x1[t];                                \
            o[t].OUT = (EXPR);                                                \
        }                                                                     \
    } while (0)

/* Node ND over a block of NB elements from its argument columns X0, X1,
 * X2 into O, when it is one of the common operations; 0 otherwise. */
static int column_op(const VkExprNode *nd, const VkCell *x0, const VkCell *x1, const VkCell *x2, int nb, VkCell *o)
{
    int f = nd->ty == VS_FLOAT, b = nd->ty == VS_BOOL;
    switch (nd->op) {
    case VK_EXPR_COPY:
        for (int t = 0; t < nb; t++)
            o[t] = x0[t];
        return 1;
    case VK_OP_ADD:
        if (f) COL2(f, vs_fadd(p.f, q.f)); else COL2(i, vs_iadd(p.i, q.i));
        return 1;
    case VK_OP_SUB:
        if (f) COL2(f, vs_fsub(p.f, q.f)); else COL2(i, vs_isub(p.i, q.i));
        return 1;
    case VK_OP_MUL:
        if (f) COL2(f, vs_fmul(p.f, q.f)); else COL2(i, vs_imul(p.i, q.i));
        return 1;
    case VK_OP_LT:
        if (f) COL2(i, vs_flt(p.f, q.f)); else COL2(i, vs_ilt(p.i, q.i));
        return 1;
    case VK_OP_LE:
        if (f) COL2(i, vs_fle(p.f, q.f)); else COL2(i, vs_ile(p.i, q.i));
        return 1;
    case VK_OP_GT:
        if (f) COL2(i, vs_fgt(p.f, q.f)); else COL2(i, vs_igt(p.i, q.i));
        return 1;
    case VK_OP_GE:
        if (f) COL2(i, vs_fge(p.f, q.f)); else COL2(i, vs_ige(p.i, q.i));
        return 1;
    case VK_OP_EQ:
        if (f) COL2(i, vs_feq(p.f, q.f)); else COL2(i, vs_ieq(p.i, q.i));
        return 1;
    case VK_OP_NE:
        if (f) COL2(i, vs_fne(p.f, q.f)); else COL2(i, vs_ine(p.i, q.i));
        return 1;
    case VK_OP_AND:
        if (b) COL2(i, vs_band(p.i, q.i)); else COL2(i, vs_iand(p.i, q.i));
        return 1;
    case VK_OP_OR:
        if (b) COL2(i, vs_bor(p.i, q.i)); else COL2(i, vs_ior(p.i, q.i));
        return 1;
    case VK_OP_NOT:
        if (b) COL1(i, vs_bnot(p.i)); else COL1(i, vs_inot(p.i));
        return 1;
    case VK_OP_SELECT:
        for (int t = 0; t < nb; t++)
            o[t] = x0[t].i ? x1[t] : x2[t];
        return 1;
    case VK_OP_I_TO_F:
        COL1(f, vs_i2f(p.i));
        return 1;
    case VK_OP_I_TO_B:
        COL1(i, vs_i2b(p.i));
        return 1;
    case VK_OP_B_TO_I:
        COL1(i, vs_b2i(p.i));
        return 1;
    default:
        return 0;
    }
}

void chain_host_eval(const VkExpr *e, int64_t n)
{
    static VkCell r[VK_EXPR_NODES][BLOCK]; /* the nodes' values for a block (one chain at a time) */
    static VkCell leaf[3][BLOCK], zero[BLOCK];
    for (int64_t i0 = 0; i0 < n; i0 += BLOCK) {
        int nb = n - i0 < BLOCK ? (int)(n - i0) : BLOCK;
        for (int k = 0; k < e->nn; k++) {
            const VkExprNode *nd = &e->node[k];
            int na = vk_expr_nargs(nd);
            const VkCell *x[3] = { zero, zero, zero };
            for (int j = 0; j < na; j++) {
                int a = nd->a[j];
                if (a >= 0) {
                    x[j] = r[a];
                } else {
                    leaf_column(e, -1 - a, i0, nb, leaf[j]);
                    x[j] = leaf[j];
                }
            }
            if (column_op(nd, x[0], x[1], x[2], nb, r[k]))
                continue;
            for (int t = 0; t < nb; t++) {
                VkCell xs[3] = { x[0][t], x[1][t], x[2][t] };
                vk_expr_apply(e, nd, xs, i0 + t, &r[k][t]);
            }
        }
        for (int k = 0; k < e->no; k++) {
            const VkExprOut *o = &e->out[k];
            if (!o->d)
                continue;
            const VkCell *c = r[o->node];
            for (int t = 0; t < nb; t++) {
                int64_t at = o->pos ? o->pos[i0 + t] : i0 + t;
                if (o->f)
                    ((double *)o->d)[at] = c[t].f;
                else
                    ((int32_t *)o->d)[at] = c[t].i;
            }
        }
    }
}

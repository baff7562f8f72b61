/* kernels/vk_elem.h — one element of a VCODE elementwise instruction, and
 * the segment that holds an element: the per-element meaning behind
 * vk_map, vk_dist and vk_index (kernels.h), written once for the GPU
 * kernels (kernels/vk_map.cu, under nvcc: __host__ __device__) and the
 * emulated device's host versions (runtime/device/emul_prims.c).
 *
 * The operations are vcode/semantics.h's and the reference's
 * (runtime/interp/ops_elementwise.c): Int arithmetic wraps, Bool operands
 * read as != 0 where the reference reads them so, Float to Int as
 * vs_f2i, libm for LOG .. TANH. OP is a vcode/program.h opcode, TY the
 * instruction's type operand as a VsElem (VS_INT, VS_BOOL, VS_FLOAT). */
#ifndef KERNELS_VK_ELEM_H
#define KERNELS_VK_ELEM_H

#include "kernels/kernels.h"
#include "vcode/ops.h"

/* The instructions, numbered as vcode/program.h's Opcode (that header is
 * C only; the device tier asserts the two agree). */
#define VK_OPCODE(name, ...) VK_OP_##name,
enum { VC_OPS(VK_OPCODE) VK_OP_COUNT };
#undef VK_OPCODE

/* An element: an Int or Bool in i, a Float in f. */
typedef union {
    int32_t i;
    double f;
} VkCell;

/* Element I of argument A, a Float one when F. */
VS_FN VkCell vk_cell(const VkArg *a, int f, int64_t i)
{
    VkCell c;
    if (!a->d) {
        if (f)
            c.f = a->f;
        else
            c.i = a->i;
    } else if (f) {
        c.f = ((const double *)a->d)[i];
    } else {
        c.i = ((const int32_t *)a->d)[i];
    }
    return c;
}

/* *R = instruction OP over the elements X, Y, Z (the unused ones
 * ignored); a fault code of vcode/semantics.h (VS_OK: none). OP is one
 * of vk_map_takes'. */
VS_FN int vk_elem(int op, int ty, VkCell x, VkCell y, VkCell z, VkCell *r)
{
    int f = ty == VS_FLOAT, b = ty == VS_BOOL;
    switch (op) {
    case VK_OP_ADD: if (f) r->f = vs_fadd(x.f, y.f); else r->i = vs_iadd(x.i, y.i); return VS_OK;
    case VK_OP_SUB: if (f) r->f = vs_fsub(x.f, y.f); else r->i = vs_isub(x.i, y.i); return VS_OK;
    case VK_OP_MUL: if (f) r->f = vs_fmul(x.f, y.f); else r->i = vs_imul(x.i, y.i); return VS_OK;
    case VK_OP_DIV:
        if (f) {
            r->f = vs_fdiv(x.f, y.f);
            return VS_OK;
        }
        return vs_idiv(x.i, y.i, &r->i);
    case VK_OP_MOD: return vs_imod(x.i, y.i, &r->i);
    case VK_OP_LT: r->i = f ? vs_flt(x.f, y.f) : vs_ilt(x.i, y.i); return VS_OK;
    case VK_OP_LE: r->i = f ? vs_fle(x.f, y.f) : vs_ile(x.i, y.i); return VS_OK;
    case VK_OP_GT: r->i = f ? vs_fgt(x.f, y.f) : vs_igt(x.i, y.i); return VS_OK;
    case VK_OP_GE: r->i = f ? vs_fge(x.f, y.f) : vs_ige(x.i, y.i); return VS_OK;
    case VK_OP_EQ: r->i = f ? vs_feq(x.f, y.f) : vs_ieq(x.i, y.i); return VS_OK;
    case VK_OP_NE: r->i = f ? vs_fne(x.f, y.f) : vs_ine(x.i, y.i); return VS_OK;
    case VK_OP_LSHIFT: r->i = vs_lshift(x.i, y.i); return VS_OK;
    case VK_OP_RSHIFT: r->i = vs_rshift(x.i, y.i); return VS_OK;
    case VK_OP_AND: r->i = b ? vs_band(x.i, y.i) : vs_iand(x.i, y.i); return VS_OK;
    case VK_OP_OR: r->i = b ? vs_bor(x.i, y.i) : vs_ior(x.i, y.i); return VS_OK;
    case VK_OP_XOR: r->i = vs_ixor(x.i, y.i); return VS_OK;
    case VK_OP_NOT: r->i = b ? vs_bnot(x.i) : vs_inot(x.i); return VS_OK;
    case VK_OP_SELECT: *r = x.i ? y : z; return VS_OK;
    case VK_OP_FLOOR: r->i = vs_floor(x.f); return VS_OK;
    case VK_OP_CEIL: r->i = vs_ceil(x.f); return VS_OK;
    case VK_OP_TRUNC: r->i = vs_f2i(x.f); return VS_OK;
    case VK_OP_ROUND: r->i = vs_round(x.f); return VS_OK;
    case VK_OP_LOG: r->f = vs_log(x.f); return VS_OK;
    case VK_OP_SQRT: r->f = vs_sqrt(x.f); return VS_OK;
    case VK_OP_EXP: r->f = vs_exp(x.f); return VS_OK;
    case VK_OP_SIN: r->f = vs_sin(x.f); return VS_OK;
    case VK_OP_COS: r->f = vs_cos(x.f); return VS_OK;
    case VK_OP_TAN: r->f = vs_tan(x.f); return VS_OK;
    case VK_OP_ASIN: r->f = vs_asin(x.f); return VS_OK;
    case VK_OP_ACOS: r->f = vs_acos(x.f); return VS_OK;
    case VK_OP_ATAN: r->f = vs_atan(x.f); return VS_OK;
    case VK_OP_SINH: r->f = vs_sinh(x.f); return VS_OK;
    case VK_OP_COSH: r->f = vs_cosh(x.f); return VS_OK;
    case VK_OP_TANH: r->f = vs_tanh(x.f); return VS_OK;
    case VK_OP_I_TO_F: r->f = vs_i2f(x.i); return VS_OK;
    case VK_OP_I_TO_B: r->i = vs_i2b(x.i); return VS_OK;
    case VK_OP_B_TO_I: r->i = vs_b2i(x.i); return VS_OK;
    default: return VS_CHECKIDX; /* not an elementwise instruction: vk_map refuses it first */
    }
}

/* Element I of an elementwise instruction's result into OUT (Floats
 * when OUT_F), from ARGS[0 .. NARGS) (FMASK: which hold Floats); its
 * fault code, and OUT untouched, when it fails. The loop around it is
 * the GPU's grid or the emulated device's. */
VS_FN int vk_map_at(int op, int ty, int fmask, int out_f, const VkArg *args, int nargs, int64_t i, void *out)
{
    VkCell zero, r;
    zero.f = 0.0;
    VkCell x = vk_cell(&args[0], fmask & 1, i);
    VkCell y = nargs > 1 ? vk_cell(&args[1], fmask & 2, i) : zero;
    VkCell z = nargs > 2 ? vk_cell(&args[2], fmask & 4, i) : zero;
    int f = vk_elem(op, ty, x, y, z, &r);
    if (f != VS_OK)
        return f;
    if (out_f)
        ((double *)out)[i] = r.f;
    else
        ((int32_t *)out)[i] = r.i;
    return VS_OK;
}

/* 1 when vk_map runs instruction OP (every elementwise instruction but
 * RAND, which is vk_rand). */
VS_FN int vk_map_takes(int op)
{
    return (op >= VK_OP_ADD && op <= VK_OP_SELECT) || (op >= VK_OP_FLOOR && op <= VK_OP_B_TO_I);
}

/* The segment that holds element I of a descriptor whose non-empty
 * segments tile the data: the last K with OFF[K] <= I (an empty segment
 * shares its offset with the next one, which is then the one found). */
VS_FN int64_t vk_seg_find(const int64_t *off, int64_t m, int64_t i)
{
    int64_t lo = 0, hi = m; /* off[lo] <= i < off[hi] (off[m] taken as infinite) */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (off[mid] <= i)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* *W = the least of *W and V (the GPU's atomicMin; the emulated device
 * runs one element at a time). */
VS_FN void vk_fault_min(unsigned long long *w, unsigned long long v)
{
#ifdef __CUDA_ARCH__
    if (v < *(volatile unsigned long long *)w) /* most bad elements lose at once: no atomic */
        atomicMin(w, v);
#else
    if (v < *w)
        *w = v;
#endif
}

/* A gather node's source leaf L (kernels.h VK_EXPR_GATHER): a vector leaf
 * of E, not spread over segments. */
VS_FN int vk_expr_gather_ok(const VkExpr *e, int l)
{
    return l >= 0 && l < e->nl && e->lm[l] == 0 && e->leaf[l].d && e->gfault && e->gm >= 1 &&
           (e->gm == 1 || (e->glen && e->gsoff && e->gdoff));
}

/* 1 when E is a chain vk_expr runs: 1 to VK_EXPR_NODES nodes, each an
 * instruction of vk_map_takes that cannot fail (or a copy, or a gather),
 * whose operands are earlier nodes or leaves E has, at most
 * VK_EXPR_LEAVES leaves, and 1 to VK_EXPR_OUTS outputs of its nodes (0
 * to, with a gather). */
VS_FN int vk_expr_ok(const VkExpr *e)
{
    if (e->nn < 1 || e->nn > VK_EXPR_NODES || e->nl < 0 || e->nl > VK_EXPR_LEAVES || e->no < (e->gfault ? 0 : 1) ||
        e->no > VK_EXPR_OUTS)
        return 0;
    for (int k = 0; k < e->nl; k++)
        if (e->lm[k] < 0 || (e->lm[k] > 1 && !e->loff[k]))
            return 0;
    for (int k = 0; k < e->nn; k++) {
        const VkExprNode *nd = &e->node[k];
        if (nd->op == VK_EXPR_COPY         ? nd->nargs != 1
            : nd->op == VK_EXPR_GATHER     ? nd->nargs != 2 || !vk_expr_gather_ok(e, -1 - nd->a[1])
            : nd->op == VK_EXPR_INDEX      ? nd->nargs != 2 || nd->a[0] >= 0 || nd->a[1] >= 0 ||
                                             -1 - nd->a[0] >= e->nl || -1 - nd->a[1] >= e->nl ||
                                             e->lm[-1 - nd->a[0]] < 1 || e->lm[-1 - nd->a[1]] != e->lm[-1 - nd->a[0]]
                                           : !vk_map_takes(nd->op) || nd->nargs < 1 || nd->nargs > 3 ||
                                         (nd->ty != VS_FLOAT && (nd->op == VK_OP_DIV || nd->op == VK_OP_MOD)))
            return 0;
        for (int j = 0; j < nd->nargs; j++)
            if (nd->a[j] >= k || -1 - nd->a[j] >= e->nl)
                return 0;
    }
    for (int k = 0; k < e->no; k++)
        if (e->out[k].node < 0 || e->out[k].node >= e->nn)
            return 0;
    return 1;
}

/* Element I of leaf K of chain E (spread over segments: its segment's). */
VS_FN VkCell vk_expr_leaf(const VkExpr *e, int k, int64_t i)
{
    int64_t m = e->lm[k];
    int64_t at = m == 0 ? i : m == 1 ? 0 : vk_seg_find(e->loff[k], m, i);
    return vk_cell(&e->leaf[k], (e->lmask >> k) & 1, at);
}

/* Element I's position in its segment of leaf K's descriptor (a leaf
 * spread over segments: LM >= 1). */
VS_FN int64_t vk_expr_seg_pos(const VkExpr *e, int k, int64_t i)
{
    int64_t m = e->lm[k];
    return m <= 1 ? i : i - e->loff[k][vk_seg_find(e->loff[k], m, i)];
}

/* The length of source segment K of E's gathers. */
VS_FN int64_t vk_expr_gather_len(const VkExpr *e, int64_t k)
{
    return e->gm > 1 ? (e->glen[k] > 0 ? e->glen[k] : 0) : e->gnsrc;
}

/* The working word of E's gathers: the library's (GWORD, all ones
 * between runs) on a GPU, else GFAULT->j, set to all ones before the run. */
VS_FN unsigned long long *vk_expr_word(const VkExpr *e)
{
    return e->gword ? e->gword : (unsigned long long *)&e->gfault->j;
}

/* Element I of a gather of E from source leaf L at index J (0 and
 * reported when J is outside its segment). */
VS_FN VkCell vk_expr_gather(const VkExpr *e, int l, int32_t j, int64_t i)
{
    int64_t k = e->gm > 1 ? vk_seg_find(e->gdoff, e->gm, i) : 0;
    if (j < 0 || j >= vk_expr_gather_len(e, k)) {
        vk_fault_min(vk_expr_word(e), ((unsigned long long)i << 32) | (uint32_t)j);
        VkCell z;
        z.f = 0.0;
        return z;
    }
    return vk_cell(&e->leaf[l], (e->lmask >> l) & 1, (e->gm > 1 ? e->gsoff[k] : 0) + j);
}

/* Before a run of E with a gather: its working word all ones. */
VS_FN void vk_expr_fault_begin(const VkExpr *e) { e->gfault->j = -1; }

/* After it: the working word W made a permute's record (kernels.h). */
VS_FN void vk_expr_fault_record(const VkExpr *e, unsigned long long w)
{
    VkPermFault *r = e->gfault;
    if (w == ~0ull) {
        r->err = ~0ull;
        return;
    }
    int64_t i = (int64_t)(w >> 32);
    int64_t k = e->gm > 1 ? vk_seg_find(e->gdoff, e->gm, i) : 0;
    r->err = (unsigned long long)i << 1;
    r->j = (int32_t)(uint32_t)w;
    r->k = k;
    r->len = vk_expr_gather_len(e, k);
}

/* The same from GFAULT->j, the working word (the emulated device). */
VS_FN void vk_expr_fault_info(const VkExpr *e) { vk_expr_fault_record(e, (unsigned long long)e->gfault->j); }

/* The arguments node ND reads (a gather's source is read at its index,
 * not as an argument). */
VS_FN int vk_expr_nargs(const VkExprNode *nd) { return nd->op == VK_EXPR_GATHER ? 1 : nd->nargs; }

/* *R = node ND of chain E at element I, from its arguments X. */
VS_FN void vk_expr_apply(const VkExpr *e, const VkExprNode *nd, const VkCell *x, int64_t i, VkCell *r)
{
    if (nd->op == VK_EXPR_COPY)
        *r = x[0];
    else if (nd->op == VK_EXPR_INDEX) /* start + (position in the segment) * stride, wrapping */
        r->i = (int32_t)((uint32_t)x[0].i + (uint32_t)vk_expr_seg_pos(e, -1 - nd->a[0], i) * (uint32_t)x[1].i);
    else if (nd->op == VK_EXPR_GATHER)
        *r = vk_expr_gather(e, -1 - nd->a[1], x[0].i, i);
    else
        (void)vk_elem(nd->op, nd->ty, x[0], x[1], x[2], r);
}

/* Element I of every node of chain E (checked by vk_expr_ok) into R. */
VS_FN void vk_expr_eval(const VkExpr *e, int64_t i, VkCell *r)
{
    for (int k = 0; k < e->nn; k++) {
        const VkExprNode *nd = &e->node[k];
        VkCell x[3];
        x[0].f = x[1].f = x[2].f = 0.0;
        int na = vk_expr_nargs(nd);
        for (int j = 0; j < na; j++) {
            int a = nd->a[j];
            x[j] = a >= 0 ? r[a] : vk_expr_leaf(e, -1 - a, i);
        }
        vk_expr_apply(e, nd, x, i, &r[k]);
    }
}

/* Element I of chain E's outputs from its nodes' R (vk_expr_eval). */
VS_FN void vk_expr_store(const VkExpr *e, int64_t i, const VkCell *r)
{
    for (int k = 0; k < e->no; k++) {
        const VkExprOut *o = &e->out[k];
        if (!o->d)
            continue;
        int64_t at = o->pos ? o->pos[i] : i;
        if (o->f)
            ((double *)o->d)[at] = r[o->node].f;
        else
            ((int32_t *)o->d)[at] = r[o->node].i;
    }
}

/* Element I of chain E's outputs: every node, then every output. */
VS_FN void vk_expr_at(const VkExpr *e, int64_t i)
{
    VkCell r[VK_EXPR_NODES];
    vk_expr_eval(e, i, r);
    vk_expr_store(e, i, r);
}

/* Element I of DIST's result (OFF the descriptor's M offsets; VAL
 * Floats when F), and of INDEX's. */
VS_FN void vk_dist_at(int f, const VkArg *val, const int64_t *off, int64_t m, int64_t i, void *out)
{
    VkCell c = vk_cell(val, f, m > 1 ? vk_seg_find(off, m, i) : 0);
    if (f)
        ((double *)out)[i] = c.f;
    else
        ((int32_t *)out)[i] = c.i;
}

VS_FN void vk_index_at(const VkArg *start, const VkArg *stride, const int64_t *off, int64_t m, int64_t i, int32_t *out)
{
    int64_t s = m > 1 ? vk_seg_find(off, m, i) : 0, j = i - (m > 1 ? off[s] : 0);
    uint32_t c = (uint32_t)vk_cell(start, 0, s).i, d = (uint32_t)vk_cell(stride, 0, s).i;
    out[i] = (int32_t)(c + (uint32_t)j * d);
}

/* EXTRACT's and REPLACE's position of segment k: its offset plus its
 * index; 1 when the index is outside the segment (a negative length holds
 * none), its position then 0, so that a gather launched before the check
 * is read stays inside a vector that has elements. */
VS_FN int vk_position_at(const VkArg *idx, const int32_t *len, const int64_t *off, int64_t k, int64_t *pos)
{
    int32_t ix = vk_cell(idx, 0, k).i, lim = len[k] > 0 ? len[k] : 0;
    int bad = (uint32_t)ix >= (uint32_t)lim;
    pos[k] = bad ? 0 : off[k] + ix;
    return bad;
}

/* A fault record (vk_map): the first failing element and its code, as
 * one number that atomicMin keeps the least of; VK_NO_FAULT when none. */
#define VK_NO_FAULT (~0ull)
VS_FN unsigned long long vk_fault_pack(int64_t i, int code) { return ((unsigned long long)i << 3) | (unsigned)code; }

#endif

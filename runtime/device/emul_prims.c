/* runtime/device/emul_prims.c — host versions of the primitives (see
 * emul_prims.h). */
#include "runtime/device/emul_prims.h"
#include "runtime/core/rand.h"
#include "runtime/core/rank.h"
#include "runtime/core/value.h"
#include "kernels/vk_elem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the primitives ------------------------------------------------------------ */

static int em_seg_offsets(const int32_t *len, int64_t m, int64_t *off, int64_t *n_host)
{
    int64_t acc = 0;
    for (int64_t k = 0; k < m; k++) {
        off[k] = acc;
        acc += len[k];
    }
    if (n_host)
        *n_host = acc;
    return 0;
}

static int em_seg_shape(const int32_t *len, int64_t m, int64_t *off, VkShape *rec)
{
    if (m < 1)
        return -1;
    int64_t n = 0;
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    em_seg_offsets(len, m, off, &n);
    for (int64_t k = 0; k < m; k++) {
        lo = len[k] < lo ? len[k] : lo;
        hi = len[k] > hi ? len[k] : hi;
    }
    rec->n = n;
    rec->lo = lo;
    rec->hi = hi;
    return 0;
}

/* Combine segment [s, s+l) of IN from the identity, strictly left to
 * right; SCAN writes the running value before each element. */
#define FOLD(T, ID, COMBINE)                                                  \
    do {                                                                      \
        const T *x = (const T *)in;                                           \
        T *o = (T *)out;                                                      \
        T acc = (ID);                                                         \
        for (int64_t i = 0; i < l; i++) {                                     \
            T v = x[s + i];                                                   \
            if (scan)                                                         \
                o[s + i] = acc;                                               \
            acc = (COMBINE);                                                  \
        }                                                                     \
        if (!scan)                                                            \
            o[at] = acc;                                                      \
    } while (0)

/* The operator's identity and combine are vcode/semantics.h's. */
static int fold(VsRop r, const void *in, int64_t s, int64_t l, void *out, int64_t at, int scan)
{
    if ((unsigned)r >= (unsigned)VS_NROPS)
        return -1;
    if (vs_rop_elem(r) == VS_FLOAT)
        FOLD(double, vs_rop_fident(r), vs_rop_fcombine(r, acc, v));
    else
        FOLD(int32_t, vs_rop_iident(r), vs_rop_icombine(r, acc, v));
    return 0;
}

static int em_reduce(VsRop r, const void *in, int64_t n, void *out) { return fold(r, in, 0, n > 0 ? n : 0, out, 0, 0); }

static int em_scan(VsRop r, const void *in, int64_t n, void *out) { return fold(r, in, 0, n > 0 ? n : 0, out, 0, 1); }

static int em_seg_reduce(VsRop r, const void *in, const int32_t *len, const int64_t *off, int64_t m,
                         int64_t n, int64_t longest, void *out)
{
    (void)n, (void)longest;
    for (int64_t k = 0; k < m; k++)
        if (fold(r, in, off[k], len[k] > 0 ? len[k] : 0, out, k, 0) != 0)
            return -1;
    return 0;
}

static int em_seg_scan(VsRop r, const void *in, const int32_t *len, const int64_t *off, int64_t m,
                       int64_t n, int64_t longest, void *out)
{
    (void)n, (void)longest;
    for (int64_t k = 0; k < m; k++)
        if (fold(r, in, off[k], len[k] > 0 ? len[k] : 0, out, 0, 1) != 0)
            return -1;
    return 0;
}

/* The reference's rank routine over borrowed buffers. */
static int em_seg_rank(int down, VsElem ty, const void *keys, const int32_t *len, const int64_t *off, int64_t m,
                       int64_t n, int32_t *rank)
{
    (void)off;
    int32_t one = (int32_t)n; /* no descriptor: one segment of n (kernels.h) */
    if (!len)
        len = &one, m = 1;
    Value d, sd;
    memset(&d, 0, sizeof d);
    memset(&sd, 0, sizeof sd);
    d.rc = 1;
    d.type = ty == VS_FLOAT ? VT_FLOAT : VT_INT;
    d.len = n;
    d.data = (void *)keys;
    sd.rc = 1;
    sd.type = VT_SEGDES;
    sd.sane = 1;
    sd.len = m;
    sd.n = n;
    sd.data = (void *)len;
    rank_segments(&d, &sd, down, rank);
    seg_drop_offsets(&sd); /* the offsets rank_segments may have cached */
    return 0;
}

static int em_rand(const uint32_t ring[31], uint64_t k, int64_t n, int32_t *out)
{
    RandState st;
    memcpy(st.ring, ring, sizeof st.ring);
    st.k = k;
    rnd_fill(&st, out, n);
    return 0;
}

static int em_elems_get(size_t esize, const void *src, const int64_t *pos, int64_t m, void *dst)
{
    for (int64_t k = 0; k < m; k++)
        memcpy((char *)dst + (size_t)k * esize, (const char *)src + (size_t)pos[k] * esize, esize);
    return 0;
}

static int em_elems_put(size_t esize, void *dst, const int64_t *pos, int64_t m, const void *src)
{
    for (int64_t k = 0; k < m; k++)
        memcpy((char *)dst + (size_t)pos[k] * esize, (const char *)src + (size_t)k * esize, esize);
    return 0;
}

/* The device tier's instructions: kernels/vk_elem.h's meaning of an
 * element, in order; a fault stops the loop at the first failing element
 * (the least, as the GPU's atomicMin keeps). */
static int em_map(int op, int ty, int fmask, int out_f, const VkArg *args, int nargs, int64_t n, void *out,
                  unsigned long long *fault)
{
    if (!vk_map_takes(op) || nargs < 1 || nargs > 3)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        int f = vk_map_at(op, ty, fmask, out_f, args, nargs, i, out);
        if (f != VS_OK) {
            if (fault && vk_fault_pack(i, f) < *fault)
                *fault = vk_fault_pack(i, f);
            return 0;
        }
    }
    return 0;
}

static int em_expr(const VkExpr *e, int64_t n)
{
    if (!vk_expr_ok(e))
        return -1;
    if (e->gfault)
        vk_expr_fault_begin(e);
    for (int64_t i = 0; i < n; i++)
        vk_expr_at(e, i);
    if (e->gfault)
        vk_expr_fault_info(e);
    return 0;
}

static int em_expr_reduce(const VkExpr *e, int node, VsRop rop, int64_t n, void *out)
{
    if (!vk_expr_ok(e) || node < 0 || node >= e->nn || (unsigned)rop >= (unsigned)VS_NROPS)
        return -1;
    int f = vs_rop_elem(rop) == VS_FLOAT;
    int32_t ai = vs_rop_iident(rop);
    double af = vs_rop_fident(rop);
    VkCell r[VK_EXPR_NODES];
    if (e->gfault)
        vk_expr_fault_begin(e);
    for (int64_t i = 0; i < n; i++) {
        vk_expr_eval(e, i, r);
        vk_expr_store(e, i, r);
        if (f)
            af = vs_rop_fcombine(rop, af, r[node].f);
        else
            ai = vs_rop_icombine(rop, ai, r[node].i);
    }
    if (f)
        *(double *)out = af;
    else
        *(int32_t *)out = ai;
    if (e->gfault)
        vk_expr_fault_info(e);
    return 0;
}

static int em_dist(size_t esize, const VkArg *val, const int64_t *off, int64_t m, int64_t n, void *out)
{
    for (int64_t i = 0; i < n; i++)
        vk_dist_at(esize == 8, val, off, m, i, out);
    return 0;
}

static int em_index(const VkArg *start, const VkArg *stride, const int64_t *off, int64_t m, int64_t n,
                    int32_t *out)
{
    for (int64_t i = 0; i < n; i++)
        vk_index_at(start, stride, off, m, i, out);
    return 0;
}

/* The least bad segment goes into the fault record, as the GPU's atomicMin
 * keeps it. */
static int em_seg_positions(const VkArg *idx, const int32_t *len, const int64_t *off, int64_t m, int64_t *pos,
                            unsigned long long *fault)
{
    for (int64_t k = 0; k < m; k++)
        if (vk_position_at(idx, len, off, k, pos) && vk_fault_pack(k, 1) < *fault)
            *fault = vk_fault_pack(k, 1);
    return 0;
}

/* The last failure's message (the permutes': the reference's words). */
static _Thread_local char em_msg[256] = "host primitive failed";

static int em_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(em_msg, sizeof em_msg, fmt, ap);
    va_end(ap);
    return -1;
}

/* A permute's side: segment K's offset and length (one segment of N when
 * LEN is NULL); a length below 0 is 0. */
static int64_t em_seg_len(const int32_t *len, int64_t n, int64_t k)
{
    if (!len)
        return n;
    return len[k] > 0 ? len[k] : 0;
}

/* A permute's first bad position POS (KIND 1: segment K has no partner on
 * SIDE; 0: index J outside its segment of length LEN): into the record REC
 * when given (the call then succeeds, as the GPU's does without waiting),
 * else the failure with the reference's message. */
static int em_perm_fault(VkPermFault *rec, int64_t pos, int kind, int64_t j, int64_t k, int64_t len, const char *side)
{
    if (rec) {
        rec->err = ((unsigned long long)pos << 1) | (unsigned)kind;
        rec->j = j;
        rec->k = k;
        rec->len = len;
        return 0;
    }
    if (kind)
        return em_fail(VS_MSG_PERMUTE_PARTNER, (long long)k, side);
    return em_fail(VS_MSG_PERMUTE_INDEX, (long long)j, (long long)pos,
                   (long long)len);
}

/* Source segment k into destination segment k, in source order (the
 * later element wins a collision), each index checked as it is used; the
 * first bad one in that order is reported, as the reference reports it.
 * VK_SCATTER_ZERO: the result cleared first (kernels.h). */
static int em_scatter(size_t es, const void *in, int64_t ns, const int32_t *idx, const int32_t *fl,
                      const int32_t *slen, const int64_t *soff, int64_t sm, const int32_t *dlen,
                      const int64_t *doff, int64_t dm, void *out, int64_t nd, int mode, VkPermFault *rec)
{
    if ((mode & VK_SCATTER_ZERO) && nd > 0) /* the positions no element writes stay 0 */
        memset(out, 0, (size_t)nd * es);
    if (rec)
        rec->err = ~0ull;
    if (!slen)
        sm = dm = 1;
    for (int64_t k = 0; k < sm; k++) {
        int64_t s0 = slen ? soff[k] : 0, sl = em_seg_len(slen, ns, k);
        if (sl == 0)
            continue;
        if (k >= dm)
            return em_perm_fault(rec, s0, 1, 0, k, 0, "destination");
        int64_t d0 = dlen ? doff[k] : 0, dl = em_seg_len(dlen, nd, k);
        for (int64_t i = s0; i < s0 + sl; i++) {
            if (fl && !fl[i])
                continue;
            if ((uint32_t)idx[i] >= (uint32_t)dl)
                return em_perm_fault(rec, i, 0, idx[i], k, dl, "destination");
            memcpy((char *)out + (size_t)(d0 + idx[i]) * es, (const char *)in + (size_t)i * es, es);
        }
    }
    return 0;
}

/* NV scatters at one index (vk_scatter_many): one each. */
static int em_scatter_many(int nv, const size_t *es, const void *const *in, void *const *out, int64_t ns,
                           const int32_t *idx, const int32_t *slen, const int64_t *soff, int64_t sm, const int32_t *dlen,
                           const int64_t *doff, int64_t dm, int64_t nd, int mode, VkPermFault *rec)
{
    if (nv < 1 || nv > VK_SCATTER_MANY)
        return em_fail("vk_scatter_many: %d vectors (1 to %d)", nv, VK_SCATTER_MANY);
    for (int v = 0; v < nv; v++)
        if (em_scatter(es[v], in[v], ns, idx, NULL, slen, soff, sm, dlen, doff, dm, out[v], nd, mode, rec) != 0)
            return -1;
    return 0;
}

/* DPERMUTE into a fill: FILL's value into all ND elements, then the
 * scatter over them. */
static int em_scatter_fill(size_t es, const VkArg *fill, const void *in, int64_t ns, const int32_t *idx,
                           const int32_t *fl, const int32_t *slen, const int64_t *soff, int64_t sm, const int32_t *dlen,
                           const int64_t *doff, int64_t dm, void *out, int64_t nd, VkPermFault *rec)
{
    for (int64_t i = 0; i < nd; i++) {
        if (es == 8)
            ((double *)out)[i] = fill->f;
        else
            ((int32_t *)out)[i] = fill->i;
    }
    return em_scatter(es, in, ns, idx, fl, slen, soff, sm, dlen, doff, dm, out, nd, 0, rec);
}

/* NV DPERMUTEs into fills at one index (vk_scatter_fill_many): one each. */
static int em_scatter_fill_many(int nv, const size_t *es, const VkArg *fill, const void *const *in,
                                void *const *out, int64_t ns, const int32_t *idx, const int32_t *slen,
                                const int64_t *soff, int64_t sm, const int32_t *dlen, const int64_t *doff, int64_t dm,
                                int64_t nd, VkPermFault *rec)
{
    if (nv < 1 || nv > VK_SCATTER_MANY)
        return em_fail("vk_scatter_fill_many: %d vectors (1 to %d)", nv, VK_SCATTER_MANY);
    for (int v = 0; v < nv; v++)
        if (em_scatter_fill(es[v], &fill[v], in[v], ns, idx, NULL, slen, soff, sm, dlen, doff, dm, out[v], nd, rec) != 0)
            return -1;
    return 0;
}

/* Destination segment k from source segment k, in destination order;
 * where FL is given and 0, the element is 0. */
static int em_gather(size_t es, const void *in, int64_t ns, const int32_t *idx, const int32_t *fl,
                     const int32_t *slen, const int64_t *soff, int64_t sm, const int32_t *dlen,
                     const int64_t *doff, int64_t dm, void *out, int64_t nd, VkPermFault *rec)
{
    if (rec)
        rec->err = ~0ull;
    if (!slen)
        sm = dm = 1;
    for (int64_t k = 0; k < dm; k++) {
        int64_t d0 = dlen ? doff[k] : 0, dl = em_seg_len(dlen, nd, k);
        int64_t s0 = k < sm && slen ? soff[k] : 0, sl = k < sm ? em_seg_len(slen, ns, k) : 0;
        for (int64_t i = d0; i < d0 + dl; i++) {
            if (fl && !fl[i]) {
                memset((char *)out + (size_t)i * es, 0, es);
                continue;
            }
            if ((uint32_t)idx[i] >= (uint32_t)sl)
                return em_perm_fault(rec, i, k >= sm, idx[i], k, sl, "source");
            memcpy((char *)out + (size_t)i * es, (const char *)in + (size_t)(s0 + idx[i]) * es, es);
        }
    }
    return 0;
}

static int em_select_flagged(VsElem ty, const void *in, const int32_t *fl, int64_t n, void *out, int64_t *count)
{
    size_t es = ty == VS_FLOAT ? 8 : 4;
    int64_t w = 0;
    for (int64_t i = 0; i < n; i++)
        if (fl[i])
            memcpy((char *)out + (size_t)w++ * es, (const char *)in + (size_t)i * es, es);
    if (count)
        *count = w;
    return 0;
}

static const char *em_lib_error(void) { return em_msg; }

void emu_prims_bind(VkLib *lib)
{
    lib->seg_offsets = em_seg_offsets;
    lib->seg_shape = em_seg_shape;
    lib->reduce = em_reduce;
    lib->scan = em_scan;
    lib->seg_reduce = em_seg_reduce;
    lib->seg_scan = em_seg_scan;
    lib->seg_rank = em_seg_rank;
    lib->rand = em_rand;
    lib->elems_get = em_elems_get;
    lib->elems_put = em_elems_put;
    lib->map = em_map;
    lib->expr = em_expr;
    lib->expr_reduce = em_expr_reduce;
    lib->dist = em_dist;
    lib->index = em_index;
    lib->seg_positions = em_seg_positions;
    lib->scatter = em_scatter;
    lib->scatter_many = em_scatter_many;
    lib->scatter_fill = em_scatter_fill;
    lib->scatter_fill_many = em_scatter_fill_many;
    lib->gather = em_gather;
    lib->select_flagged = em_select_flagged;
    lib->last_error = em_lib_error;
}

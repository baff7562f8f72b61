/* runtime/interp/ops_permute.c — the six permutes (vcode/SPEC.md §4.4).
 *
 * Indices are relative to their segment and are checked: an index outside
 * its segment is a fatal error (the classic wrote outside the vector).
 * Scatters write in increasing source position, so the later source
 * element wins a collision. Positions a scatter leaves unwritten are 0. */
#include "runtime/interp/ops.h"
#include "runtime/core/errors.h"

#include <stdint.h>
#include <string.h>

void ops_permute_bad_index(int64_t i, int64_t idx, int64_t len)
{
    rt_fatal(VS_MSG_PERMUTE_INDEX,
             (long long)idx, (long long)i, (long long)len);
}


/* Pairs segment k of the source with segment k of the destination; a
 * non-empty segment without a partner is an error. */
void ops_permute_no_partner(int64_t k, const char *what)
{
    rt_fatal(VS_MSG_PERMUTE_PARTNER, (long long)k, what);
}

/* The permutes move one segment at a time, each index checked as it is
 * used: four indices are read and checked with one branch, then the four
 * elements move (a branch that is never taken costs nothing in these
 * memory-bound loops; the plain loop gcc -O2 makes of this was up to twice
 * the classic's time, and inlined into the segment walk 1.8x on bh_16k's
 * gathers of 2300 floats). The runs are kept out of line so that their
 * loops get the registers. A run stops at the first index that is not
 * below LIM and returns its position (N when there is none); the caller
 * reports it. */
#define DEF_SCATTER_RUN(NAME, T)                                              \
    __attribute__((noinline)) static int64_t NAME(T *restrict o, const T *restrict x, \
                                                  const int32_t *restrict ix, int64_t n, uint32_t lim) \
    {                                                                         \
        int64_t i = 0;                                                        \
        for (; i + 4 <= n; i += 4) {                                          \
            uint32_t a = (uint32_t)ix[i], b = (uint32_t)ix[i + 1];            \
            uint32_t c = (uint32_t)ix[i + 2], d = (uint32_t)ix[i + 3];        \
            if ((a >= lim) | (b >= lim) | (c >= lim) | (d >= lim))            \
                break;                                                        \
            o[a] = x[i];                                                      \
            o[b] = x[i + 1];                                                  \
            o[c] = x[i + 2];                                                  \
            o[d] = x[i + 3];                                                  \
        }                                                                     \
        for (; i < n; i++) {                                                  \
            uint32_t a = (uint32_t)ix[i];                                     \
            if (a >= lim)                                                     \
                return i;                                                     \
            o[a] = x[i];                                                      \
        }                                                                     \
        return n;                                                             \
    }
DEF_SCATTER_RUN(scatter_run_i, int32_t)
DEF_SCATTER_RUN(scatter_run_f, double)

/* The gather's output may be the index vector's storage (BPERMUTE reuses
 * it: each index is read before its slot is written), so O and IX are not
 * restrict. */
#define DEF_GATHER_RUN(NAME, T)                                               \
    __attribute__((noinline)) static int64_t NAME(T *o, const T *restrict x, const int32_t *ix, \
                                                  int64_t n, uint32_t lim)    \
    {                                                                         \
        int64_t i = 0;                                                        \
        for (; i + 4 <= n; i += 4) {                                          \
            uint32_t a = (uint32_t)ix[i], b = (uint32_t)ix[i + 1];            \
            uint32_t c = (uint32_t)ix[i + 2], d = (uint32_t)ix[i + 3];        \
            if ((a >= lim) | (b >= lim) | (c >= lim) | (d >= lim))            \
                break;                                                        \
            T va = x[a], vb = x[b], vc = x[c], vd = x[d];                     \
            o[i] = va;                                                        \
            o[i + 1] = vb;                                                    \
            o[i + 2] = vc;                                                    \
            o[i + 3] = vd;                                                    \
        }                                                                     \
        for (; i < n; i++) {                                                  \
            uint32_t a = (uint32_t)ix[i];                                     \
            if (a >= lim)                                                     \
                return i;                                                     \
            o[i] = x[a];                                                      \
        }                                                                     \
        return n;                                                             \
    }
DEF_GATHER_RUN(gather_run_i, int32_t)
DEF_GATHER_RUN(gather_run_f, double)

/* O[IX[i]] = X[i] for the N elements of one source segment (source
 * positions from BASE), the indices checked against the destination
 * segment's length DL; with FL, only where FL[i]. */
#define DEF_SCATTER_SEG(NAME, RUN, T)                                         \
    static void NAME(T *o, const T *x, const int32_t *ix, const int32_t *fl, \
                     int64_t n, int64_t dl, int64_t base)                     \
    {                                                                         \
        uint32_t lim = (uint32_t)dl;                                          \
        if (fl) {                                                             \
            for (int64_t i = 0; i < n; i++) {                                 \
                if (!fl[i])                                                   \
                    continue;                                                 \
                uint32_t j = (uint32_t)ix[i];                                 \
                if (j >= lim)                                                 \
                    ops_permute_bad_index(base + i, ix[i], dl);               \
                o[j] = x[i];                                                  \
            }                                                                 \
            return;                                                           \
        }                                                                     \
        int64_t i = RUN(o, x, ix, n, lim);                                    \
        if (i < n)                                                            \
            ops_permute_bad_index(base + i, ix[i], dl);                       \
    }

DEF_SCATTER_SEG(scatter_seg_i, scatter_run_i, int32_t)
DEF_SCATTER_SEG(scatter_seg_f, scatter_run_f, double)

/* O[i] = X[IX[i]] for the N elements of one destination segment
 * (positions from BASE), the indices checked against the source segment's
 * length SL; with FL, O[i] = 0 where !FL[i]. A bad index where the
 * destination segment has no source partner (NOSRC) is that error. */
#define DEF_GATHER_SEG(NAME, RUN, T)                                          \
    static void NAME(T *o, const T *x, const int32_t *ix, const int32_t *fl,  \
                     int64_t n, int64_t sl, int64_t base, int nosrc,          \
                     Value *ssd, int64_t k)                                   \
    {                                                                         \
        uint32_t lim = (uint32_t)sl;                                          \
        if (fl) {                                                             \
            for (int64_t i = 0; i < n; i++) {                                 \
                if (!fl[i]) {                                                 \
                    o[i] = 0;                                                 \
                    continue;                                                 \
                }                                                             \
                uint32_t j = (uint32_t)ix[i];                                 \
                if (j >= lim)                                                 \
                    gather_bad(ssd, k, nosrc, base + i, ix[i], sl);           \
                o[i] = x[j];                                                  \
            }                                                                 \
            return;                                                           \
        }                                                                     \
        int64_t i = RUN(o, x, ix, n, lim);                                    \
        if (i < n)                                                            \
            gather_bad(ssd, k, nosrc, base + i, ix[i], sl);                   \
    }

/* A gather's bad index: the missing source segment when there is none. */
__attribute__((noreturn, cold)) static void gather_bad(Value *ssd, int64_t k, int nosrc, int64_t i, int64_t idx, int64_t sl)
{
    (void)ssd;
    if (nosrc)
        ops_permute_no_partner(k, "source");
    ops_permute_bad_index(i, idx, sl);
}

DEF_GATHER_SEG(gather_seg_i, gather_run_i, int32_t)
DEF_GATHER_SEG(gather_seg_f, gather_run_f, double)

/* P + OFF, or NULL for an empty vector's NULL storage. */
#define AT(p, off) ((p) ? (p) + (off) : NULL)

/* Uniform source segments of a short length LS (1 to OPS_FIXED_MAX) going
 * to uniform destination segments of length LD: the source length a
 * constant, so each segment is straight-line code. */
#define SCATTER_FIXED(L, T)                                                   \
    for (int64_t k = 0; k < m; k++, x += L, ix += L, o += ld)                 \
        for (int i = 0; i < L; i++) {                                         \
            uint32_t j = (uint32_t)ix[i];                                     \
            if (j >= lim)                                                     \
                ops_permute_bad_index(k * L + i, ix[i], ld);                  \
            o[j] = x[i];                                                      \
        }
#define DEF_SCATTER_UNIFORM(NAME, T)                                          \
    static void NAME(T *o, const T *x, const int32_t *ix, int64_t m, int64_t ls, int64_t ld) \
    {                                                                         \
        uint32_t lim = (uint32_t)ld;                                          \
        OPS_FIXED_SWITCH(ls, SCATTER_FIXED, T)                                \
    }
DEF_SCATTER_UNIFORM(scatter_uniform_i, int32_t)
DEF_SCATTER_UNIFORM(scatter_uniform_f, double)

/* The same for a gather into uniform destination segments of a short
 * length LD from uniform source segments of length LS. */
#define GATHER_FIXED(L, T)                                                    \
    for (int64_t k = 0; k < m; k++, x += ls, ix += L, o += L)                 \
        for (int i = 0; i < L; i++) {                                         \
            uint32_t j = (uint32_t)ix[i];                                     \
            if (j >= lim)                                                     \
                ops_permute_bad_index(k * L + i, ix[i], ls);                  \
            o[i] = x[j];                                                      \
        }
#define DEF_GATHER_UNIFORM(NAME, T)                                           \
    static void NAME(T *o, const T *x, const int32_t *ix, int64_t m, int64_t ls, int64_t ld) \
    {                                                                         \
        uint32_t lim = (uint32_t)ls;                                          \
        OPS_FIXED_SWITCH(ld, GATHER_FIXED, T)                                 \
    }
DEF_GATHER_UNIFORM(gather_uniform_i, int32_t)
DEF_GATHER_UNIFORM(gather_uniform_f, double)

/* Scatter DATA through IDX (source-shaped, FLAGS optional) into OUT, which
 * is shaped by DSD: source segment k goes to destination segment k. */
static void scatter(Value *data, Value *idx, Value *flags, Value *ssd, Value *dsd, Value *out)
{
    ops_check_segments(ssd);
    ops_check_segments(dsd);
    int64_t sm = ssd->len, dm = dsd->len;
    const int32_t *SL = VI(ssd), *DL = VI(dsd);
    const int32_t *ix = VI(idx), *fl = flags ? VI(flags) : NULL;
    int isf = data->type == VT_FLOAT;
    int64_t us = seg_uniform(ssd), ud = seg_uniform(dsd);
    if (!fl && us >= 1 && us <= OPS_FIXED_MAX && ud >= 1 && sm <= dm) {
        if (isf)
            scatter_uniform_f(VF(out), VF(data), ix, sm, us, ud);
        else
            scatter_uniform_i(VI(out), VI(data), ix, sm, us, ud);
        return;
    }
    int64_t s0 = 0, d0 = 0;
    for (int64_t k = 0; k < sm; s0 += SL[k], d0 += k < dm ? DL[k] : 0, k++) {
        int64_t sl = SL[k];
        if (sl <= 0)
            continue;
        if (k >= dm)
            ops_permute_no_partner(k, "destination");
        int64_t dl = DL[k] > 0 ? DL[k] : 0;
        /* an empty destination has no storage (NULL + 0 is undefined);
         * every index into it is out of range, so nothing is written */
        if (isf)
            scatter_seg_f(AT(VF(out), d0), VF(data) + s0, ix + s0, fl ? fl + s0 : NULL, sl, dl, s0);
        else
            scatter_seg_i(AT(VI(out), d0), VI(data) + s0, ix + s0, fl ? fl + s0 : NULL, sl, dl, s0);
    }
}

/* Gather into OUT (shaped by DSD) from DATA (shaped by SSD) through IDX
 * (destination-shaped); FLAGS (destination-shaped) optional, else zero. */
static void gather(Value *data, Value *idx, Value *flags, Value *ssd, Value *dsd, Value *out)
{
    ops_check_segments(ssd);
    ops_check_segments(dsd);
    int64_t sm = ssd->len, dm = dsd->len;
    const int32_t *SL = VI(ssd), *DL = VI(dsd);
    const int32_t *ix = VI(idx), *fl = flags ? VI(flags) : NULL;
    int isf = data->type == VT_FLOAT;
    int64_t us = seg_uniform(ssd), ud = seg_uniform(dsd);
    if (!fl && ud >= 1 && ud <= OPS_FIXED_MAX && us >= 1 && dm <= sm) {
        if (isf)
            gather_uniform_f(VF(out), VF(data), ix, dm, us, ud);
        else
            gather_uniform_i(VI(out), VI(data), ix, dm, us, ud);
        return;
    }
    int64_t s0 = 0, d0 = 0;
    for (int64_t k = 0; k < dm; d0 += DL[k], s0 += k < sm ? SL[k] : 0, k++) {
        int64_t dl = DL[k];
        if (dl <= 0)
            continue;
        int64_t sl = k < sm && SL[k] > 0 ? SL[k] : 0;
        /* an empty source has no storage: every unflagged index into it is
         * out of range, so nothing is read */
        if (isf)
            gather_seg_f(VF(out) + d0, AT(VF(data), s0), ix + d0, fl ? fl + d0 : NULL, dl, sl, d0, k >= sm,
                         ssd, k);
        else
            gather_seg_i(VI(out) + d0, AT(VI(data), s0), ix + d0, fl ? fl + d0 : NULL, dl, sl, d0, k >= sm,
                         ssd, k);
    }
}

/* A result that starts as a copy of DFLT (at DEPTH), reused in place when
 * only the stack holds it. */
static Value *copy_of_default(Interp *it, Value *dflt, int depth)
{
    int cand[2] = { depth, -1 };
    Value *r = ops_reusable(it, (ValType)dflt->type, dflt->len, cand);
    if (r)
        return val_ref(r);
    r = val_new((ValType)dflt->type, dflt->len);
    if (dflt->len)
        memcpy(r->data, dflt->data, (size_t)dflt->len * val_esize((ValType)dflt->type));
    return r;
}

/* PERMUTE: data idx sd */
void op_permute(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *data = vs_at(it, 2), *idx = vs_at(it, 1), *sd = vs_at(it, 0);
    Value *out = val_new_zero((ValType)data->type, data->len);
    scatter(data, idx, NULL, sd, sd, out);
    ops_finish(it, 3, out);
}

void ops_permute_lengths(const Value *data, const Value *idx, const Value *flags, const Value *dflt,
                         const Value *dsd)
{
    if (flags && (idx->len != data->len || flags->len != data->len))
        rt_fatal("index (%lld) and flags (%lld) must have the data's length %lld",
                 (long long)idx->len, (long long)flags->len, (long long)data->len);
    if (dsd->n != dflt->len)
        rt_fatal("destination descriptor covers %lld elements, default has %lld",
                 (long long)dsd->n, (long long)dflt->len);
}

/* DPERMUTE: data idx dflt ssd dsd */
void op_dpermute(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *data = vs_at(it, 4), *idx = vs_at(it, 3), *dflt = vs_at(it, 2);
    Value *ssd = vs_at(it, 1), *dsd = vs_at(it, 0);
    ops_permute_lengths(data, idx, NULL, dflt, dsd);
    Value *out = copy_of_default(it, dflt, 2);
    scatter(data, idx, NULL, ssd, dsd, out);
    ops_finish(it, 5, out);
}

/* FPERMUTE: data idx flags ssd dsd */
void op_fpermute(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *data = vs_at(it, 4), *idx = vs_at(it, 3), *flags = vs_at(it, 2);
    Value *ssd = vs_at(it, 1), *dsd = vs_at(it, 0);
    Value *out = val_new_zero((ValType)data->type, dsd->n > 0 ? dsd->n : 0);
    scatter(data, idx, flags, ssd, dsd, out);
    ops_finish(it, 5, out);
}

/* BPERMUTE: data idx ssd dsd */
void op_bpermute(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *data = vs_at(it, 3), *idx = vs_at(it, 2), *ssd = vs_at(it, 1), *dsd = vs_at(it, 0);
    /* The result may take the index vector's place (same length; each index
     * is read before its slot is written). */
    static const int cand[] = { 2, -1 };
    Value *out = ops_reusable(it, (ValType)data->type, idx->len, cand);
    if (out) {
        val_ref(out);
        out->type = data->type;
    } else {
        out = val_new((ValType)data->type, idx->len);
    }
    gather(data, idx, NULL, ssd, dsd, out);
    ops_finish(it, 4, out);
}

/* BFPERMUTE: data idx flags ssd dsd */
void op_bfpermute(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *data = vs_at(it, 4), *idx = vs_at(it, 3), *flags = vs_at(it, 2);
    Value *ssd = vs_at(it, 1), *dsd = vs_at(it, 0);
    Value *out = val_new_zero((ValType)data->type, idx->len);
    gather(data, idx, flags, ssd, dsd, out);
    ops_finish(it, 5, out);
}

/* DFPERMUTE: data idx flags dflt ssd dsd */
void op_dfpermute(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *data = vs_at(it, 5), *idx = vs_at(it, 4), *flags = vs_at(it, 3), *dflt = vs_at(it, 2);
    Value *ssd = vs_at(it, 1), *dsd = vs_at(it, 0);
    ops_permute_lengths(data, idx, flags, dflt, dsd);
    Value *out = copy_of_default(it, dflt, 2);
    scatter(data, idx, flags, ssd, dsd, out);
    ops_finish(it, 6, out);
}

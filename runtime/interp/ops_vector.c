/* runtime/interp/ops_vector.c — EXTRACT, REPLACE, DIST, INDEX, PACK and the
 * descriptor instructions LENGTH, MAKE_SEGDES, LENGTHS (vcode/SPEC.md §4.5–4.9). */
#include "runtime/interp/ops.h"
#include "runtime/core/errors.h"
#include "runtime/core/par.h"

#include <stdint.h>
#include <string.h>

void ops_bad_segment_index(int64_t k, int64_t idx, int64_t len)
{
    rt_fatal(VS_MSG_SEGMENT_INDEX,
             (long long)idx, (long long)k, (long long)len);
}

/* EXTRACT: data idx sd → one element per segment. One pass: each index
 * checked as it is used (the first bad one, in segment order, stops the
 * run before anything is printed). */
#define EXTRACT_LOOP(T)                                                       \
    do {                                                                      \
        const T *x = (const T *)data->data;                                   \
        T *o = (T *)r->data;                                                  \
        int64_t pos = 0;                                                      \
        for (int64_t k = 0; k < m; k++) {                                     \
            int32_t l = L[k], lim = l > 0 ? l : 0;                            \
            if ((uint32_t)ix[k] >= (uint32_t)lim)                             \
                ops_bad_segment_index(k, ix[k], lim);                                     \
            o[k] = x[pos + ix[k]];                                            \
            pos += l;                                                         \
        }                                                                     \
    } while (0)

void op_extract(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *data = vs_at(it, 2), *idx = vs_at(it, 1), *sd = vs_at(it, 0);
    ops_check_segments(sd);
    int64_t m = sd->len;
    const int32_t *L = VI(sd), *ix = VI(idx);
    ValType t = (ValType)data->type;
    /* the result may take the index vector's place: index k is read
     * before slot k is written */
    static const int cand[] = { 1, -1 };
    Value *r = t != VT_FLOAT ? ops_reusable(it, t, m, cand) : NULL;
    if (r) {
        val_ref(r);
        r->type = (uint8_t)t;
    } else {
        r = val_new(t, m);
    }
    if (t == VT_FLOAT)
        EXTRACT_LOOP(double);
    else
        EXTRACT_LOOP(int32_t);
    ops_finish(it, 3, r);
}

/* REPLACE: data idx vals sd → data with one element per segment replaced.
 * The indices are checked before anything is written: the result may be
 * the data itself, updated in place. */
void op_replace(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *data = vs_at(it, 3), *idx = vs_at(it, 2), *vals = vs_at(it, 1), *sd = vs_at(it, 0);
    ops_check_segments(sd);
    int64_t m = sd->len;
    const int32_t *L = VI(sd), *ix = VI(idx);
    for (int64_t k = 0; k < m; k++)
        if ((uint32_t)ix[k] >= (uint32_t)(L[k] > 0 ? L[k] : 0))
            ops_bad_segment_index(k, ix[k], L[k] > 0 ? L[k] : 0);
    ValType t = (ValType)data->type;
    static const int cand[] = { 3, -1 };
    Value *r = ops_reusable(it, t, data->len, cand);
    if (r) {
        val_ref(r);
    } else {
        r = val_new(t, data->len);
        if (data->len)
            memcpy(r->data, data->data, (size_t)data->len * val_esize(t));
    }
    int64_t pos = 0;
    if (t == VT_FLOAT) {
        double *o = VF(r);
        const double *v = VF(vals);
        for (int64_t k = 0; k < m; pos += L[k], k++)
            o[pos + ix[k]] = v[k];
    } else {
        int32_t *o = VI(r);
        const int32_t *v = VI(vals);
        for (int64_t k = 0; k < m; pos += L[k], k++)
            o[pos + ix[k]] = v[k];
    }
    ops_finish(it, 4, r);
}

/* DIST: vals sd → each value repeated over its segment; uniform length 1
 * is a copy, up to OPS_FIXED_MAX straight-line stores. */
#define DIST_FIXED(L, T)                                                      \
    for (int64_t k = 0; k < m; k++, o += L)                                   \
        for (int i = 0; i < L; i++)                                           \
            o[i] = v[k]
#define DIST_LOOP(T)                                                          \
    do {                                                                      \
        T *out = (T *)r->data;                                                \
        const T *v = (const T *)vals->data;                                   \
        if (u == 1) {                                                         \
            memcpy(out, v, (size_t)m * sizeof(T));                            \
            break;                                                            \
        }                                                                     \
        if (u >= 2 && u <= OPS_FIXED_MAX) {                                   \
            T *o = out;                                                       \
            OPS_FIXED_SWITCH(u, DIST_FIXED, T)                                \
            break;                                                            \
        }                                                                     \
        int64_t pos = 0; /* an index: negative lengths move it back */        \
        for (int64_t k = 0; k < m; k++) {                                     \
            T x = v[k];                                                       \
            int32_t l = L[k];                                                 \
            if (l == 1) {                                                     \
                out[pos++] = x;                                               \
                continue;                                                     \
            }                                                                 \
            for (int32_t i = 0; i < l; i++)                                   \
                out[pos + i] = x;                                             \
            pos += l;                                                         \
        }                                                                     \
    } while (0)

void op_dist(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *vals = vs_at(it, 1), *sd = vs_at(it, 0);
    ops_check_segments(sd);
    int64_t m = sd->len, n = sd->n > 0 ? sd->n : 0, u = seg_uniform(sd);
    const int32_t *L = VI(sd);
    ValType t = (ValType)vals->type;
    if (m == 1) { /* one segment: a fill, made lazily when long (value.h) */
        Value *r = val_new_fill(t, n, vals->data);
        ops_finish(it, 2, r);
        return;
    }
    Value *r = val_new(t, n);
    if (n > 0) {
        if (t == VT_FLOAT)
            DIST_LOOP(double);
        else
            DIST_LOOP(int32_t);
    }
    ops_finish(it, 2, r);
}

/* INDEX: init stride sd → arithmetic sequences, one per segment. One
 * segment is a loop gcc vectorises; uniform length 1 is a copy of the
 * starts, up to OPS_FIXED_MAX straight-line stores; otherwise a scalar
 * walk per segment, whose setup stays small for the short segments NESL
 * makes (a vectorised inner loop made batcher's INDEX 1.85x the
 * classic's). Arithmetic wraps. */
#define INDEX_FIXED(L, T)                                                     \
    for (int64_t k = 0; k < m; k++, o += L) {                                 \
        uint32_t c = (uint32_t)in0[k], s = (uint32_t)st[k];                   \
        for (int i = 0; i < L; i++)                                           \
            o[i] = (int32_t)(c + (uint32_t)i * s);                            \
    }

/* One segment: R[i] = init + i * stride, split between threads when long. */
typedef struct {
    Value *r;
    uint32_t v, s;
} IotaJob;

static void iota_range(void *job, int64_t lo, int64_t hi)
{
    const IotaJob *j = job;
    int32_t *o = VI(j->r);
    for (int64_t i = lo; i < hi; i++)
        o[i] = (int32_t)(j->v + (uint32_t)i * j->s);
}

void op_index(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *init = vs_at(it, 2), *stride = vs_at(it, 1), *sd = vs_at(it, 0);
    ops_check_segments(sd);
    int64_t m = sd->len, n = sd->n > 0 ? sd->n : 0, u = seg_uniform(sd);
    const int32_t *L = VI(sd);
    Value *r = val_new(VT_INT, n);
    int32_t *out = VI(r);
    const int32_t *in0 = VI(init), *st = VI(stride);
    if (n == 0) {
        /* nothing to write */
    } else if (m == 1) {
        IotaJob j = { r, (uint32_t)in0[0], (uint32_t)st[0] };
        par_for(n, PAR_MIN_CHEAP, iota_range, &j);
    } else if (u == 1) {
        memcpy(out, in0, (size_t)m * 4);
    } else if (u >= 2 && u <= OPS_FIXED_MAX) {
        int32_t *o = out;
        OPS_FIXED_SWITCH(u, INDEX_FIXED, int32_t)
    } else {
        int64_t pos = 0;
        for (int64_t k = 0; k < m; k++) {
            int32_t l = L[k];
            uint32_t c = (uint32_t)in0[k], s = (uint32_t)st[k];
            int32_t *o = out + pos;
            for (int32_t i = 0; i < l; i++) {
                o[i] = (int32_t)c;
                c += s;
            }
            pos += l;
        }
    }
    ops_finish(it, 3, r);
}

/* PACK: data flags sd → kept elements, new descriptor (on top). */
void op_pack(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *data = vs_at(it, 2), *flags = vs_at(it, 1), *sd = vs_at(it, 0);
    ops_check_segments(sd);
    int64_t m = sd->len;
    const int32_t *L = VI(sd), *fl = VI(flags);
    Value *nsd = seg_new(m);
    int32_t *NL = VI(nsd);
    int64_t total = 0, pos = 0;
    for (int64_t k = 0; k < m; k++) {
        int32_t c = 0;
        for (int64_t i = pos; i < pos + L[k]; i++)
            c += fl[i] != 0;
        pos += L[k];
        NL[k] = c;
        total += c;
    }
    seg_finish(nsd);
    ValType t = (ValType)data->type;
    Value *r = val_new(t, total);
    /* Segments are consecutive and cover the data (checked), so the kept
     * elements are those of the whole vector in order. */
    int64_t w = 0, n = data->len;
    if (sd->sane) {
        if (t == VT_FLOAT) {
            const double *x = VF(data);
            double *out = VF(r);
            for (int64_t i = 0; i < n; i++)
                if (fl[i])
                    out[w++] = x[i];
        } else {
            const int32_t *x = VI(data);
            int32_t *out = VI(r);
            for (int64_t i = 0; i < n; i++)
                if (fl[i])
                    out[w++] = x[i];
        }
    } else {
        pos = 0;
        for (int64_t k = 0; k < m; pos += L[k], k++)
            for (int64_t i = pos; i < pos + L[k]; i++)
                if (fl[i]) {
                    if (t == VT_FLOAT)
                        VF(r)[w++] = VF(data)[i];
                    else
                        VI(r)[w++] = VI(data)[i];
                }
    }
    for (int i = 0; i < 3; i++)
        val_release(vs_pop(it));
    vs_push(it, r);
    vs_push(it, nsd);
}

Value *ops_const_value(const Interp *it, const Instr *ins)
{
    if (ins->ckind == CK_VECTOR)
        return val_ref(it->consts[ins->cidx]);
    Value *v = val_new(ops_val_type(ins->type), 1);
    if (ins->type == TY_FLOAT)
        VF(v)[0] = ins->fval;
    else
        VI(v)[0] = ins->ival;
    return v;
}

Value *ops_length_of(const Value *v)
{
    Value *r = val_new(VT_INT, 1);
    VI(r)[0] = (int32_t)v->len;
    return r;
}

Value *ops_lengths_of(Value *sd) { return lengths_of_seg(sd, 0); }

void op_length(Interp *it, const Instr *ins)
{
    (void)ins;
    ops_finish(it, 1, ops_length_of(vs_at(it, 0)));
}

void op_make_segdes(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *l = vs_at(it, 0);
    ops_finish(it, 1, seg_of_lengths(l, val_unique(l)));
}

void op_lengths(Interp *it, const Instr *ins)
{
    (void)ins;
    /* a descriptor only the stack holds becomes its lengths in place, as
     * MAKE_SEGDES makes a descriptor of lengths (batcher_1m: 11% of the
     * time was LENGTHS's copies) */
    Value *sd = vs_at(it, 0);
    ops_finish(it, 1, lengths_of_seg(sd, val_unique(sd)));
}

/* runtime/ops_vector.c — EXTRACT, REPLACE, DIST, INDEX, PACK and the
 * descriptor instructions LENGTH, MAKE_SEGDES, LENGTHS (VCODE.md §4.5–4.9). */
#include "runtime/ops.h"
#include "runtime/errors.h"

#include <stdint.h>
#include <string.h>

static void bad_index(int64_t k, int64_t idx, int64_t len)
{
    rt_fatal("index %lld for segment %lld is outside the segment of length %lld",
             (long long)idx, (long long)k, (long long)len);
}

/* EXTRACT: data idx sd → one element per segment. */
void op_extract(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *data = vs_at(it, 2), *idx = vs_at(it, 1), *sd = vs_at(it, 0);
    ops_check_segments(sd);
    int64_t m = sd->len;
    const int32_t *L = VI(sd), *ix = VI(idx);
    const int64_t *o = seg_offsets(sd);
    for (int64_t k = 0; k < m; k++)
        if (ix[k] < 0 || ix[k] >= L[k])
            bad_index(k, ix[k], L[k] > 0 ? L[k] : 0);
    ValType t = (ValType)data->type;
    static const int cand[] = { 1, -1 };
    Value *r = t != VT_FLOAT ? ops_reusable(it, t, m, cand) : NULL;
    if (r) {
        val_ref(r);
        r->type = (uint8_t)t;
    } else {
        r = val_new(t, m);
    }
    if (t == VT_FLOAT) {
        for (int64_t k = 0; k < m; k++)
            VF(r)[k] = VF(data)[o[k] + ix[k]];
    } else {
        for (int64_t k = 0; k < m; k++)
            VI(r)[k] = VI(data)[o[k] + ix[k]];
    }
    ops_finish(it, 3, r);
}

/* REPLACE: data idx vals sd → data with one element per segment replaced. */
void op_replace(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *data = vs_at(it, 3), *idx = vs_at(it, 2), *vals = vs_at(it, 1), *sd = vs_at(it, 0);
    ops_check_segments(sd);
    int64_t m = sd->len;
    const int32_t *L = VI(sd), *ix = VI(idx);
    const int64_t *o = seg_offsets(sd);
    for (int64_t k = 0; k < m; k++)
        if (ix[k] < 0 || ix[k] >= L[k])
            bad_index(k, ix[k], L[k] > 0 ? L[k] : 0);
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
    if (t == VT_FLOAT) {
        for (int64_t k = 0; k < m; k++)
            VF(r)[o[k] + ix[k]] = VF(vals)[k];
    } else {
        for (int64_t k = 0; k < m; k++)
            VI(r)[o[k] + ix[k]] = VI(vals)[k];
    }
    ops_finish(it, 4, r);
}

/* DIST: vals sd → each value repeated over its segment. */
void op_dist(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *vals = vs_at(it, 1), *sd = vs_at(it, 0);
    ops_check_segments(sd);
    int64_t m = sd->len, n = sd->n > 0 ? sd->n : 0;
    const int32_t *L = VI(sd);
    const int64_t *o = seg_offsets(sd);
    ValType t = (ValType)vals->type;
    Value *r = val_new(t, n);
    if (t == VT_FLOAT) {
        double *out = VF(r);
        for (int64_t k = 0; k < m; k++) {
            double v = VF(vals)[k];
            for (int64_t i = 0; i < L[k]; i++)
                out[o[k] + i] = v;
        }
    } else {
        int32_t *out = VI(r);
        for (int64_t k = 0; k < m; k++) {
            int32_t v = VI(vals)[k];
            for (int64_t i = 0; i < L[k]; i++)
                out[o[k] + i] = v;
        }
    }
    ops_finish(it, 2, r);
}

/* INDEX: init stride sd → arithmetic sequences, one per segment. */
void op_index(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *init = vs_at(it, 2), *stride = vs_at(it, 1), *sd = vs_at(it, 0);
    ops_check_segments(sd);
    int64_t m = sd->len, n = sd->n > 0 ? sd->n : 0;
    const int32_t *L = VI(sd);
    const int64_t *o = seg_offsets(sd);
    Value *r = val_new(VT_INT, n);
    int32_t *out = VI(r);
    for (int64_t k = 0; k < m; k++) {
        uint32_t v = (uint32_t)VI(init)[k], s = (uint32_t)VI(stride)[k];
        int32_t *seg = out + o[k];
        for (int64_t i = 0; i < L[k]; i++, v += s)
            seg[i] = (int32_t)v;
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
    const int64_t *o = seg_offsets(sd);
    Value *nsd = seg_new(m);
    int32_t *NL = VI(nsd);
    int64_t total = 0;
    for (int64_t k = 0; k < m; k++) {
        int32_t c = 0;
        for (int64_t i = o[k]; i < o[k] + L[k]; i++)
            c += fl[i] != 0;
        NL[k] = c;
        total += c;
    }
    seg_finish(nsd);
    ValType t = (ValType)data->type;
    Value *r = val_new(t, total);
    int64_t w = 0;
    if (t == VT_FLOAT) {
        const double *x = VF(data);
        double *out = VF(r);
        for (int64_t k = 0; k < m; k++)
            for (int64_t i = o[k]; i < o[k] + L[k]; i++)
                if (fl[i])
                    out[w++] = x[i];
    } else {
        const int32_t *x = VI(data);
        int32_t *out = VI(r);
        for (int64_t k = 0; k < m; k++)
            for (int64_t i = o[k]; i < o[k] + L[k]; i++)
                if (fl[i])
                    out[w++] = x[i];
    }
    for (int i = 0; i < 3; i++)
        val_release(vs_pop(it));
    vs_push(it, r);
    vs_push(it, nsd);
}

void op_length(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *v = vs_at(it, 0);
    Value *r = val_new(VT_INT, 1);
    VI(r)[0] = (int32_t)v->len;
    ops_finish(it, 1, r);
}

void op_make_segdes(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *l = vs_at(it, 0);
    Value *sd;
    if (val_unique(l)) {
        /* Same storage (int32 lengths, same units): retag in place. */
        sd = val_ref(l);
        sd->type = VT_SEGDES;
    } else {
        sd = seg_new(l->len);
        if (l->len)
            memcpy(sd->data, l->data, (size_t)l->len * 4);
    }
    seg_finish(sd);
    ops_finish(it, 1, sd);
}

void op_lengths(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *sd = vs_at(it, 0);
    Value *r = val_new(VT_INT, sd->len);
    if (sd->len)
        memcpy(r->data, sd->data, (size_t)sd->len * 4);
    ops_finish(it, 1, r);
}

/* runtime/interp/ops_scan.c — segmented exclusive scans and reductions
 * (vcode/SPEC.md §4.2, §4.3). Every segment is combined strictly left to
 * right from the identity, so float results are bit-exact. */
#include "runtime/interp/ops.h"
#include "runtime/core/errors.h"

#include <stdint.h>

typedef enum { K_PLUS, K_MUL, K_MAX, K_MIN, K_AND, K_OR, K_XOR } Kind;

static Kind kind_of(Opcode op)
{
    switch (op) {
    case OP_PLUS_SCAN: case OP_PLUS_REDUCE: return K_PLUS;
    case OP_MUL_SCAN: case OP_MUL_REDUCE: return K_MUL;
    case OP_MAX_SCAN: case OP_MAX_REDUCE: return K_MAX;
    case OP_MIN_SCAN: case OP_MIN_REDUCE: return K_MIN;
    case OP_AND_SCAN: case OP_AND_REDUCE: return K_AND;
    case OP_OR_SCAN: case OP_OR_REDUCE: return K_OR;
    default: return K_XOR;
    }
}

/* The combine rules and identities are vcode/semantics.h's; each function
 * below fixes the operator, so the switch folds away. Bool values are 0
 * or 1 and their AND/OR/XOR bitwise (the reductions vectorise). */
#define DEF_COMBINE(NAME, T, FN, R)                                           \
    static inline T NAME(T a, T v) { return FN(R, a, v); }
DEF_COMBINE(c_iadd, int32_t, vs_rop_icombine, VS_IADD)
DEF_COMBINE(c_imul, int32_t, vs_rop_icombine, VS_IMUL)
DEF_COMBINE(c_imax, int32_t, vs_rop_icombine, VS_IMAX)
DEF_COMBINE(c_imin, int32_t, vs_rop_icombine, VS_IMIN)
DEF_COMBINE(c_iand, int32_t, vs_rop_icombine, VS_IAND)
DEF_COMBINE(c_ior, int32_t, vs_rop_icombine, VS_IOR)
DEF_COMBINE(c_ixor, int32_t, vs_rop_icombine, VS_IXOR)
DEF_COMBINE(c_band, int32_t, vs_rop_icombine, VS_BAND)
DEF_COMBINE(c_bor, int32_t, vs_rop_icombine, VS_BOR)
DEF_COMBINE(c_bxor, int32_t, vs_rop_icombine, VS_BXOR)
DEF_COMBINE(c_fadd, double, vs_rop_fcombine, VS_FADD)
DEF_COMBINE(c_fmul, double, vs_rop_fcombine, VS_FMUL)
DEF_COMBINE(c_fmax, double, vs_rop_fcombine, VS_FMAX)
DEF_COMBINE(c_fmin, double, vs_rop_fcombine, VS_FMIN)

/* Uniform segments of a short length L: straight-line code per segment. */
#define SCAN_FIXED(L, T, ID, FN)                                              \
    for (int64_t k = 0; k < m; k++, x += L, o += L) {                         \
        T acc = (ID);                                                         \
        for (int i = 0; i < L; i++) {                                         \
            T v = x[i];                                                       \
            o[i] = acc;                                                       \
            acc = FN(acc, v);                                                 \
        }                                                                     \
    }
#define REDUCE_FIXED(L, T, ID, FN)                                            \
    for (int64_t k = 0; k < m; k++, x += L) {                                 \
        T acc = (ID);                                                         \
        for (int i = 0; i < L; i++)                                           \
            acc = FN(acc, x[i]);                                              \
        o[k] = acc;                                                           \
    }

/* One function per element type and combine rule: SCAN writes the running
 * value before each element, REDUCE the final value per segment. Every
 * segment is combined strictly left to right from the identity. Elements
 * are addressed as x[pos + i], not through x + pos: the data pointer of
 * an empty vector is NULL, and NULL + 0 is undefined in C (a uniform
 * descriptor of length >= 1 over two or more segments has data). */
#define DEF_SEG_RUN(NAME, T, ID, FN)                                          \
    static void NAME(const Value *d, const Value *sd, Value *r, int scan)     \
    {                                                                         \
        const T *x = (const T *)d->data;                                      \
        T *o = (T *)r->data;                                                  \
        const int32_t *L = VI(sd);                                            \
        int64_t m = sd->len, u = seg_uniform(sd);                             \
        if (m > 1 && u >= 1 && u <= OPS_FIXED_MAX) {                          \
            if (scan)                                                         \
                OPS_FIXED_SWITCH(u, SCAN_FIXED, T, ID, FN)                    \
            else                                                              \
                OPS_FIXED_SWITCH(u, REDUCE_FIXED, T, ID, FN)                  \
            return;                                                           \
        }                                                                     \
        int64_t pos = 0;                                                      \
        for (int64_t k = 0; k < m; k++) {                                     \
            T acc = (ID);                                                     \
            int64_t l = L[k] > 0 ? L[k] : 0;                                  \
            if (scan) {                                                       \
                for (int64_t i = 0; i < l; i++) {                             \
                    T v = x[pos + i];                                         \
                    o[pos + i] = acc;                                         \
                    acc = FN(acc, v);                                         \
                }                                                             \
            } else {                                                          \
                for (int64_t i = 0; i < l; i++)                               \
                    acc = FN(acc, x[pos + i]);                                \
                o[k] = acc;                                                   \
            }                                                                 \
            pos += L[k];                                                      \
        }                                                                     \
    }

DEF_SEG_RUN(run_fadd, double, vs_rop_fident(VS_FADD), c_fadd)
DEF_SEG_RUN(run_fmul, double, vs_rop_fident(VS_FMUL), c_fmul)
DEF_SEG_RUN(run_fmax, double, vs_rop_fident(VS_FMAX), c_fmax)
DEF_SEG_RUN(run_fmin, double, vs_rop_fident(VS_FMIN), c_fmin)
DEF_SEG_RUN(run_iadd, int32_t, vs_rop_iident(VS_IADD), c_iadd)
DEF_SEG_RUN(run_imul, int32_t, vs_rop_iident(VS_IMUL), c_imul)
DEF_SEG_RUN(run_imax, int32_t, vs_rop_iident(VS_IMAX), c_imax)
DEF_SEG_RUN(run_imin, int32_t, vs_rop_iident(VS_IMIN), c_imin)
DEF_SEG_RUN(run_iand, int32_t, vs_rop_iident(VS_IAND), c_iand)
DEF_SEG_RUN(run_ior, int32_t, vs_rop_iident(VS_IOR), c_ior)
DEF_SEG_RUN(run_ixor, int32_t, vs_rop_iident(VS_IXOR), c_ixor)
DEF_SEG_RUN(run_band, int32_t, vs_rop_iident(VS_BAND), c_band)
DEF_SEG_RUN(run_bor, int32_t, vs_rop_iident(VS_BOR), c_bor)
DEF_SEG_RUN(run_bxor, int32_t, vs_rop_iident(VS_BXOR), c_bxor)

static void run(Value *d, Value *sd, Value *r, Kind kind, VcType ty, int scan)
{
    if (ty == TY_FLOAT) {
        switch (kind) {
        case K_PLUS: run_fadd(d, sd, r, scan); break;
        case K_MUL: run_fmul(d, sd, r, scan); break;
        case K_MAX: run_fmax(d, sd, r, scan); break;
        case K_MIN: run_fmin(d, sd, r, scan); break;
        default: rt_fatal("internal error: bad float scan");
        }
    } else if (ty == TY_INT) {
        switch (kind) {
        case K_PLUS: run_iadd(d, sd, r, scan); break;
        case K_MUL: run_imul(d, sd, r, scan); break;
        case K_MAX: run_imax(d, sd, r, scan); break;
        case K_MIN: run_imin(d, sd, r, scan); break;
        case K_AND: run_iand(d, sd, r, scan); break;
        case K_OR: run_ior(d, sd, r, scan); break;
        case K_XOR: run_ixor(d, sd, r, scan); break;
        }
    } else {
        switch (kind) {
        case K_AND: run_band(d, sd, r, scan); break;
        case K_OR: run_bor(d, sd, r, scan); break;
        case K_XOR: run_bxor(d, sd, r, scan); break;
        default: rt_fatal("internal error: bad bool scan");
        }
    }
}

void op_scan(Interp *it, const Instr *ins)
{
    Value *d = vs_at(it, 1), *sd = vs_at(it, 0);
    ops_check_segments(sd);
    static const int cand[] = { 1, -1 };
    Value *r = ops_reusable(it, (ValType)d->type, d->len, cand);
    if (r)
        val_ref(r);
    else
        r = val_new((ValType)d->type, d->len);
    run(d, sd, r, kind_of(ins->op), ins->type, 1);
    ops_finish(it, 2, r);
}

void op_reduce(Interp *it, const Instr *ins)
{
    Value *d = vs_at(it, 1), *sd = vs_at(it, 0);
    ops_check_segments(sd);
    Value *r = val_new((ValType)d->type, sd->len);
    run(d, sd, r, kind_of(ins->op), ins->type, 0);
    ops_finish(it, 2, r);
}

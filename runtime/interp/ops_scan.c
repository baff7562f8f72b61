/* runtime/interp/ops_scan.c — segmented exclusive scans and reductions
 * (vcode/SPEC.md §4.2, §4.3). Every segment is combined strictly left to
 * right from the identity, so float results are bit-exact; under
 * --float-reassoc a float + or * reduction folds a long segment by chunks
 * (vcode/semantics.h VS_CHUNK). A reduction of one long segment whose
 * result does not depend on the order (Int, Bool; floats by chunks) folds
 * its chunks on several threads (runtime/core/par.h). */
#include "runtime/interp/ops.h"
#include "runtime/core/errors.h"
#include "runtime/core/par.h"
#include "vcode/optable.h"

#include <math.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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

/* The chunks of one segment (NAME##_chunks below). */
typedef struct {
    const void *x;
    void *part;
    int64_t n, ch;
} Chunks;

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
    static void NAME(const Value *d, const Value *sd, Value *r, int scan,     \
                     int64_t ch)                                              \
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
            } else if (ch && l > ch) {                                        \
                for (int64_t c0 = 0; c0 < l; c0 += ch) {                      \
                    int64_t c1 = l - c0 < ch ? l : c0 + ch;                   \
                    T part = (ID);                                            \
                    for (int64_t i = c0; i < c1; i++)                         \
                        part = FN(part, x[pos + i]);                          \
                    acc = FN(acc, part);                                      \
                }                                                             \
                o[k] = acc;                                                   \
            } else {                                                          \
                for (int64_t i = 0; i < l; i++)                               \
                    acc = FN(acc, x[pos + i]);                                \
                o[k] = acc;                                                   \
            }                                                                 \
            pos += L[k];                                                      \
        }                                                                     \
    }                                                                         \
    /* par_for's body: the folds of chunks [LO, HI) of CH elements each */   \
    static void NAME##_chunks(void *arg, int64_t lo, int64_t hi)              \
    {                                                                         \
        const Chunks *a = arg;                                                \
        const T *x = (const T *)a->x;                                         \
        T *p = (T *)a->part;                                                  \
        for (int64_t c = lo; c < hi; c++) {                                   \
            int64_t i0 = c * a->ch, i1 = a->n - i0 < a->ch ? a->n : i0 + a->ch; \
            T acc = (ID);                                                     \
            for (int64_t i = i0; i < i1; i++)                                 \
                acc = FN(acc, x[i]);                                          \
            p[c] = acc;                                                       \
        }                                                                     \
    }                                                                         \
    /* One segment of N elements: its chunks folded in parallel, then */     \
    /* their folds left to right from the identity. */                       \
    static void NAME##_par(const Value *d, Value *r, int64_t ch)              \
    {                                                                         \
        Chunks a = { d->data, NULL, d->len, ch };                             \
        int64_t nch = (a.n + ch - 1) / ch;                                    \
        T *p = malloc((size_t)nch * sizeof *p);                               \
        if (!p)                                                               \
            rt_fatal("out of host memory");                                   \
        a.part = p;                                                           \
        par_for(nch, (PAR_MIN_CHEAP + ch - 1) / ch, NAME##_chunks, &a);       \
        T acc = (ID);                                                         \
        for (int64_t c = 0; c < nch; c++)                                     \
            acc = FN(acc, p[c]);                                              \
        ((T *)r->data)[0] = acc;                                              \
        free(p);                                                              \
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

/* A float +_REDUCE of one segment whose terms are all integers of small
 * total magnitude (vcode/semantics.h vs_fsum_exact_note) gives the same
 * bits in any order: its chunks are summed on several threads, each in
 * four lanes that keep a sum and vs_fsum_exact_note's two sums apiece (the
 * lanes vectorise), and every term is checked. The first chunk that fails
 * raises `failed`, and the chunks not yet begun are skipped: a sum of other
 * floats costs one chunk a thread before the caller folds it left to
 * right. */
typedef struct {
    const double *x;
    double *part;
    int64_t n, ch;
    double lim;
    atomic_int failed;
} ExactSum;

static void exact_sum_chunks(void *arg, int64_t lo, int64_t hi)
{
    ExactSum *a = arg;
    for (int64_t c = lo; c < hi; c++) {
        if (atomic_load_explicit(&a->failed, memory_order_relaxed))
            return;
        int64_t i0 = c * a->ch, i1 = a->n - i0 < a->ch ? a->n : i0 + a->ch, i = i0;
        const double *x = a->x;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0, e0 = 0.0, e1 = 0.0, e2 = 0.0, e3 = 0.0;
        for (; i + 4 <= i1; i += 4) {
            s0 += x[i];
            vs_fsum_exact_note(x[i], &a0, &e0);
            s1 += x[i + 1];
            vs_fsum_exact_note(x[i + 1], &a1, &e1);
            s2 += x[i + 2];
            vs_fsum_exact_note(x[i + 2], &a2, &e2);
            s3 += x[i + 3];
            vs_fsum_exact_note(x[i + 3], &a3, &e3);
        }
        for (; i < i1; i++) {
            s0 += x[i];
            vs_fsum_exact_note(x[i], &a0, &e0);
        }
        a->part[c] = (s0 + s1) + (s2 + s3);
        if (!vs_fsum_exact_ok((a0 + a1) + (a2 + a3), (e0 + e1) + (e2 + e3), a->lim))
            atomic_store_explicit(&a->failed, 1, memory_order_relaxed);
    }
}

int64_t interp_fsum_parallel, interp_fsum_fellback;

static int fadd_exact_par(const Value *d, Value *r)
{
    ExactSum a = { (const double *)d->data, NULL, d->len, 4096, 0.0, 0 };
    int64_t nch = (a.n + a.ch - 1) / a.ch;
    a.lim = vs_fsum_exact_lim(nch);
    a.part = rt_xmalloc((size_t)nch * sizeof *a.part);
    par_for(nch, (PAR_MIN_CHEAP + a.ch - 1) / a.ch, exact_sum_chunks, &a);
    double acc = 0.0;
    int ok = !atomic_load(&a.failed);
    if (ok) {
        for (int64_t c = 0; c < nch; c++)
            acc += a.part[c];
        /* a guard only: a NaN term already fails its chunk's check */
        ok = acc == acc;
    }
    if (ok)
        ((double *)r->data)[0] = acc;
    if (ok)
        interp_fsum_parallel++;
    else
        interp_fsum_fellback++;
    free(a.part);
    return ok;
}

/* Int and Bool reductions of one segment fold chunks of INT_CHUNK elements
 * on several threads: their operators are associative, so the result is
 * the left-to-right fold's. */
#define INT_CHUNK 1024

/* SCAN, or REDUCE; REASSOC: --float-reassoc. */
static void run(Value *d, Value *sd, Value *r, VsRop rop, VcType ty, int scan, int reassoc)
{
    int64_t ch = 0;
    if (!scan && reassoc && vs_rop_chunks(rop))
        ch = VS_CHUNK;
    else if (!scan && ty != TY_FLOAT)
        ch = INT_CHUNK;
    /* one segment covering the data, of more than one chunk: in parallel */
    int par = ch && sd->len == 1 && VI(sd)[0] == d->len && d->len > ch;
    if (ty != TY_FLOAT && !par)
        ch = 0;
    if (!scan && rop == VS_FADD && !ch && sd->len == 1 && VI(sd)[0] == d->len &&
        d->len > 4 * INT_CHUNK && par_threads() > 1 && fadd_exact_par(d, r))
        return;
#define RUN(F)                                                                \
    do {                                                                      \
        if (par)                                                              \
            F##_par(d, r, ch);                                                \
        else                                                                  \
            F(d, sd, r, scan, ch);                                            \
    } while (0)
    switch (rop) {
    case VS_FADD: RUN(run_fadd); break;
    case VS_FMUL: RUN(run_fmul); break;
    case VS_FMAX: RUN(run_fmax); break;
    case VS_FMIN: RUN(run_fmin); break;
    case VS_IADD: RUN(run_iadd); break;
    case VS_IMUL: RUN(run_imul); break;
    case VS_IMAX: RUN(run_imax); break;
    case VS_IMIN: RUN(run_imin); break;
    case VS_IAND: RUN(run_iand); break;
    case VS_IOR: RUN(run_ior); break;
    case VS_IXOR: RUN(run_ixor); break;
    case VS_BAND: RUN(run_band); break;
    case VS_BOR: RUN(run_bor); break;
    case VS_BXOR: RUN(run_bxor); break;
    default: rt_fatal("internal error: a scan or reduction of %s without an operator", vc_type_name(ty));
    }
#undef RUN
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
    run(d, sd, r, vc_rop_of(ins->op, ins->type), ins->type, 1, 0);
    ops_finish(it, 2, r);
}

/* A lazy fill's reductions (value.h): the fold of L copies of X, left to
 * right from the identity as run() folds them, without the copies: a
 * closed form where the fold has one (Int +, *, XOR; a Float + whose
 * partial sums are all integers below 2^53, as vs_fsum_exact_note
 * argues: exact in any order), else the fold itself, stopped once a step
 * leaves the value as it was (every later step then would too). */
static int32_t lazy_ifold(VsRop rop, int32_t x, int64_t l)
{
    int32_t acc = vs_rop_iident(rop);
    switch (rop) {
    case VS_IADD:
        return (int32_t)((uint32_t)x * (uint32_t)l); /* wrapping, as l wrapping additions */
    case VS_IXOR: case VS_BXOR:
        return l & 1 ? vs_rop_icombine(rop, acc, x) : acc;
    case VS_IMUL: {
        uint32_t p = 1, b = (uint32_t)x;
        for (int64_t e = l; e > 0; e >>= 1, b *= b)
            if (e & 1)
                p *= b;
        return (int32_t)p;
    }
    default:
        for (int64_t i = 0; i < l; i++) {
            int32_t next = vs_rop_icombine(rop, acc, x);
            if (next == acc)
                break;
            acc = next;
        }
        return acc;
    }
}

static double lazy_ffold_from(VsRop rop, double acc, double x, int64_t l)
{
    for (int64_t i = 0; i < l; i++) {
        double next = vs_rop_fcombine(rop, acc, x);
        if (memcmp(&next, &acc, sizeof acc) == 0)
            break;
        acc = next;
    }
    return acc;
}

static double lazy_ffold(VsRop rop, double x, int64_t l)
{
    if (rop == VS_FADD && x == trunc(x) && fabs(x) * (double)l < 9007199254740992.0)
        return 0.0 + x * (double)l; /* (from +0.0: never -0.0) */
    return lazy_ffold_from(rop, vs_rop_fident(rop), x, l);
}

/* REDUCE of lazy fill D over SD into R: each segment as run() folds it
 * (--float-reassoc's chunks: the chunks' folds folded in turn). */
static void lazy_reduce(const Value *d, const Value *sd, Value *r, VsRop rop, int reassoc)
{
    const int32_t *L = VI(sd);
    int isf = d->type == VT_FLOAT;
    int64_t ch = reassoc && isf && vs_rop_chunks(rop) ? VS_CHUNK : 0;
    for (int64_t k = 0; k < sd->len; k++) {
        int64_t l = L[k] > 0 ? L[k] : 0;
        if (!isf) {
            VI(r)[k] = lazy_ifold(rop, d->fill.i, l);
        } else if (ch && l > ch) {
            double full = lazy_ffold(rop, d->fill.f, ch);
            double acc = lazy_ffold_from(rop, vs_rop_fident(rop), full, l / ch);
            if (l % ch)
                acc = vs_rop_fcombine(rop, acc, lazy_ffold(rop, d->fill.f, l % ch));
            VF(r)[k] = acc;
        } else {
            VF(r)[k] = lazy_ffold(rop, d->fill.f, l);
        }
    }
}

void op_reduce(Interp *it, const Instr *ins)
{
    Value *d = vs_at(it, 1), *sd = vs_at(it, 0);
    ops_check_segments(sd);
    Value *r = val_new((ValType)d->type, sd->len);
    VsRop rop = vc_rop_of(ins->op, ins->type);
    if (d->lazy)
        lazy_reduce(d, sd, r, rop, it->opt.float_reassoc);
    else
        run(d, sd, r, rop, ins->type, 0, it->opt.float_reassoc);
    ops_finish(it, 2, r);
}

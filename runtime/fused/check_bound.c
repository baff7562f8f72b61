/* runtime/fused/check_bound.c — the reference run of a block under --check,
 * one instruction at a time, with error bounds beside the values (the rules
 * and their reasons are in check_bound.h). */
#include "runtime/fused/check_bound.h"
#include "runtime/core/errors.h"
#include "runtime/interp/argcheck.h"
#include "runtime/interp/ops.h"
#include "vcode/optable.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define U CB_U
#define ETA CB_ETA
#define fin cb_fin

/* ---- the rules on scalars ------------------------------------------------------ */

double cb_arith_bound(char op, double a, double b, double r, double ea, double eb)
{
    if (ea == 0.0 && eb == 0.0)
        return 0.0;
    if (!isfinite(r) || !isfinite(ea) || !isfinite(eb))
        return INFINITY;
    double ar = fabs(r), d;
    switch (op) {
    case '+': case '-':
        return fin((ea + eb + 2.0 * U * ar) * (1.0 + 4.0 * U));
    case '*':
        d = fabs(a) * eb + fabs(b) * ea + ea * eb;
        return fin((d + 2.0 * U * ar) * (1.0 + 4.0 * U) + 4.0 * ETA);
    case '/':
        if (eb >= fabs(b))
            return INFINITY;
        d = (ea + ar * (1.0 + 2.0 * U) * eb) / ((fabs(b) - eb) * (1.0 - 2.0 * U));
        return fin((d + 2.0 * U * ar) * (1.0 + 4.0 * U) + 4.0 * ETA);
    default:
        return INFINITY;
    }
}

static int is_libm(Opcode op)
{
    switch (op) {
    case OP_LOG: case OP_EXP: case OP_SIN: case OP_COS: case OP_TAN: case OP_ASIN: case OP_ACOS:
    case OP_ATAN: case OP_SINH: case OP_COSH: case OP_TANH:
        return 1;
    default:
        return 0;
    }
}

double cb_unary_bound(Opcode op, double x, double r, double e, int libm_ulps)
{
    double ar = fabs(r);
    double own = libm_ulps > 0 && is_libm(op) ? (double)libm_ulps * 4.0 * U * ar + ETA : 0.0;
    if (e == 0.0)
        return isfinite(r) || own == 0.0 ? own : INFINITY;
    if (!isfinite(r) || !isfinite(e) || isnan(x))
        return INFINITY;
    double d, ax = fabs(x);
    switch (op) {
    case OP_SQRT:
        if (x - e <= 0.0)
            return INFINITY;
        d = e / ((sqrt(x) + sqrt(x - e)) * (1.0 - 4.0 * U));
        return fin((d + 2.0 * U * ar) * (1.0 + 4.0 * U));
    case OP_EXP: d = ar * expm1(e) * (1.0 + 4.0 * U); break;
    case OP_LOG:
        if (x - e <= 0.0)
            return INFINITY;
        d = e / ((x - e) * (1.0 - 4.0 * U));
        break;
    case OP_SIN: case OP_COS: case OP_ATAN: case OP_TANH: d = e; break;
    case OP_SINH: case OP_COSH: d = e * cosh(ax + e) * (1.0 + 8.0 * U); break;
    case OP_ASIN: case OP_ACOS: {
        double t = ax + e;
        if (t >= 1.0)
            return INFINITY;
        d = e / (sqrt((1.0 - t) * (1.0 + t)) * (1.0 - 8.0 * U));
        break;
    }
    case OP_TAN: {
        if (e >= 1.5)
            return INFINITY;
        double c1 = cos(x - e), c2 = cos(x + e);
        /* an interval shorter than pi holds a pole of tan only where cos
         * changes sign; sec^2 is convex between poles: its largest value
         * on the interval is at an end */
        if (!(c1 * c2 > 0.0))
            return INFINITY;
        double m = fmin(c1 * c1, c2 * c2);
        d = e / (m * (1.0 - 16.0 * U));
        break;
    }
    default:
        return INFINITY;
    }
    /* both sides' libm: within 2 ulp each (8u|r|) */
    return fin((d + 8.0 * U * ar) * (1.0 + 4.0 * U) + own + 2.0 * ETA);
}

int cb_cmp_may_differ(double a, double b, double ea, double eb)
{
    double e = ea + eb;
    if (e == 0.0)
        return 0;
    if (!isfinite(e) || isnan(a) || isnan(b))
        return 1;
    double d = fabs(a - b);
    return !(d > e * (1.0 + 4.0 * U) + ETA);
}

static int32_t f2i_of(Opcode op, double x)
{
    switch (op) {
    case OP_FLOOR: return vs_floor(x);
    case OP_CEIL: return vs_ceil(x);
    case OP_ROUND: return vs_round(x);
    default: return vs_f2i(x);
    }
}

int cb_f2i_may_differ(Opcode op, double x, double e)
{
    if (e == 0.0)
        return 0;
    if (!isfinite(e) || !isfinite(x))
        return 1;
    double lo = nextafter(x - e * (1.0 + 4.0 * U), -INFINITY), hi = nextafter(x + e * (1.0 + 4.0 * U), INFINITY);
    /* the conversions are monotone but for the clamp of vs_f2i, which
     * an interval of width 1 or more may cross */
    return hi - lo >= 1.0 || f2i_of(op, lo) != f2i_of(op, hi);
}

/* ---- bounds ---------------------------------------------------------------------- */

static CbBound unv_obj = { 1, 1, NULL };
#define UNV (&unv_obj)

static CbBound *bnd_ref(CbBound *b)
{
    if (b && b != UNV)
        b->rc++;
    return b;
}

static void bnd_release(CbBound *b)
{
    if (b && b != UNV && --b->rc == 0) {
        if (b->v)
            val_release(b->v);
        free(b);
    }
}

/* Values that hold bounds are not charged against -m: they are made with
 * the limit lifted and then given up (units 0), so a --check run needs no
 * more -m than the reference. */
#define NO_LIMIT (INT64_MAX / 4)

static Value *quiet_own(Value *v)
{
    if (v->rc > 1) { /* an argument handed back: copy it */
        int64_t lim = mem_limit();
        mem_set_limit(NO_LIMIT);
        Value *c = val_new((ValType)v->type, v->len);
        mem_set_limit(lim);
        if (v->len)
            memcpy(c->data, v->data, (size_t)v->len * val_esize((ValType)v->type));
        val_release(v);
        v = c;
    }
    mem_uncharge(v->units);
    v->units = 0;
    return v;
}

static Value *quiet_new(ValType t, int64_t len)
{
    int64_t lim = mem_limit();
    mem_set_limit(NO_LIMIT);
    Value *v = val_new_zero(t, len);
    mem_set_limit(lim);
    return quiet_own(v);
}

/* A bound over V (uncharged, owned): NULL when every element is exact. */
static CbBound *bnd_of(Value *v)
{
    int64_t n = v->len, i = 0;
    if (v->type == VT_FLOAT) {
        const double *e = VF(v);
        while (i < n && e[i] == 0.0)
            i++;
    } else {
        const int32_t *m = VI(v);
        while (i < n && m[i] == 0)
            i++;
    }
    if (i == n) {
        val_release(v);
        return NULL;
    }
    CbBound *b = rt_xmalloc(sizeof *b);
    b->rc = 1;
    b->unverifiable = 0;
    b->v = v;
    return b;
}

static const double *fb(const CbBound *b) { return b && b->v ? VF(b->v) : NULL; }
static const int32_t *mb(const CbBound *b) { return b && b->v ? VI(b->v) : NULL; }
static double fat(const double *e, int64_t i) { return e ? e[i] : 0.0; }
static int mat(const int32_t *m, int64_t i) { return m ? m[i] != 0 : 0; }

/* ---- the shadow of the stack ------------------------------------------------------ */

struct CbRun {
    CbBound **sh;       /* sh[k] beside it->stk[k]; NULL array: all exact */
    int64_t cap, sp;
    int lost;           /* the stack moved in a way not followed: all unverifiable */
    CbOptions o;
};

static void sh_reserve(CbRun *r, int64_t n)
{
    if (n <= r->cap && r->sh)
        return;
    int64_t cap = r->cap ? r->cap : 64;
    while (cap < n)
        cap *= 2;
    CbBound **s = rt_xrealloc(r->sh, (size_t)cap * sizeof *s);
    memset(s + r->cap, 0, (size_t)(cap - r->cap) * sizeof *s);
    r->sh = s;
    r->cap = cap;
}

static void sh_stackop(CbRun *r, const Instr *ins, int64_t sp0)
{
    int64_t i = ins->a, j = ins->b, base = sp0 - j - i;
    CbBound **s = r->sh;
    if (base < 0 || i < 0 || j < 0) {
        r->lost = 1;
        return;
    }
    switch (ins->op) {
    case OP_COPY:
        sh_reserve(r, sp0 + i);
        s = r->sh;
        for (int64_t k = 0; k < i; k++)
            s[sp0 + k] = bnd_ref(s[base + k]);
        break;
    case OP_POP:
        for (int64_t k = 0; k < i; k++)
            bnd_release(s[base + k]);
        memmove(s + base, s + base + i, (size_t)j * sizeof *s);
        for (int64_t k = sp0 - i; k < sp0; k++)
            s[k] = NULL;
        break;
    default: { /* CPOP: the I entries at depth J go to the top */
        if (i == 0 || j == 0)
            break;
        CbBound **t = rt_xmalloc((size_t)i * sizeof *t);
        memcpy(t, s + base, (size_t)i * sizeof *t);
        memmove(s + base, s + base + i, (size_t)j * sizeof *s);
        memcpy(s + base + j, t, (size_t)i * sizeof *t);
        free(t);
        break;
    }
    }
}

/* ---- the instructions' rules --------------------------------------------------------- */

typedef struct {
    CbRun *r;
    Interp *it;
    const Instr *ins;
    int pc;
    int nargs, nres;
    Value *v[OP_MAXARGS];       /* the arguments, deepest first */
    CbBound *b[OP_MAXARGS];     /* their bounds */
    CbBound *out[2];
} Step;

static int elem_float(const Step *s) { return s->ins->type == TY_FLOAT; }

static void out_unv(Step *s)
{
    for (int k = 0; k < s->nres; k++)
        s->out[k] = UNV;
}

/* Run the instruction again over the arguments with SUB[k] (when not
 * NULL) in place of argument k; its results (uncharged) in RES. */
static void trace(Step *s, Value **sub, Value **res)
{
    Interp *it = s->it;
    int64_t base = it->sp - s->nargs;
    for (int k = 0; k < s->nargs; k++)
        vs_push(it, val_ref(sub[k] ? sub[k] : it->stk[base + k]));
    int64_t lim = mem_limit();
    mem_set_limit(NO_LIMIT);
    interp_exec_range(it, s->pc, s->pc + 1);
    mem_set_limit(lim);
    for (int k = s->nres - 1; k >= 0; k--)
        res[k] = quiet_own(vs_pop(it));
}

/* What stands for argument K's elements in a trace: its bound or mask, or
 * zeros of its type. */
static Value *stand_in(Step *s, int k)
{
    if (s->b[k] && s->b[k]->v)
        return val_ref(s->b[k]->v);
    return quiet_new((ValType)s->v[k]->type, s->v[k]->len);
}

/* Move the bounds of the data arguments DATA (-1 terminated) with the
 * instruction; result 0 (and 1 for PACK: its descriptor stays exact). */
static void move_data(Step *s, const int *data)
{
    Value *sub[OP_MAXARGS] = { 0 }, *res[2] = { 0 };
    for (const int *d = data; *d >= 0; d++)
        sub[*d] = stand_in(s, *d);
    trace(s, sub, res);
    for (int k = 0; k < s->nargs; k++)
        if (sub[k])
            val_release(sub[k]);
    s->out[0] = bnd_of(res[0]);
    for (int k = 1; k < s->nres; k++)
        val_release(res[k]);
}

/* Any mask set in argument K. */
static int may_differ(const Step *s, int k) { return s->b[k] != NULL; }

/* A scatter (or PACK): where its index argument IDX or its flags FLAGS
 * (-1: none) may differ, elements may land elsewhere, so the result is
 * unverifiable; else the bounds of DATA move with the elements. */
static void scatter(Step *s, const int *data, int idx, int flags)
{
    if (may_differ(s, idx) || (flags >= 0 && may_differ(s, flags)))
        out_unv(s);
    else
        move_data(s, data);
}

/* A result whose element i may be anything where the mask of argument K
 * (over the result's positions) is set. */
static void anything_where(Step *s, int k)
{
    if (!s->b[k])
        return;
    const int32_t *m = mb(s->b[k]);
    CbBound *o = s->out[0];
    Value *nv = quiet_new(ops_val_type(s->ins->type), s->b[k]->v->len);
    if (o && o->v)
        memcpy(nv->data, o->v->data, (size_t)nv->len * val_esize((ValType)nv->type));
    for (int64_t i = 0; i < nv->len; i++)
        if (m[i]) {
            if (nv->type == VT_FLOAT)
                VF(nv)[i] = INFINITY;
            else
                VI(nv)[i] = 1;
        }
    bnd_release(o);
    s->out[0] = bnd_of(nv);
}

static void rule_binary(Step *s)
{
    Opcode op = s->ins->op;
    Value *a = s->v[0], *b = s->v[1];
    int64_t n = a->len;
    int cmp = op == OP_LT || op == OP_LE || op == OP_GT || op == OP_GE || op == OP_EQ || op == OP_NE;
    if (elem_float(s)) {
        const double *x = VF(a), *y = VF(b), *ea = fb(s->b[0]), *eb = fb(s->b[1]);
        if (cmp) {
            Value *m = quiet_new(VT_BOOL, n);
            for (int64_t i = 0; i < n; i++)
                VI(m)[i] = cb_cmp_may_differ(x[i], y[i], fat(ea, i), fat(eb, i));
            s->out[0] = bnd_of(m);
            return;
        }
        char c = op == OP_ADD ? '+' : op == OP_SUB ? '-' : op == OP_MUL ? '*' : op == OP_DIV ? '/' : 0;
        if (!c) {
            out_unv(s);
            return;
        }
        Value *e = quiet_new(VT_FLOAT, n);
        for (int64_t i = 0; i < n; i++) {
            double p = x[i], q = y[i];
            double r = c == '+' ? p + q : c == '-' ? p - q : c == '*' ? p * q : p / q;
            VF(e)[i] = cb_arith_bound(c, p, q, r, fat(ea, i), fat(eb, i));
        }
        s->out[0] = bnd_of(e);
        return;
    }
    const int32_t *ma = mb(s->b[0]), *mb2 = mb(s->b[1]);
    Value *m = quiet_new(cmp ? VT_BOOL : (ValType)a->type, n);
    for (int64_t i = 0; i < n; i++)
        VI(m)[i] = mat(ma, i) | mat(mb2, i);
    s->out[0] = bnd_of(m);
}

static void rule_unary(Step *s)
{
    Opcode op = s->ins->op;
    Value *a = s->v[0];
    int64_t n = a->len;
    switch (op) {
    case OP_NOT: case OP_I_TO_B: case OP_B_TO_I: case OP_RAND: {
        const int32_t *m = mb(s->b[0]);
        Value *o = quiet_new(op == OP_I_TO_B ? VT_BOOL : op == OP_B_TO_I || op == OP_RAND ? VT_INT
                                                                                     : (ValType)a->type, n);
        for (int64_t i = 0; i < n; i++)
            VI(o)[i] = mat(m, i);
        s->out[0] = bnd_of(o);
        return;
    }
    case OP_I_TO_F: {
        const int32_t *m = mb(s->b[0]);
        Value *o = quiet_new(VT_FLOAT, n);
        for (int64_t i = 0; i < n; i++)
            VF(o)[i] = mat(m, i) ? INFINITY : 0.0;
        s->out[0] = bnd_of(o);
        return;
    }
    case OP_FLOOR: case OP_CEIL: case OP_TRUNC: case OP_ROUND: {
        const double *x = VF(a), *e = fb(s->b[0]);
        Value *o = quiet_new(VT_INT, n);
        for (int64_t i = 0; i < n; i++)
            VI(o)[i] = cb_f2i_may_differ(op, x[i], fat(e, i));
        s->out[0] = bnd_of(o);
        return;
    }
    default: {
        const double *x = VF(a), *e = fb(s->b[0]);
        Value *o = quiet_new(VT_FLOAT, n);
        for (int64_t i = 0; i < n; i++) {
            double p = x[i], r;
            switch (op) {
            case OP_LOG: r = log(p); break;
            case OP_SQRT: r = sqrt(p); break;
            case OP_EXP: r = exp(p); break;
            case OP_SIN: r = sin(p); break;
            case OP_COS: r = cos(p); break;
            case OP_TAN: r = tan(p); break;
            case OP_ASIN: r = asin(p); break;
            case OP_ACOS: r = acos(p); break;
            case OP_ATAN: r = atan(p); break;
            case OP_SINH: r = sinh(p); break;
            case OP_COSH: r = cosh(p); break;
            case OP_TANH: r = tanh(p); break;
            default: r = NAN; break;
            }
            VF(o)[i] = cb_unary_bound(op, p, r, fat(e, i), s->r->o.libm_ulps);
        }
        s->out[0] = bnd_of(o);
        return;
    }
    }
}

static void rule_select(Step *s)
{
    const int32_t *f = VI(s->v[0]), *mf = mb(s->b[0]);
    int64_t n = s->v[0]->len;
    if (elem_float(s)) {
        const double *x = VF(s->v[1]), *y = VF(s->v[2]), *ex = fb(s->b[1]), *ey = fb(s->b[2]);
        Value *o = quiet_new(VT_FLOAT, n);
        for (int64_t i = 0; i < n; i++) {
            double e = f[i] ? fat(ex, i) : fat(ey, i);
            if (mat(mf, i)) {
                /* either operand: the other lies within |x - y| + its bound */
                double alt = fabs(x[i] - y[i]) * (1.0 + 4.0 * U) + (f[i] ? fat(ey, i) : fat(ex, i));
                if (x[i] != y[i] || fat(ex, i) != 0.0 || fat(ey, i) != 0.0)
                    e = fin(fmax(e, isnan(alt) ? INFINITY : alt));
            }
            VF(o)[i] = e;
        }
        s->out[0] = bnd_of(o);
        return;
    }
    const int32_t *x = VI(s->v[1]), *y = VI(s->v[2]), *mx = mb(s->b[1]), *my = mb(s->b[2]);
    Value *o = quiet_new(ops_val_type(s->ins->type), n);
    for (int64_t i = 0; i < n; i++) {
        int m = f[i] ? mat(mx, i) : mat(my, i);
        if (mat(mf, i))
            m |= x[i] != y[i] || mat(mx, i) || mat(my, i);
        VI(o)[i] = m;
    }
    s->out[0] = bnd_of(o);
}

/* Walk the segments of SD over data of length N: 0, or -1 when one lies
 * outside (the instruction will fail; its results are not needed). */
#define FOR_SEGMENTS(SD, N, K, POS, L, ...)                                   \
    do {                                                                      \
        const int32_t *lens_ = VI(SD);                                        \
        int64_t pos_ = 0;                                                     \
        for (int64_t K = 0; K < (SD)->len; K++) {                             \
            int64_t L = lens_[K] > 0 ? lens_[K] : 0, POS = pos_;              \
            if (L > 0 && (POS < 0 || POS + L > (N)))                          \
                return -1;                                                    \
            __VA_ARGS__;                                                      \
            pos_ += lens_[K];                                                 \
        }                                                                     \
    } while (0)

/* Float + and * (rule 1), MAX and MIN: bounds per segment (reductions)
 * or prefix (scans) in O. */
static int fold_float(Opcode op, int scan, const Value *d, const double *e, const Value *sd, double *o)
{
    const double *x = VF(d);
    int plus = op == OP_PLUS_SCAN || op == OP_PLUS_REDUCE, mul = op == OP_MUL_SCAN || op == OP_MUL_REDUCE;
    FOR_SEGMENTS(sd, d->len, k, pos, l, {
        double sa = 0.0, se = 0.0;          /* +: sum|x|, sum E */
        double p = 1.0, lg = 0.0;           /* *: prod|x|, sum log1p(E/|x|) */
        double pre = 0.0, pmin = 0.0, pmax = 0.0; /* *: log2 of the prefix products since the last zero */
        double mx = 0.0;                    /* MAX, MIN: the largest E */
        int zero = 0, bad = 0;
        for (int64_t i = 0;; i++) {
            /* the bound of the first i terms */
            double bound = plus  ? cb_sum_bound(i, sa, se)
                           : mul ? (bad ? INFINITY : zero ? 0.0 : cb_prod_bound(i, p, p * expm1(lg)))
                                 : mx;
            if (i == l) {
                if (!scan)
                    o[k] = bound;
                break;
            }
            if (scan)
                o[pos + i] = bound;
            double v = x[pos + i], ei = fat(e, pos + i), av = fabs(v);
            if (plus) {
                sa += av;
                se += ei;
            } else if (mul) {
                if (bad)
                    continue;
                if (v == 0.0 && ei == 0.0) {
                    /* the product is 0 in any order; partial products
                     * of the terms after it start again */
                    zero = 1;
                    pre = pmin = pmax = 0.0;
                    continue;
                }
                if (!(av > 0.0) || !isfinite(av) || !isfinite(ei) || (!zero && ei >= av * 0x1p-20)) {
                    bad = 1;
                    continue;
                }
                if (!zero) {
                    p *= av;
                    lg += log1p(ei / av) * (1.0 + 4.0 * U);
                }
                /* any run of consecutive terms (what a tree multiplies)
                 * stays within [2^-1000, 2^1000]: the relative error
                 * model holds there */
                pre += log2(av);
                pmin = fmin(pmin, pre);
                pmax = fmax(pmax, pre);
                if (pmax - pmin > 1000.0)
                    bad = 1;
            } else {
                mx = fmax(mx, isnan(v) && ei > 0.0 ? INFINITY : ei);
            }
        }
    });
    return 0;
}

static int fold_mask(int scan, const Value *d, const int32_t *m, const Value *sd, int32_t *o)
{
    FOR_SEGMENTS(sd, d->len, k, pos, l, {
        int any = 0;
        for (int64_t i = 0; i < l; i++) {
            if (scan)
                o[pos + i] = any;
            any |= m ? m[pos + i] != 0 : 0;
        }
        if (!scan)
            o[k] = any;
    });
    return 0;
}

static void rule_fold(Step *s, int scan)
{
    Value *d = s->v[0], *sd = s->v[1];
    Opcode op = s->ins->op;
    int64_t n = scan ? d->len : sd->len;
    int rc;
    if (elem_float(s)) {
        Value *o = quiet_new(VT_FLOAT, n);
        rc = fold_float(op, scan, d, fb(s->b[0]), sd, VF(o));
        if (rc < 0) {
            val_release(o);
            out_unv(s);
            return;
        }
        s->out[0] = bnd_of(o);
        return;
    }
    if (!s->b[0]) {
        s->out[0] = NULL;
        return;
    }
    Value *o = quiet_new((ValType)d->type, n);
    rc = fold_mask(scan, d, mb(s->b[0]), sd, VI(o));
    if (rc < 0) {
        val_release(o);
        out_unv(s);
        return;
    }
    s->out[0] = bnd_of(o);
}

static int rank_mask(const Value *d, const CbBound *b, const Value *sd, int32_t *o)
{
    const double *e = d->type == VT_FLOAT ? fb(b) : NULL;
    const int32_t *m = d->type == VT_FLOAT ? NULL : mb(b);
    FOR_SEGMENTS(sd, d->len, k, pos, l, {
        int any = 0;
        for (int64_t i = 0; i < l && !any; i++)
            any = e ? e[pos + i] != 0.0 : m[pos + i] != 0;
        for (int64_t i = 0; i < l; i++)
            o[pos + i] = any;
    });
    return 0;
}

static void rule_rank(Step *s)
{
    Value *o = quiet_new(VT_INT, s->v[0]->len);
    if (rank_mask(s->v[0], s->b[0], s->v[1], VI(o)) < 0) {
        val_release(o);
        out_unv(s);
        return;
    }
    s->out[0] = bnd_of(o);
}

static void rule_index(Step *s)
{
    Value *sub[OP_MAXARGS] = { 0 }, *res[2] = { 0 };
    sub[0] = stand_in(s, 0);
    sub[1] = stand_in(s, 1);
    trace(s, sub, res);
    val_release(sub[0]);
    val_release(sub[1]);
    /* init_mask + j·stride_mask is non-zero exactly where element j
     * depends on a may-differ init or stride */
    for (int64_t i = 0; i < res[0]->len; i++)
        VI(res[0])[i] = VI(res[0])[i] != 0;
    s->out[0] = bnd_of(res[0]);
}

/* The rule of one vector instruction: S->out from S->v and S->b. */
static void rule(Step *s)
{
    for (int k = 0; k < s->nargs; k++)
        if (s->b[k] == UNV) {
            out_unv(s);
            return;
        }
    Opcode op = s->ins->op;
    switch (op) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MOD:
    case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE:
    case OP_LSHIFT: case OP_RSHIFT: case OP_AND: case OP_OR: case OP_XOR:
        rule_binary(s);
        return;
    case OP_NOT: case OP_RAND: case OP_FLOOR: case OP_CEIL: case OP_TRUNC: case OP_ROUND:
    case OP_LOG: case OP_SQRT: case OP_EXP: case OP_SIN: case OP_COS: case OP_TAN:
    case OP_ASIN: case OP_ACOS: case OP_ATAN: case OP_SINH: case OP_COSH: case OP_TANH:
    case OP_I_TO_F: case OP_I_TO_B: case OP_B_TO_I:
        rule_unary(s);
        return;
    case OP_SELECT:
        rule_select(s);
        return;
    case OP_PLUS_SCAN: case OP_MUL_SCAN: case OP_MAX_SCAN: case OP_MIN_SCAN:
    case OP_AND_SCAN: case OP_OR_SCAN: case OP_XOR_SCAN:
        rule_fold(s, 1);
        return;
    case OP_PLUS_REDUCE: case OP_MUL_REDUCE: case OP_MAX_REDUCE: case OP_MIN_REDUCE:
    case OP_AND_REDUCE: case OP_OR_REDUCE: case OP_XOR_REDUCE:
        rule_fold(s, 0);
        return;
    case OP_RANK_UP: case OP_RANK_DOWN:
        rule_rank(s);
        return;
    case OP_LENGTH: case OP_LENGTHS:
        s->out[0] = NULL;
        return;
    case OP_MAKE_SEGDES:
        s->out[0] = s->b[0] ? UNV : NULL;
        return;
    case OP_INDEX:
        rule_index(s);
        return;
    case OP_DIST: { /* vals sd */
        static const int d[] = { 0, -1 };
        move_data(s, d);
        return;
    }
    case OP_PERMUTE: { /* data idx sd */
        static const int d[] = { 0, -1 };
        scatter(s, d, 1, -1);
        return;
    }
    case OP_DPERMUTE: { /* data idx dflt ssd dsd */
        static const int d[] = { 0, 2, -1 };
        scatter(s, d, 1, -1);
        return;
    }
    case OP_FPERMUTE: { /* data idx flags ssd dsd */
        static const int d[] = { 0, -1 };
        scatter(s, d, 1, 2);
        return;
    }
    case OP_DFPERMUTE: { /* data idx flags dflt ssd dsd */
        static const int d[] = { 0, 3, -1 };
        scatter(s, d, 1, 2);
        return;
    }
    case OP_BPERMUTE: case OP_EXTRACT: { /* data idx ssd dsd; data idx sd */
        static const int d[] = { 0, -1 };
        move_data(s, d);
        anything_where(s, 1);
        return;
    }
    case OP_BFPERMUTE: { /* data idx flags ssd dsd */
        static const int d[] = { 0, -1 };
        move_data(s, d);
        anything_where(s, 1);
        anything_where(s, 2);
        return;
    }
    case OP_REPLACE: { /* data idx vals sd */
        static const int d[] = { 0, 2, -1 };
        scatter(s, d, 1, -1);
        return;
    }
    case OP_PACK: { /* data flags sd -> data sd */
        static const int d[] = { 0, -1 };
        scatter(s, d, 1, -1);
        return;
    }
    default:
        out_unv(s);
        return;
    }
}

/* Instructions that make inexact results of exact arguments (rules 1, 3). */
static int makes_inexact(const CbRun *r, const Instr *ins)
{
    if (ins->type == TY_FLOAT && (ins->op == OP_PLUS_SCAN || ins->op == OP_MUL_SCAN ||
                                  ins->op == OP_PLUS_REDUCE || ins->op == OP_MUL_REDUCE))
        return 1;
    return r->o.libm_ulps > 0 && is_libm(ins->op);
}

/* ---- the run --------------------------------------------------------------------- */

CbRun *cb_run_block(Interp *it, int start, int end, const CbOptions *o)
{
    CbRun *r = rt_xcalloc(1, sizeof *r);
    r->o = *o;
    const Program *p = it->prog;
    for (int pc = start; pc < end; pc++) {
        const Instr *ins = &p->code[pc];
        int64_t sp0 = it->sp;
        switch (ins->op) {
        case OP_COPY: case OP_POP: case OP_CPOP:
            interp_exec_range(it, pc, pc + 1);
            if (r->sh)
                sh_stackop(r, ins, sp0);
            continue;
        case OP_CONST:
            interp_exec_range(it, pc, pc + 1);
            continue; /* exact; the shadow above sp is NULL */
        default:
            break;
        }
        const OpInfo *oi = &vc_ops[ins->op];
        if (!oi->args || !oi->results) { /* not an instruction of a block */
            interp_exec_range(it, pc, pc + 1);
            r->lost = 1;
            continue;
        }
        Step s;
        memset(&s, 0, sizeof s);
        s.r = r;
        s.it = it;
        s.ins = ins;
        s.pc = pc;
        s.nargs = (int)strlen(oi->args);
        s.nres = (int)strlen(oi->results);
        int inexact = 0;
        for (int k = 0; k < s.nargs && r->sh && sp0 - s.nargs + k >= 0; k++)
            inexact |= (s.b[k] = r->sh[sp0 - s.nargs + k]) != NULL;
        if (s.nres > 2 && inexact)
            r->lost = 1; /* no instruction has more than two results */
        if ((inexact || makes_inexact(r, ins)) && !r->lost && s.nres <= 2) {
            rt_set_where(p, ins);
            if (val_device_on)
                interp_host_operands(it, ins);
            argcheck(it, ins); /* as the instruction will: types and lengths hold below */
            for (int k = 0; k < s.nargs; k++)
                s.v[k] = it->stk[sp0 - s.nargs + k];
            rule(&s);
        }
        interp_exec_range(it, pc, pc + 1);
        if (it->sp != sp0 - s.nargs + s.nres)
            r->lost = 1;
        if (!r->sh && !s.out[0] && !s.out[1])
            continue;
        sh_reserve(r, sp0 + s.nres + 1);
        for (int k = 0; k < s.nargs; k++) {
            bnd_release(r->sh[sp0 - s.nargs + k]);
            r->sh[sp0 - s.nargs + k] = NULL;
        }
        for (int k = 0; k < s.nres; k++)
            r->sh[sp0 - s.nargs + k] = s.out[k];
    }
    r->sp = it->sp;
    return r;
}

const CbBound *cb_bound_at(const CbRun *r, int64_t depth)
{
    if (r->lost)
        return UNV;
    if (!r->sh || depth < 0 || depth >= r->sp)
        return NULL;
    return r->sh[r->sp - 1 - depth];
}

void cb_run_free(CbRun *r)
{
    if (!r)
        return;
    for (int64_t k = 0; k < r->cap && r->sh; k++)
        bnd_release(r->sh[k]);
    free(r->sh);
    free(r);
}

/* ---- comparing ------------------------------------------------------------------- */

int64_t cb_first_difference(const Value *a, const Value *r, const CbBound *b, double rel, double *bound_at)
{
    if (bound_at)
        *bound_at = 0.0;
    if (a->type != r->type || a->len != r->len)
        return 0;
    if (a->type == VT_PAIR)
        return -1;
    if (a->type == VT_FLOAT) {
        const double *e = fb(b);
        for (int64_t i = 0; i < a->len; i++) {
            double x = VF(a)[i], y = VF(r)[i];
            if (x == y || (isnan(x) && isnan(y)))
                continue;
            double ei = fat(e, i);
            if (ei == INFINITY)
                continue;
            double m = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
            if (!(fabs(x - y) <= ei + rel * m)) {
                if (bound_at)
                    *bound_at = ei;
                return i;
            }
        }
        return -1;
    }
    const int32_t *m = a->type == VT_SEGDES ? NULL : mb(b);
    for (int64_t i = 0; i < a->len; i++)
        if (VI(a)[i] != VI(r)[i] && !mat(m, i))
            return i;
    return -1;
}

int64_t cb_free_elements(const CbBound *b)
{
    if (!b || !b->v)
        return 0;
    int64_t c = 0;
    for (int64_t i = 0; i < b->v->len; i++)
        c += b->v->type == VT_FLOAT ? VF(b->v)[i] == INFINITY : VI(b->v)[i] != 0;
    return c;
}

/* ---- the test hook ------------------------------------------------------------------ */

int cb_perturb_parse(const char *spec, CbPerturb *p)
{
    memset(p, 0, sizeof *p);
    if (!spec || !*spec)
        return 0;
    static const struct { const char *name; CbPerturbKind kind; } kinds[] = {
        { "fsum:", CB_PERTURB_FSUM }, { "ulps:", CB_PERTURB_ULPS }, { "int:", CB_PERTURB_INT } };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t l = strlen(kinds[i].name);
        if (strncmp(spec, kinds[i].name, l) != 0)
            continue;
        char *end;
        double v = strtod(spec + l, &end);
        if (end == spec + l || *end || !isfinite(v) || v == 0.0)
            return -1;
        if (kinds[i].kind != CB_PERTURB_FSUM && (v != floor(v) || fabs(v) > 1e6))
            return -1;
        p->kind = kinds[i].kind;
        p->amount = v;
        return 0;
    }
    return -1;
}

static int returned(const LcuKernel *k, int var)
{
    for (int r = 0; r < k->nrets; r++)
        if (k->rets[r] == var)
            return 1;
    return 0;
}

void cb_perturb_kernel(const CbPerturb *p, const LcuKernel *k, Value **env)
{
    for (int si = 0; si < k->nsoacs; si++) {
        const LcuSoac *s = k->soacs[si];
        for (int r = 0; r < s->nres; r++) {
            Value *v = env[s->res[r]];
            if (!v || v->type == VT_PAIR || v->len == 0 || !returned(k, s->res[r]))
                continue;
            int fold = s->kind == LS_REDUCE || s->kind == LS_SCAN || s->kind == LS_SEG_REDUCE ||
                       s->kind == LS_SEG_SCAN;
            int64_t i = v->len - 1;
            switch (p->kind) {
            case CB_PERTURB_FSUM:
                if (v->type == VT_FLOAT && fold && (s->rops[r] == VS_FADD || s->rops[r] == VS_FMUL)) {
                    val_drop_device(v);
                    VF(v)[i] += p->amount;
                }
                break;
            case CB_PERTURB_ULPS:
                if (v->type == VT_FLOAT) {
                    val_drop_device(v);
                    for (int u = 0; u < (int)fabs(p->amount); u++)
                        VF(v)[i] = nextafter(VF(v)[i], p->amount > 0 ? INFINITY : -INFINITY);
                }
                break;
            case CB_PERTURB_INT:
                if (v->type == VT_INT) {
                    val_drop_device(v);
                    VI(v)[i] = vs_iadd(VI(v)[i], (int32_t)p->amount);
                }
                break;
            default:
                break;
            }
        }
    }
}

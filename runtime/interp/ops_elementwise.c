/* runtime/interp/ops_elementwise.c — elementwise instructions (vcode/SPEC.md §4.1). */
#include "runtime/interp/ops.h"
#include "runtime/core/errors.h"
#include "runtime/core/par.h"
#include "runtime/core/rand.h"
#include "vcode/optable.h"

#include <math.h>
#include <stdint.h>

/* Result buffer for an op whose arguments are the top K entries: reuse one
 * of them when only the stack holds it and it has the result's element
 * size and length. */
static Value *result_for(Interp *it, int k, ValType rt, int64_t len)
{
    static const int depths[4][4] = { { 0, -1 }, { 1, 0, -1 }, { 2, 1, 0, -1 }, { -1 } };
    Value *r = ops_reusable(it, rt, len, depths[k - 1]);
    if (r) {
        val_ref(r);
        r->type = (uint8_t)rt;
        return r;
    }
    return val_new(rt, len);
}

/* An elementwise instruction's loop over elements [lo, hi): its
 * arguments and result. Split between threads (runtime/core/par.h) when the
 * vector is long and the operation cannot fail: element i depends on
 * element i alone, so the results are the same whatever the split. */
typedef struct {
    const Instr *ins;
    const Value *a, *b, *c;     /* arguments in stack order (b, c may be NULL) */
    Value *r;
} ElemJob;

/* An argument's elements: its data, or for a lazy fill (value.h) its one
 * value, read as element 0 by a loop whose SA/SB says so. */
static inline const void *elems_of(const Value *v)
{
    return v->lazy ? (const void *)&v->fill : v->data;
}

/* SA, SB: 1 when argument a, b is a lazy fill (a scalar); constants in
 * each of binary_range's three instances, so that each loop is compiled
 * for its case. */
#define LOOP2(T, RT, EXPR)                                                    \
    do {                                                                      \
        const T *x = (const T *)elems_of(j->a), *y = (const T *)elems_of(j->b); \
        RT *o = (RT *)j->r->data;                                             \
        OPS_IVDEP                                                             \
        for (int64_t i = lo; i < hi; i++) {                                   \
            T p = x[sa ? 0 : i], q = y[sb ? 0 : i];                           \
            o[i] = (RT)(EXPR);                                                \
        }                                                                     \
    } while (0)

#define U32(v) ((uint32_t)(v))

static inline __attribute__((always_inline)) void binary_loop(const ElemJob *j, int64_t lo, int64_t hi, const int sa,
                                                              const int sb)
{
    int isf = j->ins->type == TY_FLOAT;
    switch (j->ins->op) {
    case OP_ADD:
        if (isf) LOOP2(double, double, vs_fadd(p, q));
        else LOOP2(int32_t, int32_t, vs_iadd(p, q));
        break;
    case OP_SUB:
        if (isf) LOOP2(double, double, vs_fsub(p, q));
        else LOOP2(int32_t, int32_t, vs_isub(p, q));
        break;
    case OP_MUL:
        if (isf) LOOP2(double, double, vs_fmul(p, q));
        else LOOP2(int32_t, int32_t, vs_imul(p, q));
        break;
    case OP_DIV:
        if (isf) {
            LOOP2(double, double, vs_fdiv(p, q));
        } else { /* can fail: never split */
            const int32_t *x = elems_of(j->a), *y = elems_of(j->b);
            int32_t *o = VI(j->r);
            for (int64_t i = lo; i < hi; i++) {
                int f = vs_idiv(x[sa ? 0 : i], y[sb ? 0 : i], &o[i]);
                if (f != VS_OK)
                    rt_fatal(vs_fault_format(f), (long long)i);
            }
        }
        break;
    case OP_MOD: { /* can fail: never split */
        const int32_t *x = elems_of(j->a), *y = elems_of(j->b);
        int32_t *o = VI(j->r);
        for (int64_t i = lo; i < hi; i++) {
            int f = vs_imod(x[sa ? 0 : i], y[sb ? 0 : i], &o[i]);
            if (f != VS_OK)
                rt_fatal(vs_fault_format(f), (long long)i);
        }
        break;
    }
    case OP_LT:
        if (isf) LOOP2(double, int32_t, vs_flt(p, q));
        else LOOP2(int32_t, int32_t, vs_ilt(p, q));
        break;
    case OP_LE:
        if (isf) LOOP2(double, int32_t, vs_fle(p, q));
        else LOOP2(int32_t, int32_t, vs_ile(p, q));
        break;
    case OP_GT:
        if (isf) LOOP2(double, int32_t, vs_fgt(p, q));
        else LOOP2(int32_t, int32_t, vs_igt(p, q));
        break;
    case OP_GE:
        if (isf) LOOP2(double, int32_t, vs_fge(p, q));
        else LOOP2(int32_t, int32_t, vs_ige(p, q));
        break;
    case OP_EQ:
        if (isf) LOOP2(double, int32_t, vs_feq(p, q));
        else LOOP2(int32_t, int32_t, vs_ieq(p, q));
        break;
    case OP_NE:
        if (isf) LOOP2(double, int32_t, vs_fne(p, q));
        else LOOP2(int32_t, int32_t, vs_ine(p, q));
        break;
    case OP_RSHIFT: /* radix sort's inner loop: a loop of its own */
        LOOP2(int32_t, int32_t, vs_rshift(p, q));
        break;
    case OP_AND:
        if (j->ins->type == TY_BOOL) LOOP2(int32_t, int32_t, vs_band(p, q));
        else LOOP2(int32_t, int32_t, vs_iand(p, q));
        break;
    case OP_OR:
        if (j->ins->type == TY_BOOL) LOOP2(int32_t, int32_t, vs_bor(p, q));
        else LOOP2(int32_t, int32_t, vs_ior(p, q));
        break;
    case OP_XOR:
        LOOP2(int32_t, int32_t, vs_ixor(p, q));
        break;
    default: { /* defined by vcode/semantics.h */
        const OpInfo *oi = &vc_ops[j->ins->op];
        if (isf && oi->sem_float)
            LOOP2(double, double, oi->sem_float(p, q));
        else if (!isf && oi->sem_int)
            LOOP2(int32_t, int32_t, oi->sem_int(p, q));
        else
            rt_fatal("internal error: not a binary op");
    }
    }
}

static void binary_range(void *job, int64_t lo, int64_t hi) { binary_loop(job, lo, hi, 0, 0); }
static void binary_range_sv(void *job, int64_t lo, int64_t hi) { binary_loop(job, lo, hi, 1, 0); }
static void binary_range_vs(void *job, int64_t lo, int64_t hi) { binary_loop(job, lo, hi, 0, 1); }
static void binary_range_ss(void *job, int64_t lo, int64_t hi) { binary_loop(job, lo, hi, 1, 1); }

int ops_lazy_aware(int op)
{
    return (op >= OP_ADD && op <= OP_NOT) || (op >= OP_FLOOR && op <= OP_B_TO_I) ||
           (op >= OP_PLUS_REDUCE && op <= OP_XOR_REDUCE); /* ops_scan.c lazy_reduce */
}

/* An instruction over lazy fills alone: its one result (the loop over
 * element 0, so a fault names element 0, as the full loop's first would)
 * made a lazy fill of N elements. */
static Value *lazy_result(const ElemJob *j0, ValType rt, int64_t n, ParFn loop)
{
    Value *one = val_new(rt, 1);
    ElemJob j = *j0;
    j.r = one;
    loop(&j, 0, 1);
    Value *r = val_new_fill(rt, n, one->data);
    val_release(one);
    return r;
}

void op_binary(Interp *it, const Instr *ins)
{
    Value *a = vs_at(it, 1), *b = vs_at(it, 0);
    int64_t n = a->len;
    int isf = ins->type == TY_FLOAT;
    ValType rt;
    switch (ins->op) {
    case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE:
        rt = VT_BOOL;
        break;
    default:
        rt = (ValType)a->type;
        break;
    }
    int may_fail = !isf && (ins->op == OP_DIV || ins->op == OP_MOD);
    if (a->lazy || b->lazy) {
        ElemJob j = { ins, a, b, NULL, NULL };
        if (a->lazy && b->lazy) {
            ops_finish(it, 2, lazy_result(&j, rt, n, binary_range_ss));
            return;
        }
        j.r = result_for(it, 2, rt, n);
        par_for(n, may_fail ? INT64_MAX : PAR_MIN_CHEAP, a->lazy ? binary_range_sv : binary_range_vs, &j);
        ops_finish(it, 2, j.r);
        return;
    }
    ElemJob j = { ins, a, b, NULL, result_for(it, 2, rt, n) };
    par_for(n, may_fail ? INT64_MAX : PAR_MIN_CHEAP, binary_range, &j);
    ops_finish(it, 2, j.r);
}

#define LOOP1(T, RT, EXPR)                                                    \
    do {                                                                      \
        const T *x = (const T *)elems_of(j->a);                               \
        RT *o = (RT *)j->r->data;                                             \
        OPS_IVDEP                                                             \
        for (int64_t i = lo; i < hi; i++) {                                   \
            T p = x[i];                                                       \
            o[i] = (RT)(EXPR);                                                \
        }                                                                     \
    } while (0)

static void unary_range(void *job, int64_t lo, int64_t hi)
{
    const ElemJob *j = job;
    switch (j->ins->op) {
    case OP_NOT:
        if (j->ins->type == TY_BOOL) LOOP1(int32_t, int32_t, vs_bnot(p));
        else LOOP1(int32_t, int32_t, vs_inot(p));
        break;
    case OP_FLOOR: LOOP1(double, int32_t, vs_floor(p)); break;
    case OP_CEIL: LOOP1(double, int32_t, vs_ceil(p)); break;
    case OP_TRUNC: LOOP1(double, int32_t, vs_f2i(p)); break;
    case OP_ROUND: LOOP1(double, int32_t, vs_round(p)); break;
    case OP_LOG: LOOP1(double, double, vs_log(p)); break;
    case OP_SQRT: LOOP1(double, double, vs_sqrt(p)); break;
    case OP_EXP: LOOP1(double, double, vs_exp(p)); break;
    case OP_SIN: LOOP1(double, double, vs_sin(p)); break;
    case OP_COS: LOOP1(double, double, vs_cos(p)); break;
    case OP_TAN: LOOP1(double, double, vs_tan(p)); break;
    case OP_ASIN: LOOP1(double, double, vs_asin(p)); break;
    case OP_ACOS: LOOP1(double, double, vs_acos(p)); break;
    case OP_ATAN: LOOP1(double, double, vs_atan(p)); break;
    case OP_SINH: LOOP1(double, double, vs_sinh(p)); break;
    case OP_COSH: LOOP1(double, double, vs_cosh(p)); break;
    case OP_TANH: LOOP1(double, double, vs_tanh(p)); break;
    case OP_I_TO_F: LOOP1(int32_t, double, vs_i2f(p)); break;
    case OP_I_TO_B: LOOP1(int32_t, int32_t, vs_i2b(p)); break;
    case OP_B_TO_I:
        /* a Bool holds 0 or 1 as an int32: in place there is nothing to do */
        if (j->r != j->a)
            LOOP1(int32_t, int32_t, vs_b2i(p));
        break;
    default:
        rt_fatal("internal error: not a unary op");
    }
}

void op_unary(Interp *it, const Instr *ins)
{
    Value *a = vs_at(it, 0);
    int64_t n = a->len;
    ValType rt;
    int math = 0;
    switch (ins->op) {
    case OP_NOT: rt = (ValType)a->type; break;
    case OP_FLOOR: case OP_CEIL: case OP_TRUNC: case OP_ROUND: case OP_B_TO_I: rt = VT_INT; break;
    case OP_I_TO_B: rt = VT_BOOL; break;
    case OP_I_TO_F: rt = VT_FLOAT; break;
    default: rt = VT_FLOAT; math = 1; break;
    }
    if (a->lazy) { /* one element computed, a lazy fill of the result */
        ElemJob j = { ins, a, NULL, NULL, NULL };
        ops_finish(it, 1, lazy_result(&j, rt, n, unary_range));
        return;
    }
    ElemJob j = { ins, a, NULL, NULL, result_for(it, 1, rt, n) };
    par_for(n, math ? PAR_MIN_MATH : PAR_MIN_CHEAP, unary_range, &j);
    ops_finish(it, 1, j.r);
}

static void select_range(void *job, int64_t lo, int64_t hi)
{
    const ElemJob *j = job;
    const int32_t *fl = VI(j->a);
    if (j->r->type == VT_FLOAT) {
        const double *x = VF(j->b), *y = VF(j->c);
        double *o = VF(j->r);
        OPS_IVDEP
        for (int64_t i = lo; i < hi; i++)
            o[i] = fl[i] ? x[i] : y[i];
    } else {
        const int32_t *x = VI(j->b), *y = VI(j->c);
        int32_t *o = VI(j->r);
        OPS_IVDEP
        for (int64_t i = lo; i < hi; i++)
            o[i] = fl[i] ? x[i] : y[i];
    }
}

void op_select(Interp *it, const Instr *ins)
{
    Value *f = vs_at(it, 2), *a = vs_at(it, 1), *b = vs_at(it, 0);
    ElemJob j = { ins, f, a, b, result_for(it, 3, ops_val_type(ins->type), f->len) };
    par_for(f->len, PAR_MIN_CHEAP, select_range, &j);
    ops_finish(it, 3, j.r);
}

void op_rand(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *a = vs_at(it, 0);
    int64_t n = a->len;
    const int32_t *lim = VI(a);
    int32_t unused;
    for (int64_t i = 0; i < n; i++) /* every range checked before anything is drawn */
        if (vs_randmod(0, lim[i], &unused) != VS_OK) /* so the draws below cannot fault */
            rt_fatal(vs_fault_format(VS_RAND0), (long long)i);
    Value *r = result_for(it, 1, VT_INT, n);
    int32_t *o = VI(r);
    RandState *st = rnd_global();
    if (r == a) {
        /* In place: draw in chunks so the limits are still readable. */
        int32_t buf[1024];
        for (int64_t i = 0; i < n; i += 1024) {
            int64_t c = n - i < 1024 ? n - i : 1024;
            rnd_fill(st, buf, c);
            for (int64_t j = 0; j < c; j++)
                o[i + j] = vs_randmod_draw(buf[j], o[i + j]);
        }
    } else {
        rnd_fill(st, o, n);
        for (int64_t i = 0; i < n; i++)
            o[i] = vs_randmod_draw(o[i], lim[i]);
    }
    ops_finish(it, 1, r);
}

/* runtime/ops_elementwise.c — elementwise instructions (VCODE.md §4.1). */
#include "runtime/ops.h"
#include "runtime/errors.h"
#include "runtime/rand.h"

#include <math.h>
#include <stdint.h>

static ValType vt_of(VcType t)
{
    switch (t) {
    case TY_BOOL: return VT_BOOL;
    case TY_FLOAT: return VT_FLOAT;
    case TY_SEGDES: return VT_SEGDES;
    default: return VT_INT;
    }
}

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

#define LOOP2(T, RT, EXPR)                                                    \
    do {                                                                      \
        const T *x = (const T *)a->data, *y = (const T *)b->data;            \
        RT *o = (RT *)r->data;                                                \
        OPS_IVDEP                                                             \
        for (int64_t i = 0; i < n; i++) {                                     \
            T p = x[i], q = y[i];                                             \
            o[i] = (RT)(EXPR);                                                \
        }                                                                     \
    } while (0)

#define U32(v) ((uint32_t)(v))

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
    Value *r = result_for(it, 2, rt, n);
    switch (ins->op) {
    case OP_ADD:
        if (isf) LOOP2(double, double, p + q);
        else LOOP2(int32_t, int32_t, (int32_t)(U32(p) + U32(q)));
        break;
    case OP_SUB:
        if (isf) LOOP2(double, double, p - q);
        else LOOP2(int32_t, int32_t, (int32_t)(U32(p) - U32(q)));
        break;
    case OP_MUL:
        if (isf) LOOP2(double, double, p * q);
        else LOOP2(int32_t, int32_t, (int32_t)(U32(p) * U32(q)));
        break;
    case OP_DIV:
        if (isf) {
            LOOP2(double, double, p / q);
        } else {
            const int32_t *x = VI(a), *y = VI(b);
            int32_t *o = VI(r);
            for (int64_t i = 0; i < n; i++) {
                if (y[i] == 0)
                    rt_fatal("integer division by zero (element %lld)", (long long)i);
                if (y[i] == -1 && x[i] == INT32_MIN)
                    rt_fatal("integer overflow: -2147483648 / -1 (element %lld)", (long long)i);
                o[i] = x[i] / y[i];
            }
        }
        break;
    case OP_MOD: {
        const int32_t *x = VI(a), *y = VI(b);
        int32_t *o = VI(r);
        for (int64_t i = 0; i < n; i++) {
            if (y[i] == 0)
                rt_fatal("integer remainder by zero (element %lld)", (long long)i);
            if (y[i] == -1 && x[i] == INT32_MIN)
                rt_fatal("integer overflow: -2147483648 %% -1 (element %lld)", (long long)i);
            o[i] = x[i] % y[i];
        }
        break;
    }
    case OP_LT:
        if (isf) LOOP2(double, int32_t, p < q);
        else LOOP2(int32_t, int32_t, p < q);
        break;
    case OP_LE:
        if (isf) LOOP2(double, int32_t, p <= q);
        else LOOP2(int32_t, int32_t, p <= q);
        break;
    case OP_GT:
        if (isf) LOOP2(double, int32_t, p > q);
        else LOOP2(int32_t, int32_t, p > q);
        break;
    case OP_GE:
        if (isf) LOOP2(double, int32_t, p >= q);
        else LOOP2(int32_t, int32_t, p >= q);
        break;
    case OP_EQ:
        if (isf) LOOP2(double, int32_t, p == q);
        else LOOP2(int32_t, int32_t, p == q);
        break;
    case OP_NE:
        if (isf) LOOP2(double, int32_t, p != q);
        else LOOP2(int32_t, int32_t, p != q);
        break;
    case OP_LSHIFT:
        LOOP2(int32_t, int32_t, (int32_t)(U32(p) << (q & 31)));
        break;
    case OP_RSHIFT:
        LOOP2(int32_t, int32_t, p >> (q & 31));
        break;
    case OP_AND:
        if (ins->type == TY_BOOL) LOOP2(int32_t, int32_t, (p != 0) & (q != 0));
        else LOOP2(int32_t, int32_t, p & q);
        break;
    case OP_OR:
        if (ins->type == TY_BOOL) LOOP2(int32_t, int32_t, (p != 0) | (q != 0));
        else LOOP2(int32_t, int32_t, p | q);
        break;
    case OP_XOR:
        LOOP2(int32_t, int32_t, p ^ q);
        break;
    default:
        rt_fatal("internal error: not a binary op");
    }
    ops_finish(it, 2, r);
}

/* Float → Int as x86 cvttsd2si: NaN and out-of-range give INT32_MIN. */
static inline int32_t f2i(double d)
{
    if (d > -2147483649.0 && d < 2147483648.0)
        return (int32_t)d;
    return INT32_MIN;
}

#define LOOP1(T, RT, EXPR)                                                    \
    do {                                                                      \
        const T *x = (const T *)a->data;                                      \
        RT *o = (RT *)r->data;                                                \
        OPS_IVDEP                                                             \
        for (int64_t i = 0; i < n; i++) {                                     \
            T p = x[i];                                                       \
            o[i] = (RT)(EXPR);                                                \
        }                                                                     \
    } while (0)

void op_unary(Interp *it, const Instr *ins)
{
    Value *a = vs_at(it, 0);
    int64_t n = a->len;
    ValType rt;
    switch (ins->op) {
    case OP_NOT: rt = (ValType)a->type; break;
    case OP_FLOOR: case OP_CEIL: case OP_TRUNC: case OP_ROUND: case OP_B_TO_I: rt = VT_INT; break;
    case OP_I_TO_B: rt = VT_BOOL; break;
    default: rt = VT_FLOAT; break;
    }
    Value *r = result_for(it, 1, rt, n);
    switch (ins->op) {
    case OP_NOT:
        if (ins->type == TY_BOOL) LOOP1(int32_t, int32_t, p == 0);
        else LOOP1(int32_t, int32_t, ~p);
        break;
    case OP_FLOOR: LOOP1(double, int32_t, f2i(floor(p))); break;
    case OP_CEIL: LOOP1(double, int32_t, f2i(ceil(p))); break;
    case OP_TRUNC: LOOP1(double, int32_t, f2i(p)); break;
    case OP_ROUND: LOOP1(double, int32_t, f2i(p + 0.5)); break;
    case OP_LOG: LOOP1(double, double, log(p)); break;
    case OP_SQRT: LOOP1(double, double, sqrt(p)); break;
    case OP_EXP: LOOP1(double, double, exp(p)); break;
    case OP_SIN: LOOP1(double, double, sin(p)); break;
    case OP_COS: LOOP1(double, double, cos(p)); break;
    case OP_TAN: LOOP1(double, double, tan(p)); break;
    case OP_ASIN: LOOP1(double, double, asin(p)); break;
    case OP_ACOS: LOOP1(double, double, acos(p)); break;
    case OP_ATAN: LOOP1(double, double, atan(p)); break;
    case OP_SINH: LOOP1(double, double, sinh(p)); break;
    case OP_COSH: LOOP1(double, double, cosh(p)); break;
    case OP_TANH: LOOP1(double, double, tanh(p)); break;
    case OP_I_TO_F: LOOP1(int32_t, double, (double)p); break;
    case OP_I_TO_B: LOOP1(int32_t, int32_t, p != 0); break;
    case OP_B_TO_I:
        /* a Bool holds 0 or 1 as an int32: in place there is nothing to do */
        if (r != a)
            LOOP1(int32_t, int32_t, p);
        break;
    default:
        rt_fatal("internal error: not a unary op");
    }
    ops_finish(it, 1, r);
}

void op_select(Interp *it, const Instr *ins)
{
    Value *f = vs_at(it, 2), *a = vs_at(it, 1), *b = vs_at(it, 0);
    int64_t n = f->len;
    ValType rt = vt_of(ins->type);
    Value *r = result_for(it, 3, rt, n);
    const int32_t *fl = VI(f);
    if (rt == VT_FLOAT) {
        const double *x = VF(a), *y = VF(b);
        double *o = VF(r);
        OPS_IVDEP
        for (int64_t i = 0; i < n; i++)
            o[i] = fl[i] ? x[i] : y[i];
    } else {
        const int32_t *x = VI(a), *y = VI(b);
        int32_t *o = VI(r);
        OPS_IVDEP
        for (int64_t i = 0; i < n; i++)
            o[i] = fl[i] ? x[i] : y[i];
    }
    ops_finish(it, 3, r);
}

void op_rand(Interp *it, const Instr *ins)
{
    (void)ins;
    Value *a = vs_at(it, 0);
    int64_t n = a->len;
    const int32_t *lim = VI(a);
    for (int64_t i = 0; i < n; i++)
        if (lim[i] == 0)
            rt_fatal("range 0 at element %lld (RAND needs a non-zero range)", (long long)i);
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
                o[i + j] = buf[j] % o[i + j];
        }
    } else {
        rnd_fill(st, o, n);
        for (int64_t i = 0; i < n; i++)
            o[i] = o[i] % lim[i];
    }
    ops_finish(it, 1, r);
}

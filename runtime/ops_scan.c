/* runtime/ops_scan.c — segmented exclusive scans and reductions
 * (VCODE.md §4.2, §4.3). Every segment is combined strictly left to
 * right from the identity, so float results are bit-exact. */
#include "runtime/ops.h"
#include "runtime/errors.h"

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

/* One template per element type and combine rule: SCAN writes the running
 * value before each element, REDUCE writes the final value per segment.
 * Elements are addressed as x[pos + i], not through x + pos: the data
 * pointer of an empty vector is NULL, and NULL + 0 is undefined in C. */
#define SEG_LOOP(T, ID, COMBINE)                                              \
    do {                                                                      \
        const T *x = (const T *)d->data;                                      \
        T *o = (T *)r->data;                                                  \
        const int32_t *L = VI(sd);                                            \
        int64_t pos = 0;                                                      \
        for (int64_t k = 0; k < m; k++) {                                     \
            T acc = (ID);                                                     \
            int64_t l = L[k] > 0 ? L[k] : 0;                                  \
            if (scan) {                                                       \
                for (int64_t i = 0; i < l; i++) {                             \
                    T v = x[pos + i];                                         \
                    o[pos + i] = acc;                                         \
                    acc = (COMBINE);                                          \
                }                                                             \
            } else {                                                          \
                for (int64_t i = 0; i < l; i++) {                             \
                    T v = x[pos + i];                                         \
                    acc = (COMBINE);                                          \
                }                                                             \
                o[k] = acc;                                                   \
            }                                                                 \
            pos += L[k];                                                      \
        }                                                                     \
    } while (0)

#define U32(v) ((uint32_t)(v))

static void run(Value *d, Value *sd, Value *r, Kind kind, VcType ty, int scan)
{
    int64_t m = sd->len;
    if (ty == TY_FLOAT) {
        switch (kind) {
        case K_PLUS: SEG_LOOP(double, 0.0, acc + v); break;
        case K_MUL: SEG_LOOP(double, 1.0, acc * v); break;
        case K_MAX: SEG_LOOP(double, -VC_FLOAT_BIG, acc > v ? acc : v); break;
        case K_MIN: SEG_LOOP(double, VC_FLOAT_BIG, acc < v ? acc : v); break;
        default: rt_fatal("internal error: bad float scan");
        }
    } else if (ty == TY_INT) {
        switch (kind) {
        case K_PLUS: SEG_LOOP(int32_t, 0, (int32_t)(U32(acc) + U32(v))); break;
        case K_MUL: SEG_LOOP(int32_t, 1, (int32_t)(U32(acc) * U32(v))); break;
        case K_MAX: SEG_LOOP(int32_t, INT32_MIN, acc > v ? acc : v); break;
        case K_MIN: SEG_LOOP(int32_t, INT32_MAX, acc < v ? acc : v); break;
        case K_AND: SEG_LOOP(int32_t, -1, acc & v); break;
        case K_OR: SEG_LOOP(int32_t, 0, acc | v); break;
        case K_XOR: SEG_LOOP(int32_t, 0, acc ^ v); break;
        }
    } else {
        switch (kind) {
        /* bitwise on 0/1 (no short circuit: the reductions vectorise) */
        case K_AND: SEG_LOOP(int32_t, 1, acc & (v != 0)); break;
        case K_OR: SEG_LOOP(int32_t, 0, acc | (v != 0)); break;
        case K_XOR: SEG_LOOP(int32_t, 0, acc ^ (v != 0)); break;
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

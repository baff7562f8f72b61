/* tests/unit/test_lcu_eval.c — the λcu evaluator on small kernels whose
 * right answer is written down here (most from vcode/SPEC.md §4), then on random
 * inputs against the reference interpreter's own ops, bit for bit. */
#include "check.h"
#include "translate/lcu.h"
#include "runtime/fused/lcu_eval.h"
#include "runtime/core/errors.h"
#include "runtime/interp/interp.h"
#include "runtime/interp/ops.h"
#include "runtime/core/rand.h"

#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- values and the environment ------------------------------------------ */

#define NV 64
static Value *env[NV];
static LcuVarType types[NV];

static Value *ints(int n, const int32_t *x)
{
    Value *v = val_new(VT_INT, n);
    if (n)
        memcpy(v->data, x, (size_t)n * 4);
    return v;
}

static Value *bools(int n, const int32_t *x)
{
    Value *v = ints(n, x);
    v->type = VT_BOOL;
    return v;
}

static Value *floats(int n, const double *x)
{
    Value *v = val_new(VT_FLOAT, n);
    if (n)
        memcpy(v->data, x, (size_t)n * 8);
    return v;
}

static Value *segs(int m, const int32_t *l)
{
    Value *v = seg_new(m);
    if (m)
        memcpy(v->data, l, (size_t)m * 4);
    seg_finish(v);
    return v;
}

static LcuVarType type_of(const Value *v)
{
    LcuVarType t = { LV_ARRAY, VS_INT };
    if (v->type == VT_SEGDES)
        t.kind = LV_SEGDES;
    else if (v->type == VT_BOOL)
        t.base = VS_BOOL;
    else if (v->type == VT_FLOAT)
        t.base = VS_FLOAT;
    return t;
}

/* Bind VAR to V (taking the reference), as a kernel parameter. */
static void bind(int var, Value *v)
{
    if (env[var])
        val_release(env[var]);
    env[var] = v;
    types[var] = type_of(v);
}

/* Declare the type of a variable a kernel binds. */
static void decl(int var, LcuVarKind kind, VsElem base)
{
    types[var].kind = kind;
    types[var].base = base;
}

static void clear_env(void)
{
    for (int v = 0; v < NV; v++)
        if (env[v]) {
            val_release(env[v]);
            env[v] = NULL;
        }
}

static int is_ints(int var, int n, const int32_t *x)
{
    Value *v = env[var];
    if (!v || (v->type != VT_INT && v->type != VT_BOOL) || v->len != n)
        return 0;
    return n == 0 || memcmp(v->data, x, (size_t)n * 4) == 0;
}

static int is_bools(int var, int n, const int32_t *x)
{
    return env[var] && env[var]->type == VT_BOOL && is_ints(var, n, x);
}

static int is_floats(int var, int n, const double *x)
{
    Value *v = env[var];
    if (!v || v->type != VT_FLOAT || v->len != n)
        return 0;
    return n == 0 || memcmp(v->data, x, (size_t)n * 8) == 0;
}

static int is_segs(int var, int m, const int32_t *l)
{
    Value *v = env[var];
    if (!v || v->type != VT_SEGDES || v->len != m)
        return 0;
    int64_t n = 0;
    for (int k = 0; k < m; k++)
        n += l[k];
    return v->n == n && (m == 0 || memcmp(v->data, l, (size_t)m * 4) == 0);
}

/* Two values equal bit for bit (type, length, elements; n for descriptors). */
static int same_value(const Value *a, const Value *b)
{
    if (!a || !b || a->type != b->type || a->len != b->len)
        return 0;
    if (a->type == VT_SEGDES && a->n != b->n)
        return 0;
    size_t es = val_esize((ValType)a->type);
    return a->len == 0 || memcmp(a->data, b->data, (size_t)a->len * es) == 0;
}

/* ---- building kernels ------------------------------------------------------ */

static LcuExpr *at(int var, VsElem b) { return lcu_sub(var, b, lcu_index()); }
static LcuExpr *at0(int var, VsElem b) { return lcu_sub(var, b, lcu_int(0)); }
static LcuExpr *p2(LcuPrim p, VsElem t, LcuExpr *a, LcuExpr *b) { return lcu_prim2(p, t, a, b); }
static LcuExpr *p1(LcuPrim p, VsElem t, LcuExpr *a) { return lcu_prim1(p, t, a); }

static LcuExpr *tup2(LcuExpr *a, LcuExpr *b)
{
    LcuExpr *xs[2] = { a, b };
    return lcu_tuple(2, xs);
}

static LcuSoac *soac(LcuSoacKind kind, int nres, const int *res, LcuShapeKind sk, int svar)
{
    LcuSoac *s = lcu_soac_new(kind);
    s->nres = nres;
    for (int r = 0; r < nres; r++)
        s->res[r] = res[r];
    s->shape.kind = sk;
    s->shape.var = svar;
    return s;
}

static LcuSoac *soac1(LcuSoacKind kind, int res, LcuShapeKind sk, int svar, LcuExpr *pull)
{
    LcuSoac *s = soac(kind, 1, &res, sk, svar);
    s->pull = lcu_thunk(pull, 1);
    return s;
}

static LcuKernel *kernel1(LcuSoac *s)
{
    LcuKernel *k = lcu_kernel_new(1);
    lcu_kernel_add(k, s);
    return k;
}

/* Finish K (every bound variable returned unless NEED says otherwise), run
 * it, free it. */
static int valid(const LcuKernel *k)
{
    char msg[512];
    if (lcu_validate_kernel(k, types, NV, msg, sizeof msg) == 0)
        return 1;
    fprintf(stderr, "invalid kernel: %s\n", msg);
    lcu_print_kernel(stderr, k, types);
    return 0;
}

static void run_need(LcuKernel *k, const unsigned char *need)
{
    lcu_kernel_finish(k, need, NV);
    CHECK(valid(k));
    lcu_eval_kernel(k, env, types, NV);
    lcu_kernel_free(k);
}

static void run(LcuKernel *k) { run_need(k, NULL); }

/* ---- fatal errors ---------------------------------------------------------- */

static jmp_buf fatal_jmp;

static void fatal_hook(int status)
{
    (void)status;
    longjmp(fatal_jmp, 1);
}

/* Run K expecting a fatal error whose message contains WANT. */
static int fails_with(LcuKernel *k, const char *want)
{
    static char buf[1024];
    lcu_kernel_finish(k, NULL, NV);
    if (!valid(k))
        return 0;
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    if (saved < 0 || !tmp)
        return 0;
    dup2(fileno(tmp), 2);
    rt_set_fatal_hook(fatal_hook);
    volatile int died = 0;
    if (setjmp(fatal_jmp) == 0)
        lcu_eval_kernel(k, env, types, NV);
    else
        died = 1;
    rt_set_fatal_hook(NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t got = fread(buf, 1, sizeof buf - 1, tmp);
    buf[got] = 0;
    fclose(tmp);
    lcu_kernel_free(k);
    if (!died || !strstr(buf, want)) {
        fprintf(stderr, "expected a fatal error with \"%s\", got %s: %s\n", want,
                died ? "one" : "none", buf);
        return 0;
    }
    return 1;
}

/* ---- the reference ops, on a bare interpreter stack --------------------------- */

static Interp ref;

typedef void (*OpFn)(Interp *, const Instr *);

/* Run one reference op on ARGS (a1 first); returns its (last) result. */
static Value *ref_op(OpFn fn, Opcode op, VcType ty, int nargs, Value *const *args)
{
    Instr ins;
    memset(&ins, 0, sizeof ins);
    ins.op = op;
    ins.type = ty;
    for (int a = 0; a < nargs; a++)
        vs_push(&ref, val_ref(args[a]));
    fn(&ref, &ins);
    return vs_pop(&ref);
}

/* ---- tests with answers by hand ---------------------------------------------- */

static void test_rand(void)
{
    /* First: the global stream must be fresh. RAND = MAP randmod over a
     * LIB rand_stream; the draws are internal. */
    int32_t lim[5] = { 100, 100, 100, 100, 100 };
    bind(0, ints(5, lim));
    decl(1, LV_ARRAY, VS_INT);
    decl(2, LV_ARRAY, VS_INT);
    LcuKernel *k = lcu_kernel_new(7);
    LcuSoac *r = soac(LS_LIB, 1, (int[]){ 1 }, LSH_ONE, -1);
    r->lib = LL_RAND_STREAM;
    r->nargs = 1;
    r->args[0] = 0;
    lcu_kernel_add(k, r);
    lcu_kernel_add(k, soac1(LS_MAP, 2, LSH_LEN, 0,
                            p2(LP_RANDMOD, VS_INT, at(1, VS_INT), at(0, VS_INT))));
    unsigned char need[NV] = { 0 };
    need[2] = 1;
    run_need(k, need);
    CHECK(is_ints(2, 5, (int32_t[]){ 83, 86, 77, 15, 93 }));
    CHECK(env[1] == NULL);      /* internal: released */
    clear_env();
}

static void test_map_int(void)
{
    bind(0, ints(5, (int32_t[]){ 2147483647, INT32_MIN, 5, -7, 7 }));
    bind(1, ints(5, (int32_t[]){ 1, 2, 3, 2, -2 }));
    static const LcuPrim ops[] = { LP_ADD, LP_SUB, LP_MUL, LP_DIV, LP_MOD, LP_LT, LP_LSHIFT, LP_RSHIFT };
    const int nops = (int)(sizeof ops / sizeof ops[0]);
    LcuExpr *items[10];
    int res[10];
    for (int j = 0; j < nops; j++) {
        items[j] = p2(ops[j], VS_INT, at(0, VS_INT), at(1, VS_INT));
        res[j] = 10 + j;
        decl(res[j], LV_ARRAY, ops[j] == LP_LT ? VS_BOOL : VS_INT);
    }
    items[nops] = p1(LP_NEG, VS_INT, at(0, VS_INT));
    items[nops + 1] = p1(LP_NOT, VS_INT, at(0, VS_INT));
    res[nops] = 10 + nops;
    res[nops + 1] = 11 + nops;
    decl(res[nops], LV_ARRAY, VS_INT);
    decl(res[nops + 1], LV_ARRAY, VS_INT);
    LcuSoac *s = soac(LS_MAP, nops + 2, res, LSH_LEN, 0);
    s->pull = lcu_thunk(lcu_tuple(nops + 2, items), nops + 2);
    int64_t calls = lcu_eval_stats()->thunk_calls, kernels = lcu_eval_stats()->kernels;
    run(kernel1(s));
    CHECK(lcu_eval_stats()->thunk_calls == calls + 5);
    CHECK(lcu_eval_stats()->kernels == kernels + 1);
    CHECK(is_ints(10, 5, (int32_t[]){ INT32_MIN, -2147483646, 8, -5, 5 }));
    CHECK(is_ints(11, 5, (int32_t[]){ 2147483646, 2147483646, 2, -9, 9 }));
    CHECK(is_ints(12, 5, (int32_t[]){ 2147483647, 0, 15, -14, -14 }));
    CHECK(is_ints(13, 5, (int32_t[]){ 2147483647, -1073741824, 1, -3, -3 }));
    CHECK(is_ints(14, 5, (int32_t[]){ 0, 0, 2, -1, 1 }));
    CHECK(is_bools(15, 5, (int32_t[]){ 0, 1, 0, 1, 0 }));
    CHECK(is_ints(16, 5, (int32_t[]){ -2, 0, 40, -28, -1073741824 }));
    CHECK(is_ints(17, 5, (int32_t[]){ 1073741823, -536870912, 0, -2, 0 }));
    CHECK(is_ints(18, 5, (int32_t[]){ -2147483647, INT32_MIN, -5, 7, -7 }));
    CHECK(is_ints(19, 5, (int32_t[]){ INT32_MIN, 2147483647, -6, 6, -8 }));

    /* Bools: AND/OR logical on stored values, XOR bitwise, NOT logical. */
    bind(2, bools(4, (int32_t[]){ 0, 1, 0, 1 }));
    bind(3, bools(4, (int32_t[]){ 0, 0, 1, 1 }));
    LcuExpr *b[4] = {
        p2(LP_AND, VS_BOOL, at(2, VS_BOOL), at(3, VS_BOOL)),
        p2(LP_OR, VS_BOOL, at(2, VS_BOOL), at(3, VS_BOOL)),
        p2(LP_XOR, VS_BOOL, at(2, VS_BOOL), at(3, VS_BOOL)),
        p1(LP_NOT, VS_BOOL, at(2, VS_BOOL)),
    };
    for (int j = 0; j < 4; j++)
        decl(30 + j, LV_ARRAY, VS_BOOL);
    s = soac(LS_MAP, 4, (int[]){ 30, 31, 32, 33 }, LSH_LEN, 2);
    s->pull = lcu_thunk(lcu_tuple(4, b), 4);
    run(kernel1(s));
    CHECK(is_bools(30, 4, (int32_t[]){ 0, 0, 0, 1 }));
    CHECK(is_bools(31, 4, (int32_t[]){ 0, 1, 1, 1 }));
    CHECK(is_bools(32, 4, (int32_t[]){ 0, 1, 1, 0 }));
    CHECK(is_bools(33, 4, (int32_t[]){ 1, 0, 1, 0 }));
    clear_env();
}

static void test_map_float(void)
{
    bind(0, floats(7, (double[]){ 1.0, 0.0, 7.0, -1.0, 2.5, -2.5, 1e10 }));
    bind(1, floats(7, (double[]){ 0.0, 0.0, 2.0, 0.0, 1.0, 1.0, 1.0 }));
    decl(2, LV_ARRAY, VS_FLOAT);
    decl(3, LV_ARRAY, VS_INT);
    decl(4, LV_ARRAY, VS_INT);
    decl(5, LV_ARRAY, VS_BOOL);
    LcuExpr *items[4] = {
        p2(LP_DIV, VS_FLOAT, at(0, VS_FLOAT), at(1, VS_FLOAT)),
        p1(LP_ROUND, VS_FLOAT, at(0, VS_FLOAT)),
        p1(LP_FLOOR, VS_FLOAT, p2(LP_MUL, VS_FLOAT, at(0, VS_FLOAT), lcu_float(-1.5))),
        p2(LP_NE, VS_FLOAT, p2(LP_DIV, VS_FLOAT, at(0, VS_FLOAT), at(1, VS_FLOAT)),
           p2(LP_DIV, VS_FLOAT, at(0, VS_FLOAT), at(1, VS_FLOAT))),
    };
    LcuSoac *s = soac(LS_MAP, 4, (int[]){ 2, 3, 4, 5 }, LSH_LEN, 0);
    s->pull = lcu_thunk(lcu_tuple(4, items), 4);
    run(kernel1(s));
    const double *q = env[2] ? VF(env[2]) : NULL;
    CHECK(q && isinf(q[0]) && q[0] > 0 && isnan(q[1]) && q[2] == 3.5 && isinf(q[3]) && q[3] < 0 &&
          q[4] == 2.5 && q[5] == -2.5 && q[6] == 1e10);
    CHECK(is_ints(3, 7, (int32_t[]){ 1, 0, 7, 0, 3, -2, INT32_MIN }));  /* -1 + 0.5 truncates to 0 */
    /* floor(-1.5 x): -2, -0 -> 0, -11, 1, -4 (floor -3.75), 3 (floor 3.75), out of range */
    CHECK(is_ints(4, 7, (int32_t[]){ -2, 0, -11, 1, -4, 3, INT32_MIN }));
    CHECK(is_bools(5, 7, (int32_t[]){ 0, 1, 0, 0, 0, 0, 0 }));  /* NaN != NaN */

    /* Conversions at the edges (vcode/SPEC.md §4.1). */
    bind(6, floats(4, (double[]){ -2147483648.9, 2147483647.9, -0.5, 0.49999999999999994 }));
    decl(7, LV_ARRAY, VS_INT);
    decl(8, LV_ARRAY, VS_INT);
    s = soac(LS_MAP, 2, (int[]){ 7, 8 }, LSH_LEN, 6);
    s->pull = lcu_thunk(tup2(p1(LP_FLOOR, VS_FLOAT, at(6, VS_FLOAT)),
                             p1(LP_ROUND, VS_FLOAT, at(6, VS_FLOAT))), 2);
    run(kernel1(s));
    CHECK(is_ints(7, 4, (int32_t[]){ INT32_MIN, 2147483647, -1, 0 }));
    CHECK(is_ints(8, 4, (int32_t[]){ -2147483648, INT32_MIN, 0, 1 }));

    /* Int -> float and the math library. */
    bind(9, ints(3, (int32_t[]){ 4, -9, 0 }));
    decl(10, LV_ARRAY, VS_FLOAT);
    run(kernel1(soac1(LS_MAP, 10, LSH_LEN, 9, p1(LP_SQRT, VS_FLOAT, p1(LP_I_TO_F, VS_INT, at(9, VS_INT))))));
    CHECK(env[10] && VF(env[10])[0] == 2.0 && isnan(VF(env[10])[1]) && VF(env[10])[2] == 0.0);
    clear_env();
}

static const int32_t D8[8] = { 3, 1, 4, 1, 5, 9, 2, 6 };
static const int32_t L4[4] = { 3, 0, 5, 0 };

static void test_seg_reduce_scan(void)
{
    bind(0, ints(8, D8));
    bind(1, segs(4, L4));
    decl(2, LV_ARRAY, VS_FLOAT);
    decl(3, LV_ARRAY, VS_INT);
    decl(4, LV_ARRAY, VS_INT);
    decl(5, LV_ARRAY, VS_INT);
    LcuExpr *items[4] = { p1(LP_I_TO_F, VS_INT, at(0, VS_INT)), at(0, VS_INT), at(0, VS_INT),
                          at(0, VS_INT) };
    LcuSoac *s = soac(LS_SEG_REDUCE, 4, (int[]){ 2, 3, 4, 5 }, LSH_SEG_N, 1);
    s->pull = lcu_thunk(lcu_tuple(4, items), 4);
    s->rops[0] = VS_FADD;
    s->rops[1] = VS_IMAX;
    s->rops[2] = VS_IAND;
    s->rops[3] = VS_IADD;
    run(kernel1(s));
    CHECK(is_floats(2, 4, (double[]){ 8.0, 0.0, 23.0, 0.0 }));
    CHECK(is_ints(3, 4, (int32_t[]){ 4, INT32_MIN, 9, INT32_MIN }));
    CHECK(is_ints(4, 4, (int32_t[]){ 0, -1, 0, -1 }));
    CHECK(is_ints(5, 4, (int32_t[]){ 8, 0, 23, 0 }));

    decl(6, LV_ARRAY, VS_INT);
    decl(7, LV_ARRAY, VS_INT);
    decl(8, LV_ARRAY, VS_FLOAT);
    LcuExpr *sc[3] = { at(0, VS_INT), at(0, VS_INT), p1(LP_I_TO_F, VS_INT, at(0, VS_INT)) };
    s = soac(LS_SEG_SCAN, 3, (int[]){ 6, 7, 8 }, LSH_SEG_N, 1);
    s->pull = lcu_thunk(lcu_tuple(3, sc), 3);
    s->rops[0] = VS_IADD;
    s->rops[1] = VS_IMAX;
    s->rops[2] = VS_FMIN;
    run(kernel1(s));
    CHECK(is_ints(6, 8, (int32_t[]){ 0, 3, 4, 0, 1, 6, 15, 17 }));
    CHECK(is_ints(7, 8, (int32_t[]){ INT32_MIN, 3, 3, INT32_MIN, 1, 5, 9, 9 }));
    const double big = (double)1.0e36f;
    CHECK(is_floats(8, 8, (double[]){ big, 3, 1, big, 1, 1, 1, 1 }));

    /* Float MAX over values below the identity gives the identity. */
    bind(9, floats(2, (double[]){ -1e37, -2e37 }));
    bind(10, segs(1, (int32_t[]){ 2 }));
    decl(11, LV_ARRAY, VS_FLOAT);
    s = soac1(LS_SEG_REDUCE, 11, LSH_SEG_N, 10, at(9, VS_FLOAT));
    s->rops[0] = VS_FMAX;
    run(kernel1(s));
    CHECK(is_floats(11, 1, (double[]){ -big }));

    /* Unsegmented SCAN and REDUCE; bool rops. */
    bind(12, bools(4, (int32_t[]){ 1, 1, 0, 1 }));
    decl(13, LV_ARRAY, VS_INT);
    decl(14, LV_ARRAY, VS_BOOL);
    decl(15, LV_ARRAY, VS_BOOL);
    s = soac1(LS_SCAN, 13, LSH_LEN, 0, at(0, VS_INT));
    s->rops[0] = VS_IADD;
    LcuKernel *k = kernel1(s);
    s = soac(LS_REDUCE, 2, (int[]){ 14, 15 }, LSH_LEN, 12);
    s->pull = lcu_thunk(tup2(at(12, VS_BOOL), at(12, VS_BOOL)), 2);
    s->rops[0] = VS_BAND;
    s->rops[1] = VS_BXOR;
    lcu_kernel_add(k, s);
    run(k);
    CHECK(is_ints(13, 8, (int32_t[]){ 0, 3, 4, 8, 9, 14, 23, 25 }));
    CHECK(is_bools(14, 1, (int32_t[]){ 0 }));
    CHECK(is_bools(15, 1, (int32_t[]){ 1 }));
    clear_env();
}

/* norm2 (λcu paper §5): KF1 = the two sums in one REDUCE, the filter folded
 * into the second as `if x > 0 then x else 0`; KF2 = both quotients. */
static void test_norm2(void)
{
    static const double xs[] = { 1.5, -2.0, 3.25, 0.0, -0.5, 4.0, 1e-3, 0.1, 0.2 };
    const int n = (int)(sizeof xs / sizeof xs[0]);
    bind(0, floats(n, xs));
    decl(1, LV_ARRAY, VS_FLOAT);        /* sum1 */
    decl(2, LV_ARRAY, VS_FLOAT);        /* sum2 */
    decl(3, LV_ARRAY, VS_FLOAT);        /* res1 */
    decl(4, LV_ARRAY, VS_FLOAT);        /* res2 */
    LcuSoac *s = soac(LS_REDUCE, 2, (int[]){ 1, 2 }, LSH_LEN, 0);
    s->pull = lcu_thunk(lcu_let(0, at(0, VS_FLOAT),
                                tup2(lcu_local(0, VS_FLOAT),
                                     lcu_if(p2(LP_GT, VS_FLOAT, lcu_local(0, VS_FLOAT), lcu_float(0.0)),
                                            lcu_local(0, VS_FLOAT), lcu_float(0.0)))),
                        2);
    s->rops[0] = VS_FADD;
    s->rops[1] = VS_FADD;
    run(kernel1(s));
    double sum1 = 0.0, sum2 = 0.0;
    for (int i = 0; i < n; i++) {
        sum1 += xs[i];
        if (xs[i] > 0)
            sum2 += xs[i];
    }
    CHECK(is_floats(1, 1, &sum1));
    CHECK(is_floats(2, 1, &sum2));

    s = soac(LS_MAP, 2, (int[]){ 3, 4 }, LSH_LEN, 0);
    s->pull = lcu_thunk(tup2(p2(LP_DIV, VS_FLOAT, at(0, VS_FLOAT), at0(1, VS_FLOAT)),
                             p2(LP_DIV, VS_FLOAT, at(0, VS_FLOAT), at0(2, VS_FLOAT))),
                        2);
    run(kernel1(s));
    double r1[16], r2[16];
    for (int i = 0; i < n; i++) {
        r1[i] = xs[i] / sum1;
        r2[i] = xs[i] / sum2;
    }
    CHECK(is_floats(3, n, r1));
    CHECK(is_floats(4, n, r2));

    /* Unfused KF1 (FILTER, then a REDUCE over its output) agrees bit for bit;
     * gts is internal. */
    decl(5, LV_ARRAY, VS_FLOAT);        /* gts */
    decl(6, LV_ARRAY, VS_FLOAT);
    LcuKernel *k = lcu_kernel_new(2);
    s = soac1(LS_FILTER, 5, LSH_LEN, 0, at(0, VS_FLOAT));
    s->pred = lcu_thunk(p2(LP_GT, VS_FLOAT, at(0, VS_FLOAT), lcu_float(0.0)), 1);
    lcu_kernel_add(k, s);
    s = soac1(LS_REDUCE, 6, LSH_LEN, 5, at(5, VS_FLOAT));
    s->rops[0] = VS_FADD;
    lcu_kernel_add(k, s);
    unsigned char need[NV] = { 0 };
    need[6] = 1;
    run_need(k, need);
    CHECK(env[5] == NULL);
    CHECK(env[6] && env[2] && same_value(env[6], env[2]));
    clear_env();
}

static void test_filter_partition_once(void)
{
    bind(0, ints(8, D8));
    bind(1, floats(8, (double[]){ 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5 }));
    decl(2, LV_ARRAY, VS_INT);
    decl(3, LV_ARRAY, VS_FLOAT);
    LcuSoac *s = soac(LS_FILTER, 2, (int[]){ 2, 3 }, LSH_LEN, 0);
    s->pull = lcu_thunk(tup2(at(0, VS_INT), at(1, VS_FLOAT)), 2);
    s->pred = lcu_thunk(p2(LP_GT, VS_INT, at(0, VS_INT), lcu_int(2)), 1);
    run(kernel1(s));
    CHECK(is_ints(2, 5, (int32_t[]){ 3, 4, 5, 9, 6 }));
    CHECK(is_floats(3, 5, (double[]){ 0.5, 2.5, 4.5, 5.5, 7.5 }));

    /* The pull of a dropped element is not evaluated: 12 / x[i] with the
     * zeros filtered out. */
    bind(4, ints(4, (int32_t[]){ 3, 0, 4, 0 }));
    decl(5, LV_ARRAY, VS_INT);
    s = soac1(LS_FILTER, 5, LSH_LEN, 4, p2(LP_DIV, VS_INT, lcu_int(12), at(4, VS_INT)));
    s->pred = lcu_thunk(p2(LP_NE, VS_INT, at(4, VS_INT), lcu_int(0)), 1);
    run(kernel1(s));
    CHECK(is_ints(5, 2, (int32_t[]){ 4, 3 }));

    decl(6, LV_ARRAY, VS_INT);
    decl(7, LV_ARRAY, VS_INT);
    s = soac(LS_PARTITION, 2, (int[]){ 6, 7 }, LSH_LEN, 0);
    s->pull = lcu_thunk(at(0, VS_INT), 1);
    s->pred = lcu_thunk(p2(LP_GT, VS_INT, at(0, VS_INT), lcu_int(2)), 1);
    run(kernel1(s));
    CHECK(is_ints(6, 5, (int32_t[]){ 3, 4, 5, 9, 6 }));
    CHECK(is_ints(7, 3, (int32_t[]){ 1, 1, 2 }));

    /* Filter everything away. */
    decl(8, LV_ARRAY, VS_INT);
    s = soac1(LS_FILTER, 8, LSH_LEN, 0, at(0, VS_INT));
    s->pred = lcu_thunk(lcu_bool(0), 1);
    run(kernel1(s));
    CHECK(is_ints(8, 0, NULL));

    decl(9, LV_ARRAY, VS_INT);
    run(kernel1(soac1(LS_ONCE, 9, LSH_ONE, -1,
                      p2(LP_ADD, VS_INT, lcu_sub(0, VS_INT, lcu_int(2)), lcu_len(0)))));
    CHECK(is_ints(9, 1, (int32_t[]){ 12 }));
    clear_env();
}

/* The permutes of vcode/SPEC.md §4.4: source [3 2], data (10 20 30 40 50). */
static void test_seg_permute(void)
{
    bind(0, ints(5, (int32_t[]){ 10, 20, 30, 40, 50 }));
    bind(1, segs(2, (int32_t[]){ 3, 2 }));
    bind(2, segs(2, (int32_t[]){ 4, 2 }));
    bind(3, ints(6, (int32_t[]){ -1, -2, -3, -4, -5, -6 }));
    bind(4, ints(5, (int32_t[]){ 2, 0, 1, 1, 0 }));     /* PERMUTE index */
    bind(5, ints(5, (int32_t[]){ 3, 0, 1, 0, 0 }));     /* DPERMUTE index */
    bind(6, ints(5, (int32_t[]){ 3, 0, 1, 0, 1 }));     /* DFPERMUTE index */
    bind(7, bools(5, (int32_t[]){ 1, 0, 1, 1, 0 }));
    bind(8, floats(5, (double[]){ 1.5, 2.5, 3.5, 4.5, 5.5 }));
    for (int v = 10; v < 16; v++)
        decl(v, LV_ARRAY, VS_INT);
    decl(16, LV_ARRAY, VS_FLOAT);

    /* PERMUTE: same descriptor both sides, zero fill (never seen). */
    LcuSoac *s = soac1(LS_SEG_PERMUTE, 10, LSH_SEG_N, 1, at(0, VS_INT));
    s->idx = lcu_thunk(at(4, VS_INT), 1);
    s->dst_sd = 1;
    LcuKernel *k = kernel1(s);
    /* DPERMUTE: default copied, 50 wins position 4. */
    s = soac1(LS_SEG_PERMUTE, 11, LSH_SEG_N, 1, at(0, VS_INT));
    s->idx = lcu_thunk(at(5, VS_INT), 1);
    s->dst_sd = 2;
    s->dflt[0] = 3;
    lcu_kernel_add(k, s);
    /* DFPERMUTE: flags as the optional flag thunk. */
    s = soac1(LS_SEG_PERMUTE, 12, LSH_SEG_N, 1, at(0, VS_INT));
    s->idx = lcu_thunk(at(6, VS_INT), 1);
    s->pred = lcu_thunk(at(7, VS_BOOL), 1);
    s->dst_sd = 2;
    s->dflt[0] = 3;
    lcu_kernel_add(k, s);
    /* FPERMUTE: flags, zero fill. */
    s = soac1(LS_SEG_PERMUTE, 13, LSH_SEG_N, 1, at(0, VS_INT));
    s->idx = lcu_thunk(at(6, VS_INT), 1);
    s->pred = lcu_thunk(at(7, VS_BOOL), 1);
    s->dst_sd = 2;
    lcu_kernel_add(k, s);
    /* Two results at once, one float. */
    s = soac(LS_SEG_PERMUTE, 2, (int[]){ 14, 16 }, LSH_SEG_N, 1);
    s->pull = lcu_thunk(tup2(at(0, VS_INT), at(8, VS_FLOAT)), 2);
    s->idx = lcu_thunk(at(4, VS_INT), 1);
    s->dst_sd = 1;
    lcu_kernel_add(k, s);
    /* Unsegmented PERMUTE. */
    bind(9, ints(5, (int32_t[]){ 4, 3, 2, 1, 0 }));
    s = soac1(LS_PERMUTE, 15, LSH_LEN, 0, at(0, VS_INT));
    s->idx = lcu_thunk(at(9, VS_INT), 1);
    lcu_kernel_add(k, s);
    run(k);
    CHECK(is_ints(10, 5, (int32_t[]){ 20, 30, 10, 50, 40 }));
    CHECK(is_ints(11, 6, (int32_t[]){ 20, 30, -3, 10, 50, -6 }));
    CHECK(is_ints(12, 6, (int32_t[]){ -1, 30, -3, 10, 40, -6 }));
    CHECK(is_ints(13, 6, (int32_t[]){ 0, 30, 0, 10, 40, 0 }));
    CHECK(is_ints(14, 5, (int32_t[]){ 20, 30, 10, 50, 40 }));
    CHECK(is_floats(16, 5, (double[]){ 2.5, 3.5, 1.5, 5.5, 4.5 }));
    CHECK(is_ints(15, 5, (int32_t[]){ 50, 40, 30, 20, 10 }));
    clear_env();
}

static void test_seg_filter(void)
{
    /* PACK (vcode/SPEC.md §4.8): (1 2 3 4 5), (T F F T T), [3 2] -> (1 4 5), [1 2]. */
    bind(0, ints(5, (int32_t[]){ 1, 2, 3, 4, 5 }));
    bind(1, bools(5, (int32_t[]){ 1, 0, 0, 1, 1 }));
    bind(2, segs(2, (int32_t[]){ 3, 2 }));
    bind(3, floats(5, (double[]){ 0.1, 0.2, 0.3, 0.4, 0.5 }));
    decl(4, LV_ARRAY, VS_INT);
    decl(5, LV_ARRAY, VS_FLOAT);
    decl(6, LV_SEGDES, VS_INT);
    LcuSoac *s = soac(LS_SEG_FILTER, 3, (int[]){ 4, 5, 6 }, LSH_SEG_N, 2);
    s->pull = lcu_thunk(tup2(at(0, VS_INT), at(3, VS_FLOAT)), 2);
    s->pred = lcu_thunk(at(1, VS_BOOL), 1);
    run(kernel1(s));
    CHECK(is_ints(4, 3, (int32_t[]){ 1, 4, 5 }));
    CHECK(is_floats(5, 3, (double[]){ 0.1, 0.4, 0.5 }));
    CHECK(is_segs(6, 2, (int32_t[]){ 1, 2 }));

    /* Empty segments stay, with count 0; the new descriptor feeds a later
     * SOAC of the same kernel. */
    bind(7, segs(4, L4));
    bind(8, ints(8, D8));
    decl(9, LV_ARRAY, VS_INT);
    decl(10, LV_SEGDES, VS_INT);
    decl(11, LV_ARRAY, VS_INT);
    LcuKernel *k = lcu_kernel_new(3);
    s = soac(LS_SEG_FILTER, 2, (int[]){ 9, 10 }, LSH_SEG_N, 7);
    s->pull = lcu_thunk(at(8, VS_INT), 1);
    s->pred = lcu_thunk(p2(LP_EQ, VS_INT, p2(LP_MOD, VS_INT, at(8, VS_INT), lcu_int(2)), lcu_int(1)), 1);
    lcu_kernel_add(k, s);
    s = soac1(LS_SEG_REDUCE, 11, LSH_SEG_N, 10, at(9, VS_INT));
    s->rops[0] = VS_IADD;
    lcu_kernel_add(k, s);
    run(k);
    CHECK(is_ints(9, 5, (int32_t[]){ 3, 1, 1, 5, 9 }));
    CHECK(is_segs(10, 4, (int32_t[]){ 2, 0, 3, 0 }));
    CHECK(is_ints(11, 4, (int32_t[]){ 4, 0, 15, 0 }));
    clear_env();
}

/* DIST, INDEX and EXTRACT as MAPs with the segment helpers. */
static void test_segment_helpers(void)
{
    /* DIST (2 4) over [3 2] -> (2 2 2 4 4). */
    bind(0, ints(2, (int32_t[]){ 2, 4 }));
    bind(1, segs(2, (int32_t[]){ 3, 2 }));
    decl(2, LV_ARRAY, VS_INT);
    run(kernel1(soac1(LS_MAP, 2, LSH_SEG_N, 1, lcu_sub(0, VS_INT, lcu_seg(LE_SEG_OF, 1, lcu_index())))));
    CHECK(is_ints(2, 5, (int32_t[]){ 2, 2, 2, 4, 4 }));

    /* INDEX init (0 10 -5), stride (1 2 -1), [3 0 2] -> (0 1 2 -5 -6). */
    bind(3, ints(3, (int32_t[]){ 0, 10, -5 }));
    bind(4, ints(3, (int32_t[]){ 1, 2, -1 }));
    bind(5, segs(3, (int32_t[]){ 3, 0, 2 }));
    decl(6, LV_ARRAY, VS_INT);
    LcuExpr *s0 = lcu_local(0, VS_INT);
    LcuExpr *body = lcu_let(
        0, lcu_seg(LE_SEG_OF, 5, lcu_index()),
        p2(LP_ADD, VS_INT, lcu_sub(3, VS_INT, lcu_local(0, VS_INT)),
           p2(LP_MUL, VS_INT,
              p2(LP_SUB, VS_INT, lcu_index(), lcu_seg(LE_SEG_START, 5, lcu_local(0, VS_INT))),
              lcu_sub(4, VS_INT, s0))));
    run(kernel1(soac1(LS_MAP, 6, LSH_SEG_N, 5, body)));
    CHECK(is_ints(6, 5, (int32_t[]){ 0, 1, 2, -5, -6 }));

    /* EXTRACT: one element per segment, a MAP over the segments. Also the
     * segment lengths and count. */
    bind(7, ints(8, D8));
    bind(8, segs(2, (int32_t[]){ 3, 5 }));
    bind(9, ints(2, (int32_t[]){ 2, 4 }));
    decl(10, LV_ARRAY, VS_INT);
    decl(11, LV_ARRAY, VS_INT);
    decl(12, LV_ARRAY, VS_INT);
    LcuSoac *s = soac(LS_MAP, 3, (int[]){ 10, 11, 12 }, LSH_SEG_M, 8);
    LcuExpr *items[3] = {
        lcu_sub(7, VS_INT, p2(LP_ADD, VS_INT, lcu_seg(LE_SEG_START, 8, lcu_index()),
                              p2(LP_CHECKIDX, VS_INT, at(9, VS_INT), lcu_seg(LE_SEG_LEN, 8, lcu_index())))),
        lcu_seg(LE_SEG_LEN, 8, lcu_index()),
        p2(LP_ADD, VS_INT, lcu_seg(LE_SEG_COUNT, 8, NULL), lcu_len(8)),
    };
    s->pull = lcu_thunk(lcu_tuple(3, items), 3);
    run(kernel1(s));
    CHECK(is_ints(10, 2, (int32_t[]){ 4, 6 }));
    CHECK(is_ints(11, 2, (int32_t[]){ 3, 5 }));
    CHECK(is_ints(12, 2, (int32_t[]){ 10, 10 }));

    /* seg_of over empty segments, at both ends and in the middle, read in
     * decreasing order (no help from the hint). */
    int32_t lens[7] = { 0, 2, 0, 0, 3, 1, 0 };
    bind(13, segs(7, lens));
    decl(14, LV_ARRAY, VS_INT);
    run(kernel1(soac1(LS_MAP, 14, LSH_SEG_N, 13,
                      lcu_seg(LE_SEG_OF, 13, p2(LP_SUB, VS_INT, lcu_int(5), lcu_index())))));
    CHECK(is_ints(14, 6, (int32_t[]){ 5, 4, 4, 4, 1, 1 }));
    clear_env();
}

static void test_rank(void)
{
    bind(0, ints(8, (int32_t[]){ 5, -3, 5, 0, INT32_MIN, 2147483647, -3, 1 }));
    bind(1, segs(1, (int32_t[]){ 8 }));
    bind(2, floats(10, (double[]){ 0.1, 0.2, 0.3, 1.0, 2.0, -1.0, -0.5, 0.0, -0.0, 3.5 }));
    bind(3, segs(1, (int32_t[]){ 10 }));
    bind(4, segs(3, (int32_t[]){ 3, 0, 5 }));
    decl(5, LV_ARRAY, VS_INT);
    decl(6, LV_ARRAY, VS_INT);
    decl(7, LV_ARRAY, VS_INT);
    decl(8, LV_ARRAY, VS_INT);
    LcuKernel *k = lcu_kernel_new(4);
    const struct { int res, lib, data, sd; } c[4] = {
        { 5, LL_RANK_UP, 0, 1 }, { 6, LL_RANK_DOWN, 0, 1 }, { 7, LL_RANK_UP, 2, 3 }, { 8, LL_RANK_UP, 0, 4 },
    };
    for (int j = 0; j < 4; j++) {
        LcuSoac *s = soac(LS_LIB, 1, &c[j].res, LSH_ONE, -1);
        s->lib = (LcuLib)c[j].lib;
        s->nargs = 2;
        s->args[0] = c[j].data;
        s->args[1] = c[j].sd;
        lcu_kernel_add(k, s);
    }
    run(k);
    CHECK(is_ints(5, 8, (int32_t[]){ 5, 1, 6, 3, 0, 7, 2, 4 }));
    CHECK(is_ints(6, 8, (int32_t[]){ 1, 5, 2, 4, 7, 0, 6, 3 }));
    CHECK(is_ints(7, 10, (int32_t[]){ 4, 5, 6, 7, 8, 0, 1, 3, 2, 9 }));
    CHECK(is_ints(8, 8, (int32_t[]){ 1, 0, 2, 2, 0, 4, 1, 3 }));
    clear_env();
}

/* Results replace what the env held; internal values are released; the
 * vector memory balances. */
static void test_env(void)
{
    int64_t base = mem_used();
    bind(0, ints(3, (int32_t[]){ 1, 2, 3 }));
    bind(1, ints(1, (int32_t[]){ 99 }));                /* to be replaced */
    decl(2, LV_ARRAY, VS_INT);
    LcuKernel *k = lcu_kernel_new(5);
    lcu_kernel_add(k, soac1(LS_MAP, 2, LSH_LEN, 0, p2(LP_MUL, VS_INT, at(0, VS_INT), lcu_int(10))));
    LcuSoac *s = soac1(LS_REDUCE, 1, LSH_LEN, 2, at(2, VS_INT));
    s->rops[0] = VS_IADD;
    lcu_kernel_add(k, s);
    unsigned char need[NV] = { 0 };
    need[1] = 1;
    run_need(k, need);
    CHECK(is_ints(1, 1, (int32_t[]){ 60 }));
    CHECK(env[2] == NULL);
    clear_env();
    CHECK(mem_used() == base);
}

static void test_errors(void)
{
    bind(0, ints(5, (int32_t[]){ 1, 2, 3, 4, 5 }));
    bind(1, ints(5, (int32_t[]){ 1, 0, 1, 1, 1 }));
    bind(2, segs(2, (int32_t[]){ 3, 2 }));
    bind(3, segs(1, (int32_t[]){ 5 }));
    decl(4, LV_ARRAY, VS_INT);
    decl(6, LV_ARRAY, VS_INT);
    decl(7, LV_SEGDES, VS_INT);

    CHECK(fails_with(kernel1(soac1(LS_MAP, 4, LSH_LEN, 0,
                                   lcu_sub(0, VS_INT, p2(LP_ADD, VS_INT, lcu_index(), lcu_int(1))))),
                     "index 5 outside an array of length 5"));
    CHECK(fails_with(kernel1(soac1(LS_MAP, 4, LSH_LEN, 0, p2(LP_DIV, VS_INT, at(0, VS_INT), at(1, VS_INT)))),
                     "integer division by zero (element 1)"));
    CHECK(fails_with(kernel1(soac1(LS_MAP, 4, LSH_LEN, 0, p2(LP_MOD, VS_INT, at(0, VS_INT), at(1, VS_INT)))),
                     "integer remainder by zero"));
    CHECK(fails_with(kernel1(soac1(LS_MAP, 4, LSH_LEN, 0,
                                   p2(LP_DIV, VS_INT, lcu_int(INT32_MIN), lcu_int(-1)))),
                     "-2147483648 / -1"));
    CHECK(fails_with(kernel1(soac1(LS_MAP, 4, LSH_LEN, 0,
                                   p2(LP_RANDMOD, VS_INT, at(0, VS_INT), p2(LP_SUB, VS_INT, at(1, VS_INT), lcu_int(1))))),
                     "range 0 at element 0"));
    /* A segment index outside the descriptor. */
    CHECK(fails_with(kernel1(soac1(LS_MAP, 4, LSH_LEN, 0, lcu_seg(LE_SEG_START, 2, lcu_index()))),
                     "seg_start: segment 2 outside descriptor x2 of 2 segments"));
    CHECK(fails_with(kernel1(soac1(LS_MAP, 4, LSH_LEN, 0,
                                   lcu_seg(LE_SEG_OF, 2, p2(LP_ADD, VS_INT, lcu_index(), lcu_int(3))))),
                     "seg_of: element 5 outside descriptor x2"));
    CHECK(fails_with(kernel1(soac1(LS_MAP, 4, LSH_SEG_M, 2,
                                   p2(LP_CHECKIDX, VS_INT, lcu_int(2), lcu_seg(LE_SEG_LEN, 2, lcu_index())))),
                     "index 2 is outside its segment of length 2"));
    /* SEG_PERMUTE: index outside its destination segment; no partner. */
    LcuSoac *s = soac1(LS_SEG_PERMUTE, 4, LSH_SEG_N, 2, at(0, VS_INT));
    s->idx = lcu_thunk(at(0, VS_INT), 1);
    s->dst_sd = 2;
    CHECK(fails_with(kernel1(s), "index 3 at position 2 is outside its segment of length 3"));
    s = soac1(LS_SEG_PERMUTE, 4, LSH_SEG_N, 2, at(0, VS_INT));
    s->idx = lcu_thunk(lcu_int(0), 1);
    s->dst_sd = 3;
    CHECK(fails_with(kernel1(s), "segment 1 of the destination descriptor has no matching segment"));
    s = soac1(LS_SEG_PERMUTE, 4, LSH_SEG_N, 2, at(0, VS_INT));
    s->idx = lcu_thunk(lcu_int(0), 1);
    s->dst_sd = 2;
    s->dflt[0] = 1;
    bind(1, ints(4, (int32_t[]){ 0, 0, 0, 0 }));
    CHECK(fails_with(kernel1(s), "destination descriptor covers 5 elements, default has 4"));
    s = soac1(LS_PERMUTE, 4, LSH_LEN, 0, at(0, VS_INT));
    s->idx = lcu_thunk(at(0, VS_INT), 1);
    CHECK(fails_with(kernel1(s), "index 5 at position 4 is outside its segment of length 5"));
    /* A value whose type is not the one the plan assumed. */
    bind(5, floats(5, (double[]){ 1, 2, 3, 4, 5 }));
    decl(5, LV_ARRAY, VS_INT);
    CHECK(fails_with(kernel1(soac1(LS_MAP, 4, LSH_LEN, 0, at(5, VS_INT))),
                     "x5 holds a Float vector, the kernel reads it as int"));
    /* A parameter that is not bound. */
    CHECK(fails_with(kernel1(soac1(LS_MAP, 4, LSH_LEN, 0, at(40, VS_INT))), "parameter x40 is not bound"));

    /* A failure after earlier SOACs and part of a SEG_FILTER: what the
     * abandoned evaluation held is released by the next evaluation. */
    int64_t before = mem_used();
    LcuKernel *k = lcu_kernel_new(9);
    lcu_kernel_add(k, soac1(LS_MAP, 4, LSH_LEN, 0, at(0, VS_INT)));
    s = soac(LS_SEG_FILTER, 2, (int[]){ 6, 7 }, LSH_SEG_N, 2);
    s->pull = lcu_thunk(p2(LP_DIV, VS_INT, lcu_int(1), p2(LP_SUB, VS_INT, at(4, VS_INT), lcu_int(4))), 1);
    s->pred = lcu_thunk(lcu_bool(1), 1);
    lcu_kernel_add(k, s);
    CHECK(fails_with(k, "integer division by zero (element 3)"));
    CHECK(env[4] != NULL);      /* bound before the failure */
    decl(8, LV_ARRAY, VS_INT);
    run(kernel1(soac1(LS_ONCE, 8, LSH_ONE, -1, lcu_int(1))));
    clear_env();
    CHECK(mem_used() <= before);
    CHECK(mem_used() == 0);
}

/* Descriptors with negative lengths that still fit their data: the
 * reference's segment walk (offsets moving back) is reproduced. */
static void test_insane(void)
{
    bind(0, ints(4, (int32_t[]){ 1, 2, 3, 4 }));
    bind(1, segs(3, (int32_t[]){ 3, -1, 2 }));
    bind(2, ints(3, (int32_t[]){ 7, 8, 9 }));
    decl(3, LV_ARRAY, VS_INT);
    decl(4, LV_ARRAY, VS_INT);
    LcuKernel *k = lcu_kernel_new(10);
    LcuSoac *s = soac1(LS_SEG_SCAN, 3, LSH_SEG_N, 1, at(0, VS_INT));
    s->rops[0] = VS_IADD;
    lcu_kernel_add(k, s);
    lcu_kernel_add(k, soac1(LS_MAP, 4, LSH_SEG_N, 1, lcu_sub(2, VS_INT, lcu_seg(LE_SEG_OF, 1, lcu_index()))));
    run(k);
    Value *a[2] = { env[0], env[1] };
    Value *r = ref_op(op_scan, OP_PLUS_SCAN, TY_INT, 2, a);
    CHECK(same_value(env[3], r));
    val_release(r);
    Value *b[2] = { env[2], env[1] };
    r = ref_op(op_dist, OP_DIST, TY_INT, 2, b);
    CHECK(same_value(env[4], r));
    CHECK(is_ints(4, 4, (int32_t[]){ 7, 7, 9, 9 }));
    val_release(r);
    clear_env();
}

/* ---- random inputs against the reference ops ------------------------------------ */

static uint64_t rng = 88172645463325252ull;

static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static int32_t rnd_int(void)
{
    static const int32_t edge[] = { 0, 1, -1, 2, -2, INT32_MIN, INT32_MAX, 31, 32, 33 };
    uint32_t c = rnd() % 8;
    if (c == 0)
        return edge[rnd() % 10];
    if (c < 4)
        return (int32_t)(rnd() % 21) - 10;
    return (int32_t)rnd();
}

static double rnd_float(void)
{
    static const double edge[] = { 0.0, -0.0, 1.0, -1.0, 0.5, -2e36, 2e36, 1e300, -1e-300, 3e9 };
    uint32_t c = rnd() % 10;
    if (c == 0)
        return edge[rnd() % 10];
    if (c == 1)
        return NAN;
    return ((double)(int32_t)rnd() / 1024.0) * ((rnd() & 1) ? 1.0 : 1e-3);
}

/* A descriptor of M segments with about N elements (some empty segments). */
/* M segments of length L each (a uniform descriptor: the reference's
 * straight-line loops for short lengths). */
static Value *uniform_segs(int m, int l)
{
    Value *sd = seg_new(m);
    for (int k = 0; k < m; k++)
        VI(sd)[k] = l;
    seg_finish(sd);
    return sd;
}

/* M segments over N elements: uniform when N is a multiple of M and a
 * coin says so, else random lengths (a quarter of them empty). */
static Value *rnd_segs(int m, int n)
{
    if (m > 0 && n % m == 0 && rnd() % 2 == 0)
        return uniform_segs(m, n / m);
    Value *sd = seg_new(m);
    int left = n;
    for (int k = 0; k < m; k++) {
        int l = (k == m - 1) ? left : (rnd() % 4 == 0 ? 0 : (int)(rnd() % (uint32_t)(2 * n / m + 1)));
        if (l > left)
            l = left;
        VI(sd)[k] = l;
        left -= l;
    }
    seg_finish(sd);
    return sd;
}

static Value *rnd_ints(int64_t n)
{
    Value *v = val_new(VT_INT, n);
    for (int64_t i = 0; i < n; i++)
        VI(v)[i] = rnd_int();
    return v;
}

static Value *rnd_floats(int64_t n)
{
    Value *v = val_new(VT_FLOAT, n);
    for (int64_t i = 0; i < n; i++)
        VF(v)[i] = rnd_float();
    return v;
}

static Value *rnd_bools(int64_t n)
{
    Value *v = val_new(VT_BOOL, n);
    for (int64_t i = 0; i < n; i++)
        VI(v)[i] = (rnd() & 3) != 0;
    return v;
}

static void test_diff_scans(void)
{
    static const struct { Opcode scan, reduce; VcType ty; VsRop rop; } cases[] = {
        { OP_PLUS_SCAN, OP_PLUS_REDUCE, TY_INT, VS_IADD },   { OP_MUL_SCAN, OP_MUL_REDUCE, TY_INT, VS_IMUL },
        { OP_MAX_SCAN, OP_MAX_REDUCE, TY_INT, VS_IMAX },     { OP_MIN_SCAN, OP_MIN_REDUCE, TY_INT, VS_IMIN },
        { OP_AND_SCAN, OP_AND_REDUCE, TY_INT, VS_IAND },     { OP_OR_SCAN, OP_OR_REDUCE, TY_INT, VS_IOR },
        { OP_XOR_SCAN, OP_XOR_REDUCE, TY_INT, VS_IXOR },     { OP_PLUS_SCAN, OP_PLUS_REDUCE, TY_FLOAT, VS_FADD },
        { OP_MUL_SCAN, OP_MUL_REDUCE, TY_FLOAT, VS_FMUL },   { OP_MAX_SCAN, OP_MAX_REDUCE, TY_FLOAT, VS_FMAX },
        { OP_MIN_SCAN, OP_MIN_REDUCE, TY_FLOAT, VS_FMIN },   { OP_AND_SCAN, OP_AND_REDUCE, TY_BOOL, VS_BAND },
        { OP_OR_SCAN, OP_OR_REDUCE, TY_BOOL, VS_BOR },       { OP_XOR_SCAN, OP_XOR_REDUCE, TY_BOOL, VS_BXOR },
    };
    int bad = 0;
    for (int round = 0; round < 40; round++) {
        int m = 1 + (int)(rnd() % 12), n = (int)(rnd() % 200);
        if (round % 2 == 0)
            n = m * (int)(rnd() % 12); /* often uniform: lengths 0 to 11 */
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            VsElem b = cases[c].ty == TY_INT ? VS_INT : cases[c].ty == TY_FLOAT ? VS_FLOAT : VS_BOOL;
            bind(0, cases[c].ty == TY_INT ? rnd_ints(n) : cases[c].ty == TY_FLOAT ? rnd_floats(n) : rnd_bools(n));
            bind(1, rnd_segs(m, n));
            decl(2, LV_ARRAY, b);
            decl(3, LV_ARRAY, b);
            decl(4, LV_ARRAY, b);
            decl(5, LV_ARRAY, b);
            LcuKernel *k = lcu_kernel_new(20);
            LcuSoac *s = soac1(LS_SEG_SCAN, 2, LSH_SEG_N, 1, at(0, b));
            s->rops[0] = cases[c].rop;
            lcu_kernel_add(k, s);
            s = soac1(LS_SEG_REDUCE, 3, LSH_SEG_N, 1, at(0, b));
            s->rops[0] = cases[c].rop;
            lcu_kernel_add(k, s);
            s = soac1(LS_SCAN, 4, LSH_LEN, 0, at(0, b));
            s->rops[0] = cases[c].rop;
            lcu_kernel_add(k, s);
            s = soac1(LS_REDUCE, 5, LSH_LEN, 0, at(0, b));
            s->rops[0] = cases[c].rop;
            lcu_kernel_add(k, s);
            run(k);
            Value *a[2] = { env[0], env[1] };
            Value *r1 = ref_op(op_scan, cases[c].scan, cases[c].ty, 2, a);
            Value *r2 = ref_op(op_reduce, cases[c].reduce, cases[c].ty, 2, a);
            bad += !same_value(env[2], r1) + !same_value(env[3], r2);
            val_release(r1);
            val_release(r2);
            Value *one = segs(1, (int32_t[]){ n });
            a[1] = one;
            r1 = ref_op(op_scan, cases[c].scan, cases[c].ty, 2, a);
            r2 = ref_op(op_reduce, cases[c].reduce, cases[c].ty, 2, a);
            bad += !same_value(env[4], r1) + !same_value(env[5], r2);
            val_release(r1);
            val_release(r2);
            val_release(one);
            clear_env();
        }
    }
    CHECK(bad == 0);
}

static void test_diff_elementwise(void)
{
    static const struct { Opcode op; LcuPrim p; int ints, floats, bools; } bin[] = {
        { OP_ADD, LP_ADD, 1, 1, 0 },       { OP_SUB, LP_SUB, 1, 1, 0 },       { OP_MUL, LP_MUL, 1, 1, 0 },
        { OP_DIV, LP_DIV, 1, 1, 0 },       { OP_MOD, LP_MOD, 1, 0, 0 },       { OP_LT, LP_LT, 1, 1, 0 },
        { OP_LE, LP_LE, 1, 1, 0 },         { OP_GT, LP_GT, 1, 1, 0 },         { OP_GE, LP_GE, 1, 1, 0 },
        { OP_EQ, LP_EQ, 1, 1, 0 },         { OP_NE, LP_NE, 1, 1, 0 },         { OP_LSHIFT, LP_LSHIFT, 1, 0, 0 },
        { OP_RSHIFT, LP_RSHIFT, 1, 0, 0 }, { OP_AND, LP_AND, 1, 0, 1 },       { OP_OR, LP_OR, 1, 0, 1 },
        { OP_XOR, LP_XOR, 1, 0, 1 },
    };
    static const struct { Opcode op; LcuPrim p; VcType ty; } un[] = {
        { OP_NOT, LP_NOT, TY_INT },     { OP_NOT, LP_NOT, TY_BOOL },     { OP_FLOOR, LP_FLOOR, TY_FLOAT },
        { OP_CEIL, LP_CEIL, TY_FLOAT }, { OP_TRUNC, LP_TRUNC, TY_FLOAT }, { OP_ROUND, LP_ROUND, TY_FLOAT },
        { OP_LOG, LP_LOG, TY_FLOAT },   { OP_SQRT, LP_SQRT, TY_FLOAT },  { OP_EXP, LP_EXP, TY_FLOAT },
        { OP_SIN, LP_SIN, TY_FLOAT },   { OP_COS, LP_COS, TY_FLOAT },    { OP_TAN, LP_TAN, TY_FLOAT },
        { OP_ASIN, LP_ASIN, TY_FLOAT }, { OP_ACOS, LP_ACOS, TY_FLOAT },  { OP_ATAN, LP_ATAN, TY_FLOAT },
        { OP_SINH, LP_SINH, TY_FLOAT }, { OP_COSH, LP_COSH, TY_FLOAT },  { OP_TANH, LP_TANH, TY_FLOAT },
        { OP_I_TO_F, LP_I_TO_F, TY_INT }, { OP_I_TO_B, LP_I_TO_B, TY_INT }, { OP_B_TO_I, LP_B_TO_I, TY_BOOL },
    };
    const int n = 300;
    int bad = 0;
    for (size_t c = 0; c < sizeof bin / sizeof bin[0]; c++) {
        for (int t = 0; t < 3; t++) {
            if (!(t == 0 ? bin[c].ints : t == 1 ? bin[c].floats : bin[c].bools))
                continue;
            VsElem b = t == 0 ? VS_INT : t == 1 ? VS_FLOAT : VS_BOOL;
            VcType ty = t == 0 ? TY_INT : t == 1 ? TY_FLOAT : TY_BOOL;
            bind(0, t == 0 ? rnd_ints(n) : t == 1 ? rnd_floats(n) : rnd_bools(n));
            bind(1, t == 0 ? rnd_ints(n) : t == 1 ? rnd_floats(n) : rnd_bools(n));
            if (t == 0 && (bin[c].op == OP_DIV || bin[c].op == OP_MOD))
                for (int i = 0; i < n; i++)
                    if (VI(env[1])[i] == 0 || (VI(env[1])[i] == -1 && VI(env[0])[i] == INT32_MIN))
                        VI(env[1])[i] = 3;
            LcuExpr *e = p2(bin[c].p, b, at(0, b), at(1, b));
            decl(2, LV_ARRAY, e->type);
            run(kernel1(soac1(LS_MAP, 2, LSH_LEN, 0, e)));
            Value *a[2] = { env[0], env[1] };
            Value *r = ref_op(op_binary, bin[c].op, ty, 2, a);
            if (!same_value(env[2], r)) {
                bad++;
                fprintf(stderr, "binary op %d type %d differs\n", (int)bin[c].op, t);
            }
            val_release(r);
            clear_env();
        }
    }
    for (size_t c = 0; c < sizeof un / sizeof un[0]; c++) {
        VsElem b = un[c].ty == TY_INT ? VS_INT : un[c].ty == TY_FLOAT ? VS_FLOAT : VS_BOOL;
        bind(0, b == VS_INT ? rnd_ints(n) : b == VS_FLOAT ? rnd_floats(n) : rnd_bools(n));
        LcuExpr *e = p1(un[c].p, b, at(0, b));
        decl(2, LV_ARRAY, e->type);
        run(kernel1(soac1(LS_MAP, 2, LSH_LEN, 0, e)));
        Value *a[1] = { env[0] };
        Value *r = ref_op(op_unary, un[c].op, un[c].ty, 1, a);
        if (!same_value(env[2], r)) {
            bad++;
            fprintf(stderr, "unary op %d differs\n", (int)un[c].op);
        }
        val_release(r);
        clear_env();
    }
    /* SELECT as an if; RAND as randmod over the stream, from the same seed. */
    bind(0, rnd_bools(n));
    bind(1, rnd_floats(n));
    bind(2, rnd_floats(n));
    decl(3, LV_ARRAY, VS_FLOAT);
    run(kernel1(soac1(LS_MAP, 3, LSH_LEN, 0, lcu_if(at(0, VS_BOOL), at(1, VS_FLOAT), at(2, VS_FLOAT)))));
    Value *a[3] = { env[0], env[1], env[2] };
    Value *r = ref_op(op_select, OP_SELECT, TY_FLOAT, 3, a);
    bad += !same_value(env[3], r);
    val_release(r);
    clear_env();

    bind(0, rnd_ints(n));
    for (int i = 0; i < n; i++)
        if (VI(env[0])[i] == 0)
            VI(env[0])[i] = 7;
    decl(1, LV_ARRAY, VS_INT);
    decl(2, LV_ARRAY, VS_INT);
    rnd_seed(rnd_global(), 12345);
    LcuKernel *k = lcu_kernel_new(21);
    LcuSoac *s = soac(LS_LIB, 1, (int[]){ 1 }, LSH_ONE, -1);
    s->lib = LL_RAND_STREAM;
    s->nargs = 1;
    s->args[0] = 0;
    lcu_kernel_add(k, s);
    lcu_kernel_add(k, soac1(LS_MAP, 2, LSH_LEN, 0, p2(LP_RANDMOD, VS_INT, at(1, VS_INT), at(0, VS_INT))));
    run(k);
    rnd_seed(rnd_global(), 12345);
    a[0] = env[0];
    r = ref_op(op_rand, OP_RAND, TY_INT, 1, a);
    bad += !same_value(env[2], r);
    val_release(r);
    clear_env();
    CHECK(bad == 0);
}

static void test_diff_vector_ops(void)
{
    int bad = 0;
    for (int round = 0; round < 60; round++) {
        int m = 1 + (int)(rnd() % 10), n = (int)(rnd() % 100);
        if (round % 3 == 0)
            n = m * (1 + (int)(rnd() % 10)); /* often uniform: lengths 1 to 10 */
        int isf = round & 1;
        VsElem b = isf ? VS_FLOAT : VS_INT;
        VcType ty = isf ? TY_FLOAT : TY_INT;
        Value *sd = rnd_segs(m, n);
        Value *dsd = round % 6 == 0 ? uniform_segs(m, n / m + (int)(rnd() % 3))
                                    : rnd_segs(m, n + (int)(rnd() % 20));
        /* Destination segments at least as long as the source's, so that
         * random in-range indices exist: lengthen where needed. */
        for (int k = 0; k < m; k++)
            if (VI(dsd)[k] < VI(sd)[k])
                VI(dsd)[k] = VI(sd)[k];
        seg_finish(dsd);
        bind(0, isf ? rnd_floats(n) : rnd_ints(n));
        bind(1, sd);
        bind(2, dsd);
        /* idx: a permutation within each source segment (PERMUTE); jdx: any
         * position of the destination segment (DPERMUTE, FPERMUTE). */
        Value *idx = val_new(VT_INT, n), *jdx = val_new(VT_INT, n);
        for (int k = 0, pos = 0; k < m; pos += VI(sd)[k], k++) {
            int l = VI(sd)[k];
            for (int j = 0; j < l; j++)
                VI(idx)[pos + j] = j;
            for (int j = l - 1; j > 0; j--) {
                int q = (int)(rnd() % (uint32_t)(j + 1)), t = VI(idx)[pos + j];
                VI(idx)[pos + j] = VI(idx)[pos + q];
                VI(idx)[pos + q] = t;
            }
            for (int j = 0; j < l; j++)
                VI(jdx)[pos + j] = (int)(rnd() % (uint32_t)VI(dsd)[k]);
        }
        bind(3, idx);
        bind(4, jdx);
        bind(5, rnd_bools(n));
        bind(6, isf ? rnd_floats(dsd->n) : rnd_ints(dsd->n));
        bind(7, rnd_ints(m));                   /* DIST values, INDEX init */
        bind(8, rnd_ints(m));                   /* INDEX stride */
        Value *ex = val_new(VT_INT, m);         /* EXTRACT indices (non-empty segments) */
        for (int k = 0; k < m; k++)
            VI(ex)[k] = VI(sd)[k] > 0 ? (int)(rnd() % (uint32_t)VI(sd)[k]) : 0;
        bind(9, ex);
        bind(10, isf ? rnd_floats(m) : rnd_ints(m));
        for (int v = 20; v < 32; v++)
            decl(v, LV_ARRAY, b);
        decl(24, LV_ARRAY, VS_INT);
        decl(25, LV_SEGDES, VS_INT);
        decl(26, LV_ARRAY, VS_INT);
        decl(27, LV_ARRAY, VS_INT);
        decl(28, LV_ARRAY, VS_INT);

        LcuKernel *k = lcu_kernel_new(22);
        LcuSoac *s = soac1(LS_SEG_PERMUTE, 20, LSH_SEG_N, 1, at(0, b));     /* PERMUTE */
        s->idx = lcu_thunk(at(3, VS_INT), 1);
        s->dst_sd = 1;
        lcu_kernel_add(k, s);
        s = soac1(LS_SEG_PERMUTE, 21, LSH_SEG_N, 1, at(0, b));              /* DPERMUTE */
        s->idx = lcu_thunk(at(4, VS_INT), 1);
        s->dst_sd = 2;
        s->dflt[0] = 6;
        lcu_kernel_add(k, s);
        s = soac1(LS_SEG_PERMUTE, 22, LSH_SEG_N, 1, at(0, b));              /* FPERMUTE */
        s->idx = lcu_thunk(at(4, VS_INT), 1);
        s->pred = lcu_thunk(at(5, VS_BOOL), 1);
        s->dst_sd = 2;
        lcu_kernel_add(k, s);
        s = soac1(LS_SEG_PERMUTE, 23, LSH_SEG_N, 1, at(0, b));              /* DFPERMUTE */
        s->idx = lcu_thunk(at(4, VS_INT), 1);
        s->pred = lcu_thunk(at(5, VS_BOOL), 1);
        s->dst_sd = 2;
        s->dflt[0] = 6;
        lcu_kernel_add(k, s);
        s = soac(LS_SEG_FILTER, 2, (int[]){ 29, 25 }, LSH_SEG_N, 1);        /* PACK */
        s->pull = lcu_thunk(at(0, b), 1);
        s->pred = lcu_thunk(at(5, VS_BOOL), 1);
        lcu_kernel_add(k, s);
        lcu_kernel_add(k, soac1(LS_MAP, 26, LSH_SEG_N, 1,                   /* DIST */
                                lcu_sub(7, VS_INT, lcu_seg(LE_SEG_OF, 1, lcu_index()))));
        LcuExpr *ix = lcu_let(0, lcu_seg(LE_SEG_OF, 1, lcu_index()),          /* INDEX */
                              p2(LP_ADD, VS_INT, lcu_sub(7, VS_INT, lcu_local(0, VS_INT)),
                                 p2(LP_MUL, VS_INT,
                                    p2(LP_SUB, VS_INT, lcu_index(),
                                       lcu_seg(LE_SEG_START, 1, lcu_local(0, VS_INT))),
                                    lcu_sub(8, VS_INT, lcu_local(0, VS_INT)))));
        lcu_kernel_add(k, soac1(LS_MAP, 27, LSH_SEG_N, 1, ix));
        /* EXTRACT where every segment is non-empty, else (guarded) 0. */
        lcu_kernel_add(k, soac1(LS_MAP, 30, LSH_SEG_M, 1,
                                lcu_if(p2(LP_GT, VS_INT, lcu_seg(LE_SEG_LEN, 1, lcu_index()), lcu_int(0)),
                                       lcu_sub(0, b, p2(LP_ADD, VS_INT, lcu_seg(LE_SEG_START, 1, lcu_index()),
                                                        at(9, VS_INT))),
                                       lcu_sub(10, b, lcu_index()))));
        LcuSoac *rk = soac(LS_LIB, 1, (int[]){ 28 }, LSH_ONE, -1);           /* RANK_UP/DOWN */
        int down = (round & 2) != 0;
        rk->lib = down ? LL_RANK_DOWN : LL_RANK_UP;
        rk->nargs = 2;
        rk->args[0] = 0;
        rk->args[1] = 1;
        lcu_kernel_add(k, rk);
        run(k);

        Value *r;
        r = ref_op(op_permute, OP_PERMUTE, ty, 3, (Value *[]){ env[0], env[3], env[1] });
        bad += !same_value(env[20], r);
        val_release(r);
        r = ref_op(op_dpermute, OP_DPERMUTE, ty, 5, (Value *[]){ env[0], env[4], env[6], env[1], env[2] });
        bad += !same_value(env[21], r);
        val_release(r);
        r = ref_op(op_fpermute, OP_FPERMUTE, ty, 5, (Value *[]){ env[0], env[4], env[5], env[1], env[2] });
        bad += !same_value(env[22], r);
        val_release(r);
        r = ref_op(op_dfpermute, OP_DFPERMUTE, ty, 6,
                   (Value *[]){ env[0], env[4], env[5], env[6], env[1], env[2] });
        bad += !same_value(env[23], r);
        val_release(r);
        r = ref_op(op_pack, OP_PACK, ty, 3, (Value *[]){ env[0], env[5], env[1] });
        Value *r2 = vs_pop(&ref);
        bad += !same_value(env[25], r) + !same_value(env[29], r2);
        val_release(r);
        val_release(r2);
        r = ref_op(op_dist, OP_DIST, TY_INT, 2, (Value *[]){ env[7], env[1] });
        bad += !same_value(env[26], r);
        val_release(r);
        r = ref_op(op_index, OP_INDEX, TY_INT, 3, (Value *[]){ env[7], env[8], env[1] });
        bad += !same_value(env[27], r);
        val_release(r);
        r = ref_op(op_rank, down ? OP_RANK_DOWN : OP_RANK_UP, ty, 2,
                   (Value *[]){ env[0], env[1] });
        bad += !same_value(env[28], r);
        val_release(r);
        /* EXTRACT, on the segments that are not empty. */
        for (int q = 0; q < m; q++)
            if (VI(env[1])[q] > 0) {
                int64_t o = seg_offsets(env[1])[q] + VI(env[9])[q];
                bad += isf ? memcmp(&VF(env[30])[q], &VF(env[0])[o], 8) != 0 : VI(env[30])[q] != VI(env[0])[o];
            }
        clear_env();
    }
    CHECK(bad == 0);
}

/* Big segments (the reference's radix-sort path) and many ties. */
static void test_diff_rank_big(void)
{
    int bad = 0;
    for (int round = 0; round < 6; round++) {
        int n = round < 2 ? 3000 : round < 4 ? 20000 : 150000;
        Value *d = round & 1 ? rnd_floats(n) : rnd_ints(n);
        if (round == 2)
            for (int i = 0; i < n; i++)
                VI(d)[i] %= 50;     /* ties */
        bind(0, d);
        bind(1, rnd_segs(round < 4 ? 3 : 1, n));
        decl(2, LV_ARRAY, VS_INT);
        decl(3, LV_ARRAY, VS_INT);
        LcuKernel *k = lcu_kernel_new(23);
        for (int j = 0; j < 2; j++) {
            LcuSoac *s = soac(LS_LIB, 1, (int[]){ 2 + j }, LSH_ONE, -1);
            s->lib = j ? LL_RANK_DOWN : LL_RANK_UP;
            s->nargs = 2;
            s->args[0] = 0;
            s->args[1] = 1;
            lcu_kernel_add(k, s);
        }
        run(k);
        VcType ty = round & 1 ? TY_FLOAT : TY_INT;
        Value *r = ref_op(op_rank, OP_RANK_UP, ty, 2, (Value *[]){ env[0], env[1] });
        bad += !same_value(env[2], r);
        val_release(r);
        r = ref_op(op_rank, OP_RANK_DOWN, ty, 2, (Value *[]){ env[0], env[1] });
        bad += !same_value(env[3], r);
        val_release(r);
        clear_env();
    }
    CHECK(bad == 0);
}

int main(void)
{
    mem_set_limit(INT64_C(1) << 32);
    test_rand();                /* first: needs the fresh global stream */
    test_map_int();
    test_map_float();
    test_seg_reduce_scan();
    test_norm2();
    test_filter_partition_once();
    test_seg_permute();
    test_seg_filter();
    test_segment_helpers();
    test_rank();
    test_env();
    test_errors();
    test_insane();
    test_diff_scans();
    test_diff_elementwise();
    test_diff_vector_ops();
    test_diff_rank_big();
    CHECK(mem_used() == 0);
    free(ref.stk);
    return check_report("test_lcu_eval");
}

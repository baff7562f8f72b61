/* tests/unit/test_lcu.c — the λcu IR: building the λcu paper's norm2
 * kernels (§5) by hand, printing them against text written down here,
 * the validator's accept/reject decisions, lcu_kernel_finish, copy/free. */
#include "check.h"
#include "translate/lcu.h"
#include "translate/lcu_prims.h"


#include <stdlib.h>
#include <string.h>

/* Variables of the norm2 plan:
 *   x1 xs, x2 sum1, x3 gts, x4 sum2, x5 res1, x6 res2 (all [float]; sums
 *   are length-1 arrays), x7 a segdes, x8 [int], x9 [bool], x10 [int],
 *   x11 segdes, x12 [float], x13 [int]. */
#define NV 16
static LcuVarType types[NV];

static void init_types(void)
{
    for (int i = 0; i < NV; i++)
        types[i] = (LcuVarType){LV_ARRAY, VS_FLOAT};
    types[7] = (LcuVarType){LV_SEGDES, VS_INT};
    types[8] = (LcuVarType){LV_ARRAY, VS_INT};
    types[9] = (LcuVarType){LV_ARRAY, VS_BOOL};
    types[10] = (LcuVarType){LV_ARRAY, VS_INT};
    types[11] = (LcuVarType){LV_SEGDES, VS_INT};
    types[13] = (LcuVarType){LV_ARRAY, VS_INT};
}

/* Printing into a string (the caller frees it). */
static char *kernel_text(const LcuKernel *k, const LcuVarType *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lcu_print_kernel(f, k, t);
    fclose(f);
    return buf;
}

static char *expr_text(const LcuExpr *e)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lcu_print_expr(f, e);
    fclose(f);
    return buf;
}

static char *soac_text(const LcuSoac *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lcu_print_soac(f, s);
    fclose(f);
    return buf;
}

static int same(char *got, const char *want)
{
    int ok = strcmp(got, want) == 0;
    if (!ok)
        fprintf(stderr, "--- got:\n%s\n--- want:\n%s\n", got, want);
    free(got);
    return ok;
}

/* Frees E after comparing its printed form. */
static int expr_is(LcuExpr *e, const char *want)
{
    int ok = same(expr_text(e), want);
    lcu_expr_free(e);
    return ok;
}

static int valid(const LcuKernel *k)
{
    char msg[256];
    int rc = lcu_validate_kernel(k, types, NV, msg, sizeof msg);
    if (rc != 0)
        fprintf(stderr, "unexpected validation error: %s\n", msg);
    return rc == 0;
}

/* Validation fails with a message containing each of the (up to two) strings. */
static int invalid(const LcuKernel *k, const char *s1, const char *s2)
{
    char msg[256];
    int rc = lcu_validate_kernel(k, types, NV, msg, sizeof msg);
    int ok = rc == -1 && strstr(msg, s1) && (!s2 || strstr(msg, s2));
    if (!ok)
        fprintf(stderr, "validation: rc %d, message \"%s\", wanted \"%s\"%s%s\n", rc, msg, s1,
                s2 ? " and " : "", s2 ? s2 : "");
    return ok;
}

/* x[i] and x[0] for float arrays. */
static LcuExpr *at_i(int x)
{
    return lcu_sub(x, types[x].kind == LV_ARRAY ? types[x].base : VS_INT, lcu_index());
}

static LcuExpr *at_0(int x)
{
    return lcu_sub(x, types[x].base, lcu_int(0));
}

static LcuSoac *soac1(LcuSoacKind kind, int res, LcuThunk *pull, int shape_var)
{
    LcuSoac *s = lcu_soac_new(kind);
    s->nres = 1;
    s->res[0] = res;
    s->pull = pull;
    s->shape.kind = LSH_LEN;
    s->shape.var = shape_var;
    return s;
}

/* Marks which variables are needed outside a kernel. */
static unsigned char need[NV];

static void need_only(int a, int b)
{
    memset(need, 0, sizeof need);
    if (a >= 0)
        need[a] = 1;
    if (b >= 0)
        need[b] = 1;
}

/* ---- the norm2 kernels -------------------------------------------------- */

/* K1: let sum1 = REDUCE { i => xs[i] using xs } (fadd) (#xs) */
static LcuKernel *k1(int id, int res, int arr)
{
    LcuKernel *k = lcu_kernel_new(id);
    LcuSoac *s = soac1(LS_REDUCE, res, lcu_thunk(at_i(arr), 1), arr);
    s->rops[0] = VS_FADD;
    lcu_kernel_add(k, s);
    need_only(res, -1);
    lcu_kernel_finish(k, need, NV);
    return k;
}

/* The FILTER of K2: gts = FILTER { i => xs[i] } { i => xs[i] > 0.0 } (#xs) */
static LcuSoac *k2_filter(void)
{
    LcuSoac *s = soac1(LS_FILTER, 3, lcu_thunk(at_i(1), 1), 1);
    s->pred = lcu_thunk(lcu_prim2(LP_GT, VS_FLOAT, at_i(1), lcu_float(0.0)), 1);
    return s;
}

/* K3: res = MAP { i => xs[i] / s[0] using xs, s } (#xs) */
static LcuSoac *k3_map(int res, int sum)
{
    return soac1(LS_MAP, res, lcu_thunk(lcu_prim2(LP_DIV, VS_FLOAT, at_i(1), at_0(sum)), 1), 1);
}

static void test_norm2(void)
{
    /* The five single-SOAC kernel invocations of §5. */
    LcuKernel *a = k1(1, 2, 1);
    CHECK(same(kernel_text(a, types), "kernel K1 (x1 : [float]) -> (x2) {\n"
                                      "  let x2 = REDUCE { i => x1[i] using x1 } (fadd) (#x1)\n"
                                      "  return (x2)\n"
                                      "}\n"));
    CHECK(same(kernel_text(a, NULL), "kernel K1 (x1) -> (x2) {\n"
                                     "  let x2 = REDUCE { i => x1[i] using x1 } (fadd) (#x1)\n"
                                     "  return (x2)\n"
                                     "}\n"));
    CHECK(valid(a));
    lcu_kernel_free(a);

    LcuKernel *b = lcu_kernel_new(2);
    lcu_kernel_add(b, k2_filter());
    need_only(3, -1);
    lcu_kernel_finish(b, need, NV);
    CHECK(same(kernel_text(b, types),
               "kernel K2 (x1 : [float]) -> (x3) {\n"
               "  let x3 = FILTER { i => x1[i] using x1 } { i => x1[i] > 0.0 using x1 } (#x1)\n"
               "  return (x3)\n"
               "}\n"));
    CHECK(valid(b));
    lcu_kernel_free(b);

    LcuKernel *c = k1(4, 4, 3);         /* sum2 = K1 (gts) */
    CHECK(same(kernel_text(c, types), "kernel K4 (x3 : [float]) -> (x4) {\n"
                                      "  let x4 = REDUCE { i => x3[i] using x3 } (fadd) (#x3)\n"
                                      "  return (x4)\n"
                                      "}\n"));
    CHECK(valid(c));
    lcu_kernel_free(c);

    LcuKernel *d = lcu_kernel_new(3);
    lcu_kernel_add(d, k3_map(5, 2));
    need_only(5, -1);
    lcu_kernel_finish(d, need, NV);
    CHECK(same(kernel_text(d, types), "kernel K3 (x1 : [float], x2 : [float]) -> (x5) {\n"
                                      "  let x5 = MAP { i => x1[i] / x2[0] using x1, x2 } (#x1)\n"
                                      "  return (x5)\n"
                                      "}\n"));
    CHECK(valid(d));
    lcu_kernel_free(d);

    /* KF1 after merging, before SOAC fusion: FILTER then two REDUCEs; gts
     * is internal. */
    LcuKernel *m = lcu_kernel_new(11);
    lcu_kernel_add(m, k2_filter());
    LcuSoac *r1 = soac1(LS_REDUCE, 2, lcu_thunk(at_i(1), 1), 1);
    r1->rops[0] = VS_FADD;
    lcu_kernel_add(m, r1);
    LcuSoac *r2 = soac1(LS_REDUCE, 4, lcu_thunk(at_i(3), 1), 3);
    r2->rops[0] = VS_FADD;
    lcu_kernel_add(m, r2);
    need_only(2, 4);
    lcu_kernel_finish(m, need, NV);
    CHECK(m->nparams == 1 && m->params[0] == 1);
    CHECK(m->nrets == 2 && m->rets[0] == 2 && m->rets[1] == 4);
    CHECK(same(kernel_text(m, types),
               "kernel K11 (x1 : [float]) -> (x2, x4) {\n"
               "  let x3 = FILTER { i => x1[i] using x1 } { i => x1[i] > 0.0 using x1 } (#x1)\n"
               "  let x2 = REDUCE { i => x1[i] using x1 } (fadd) (#x1)\n"
               "  let x4 = REDUCE { i => x3[i] using x3 } (fadd) (#x3)\n"
               "  return (x2, x4)\n"
               "}\n"));
    CHECK(valid(m));
    /* With gts needed outside too, it is returned, in binding order. */
    need[3] = 1;
    lcu_kernel_finish(m, need, NV);
    CHECK(m->nrets == 3 && m->rets[0] == 3 && m->rets[1] == 2 && m->rets[2] == 4);
    /* need NULL: everything bound is returned. */
    lcu_kernel_finish(m, NULL, 0);
    CHECK(m->nrets == 3 && m->nparams == 1);
    lcu_kernel_free(m);

    /* KF1 after FILTER-REDUCE and horizontal fusion. */
    LcuKernel *f1 = lcu_kernel_new(11);
    LcuExpr *items[2] = {at_i(1), lcu_if(lcu_prim2(LP_GT, VS_FLOAT, at_i(1), lcu_float(0.0)), at_i(1),
                                         lcu_float(0.0))};
    LcuSoac *red = lcu_soac_new(LS_REDUCE);
    red->nres = 2;
    red->res[0] = 2;
    red->res[1] = 4;
    red->rops[0] = VS_FADD;
    red->rops[1] = VS_FADD;
    red->pull = lcu_thunk(lcu_tuple(2, items), 2);
    red->shape = (LcuShape){LSH_LEN, 1};
    lcu_kernel_add(f1, red);
    need_only(2, 4);
    lcu_kernel_finish(f1, need, NV);
    const char *kf1 = "kernel K11 (x1 : [float]) -> (x2, x4) {\n"
                      "  let (x2, x4) = REDUCE { i => (x1[i], if x1[i] > 0.0 then x1[i] else 0.0) using x1 } "
                      "(fadd, fadd) (#x1)\n"
                      "  return (x2, x4)\n"
                      "}\n";
    CHECK(same(kernel_text(f1, types), kf1));
    CHECK(valid(f1));

    /* KF2: the two MAPs merged horizontally. */
    LcuKernel *f2 = lcu_kernel_new(12);
    LcuExpr *divs[2] = {lcu_prim2(LP_DIV, VS_FLOAT, at_i(1), at_0(2)), lcu_prim2(LP_DIV, VS_FLOAT, at_i(1), at_0(4))};
    LcuSoac *map = lcu_soac_new(LS_MAP);
    map->nres = 2;
    map->res[0] = 5;
    map->res[1] = 6;
    map->pull = lcu_thunk(lcu_tuple(2, divs), 2);
    map->shape = (LcuShape){LSH_LEN, 1};
    lcu_kernel_add(f2, map);
    need_only(5, 6);
    lcu_kernel_finish(f2, need, NV);
    CHECK(f2->nparams == 3 && f2->params[0] == 1 && f2->params[1] == 2 && f2->params[2] == 4);
    CHECK(f2->nrets == 2 && f2->rets[0] == 5 && f2->rets[1] == 6);
    CHECK(same(kernel_text(f2, types),
               "kernel K12 (x1 : [float], x2 : [float], x4 : [float]) -> (x5, x6) {\n"
               "  let (x5, x6) = MAP { i => (x1[i] / x2[0], x1[i] / x4[0]) using x1, x2, x4 } (#x1)\n"
               "  return (x5, x6)\n"
               "}\n"));
    CHECK(valid(f2));

    /* Both clusters in one kernel: KF2's MAP reads KF1's results, so they
     * are internal unless needed; params shrink to x1. */
    LcuKernel *both = lcu_kernel_new(13);
    LcuSoac *red2 = lcu_soac_new(LS_REDUCE);
    *red2 = *red;
    red2->pull = lcu_thunk_copy(red->pull);
    LcuSoac *map2 = lcu_soac_new(LS_MAP);
    *map2 = *map;
    map2->pull = lcu_thunk_copy(map->pull);
    lcu_kernel_add(both, red2);
    lcu_kernel_add(both, map2);
    need_only(5, 6);
    lcu_kernel_finish(both, need, NV);
    CHECK(both->nparams == 1 && both->params[0] == 1);
    CHECK(both->nrets == 2 && both->rets[0] == 5 && both->rets[1] == 6);
    CHECK(valid(both));
    /* In the wrong order, the MAP reads x2 and x4 before they are bound:
     * finish makes them params, the validator refuses. */
    both->soacs[0] = map2;
    both->soacs[1] = red2;
    lcu_kernel_finish(both, need, NV);
    CHECK(both->nparams == 3);
    CHECK(invalid(both, "SOAC 0 (MAP)", "bound later, by SOAC 1"));
    lcu_kernel_free(both);

    /* Copies print the same and free independently. */
    LcuThunk *tc = lcu_thunk_copy(red->pull);
    CHECK(tc->arity == 2 && tc->nusing == 1 && tc->using[0] == 1 && tc->using != red->pull->using);
    lcu_thunk_free(tc);
    lcu_kernel_free(f1);
    lcu_kernel_free(f2);
}

/* ---- expression printing ------------------------------------------------ */

static void test_print_expr(void)
{
    /* Literals. */
    CHECK(expr_is(lcu_int(-3), "-3"));
    CHECK(expr_is(lcu_float(0.0), "0.0"));
    CHECK(expr_is(lcu_float(-0.0), "-0.0"));
    CHECK(expr_is(lcu_float(2.5), "2.5"));
    CHECK(expr_is(lcu_float(0.1), "0.1"));
    CHECK(expr_is(lcu_float(1.0 / 3.0), "0.3333333333333333"));
    CHECK(expr_is(lcu_float(1e20), "1e+20"));
    CHECK(expr_is(lcu_float(123456789.0), "123456789.0"));
    CHECK(expr_is(lcu_bool(1), "T"));
    CHECK(expr_is(lcu_bool(0), "F"));
    CHECK(expr_is(lcu_index(), "i"));
    CHECK(expr_is(lcu_local(3, VS_INT), "t3"));

    /* Nested infix operations are parenthesised; top level ones are not. */
    CHECK(expr_is(lcu_prim2(LP_MUL, VS_INT, at_i(8), lcu_prim2(LP_ADD, VS_INT, at_i(10), lcu_int(1))),
                  "x8[i] * (x10[i] + 1)"));
    CHECK(expr_is(lcu_prim2(LP_ADD, VS_INT, lcu_prim2(LP_MUL, VS_INT, at_i(8), at_i(10)), lcu_int(1)),
                  "(x8[i] * x10[i]) + 1"));
    CHECK(expr_is(lcu_prim2(LP_SUB, VS_INT, at_i(8), lcu_int(-1)), "x8[i] - -1"));
    /* AND/OR/XOR by operand type. */
    CHECK(expr_is(lcu_prim2(LP_AND, VS_BOOL, at_i(9), lcu_bool(1)), "x9[i] && T"));
    CHECK(expr_is(lcu_prim2(LP_OR, VS_BOOL, at_i(9), lcu_bool(0)), "x9[i] || F"));
    CHECK(expr_is(lcu_prim2(LP_XOR, VS_BOOL, at_i(9), lcu_bool(1)), "x9[i] ^^ T"));
    CHECK(expr_is(lcu_prim2(LP_AND, VS_INT, at_i(8), lcu_int(7)), "x8[i] & 7"));
    CHECK(expr_is(lcu_prim2(LP_OR, VS_INT, at_i(8), lcu_int(7)), "x8[i] | 7"));
    CHECK(expr_is(lcu_prim2(LP_XOR, VS_INT, at_i(8), lcu_int(7)), "x8[i] ^ 7"));
    CHECK(expr_is(lcu_prim2(LP_LSHIFT, VS_INT, lcu_prim2(LP_RSHIFT, VS_INT, at_i(8), lcu_int(2)), lcu_int(1)),
                  "(x8[i] >> 2) << 1"));
    CHECK(expr_is(lcu_prim2(LP_NE, VS_INT, lcu_prim2(LP_MOD, VS_INT, at_i(8), lcu_int(2)), lcu_int(0)),
                  "(x8[i] % 2) != 0"));
    CHECK(expr_is(lcu_prim2(LP_LE, VS_FLOAT, at_i(1), lcu_float(1.5)), "x1[i] <= 1.5"));
    CHECK(expr_is(lcu_prim2(LP_GE, VS_INT, at_i(8), lcu_int(1)), "x8[i] >= 1"));
    CHECK(expr_is(lcu_prim2(LP_EQ, VS_INT, at_i(8), lcu_int(1)), "x8[i] == 1"));
    CHECK(expr_is(lcu_prim2(LP_LT, VS_INT, at_i(8), lcu_int(1)), "x8[i] < 1"));
    /* Prefix prims. */
    CHECK(expr_is(lcu_prim1(LP_SQRT, VS_FLOAT, lcu_prim2(LP_MUL, VS_FLOAT, at_i(1), at_i(1))),
                  "sqrt(x1[i] * x1[i])"));
    CHECK(expr_is(lcu_prim1(LP_I_TO_F, VS_INT, at_i(8)), "i_to_f(x8[i])"));
    CHECK(expr_is(lcu_prim2(LP_RANDMOD, VS_INT, at_i(8), at_i(10)), "randmod(x8[i], x10[i])"));
    CHECK(expr_is(lcu_prim2(LP_CHECKIDX, VS_INT, at_i(8), lcu_seg(LE_SEG_LEN, 7, lcu_index())),
                  "checkidx(x8[i], seg_len(x7, i))"));
    CHECK(expr_is(lcu_prim1(LP_NOT, VS_BOOL, at_i(9)), "not(x9[i])"));
    CHECK(expr_is(lcu_prim2(LP_ADD, VS_INT, lcu_prim1(LP_NEG, VS_INT, at_i(8)), lcu_int(1)), "neg(x8[i]) + 1"));
    /* if and let: bare at the top, in else-branches and let bodies;
     * parenthesised as operands, conditions, then-branches, let values. */
    LcuExpr *e = lcu_if(lcu_prim2(LP_GT, VS_INT, at_i(8), lcu_int(0)), lcu_int(1),
                        lcu_if(lcu_prim2(LP_LT, VS_INT, at_i(8), lcu_int(0)), lcu_int(-1), lcu_int(0)));
    CHECK(expr_is(lcu_expr_copy(e), "if x8[i] > 0 then 1 else if x8[i] < 0 then -1 else 0"));
    CHECK(expr_is(lcu_prim2(LP_MUL, VS_INT, e, lcu_int(2)),
                  "(if x8[i] > 0 then 1 else if x8[i] < 0 then -1 else 0) * 2"));
    e = lcu_let(1, at_i(1), lcu_let(2, lcu_prim2(LP_MUL, VS_FLOAT, lcu_local(1, VS_FLOAT), lcu_float(2.0)),
                                    lcu_prim2(LP_ADD, VS_FLOAT, lcu_local(2, VS_FLOAT), lcu_local(1, VS_FLOAT))));
    CHECK(expr_is(lcu_expr_copy(e), "let t1 = x1[i] in let t2 = t1 * 2.0 in t2 + t1"));
    CHECK(expr_is(lcu_let(3, lcu_if(lcu_bool(1), lcu_int(1), lcu_int(2)), lcu_local(3, VS_INT)),
                  "let t3 = (if T then 1 else 2) in t3"));
    CHECK(expr_is(lcu_if(lcu_let(4, lcu_bool(1), lcu_local(4, VS_BOOL)), e, lcu_float(0.0)),
                  "if (let t4 = T in t4) then (let t1 = x1[i] in let t2 = t1 * 2.0 in t2 + t1) else 0.0"));
    /* Segment helpers and lengths. */
    CHECK(expr_is(lcu_sub(12, VS_FLOAT, lcu_seg(LE_SEG_OF, 7, lcu_index())), "x12[seg_of(x7, i)]"));
    CHECK(expr_is(lcu_prim2(LP_SUB, VS_INT, lcu_index(), lcu_seg(LE_SEG_START, 7, lcu_seg(LE_SEG_OF, 7, lcu_index()))),
                  "i - seg_start(x7, seg_of(x7, i))"));
    CHECK(expr_is(lcu_seg(LE_SEG_LEN, 7, lcu_int(0)), "seg_len(x7, 0)"));
    CHECK(expr_is(lcu_seg(LE_SEG_COUNT, 7, NULL), "seg_count(x7)"));
    CHECK(expr_is(lcu_prim2(LP_SUB, VS_INT, lcu_len(1), lcu_int(1)), "#x1 - 1"));

    /* Builder types. */
    e = lcu_prim2(LP_LT, VS_FLOAT, at_i(1), lcu_float(1));
    CHECK(e->type == VS_BOOL);
    lcu_expr_free(e);
    e = lcu_prim1(LP_ROUND, VS_FLOAT, at_i(1));
    CHECK(e->type == VS_INT);
    lcu_expr_free(e);
    e = lcu_prim1(LP_B_TO_I, VS_BOOL, at_i(9));
    CHECK(e->type == VS_INT);
    lcu_expr_free(e);
    e = lcu_prim1(LP_I_TO_B, VS_INT, at_i(8));
    CHECK(e->type == VS_BOOL);
    lcu_expr_free(e);
    e = lcu_prim1(LP_I_TO_F, VS_INT, at_i(8));
    CHECK(e->type == VS_FLOAT);
    lcu_expr_free(e);
    e = lcu_prim1(LP_COS, VS_FLOAT, at_i(1));
    CHECK(e->type == VS_FLOAT);
    lcu_expr_free(e);
    e = lcu_prim2(LP_MOD, VS_INT, at_i(8), lcu_int(3));
    CHECK(e->type == VS_INT);
    lcu_expr_free(e);
    e = lcu_prim2(LP_RANDMOD, VS_INT, at_i(8), lcu_int(3));
    CHECK(e->type == VS_INT);
    lcu_expr_free(e);
    e = lcu_if(lcu_bool(1), lcu_float(1), lcu_float(2));
    CHECK(e->type == VS_FLOAT);
    lcu_expr_free(e);
    e = lcu_let(0, lcu_int(1), lcu_bool(0));
    CHECK(e->type == VS_BOOL);
    lcu_expr_free(e);
    e = lcu_len(7);
    CHECK(e->type == VS_INT && e->var == 7);
    lcu_expr_free(e);
    e = lcu_sub(9, VS_BOOL, lcu_index());
    CHECK(e->type == VS_BOOL);
    lcu_expr_free(e);

    /* using: sorted distinct variables read through subscripts, lengths
     * and segment helpers. */
    LcuExpr *it[3] = {at_i(12), lcu_prim2(LP_ADD, VS_INT, lcu_len(10), lcu_seg(LE_SEG_COUNT, 7, NULL)),
                      lcu_sub(12, VS_FLOAT, lcu_sub(8, VS_INT, lcu_index()))};
    LcuThunk *t = lcu_thunk(lcu_tuple(3, it), 3);
    CHECK(t->nusing == 4 && t->using[0] == 7 && t->using[1] == 8 && t->using[2] == 10 && t->using[3] == 12);
    /* After an edit, recompute. */
    lcu_expr_free(t->body->kids[1]);
    t->body->kids[1] = lcu_int(0);
    lcu_thunk_recompute_using(t);
    CHECK(t->nusing == 2 && t->using[0] == 8 && t->using[1] == 12);
    lcu_thunk_free(t);
    t = lcu_thunk(lcu_int(1), 1);
    CHECK(t->nusing == 0);
    LcuThunk *t2 = lcu_thunk_copy(t);
    CHECK(t2->nusing == 0 && t2->body->kind == LE_INT && t2->body != t->body);
    lcu_thunk_free(t);
    lcu_thunk_free(t2);
}

/* ---- SOAC forms ------------------------------------------------------------ */

static void test_print_soacs(void)
{
    LcuKernel *k = lcu_kernel_new(5);

    /* x13 = PERMUTE { i => x8[i] } { i => (#x8 - i) - 1 } (#x8) */
    LcuSoac *s = soac1(LS_PERMUTE, 13, lcu_thunk(at_i(8), 1), 8);
    s->idx = lcu_thunk(lcu_prim2(LP_SUB, VS_INT, lcu_prim2(LP_SUB, VS_INT, lcu_len(8), lcu_index()), lcu_int(1)), 1);
    CHECK(same(soac_text(s), "let x13 = PERMUTE { i => x8[i] using x8 } { i => (#x8 - i) - 1 using x8 } (#x8)"));
    lcu_kernel_add(k, s);

    /* (x2, x3) = PARTITION ... (#x1) */
    s = lcu_soac_new(LS_PARTITION);
    s->nres = 2;
    s->res[0] = 2;
    s->res[1] = 3;
    s->pull = lcu_thunk(at_i(1), 1);
    s->pred = lcu_thunk(lcu_prim2(LP_GT, VS_FLOAT, at_i(1), lcu_float(0)), 1);
    s->shape = (LcuShape){LSH_LEN, 1};
    CHECK(same(soac_text(s), "let (x2, x3) = PARTITION { i => x1[i] using x1 } { i => x1[i] > 0.0 using x1 } (#x1)"));
    lcu_kernel_add(k, s);

    /* x10 = SCAN over x13 with iadd */
    s = soac1(LS_SCAN, 10, lcu_thunk(at_i(13), 1), 13);
    s->rops[0] = VS_IADD;
    CHECK(same(soac_text(s), "let x10 = SCAN { i => x13[i] using x13 } (iadd) (#x13)"));
    lcu_kernel_add(k, s);

    /* x4 = ONCE { () => x2[0] + x3[0] } */
    s = lcu_soac_new(LS_ONCE);
    s->nres = 1;
    s->res[0] = 4;
    s->pull = lcu_thunk(lcu_prim2(LP_ADD, VS_FLOAT, at_0(2), at_0(3)), 1);
    CHECK(same(soac_text(s), "let x4 = ONCE { () => x2[0] + x3[0] using x2, x3 }"));
    lcu_kernel_add(k, s);

    /* x5 = SEG_REDUCE over x7, x6 = SEG_SCAN over x7 */
    s = lcu_soac_new(LS_SEG_REDUCE);
    s->nres = 1;
    s->res[0] = 5;
    s->pull = lcu_thunk(at_i(12), 1);
    s->rops[0] = VS_FMAX;
    s->shape = (LcuShape){LSH_SEG_N, 7};
    CHECK(same(soac_text(s), "let x5 = SEG_REDUCE { i => x12[i] using x12 } (fmax) x7"));
    lcu_kernel_add(k, s);
    s = lcu_soac_new(LS_SEG_SCAN);
    s->nres = 1;
    s->res[0] = 6;
    s->pull = lcu_thunk(at_i(12), 1);
    s->rops[0] = VS_FMUL;
    s->shape = (LcuShape){LSH_SEG_N, 7};
    CHECK(same(soac_text(s), "let x6 = SEG_SCAN { i => x12[i] using x12 } (fmul) x7"));
    lcu_kernel_add(k, s);

    /* x0 = SEG_PERMUTE x12 by x8 into x11, default x1, with a flag */
    s = lcu_soac_new(LS_SEG_PERMUTE);
    s->nres = 1;
    s->res[0] = 0;
    s->pull = lcu_thunk(at_i(12), 1);
    s->idx = lcu_thunk(at_i(8), 1);
    s->shape = (LcuShape){LSH_SEG_N, 7};
    s->dst_sd = 11;
    CHECK(same(soac_text(s), "let x0 = SEG_PERMUTE { i => x12[i] using x12 } { i => x8[i] using x8 } x7 -> x11"));
    s->pred = lcu_thunk(at_i(9), 1);
    s->dflt[0] = 1;
    CHECK(same(soac_text(s), "let x0 = SEG_PERMUTE { i => x12[i] using x12 } { i => x8[i] using x8 } "
                             "{ i => x9[i] using x9 } x7 -> x11 default x1"));
    lcu_kernel_add(k, s);

    /* (x14, x15) = SEG_FILTER over x7 (x15 is the new segdes) */
    types[14] = (LcuVarType){LV_ARRAY, VS_INT};
    types[15] = (LcuVarType){LV_SEGDES, VS_INT};
    s = lcu_soac_new(LS_SEG_FILTER);
    s->nres = 2;
    s->res[0] = 14;
    s->res[1] = 15;
    s->pull = lcu_thunk(at_i(8), 1);
    s->pred = lcu_thunk(lcu_prim2(LP_NE, VS_INT, at_i(8), lcu_int(0)), 1);
    s->shape = (LcuShape){LSH_SEG_N, 7};
    CHECK(same(soac_text(s), "let (x14, x15) = SEG_FILTER { i => x8[i] using x8 } { i => x8[i] != 0 using x8 } x7"));
    lcu_kernel_add(k, s);

    LcuKernel *k2 = lcu_kernel_new(6);
    /* x13 = LIB rank_up(x12, x7) */
    s = lcu_soac_new(LS_LIB);
    s->lib = LL_RANK_UP;
    s->nres = 1;
    s->res[0] = 13;
    s->nargs = 2;
    s->args[0] = 12;
    s->args[1] = 7;
    CHECK(same(soac_text(s), "let x13 = LIB rank_up(x12, x7)"));
    lcu_kernel_add(k2, s);
    /* x10 = MAP over the segments of x7: seg_len; x14 = MAP { i => seg_of } (n x7) */
    s = lcu_soac_new(LS_MAP);
    s->nres = 1;
    s->res[0] = 10;
    s->pull = lcu_thunk(lcu_seg(LE_SEG_LEN, 7, lcu_index()), 1);
    s->shape = (LcuShape){LSH_SEG_M, 7};
    CHECK(same(soac_text(s), "let x10 = MAP { i => seg_len(x7, i) using x7 } (m x7)"));
    lcu_kernel_add(k2, s);
    s = lcu_soac_new(LS_MAP);
    s->nres = 1;
    s->res[0] = 14;
    s->pull = lcu_thunk(lcu_seg(LE_SEG_OF, 7, lcu_index()), 1);
    s->shape = (LcuShape){LSH_SEG_N, 7};
    CHECK(same(soac_text(s), "let x14 = MAP { i => seg_of(x7, i) using x7 } (n x7)"));
    lcu_kernel_add(k2, s);
    s = lcu_soac_new(LS_MAP);
    s->nres = 1;
    s->res[0] = 8;
    s->pull = lcu_thunk(lcu_int(42), 1);
    s->shape = (LcuShape){LSH_ONE, -1};
    CHECK(same(soac_text(s), "let x8 = MAP { i => 42 } ()"));
    lcu_kernel_add(k2, s);

    memset(need, 1, sizeof need);
    lcu_kernel_finish(k, need, NV);
    /* x1 x7 x8 x9 x11 x12 (not x13: bound by the first SOAC) */
    CHECK(k->nparams == 6 && k->params[0] == 1 && k->params[1] == 7 && k->params[2] == 8 && k->params[3] == 9 &&
          k->params[4] == 11 && k->params[5] == 12);
    CHECK(valid(k));
    lcu_kernel_finish(k2, need, NV);
    CHECK(k2->nparams == 2 && k2->params[0] == 7 && k2->params[1] == 12);
    CHECK(k2->nrets == 4 && k2->rets[0] == 13 && k2->rets[3] == 8);
    CHECK(same(kernel_text(k2, types), "kernel K6 (x7 : segdes, x12 : [float]) -> (x13, x10, x14, x8) {\n"
                                       "  let x13 = LIB rank_up(x12, x7)\n"
                                       "  let x10 = MAP { i => seg_len(x7, i) using x7 } (m x7)\n"
                                       "  let x14 = MAP { i => seg_of(x7, i) using x7 } (n x7)\n"
                                       "  let x8 = MAP { i => 42 } ()\n"
                                       "  return (x13, x10, x14, x8)\n"
                                       "}\n"));
    CHECK(valid(k2));
    lcu_kernel_free(k);
    lcu_kernel_free(k2);
}

/* ---- the validator's rejections ---------------------------------------- */

/* A one-SOAC kernel with MAP { i => BODY } (#x1) binding RES. */
static LcuKernel *map_kernel(int res, LcuExpr *body)
{
    LcuKernel *k = lcu_kernel_new(7);
    lcu_kernel_add(k, soac1(LS_MAP, res, lcu_thunk(body, 1), 1));
    memset(need, 1, sizeof need);
    lcu_kernel_finish(k, need, NV);
    return k;
}

static void test_reject(void)
{
    LcuKernel *k;

    /* A capture missing from `using`. */
    k = map_kernel(5, lcu_prim2(LP_ADD, VS_FLOAT, at_i(1), at_0(2)));
    CHECK(valid(k));
    k->soacs[0]->pull->nusing = 1;          /* drop x2 (using is x1, x2) */
    CHECK(invalid(k, "SOAC 0 (MAP), pull thunk", "reads x2, which is not in its using list"));
    lcu_kernel_free(k);

    /* A subscript of a segdes. */
    k = map_kernel(8, lcu_sub(7, VS_INT, lcu_index()));
    CHECK(invalid(k, "SOAC 0 (MAP)", "subscript of x7, a segdes"));
    lcu_kernel_free(k);
    /* seg_of of an array. */
    k = map_kernel(10, lcu_seg(LE_SEG_OF, 8, lcu_index()));
    CHECK(invalid(k, "seg_of of x8", "not a segdes"));
    lcu_kernel_free(k);
    /* A subscript with the wrong element type. */
    k = map_kernel(5, lcu_sub(1, VS_INT, lcu_index()));
    CHECK(invalid(k, "x1[...] has type int", NULL));
    lcu_kernel_free(k);
    /* A float subscript. */
    k = map_kernel(5, lcu_sub(1, VS_FLOAT, lcu_float(0)));
    CHECK(invalid(k, "x1 subscripted by a float", NULL));
    lcu_kernel_free(k);

    /* Arity: a 2-result REDUCE with a 1-ary thunk; a 2-ary thunk whose
     * body is a scalar; a 1-ary thunk returning a pair. */
    k = lcu_kernel_new(8);
    LcuSoac *s = soac1(LS_REDUCE, 2, lcu_thunk(at_i(1), 1), 1);
    s->nres = 2;
    s->res[1] = 4;
    s->rops[0] = s->rops[1] = VS_FADD;
    lcu_kernel_add(k, s);
    lcu_kernel_finish(k, NULL, 0);
    CHECK(invalid(k, "SOAC 0 (REDUCE), pull thunk", "has arity 1, the SOAC needs 2"));
    s->pull->arity = 2;
    CHECK(invalid(k, "body yields 1 values, arity 2", NULL));
    LcuExpr *pair[2] = {at_i(1), at_i(1)};
    lcu_thunk_free(s->pull);
    s->pull = lcu_thunk(lcu_tuple(2, pair), 2);
    CHECK(valid(k));
    s->nres = 1;
    CHECK(invalid(k, "has arity 2, the SOAC needs 1", NULL));
    s->nres = 2;

    /* A rop whose base is not the component's type. */
    s->rops[1] = VS_IADD;
    CHECK(invalid(k, "rop iadd (int) for result 1, whose type is float", NULL));
    s->rops[1] = VS_BOR;
    CHECK(invalid(k, "rop bor (bool)", NULL));
    s->rops[1] = VS_FMIN;
    CHECK(valid(k));
    /* A result whose declared type is not what the SOAC produces. */
    s->res[1] = 8;
    CHECK(invalid(k, "result x8 is [int], but the SOAC produces [float]", NULL));
    lcu_kernel_free(k);

    /* Use before bind: SOAC 0 reads x5, which SOAC 1 binds. */
    k = lcu_kernel_new(9);
    lcu_kernel_add(k, soac1(LS_MAP, 6, lcu_thunk(at_i(5), 1), 1));
    lcu_kernel_add(k, soac1(LS_MAP, 5, lcu_thunk(at_i(1), 1), 1));
    lcu_kernel_finish(k, NULL, 0);
    CHECK(invalid(k, "SOAC 0 (MAP)", "x5 is bound later, by SOAC 1"));
    /* Reading its own result. */
    lcu_thunk_free(k->soacs[1]->pull);
    k->soacs[1]->pull = lcu_thunk(at_i(5), 1);
    lcu_thunk_free(k->soacs[0]->pull);
    k->soacs[0]->pull = lcu_thunk(at_i(1), 1);
    lcu_kernel_finish(k, NULL, 0);
    CHECK(invalid(k, "SOAC 1 (MAP)", "x5 is bound by this SOAC itself"));
    /* A second binding of a variable. */
    lcu_thunk_free(k->soacs[1]->pull);
    k->soacs[1]->pull = lcu_thunk(at_i(6), 1);
    k->soacs[1]->res[0] = 6;
    lcu_kernel_finish(k, NULL, 0);
    CHECK(invalid(k, "SOAC 1 (MAP)", "binds x6, already bound by SOAC 0"));
    k->soacs[1]->res[0] = 5;
    lcu_kernel_finish(k, NULL, 0);
    CHECK(valid(k));
    /* A read of a variable neither bound nor a parameter (params stale). */
    lcu_thunk_free(k->soacs[1]->pull);
    k->soacs[1]->pull = lcu_thunk(at_i(2), 1);
    CHECK(invalid(k, "x2 is neither a kernel parameter nor bound earlier", NULL));
    /* Returning something unbound. */
    lcu_kernel_finish(k, NULL, 0);
    k->rets[0] = 3;
    CHECK(invalid(k, "K9: returns x3, which the kernel does not bind", NULL));
    lcu_kernel_free(k);

    /* An unbound local; a local of the wrong type; a let-bound one is fine,
     * and scopes end with the let. */
    k = map_kernel(5, lcu_prim2(LP_ADD, VS_FLOAT, at_i(1), lcu_local(3, VS_FLOAT)));
    CHECK(invalid(k, "t3 is not bound by an enclosing let", NULL));
    lcu_kernel_free(k);
    k = map_kernel(5, lcu_let(3, lcu_int(1), lcu_local(3, VS_FLOAT)));
    CHECK(invalid(k, "t3 used as float but bound to int", NULL));
    lcu_kernel_free(k);
    k = map_kernel(5, lcu_let(3, at_i(1), lcu_prim2(LP_ADD, VS_FLOAT, lcu_local(3, VS_FLOAT), lcu_float(1))));
    CHECK(valid(k));
    lcu_kernel_free(k);
    k = map_kernel(5, lcu_prim2(LP_ADD, VS_FLOAT, lcu_let(3, at_i(1), lcu_local(3, VS_FLOAT)),
                                lcu_local(3, VS_FLOAT)));
    CHECK(invalid(k, "t3 is not bound", NULL));
    lcu_kernel_free(k);

    /* A non-bool if condition; disagreeing branches. */
    k = map_kernel(5, lcu_if(at_i(1), lcu_float(1), lcu_float(2)));
    CHECK(invalid(k, "if condition of type float, not bool", NULL));
    lcu_kernel_free(k);
    k = map_kernel(5, lcu_if(lcu_bool(1), lcu_float(1), lcu_int(2)));
    CHECK(invalid(k, "if branches disagree: float and int", NULL));
    lcu_kernel_free(k);

    /* Prim operand types. */
    k = map_kernel(5, lcu_prim1(LP_SQRT, VS_INT, lcu_int(4)));
    CHECK(invalid(k, "sqrt applied to int", NULL));
    lcu_kernel_free(k);
    k = map_kernel(5, lcu_prim2(LP_ADD, VS_FLOAT, at_i(1), lcu_int(1)));
    CHECK(invalid(k, "add applied to float and int", NULL));
    lcu_kernel_free(k);
    k = map_kernel(5, lcu_prim2(LP_LT, VS_BOOL, at_i(9), lcu_bool(1)));
    CHECK(invalid(k, "lt applied to bool", NULL));
    lcu_kernel_free(k);
    k = map_kernel(5, lcu_prim2(LP_MOD, VS_FLOAT, at_i(1), at_i(1)));
    CHECK(invalid(k, "mod applied to float", NULL));
    lcu_kernel_free(k);
    /* A stored type that disagrees with the builder's rule. */
    LcuExpr *bad = lcu_prim2(LP_ADD, VS_INT, lcu_int(1), lcu_int(2));
    bad->type = VS_FLOAT;
    k = map_kernel(5, bad);
    CHECK(invalid(k, "add has type float, should be int", NULL));
    lcu_kernel_free(k);

    /* A tuple not at the top; a tuple in tail position under let/if is fine. */
    LcuExpr *two[2] = {at_i(1), at_i(1)};
    k = map_kernel(5, lcu_prim2(LP_ADD, VS_FLOAT, lcu_tuple(2, two), lcu_float(1)));
    CHECK(invalid(k, "a tuple not in tail position", NULL));
    lcu_kernel_free(k);
    {
        LcuExpr *p1[2] = {lcu_local(1, VS_FLOAT), lcu_float(0)};
        LcuExpr *p2[2] = {lcu_float(0), lcu_local(1, VS_FLOAT)};
        LcuExpr *body = lcu_let(1, at_i(1),
                                lcu_if(lcu_prim2(LP_GT, VS_FLOAT, lcu_local(1, VS_FLOAT), lcu_float(0)),
                                       lcu_tuple(2, p1), lcu_tuple(2, p2)));
        k = lcu_kernel_new(10);
        LcuSoac *m = soac1(LS_MAP, 5, lcu_thunk(body, 2), 1);
        m->nres = 2;
        m->res[1] = 6;
        lcu_kernel_add(k, m);
        lcu_kernel_finish(k, NULL, 0);
        CHECK(valid(k));
        CHECK(same(kernel_text(k, NULL),
                   "kernel K10 (x1) -> (x5, x6) {\n"
                   "  let (x5, x6) = MAP { i => let t1 = x1[i] in if t1 > 0.0 then (t1, 0.0) else (0.0, t1) "
                   "using x1 } (#x1)\n"
                   "  return (x5, x6)\n"
                   "}\n"));
        lcu_kernel_free(k);
    }

    /* The index in a ONCE thunk. */
    k = lcu_kernel_new(11);
    s = lcu_soac_new(LS_ONCE);
    s->nres = 1;
    s->res[0] = 5;
    s->pull = lcu_thunk(at_i(1), 1);
    lcu_kernel_add(k, s);
    lcu_kernel_finish(k, NULL, 0);
    CHECK(k->nparams == 1 && k->params[0] == 1);
    CHECK(invalid(k, "SOAC 0 (ONCE), pull thunk: the index i in a ONCE thunk", NULL));
    lcu_kernel_free(k);

    /* Shapes of the wrong kind; an unset shape. */
    k = map_kernel(5, at_i(1));
    k->soacs[0]->shape = (LcuShape){LSH_LEN, 7};
    lcu_kernel_finish(k, NULL, 0);
    CHECK(invalid(k, "shape (#x7) of a segdes", NULL));
    k->soacs[0]->shape = (LcuShape){LSH_SEG_M, 1};
    lcu_kernel_finish(k, NULL, 0);
    CHECK(invalid(k, "shape (m x1) of [float], not a segdes", NULL));
    k->soacs[0]->shape.var = -1;
    CHECK(invalid(k, "shape x-1 is not a variable", NULL));
    lcu_kernel_free(k);
    k = lcu_kernel_new(12);
    s = lcu_soac_new(LS_SEG_REDUCE);
    s->nres = 1;
    s->res[0] = 5;
    s->pull = lcu_thunk(at_i(1), 1);
    s->rops[0] = VS_FADD;
    s->shape = (LcuShape){LSH_LEN, 1};
    lcu_kernel_add(k, s);
    lcu_kernel_finish(k, NULL, 0);
    CHECK(invalid(k, "SOAC 0 (SEG_REDUCE): the shape must be (n sd)", NULL));
    s->shape = (LcuShape){LSH_SEG_N, 7};
    lcu_kernel_finish(k, NULL, 0);
    CHECK(valid(k));
    /* A thunk the kind does not use. */
    s->pred = lcu_thunk(lcu_bool(1), 1);
    CHECK(invalid(k, "has a pred thunk it does not use", NULL));
    lcu_kernel_free(k);

    /* FILTER: a missing predicate; a non-bool one. */
    k = lcu_kernel_new(13);
    s = k2_filter();
    lcu_thunk_free(s->pred);
    s->pred = NULL;
    lcu_kernel_add(k, s);
    lcu_kernel_finish(k, NULL, 0);
    CHECK(invalid(k, "SOAC 0 (FILTER), pred thunk: missing", NULL));
    s->pred = lcu_thunk(at_i(1), 1);
    CHECK(invalid(k, "the pred thunk yields float, not bool", NULL));
    lcu_kernel_free(k);

    /* LIB argument types. */
    k = lcu_kernel_new(14);
    s = lcu_soac_new(LS_LIB);
    s->lib = LL_RANK_DOWN;
    s->nres = 1;
    s->res[0] = 13;
    s->nargs = 2;
    s->args[0] = 12;
    s->args[1] = 1;
    lcu_kernel_add(k, s);
    lcu_kernel_finish(k, NULL, 0);
    CHECK(invalid(k, "rank_down of [float] and [float]", NULL));
    s->args[1] = 7;
    lcu_kernel_finish(k, NULL, 0);
    CHECK(valid(k));
    lcu_kernel_free(k);

    /* No message buffer: just the status. */
    k = map_kernel(5, lcu_if(at_i(1), lcu_float(1), lcu_float(2)));
    CHECK(lcu_validate_kernel(k, types, NV, NULL, 0) == -1);
    /* Without types, the type-dependent checks are skipped. */
    lcu_kernel_free(k);
    k = map_kernel(8, lcu_sub(7, VS_INT, lcu_index()));
    CHECK(lcu_validate_kernel(k, NULL, NV, NULL, 0) == 0);
    lcu_kernel_free(k);
}

static void test_names(void)
{
    CHECK(strcmp(lcu_soac_name(LS_SEG_PERMUTE), "SEG_PERMUTE") == 0);
    CHECK(strcmp(lcu_soac_name(LS_LIB), "LIB") == 0);
    CHECK(strcmp(lcu_rop_name(VS_BXOR), "bxor") == 0);
    CHECK(strcmp(lcu_rop_name(VS_IMIN), "imin") == 0);
    CHECK(strcmp(lcu_prim_name(LP_RANDMOD), "randmod") == 0);
    CHECK(strcmp(lcu_prim_name(LP_TANH), "tanh") == 0);
    CHECK(strcmp(lcu_prim_name(LP_B_TO_I), "b_to_i") == 0);
    CHECK(strcmp(lcu_lib_name(LL_RAND_STREAM), "rand_stream") == 0);
    CHECK(strcmp(lcu_base_name(VS_BOOL), "bool") == 0);
    CHECK(lcu_rop_base(VS_IXOR) == VS_INT && lcu_rop_base(VS_FMIN) == VS_FLOAT && lcu_rop_base(VS_BAND) == VS_BOOL);
    for (int p = 0; p < LP_COUNT; p++)
        CHECK(lcu_prim_name((LcuPrim)p)[0] != '?');
    for (int r = 0; r < VS_NROPS; r++)
        CHECK(lcu_rop_name((VsRop)r)[0] != '?');
    LcuSoac *s = lcu_soac_new(LS_SEG_PERMUTE);
    CHECK(s->dst_sd == -1 && s->dflt[0] == -1 && s->dflt[LCU_MAXRES - 1] == -1 && s->nres == 0 && !s->pull);
    lcu_soac_free(s);
}

/* The primitive table: a row for every primitive, each consistent; the
 * VCODE instructions that lower to one primitive find it. */
static void test_prims(void)
{
    for (int p = 0; p < LP_COUNT; p++) {
        const LcuPrimInfo *i = &lcu_prims[p];
        CHECK(i->name != NULL && (i->arity == 1 || i->arity == 2));
        CHECK((i->math == NULL) == (i->fmath == NULL));
        CHECK(!i->math || (i->arity == 1 && i->operand == LPO_FLOAT && i->result == LPR_FLOAT));
        CHECK(!i->infix || i->arity == 2);
        CHECK(i->op == OP_COUNT || lcu_prim_of_op(i->op) == (LcuPrim)p);
    }
    CHECK(lcu_prim_of_op(OP_ADD) == LP_ADD && lcu_prim_of_op(OP_B_TO_I) == LP_B_TO_I);
    CHECK(lcu_prim_of_op(OP_PLUS_SCAN) == LP_COUNT && lcu_prim_of_op(OP_COUNT) == LP_COUNT);
    CHECK(lcu_prim_result(LP_LT, VS_FLOAT) == VS_BOOL && lcu_prim_result(LP_ADD, VS_FLOAT) == VS_FLOAT);
    CHECK(lcu_prim_result(LP_FLOOR, VS_FLOAT) == VS_INT && lcu_prim_result(LP_I_TO_F, VS_INT) == VS_FLOAT);
    CHECK(lcu_prim_operand_ok(LP_MOD, VS_INT) && !lcu_prim_operand_ok(LP_MOD, VS_FLOAT));
    CHECK(lcu_prim_operand_ok(LP_AND, VS_BOOL) && !lcu_prim_operand_ok(LP_AND, VS_FLOAT));
    CHECK(!lcu_prim_operand_ok(LP_COUNT, VS_INT));
    CHECK(lcu_prims[LP_SQRT].fmath(4.0) == 2.0 && strcmp(lcu_prims[LP_TANH].math, "vs_tanh") == 0);
}

int main(void)
{
    init_types();
    test_prims();
    test_norm2();
    test_print_expr();
    test_print_soacs();
    test_reject();
    test_names();
    return check_report("lcu");
}

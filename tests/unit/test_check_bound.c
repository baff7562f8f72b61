/* tests/unit/test_check_bound.c — the error bounds of --check
 * (runtime/fused/check_bound.h) on small blocks whose bounds can be
 * written down by hand. */
#include "check.h"
#include "runtime/fused/check_bound.h"
#include "runtime/core/value.h"
#include "runtime/interp/interp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define U 0x1p-53

static Program prog;
static Interp it;
static CbRun *run;

/* Run the body of SRC's MAIN (a block: no control flow) with bounds. */
static void run_block(const char *src, int libm_ulps)
{
    VcError e;
    memset(&prog, 0, sizeof prog);
    if (vc_parse_string("t.vcode", src, strlen(src), &prog, &e) < 0 || vc_link(&prog, &e) < 0) {
        fprintf(stderr, "parse: %s\n", e.msg);
        exit(1);
    }
    prog.warn = NULL;
    InterpOptions o;
    memset(&o, 0, sizeof o);
    interp_init(&it, &prog, &o);
    CbOptions co = { libm_ulps };
    const Func *f = &prog.funcs[prog.entry];
    run = cb_run_block(&it, f->start, f->end - 1, &co);
}

static void done(void)
{
    cb_run_free(run);
    interp_free(&it);
    vc_free(&prog);
}

static const CbBound *at(int depth) { return cb_bound_at(run, depth); }
static Value *val(int depth) { return it.stk[it.sp - 1 - depth]; }
static double fbound(int depth, int64_t i) { return at(depth) && at(depth)->v ? VF(at(depth)->v)[i] : 0.0; }
static int mask(int depth, int64_t i) { return at(depth) && at(depth)->v ? VI(at(depth)->v)[i] : 0; }
static int unverifiable(int depth) { return at(depth) && at(depth)->unverifiable; }

/* Rule 1: gamma, sums and products. */
static void test_scalar_rules(void)
{
    CHECK(cb_gamma(0) == 0.0);
    CHECK(cb_gamma(1) == U / (1 - U));
    CHECK(cb_sum_bound(0, 0, 0) == 0.0);
    CHECK(cb_sum_bound(2, 5.0, 0) == 0.0);       /* two terms: commutative, exact */
    CHECK(cb_sum_bound(1, 5.0, 1e-3) == 1e-3 * (1 + cb_gamma(3)));
    double b3 = cb_sum_bound(3, 6.0, 0);
    CHECK(b3 == cb_gamma(2) * 12.0 * (1 + cb_gamma(5)));
    CHECK(b3 > 2.6e-15 && b3 < 2.7e-15);
    CHECK(cb_prod_bound(2, 6.0, 0) == 0.0);
    CHECK(cb_prod_bound(3, 3.0, 0) > cb_gamma(2) * 6.0 && cb_prod_bound(3, 3.0, 0) < 1.4e-15);
    /* elementwise: exact arguments give exact results */
    CHECK(cb_arith_bound('+', 1.0, 2.0, 3.0, 0, 0) == 0.0);
    CHECK(cb_arith_bound('*', 1.0, 2.0, 2.0, 0, 0) == 0.0);
    double ab = cb_arith_bound('+', 1.0, 2.0, 3.0, 1e-15, 2e-15);
    CHECK(ab >= 3e-15 + 2 * U * 3.0 && ab < 3.8e-15);
    double mb = cb_arith_bound('*', 2.0, 3.0, 6.0, 1e-15, 0);
    CHECK(mb >= 3e-15 + 2 * U * 6.0 && mb < 4.4e-15);
    CHECK(cb_arith_bound('/', 1.0, 1e-20, 1e20, 0, 2e-20) == INFINITY); /* the divisor may be 0 */
    double db = cb_arith_bound('/', 1.0, 2.0, 0.5, 0, 1e-10);
    CHECK(db > 0.25e-10 && db < 0.2501e-10 * 1.0001 + 1e-15);
    /* sqrt of 4 within 1e-10: within about 1e-10 / 4 */
    double sb = cb_unary_bound(OP_SQRT, 4.0, 2.0, 1e-10, 0);
    CHECK(sb > 2.5e-11 && sb < 2.51e-11);
    CHECK(cb_unary_bound(OP_SQRT, 1e-12, 1e-6, 1e-11, 0) == INFINITY); /* may be negative */
    CHECK(cb_unary_bound(OP_EXP, 1.0, exp(1.0), 0, 0) == 0.0);        /* host libm: exact */
    CHECK(cb_unary_bound(OP_EXP, 1.0, exp(1.0), 0, 3) > 2 * 0x1p-52 * exp(1.0)); /* a GPU's: 3 ulp */
    CHECK(cb_unary_bound(OP_SQRT, 4.0, 2.0, 0, 3) == 0.0);           /* sqrt is correctly rounded */
    CHECK(cb_unary_bound(OP_ASIN, 0.9999, asin(0.9999), 1e-3, 0) == INFINITY);
    CHECK(cb_unary_bound(OP_TAN, 1.5707, tan(1.5707), 1e-3, 0) == INFINITY); /* a pole in reach */
    double tb = cb_unary_bound(OP_TAN, 0.0, 0.0, 1e-6, 0);
    CHECK(tb > 1e-6 && tb < 1.0001e-6);
    /* rule 4 */
    CHECK(cb_cmp_may_differ(1.0, 1.0, 0, 0) == 0);
    CHECK(cb_cmp_may_differ(1.0, 1.0 + 5e-16, 1e-15, 0) == 1);
    CHECK(cb_cmp_may_differ(1.0, 1.1, 1e-15, 1e-15) == 0);
    CHECK(cb_f2i_may_differ(OP_FLOOR, 6.0, 1e-15) == 1);
    CHECK(cb_f2i_may_differ(OP_FLOOR, 5.5, 1e-15) == 0);
    CHECK(cb_f2i_may_differ(OP_ROUND, 5.5, 1e-15) == 1);
    CHECK(cb_f2i_may_differ(OP_TRUNC, 0.5, 0.1) == 0);
    CHECK(cb_f2i_may_differ(OP_TRUNC, 0.5, 2.0) == 1);
}

/* A segmented sum: segment [1 2 3] has a bound, [4 -5] is exact (two
 * terms), the empty segment is exact. */
static void test_seg_sum(void)
{
    run_block("FUNC MAIN\n"
              "CONST FLOAT (1.0 2.0 3.0 4.0 -5.0)\n"
              "CONST INT (3 2 0)\n"
              "MAKE_SEGDES\n"
              "+_REDUCE FLOAT\n"
              "RET\n", 0);
    CHECK(val(0)->len == 3 && !unverifiable(0));
    double b0 = cb_gamma(2) * 12.0 * (1 + cb_gamma(5));
    CHECK(fbound(0, 0) == b0 && fbound(0, 1) == 0.0 && fbound(0, 2) == 0.0);
    /* the comparison of the backend's values under that bound */
    Value *mine = val_new(VT_FLOAT, 3);
    VF(mine)[0] = nextafter(6.0, 7.0);  /* a different tree: 1 ulp */
    VF(mine)[1] = -1.0;
    VF(mine)[2] = 0.0;
    double bat = -1;
    CHECK(cb_first_difference(mine, val(0), at(0), 0.0, &bat) == -1);
    VF(mine)[0] = 6.0 + 2 * b0;         /* beyond the bound */
    CHECK(cb_first_difference(mine, val(0), at(0), 0.0, &bat) == 0 && bat == b0);
    VF(mine)[0] = 6.0;
    VF(mine)[1] = nextafter(-1.0, 0.0); /* a two-term sum must be exact */
    CHECK(cb_first_difference(mine, val(0), at(0), 0.0, &bat) == 1 && bat == 0.0);
    CHECK(cb_first_difference(mine, val(0), at(0), 1e-12, &bat) == -1); /* --check-rel on top */
    val_release(mine);
    done();
}

/* Exact blocks allocate nothing: Ints, float elementwise, MAX. */
static void test_exact(void)
{
    run_block("FUNC MAIN\n"
              "CONST FLOAT (0.1 0.2 0.3)\n"
              "CONST FLOAT (0.7 0.11 3.0)\n"
              "COPY 2 0\n"
              "+ FLOAT\n"
              "SQRT\n"
              "* FLOAT\n"
              "CONST INT 3\n"
              "MAKE_SEGDES\n"
              "MAX_REDUCE FLOAT\n"
              "CONST INT (1 2 3)\n"
              "CONST INT 3\n"
              "MAKE_SEGDES\n"
              "+_REDUCE INT\n"
              "RET\n", 0);
    CHECK(it.sp == 3);
    CHECK(at(0) == NULL && at(1) == NULL && at(2) == NULL);
    Value *mine = val_new(VT_FLOAT, 1);
    VF(mine)[0] = nextafter(VF(val(1))[0], 10.0);
    double bat = -1;
    CHECK(cb_first_difference(mine, val(1), at(1), 0.0, &bat) == 0 && bat == 0.0); /* 1 ulp is a difference */
    val_release(mine);
    mine = val_new(VT_INT, 1);
    VI(mine)[0] = VI(val(0))[0] + 1;
    CHECK(cb_first_difference(mine, val(0), at(0), 0.0, &bat) == 0);
    val_release(mine);
    done();
}

/* Bounds move with data, and flow through comparisons, FLOOR, SELECT. */
static void test_propagation(void)
{
    run_block("FUNC MAIN\n"
              "CONST FLOAT (1.0 2.0 3.0 10.0 20.0 30.0 40.0)\n"
              "CONST INT (3 4)\n"
              "MAKE_SEGDES\n"
              "+_REDUCE FLOAT\n"         /* (6 100), bounds b6 b100 */
              "COPY 1 0\n"
              "CONST INT (1 0)\n"
              "CONST INT 2\n"
              "MAKE_SEGDES\n"
              "PERMUTE FLOAT\n"          /* (100 6) */
              "COPY 1 1\n"
              "CONST FLOAT (6.0 50.0)\n"
              "> FLOAT\n"                /* the sums: 6 > 6 may differ; 100 > 50 may not */
              "COPY 1 2\n"
              "FLOOR\n"                  /* floor(6 - b) = 5: may differ; floor(100) likewise */
              "COPY 1 3\n"
              "CONST FLOAT 0.5\n"
              "CONST INT 2\n"
              "MAKE_SEGDES\n"
              "DIST FLOAT\n"
              "* FLOAT\n"                /* (3 50): half the bounds and a rounding */
              "RET\n", 0);
    double b6 = cb_gamma(2) * 12.0 * (1 + cb_gamma(5));
    double b100 = cb_gamma(3) * 200.0 * (1 + cb_gamma(6));
    /* depth 4: the sums, 3: permuted, 2: the comparison, 1: FLOOR, 0: the product */
    CHECK(fbound(4, 0) == b6 && fbound(4, 1) == b100);
    CHECK(fbound(3, 0) == b100 && fbound(3, 1) == b6);
    CHECK(val(2)->type == VT_BOOL && mask(2, 0) == 1 && mask(2, 1) == 0);
    CHECK(val(1)->type == VT_INT && mask(1, 0) == 1 && mask(1, 1) == 1);
    CHECK(fbound(0, 0) >= 0.5 * b6 && fbound(0, 0) < 0.5 * b6 + 4 * U * 3.0);
    CHECK(fbound(0, 1) >= 0.5 * b100 && fbound(0, 1) < 0.5 * b100 + 4 * U * 50.0);
    done();

    run_block("FUNC MAIN\n"
              "CONST FLOAT (1.0 2.0 3.0)\n"
              "CONST INT 3\n"
              "MAKE_SEGDES\n"
              "+_REDUCE FLOAT\n"
              "CONST FLOAT 6.0\n"
              "= FLOAT\n"                /* may differ */
              "CONST FLOAT 1.0\n"
              "CONST FLOAT 1.5\n"
              "SELECT FLOAT\n"           /* either: 0.5 apart */
              "RET\n", 0);
    CHECK(fbound(0, 0) >= 0.5 && fbound(0, 0) < 0.5 + 1e-15);
    done();
}

/* Shapes: a may-differ Int as a length makes the result unverifiable;
 * LENGTH of a bounded value is exact; exact zeros and ranges of *. */
static void test_shapes_and_products(void)
{
    run_block("FUNC MAIN\n"
              "CONST FLOAT (1.0 2.0 3.0)\n"
              "CONST INT 3\n"
              "MAKE_SEGDES\n"
              "+_REDUCE FLOAT\n"
              "COPY 1 0\n"
              "LENGTH FLOAT\n"
              "CPOP 1 1\n"
              "FLOOR\n"
              "MAKE_SEGDES\n"
              "CONST FLOAT 1.0\n"
              "CPOP 1 1\n"
              "DIST FLOAT\n"
              "RET\n", 0);
    CHECK(at(1) == NULL);       /* LENGTH */
    CHECK(unverifiable(0));     /* DIST over a descriptor of FLOOR(6 ± b) */
    done();

    run_block("FUNC MAIN\n"
              "CONST FLOAT (2.0 3.0 0.5 7.0 0.0 1.0e300 1.0e300 1.0e300 1.0e-300)\n"
              "CONST INT (3 3 3)\n"
              "MAKE_SEGDES\n"
              "*_REDUCE FLOAT\n"
              "RET\n", 0);
    CHECK(fbound(0, 0) > 0 && fbound(0, 0) < 1.4e-15); /* 3 terms, product 3 */
    CHECK(fbound(0, 1) == 0.0);                        /* an exact zero */
    CHECK(fbound(0, 2) == INFINITY);                   /* 1e300·1e300 overflows in one order */
    done();

    run_block("FUNC MAIN\n"
              "CONST FLOAT (1.0 2.0 3.0 4.0)\n"
              "CONST INT 4\n"
              "MAKE_SEGDES\n"
              "+_SCAN FLOAT\n"
              "RET\n", 0);
    /* prefixes of 0, 1, 2 terms are exact; of 3 terms: gamma(2)·2·6 */
    CHECK(fbound(0, 0) == 0 && fbound(0, 1) == 0 && fbound(0, 2) == 0);
    CHECK(fbound(0, 3) == cb_gamma(2) * 12.0 * (1 + cb_gamma(5)));
    done();
}

/* A may-differ index of a gather makes that element anything; INDEX from
 * a may-differ init or stride; B_TO_I keeps the mask. */
static void test_gather_and_index(void)
{
    run_block("FUNC MAIN\n"
              "CONST FLOAT (1.0 2.0 3.0 4.0 -5.0)\n"
              "CONST INT (3 2 0)\n"
              "MAKE_SEGDES\n"
              "+_REDUCE FLOAT\n"          /* (6 -1 0), 6 bounded */
              "CONST FLOAT (6.0 0.0 0.0)\n"
              "> FLOAT\n"
              "B_TO_I\n"                  /* (0 0 0), the first may differ */
              "COPY 1 0\n"
              "CONST FLOAT (10.0 20.0)\n"
              "CPOP 1 1\n"
              "CONST INT 2\n"
              "MAKE_SEGDES\n"
              "CONST INT 3\n"
              "MAKE_SEGDES\n"
              "BPERMUTE FLOAT\n"          /* (10 10 10): the first may be 20 */
              "CPOP 1 1\n"
              "COPY 1 0\n"
              "CONST INT (2 2 2)\n"
              "MAKE_SEGDES\n"
              "INDEX\n"                   /* (0 0 0 0 0 0): segment 0 may differ */
              "RET\n", 0);
    CHECK(it.sp == 2 && val(1)->type == VT_FLOAT && val(1)->len == 3);
    CHECK(fbound(1, 0) == INFINITY && fbound(1, 1) == 0.0 && fbound(1, 2) == 0.0);
    CHECK(val(0)->type == VT_INT && val(0)->len == 6);
    CHECK(mask(0, 0) == 1 && mask(0, 1) == 1 && mask(0, 2) == 0 && mask(0, 5) == 0);
    done();
}

/* Rule 3: a GPU's libm. */
static void test_libm(void)
{
    const char *src = "FUNC MAIN\nCONST FLOAT (0.5 1.0)\nEXP\nCOPY 1 0\nSQRT\nRET\n";
    run_block(src, 0);
    CHECK(at(0) == NULL && at(1) == NULL);
    done();
    run_block(src, 3);
    CHECK(fbound(1, 1) >= 3 * 2 * 0x1p-52 * exp(1.0) && fbound(1, 1) < 1e-14);
    /* sqrt of an inexact argument: about half its relative bound */
    CHECK(fbound(0, 1) > 0 && fbound(0, 1) < fbound(1, 1));
    done();
}

static void test_perturb_parse(void)
{
    CbPerturb p;
    CHECK(cb_perturb_parse(NULL, &p) == 0 && p.kind == CB_PERTURB_NONE);
    CHECK(cb_perturb_parse("fsum:1e-14", &p) == 0 && p.kind == CB_PERTURB_FSUM && p.amount == 1e-14);
    CHECK(cb_perturb_parse("ulps:2", &p) == 0 && p.kind == CB_PERTURB_ULPS && p.amount == 2);
    CHECK(cb_perturb_parse("int:-1", &p) == 0 && p.kind == CB_PERTURB_INT && p.amount == -1);
    CHECK(cb_perturb_parse("int:1.5", &p) < 0);
    CHECK(cb_perturb_parse("fsum:", &p) < 0);
    CHECK(cb_perturb_parse("bogus:1", &p) < 0);
}

int main(void)
{
    mem_set_limit(INT64_C(1) << 32);
    test_scalar_rules();
    test_seg_sum();
    test_exact();
    test_propagation();
    test_shapes_and_products();
    test_gather_and_index();
    test_libm();
    test_perturb_parse();
    CHECK(mem_used() == 0);
    return check_report("test_check_bound");
}

/* tests/unit/test_translate.c — the λcu translation of basic blocks: the
 * lowering of each VCODE instruction family (fusion off), the rewrite
 * rules on small blocks whose fused form is written down here (fusion on),
 * and the plan's static figures.
 *
 * Every test program is
 *     FUNC MAIN  <pushes the inputs>  CALL G  RET
 *     FUNC G     <the block under test>       RET
 * and the block of G is planned. G's inputs are numbered by their depth on
 * entry: x0 is the top of the stack (MAIN's last push), x1 the entry below
 * it, ...; the values G computes follow in program order (an instruction's
 * results in order), and extra plan variables (RAND's stream) come last.
 * The expected texts were worked out by hand from the lowering table at the
 * top of translate/lower.c and the printer format at the top of
 * translate/lcu_print.c, not copied from the program's output. */
#include "check.h"
#include "translate/dfg.h"
#include "translate/lcu.h"
#include "translate/plan.h"
#include "vcode/optable.h"
#include "vcode/program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- harness -------------------------------------------------------------- */

typedef struct {
    Program p;
    BlockPlan bp;
    int parsed;         /* p must be freed */
    int planned;        /* bp must be freed */
} Case;

/* Parse MAIN/G as above and plan G's single block. Returns 0, or -1 (with a
 * message on stderr) when the program does not parse, G has not exactly one
 * block with vector work, or planning fails. */
static int reassoc_opt; /* PlanOptions.float_reassoc of the next plans */

static int plan_g(const char *main_body, const char *g_body, int fusion, Case *c)
{
    memset(c, 0, sizeof *c);
    size_t n = strlen(main_body) + strlen(g_body) + 64;
    char *src = malloc(n);
    if (!src)
        return -1;
    snprintf(src, n, "FUNC MAIN\n%sCALL G\nRET\nFUNC G\n%sRET\n", main_body, g_body);
    VcError e;
    int rc = vc_parse_string("t.vcode", src, strlen(src), &c->p, &e);
    c->parsed = 1;
    if (rc == 0)
        rc = vc_link(&c->p, &e);
    if (rc == 0)
        rc = vc_check(&c->p, &e);
    free(src);
    if (rc != 0) {
        fprintf(stderr, "test program does not check: line %d: %s\n", e.line, e.msg);
        return -1;
    }
    int g = -1;
    for (int f = 0; f < c->p.nfuncs; f++)
        if (c->p.funcs[f].live && strcmp(c->p.funcs[f].name, "G") == 0)
            g = f;
    Block *blocks = NULL;
    int nb = dfg_blocks(&c->p, &blocks), which = -1, count = 0;
    for (int b = 0; b < nb; b++)
        if (blocks[b].func == g && blocks[b].nvector > 0) {
            which = b;
            count++;
        }
    if (count != 1) {
        fprintf(stderr, "G has %d blocks with vector work, not 1\n", count);
        free(blocks);
        return -1;
    }
    PlanOptions opt;
    memset(&opt, 0, sizeof opt);
    opt.fusion = fusion;
    opt.float_reassoc = reassoc_opt;
    opt.fuse.max_nodes = 60;
    opt.fuse.trace = NULL;
    opt.trace = NULL;
    char msg[512];
    rc = plan_build(&c->p, &blocks[which], &opt, &c->bp, msg, sizeof msg);
    free(blocks);
    if (rc != 0) {
        fprintf(stderr, "plan_build: %s\n", msg);
        return -1;
    }
    c->planned = 1;
    return 0;
}

static void case_free(Case *c)
{
    if (c->planned)
        plan_free(&c->bp);
    if (c->parsed)
        vc_free(&c->p);
    memset(c, 0, sizeof *c);
}

/* The plan's steps as text: kernels as lcu_print_kernel prints them (with
 * the parameter types), host steps as "host OP args -> results". */
static char *plan_text(const BlockPlan *bp)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    for (int i = 0; i < bp->nsteps; i++) {
        const PlanStep *st = &bp->steps[i];
        if (st->kind == STEP_KERNEL) {
            lcu_print_kernel(f, st->k, bp->types);
            continue;
        }
        const DfgNode *nd = &bp->dfg.nodes[st->node];
        fprintf(f, "host %s", vc_ops[nd->op].name);
        for (int a = 0; a < nd->nargs; a++)
            fprintf(f, " x%d", nd->args[a]);
        fputs(" ->", f);
        for (int r = 0; r < nd->nres; r++)
            fprintf(f, " x%d", nd->res[r]);
        fputc('\n', f);
    }
    fclose(f);
    return buf;
}

/* Plan, print, compare with WANT; on a mismatch show both texts. */
static int plan_is(const char *main_body, const char *g_body, int fusion, const char *want, int line)
{
    Case c;
    int ok = 0;
    if (plan_g(main_body, g_body, fusion, &c) == 0) {
        char *got = plan_text(&c.bp);
        ok = got && strcmp(got, want) == 0;
        if (!ok)
            fprintf(stderr, "%s:%d: plan of G =\n%s\n--- expected:\n%s\n--- got:\n%s---\n", __FILE__, line,
                    g_body, want, got ? got : "(null)");
        free(got);
    } else {
        fprintf(stderr, "%s:%d: no plan for G =\n%s\n", __FILE__, line, g_body);
    }
    case_free(&c);
    return ok;
}

#define CHECK_PLAN(main_body, g_body, fusion, want) CHECK(plan_is(main_body, g_body, fusion, want, __LINE__))

/* The figures of a plan: kernels and arrays, unfused and fused. */
static int figures_are(const char *main_body, const char *g_body, int fusion, int ku, int kf, int au, int af,
                       int line)
{
    Case c;
    int ok = 0;
    if (plan_g(main_body, g_body, fusion, &c) == 0) {
        const BlockPlan *b = &c.bp;
        ok = b->kernels_unfused == ku && b->kernels_fused == kf && b->arrays_unfused == au &&
             b->arrays_fused == af;
        if (!ok)
            fprintf(stderr, "%s:%d: figures %d %d %d %d, expected %d %d %d %d\n", __FILE__, line,
                    b->kernels_unfused, b->kernels_fused, b->arrays_unfused, b->arrays_fused, ku, kf, au, af);
    }
    case_free(&c);
    return ok;
}

#define CHECK_FIGURES(main_body, g_body, fusion, ku, kf, au, af) \
    CHECK(figures_are(main_body, g_body, fusion, ku, kf, au, af, __LINE__))

/* Inputs pushed by MAIN, bottom first (G sees the last one as x0). */
#define INTS2 "CONST INT (1 2 3)\nCONST INT (4 5 6)\n"
#define FLOATS2 "CONST FLOAT (1.0 2.0)\nCONST FLOAT (4.0 8.0)\n"
#define BOOLS2 "CONST BOOL (T F)\nCONST BOOL (T T)\n"

/* ---- 1. lowering, fusion off --------------------------------------------- */

static void test_elementwise(void)
{
    /* a1 is the deeper operand (x1), a2 the top (x0); the MAP iterates
     * over a1's length. */
    CHECK_PLAN(INTS2, "+ INT\n", 0,
               "kernel K0 (x0 : [int], x1 : [int]) -> (x2) {\n"
               "  let x2 = MAP { i => x1[i] + x0[i] using x0, x1 } (#x1)\n"
               "  return (x2)\n"
               "}\n");
    CHECK_PLAN(FLOATS2, "/ FLOAT\n", 0,
               "kernel K0 (x0 : [float], x1 : [float]) -> (x2) {\n"
               "  let x2 = MAP { i => x1[i] / x0[i] using x0, x1 } (#x1)\n"
               "  return (x2)\n"
               "}\n");
    /* a comparison of ints: int operands, bool result */
    CHECK_PLAN(INTS2, "< INT\n", 0,
               "kernel K0 (x0 : [int], x1 : [int]) -> (x2) {\n"
               "  let x2 = MAP { i => x1[i] < x0[i] using x0, x1 } (#x1)\n"
               "  return (x2)\n"
               "}\n");
    /* AND: logical on bools (&&), bitwise on ints (&) */
    CHECK_PLAN(BOOLS2, "AND BOOL\n", 0,
               "kernel K0 (x0 : [bool], x1 : [bool]) -> (x2) {\n"
               "  let x2 = MAP { i => x1[i] && x0[i] using x0, x1 } (#x1)\n"
               "  return (x2)\n"
               "}\n");
    CHECK_PLAN(INTS2, "AND INT\n", 0,
               "kernel K0 (x0 : [int], x1 : [int]) -> (x2) {\n"
               "  let x2 = MAP { i => x1[i] & x0[i] using x0, x1 } (#x1)\n"
               "  return (x2)\n"
               "}\n");
    /* unary: one input x0, the result x1 */
    CHECK_PLAN("CONST BOOL (T F)\n", "NOT BOOL\n", 0,
               "kernel K0 (x0 : [bool]) -> (x1) {\n"
               "  let x1 = MAP { i => not(x0[i]) using x0 } (#x0)\n"
               "  return (x1)\n"
               "}\n");
    CHECK_PLAN("CONST FLOAT (1.5 -1.5)\n", "FLOOR\n", 0,
               "kernel K0 (x0 : [float]) -> (x1) {\n"
               "  let x1 = MAP { i => floor(x0[i]) using x0 } (#x0)\n"
               "  return (x1)\n"
               "}\n");
    CHECK_PLAN("CONST INT (1 2)\n", "I_TO_F\n", 0,
               "kernel K0 (x0 : [int]) -> (x1) {\n"
               "  let x1 = MAP { i => i_to_f(x0[i]) using x0 } (#x0)\n"
               "  return (x1)\n"
               "}\n");
    /* SELECT flags a b: flags deepest (x2), b on top (x0) */
    CHECK_PLAN("CONST BOOL (T F)\nCONST INT (1 2)\nCONST INT (3 4)\n", "SELECT INT\n", 0,
               "kernel K0 (x0 : [int], x1 : [int], x2 : [bool]) -> (x3) {\n"
               "  let x3 = MAP { i => if x2[i] then x1[i] else x0[i] using x0, x1, x2 } (#x2)\n"
               "  return (x3)\n"
               "}\n");
}

static void test_rand(void)
{
    /* RAND: the stream is an extra variable (x2, after the graph's x0 and
     * x1); the library kernel draws it, the MAP takes it modulo the limit. */
    CHECK_PLAN("CONST INT (10 20)\n", "RAND\n", 0,
               "kernel K0 (x0 : [int]) -> (x2) {\n"
               "  let x2 = LIB rand_stream(x0)\n"
               "  return (x2)\n"
               "}\n"
               "kernel K1 (x0 : [int], x2 : [int]) -> (x1) {\n"
               "  let x1 = MAP { i => randmod(x2[i], x0[i]) using x0, x2 } (#x0)\n"
               "  return (x1)\n"
               "}\n");
    CHECK_FIGURES("CONST INT (10 20)\n", "RAND\n", 0, 2, 2, 2, 2);
}

static void test_scans_reductions(void)
{
    /* data (x1) and a descriptor (x0) of 2 segments */
    static const struct {
        const char *data;   /* MAIN's data vector */
        const char *op;     /* G */
        const char *want;   /* the kernel */
    } t[] = {
        {"CONST INT (1 2 3)\n", "+_SCAN INT\n",
         "kernel K0 (x0 : segdes, x1 : [int]) -> (x2) {\n"
         "  let x2 = SEG_SCAN { i => x1[i] using x1 } (iadd) x0\n"
         "  return (x2)\n}\n"},
        {"CONST INT (1 2 3)\n", "*_REDUCE INT\n",
         "kernel K0 (x0 : segdes, x1 : [int]) -> (x2) {\n"
         "  let x2 = SEG_REDUCE { i => x1[i] using x1 } (imul) x0\n"
         "  return (x2)\n}\n"},
        {"CONST INT (1 2 3)\n", "MAX_REDUCE INT\n",
         "kernel K0 (x0 : segdes, x1 : [int]) -> (x2) {\n"
         "  let x2 = SEG_REDUCE { i => x1[i] using x1 } (imax) x0\n"
         "  return (x2)\n}\n"},
        {"CONST INT (1 2 3)\n", "MIN_REDUCE INT\n",
         "kernel K0 (x0 : segdes, x1 : [int]) -> (x2) {\n"
         "  let x2 = SEG_REDUCE { i => x1[i] using x1 } (imin) x0\n"
         "  return (x2)\n}\n"},
        {"CONST INT (1 2 3)\n", "AND_SCAN INT\n",
         "kernel K0 (x0 : segdes, x1 : [int]) -> (x2) {\n"
         "  let x2 = SEG_SCAN { i => x1[i] using x1 } (iand) x0\n"
         "  return (x2)\n}\n"},
        {"CONST INT (1 2 3)\n", "OR_REDUCE INT\n",
         "kernel K0 (x0 : segdes, x1 : [int]) -> (x2) {\n"
         "  let x2 = SEG_REDUCE { i => x1[i] using x1 } (ior) x0\n"
         "  return (x2)\n}\n"},
        {"CONST INT (1 2 3)\n", "XOR_SCAN INT\n",
         "kernel K0 (x0 : segdes, x1 : [int]) -> (x2) {\n"
         "  let x2 = SEG_SCAN { i => x1[i] using x1 } (ixor) x0\n"
         "  return (x2)\n}\n"},
        {"CONST FLOAT (1.0 2.0 3.0)\n", "+_REDUCE FLOAT\n",
         "kernel K0 (x0 : segdes, x1 : [float]) -> (x2) {\n"
         "  let x2 = SEG_REDUCE { i => x1[i] using x1 } (fadd) x0\n"
         "  return (x2)\n}\n"},
        {"CONST FLOAT (1.0 2.0 3.0)\n", "*_SCAN FLOAT\n",
         "kernel K0 (x0 : segdes, x1 : [float]) -> (x2) {\n"
         "  let x2 = SEG_SCAN { i => x1[i] using x1 } (fmul) x0\n"
         "  return (x2)\n}\n"},
        {"CONST FLOAT (1.0 2.0 3.0)\n", "MAX_SCAN FLOAT\n",
         "kernel K0 (x0 : segdes, x1 : [float]) -> (x2) {\n"
         "  let x2 = SEG_SCAN { i => x1[i] using x1 } (fmax) x0\n"
         "  return (x2)\n}\n"},
        {"CONST FLOAT (1.0 2.0 3.0)\n", "MIN_SCAN FLOAT\n",
         "kernel K0 (x0 : segdes, x1 : [float]) -> (x2) {\n"
         "  let x2 = SEG_SCAN { i => x1[i] using x1 } (fmin) x0\n"
         "  return (x2)\n}\n"},
        {"CONST BOOL (T F T)\n", "AND_REDUCE BOOL\n",
         "kernel K0 (x0 : segdes, x1 : [bool]) -> (x2) {\n"
         "  let x2 = SEG_REDUCE { i => x1[i] using x1 } (band) x0\n"
         "  return (x2)\n}\n"},
        {"CONST BOOL (T F T)\n", "OR_SCAN BOOL\n",
         "kernel K0 (x0 : segdes, x1 : [bool]) -> (x2) {\n"
         "  let x2 = SEG_SCAN { i => x1[i] using x1 } (bor) x0\n"
         "  return (x2)\n}\n"},
        {"CONST BOOL (T F T)\n", "XOR_REDUCE BOOL\n",
         "kernel K0 (x0 : segdes, x1 : [bool]) -> (x2) {\n"
         "  let x2 = SEG_REDUCE { i => x1[i] using x1 } (bxor) x0\n"
         "  return (x2)\n}\n"},
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        char main_body[128];
        snprintf(main_body, sizeof main_body, "%sCONST INT (2 1)\nMAKE_SEGDES\n", t[k].data);
        CHECK_PLAN(main_body, t[k].op, 0, t[k].want);
    }
}

static void test_permutes(void)
{
    /* PERMUTE data idx sd: x0 sd, x1 idx, x2 data; destination = source */
    CHECK_PLAN("CONST INT (1 2 3)\nCONST INT (2 0 1)\nCONST INT (3)\nMAKE_SEGDES\n", "PERMUTE INT\n", 0,
               "kernel K0 (x0 : segdes, x1 : [int], x2 : [int]) -> (x3) {\n"
               "  let x3 = SEG_PERMUTE { i => x2[i] using x2 } { i => x1[i] using x1 } x0 -> x0\n"
               "  return (x3)\n"
               "}\n");
    /* DPERMUTE data idx dflt ssd dsd: x0 dsd, x1 ssd, x2 dflt, x3 idx, x4 data */
    CHECK_PLAN("CONST FLOAT (1.0 2.0)\nCONST INT (2 0)\nCONST FLOAT (9.0 9.0 9.0)\n"
               "CONST INT (2)\nMAKE_SEGDES\nCONST INT (3)\nMAKE_SEGDES\n",
               "DPERMUTE FLOAT\n", 0,
               "kernel K0 (x0 : segdes, x1 : segdes, x2 : [float], x3 : [int], x4 : [float]) -> (x5) {\n"
               "  let x5 = SEG_PERMUTE { i => x4[i] using x4 } { i => x3[i] using x3 } x1 -> x0 default x2\n"
               "  return (x5)\n"
               "}\n");
    /* FPERMUTE data idx flags ssd dsd: x0 dsd, x1 ssd, x2 flags, x3 idx, x4 data */
    CHECK_PLAN("CONST INT (1 2 3)\nCONST INT (1 0 2)\nCONST BOOL (T F T)\n"
               "CONST INT (3)\nMAKE_SEGDES\nCONST INT (3)\nMAKE_SEGDES\n",
               "FPERMUTE INT\n", 0,
               "kernel K0 (x0 : segdes, x1 : segdes, x2 : [bool], x3 : [int], x4 : [int]) -> (x5) {\n"
               "  let x5 = SEG_PERMUTE { i => x4[i] using x4 } { i => x3[i] using x3 } { i => x2[i] using x2 } "
               "x1 -> x0\n"
               "  return (x5)\n"
               "}\n");
    /* DFPERMUTE data idx flags dflt ssd dsd: x0 dsd, x1 ssd, x2 dflt,
     * x3 flags, x4 idx, x5 data */
    CHECK_PLAN("CONST BOOL (T F)\nCONST INT (1 0)\nCONST BOOL (T T)\nCONST BOOL (F F)\n"
               "CONST INT (2)\nMAKE_SEGDES\nCONST INT (2)\nMAKE_SEGDES\n",
               "DFPERMUTE BOOL\n", 0,
               "kernel K0 (x0 : segdes, x1 : segdes, x2 : [bool], x3 : [bool], x4 : [int], x5 : [bool]) -> (x6) {\n"
               "  let x6 = SEG_PERMUTE { i => x5[i] using x5 } { i => x4[i] using x4 } { i => x3[i] using x3 } "
               "x1 -> x0 default x2\n"
               "  return (x6)\n"
               "}\n");
    /* BPERMUTE data idx ssd dsd: x0 dsd, x1 ssd, x2 idx, x3 data; a MAP
     * over the destination (the index vector's length) that gathers from
     * the source segment of the same number. */
    CHECK_PLAN("CONST INT (10 20 30)\nCONST INT (2 0)\nCONST INT (3)\nMAKE_SEGDES\nCONST INT (2)\nMAKE_SEGDES\n",
               "BPERMUTE INT\n", 0,
               "kernel K0 (x0 : segdes, x1 : segdes, x2 : [int], x3 : [int]) -> (x4) {\n"
               "  let x4 = MAP { i => let t0 = seg_of(x0, i) in x3[seg_start(x1, t0) + checkidx(x2[i], "
               "seg_len(x1, t0))] using x0, x1, x2, x3 } (#x2)\n"
               "  return (x4)\n"
               "}\n");
    /* BFPERMUTE data idx flags ssd dsd: x0 dsd, x1 ssd, x2 flags, x3 idx,
     * x4 data; where the flag is off, zero of the type (0.0 here) */
    CHECK_PLAN("CONST FLOAT (1.5 2.5 3.5)\nCONST INT (2 0)\nCONST BOOL (T F)\n"
               "CONST INT (3)\nMAKE_SEGDES\nCONST INT (2)\nMAKE_SEGDES\n",
               "BFPERMUTE FLOAT\n", 0,
               "kernel K0 (x0 : segdes, x1 : segdes, x2 : [bool], x3 : [int], x4 : [float]) -> (x5) {\n"
               "  let x5 = MAP { i => if x2[i] then (let t0 = seg_of(x0, i) in x4[seg_start(x1, t0) + "
               "checkidx(x3[i], seg_len(x1, t0))]) else 0.0 using x0, x1, x2, x3, x4 } (#x3)\n"
               "  return (x5)\n"
               "}\n");
}

static void test_vector_ops(void)
{
    /* EXTRACT data idx sd: one iteration per segment */
    CHECK_PLAN("CONST INT (1 2 3 4 5)\nCONST INT (1 0)\nCONST INT (3 2)\nMAKE_SEGDES\n", "EXTRACT INT\n", 0,
               "kernel K0 (x0 : segdes, x1 : [int], x2 : [int]) -> (x3) {\n"
               "  let x3 = MAP { i => x2[seg_start(x0, i) + checkidx(x1[i], seg_len(x0, i))] "
               "using x0, x1, x2 } (m x0)\n"
               "  return (x3)\n"
               "}\n");
    /* REPLACE data idx vals sd: x0 sd, x1 vals, x2 idx, x3 data; a host
     * step (in place when the block owns the data), never a kernel that
     * copies the whole vector */
    CHECK_PLAN("CONST FLOAT (1.0 2.0 3.0)\nCONST INT (0 1)\nCONST FLOAT (7.0 8.0)\nCONST INT (1 2)\nMAKE_SEGDES\n",
               "REPLACE FLOAT\n", 0, "host REPLACE x3 x2 x1 x0 -> x4\n");
    /* ... and the kernels around it stay apart: the MAP that feeds its
     * values, and the MAP that reads its result */
    CHECK_PLAN("CONST FLOAT (1.0 2.0 3.0)\nCONST INT (0 1)\nCONST FLOAT (7.0 8.0)\nCONST INT (1 2)\nMAKE_SEGDES\n",
               "COPY 1 1\nCOPY 1 0\n+ FLOAT\nCOPY 1 1\nPOP 2 2\nREPLACE FLOAT\nCOPY 1 0\n+ FLOAT\n", 1,
               "kernel K0 (x1 : [float]) -> (x4) {\n"
               "  let x4 = MAP { i => x1[i] + x1[i] using x1 } (#x1)\n"
               "  return (x4)\n"
               "}\n"
               "host REPLACE x3 x2 x4 x0 -> x5\n"
               "kernel K1 (x5 : [float]) -> (x6) {\n"
               "  let x6 = MAP { i => x5[i] + x5[i] using x5 } (#x5)\n"
               "  return (x6)\n"
               "}\n");
    /* DIST vals sd: over the elements of sd */
    CHECK_PLAN("CONST INT (4 5)\nCONST INT (2 3)\nMAKE_SEGDES\n", "DIST INT\n", 0,
               "kernel K0 (x0 : segdes, x1 : [int]) -> (x2) {\n"
               "  let x2 = MAP { i => x1[seg_of(x0, i)] using x0, x1 } (n x0)\n"
               "  return (x2)\n"
               "}\n");
    /* INDEX init stride sd: x0 sd, x1 stride, x2 init */
    CHECK_PLAN("CONST INT (0 10)\nCONST INT (1 2)\nCONST INT (2 3)\nMAKE_SEGDES\n", "INDEX\n", 0,
               "kernel K0 (x0 : segdes, x1 : [int], x2 : [int]) -> (x3) {\n"
               "  let x3 = MAP { i => let t0 = seg_of(x0, i) in x2[t0] + ((i - seg_start(x0, t0)) * x1[t0]) "
               "using x0, x1, x2 } (n x0)\n"
               "  return (x3)\n"
               "}\n");
    /* PACK data flags sd: x0 sd, x1 flags, x2 data; two results, the new
     * descriptor last */
    CHECK_PLAN("CONST FLOAT (1.0 2.0 3.0)\nCONST BOOL (T F T)\nCONST INT (3)\nMAKE_SEGDES\n", "PACK FLOAT\n", 0,
               "kernel K0 (x0 : segdes, x1 : [bool], x2 : [float]) -> (x3, x4) {\n"
               "  let (x3, x4) = SEG_FILTER { i => x2[i] using x2 } { i => x1[i] using x1 } x0\n"
               "  return (x3, x4)\n"
               "}\n");
    /* RANK_UP / RANK_DOWN data sd: library kernels, arguments in VCODE order */
    CHECK_PLAN("CONST INT (3 1 2)\nCONST INT (3)\nMAKE_SEGDES\n", "RANK_UP INT\n", 0,
               "kernel K0 (x0 : segdes, x1 : [int]) -> (x2) {\n"
               "  let x2 = LIB rank_up(x1, x0)\n"
               "  return (x2)\n"
               "}\n");
    CHECK_PLAN("CONST FLOAT (3.0 1.0)\nCONST INT (2)\nMAKE_SEGDES\n", "RANK_DOWN FLOAT\n", 0,
               "kernel K0 (x0 : segdes, x1 : [float]) -> (x2) {\n"
               "  let x2 = LIB rank_down(x1, x0)\n"
               "  return (x2)\n"
               "}\n");
}

static void test_host_steps(void)
{
    /* G gets D (x0) and builds a one-segment descriptor of its length. */
    const char *g = "COPY 1 0\n"        /* D D                          */
                    "LENGTH INT\n"      /* D n          n = x1          */
                    "MAKE_SEGDES\n"     /* D S          S = x2          */
                    "COPY 2 0\n"        /* D S D S                      */
                    "+_REDUCE INT\n"    /* D S R        R = x3          */
                    "COPY 1 1\n"        /* D S R S                      */
                    "LENGTHS\n"         /* D S R L      L = x4          */
                    "CONST INT 7\n";    /* D S R L 7    7 = x5          */
    const char *want = "host LENGTH x0 -> x1\n"
                       "host MAKE_SEGDES x1 -> x2\n"
                       "kernel K0 (x0 : [int], x2 : segdes) -> (x3) {\n"
                       "  let x3 = SEG_REDUCE { i => x0[i] using x0 } (iadd) x2\n"
                       "  return (x3)\n"
                       "}\n"
                       "host LENGTHS x2 -> x4\n"
                       "host CONST -> x5\n";
    CHECK_PLAN("CONST INT (1 2 3)\n", g, 0, want);
    CHECK_PLAN("CONST INT (1 2 3)\n", g, 1, want);   /* one kernel: nothing to fuse */
    Case c;
    CHECK(plan_g("CONST INT (1 2 3)\n", g, 0, &c) == 0);
    if (c.planned) {
        static const StepKind kinds[] = {STEP_HOST, STEP_HOST, STEP_KERNEL, STEP_HOST, STEP_HOST};
        static const Opcode ops[] = {OP_LENGTH, OP_MAKE_SEGDES, OP_PLUS_REDUCE, OP_LENGTHS, OP_CONST};
        CHECK(c.bp.nsteps == 5);
        for (int i = 0; i < c.bp.nsteps && i < 5; i++) {
            CHECK(c.bp.steps[i].kind == kinds[i]);
            CHECK(c.bp.dfg.nodes[c.bp.steps[i].node].op == ops[i]);
            CHECK((c.bp.steps[i].k != NULL) == (kinds[i] == STEP_KERNEL));
        }
        CHECK(c.bp.kernels_unfused == 1 && c.bp.kernels_fused == 1);
        /* CONST INT 7 is a scalar; D S R L 7 all stay on the stack */
        CHECK(c.bp.dfg.nodes[4].scalar == 1);
        CHECK(c.bp.dfg.nin == 1 && c.bp.dfg.nout == 5);
        CHECK(c.bp.types[2].kind == LV_SEGDES && c.bp.types[4].kind == LV_ARRAY && c.bp.types[4].base == VS_INT);
    }
    case_free(&c);
}

static void test_stack_shuffles(void)
{
    /* MAIN pushes A B C (C on top): in G, x0 = C, x1 = B, x2 = A. The
     * shuffles vanish; only the subtraction A - B is left. */
    const char *main_body = "CONST INT (1 2)\nCONST INT (3 4)\nCONST FLOAT (0.5)\n";
    const char *g = "CPOP 1 2\n"    /* B C A    */
                    "POP 1 1\n"     /* B A      */
                    "COPY 1 1\n"    /* B A B    */
                    "- INT\n";      /* B A-B    A-B = x3 */
    CHECK_PLAN(main_body, g, 0,
               "kernel K0 (x1 : [int], x2 : [int]) -> (x3) {\n"
               "  let x3 = MAP { i => x2[i] - x1[i] using x1, x2 } (#x2)\n"
               "  return (x3)\n"
               "}\n");
    Case c;
    CHECK(plan_g(main_body, g, 0, &c) == 0);
    if (c.planned) {
        const Dfg *d = &c.bp.dfg;
        CHECK(d->nin == 3 && d->nvals == 4 && d->nnodes == 1);
        CHECK(d->nout == 2 && d->out[0] == 1 && d->out[1] == 3);
        CHECK(d->producer[0] == -1 && d->producer[1] == -1 && d->producer[2] == -1 && d->producer[3] == 0);
        /* C is only dropped: its type stays unknown */
        CHECK(d->types[0] == DT_UNKNOWN && d->types[1] == DT_INT && d->types[2] == DT_INT);
        CHECK(!c.bp.typed[0] && c.bp.typed[1] && c.bp.typed[3]);
        CHECK(c.bp.nsteps == 1 && c.bp.kernels_unfused == 1);
    }
    case_free(&c);

    /* Inputs discovered in the order of depth even when the deep one is
     * touched first: COPY 1 2 reads depth 2 (x2) before anything else. */
    CHECK_PLAN("CONST INT (1)\nCONST INT (2)\nCONST INT (3)\n",
               "COPY 1 2\n"         /* x2 x1 x0 x2      */
               "* INT\n",           /* x2 x1 (x0*x2)    */
               0,
               "kernel K0 (x0 : [int], x2 : [int]) -> (x3) {\n"
               "  let x3 = MAP { i => x0[i] * x2[i] using x0, x2 } (#x0)\n"
               "  return (x3)\n"
               "}\n");

    /* Inputs met lazily: the block first reads only B (the top, x0), then
     * A below it; A is still x1 and the computed values follow. */
    CHECK_PLAN(INTS2,
               "COPY 1 0\n"        /* A B B            */
               "+ INT\n"           /* A E      E = B + B = x2 */
               "* INT\n",          /* Q        Q = A * E = x3 */
               0,
               "kernel K0 (x0 : [int]) -> (x2) {\n"
               "  let x2 = MAP { i => x0[i] + x0[i] using x0 } (#x0)\n"
               "  return (x2)\n"
               "}\n"
               "kernel K1 (x1 : [int], x2 : [int]) -> (x3) {\n"
               "  let x3 = MAP { i => x1[i] * x2[i] using x1, x2 } (#x1)\n"
               "  return (x3)\n"
               "}\n");

    /* A result nobody keeps is still computed, but not returned. */
    CHECK_PLAN(INTS2, "COPY 2 0\n+ INT\nPOP 1 0\n", 0,
               "kernel K0 (x0 : [int], x1 : [int]) -> () {\n"
               "  let x2 = MAP { i => x1[i] + x0[i] using x0, x1 } (#x1)\n"
               "  return ()\n"
               "}\n");
}

/* ---- 2. rewrite rules, fusion on ------------------------------------------ */

/* MAP-MAP: three elementwise ops become one MAP; each producer is
 * substituted as a let in its consumer. A = x1, B = x0. */
#define MAPMAP_G                                            \
    "COPY 2 0\n"        /* A B A B                     */   \
    "+ FLOAT\n"         /* A B S       S = A + B = x2  */   \
    "* FLOAT\n"         /* A P         P = B * S = x3  */   \
    "- FLOAT\n"         /* D           D = A - P = x4  */

static void test_map_map(void)
{
    CHECK_PLAN(FLOATS2, MAPMAP_G, 0,
               "kernel K0 (x0 : [float], x1 : [float]) -> (x2) {\n"
               "  let x2 = MAP { i => x1[i] + x0[i] using x0, x1 } (#x1)\n"
               "  return (x2)\n"
               "}\n"
               "kernel K1 (x0 : [float], x2 : [float]) -> (x3) {\n"
               "  let x3 = MAP { i => x0[i] * x2[i] using x0, x2 } (#x0)\n"
               "  return (x3)\n"
               "}\n"
               "kernel K2 (x1 : [float], x3 : [float]) -> (x4) {\n"
               "  let x4 = MAP { i => x1[i] - x3[i] using x1, x3 } (#x1)\n"
               "  return (x4)\n"
               "}\n");
    CHECK_PLAN(FLOATS2, MAPMAP_G, 1,
               "kernel K0 (x0 : [float], x1 : [float]) -> (x4) {\n"
               "  let x4 = MAP { i => x1[i] - (x0[i] * (x1[i] + x0[i])) "
               "using x0, x1 } (#x1)\n"
               "  return (x4)\n"
               "}\n");
    CHECK_FIGURES(FLOATS2, MAPMAP_G, 1, 3, 1, 3, 1);
    CHECK_FIGURES(FLOATS2, MAPMAP_G, 0, 3, 3, 3, 3);
}

/* MAP-REDUCE: the dot product of X (x2) and Y (x1) per segment of S (x0). */
#define DOT_MAIN "CONST FLOAT (1.0 2.0 3.0)\nCONST FLOAT (4.0 5.0 6.0)\nCONST INT (3)\nMAKE_SEGDES\n"
#define DOT_G                                               \
    "CPOP 2 1\n"        /* S X Y                       */   \
    "* FLOAT\n"         /* S P         P = X * Y = x3  */   \
    "CPOP 1 1\n"        /* P S                         */   \
    "+_REDUCE FLOAT\n"  /* R           R = x4          */

static void test_map_reduce(void)
{
    CHECK_PLAN(DOT_MAIN, DOT_G, 1,
               "kernel K0 (x0 : segdes, x1 : [float], x2 : [float]) -> (x4) {\n"
               "  let x4 = SEG_REDUCE { i => x2[i] * x1[i] using x1, x2 } (fadd) x0\n"
               "  return (x4)\n"
               "}\n");
    CHECK_FIGURES(DOT_MAIN, DOT_G, 1, 2, 1, 2, 1);
}

/* MAP-SCAN: a running count of the true flags F (x1) in each segment of
 * S (x0). */
#define COUNT_MAIN "CONST BOOL (T F T)\nCONST INT (2 1)\nMAKE_SEGDES\n"
#define COUNT_G                                             \
    "CPOP 1 1\n"        /* S F                         */   \
    "B_TO_I\n"          /* S N         N = x2          */   \
    "CPOP 1 1\n"        /* N S                         */   \
    "+_SCAN INT\n"      /* C           C = x3          */

static void test_map_scan(void)
{
    CHECK_PLAN(COUNT_MAIN, COUNT_G, 1,
               "kernel K0 (x0 : segdes, x1 : [bool]) -> (x3) {\n"
               "  let x3 = SEG_SCAN { i => b_to_i(x1[i]) using x1 } (iadd) x0\n"
               "  return (x3)\n"
               "}\n");
    CHECK_FIGURES(COUNT_MAIN, COUNT_G, 1, 2, 1, 2, 1);
}

/* MAP-PERMUTE: PERMUTE of D + D, with D = x2, I = x1, S = x0. */
#define PERM_MAIN "CONST INT (1 2 3)\nCONST INT (2 0 1)\nCONST INT (3)\nMAKE_SEGDES\n"
#define PERM_G                                              \
    "CPOP 1 2\n"        /* I S D                       */   \
    "COPY 1 0\n"        /* I S D D                     */   \
    "+ INT\n"           /* I S E       E = D + D = x3  */   \
    "CPOP 2 1\n"        /* E I S                       */   \
    "PERMUTE INT\n"     /* Q           Q = x4          */

static void test_map_permute(void)
{
    CHECK_PLAN(PERM_MAIN, PERM_G, 1,
               "kernel K0 (x0 : segdes, x1 : [int], x2 : [int]) -> (x4) {\n"
               "  let x4 = SEG_PERMUTE { i => x2[i] + x2[i] using x2 } { i => x1[i] using x1 } "
               "x0 -> x0\n"
               "  return (x4)\n"
               "}\n");
    CHECK_FIGURES(PERM_MAIN, PERM_G, 1, 2, 1, 2, 1);
}

/* MAP-FILTER: PACK D (x2) where D > T (T = x1) over S (x0). */
#define GT_MAIN "CONST INT (5 1 7)\nCONST INT (2 2 2)\nCONST INT (3)\nMAKE_SEGDES\n"
#define GT_G                                                \
    "COPY 1 2\n"        /* D T S D                     */   \
    "COPY 1 2\n"        /* D T S D T                   */   \
    "> INT\n"           /* D T S F     F = D > T = x3  */   \
    "POP 1 2\n"         /* D S F                       */   \
    "CPOP 1 1\n"        /* D F S                       */   \
    "PACK INT\n"        /* P S'        P = x4, S' = x5 */

static void test_map_filter(void)
{
    CHECK_PLAN(GT_MAIN, GT_G, 1,
               "kernel K0 (x0 : segdes, x1 : [int], x2 : [int]) -> (x4, x5) {\n"
               "  let (x4, x5) = SEG_FILTER { i => x2[i] using x2 } { i => x2[i] > x1[i] "
               "using x1, x2 } x0\n"
               "  return (x4, x5)\n"
               "}\n");
    CHECK_FIGURES(GT_MAIN, GT_G, 1, 2, 1, 3, 2);
}

/* FILTER-REDUCE: the sum of the elements of D (x2) whose flag F (x1) is
 * set, per segment of S (x0): the reduction runs over S, adding 0 where
 * the filter drops an element. */
#define SUMIF_MAIN "CONST INT (1 2 3 4)\nCONST BOOL (T F T T)\nCONST INT (3 1)\nMAKE_SEGDES\n"
#define FSUMIF_MAIN "CONST FLOAT (1.0 2.0)\nCONST BOOL (T F)\nCONST INT (2)\nMAKE_SEGDES\n"
#define SUMIF_G                                             \
    "PACK INT\n"        /* P S'        P = x3, S' = x4 */   \
    "+_REDUCE INT\n"    /* R           R = x5          */

static void test_filter_reduce(void)
{
    CHECK_PLAN(SUMIF_MAIN, SUMIF_G, 0,
               "kernel K0 (x0 : segdes, x1 : [bool], x2 : [int]) -> (x3, x4) {\n"
               "  let (x3, x4) = SEG_FILTER { i => x2[i] using x2 } { i => x1[i] using x1 } x0\n"
               "  return (x3, x4)\n"
               "}\n"
               "kernel K1 (x3 : [int], x4 : segdes) -> (x5) {\n"
               "  let x5 = SEG_REDUCE { i => x3[i] using x3 } (iadd) x4\n"
               "  return (x5)\n"
               "}\n");
    CHECK_PLAN(SUMIF_MAIN, SUMIF_G, 1,
               "kernel K0 (x0 : segdes, x1 : [bool], x2 : [int]) -> (x5) {\n"
               "  let x5 = SEG_REDUCE { i => if x1[i] then x2[i] else 0 using x1, x2 } (iadd) x0\n"
               "  return (x5)\n"
               "}\n");
    CHECK_FIGURES(SUMIF_MAIN, SUMIF_G, 1, 2, 1, 3, 1);
    /* a float product: the identity is 1.0 */
    CHECK_PLAN(FSUMIF_MAIN, "PACK FLOAT\n*_REDUCE FLOAT\n", 1,
               "kernel K0 (x0 : segdes, x1 : [bool], x2 : [float]) -> (x5) {\n"
               "  let x5 = SEG_REDUCE { i => if x1[i] then x2[i] else 1.0 using x1, x2 } "
               "(fmul) x0\n"
               "  return (x5)\n"
               "}\n");
    /* a float maximum is not rewritten (with a NaN, adding the identity
     * differs from skipping): the cluster keeps both SOACs in one kernel,
     * and the packed values stay internal to it */
    CHECK_PLAN(FSUMIF_MAIN, "PACK FLOAT\nMAX_REDUCE FLOAT\n", 1,
               "kernel K0 (x0 : segdes, x1 : [bool], x2 : [float]) -> (x5) {\n"
               "  let (x3, x4) = SEG_FILTER { i => x2[i] using x2 } { i => x1[i] using x1 } x0\n"
               "  let x5 = SEG_REDUCE { i => x3[i] using x3 } (fmax) x4\n"
               "  return (x5)\n"
               "}\n");
    CHECK_FIGURES(FSUMIF_MAIN, "PACK FLOAT\nMAX_REDUCE FLOAT\n", 1, 2, 1, 3, 1);
}

/* FILTER-FILTER: the true elements of D (x2, bool) where F (x1) is set,
 * packed twice: by F, then the result by itself. */
#define TWICE_MAIN "CONST BOOL (T F T F)\nCONST BOOL (T T F F)\nCONST INT (4)\nMAKE_SEGDES\n"
#define TWICE_G                                             \
    "PACK BOOL\n"       /* P S1        P = x3, S1 = x4 */   \
    "COPY 1 1\n"        /* P S1 P                      */   \
    "CPOP 1 1\n"        /* P P S1                      */   \
    "PACK BOOL\n"       /* Q S2        Q = x5, S2 = x6 */

static void test_filter_filter(void)
{
    CHECK_PLAN(TWICE_MAIN, TWICE_G, 1,
               "kernel K0 (x0 : segdes, x1 : [bool], x2 : [bool]) -> (x5, x6) {\n"
               "  let (x5, x6) = SEG_FILTER { i => x2[i] using x2 } "
               "{ i => x1[i] && x2[i] using x1, x2 } x0\n"
               "  return (x5, x6)\n"
               "}\n");
    CHECK_FIGURES(TWICE_MAIN, TWICE_G, 1, 2, 1, 4, 2);
}

/* Horizontal: a sum of A (x2, int) and a maximum of B (x1, float) over the
 * same descriptor S (x0) become one SEG_REDUCE with two results. */
#define TWO_MAIN "CONST INT (1 2 3)\nCONST FLOAT (1.0 5.0 2.0)\nCONST INT (1 2)\nMAKE_SEGDES\n"
#define TWO_G                                               \
    "COPY 1 2\n"        /* A B S A                     */   \
    "COPY 1 1\n"        /* A B S A S                   */   \
    "+_REDUCE INT\n"    /* A B S R1    R1 = x3         */   \
    "CPOP 2 1\n"        /* A R1 B S                    */   \
    "MAX_REDUCE FLOAT\n" /* A R1 R2    R2 = x4         */   \
    "POP 1 2\n"         /* R1 R2                       */

static void test_horizontal(void)
{
    CHECK_PLAN(TWO_MAIN, TWO_G, 0,
               "kernel K0 (x0 : segdes, x2 : [int]) -> (x3) {\n"
               "  let x3 = SEG_REDUCE { i => x2[i] using x2 } (iadd) x0\n"
               "  return (x3)\n"
               "}\n"
               "kernel K1 (x0 : segdes, x1 : [float]) -> (x4) {\n"
               "  let x4 = SEG_REDUCE { i => x1[i] using x1 } (fmax) x0\n"
               "  return (x4)\n"
               "}\n");
    CHECK_PLAN(TWO_MAIN, TWO_G, 1,
               "kernel K0 (x0 : segdes, x1 : [float], x2 : [int]) -> (x3, x4) {\n"
               "  let (x3, x4) = SEG_REDUCE { i => (x2[i], x1[i]) using x1, x2 } (iadd, fmax) x0\n"
               "  return (x3, x4)\n"
               "}\n");
    CHECK_FIGURES(TWO_MAIN, TWO_G, 1, 2, 1, 2, 2);
}

/* REDUCE-into-ONCE: a sum, then scalar code on it (sum * 2.0 + 1.0), in
 * one kernel: the SEG_REDUCE and a ONCE reading its single result. */
static void test_reduce_once(void)
{
    CHECK_PLAN("CONST INT 4\nMAKE_SEGDES\nCONST FLOAT (1.0 2.0 3.0 4.0)\n",
               "COPY 2 0\n"
               "CPOP 1 1\n"
               "+_REDUCE FLOAT\n" /* sd xs s      s = x2 */
               "CONST FLOAT 2.0\n" /*             x3     */
               "* FLOAT\n"         /*             x4     */
               "CONST FLOAT 1.0\n" /*             x5     */
               "+ FLOAT\n"         /*             x6     */
               "POP 2 1\n",        /* the result alone   */
               1,
               "host CONST -> x3\n"    /* inputs: x0 = xs (the top), x1 = sd */
               "host CONST -> x5\n"
               "kernel K0 (x0 : [float], x1 : segdes, x3 : [float], x5 : [float]) -> (x6) {\n"
               "  let x2 = SEG_REDUCE { i => x0[i] using x0 } (fadd) x1\n"
               "  let x6 = ONCE { () => (x2[0] * x3[0]) + x5[0] using x2, x3, x5 }\n"
               "  return (x6)\n"
               "}\n");
}

/* A MAP whose result is also left on the stack: P = A * B (x1 * x0) and
 * Q = B + P. P is still returned; with Q's copy of P substituted, the two
 * MAPs are independent and merge horizontally. */
#define LIVE_G                                              \
    "COPY 2 0\n"        /* A B A B                     */   \
    "* FLOAT\n"         /* A B P       P = x2          */   \
    "COPY 1 1\n"        /* A B P B                     */   \
    "COPY 1 1\n"        /* A B P B P                   */   \
    "+ FLOAT\n"         /* A B P Q     Q = x3          */   \
    "CPOP 2 2\n"        /* P Q A B                     */   \
    "POP 2 0\n"         /* P Q                         */

static void test_live_out(void)
{
    CHECK_PLAN(FLOATS2, LIVE_G, 1,
               "kernel K0 (x0 : [float], x1 : [float]) -> (x2, x3) {\n"
               "  let (x2, x3) = MAP { i => (x1[i] * x0[i], x0[i] + (x1[i] * x0[i])) "
               "using x0, x1 } (#x1)\n"
               "  return (x2, x3)\n"
               "}\n");
    CHECK_FIGURES(FLOATS2, LIVE_G, 1, 2, 1, 2, 2);
    Case c;
    CHECK(plan_g(FLOATS2, LIVE_G, 1, &c) == 0);
    if (c.planned) {
        CHECK(c.bp.dfg.nout == 2 && c.bp.dfg.out[0] == 2 && c.bp.dfg.out[1] == 3);
        CHECK(c.bp.fused && !c.bp.fr.fell_back);
        /* live-out values are never released */
        for (int i = 0; i < c.bp.nsteps; i++)
            for (int r = 0; r < c.bp.steps[i].nrelease; r++)
                CHECK(c.bp.steps[i].release[r] != 2 && c.bp.steps[i].release[r] != 3);
    }
    case_free(&c);
}

/* No fusion through a gather: BPERMUTE reads E = D + D (x4) at a computed
 * index. D = x3, I = x2, S1 = x1 (source), S2 = x0 (destination). */
#define GATHER_MAIN "CONST INT (1 2 3)\nCONST INT (2 0)\nCONST INT (3)\nMAKE_SEGDES\nCONST INT (2)\nMAKE_SEGDES\n"
#define GATHER_G                                            \
    "CPOP 1 3\n"        /* I S1 S2 D                   */   \
    "COPY 1 0\n"        /* I S1 S2 D D                 */   \
    "+ INT\n"           /* I S1 S2 E   E = x4          */   \
    "CPOP 3 1\n"        /* E I S1 S2                   */   \
    "BPERMUTE INT\n"    /* G           G = x5          */

/* No fusion across a library kernel: MAP, RANK_UP, MAP. D = x1, S = x0. */
#define RANK_MAIN "CONST INT (3 1 2)\nCONST INT (3)\nMAKE_SEGDES\n"
#define RANK_G                                              \
    "CPOP 1 1\n"        /* S D                         */   \
    "COPY 1 0\n"        /* S D D                       */   \
    "+ INT\n"           /* S E         E = x2          */   \
    "CPOP 1 1\n"        /* E S                         */   \
    "RANK_UP INT\n"     /* R           R = x3          */   \
    "COPY 1 0\n"        /* R R                         */   \
    "* INT\n"           /* Q           Q = x4          */

static void test_no_fusion(void)
{
    CHECK_PLAN(GATHER_MAIN, GATHER_G, 1,
               "kernel K0 (x3 : [int]) -> (x4) {\n"
               "  let x4 = MAP { i => x3[i] + x3[i] using x3 } (#x3)\n"
               "  return (x4)\n"
               "}\n"
               "kernel K1 (x0 : segdes, x1 : segdes, x2 : [int], x4 : [int]) -> (x5) {\n"
               "  let x5 = MAP { i => let t0 = seg_of(x0, i) in x4[seg_start(x1, t0) + checkidx(x2[i], "
               "seg_len(x1, t0))] using x0, x1, x2, x4 } (#x2)\n"
               "  return (x5)\n"
               "}\n");
    CHECK_FIGURES(GATHER_MAIN, GATHER_G, 1, 2, 2, 2, 2);
    CHECK_PLAN(RANK_MAIN, RANK_G, 1,
               "kernel K0 (x1 : [int]) -> (x2) {\n"
               "  let x2 = MAP { i => x1[i] + x1[i] using x1 } (#x1)\n"
               "  return (x2)\n"
               "}\n"
               "kernel K1 (x0 : segdes, x2 : [int]) -> (x3) {\n"
               "  let x3 = LIB rank_up(x2, x0)\n"
               "  return (x3)\n"
               "}\n"
               "kernel K2 (x3 : [int]) -> (x4) {\n"
               "  let x4 = MAP { i => x3[i] * x3[i] using x3 } (#x3)\n"
               "  return (x4)\n"
               "}\n");
    CHECK_FIGURES(RANK_MAIN, RANK_G, 1, 3, 3, 3, 3);
}

/* Regressions: FILTER-REDUCE and FILTER-FILTER move the consumer from the
 * filter's output space to its input space, which is only right when the
 * consumer reads nothing at i but the filter's own outputs. Here it also
 * reads the output of a second PACK by the same flags: D = x3, E = x2,
 * F = x1 (flags), S = x0. The consumer stays in the first filter's kernel
 * unrewritten; the second PACK runs before it. */
#define TWOPACK_MAIN "CONST INT (10 20 30 40)\nCONST INT (1 2 3 4)\nCONST BOOL (F T F T)\nCONST INT (4)\nMAKE_SEGDES\n"
#define TWOPACK_HEAD                                        \
    "COPY 1 3\n"        /* D E F S D                   */   \
    "COPY 2 1\n"        /* D E F S D F S               */   \
    "PACK INT\n"        /* D E F S P S1   P = x4, S1 = x5 */ \
    "POP 1 1\n"         /* D E F S S1                  */   \
    "COPY 1 3\n"        /* D E F S S1 E                */   \
    "COPY 1 3\n"        /* D E F S S1 E F              */   \
    "COPY 1 3\n"        /* D E F S S1 E F S            */   \
    "PACK INT\n"        /* ... S1 E' S2   E' = x6, S2 = x7 */ \
    "POP 1 0\n"         /* D E F S S1 E'               */   \
    "CPOP 1 1\n"        /* D E F S E' S1               */
#define TWOPACK_REDUCE_G TWOPACK_HEAD                       \
    "+_REDUCE INT\n"    /* D E F S R      R = x8       */   \
    "POP 4 1\n"         /* R                           */
#define TWOPACK_PACK_MAIN "CONST INT (10 20 30 40)\nCONST BOOL (T T F T)\nCONST BOOL (F T T T)\nCONST INT (4)\nMAKE_SEGDES\n"
#define TWOPACK_PACK_G                                      \
    "COPY 1 3\n"        /* D E F S D                   */   \
    "COPY 2 1\n"        /* D E F S D F S               */   \
    "PACK INT\n"        /* D E F S P S1   P = x4, S1 = x5 */ \
    "COPY 1 4\n"        /* D E F S P S1 E              */   \
    "COPY 1 4\n"        /* D E F S P S1 E F            */   \
    "COPY 1 4\n"        /* D E F S P S1 E F S          */   \
    "PACK BOOL\n"       /* ... S1 E' S2   E' = x6, S2 = x7 */ \
    "POP 1 0\n"         /* D E F S P S1 E'             */   \
    "CPOP 1 1\n"        /* D E F S P E' S1             */   \
    "PACK INT\n"        /* D E F S Q S3   Q = x8, S3 = x9 */ \
    "POP 4 2\n"         /* Q S3                        */

static void test_filter_other_space(void)
{
    CHECK_PLAN(TWOPACK_MAIN, TWOPACK_REDUCE_G, 1,
               "kernel K0 (x0 : segdes, x1 : [bool], x2 : [int]) -> (x6) {\n"
               "  let (x6, x7) = SEG_FILTER { i => x2[i] using x2 } { i => x1[i] using x1 } x0\n"
               "  return (x6)\n"
               "}\n"
               "kernel K1 (x0 : segdes, x1 : [bool], x3 : [int], x6 : [int]) -> (x8) {\n"
               "  let (x4, x5) = SEG_FILTER { i => x3[i] using x3 } { i => x1[i] using x1 } x0\n"
               "  let x8 = SEG_REDUCE { i => x6[i] using x6 } (iadd) x5\n"
               "  return (x8)\n"
               "}\n");
    CHECK_PLAN(TWOPACK_PACK_MAIN, TWOPACK_PACK_G, 1,
               "kernel K0 (x0 : segdes, x1 : [bool], x2 : [bool]) -> (x6) {\n"
               "  let (x6, x7) = SEG_FILTER { i => x2[i] using x2 } { i => x1[i] using x1 } x0\n"
               "  return (x6)\n"
               "}\n"
               "kernel K1 (x0 : segdes, x1 : [bool], x3 : [int], x6 : [bool]) -> (x8, x9) {\n"
               "  let (x4, x5) = SEG_FILTER { i => x3[i] using x3 } { i => x1[i] using x1 } x0\n"
               "  let (x8, x9) = SEG_FILTER { i => x4[i] using x4 } { i => x6[i] using x6 } x5\n"
               "  return (x8, x9)\n"
               "}\n");
}

/* A MAP whose iteration space is #v, v computed in the block (the first
 * operand of an elementwise op is the previous op's result), should fuse
 * like any other: the fused MAP iterates over the producer's space. This
 * needs plan.c's access_of to accept a shape #v as element-wise, and the
 * MAP substitution to take the producer's shape (see the report that came
 * with this file); until then the pairs stay apart, so the test is off. */
static void test_first_operand(void)
{
    /* S = A + B (x2, #x1), R = sqrt(S) (x3, over #x2) */
    CHECK_PLAN(FLOATS2, "+ FLOAT\nSQRT\n", 1,
               "kernel K0 (x0 : [float], x1 : [float]) -> (x3) {\n"
               "  let x3 = MAP { i => sqrt(x1[i] + x0[i]) using x0, x1 } (#x1)\n"
               "  return (x3)\n"
               "}\n");
    /* P = A * B (x2) left on the stack, Q = P + B (x3) */
    CHECK_PLAN(FLOATS2,
               "COPY 2 0\n"     /* A B A B      */
               "* FLOAT\n"      /* A B P        */
               "COPY 1 0\n"     /* A B P P      */
               "COPY 1 2\n"     /* A B P P B    */
               "+ FLOAT\n"      /* A B P Q      */
               "CPOP 2 2\n"     /* P Q A B      */
               "POP 2 0\n",     /* P Q          */
               1,
               "kernel K0 (x0 : [float], x1 : [float]) -> (x2, x3) {\n"
               "  let (x2, x3) = MAP { i => (x1[i] * x0[i], (x1[i] * x0[i]) + x0[i]) "
               "using x0, x1 } (#x1)\n"
               "  return (x2, x3)\n"
               "}\n");
}

/* --float-reassoc: float + and * reductions are marked chunked; Int ones
 * and float MAX are not; a chunked sum does not absorb a filter (its chunks
 * are runs of the kept elements, not of the filter's input). */
static void test_float_reassoc(void)
{
    reassoc_opt = 1;
    CHECK_PLAN(DOT_MAIN, DOT_G, 1,
               "kernel K0 (x0 : segdes, x1 : [float], x2 : [float]) -> (x4) {\n"
               "  let x4 = SEG_REDUCE { i => x2[i] * x1[i] using x1, x2 } (fadd) chunked x0\n"
               "  return (x4)\n"
               "}\n");
    CHECK_PLAN(SUMIF_MAIN, SUMIF_G, 1,
               "kernel K0 (x0 : segdes, x1 : [bool], x2 : [int]) -> (x5) {\n"
               "  let x5 = SEG_REDUCE { i => if x1[i] then x2[i] else 0 using x1, x2 } (iadd) x0\n"
               "  return (x5)\n"
               "}\n");
    CHECK_PLAN(FSUMIF_MAIN, "PACK FLOAT\n+_REDUCE FLOAT\n", 1,
               "kernel K0 (x0 : segdes, x1 : [bool], x2 : [float]) -> (x5) {\n"
               "  let (x3, x4) = SEG_FILTER { i => x2[i] using x2 } { i => x1[i] using x1 } x0\n"
               "  let x5 = SEG_REDUCE { i => x3[i] using x3 } (fadd) chunked x4\n"
               "  return (x5)\n"
               "}\n");
    CHECK_PLAN(FSUMIF_MAIN, "PACK FLOAT\nMAX_REDUCE FLOAT\n", 1,
               "kernel K0 (x0 : segdes, x1 : [bool], x2 : [float]) -> (x5) {\n"
               "  let (x3, x4) = SEG_FILTER { i => x2[i] using x2 } { i => x1[i] using x1 } x0\n"
               "  let x5 = SEG_REDUCE { i => x3[i] using x3 } (fmax) x4\n"
               "  return (x5)\n"
               "}\n");
    reassoc_opt = 0;
}

/* Which kernel steps may take a block input's storage (PlanStep
 * input_donor): the replay after a fatal error reruns the block from its
 * inputs, so only a step that is one MAP computing nothing that can fail,
 * with no step after it but CONST and LENGTH. Returns the first kernel
 * step's (donor offered or not, input_donor) as 2 * donor + input_donor,
 * or -1. */
static int input_donor_of(const char *main_body, const char *g_body)
{
    Case c;
    int r = -1;
    if (plan_g(main_body, g_body, 1, &c) == 0) {
        for (int s = 0; s < c.bp.nsteps && r < 0; s++) {
            const PlanStep *ps = &c.bp.steps[s];
            if (ps->kind == STEP_KERNEL)
                r = 2 * (ps->donor && ps->donor[0] >= 0) + ps->input_donor;
        }
    }
    case_free(&c);
    return r;
}

#define INTS3 "CONST INT (1 2)\nCONST INT (3 4)\nCONST INT (5 6)\n"
#define FLOATS3 "CONST FLOAT (1.0 2.0)\nCONST FLOAT (3.0 4.0)\nCONST FLOAT (5.0 6.0)\n"

static void test_input_donors(void)
{
    /* a * b + c: one MAP, nothing can fail */
    CHECK(input_donor_of(INTS3, "* INT\n+ INT\n") == 3);
    /* followed by a CONST or a LENGTH: still */
    CHECK(input_donor_of(INTS3, "* INT\n+ INT\nCONST INT 7\n") == 3);
    CHECK(input_donor_of(INTS3, "* INT\n+ INT\nCOPY 1 0\nLENGTH INT\n") == 3);
    /* Int / and % can fail (division by zero); Float / cannot */
    CHECK(input_donor_of(INTS3, "/ INT\n+ INT\n") == 2);
    CHECK(input_donor_of(INTS3, "%\n+ INT\n") == 2);
    CHECK(input_donor_of(FLOATS3, "/ FLOAT\n+ FLOAT\n") == 3);
    /* a host step after it that may need memory as the values say */
    CHECK(input_donor_of(INTS3, "* INT\n+ INT\nMAKE_SEGDES\n") == 2);
    /* a gather at another index than its own (the index checked) */
    CHECK(input_donor_of("CONST INT (0 1)\nCONST INT (1 0)\nCONST SEGDES 2\nCONST SEGDES 2\n",
                         "CPOP 2 2\n+ INT\nCONST INT (10 20)\nCPOP 1 1\nCPOP 2 2\nBPERMUTE INT\n") == 2);
}

int main(void)
{
    test_elementwise();
    test_rand();
    test_scans_reductions();
    test_permutes();
    test_vector_ops();
    test_host_steps();
    test_stack_shuffles();
    test_map_map();
    test_map_reduce();
    test_map_scan();
    test_map_permute();
    test_map_filter();
    test_filter_reduce();
    test_filter_filter();
    test_horizontal();
    test_live_out();
    test_no_fusion();
    test_filter_other_space();
    test_reduce_once();
    test_first_operand();
    test_float_reassoc();
    test_input_donors();
    return check_report("translate");
}

/* runtime/fused/check_bound.h — what --check allows a fused backend to
 * differ from the reference by.
 *
 * check_block (backend.c) reruns a block on the reference from its inputs.
 * cb_run_block does that one instruction at a time (a block is straight
 * line) and keeps, beside each stack value the block makes, how far the
 * backend's value may lie from the reference's:
 *
 *   - Float: an absolute bound per element (+inf: anything);
 *   - Int, Bool: a per-element "may differ" mask;
 *   - none of these (NULL): exact, the same bits (NaN equals NaN, and
 *     -0.0 equals +0.0, as ==);
 *   - unverifiable: the value is not compared at all (its length or its
 *     layout may legitimately differ). -d stats counts these.
 *
 * Block inputs are exact. Bounds are only allocated once an inexact value
 * appears, so a block of integers or of float elementwise arithmetic costs
 * the same as the plain reference run and is compared bit for bit.
 *
 * The rules, and why. u = 2^-53 (the unit roundoff), gamma(k) =
 * k·u/(1 - k·u), eta = 2^-1074 (the smallest subnormal).
 *
 * 1. Where inexactness comes from. The backends may reassociate float +
 *    and * in REDUCE and SCAN (and their segmented forms): the cuda
 *    executor runs them as trees of partial results (cg_tree_safe;
 *    exec_cuda.c's choose_run; kernels/vk_scan.cu's warp and chunk
 *    strategies), whose shape depends on the grid. Every tree still
 *    combines each term of a segment (or prefix) exactly once and never
 *    mixes segments, so a sum of n terms is within gamma(n-1)·sum|x| of
 *    the exact sum whatever the tree, and so is the reference's left to
 *    right sum; the difference of the two is at most twice that. Float MAX
 *    and MIN are not reassociated that way (a state keeps element order)
 *    and give the same element: exact. Int and Bool operators are
 *    associative: exact. Sums and products of at most 2 terms are exact
 *    (commutativity; the identity adds nothing).
 *      +:  E = gamma(n-1)·(2·sum|x| + sum E_i) + sum E_i
 *      *:  with P = prod|x|, D = P·(prod(1 + E_i/|x_i|) - 1), the input
 *          part: E = gamma(n-1)·(2P + D) + D (+inf where some E_i >=
 *          2^-20·|x_i|); an exact zero term makes the product 0 either
 *          way (E = 0); where a run of consecutive terms (what a tree
 *          multiplies) may leave [2^-1000, 2^1000], the relative error
 *          model fails (and inf·0 is NaN on one side only): +inf.
 *    Per segment for reductions, per prefix (its k terms) for scans. The
 *    bound's own arithmetic is covered by a factor 1 + gamma(n+2).
 * 2. Elementwise float arithmetic is bit-identical on every backend with
 *    exact inputs (IEEE + - * / and sqrt are correctly rounded; NVRTC runs
 *    with --fmad=false, the C compilers with -ffp-contract=off). With an
 *    input bound, first order plus both sides' rounding, e = Ea + Eb:
 *      + -:  e + 2u|r|
 *      *:    |a|Eb + |b|Ea + EaEb + 2u|r| + 4 eta
 *      /:    (Ea + |r|Eb)/(|b| - Eb) + 2u|r| + 4 eta (+inf when Eb >= |b|)
 *      sqrt: E/(sqrt x + sqrt(x - E)) + 2u|r| (+inf when x - E <= 0)
 *    (all times 1 + 4u). The libm functions by the largest derivative
 *    over [x - E, x + E]: exp |r|·expm1(E), log E/(x - E), sin cos atan
 *    tanh E, sinh and cosh E·cosh(|x| + E), asin acos E/sqrt(1 - (|x| +
 *    E)^2), tan E·max sec^2 at the ends when no pole lies between; plus
 *    8u|r| (each side's libm within 2 ulp). A result that is not finite,
 *    or a NaN bound, becomes +inf.
 * 3. Transcendental functions (exp log sin cos tan asin acos atan sinh
 *    cosh tanh) of exact inputs: the cpu backend and the emulated device
 *    call the host's libm as the reference does (exact); CUDA's own math
 *    library is within 2 ulp of the true value, glibc's within 1, so on a
 *    real GPU (CbOptions.libm_ulps = 3) E = 3·2u·|r|·2 (an ulp taken at
 *    its largest, 2u|r|, doubled for a result across a binade) + eta.
 * 4. Comparisons of floats with bounds may differ where |a - b| <= Ea +
 *    Eb (or a bound is +inf, or an operand NaN); FLOOR CEIL TRUNC ROUND
 *    where the rounding of x - E and x + E differ; I_TO_F of a
 *    may-differ Int gives +inf there. Int and Bool operations: the union
 *    of their operands' masks (elementwise), of the segment (reductions)
 *    or of the prefix (scans).
 * 5. Data movement takes bounds and masks with the elements: the
 *    instruction itself is run over the bounds (masks) in place of the
 *    data, with the same indices and descriptors (DIST, PERMUTE, the
 *    B/F/D permutes, EXTRACT, REPLACE, PACK, INDEX for its init and
 *    stride). SELECT: the chosen operand's bound, or, where the flag may
 *    differ, both operands' and their distance. A may-differ index of a
 *    gather (BPERMUTE, BFPERMUTE, EXTRACT) or flag of BFPERMUTE makes that
 *    result element anything; one of a scatter (PERMUTE, DPERMUTE,
 *    FPERMUTE, DFPERMUTE, REPLACE) or of PACK's flags, and a may-differ
 *    Int made into a descriptor (MAKE_SEGDES), make the result
 *    unverifiable. RANK of inexact data: the ranks of those segments may
 *    differ. LENGTH and LENGTHS of a value that is not unverifiable are
 *    exact.
 * 6. An unverifiable argument makes every result unverifiable, and so
 *    does an instruction without a rule here whose arguments are inexact:
 *    never a false failure, never a crash.
 *
 * --check-rel=R (default 0) is an extra relative allowance on top. */
#ifndef RUNTIME_CHECK_BOUND_H
#define RUNTIME_CHECK_BOUND_H

#include <stdint.h>
#include "runtime/interp/interp.h"
#include "translate/lcu.h"
#include "runtime/fused/bound_rules.h"

/* The bound of one value: NULL (no CbBound) is exact. */
typedef struct {
    int rc;
    int unverifiable;   /* not compared */
    Value *v;           /* Float: absolute bound per element; Int/Bool: 0/1
                           mask of the same type; NULL with unverifiable */
} CbBound;

typedef struct {
    int libm_ulps;      /* rule 3: 0 (host libm on both sides) or 3 (a real GPU) */
} CbOptions;

typedef struct CbRun CbRun;

/* Run instructions [START, END) of IT's program (one block: COPY, POP,
 * CPOP, CONST and vector instructions) on IT's stack, as
 * interp_exec_range does, keeping the bounds. The stack's entries before
 * START are exact. Fatal errors are the reference's. */
CbRun *cb_run_block(Interp *it, int start, int end, const CbOptions *o);
/* The bound of the stack entry at DEPTH (0: the top) after the run; NULL:
 * exact. Valid until cb_run_free. */
const CbBound *cb_bound_at(const CbRun *r, int64_t depth);
void cb_run_free(CbRun *r);

/* The first element where the backend's A and the reference's R differ by
 * more than B (NULL: exact) plus REL relative, or -1; a type or length
 * mismatch is element 0. *BOUND_AT (may be NULL) gets the allowed
 * difference there (+inf for a may-differ Int). B must not be
 * unverifiable. */
int64_t cb_first_difference(const Value *a, const Value *r, const CbBound *b, double rel, double *bound_at);
/* Elements of B that may be anything (a mask bit, a +inf bound). */
int64_t cb_free_elements(const CbBound *b);

/* ---- the rules on scalars (what cb_run_block applies; for unit tests) ---- */
/* Rule 1 (cb_gamma, cb_sum_bound, cb_prod_bound): runtime/fused/bound_rules.h. */
/* Rule 2: the result R of A op B (op '+', '-', '*', '/') */
double cb_arith_bound(char op, double a, double b, double r, double ea, double eb);
/* Rules 2, 3: the result R of OP (OP_SQRT, OP_EXP, ...) at X with bound E. */
double cb_unary_bound(Opcode op, double x, double r, double e, int libm_ulps);
/* Rule 4. */
int cb_cmp_may_differ(double a, double b, double ea, double eb);
int cb_f2i_may_differ(Opcode op, double x, double e);

/* ---- a deliberately wrong kernel, for testing --check ---------------------
 * $VINTERP_CHECK_PERTURB (read only under --check) changes the last
 * element of kernel results after each kernel step:
 *   fsum:D   adds D to the result of each float + or * reduction or scan
 *   ulps:N   moves each Float result N ulps up
 *   int:N    adds N to each Int result */
typedef enum { CB_PERTURB_NONE, CB_PERTURB_FSUM, CB_PERTURB_ULPS, CB_PERTURB_INT } CbPerturbKind;
typedef struct {
    CbPerturbKind kind;
    double amount;
} CbPerturb;
/* Parse SPEC (NULL or empty: none). 0, or -1 when it is malformed. */
int cb_perturb_parse(const char *spec, CbPerturb *p);
/* Apply P to the results of kernel K in ENV. */
void cb_perturb_kernel(const CbPerturb *p, const LcuKernel *k, Value **env);

#endif

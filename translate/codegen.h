/* translate/codegen.h — code generation from fused λcu kernels: one
 * generator, two targets (C for the host, CUDA for NVRTC). Both targets
 * share the prelude helpers and the thunks, emitted as inline functions of
 * the element index; only the SOAC skeletons differ (cg_c.c, cg_cuda.c).
 *
 * The text is a pure function of the kernel, its variable types, the name
 * and the target: the same plan gives the same bytes, so the text can key a
 * compilation cache.
 *
 * C target: each kernel becomes `void NAME(vk_ctx *cx)` (codegen_abi.h),
 * which runs the kernel's SOACs in order, one plain loop each, with the
 * reference evaluator's order of evaluation (results bit-identical to
 * runtime/fused/lcu_eval.c).
 *
 * CUDA target: device entry points only; the runtime (runtime/fused/exec_cuda.c)
 * drives them SOAC by SOAC, choosing among a SOAC's entry points, and runs
 * the ranks, RAND draws and what the fused skeletons leave (the scan of a
 * filter's flags, the combining of block partials, the general path of
 * reductions and scans) with the precompiled primitives
 * (kernels/kernels.h). For SOAC j of kernel NAME, P = NAME_s<j>; every
 * entry point is
 *     extern "C" __global__ void P_<phase>(vk_arr *V, vk_errp er, int64_t n, ...)
 * V: the device copy of the variable table (device pointers), er: the
 * device error record (4 x uint64: code, a, b, c; first failure wins), n:
 * the iteration count (the SOAC's shape). The element-wise ones are
 * grid-stride loops over i in [0, n) with no shared memory and no
 * barriers, so any launch shape is valid, one thread included; the fused
 * reductions and scans below use shared memory and barriers. The runtime
 * allocates every result (and sets V[res].d/len/n) before the launch; per
 * kind:
 *   MAP, ONCE        P_map(V, er, n): o_k[i] = pull_k(i); results of n (ONCE: n = 1).
 *   PERMUTE          P_claim(V, er, n, int32_t *w): idx outside [0, n) fails
 *                    VKF_PERM(i, idx, n), else w[idx(i)] = max(w[idx(i)], i + 1)
 *                    (atomic; w zeroed first); then P_perm(V, er, n, const int32_t *w):
 *                    o_k[idx(i)] = pull_k(i) where w[idx(i)] == i + 1, so that on a
 *                    collision the later element wins, as in the reference; results
 *                    of n, zeroed first.
 *   REDUCE, SCAN,    P_vals(V, er, n, void *const *t): t[k][i] = pull_k(i), t a device
 *   SEG_REDUCE,      array of nres pointers (element type of result k); the runtime
 *   SEG_SCAN         then reduces or scans
 *                    t[k] into result k (SCAN, SEG_SCAN: t[k] is the result,
 *                    scanned in place). n = #shape, or n(sd) for the SEG_ kinds.
 *                    The general path; the fused ones below avoid t's round trip.
 *                    Those with barriers (launched with SYNC) need every thread
 *                    of a block to run them; blockDim.x <= 256, a power of two.
 *                    The element space [0, n) is cut into gridDim.x chunks of
 *                    C = ceil(ceil(n / gridDim.x) / blockDim.x) * blockDim.x
 *                    elements, block b taking [bC, min(n, (b+1)C)):
 *   (cg_tree_safe)   P_red(V, er, n, void *const *t): t[k][b] = the reduction of
 *                    block b's chunk (the identity when empty), each thread
 *                    folding every blockDim.x-th element, then a tree in
 *                    shared memory. REDUCE (and the one-segment SEG_ forms,
 *                    seg = 0): the runtime reduces t[k][0 .. gridDim.x) into the
 *                    result. SCAN: it scans t[k] (exclusive) in place, then
 *                    P_scan3(V, er, n, void *const *t): block b scans its chunk
 *                    tile by tile (blockDim.x elements, a Hillis-Steele scan in
 *                    shared memory), starting from t[k][b], into result k.
 *   SEG_REDUCE       P_sred1, P_sredw, P_sredb (V, er, m): segment groups of 1,
 *                    VK_WARP or blockDim.x threads (thread-, warp-, block-per-
 *                    segment; the runtime picks by segment count and average
 *                    length); each group folds its segments' elements (lane l
 *                    taking every G-th from the segment's l-th) and combines its
 *                    lanes in shared memory; result k[s] = the reduction of
 *                    segment s. n = m(sd). P_sred1 is sequential per segment,
 *                    so it is exact for every operator; the others exist only
 *                    when cg_tree_safe.
 *   SEG_SCAN         P_sscan1(V, er, m): one thread per segment, sequential; and,
 *                    when cg_tree_safe, P_sscanw, P_sscanb (V, er, m): a group of
 *                    VK_WARP or blockDim.x threads per segment, scanning it tile by
 *                    tile (G elements) in shared memory with a running carry.
 *   FILTER,          fused (barriers, chunks as P_red's): P_fcount(V, er, n, int32_t *cnt):
 *   PARTITION,       cnt[b] = the elements of block b's chunk whose pred holds; the
 *   SEG_FILTER of    (seg = 0: a SEG_FILTER only when its descriptor has one segment)
 *   one segment      runtime scans cnt into off (exclusive) and allocates the results;
 *                    P_fpack(V, er, n, const int32_t *off): block b scans its chunk's
 *                    flags tile by tile from off[b] and writes as P_pack does.
 *   FILTER,          P_flags(V, er, n, int32_t *f): f[i] = pred(i) ? 1 : 0; the
 *   PARTITION,       runtime scans f into p (exclusive, int32), allocates the
 *   SEG_FILTER       results (FILTER: count; PARTITION: count kept, n - count
 *                    dropped; SEG_FILTER: count, and the new descriptor whose
 *                    lengths are the per-segment sums of f), then
 *                    P_pack(V, er, n, const int32_t *f, const int32_t *p):
 *                    where f[i]: o_k[p[i]] = pull_k(i); PARTITION where !f[i]:
 *                    o_{k+nres/2}[i - p[i]] = pull_k(i).
 *   SEG_PERMUTE      P_claim and P_perm (as PERMUTE's, w of n(dsd)) over the source
 *                    elements, n = n(ssd); results of n(dsd), first copied from the
 *                    defaults (zeroed where none): s = seg_of(ssd, i); skip unless
 *                    flag(i) (when there is a flag); x = idx(i); s >= m(dsd) fails
 *                    VKF_DSTSEG(s); x outside [0, len(dsd, s)) fails VKF_PERM(i, x,
 *                    len); then o_k[off(dsd, s) + x] = pull_k(i) for the claimant.
 *   LIB              no entry point: the runtime runs RANK and RAND itself.
 * Compiled by a host C++ compiler instead of NVRTC/nvcc (no __CUDACC__),
 * the unit's prelude maps the CUDA words to host code (one thread, one
 * block), so the same text runs on the host: the emulated device of the
 * CUDA executor, which the tests run where there is no GPU. */
#ifndef TRANSLATE_CODEGEN_H
#define TRANSLATE_CODEGEN_H

#include <stddef.h>
#include "translate/lcu.h"

typedef enum { CG_C = 0, CG_CUDA } CgTarget;

/* A growable text buffer. */
typedef struct {
    char *s;
    size_t n, cap;
} CgBuf;

void cg_printf(CgBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cg_puts(CgBuf *b, const char *s);
void cg_buf_free(CgBuf *b);

/* The unit's prelude: the ABI, the scalar helpers. Once per unit. */
void cg_emit_prelude(CgBuf *b, CgTarget t);

/* Kernel K (of a plan with variable types TYPES[0..nvars)) under NAME.
 * Returns 0, or -1 with a reason in MSG for a kernel the generator cannot
 * express (the runtime then evaluates it with the λcu evaluator). */
int cg_emit_kernel(CgBuf *b, CgTarget t, const char *name, const LcuKernel *k, const LcuVarType *types,
                   int nvars, char *msg, size_t msglen);
/* The same; for CUDA, SOAC_END[j] (K->nsoacs entries, may be NULL) gets
 * the buffer's length after SOAC j's text. Each SOAC's text (its thunks
 * and entry points, all named NAME_s<j>_...) needs only the prelude: a
 * unit can be compiled in parts that cut a kernel between SOACs. For C,
 * every entry gets the length after the whole kernel. */
int cg_emit_kernel_ends(CgBuf *b, CgTarget t, const char *name, const LcuKernel *k, const LcuVarType *types,
                        int nvars, char *msg, size_t msglen, size_t *soac_end);

/* ---- shared by the skeleton emitters ------------------------------------ */

/* C type of an element of base type B: "int32_t" or "double". */
const char *cg_ctype(VsElem b);
/* The reduction operator's identity and combination, as C expressions of
 * the target (ACC and X are operand texts). */
void cg_rop_identity(CgBuf *b, VsRop r);
void cg_rop_combine(CgBuf *b, VsRop r, const char *acc, const char *x);

/* Emit thunk TH of SOAC number J of kernel NAME as an inline function
 * NAME_s<J>_<ROLE>(V, er, i, seg, hint, r0, r1, ...) writing its ARITY
 * results through r0...; result k has type OUT[k]. SEGVAR is the
 * descriptor the SOAC iterates over (its seg_of(SEGVAR, i) is the `seg`
 * argument when that descriptor has no segid table), or -1. With SEGOPT the
 * caller may pass seg = -1, and seg_of(SEGVAR, i) is then computed (a MAP
 * whose loop walks the segments only when the descriptor fits it). Sets
 * *NHINTS to the number of seg_of hint slots the caller must provide (at
 * least 1). Returns 0, or -1 when the thunk is beyond the generator (too
 * many locals, an ill-formed tree): the text is then unusable. */
int cg_emit_thunk(CgBuf *b, CgTarget t, const char *name, int j, const char *role, const LcuThunk *th,
                  const VsElem *out, int segvar, int segopt, const LcuVarType *types, int *nhints);

/* The thunks of SOAC J of kernel NAME (pull, idx, pred: those it has),
 * as cg_emit_thunk emits them; *HINTS = the hint slots the largest needs.
 * SEGVAR and SEGOPT as for cg_emit_thunk. Returns 0 or -1. */
int cg_emit_soac_thunks(CgBuf *b, CgTarget t, const char *name, int j, const LcuSoac *s, const LcuVarType *types,
                        int segvar, int segopt, int *hints);

/* The arrays a SOAC's thunks read at the thunk's own index, x[i] (VAR),
 * and at the segment of i in the descriptor the SOAC iterates over,
 * x[seg_of(segvar, i)] (SEGVARS): a skeleton that knows its range of i
 * lies within [0, len(x)) for each of the first, and that `seg` is i's
 * segment (no segid table) and the descriptor has no more segments than
 * each of the second have elements, calls the thunks' fast variants
 * NAME_s<J>_<ROLE>f, which read them without a check (the checked loads
 * stop gcc from vectorising a loop). ROLES: bit 0 pull, 1 idx, 2 pred: the
 * thunks that have such loads (the others have no fast variant). SCALAR:
 * those of them that still call what a vectorised loop cannot. */
#define CG_MAX_INDEX_LOADS 16
typedef struct {
    int n, nseg, roles, overflow;
    int scalar; /* as ROLES: the fast thunks that still call what a
                   vectorised loop cannot (a check that may fail, libm) */
    int var[CG_MAX_INDEX_LOADS];
    int segvars[CG_MAX_INDEX_LOADS];
} CgIndexLoads;

/* Emit the fast variants of SOAC J's thunks (both targets) and fill LOADS
 * (n = 0: none, the checked thunks are all there is). 0 or -1. */
int cg_emit_soac_fast_thunks(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types,
                             int segvar, int segopt, CgIndexLoads *loads);

/* Before a loop that may call fast thunks (both targets), INDENT first:
 * "int64_t lim = INIT, lowered to the shortest of the arrays L reads at
 * i;" and "int segok = each array L reads at i's segment of descriptor
 * SV has at least as many elements as SV has segments;". The loop takes
 * the fast thunks when its range of i lies below lim (and segok). INIT:
 * "INT64_MAX" (C), or a bound on the loop's range where the target has no
 * such macro (NVRTC: "n"). */
void cg_emit_lim(CgBuf *b, const CgIndexLoads *l, int sv, const char *indent, const char *init);

/* For a MAP: the descriptor X its pull most often asks seg_of(X, i) of, i
 * the MAP's own index (ties: the lowest number), or -1 when none. */
int cg_map_segvar(const LcuSoac *s, const LcuVarType *types);

/* 1 when every reduction operator of S (REDUCE, SCAN and their SEG_
 * forms) may combine its elements in any order and grouping (the CUDA
 * skeletons' block and group reductions): all but Float MAX and MIN,
 * whose NaN cases only the sequential fold gives. Float ADD and MUL are
 * included: their results then differ from the sequential ones in the
 * last bits (checked to a relative tolerance). */
int cg_tree_safe(const LcuSoac *s);

/* 1 when the CUDA text of S has the entry point P_<PHASE> ("map",
 * "claim", "perm", "vals", "red", "scan3", "sred1", ... as listed above):
 * the runtime looks up exactly these (cg_cuda.c, beside the emitters). */
int cg_cuda_has_entry(const LcuSoac *s, const char *phase);

/* Tests (tests/run_races.sh; the runtime hands down VINTERP_CG_PLANT_RACE
 * before it generates anything): ON = 1, the CUDA group reductions leave
 * out the barrier between their stores and the tree's first reads, a race
 * the emulated device's detector must report. */
void cg_set_plant_race(int on);

/* Base types of a SOAC's results (arrays), for thunk signatures: FIRST..
 * FIRST+N of s->res. */
void cg_result_bases(const LcuSoac *s, const LcuVarType *types, int first, int n, VsElem *out);

/* The skeleton emitters of the two targets (cg_c.c, cg_cuda.c), behind
 * cg_emit_kernel. */
int cg_emit_kernel_c(CgBuf *b, const char *name, const LcuKernel *k, const LcuVarType *types, int nvars, char *msg,
                     size_t msglen);
int cg_emit_kernel_cuda(CgBuf *b, const char *name, const LcuKernel *k, const LcuVarType *types, int nvars,
                        char *msg, size_t msglen, size_t *soac_end);

#endif

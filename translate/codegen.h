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
 * translate/lcu_eval.c).
 *
 * CUDA target: each SOAC j of a kernel becomes one or more
 * `extern "C" __global__` entry points named NAME_s<j>_<phase>, taking the
 * device copy of the variable table, an error record and the iteration
 * counts; the runtime drives them (allocations, launches, the scans of
 * counts) as cg_cuda.c documents. */
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

/* ---- shared by the skeleton emitters ------------------------------------ */

/* C type of an element of base type B: "int32_t" or "double". */
const char *cg_ctype(LcuBase b);
/* The reduction operator's identity and combination, as C expressions of
 * the target (ACC and X are operand texts). */
void cg_rop_identity(CgBuf *b, LcuRop r);
void cg_rop_combine(CgBuf *b, LcuRop r, const char *acc, const char *x);

/* Emit thunk TH of SOAC number J of kernel NAME as an inline function
 * NAME_s<J>_<ROLE>(V, er, i, seg, hint, r0, r1, ...) writing its ARITY
 * results through r0...; result k has type OUT[k]. SEGVAR is the
 * descriptor the SOAC iterates over (its seg_of(SEGVAR, i) is the `seg`
 * argument when that descriptor has no segid table), or -1. Sets *NHINTS to
 * the number of seg_of hint slots the caller must provide (at least 1).
 * Returns 0, or -1 when the thunk is beyond the generator (too many locals,
 * an ill-formed tree): the text is then unusable. */
int cg_emit_thunk(CgBuf *b, CgTarget t, const char *name, int j, const char *role, const LcuThunk *th,
                  const LcuBase *out, int segvar, const LcuVarType *types, int *nhints);

/* Base types of a SOAC's results (arrays), for thunk signatures: FIRST..
 * FIRST+N of s->res. */
void cg_result_bases(const LcuSoac *s, const LcuVarType *types, int first, int n, LcuBase *out);

/* The skeleton emitters of the two targets (cg_c.c, cg_cuda.c), behind
 * cg_emit_kernel. */
int cg_emit_kernel_c(CgBuf *b, const char *name, const LcuKernel *k, const LcuVarType *types, int nvars, char *msg,
                     size_t msglen);
int cg_emit_kernel_cuda(CgBuf *b, const char *name, const LcuKernel *k, const LcuVarType *types, int nvars,
                        char *msg, size_t msglen);

#endif

/* translate/codegen.c — the parts of code generation both targets share:
 * the text buffer, the unit prelude (ABI text, scalar helpers with the
 * reference evaluator's semantics), expressions and thunks (see
 * codegen.h). The skeletons are in cg_c.c and cg_cuda.c.
 *
 * Semantics kept from runtime/fused/lcu_eval.c: integer arithmetic wraps
 * (through uint32_t), integer division and remainder fail on 0 and on
 * INT32_MIN / -1, float -> int conversions give INT32_MIN outside the Int
 * range (cvttsd2si), shifts take the count mod 32, bool AND/OR/NOT are
 * logical, subscripts and segment numbers are bounds-checked, seg_of keeps
 * a hint per descriptor so that increasing indices find their segment in
 * O(1). Float literals are printed exactly (hexadecimal). */
#include "translate/codegen.h"
#include "translate/codegen_abi.h"
#include "translate/lcu_prims.h"
#include "vcode/xalloc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text buffer --------------------------------------------------------- */

static void grow(CgBuf *b, size_t need)
{
    if (b->n + need + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + need + 1)
        cap *= 2;
    b->s = vc_xrealloc(b->s, cap);
    b->cap = cap;
}

void cg_printf(CgBuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int len = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (len < 0)
        return;
    grow(b, (size_t)len);
    if ((size_t)len < sizeof small) {
        memcpy(b->s + b->n, small, (size_t)len + 1);
    } else {
        va_start(ap, fmt);
        vsnprintf(b->s + b->n, (size_t)len + 1, fmt, ap);
        va_end(ap);
    }
    b->n += (size_t)len;
}

void cg_puts(CgBuf *b, const char *s)
{
    size_t len = strlen(s);
    grow(b, len);
    memcpy(b->s + b->n, s, len + 1);
    b->n += len;
}

void cg_buf_free(CgBuf *b)
{
    free(b->s);
    b->s = NULL;
    b->n = b->cap = 0;
}

/* ---- prelude ------------------------------------------------------------- */

static const char abi_arr_text[] = VK_ABI_ARR(VK_ABI_STRING);
static const char abi_ctx_text[] = VK_ABI_CTX(VK_ABI_STRING);

/* VCODE's scalar semantics, the very text the runtime compiles. Its fault
 * codes are the ABI's. */
static const char semantics_text[] = VS_SEMANTICS(VS_STRING);
_Static_assert((int)VKF_DIV0 == (int)VS_DIV0 && (int)VKF_MOD0 == (int)VS_MOD0 && (int)VKF_DIVOVF == (int)VS_DIVOVF &&
                   (int)VKF_MODOVF == (int)VS_MODOVF && (int)VKF_RAND0 == (int)VS_RAND0 &&
                   (int)VKF_CHECKIDX == (int)VS_CHECKIDX,
               "the ABI's fault codes are vcode/semantics.h's");

/* The scalar helpers over it, in the common subset of C11 and CUDA C++:
 * faults go to the target's VK_FAIL. VK_FN, vk_errp, VK_FAIL and vk_f64
 * come from the target's head. */
static const char helpers_text[] =
    "#define VK_INT_MIN (-2147483647 - 1)\n"
    "VK_FN int32_t vk_idiv(vk_errp er, int32_t a, int32_t b, int64_t i)\n"
    "{\n"
    "    int32_t r = 0;\n"
    "    int f = vs_idiv(a, b, &r);\n"
    "    if (f) VK_FAIL(er, f, i, 0, 0);\n"
    "    return r;\n"
    "}\n"
    "VK_FN int32_t vk_imod(vk_errp er, int32_t a, int32_t b, int64_t i)\n"
    "{\n"
    "    int32_t r = 0;\n"
    "    int f = vs_imod(a, b, &r);\n"
    "    if (f) VK_FAIL(er, f, i, 0, 0);\n"
    "    return r;\n"
    "}\n"
    "VK_FN int32_t vk_randmod(vk_errp er, int32_t a, int32_t b, int64_t i)\n"
    "{\n"
    "    int32_t r = 0;\n"
    "    int f = vs_randmod(a, b, &r);\n"
    "    if (f) VK_FAIL(er, f, i, 0, 0);\n"
    "    return r;\n"
    "}\n"
    "VK_FN int32_t vk_checkidx(vk_errp er, int32_t a, int32_t b)\n"
    "{\n"
    "    if (vs_checkidx(a, b)) { VK_FAIL(er, VS_CHECKIDX, a, b, 0); return 0; }\n"
    "    return a;\n"
    "}\n"
    "VK_FN int32_t vk_ldi(vk_errp er, const vk_arr *x, int64_t j)\n"
    "{\n"
    "    if (j < 0 || j >= x->len) { VK_FAIL(er, VKF_SUB, j, x->len, 0); return 0; }\n"
    "    return ((const int32_t *)x->d)[j];\n"
    "}\n"
    "VK_FN double vk_ldf(vk_errp er, const vk_arr *x, int64_t j)\n"
    "{\n"
    "    if (j < 0 || j >= x->len) { VK_FAIL(er, VKF_SUB, j, x->len, 0); return 0.0; }\n"
    "    return ((const double *)x->d)[j];\n"
    "}\n"
    "VK_SEG_FN int32_t vk_seg_of(vk_errp er, const vk_arr *sd, int var, int64_t i, int64_t *hint)\n"
    "{\n"
    "    int64_t n = sd->n, m = sd->len;\n"
    "    const int64_t *o = sd->off;\n"
    "    if (i < 0 || i >= n) { VK_FAIL(er, VKF_SEGOF, i, var, n); return 0; }\n"
    "    if (sd->segid) {\n"
    "        int32_t s = sd->segid[i];\n"
    "        if (s < 0) { VK_FAIL(er, VKF_NOSEG, i, var, 0); return 0; }\n"
    "        return s;\n"
    "    }\n"
    "    if (sd->ulen > 0) return (int32_t)(i / sd->ulen);\n"
    /* the last segment starting at or before i: galloping forward from
     * the segment of this thread's previous element (a thread's elements
     * come in increasing order), then a binary search in the bracket */
    "    int64_t k = *hint, lo = k < m && o[k] <= i ? k : 0, hi = m - 1;\n"
    "    for (int64_t step = 1; lo + step < m; step *= 2) {\n"
    "        if (o[lo + step] > i) { hi = lo + step - 1; break; }\n"
    "        lo += step;\n"
    "    }\n"
    "    while (lo < hi) {\n"
    "        int64_t mid = lo + (hi - lo + 1) / 2;\n"
    "        if (o[mid] <= i) lo = mid; else hi = mid - 1;\n"
    "    }\n"
    "    *hint = lo;\n"
    "    return (int32_t)lo;\n"
    "}\n"
    "VK_SEG_FN int32_t vk_seg_start(vk_errp er, const vk_arr *sd, int var, int64_t s)\n"
    "{\n"
    "    if (s < 0 || s >= sd->len) { VK_FAIL(er, VKF_SEGSTART, s, var, sd->len); return 0; }\n"
    "    return (int32_t)sd->off[s];\n"
    "}\n"
    "VK_SEG_FN int32_t vk_seg_len(vk_errp er, const vk_arr *sd, int var, int64_t s)\n"
    "{\n"
    "    if (s < 0 || s >= sd->len) { VK_FAIL(er, VKF_SEGLEN, s, var, sd->len); return 0; }\n"
    "    return ((const int32_t *)sd->d)[s];\n"
    "}\n";

static const char c_head[] =
    "#include <stdint.h>\n"
    "#include <string.h>\n"
    "#include <math.h>\n"
    /* the threads the parallel loops may use (1 without OpenMP) */
    "#ifdef _OPENMP\n"
    "#include <omp.h>\n"
    "#define VK_THREADS() omp_get_max_threads()\n"
    "#else\n"
    "#define VK_THREADS() 1\n"
    "#endif\n"
    /* Always inline: a unit of a large program is hundreds of kilobytes, past
     * the size where the compiler stops inlining on its own, and a bounds-
     * checked load left as a call costs more than the load. */
    "#if defined(__GNUC__)\n"
    "#define VK_FN static inline __attribute__((always_inline))\n"
    "#else\n"
    "#define VK_FN static inline\n"
    "#endif\n"
    "#define VK_RESTRICT restrict\n"
    "#define VK_SEG_FN VK_FN\n";

static const char c_tail[] =
    "typedef vk_ctx *vk_errp;\n"
    "#define VK_FAIL(er, code, a, b, c) ((er)->fail((er), (code), (a), (b), (c)))\n"
    "VK_FN double vk_f64(uint64_t u) { double d; memcpy(&d, &u, sizeof d); return d; }\n";

/* The CUDA head serves three compilers: NVRTC (no standard headers: its
 * own integer types), nvcc, and a host C++ compiler, for which the CUDA
 * words are mapped to host code (the emulated device, runtime/device/cuda_emul.c):
 * the thread coordinates and the barrier are globals of the unit that the
 * emulator sets before it runs each thread, and shared memory is static. */
static const char cuda_head[] =
    "#if defined(__CUDACC_RTC__)\n"
    "typedef signed char int8_t;\n"
    "typedef unsigned char uint8_t;\n"
    "typedef int int32_t;\n"
    "typedef unsigned int uint32_t;\n"
    "typedef long long int64_t;\n"
    "typedef unsigned long long uint64_t;\n"
    "#else\n"
    "#include <stdint.h>\n"
    "#include <string.h>\n"
    "#include <math.h>\n"
    "#endif\n"
    "#ifdef __CUDACC__\n"
    "#define VK_WARP 32u\n"
    "#define VK_CAS(p, c, v) atomicCAS((p), (c), (v))\n"
    "#define VK_AMAX(p, v) atomicMax((p), (v))\n"
    "#define VK_FENCE() __threadfence()\n"
    "#define VK_AS_DOUBLE(x) __longlong_as_double(x)\n"
    "#define VK_SHARED(T, name, len, slot) __shared__ T name[len]\n"
    "#else\n"
    "#define __global__\n"
    "#define __device__\n"
    "#define __forceinline__ inline\n"
    "#define __shared__ static\n"
    "struct vk_dim { unsigned x; };\n"
    "extern \"C\" {\n"
    "vk_dim vk_emu_bidx, vk_emu_tidx, vk_emu_bdim, vk_emu_gdim;\n"
    "unsigned vk_emu_warp;\n"
    "void (*vk_emu_sync)(void);\n"
    "void *(*vk_emu_shmem)(int slot, unsigned long bytes);\n"
    "}\n"
    "#define blockIdx vk_emu_bidx\n"
    "#define threadIdx vk_emu_tidx\n"
    "#define blockDim vk_emu_bdim\n"
    "#define gridDim vk_emu_gdim\n"
    "#define VK_WARP vk_emu_warp\n"
    "static inline void __syncthreads(void) { vk_emu_sync(); }\n"
    "static inline unsigned long long VK_CAS(unsigned long long *p, unsigned long long c, unsigned long long v)\n"
    "{\n"
    "    __atomic_compare_exchange_n(p, &c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);\n"
    "    return c;\n"
    "}\n"
    "#define VK_FENCE() __atomic_thread_fence(__ATOMIC_SEQ_CST)\n"
    "static inline void VK_AMAX(int32_t *p, int32_t v)\n"
    "{\n"
    "    int32_t old = __atomic_load_n(p, __ATOMIC_RELAXED);\n"
    "    while (old < v && !__atomic_compare_exchange_n(p, &old, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {}\n"
    "}\n"
    "#define VK_SHARED(T, name, len, slot) T *const name = (T *)vk_emu_shmem((slot), sizeof(T) * (len))\n"
    "static inline double VK_AS_DOUBLE(long long x) { double d; memcpy(&d, &x, sizeof d); return d; }\n"
    "#endif\n"
    "#define VK_FN static __device__ __forceinline__\n"
    /* a part with a large SOAC (VK_BIG_PART, cg_unit_part_text): the
     * segment helpers are called, not inlined at each of their uses (a
     * MAP of bh.5000 with 12 results and a hundred segment lookups: 600 KB
     * of PTX, NVRTC and ptxas 40 s; called: 11 s) */
    "#if defined(VK_BIG_PART) && defined(__CUDACC__)\n"
    "#define VK_SEG_FN static __device__ __noinline__\n"
    "#else\n"
    "#define VK_SEG_FN VK_FN\n"
    "#endif\n"
    /* the variable table is read-only to a kernel and no data pointer
     * points into it: its entries load once, through the read-only path */
    "#define VK_RESTRICT __restrict__\n";

static const char cuda_tail[] =
    "/* The error record: er[0] the first failure's code (0: none), er[1..3]\n"
    " * its operands. The first failing thread wins; the others go on, and\n"
    " * the runtime reports the record after the kernel. */\n"
    "typedef unsigned long long *vk_errp;\n"
    "VK_FN void vk_fail_dev(vk_errp er, int code, int64_t a, int64_t b, int64_t c)\n"
    "{\n"
    "    if (VK_CAS(er, 0ULL, (unsigned long long)code) == 0ULL) {\n"
    "        er[1] = (unsigned long long)a; er[2] = (unsigned long long)b; er[3] = (unsigned long long)c;\n"
    "        VK_FENCE();\n"
    "    }\n"
    "}\n"
    "#define VK_FAIL(er, code, a, b, c) vk_fail_dev((er), (code), (a), (b), (c))\n"
    "VK_FN double vk_f64(uint64_t u) { return VK_AS_DOUBLE((long long)u); }\n"
    "#define VK_GRID_LOOP(i, n) for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \\\n"
    "                               i += (int64_t)blockDim.x * gridDim.x)\n";

void cg_emit_prelude(CgBuf *b, CgTarget t)
{
    cg_printf(b, "/* generated by vinterp from fused lambda-cu kernels (ABI %d, %s target) */\n",
              VK_ABI_VERSION, t == CG_CUDA ? "CUDA" : "C");
    cg_puts(b, t == CG_CUDA ? cuda_head : c_head);
    if (t == CG_CUDA)
        cg_printf(b, "extern \"C\" __device__ const int vk_unit_block = %d;\n", VK_CUDA_BLOCK);
    cg_puts(b, abi_arr_text);
    cg_puts(b, "\n");
    if (t == CG_C) {
        cg_puts(b, abi_ctx_text);
        cg_puts(b, "\n");
    }
    cg_puts(b, t == CG_CUDA ? cuda_tail : c_tail);
    cg_puts(b, "#define VS_FN VK_FN\n");
    cg_puts(b, semantics_text);
    cg_puts(b, "\n");
    cg_puts(b, helpers_text);
}

/* ---- types and reduction operators --------------------------------------- */

const char *cg_ctype(VsElem b) { return b == VS_FLOAT ? "double" : "int32_t"; }

static void emit_double(CgBuf *b, double d)
{
    if (isfinite(d)) {
        cg_printf(b, "%a", d);
    } else {
        uint64_t u;
        memcpy(&u, &d, sizeof u);
        cg_printf(b, "vk_f64(0x%016llxULL)", (unsigned long long)u);
    }
}

static int rop_is_float(VsRop r) { return r == VS_FADD || r == VS_FMUL || r == VS_FMAX || r == VS_FMIN; }

void cg_rop_identity(CgBuf *b, VsRop r)
{
    if (rop_is_float(r)) {
        cg_puts(b, "(");
        emit_double(b, vs_rop_fident(r));
        cg_puts(b, ")");
    } else {
        int32_t v = vs_rop_iident(r);
        if (v == INT32_MIN)
            cg_puts(b, "VK_INT_MIN");
        else
            cg_printf(b, "(%d)", (int)v);
    }
}

/* The combine is the pasted semantics' (vs_rop_*combine), the operator a
 * constant: the compiler folds it to the one expression. */
void cg_rop_combine(CgBuf *b, VsRop r, const char *a, const char *x)
{
    cg_printf(b, "%s = vs_rop_%ccombine(%d, %s, %s);", a, rop_is_float(r) ? 'f' : 'i', (int)r, a, x);
}

int cg_tree_safe(const LcuSoac *s)
{
    for (int r = 0; r < s->nres; r++)
        if (!vs_rop_tree_ok(s->rops[r]))
            return 0;
    return 1;
}

void cg_result_bases(const LcuSoac *s, const LcuVarType *types, int first, int n, VsElem *out)
{
    for (int r = 0; r < n; r++)
        out[r] = types[s->res[first + r]].base;
}

/* ---- expressions ----------------------------------------------------------- */

typedef struct {
    CgBuf *b;
    const LcuVarType *types;
    int segvar;
    int segopt;         /* `seg` may be -1: then seg_of(segvar, i) is computed */
    int nlocals;
    struct { int local; VsElem type; } locals[256];
    int nhints;
    int hintvar[64];
    int overflow;       /* too many locals or hint slots */
    int fast;           /* x[i] (i the thunk's own index) and x[seg_of(segvar,
                           i)] read without a check: the caller has checked
                           i < len(x), resp. 0 <= seg < len(x) */
    int scalar;         /* it calls what a vectorised loop cannot: a check
                           that may fail (VK_FAIL), a libm function */
} Ex;

static void note_local(Ex *x, int local, VsElem t)
{
    for (int k = 0; k < x->nlocals; k++)
        if (x->locals[k].local == local && x->locals[k].type == t)
            return;
    if (x->nlocals == (int)(sizeof x->locals / sizeof x->locals[0])) {
        x->overflow = 1;
        return;
    }
    x->locals[x->nlocals].local = local;
    x->locals[x->nlocals].type = t;
    x->nlocals++;
}

static int hint_slot(Ex *x, int var)
{
    for (int k = 0; k < x->nhints; k++)
        if (x->hintvar[k] == var)
            return k;
    if (x->nhints == (int)(sizeof x->hintvar / sizeof x->hintvar[0])) {
        x->overflow = 1;
        return 0;
    }
    x->hintvar[x->nhints] = var;
    return x->nhints++;
}

static int seg_is_iter(const Ex *x, const LcuExpr *e)
{
    return x->segvar >= 0 && e->var == x->segvar && e->kids[0]->kind == LE_INDEX;
}

static void collect(Ex *x, const LcuExpr *e)
{
    if (e->kind == LE_LET)
        note_local(x, e->local, e->kids[0]->type);
    else if (e->kind == LE_LOCAL)
        note_local(x, e->local, e->type);
    else if (e->kind == LE_SEG_OF && (x->segopt || !seg_is_iter(x, e)))
        (void)hint_slot(x, e->var);
    for (int k = 0; k < e->nkids; k++)
        collect(x, e->kids[k]);
}

static void local_name(CgBuf *b, int local, VsElem t)
{
    cg_printf(b, "l%d%c", local, t == VS_FLOAT ? 'f' : 'i');
}

static void ex(Ex *x, const LcuExpr *e);

/* FN(a, b): a function of the pasted vcode/semantics.h. */
static void ex_call2(Ex *x, const char *fn, const LcuExpr *e)
{
    cg_printf(x->b, "%s(", fn);
    ex(x, e->kids[0]);
    cg_puts(x->b, ", ");
    ex(x, e->kids[1]);
    cg_puts(x->b, ")");
}

static void ex_call1(Ex *x, const char *fn, const LcuExpr *a)
{
    cg_printf(x->b, "%s(", fn);
    ex(x, a);
    cg_puts(x->b, ")");
}

static void ex_call_er(Ex *x, const char *fn, const LcuExpr *e, int with_index)
{
    x->scalar = 1;
    cg_printf(x->b, "%s(er, ", fn);
    ex(x, e->kids[0]);
    cg_puts(x->b, ", ");
    ex(x, e->kids[1]);
    cg_puts(x->b, with_index ? ", i)" : ")");
}

static void ex_prim(Ex *x, const LcuExpr *e)
{
    CgBuf *b = x->b;
    VsElem t = e->kids[0]->type;
    int isf = t == VS_FLOAT, isb = t == VS_BOOL;
    switch (e->prim) {
    case LP_ADD: ex_call2(x, isf ? "vs_fadd" : "vs_iadd", e); return;
    case LP_SUB: ex_call2(x, isf ? "vs_fsub" : "vs_isub", e); return;
    case LP_MUL: ex_call2(x, isf ? "vs_fmul" : "vs_imul", e); return;
    case LP_DIV: if (isf) ex_call2(x, "vs_fdiv", e); else ex_call_er(x, "vk_idiv", e, 1); return;
    case LP_MOD: ex_call_er(x, "vk_imod", e, 1); return;
    case LP_LT: ex_call2(x, isf ? "vs_flt" : "vs_ilt", e); return;
    case LP_LE: ex_call2(x, isf ? "vs_fle" : "vs_ile", e); return;
    case LP_GT: ex_call2(x, isf ? "vs_fgt" : "vs_igt", e); return;
    case LP_GE: ex_call2(x, isf ? "vs_fge" : "vs_ige", e); return;
    case LP_EQ: ex_call2(x, isf ? "vs_feq" : "vs_ieq", e); return;
    case LP_NE: ex_call2(x, isf ? "vs_fne" : "vs_ine", e); return;
    case LP_AND: ex_call2(x, isb ? "vs_band" : "vs_iand", e); return;
    case LP_OR: ex_call2(x, isb ? "vs_bor" : "vs_ior", e); return;
    case LP_XOR: ex_call2(x, "vs_ixor", e); return;
    case LP_NOT: ex_call1(x, isb ? "vs_bnot" : "vs_inot", e->kids[0]); return;
    case LP_NEG: ex_call1(x, isf ? "vs_fneg" : "vs_ineg", e->kids[0]); return;
    case LP_FLOOR: ex_call1(x, "vs_floor", e->kids[0]); return;
    case LP_CEIL: ex_call1(x, "vs_ceil", e->kids[0]); return;
    case LP_TRUNC: ex_call1(x, "vs_f2i", e->kids[0]); return;
    case LP_ROUND: ex_call1(x, "vs_round", e->kids[0]); return;
    case LP_LOG: case LP_SQRT: case LP_EXP: case LP_SIN: case LP_COS: case LP_TAN:
    case LP_ASIN: case LP_ACOS: case LP_ATAN: case LP_SINH: case LP_COSH: case LP_TANH:
        x->scalar |= e->prim != LP_SQRT;
        ex_call1(x, lcu_prims[e->prim].math, e->kids[0]);
        return;
    case LP_I_TO_F: ex_call1(x, "vs_i2f", e->kids[0]); return;
    case LP_I_TO_B: ex_call1(x, "vs_i2b", e->kids[0]); return;
    case LP_B_TO_I: ex_call1(x, "vs_b2i", e->kids[0]); return;
    case LP_RANDMOD: ex_call_er(x, "vk_randmod", e, 1); return;
    case LP_CHECKIDX: ex_call_er(x, "vk_checkidx", e, 0); return;
    default: { /* an instruction defined by vcode/semantics.h, pasted above */
        Opcode op = (unsigned)e->prim < LP_COUNT ? lcu_prims[e->prim].op : OP_COUNT;
        const char *fn = !vc_op_is_sem(op) ? NULL : isf ? vc_ops[op].sem_float_name : vc_ops[op].sem_int_name;
        if (fn && (isf ? vc_ops[op].sem_float != NULL : vc_ops[op].sem_int != NULL)) {
            cg_printf(b, "%s(", fn);
            ex(x, e->kids[0]);
            cg_puts(b, ", ");
            ex(x, e->kids[1]);
            cg_puts(b, ")");
            return;
        }
        break;
    }
    }
    x->overflow = 1;
    cg_puts(b, "0");
}

static void ex(Ex *x, const LcuExpr *e)
{
    CgBuf *b = x->b;
    switch (e->kind) {
    case LE_INT:
        if (e->ival == INT32_MIN)
            cg_puts(b, "VK_INT_MIN");
        else
            cg_printf(b, "%s%d%s", e->ival < 0 ? "(" : "", (int)e->ival, e->ival < 0 ? ")" : "");
        return;
    case LE_BOOL: cg_printf(b, "%d", e->ival != 0); return;
    case LE_FLOAT:
        cg_puts(b, "(");
        emit_double(b, e->fval);
        cg_puts(b, ")");
        return;
    case LE_INDEX: cg_puts(b, "((int32_t)i)"); return;
    case LE_LOCAL: local_name(b, e->local, e->type); return;
    case LE_SUB:
        if (x->fast && e->kids[0]->kind == LE_INDEX) {
            cg_printf(b, "((const %s *)V[%d].d)[i]", cg_ctype(e->type), e->var);
            return;
        }
        if (x->fast && e->kids[0]->kind == LE_SEG_OF && seg_is_iter(x, e->kids[0])) {
            cg_printf(b, "((const %s *)V[%d].d)[seg]", cg_ctype(e->type), e->var);
            return;
        }
        x->scalar = 1;
        cg_printf(b, "%s(er, &V[%d], ", e->type == VS_FLOAT ? "vk_ldf" : "vk_ldi", e->var);
        if (e->kids[0]->kind == LE_INDEX)
            cg_puts(b, "i");
        else
            ex(x, e->kids[0]);
        cg_puts(b, ")");
        return;
    case LE_LEN:
        /* the runtime stores n of a descriptor clamped at 0 */
        cg_printf(b, "((int32_t)V[%d].%s)", e->var, x->types[e->var].kind == LV_SEGDES ? "n" : "len");
        return;
    case LE_PRIM: ex_prim(x, e); return;
    case LE_IF:
        cg_puts(b, "(");
        ex(x, e->kids[0]);
        cg_puts(b, " ? ");
        ex(x, e->kids[1]);
        cg_puts(b, " : ");
        ex(x, e->kids[2]);
        cg_puts(b, ")");
        return;
    case LE_LET:
        cg_puts(b, "(");
        local_name(b, e->local, e->kids[0]->type);
        cg_puts(b, " = ");
        ex(x, e->kids[0]);
        cg_puts(b, ", ");
        ex(x, e->kids[1]);
        cg_puts(b, ")");
        return;
    case LE_SEG_OF:
        if (seg_is_iter(x, e) && !x->segopt) {
            cg_puts(b, "((int32_t)seg)");
            return;
        }
        x->scalar = 1;
        if (seg_is_iter(x, e))
            cg_puts(b, "(seg >= 0 ? (int32_t)seg : ");
        cg_printf(b, "vk_seg_of(er, &V[%d], %d, ", e->var, e->var);
        ex(x, e->kids[0]);
        cg_printf(b, ", &hint[%d])", hint_slot(x, e->var));
        if (seg_is_iter(x, e))
            cg_puts(b, ")");
        return;
    case LE_SEG_START:
    case LE_SEG_LEN:
        x->scalar = 1;
        cg_printf(b, "%s(er, &V[%d], %d, ", e->kind == LE_SEG_START ? "vk_seg_start" : "vk_seg_len", e->var,
                  e->var);
        ex(x, e->kids[0]);
        cg_puts(b, ")");
        return;
    case LE_SEG_COUNT: cg_printf(b, "((int32_t)V[%d].len)", e->var); return;
    case LE_TUPLE: break;
    }
    x->overflow = 1;
    cg_puts(b, "0");
}

/* The body in tail position: lets and ifs around the tuple become
 * statements; results are written through r0, r1, ... */
static void tail(Ex *x, const LcuExpr *e, int arity, int depth)
{
    CgBuf *b = x->b;
    for (;;) {
        cg_printf(b, "%*s", 4 * depth, "");
        switch (e->kind) {
        case LE_TUPLE:
            if (e->nkids != arity) {
                x->overflow = 1;
                cg_puts(b, ";\n");
                return;
            }
            for (int k = 0; k < arity; k++) {
                if (k)
                    cg_printf(b, "%*s", 4 * depth, "");
                cg_printf(b, "*r%d = ", k);
                ex(x, e->kids[k]);
                cg_puts(b, ";\n");
            }
            return;
        case LE_LET:
            local_name(b, e->local, e->kids[0]->type);
            cg_puts(b, " = ");
            ex(x, e->kids[0]);
            cg_puts(b, ";\n");
            e = e->kids[1];
            continue;
        case LE_IF:
            cg_puts(b, "if (");
            ex(x, e->kids[0]);
            cg_puts(b, ") {\n");
            tail(x, e->kids[1], arity, depth + 1);
            cg_printf(b, "%*s} else {\n", 4 * depth, "");
            tail(x, e->kids[2], arity, depth + 1);
            cg_printf(b, "%*s}\n", 4 * depth, "");
            return;
        default:
            if (arity != 1)
                x->overflow = 1;
            cg_puts(b, "*r0 = ");
            ex(x, e);
            cg_puts(b, ";\n");
            return;
        }
    }
}

static int emit_thunk(CgBuf *b, const char *name, int j, const char *role, const LcuThunk *th, const VsElem *out,
                      int segvar, int segopt, const LcuVarType *types, int *nhints, int fast, int *scalar)
{
    Ex *x = vc_xcalloc(1, sizeof *x);
    x->b = b;
    x->types = types;
    x->segvar = segvar;
    x->segopt = segopt;
    x->fast = fast;
    collect(x, th->body);
    cg_printf(b, "VK_FN void %s_s%d_%s%s(const vk_arr *VK_RESTRICT V, vk_errp er, int64_t i, int64_t seg, int64_t *hint", name,
              j, role, fast ? "f" : "");
    for (int k = 0; k < th->arity; k++)
        cg_printf(b, ", %s *r%d", cg_ctype(out[k]), k);
    cg_puts(b, ")\n{\n    (void)V; (void)er; (void)i; (void)seg; (void)hint;\n");
    for (int k = 0; k < x->nlocals; k++) {
        cg_printf(b, "    %s ", cg_ctype(x->locals[k].type));
        local_name(b, x->locals[k].local, x->locals[k].type);
        cg_puts(b, ";\n");
    }
    tail(x, th->body, th->arity, 1);
    cg_puts(b, "}\n");
    *nhints = x->nhints > 0 ? x->nhints : 1;
    if (scalar)
        *scalar = x->scalar;
    int bad = x->overflow;
    free(x);
    return bad ? -1 : 0;
}

int cg_emit_thunk(CgBuf *b, CgTarget t, const char *name, int j, const char *role, const LcuThunk *th,
                  const VsElem *out, int segvar, int segopt, const LcuVarType *types, int *nhints)
{
    (void)t;
    return emit_thunk(b, name, j, role, th, out, segvar, segopt, types, nhints, 0, NULL);
}

static void add_load(int *n, int *var, int v, int *overflow)
{
    for (int k = 0; k < *n; k++)
        if (var[k] == v)
            return;
    if (*n == CG_MAX_INDEX_LOADS)
        *overflow = 1;
    else
        var[(*n)++] = v;
}

/* The arrays E reads at the thunk's own index, x[i], and at its segment
 * of SEGVAR, x[seg_of(SEGVAR, i)], into L. */
static void index_loads(const LcuExpr *e, int segvar, CgIndexLoads *l)
{
    if (e->kind == LE_SUB && e->kids[0]->kind == LE_INDEX)
        add_load(&l->n, l->var, e->var, &l->overflow);
    if (e->kind == LE_SUB && segvar >= 0 && e->kids[0]->kind == LE_SEG_OF && e->kids[0]->var == segvar &&
        e->kids[0]->kids[0]->kind == LE_INDEX)
        add_load(&l->nseg, l->segvars, e->var, &l->overflow);
    for (int k = 0; k < e->nkids; k++)
        index_loads(e->kids[k], segvar, l);
}

void cg_emit_lim(CgBuf *b, const CgIndexLoads *l, int sv, const char *indent, const char *init)
{
    cg_printf(b, "%sint64_t lim = %s;\n", indent, init);
    for (int k = 0; k < l->n; k++)
        cg_printf(b, "%sif (V[%d].len < lim) lim = V[%d].len;\n", indent, l->var[k], l->var[k]);
    cg_printf(b, "%sint segok = 1;\n", indent);
    for (int k = 0; k < l->nseg; k++)
        cg_printf(b, "%sif (V[%d].len < V[%d].len) segok = 0;\n", indent, l->segvars[k], sv);
    cg_printf(b, "%s(void)lim; (void)segok;\n", indent);
}

int cg_emit_soac_fast_thunks(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types,
                             int segvar, int segopt, CgIndexLoads *loads)
{
    memset(loads, 0, sizeof *loads);
    const LcuThunk *th[3] = { s->pull, s->idx, s->pred };
    static const char *const role[3] = { "pull", "idx", "pred" };
    for (int r = 0; r < 3; r++) {
        if (!th[r])
            continue;
        int before = loads->n + loads->nseg;
        index_loads(th[r]->body, segvar, loads);
        if (loads->n + loads->nseg > before || loads->overflow)
            loads->roles |= 1 << r;
    }
    if (loads->overflow || !loads->roles) {
        memset(loads, 0, sizeof *loads);
        return 0;
    }
    int rc = 0, h;
    for (int r = 0; r < 3; r++) {
        if (!(loads->roles & (1 << r)))
            continue;
        VsElem out[LCU_MAXRES], one = r == 2 ? VS_BOOL : VS_INT;
        if (r == 0) {
            if (th[0]->arity > LCU_MAXRES)
                return -1;
            cg_result_bases(s, types, 0, th[0]->arity, out);
        }
        int scalar = 0;
        rc |= emit_thunk(b, name, j, role[r], th[r], r == 0 ? out : &one, segvar, segopt, types, &h, 1, &scalar);
        if (scalar)
            loads->scalar |= 1 << r;
    }
    return rc;
}

static void count_seg_of(const LcuExpr *e, const LcuVarType *types, int *var, int *cnt, int *nv)
{
    if (e->kind == LE_SEG_OF && e->kids[0]->kind == LE_INDEX && types[e->var].kind == LV_SEGDES) {
        int k = 0;
        while (k < *nv && var[k] != e->var)
            k++;
        if (k == *nv && *nv < 16) {
            var[k] = e->var;
            cnt[k] = 0;
            (*nv)++;
        }
        if (k < *nv)
            cnt[k]++;
    }
    for (int k = 0; k < e->nkids; k++)
        count_seg_of(e->kids[k], types, var, cnt, nv);
}

int cg_map_segvar(const LcuSoac *s, const LcuVarType *types)
{
    if (s->kind != LS_MAP || !s->pull)
        return -1;
    int var[16], cnt[16], nv = 0, best = -1;
    count_seg_of(s->pull->body, types, var, cnt, &nv);
    for (int k = 0; k < nv; k++)
        if (best < 0 || cnt[k] > cnt[best] || (cnt[k] == cnt[best] && var[k] < var[best]))
            best = k;
    return best < 0 ? -1 : var[best];
}

/* The thunks of SOAC J (pull, idx, pred; those it has). */
int cg_emit_soac_thunks(CgBuf *b, CgTarget t, const char *name, int j, const LcuSoac *s, const LcuVarType *types,
                        int segvar, int segopt, int *hints)
{
    VsElem out[LCU_MAXRES];
    int h = 1, rc = 0;
    *hints = 1;
    if (s->pull) {
        int ar = s->pull->arity;
        if (ar > LCU_MAXRES)
            return -1;
        cg_result_bases(s, types, 0, ar, out);
        rc |= cg_emit_thunk(b, t, name, j, "pull", s->pull, out, segvar, segopt, types, &h);
        if (h > *hints)
            *hints = h;
    }
    VsElem one = VS_INT;
    if (s->idx) {
        rc |= cg_emit_thunk(b, t, name, j, "idx", s->idx, &one, segvar, segopt, types, &h);
        if (h > *hints)
            *hints = h;
    }
    if (s->pred) {
        one = VS_BOOL;
        rc |= cg_emit_thunk(b, t, name, j, "pred", s->pred, &one, segvar, segopt, types, &h);
        if (h > *hints)
            *hints = h;
    }
    return rc;
}

/* ---- kernels ---------------------------------------------------------------- */

int cg_emit_kernel(CgBuf *b, CgTarget t, const char *name, const LcuKernel *k, const LcuVarType *types, int nvars,
                   char *msg, size_t msglen)
{
    return cg_emit_kernel_ends(b, t, name, k, types, nvars, msg, msglen, NULL);
}

int cg_emit_kernel_ends(CgBuf *b, CgTarget t, const char *name, const LcuKernel *k, const LcuVarType *types,
                        int nvars, char *msg, size_t msglen, size_t *soac_end)
{
    for (int j = 0; j < k->nsoacs; j++) {
        const LcuSoac *s = k->soacs[j];
        if (s->nres < 1 || s->nres > LCU_MAXRES) {
            snprintf(msg, msglen, "kernel K%d: SOAC %d with %d results", k->id, j, s->nres);
            return -1;
        }
        for (int r = 0; r < s->nres; r++)
            if (s->res[r] < 0 || s->res[r] >= nvars) {
                snprintf(msg, msglen, "kernel K%d: result x%d outside the plan", k->id, s->res[r]);
                return -1;
            }
    }
    size_t mark = b->n;
    int rc = t == CG_CUDA ? cg_emit_kernel_cuda(b, name, k, types, nvars, msg, msglen, soac_end)
                          : cg_emit_kernel_c(b, name, k, types, nvars, msg, msglen);
    if (rc == 0 && t != CG_CUDA && soac_end)
        for (int j = 0; j < k->nsoacs; j++)
            soac_end[j] = b->n;
    if (rc < 0) {
        b->n = mark; /* drop the partial text */
        if (b->s)
            b->s[mark] = '\0';
    }
    return rc;
}

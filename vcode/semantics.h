/* vcode/semantics.h — what VCODE's scalar operations mean, written once:
 * every scalar operation as a named function (vs_NAME: Int, Float and Bool
 * arithmetic, comparisons, conversions, the math library), the ones that
 * can fail or saturate, the RAND range step, the reduction operators (identity, combine, whether a
 * tree may combine them), and the run-time faults with their messages
 * (vcode/SPEC.md §4.1-§4.3, §4.14).
 *
 * The reference's operations (runtime/interp), the λcu evaluator
 * (runtime/fused/lcu_eval.c), the translator's rewrite rules and code
 * generator (translate/), the emulated device (runtime/device) and the CUDA
 * primitives (kernels/) all include it; the code generator pastes the text
 * of VS_SEMANTICS (stringified) at the top of every generated unit, as it
 * does the ABI (translate/codegen_abi.h), so generated code cannot drift
 * from the interpreter. Hence the subset of C11 that CUDA C++ also
 * compiles, and no preprocessor lines inside VS_SEMANTICS. VS_FN is
 * `static inline` unless the includer defines it (CUDA: __host__
 * __device__; the generated prelude: the target's VK_FN).
 *
 * Adding a binary scalar operation: one line here (vs_NAME), one in
 * vcode/optable.c, one in the lowering table (translate/lower.c). */
#ifndef VCODE_SEMANTICS_H
#define VCODE_SEMANTICS_H

#include <math.h>
#include <stdint.h>

#ifndef VS_FN
#define VS_FN static inline
#endif

#define VS_SEMANTICS(X) X(                                                    \
    enum vs_fault {                                                           \
        VS_OK = 0, VS_DIV0 = 1, VS_MOD0 = 2, VS_DIVOVF = 3, VS_MODOVF = 4,    \
        VS_RAND0 = 5, VS_CHECKIDX = 6                                         \
    };                                                                        \
    enum vs_rop {                                                             \
        VS_IADD, VS_IMUL, VS_IMAX, VS_IMIN, VS_IAND, VS_IOR, VS_IXOR,         \
        VS_FADD, VS_FMUL, VS_FMAX, VS_FMIN, VS_BAND, VS_BOR, VS_BXOR,         \
        VS_NROPS                                                              \
    };                                                                        \
    /* Int arithmetic wraps (mod 2^32); Bool operands are read as != 0. */   \
    VS_FN int32_t vs_iadd(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); } \
    VS_FN int32_t vs_isub(int32_t a, int32_t b) { return (int32_t)((uint32_t)a - (uint32_t)b); } \
    VS_FN int32_t vs_imul(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); } \
    VS_FN int32_t vs_ineg(int32_t a) { return (int32_t)(0u - (uint32_t)a); } \
    VS_FN int32_t vs_band(int32_t a, int32_t b) { return (a != 0) & (b != 0); } \
    VS_FN int32_t vs_bor(int32_t a, int32_t b) { return (a != 0) | (b != 0); } \
    VS_FN int32_t vs_bnot(int32_t a) { return a == 0; }                       \
    VS_FN int32_t vs_iand(int32_t a, int32_t b) { return a & b; }            \
    VS_FN int32_t vs_ior(int32_t a, int32_t b) { return a | b; }             \
    /* XOR: bitwise on Ints, and on Bools (0 or 1) the logical one. */       \
    VS_FN int32_t vs_ixor(int32_t a, int32_t b) { return a ^ b; }            \
    VS_FN int32_t vs_inot(int32_t a) { return ~a; }                          \
    /* Float arithmetic: IEEE double, each operation rounded on its own. */  \
    VS_FN double vs_fadd(double a, double b) { return a + b; }               \
    VS_FN double vs_fsub(double a, double b) { return a - b; }               \
    VS_FN double vs_fmul(double a, double b) { return a * b; }               \
    VS_FN double vs_fdiv(double a, double b) { return a / b; }               \
    VS_FN double vs_fneg(double a) { return -a; }                            \
    /* Comparisons give a Bool (1 or 0); a NaN is unequal to everything. */  \
    VS_FN int32_t vs_ilt(int32_t a, int32_t b) { return a < b; }             \
    VS_FN int32_t vs_ile(int32_t a, int32_t b) { return a <= b; }            \
    VS_FN int32_t vs_igt(int32_t a, int32_t b) { return a > b; }             \
    VS_FN int32_t vs_ige(int32_t a, int32_t b) { return a >= b; }            \
    VS_FN int32_t vs_ieq(int32_t a, int32_t b) { return a == b; }            \
    VS_FN int32_t vs_ine(int32_t a, int32_t b) { return a != b; }            \
    VS_FN int32_t vs_flt(double a, double b) { return a < b; }               \
    VS_FN int32_t vs_fle(double a, double b) { return a <= b; }              \
    VS_FN int32_t vs_fgt(double a, double b) { return a > b; }               \
    VS_FN int32_t vs_fge(double a, double b) { return a >= b; }              \
    VS_FN int32_t vs_feq(double a, double b) { return a == b; }              \
    VS_FN int32_t vs_fne(double a, double b) { return a != b; }              \
    /* Conversions between Int, Bool and Float (Float -> Int below). */      \
    VS_FN double vs_i2f(int32_t a) { return (double)a; }                     \
    VS_FN int32_t vs_i2b(int32_t a) { return a != 0; }                       \
    VS_FN int32_t vs_b2i(int32_t a) { return a; }                            \
    /* The math library's functions, as the C library computes them (on */   \
    /* a GPU, CUDA's: within the bounds of runtime/fused/README.md). */      \
    VS_FN double vs_log(double d) { return log(d); }                         \
    VS_FN double vs_sqrt(double d) { return sqrt(d); }                       \
    VS_FN double vs_exp(double d) { return exp(d); }                         \
    VS_FN double vs_sin(double d) { return sin(d); }                         \
    VS_FN double vs_cos(double d) { return cos(d); }                         \
    VS_FN double vs_tan(double d) { return tan(d); }                         \
    VS_FN double vs_asin(double d) { return asin(d); }                       \
    VS_FN double vs_acos(double d) { return acos(d); }                       \
    VS_FN double vs_atan(double d) { return atan(d); }                       \
    VS_FN double vs_sinh(double d) { return sinh(d); }                       \
    VS_FN double vs_cosh(double d) { return cosh(d); }                       \
    VS_FN double vs_tanh(double d) { return tanh(d); }                       \
    /* Float -> Int as x86's cvttsd2si: NaN and out of range give the */     \
    /* most negative Int. */                                                  \
    VS_FN int32_t vs_f2i(double d)                                            \
    {                                                                         \
        if (d > -2147483649.0 && d < 2147483648.0)                            \
            return (int32_t)d;                                                \
        return -2147483647 - 1;                                               \
    }                                                                         \
    /* FLOOR, CEIL and ROUND: the rounding in double, then vs_f2i; ROUND */  \
    /* is trunc(d + 0.5), one double addition. */                            \
    VS_FN int32_t vs_floor(double d) { return vs_f2i(floor(d)); }             \
    VS_FN int32_t vs_ceil(double d) { return vs_f2i(ceil(d)); }               \
    VS_FN int32_t vs_round(double d) { return vs_f2i(d + 0.5); }              \
    /* Int / and %: a fault code, else 0 with the result in *R. */           \
    VS_FN int vs_idiv(int32_t a, int32_t b, int32_t *r)                       \
    {                                                                         \
        if (b == 0)                                                           \
            return VS_DIV0;                                                   \
        if (b == -1 && a == -2147483647 - 1)                                  \
            return VS_DIVOVF;                                                 \
        *r = a / b;                                                           \
        return VS_OK;                                                         \
    }                                                                         \
    VS_FN int vs_imod(int32_t a, int32_t b, int32_t *r)                       \
    {                                                                         \
        if (b == 0)                                                           \
            return VS_MOD0;                                                   \
        if (b == -1 && a == -2147483647 - 1)                                  \
            return VS_MODOVF;                                                 \
        *r = a % b;                                                           \
        return VS_OK;                                                         \
    }                                                                         \
    /* RAND's range step on a draw A from random() (never negative) and */ \
    /* a range B already checked nonzero: the loop form. */                  \
    VS_FN int32_t vs_randmod_draw(int32_t a, int32_t b) { return a % b; }    \
    /* RAND's range step: draw A into range B (any A; B == 0 faults). */     \
    VS_FN int vs_randmod(int32_t a, int32_t b, int32_t *r)                    \
    {                                                                         \
        if (b == 0)                                                           \
            return VS_RAND0;                                                  \
        *r = b == -1 ? 0 : vs_randmod_draw(a, b);                             \
        return VS_OK;                                                         \
    }                                                                         \
    /* An index A into a segment of length B. */                             \
    VS_FN int vs_checkidx(int32_t a, int32_t b)                               \
    {                                                                         \
        return a < 0 || a >= b ? VS_CHECKIDX : VS_OK;                         \
    }                                                                         \
    /* Int shifts: by the low 5 bits of B; left keeps the low 32 bits, */   \
    /* right is arithmetic. */                                                \
    VS_FN int32_t vs_lshift(int32_t a, int32_t b) { return (int32_t)((uint32_t)a << (b & 31)); } \
    VS_FN int32_t vs_rshift(int32_t a, int32_t b) { return a >> (b & 31); }   \
    /* The reduction operators: Int and Bool values in int32_t (Bools 0 */   \
    /* or 1), Float in double. Scans and reductions combine each segment */  \
    /* strictly left to right from the identity. */                          \
    VS_FN int32_t vs_rop_iident(int r)                                        \
    {                                                                         \
        switch (r) {                                                          \
        case VS_IMUL: case VS_BAND: return 1;                                 \
        case VS_IMAX: return -2147483647 - 1;                                 \
        case VS_IMIN: return 2147483647;                                      \
        case VS_IAND: return -1;                                              \
        default: return 0;                                                    \
        }                                                                     \
    }                                                                         \
    /* The float MAX/MIN identity is 1.0e36 as a single float, widened. */   \
    VS_FN double vs_rop_fident(int r)                                         \
    {                                                                         \
        switch (r) {                                                          \
        case VS_FMUL: return 1.0;                                             \
        case VS_FMAX: return -(double)1.0e36f;                                \
        case VS_FMIN: return (double)1.0e36f;                                 \
        default: return 0.0;                                                  \
        }                                                                     \
    }                                                                         \
    VS_FN int32_t vs_rop_icombine(int r, int32_t a, int32_t x)                \
    {                                                                         \
        switch (r) {                                                          \
        case VS_IADD: return vs_iadd(a, x);                                   \
        case VS_IMUL: return vs_imul(a, x);                                   \
        case VS_IMAX: return a > x ? a : x;                                   \
        case VS_IMIN: return a < x ? a : x;                                   \
        case VS_IAND: return a & x;                                           \
        case VS_IOR: return a | x;                                            \
        case VS_IXOR: return a ^ x;                                           \
        case VS_BAND: return a & (x != 0);                                    \
        case VS_BOR: return a | (x != 0);                                     \
        case VS_BXOR: return a ^ (x != 0);                                    \
        default: return a;                                                    \
        }                                                                     \
    }                                                                         \
    VS_FN double vs_rop_fcombine(int r, double a, double x)                   \
    {                                                                         \
        switch (r) {                                                          \
        case VS_FADD: return a + x;                                           \
        case VS_FMUL: return a * x;                                           \
        case VS_FMAX: return a > x ? a : x;                                   \
        case VS_FMIN: return a < x ? a : x;                                   \
        default: return a;                                                    \
        }                                                                     \
    }                                                                         \
    /* May a tree of partial results stand for the left-to-right fold? */   \
    /* Integer and Bool operators are associative; float + and * are */      \
    /* not, but a tree changes only the rounding (the GPU's sums are within */ \
    /* a bound of the reference); float MAX and MIN are not associative */   \
    /* with NaNs and signed zeros and need a state (kernels/vk_internal.cuh). */ \
    VS_FN int vs_rop_tree_ok(int r) { return r != VS_FMAX && r != VS_FMIN; } \
    /* The element type of operator R: 0 Int, 1 Bool, 2 Float (VsElem). */   \
    VS_FN int vs_rop_elem(int r) { return r >= VS_BAND ? 1 : r >= VS_FADD ? 2 : 0; } \
    /* --float-reassoc (opt-in; the default is the left-to-right fold): a */  \
    /* float + or * reduction folds a segment of more than VS_CHUNK */        \
    /* elements by chunks: from the identity, the fold of each run of */      \
    /* VS_CHUNK consecutive elements (the last run may be shorter) is */      \
    /* combined in, left to right; each run is folded left to right from */  \
    /* the identity. A shorter segment gives the fold's bits exactly: */      \
    /* 1.0 * p = p, and 0.0 + p = p as a sum from +0.0 is never -0.0. */     \
    /* The chunks may then be folded in parallel, and the result depends */  \
    /* on the length only, not on the threads. Scans stay left to right. */  \
    enum { VS_CHUNK = 65536 };                                                \
    VS_FN int vs_rop_chunks(int r) { return r == VS_FADD || r == VS_FMUL; }   \
    /* A float + fold of terms gives the same bits in every order when */  \
    /* every term is an integer and their magnitudes sum below 2^53: */      \
    /* every partial sum, in any order, is then an integer below 2^53, */    \
    /* exact in a double (and never -0.0 from +0.0). The backends may then */ \
    /* sum in parallel. The test, over runs of terms (chunks), by */         \
    /* additions only, which vectorise: note adds |x| into a and */          \
    /* |x - round(x)| into e (x + 1.5 * 2^52, rounded to an integer, minus */ \
    /* the same: +0.0 when x is an integer below 2^51 in magnitude, not 0 */ \
    /* for any other finite x, NaN for an infinite or NaN x). A sum of */    \
    /* terms of at least 0 is exact while below 2^53 and at least 2^53 */    \
    /* once the exact sum is, in any order, so a run may keep several */     \
    /* a and e (lanes) and add them up. vs_fsum_exact_ok(a, e, */            \
    /* vs_fsum_exact_lim(R)), R the number of runs: e is 0 and a below */    \
    /* 2^52 / R; when all R runs pass, all the terms sum below 2^53 in */    \
    /* magnitude (a large integer term fails through a). */                  \
    VS_FN double vs_fsum_exact_lim(int64_t runs) { return 4503599627370496.0 / (double)(runs > 0 ? runs : 1); } \
    VS_FN void vs_fsum_exact_note(double x, double *a, double *e)             \
    {                                                                         \
        *a += fabs(x);                                                        \
        *e += fabs(((x + 6755399441055744.0) - 6755399441055744.0) - x);      \
    }                                                                         \
    VS_FN int vs_fsum_exact_ok(double a, double e, double lim) { return (a < lim) & (e == 0.0); } \
)

/* The element types, for every layer that needs no more than these three
 * (λcu, the CUDA primitives): Int, Bool, Float. (A value also can be a
 * descriptor or a pair, runtime/core/value.h; an instruction's type
 * operand also Char, vcode/program.h.) */
typedef enum { VS_INT = 0, VS_BOOL = 1, VS_FLOAT = 2 } VsElem;

#define VS_EXPAND(...) __VA_ARGS__
#define VS_STRING(...) #__VA_ARGS__

VS_SEMANTICS(VS_EXPAND)

/* The reduction operators: one per VCODE reduction and element type (the
 * interpreter, λcu, the code generators, kernels/). */
typedef enum vs_rop VsRop;

/* RAND's stream (vcode/SPEC.md §4.14): glibc's random() TYPE_3. RING holds
 * r[k-31 .. k-1] (r[j] at ring[j % 31]) and *K is the index of the next
 * r[] to compute; each draw is r[k] = r[k-31] + r[k-3] (mod 2^32), shifted
 * right by one. Host only: the device jumps ahead (kernels/rand_jump.h). */
static inline int32_t vs_random_next(uint32_t ring[31], uint64_t *k)
{
    uint64_t q = (*k)++;
    uint32_t v = ring[q % 31] + ring[(q + 28) % 31];
    ring[q % 31] = v;
    return (int32_t)(v >> 1);
}

/* The ring after srandom(SEED): the seed's Lehmer sequence, then 310 draws
 * discarded. */
static inline void vs_random_seed(uint32_t ring[31], uint64_t *k, uint32_t seed)
{
    int64_t r[34];
    r[0] = (int32_t)(seed == 0 ? 1 : seed);
    for (int i = 1; i < 31; i++) {
        int64_t w = (16807 * r[i - 1]) % 2147483647;
        if (w < 0)
            w += 2147483647;
        r[i] = w;
    }
    for (int i = 31; i < 34; i++)
        r[i] = r[i - 31];
    for (int j = 3; j < 34; j++)
        ring[j % 31] = (uint32_t)r[j];
    *k = 34;
    for (int i = 0; i < 310; i++)
        (void)vs_random_next(ring, k);
}

/* The index errors' messages, printf formats (long long arguments), the
 * same in every backend and on the device:
 * a permute's index J at position POS outside its segment of length LEN;
 * a permute's segment K of the "source" or "destination" descriptor
 * without a partner; EXTRACT's and REPLACE's index J for segment K of
 * length LEN. */
#define VS_MSG_PERMUTE_INDEX "index %lld at position %lld is outside its segment of length %lld"
#define VS_MSG_PERMUTE_PARTNER "segment %lld of the %s descriptor has no matching segment"
#define VS_MSG_SEGMENT_INDEX "index %lld for segment %lld is outside the segment of length %lld"

/* A fault's message: a printf format of the element (or index) A and,
 * for VS_CHECKIDX, the segment length B, both long long. Host only. */
static inline const char *vs_fault_format(int code)
{
    switch (code) {
    case VS_DIV0: return "integer division by zero (element %lld)";
    case VS_DIVOVF: return "integer overflow: -2147483648 / -1 (element %lld)";
    case VS_MOD0: return "integer remainder by zero (element %lld)";
    case VS_MODOVF: return "integer overflow: -2147483648 %% -1 (element %lld)";
    case VS_RAND0: return "range 0 at element %lld (RAND needs a non-zero range)";
    case VS_CHECKIDX: return "index %lld is outside its segment of length %lld";
    default: return "fault %lld";
    }
}

#endif

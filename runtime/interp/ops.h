/* runtime/interp/ops.h — the reference implementation of the vector instructions.
 *
 * Each function executes one instruction on the interpreter's stack: the
 * interpreter has already run the argument checks of runtime/interp/argcheck.h
 * (stack depth, types, length rules), so an op reads its arguments with
 * vs_at, validates what only it can (indices, divisors), builds its result,
 * and replaces the arguments with it (ops_finish). */
#ifndef RUNTIME_OPS_H
#define RUNTIME_OPS_H

#include "runtime/interp/interp.h"
#include "vcode/semantics.h"

/* The value type of an instruction's type operand. */
static inline ValType ops_val_type(VcType t)
{
    switch (t) {
    case TY_BOOL: return VT_BOOL;
    case TY_FLOAT: return VT_FLOAT;
    case TY_SEGDES: return VT_SEGDES;
    default: return VT_INT;
    }
}

/* Pop K arguments (releasing them) and push RES (whose reference the
 * caller owns). RES may be one of the arguments reused in place. */
void ops_finish(Interp *it, int k, Value *res);
/* An argument of type T and length LEN that can take the result in place,
 * or NULL. Candidate arguments are the depths listed, -1 terminated. */
Value *ops_reusable(Interp *it, ValType t, int64_t len, const int *depths);

/* ops_elementwise.c */
void op_binary(Interp *it, const Instr *ins);     /* + - * / % < <= > >= = != LSHIFT RSHIFT AND OR XOR */
void op_unary(Interp *it, const Instr *ins);      /* NOT, FLOOR … TANH, I_TO_F, I_TO_B, B_TO_I */
void op_select(Interp *it, const Instr *ins);
void op_rand(Interp *it, const Instr *ins);
/* 1 for the instructions that read a lazy fill (value.h) as a scalar: the
 * binary and unary elementwise ones, and the reductions (a segment of L
 * copies folded without them, ops_scan.c). The interpreter makes every
 * other instruction's lazy operands before it runs. */
int ops_lazy_aware(int op);
/* ops_scan.c */
void op_scan(Interp *it, const Instr *ins);
void op_reduce(Interp *it, const Instr *ins);
/* ops_permute.c */
void op_permute(Interp *it, const Instr *ins);
void op_dpermute(Interp *it, const Instr *ins);
void op_fpermute(Interp *it, const Instr *ins);
void op_bpermute(Interp *it, const Instr *ins);
void op_bfpermute(Interp *it, const Instr *ins);
void op_dfpermute(Interp *it, const Instr *ins);
/* The length checks DPERMUTE and DFPERMUTE make before they move
 * anything (FLAGS NULL for DPERMUTE), fatal with their messages; the
 * device tier makes them too. */
void ops_permute_lengths(const Value *data, const Value *idx, const Value *flags, const Value *dflt,
                         const Value *dsd);
/* A permute's errors, in the reference's words: index IDX at position I
 * outside its segment of length LEN; segment K of the WHAT ("source" or
 * "destination") descriptor without a partner segment. */
__attribute__((noreturn, cold)) void ops_permute_bad_index(int64_t i, int64_t idx, int64_t len);
__attribute__((noreturn, cold)) void ops_permute_no_partner(int64_t k, const char *what);
/* ops_vector.c */
/* EXTRACT's and REPLACE's error: index IDX for segment K of length LEN. */
__attribute__((noreturn)) void ops_bad_segment_index(int64_t k, int64_t idx, int64_t len);
void op_extract(Interp *it, const Instr *ins);
void op_replace(Interp *it, const Instr *ins);
void op_dist(Interp *it, const Instr *ins);
void op_index(Interp *it, const Instr *ins);
void op_pack(Interp *it, const Instr *ins);
/* The values CONST, LENGTH and LENGTHS make, for the interpreter and the
 * fused backends' host steps alike (new references). */
Value *ops_const_value(const Interp *it, const Instr *ins);
Value *ops_length_of(const Value *v);
Value *ops_lengths_of(Value *sd);
void op_length(Interp *it, const Instr *ins);
void op_make_segdes(Interp *it, const Instr *ins);
void op_lengths(Interp *it, const Instr *ins);
/* ops_rank.c */
void op_rank(Interp *it, const Instr *ins);


/* The common length of every segment of SD when it has at least one
 * segment and all are the same length (a uniform descriptor: NESL's
 * regular nested vectors, every level of batcher's and radix's), else -1. */
static inline int64_t seg_uniform(const Value *sd)
{
    return sd->shaped && sd->len > 0 && sd->minl == sd->maxl && sd->minl >= 0 ? sd->minl : -1;
}

/* Uniform descriptors of a short length (a quarter of batcher_1m's DIST,
 * INDEX and permute elements are in segments of 1 to 8) are walked with
 * the length a constant: OPS_FIXED_SWITCH(U, F, T, ...) runs F(L, T, ...)
 * for the literal L equal to U (1 to OPS_FIXED_MAX; T, ... at least one
 * argument, the element type by convention), so that F's inner loop
 * becomes straight-line code with no loop to set up per segment. */
#define OPS_FIXED_MAX 8
#define OPS_FIXED_SWITCH(U, F, ...)                                           \
    switch (U) {                                                              \
    case 1: F(1, __VA_ARGS__); break;                                         \
    case 2: F(2, __VA_ARGS__); break;                                         \
    case 3: F(3, __VA_ARGS__); break;                                         \
    case 4: F(4, __VA_ARGS__); break;                                         \
    case 5: F(5, __VA_ARGS__); break;                                         \
    case 6: F(6, __VA_ARGS__); break;                                         \
    case 7: F(7, __VA_ARGS__); break;                                         \
    default: F(8, __VA_ARGS__); break;                                        \
    }

/* On an elementwise loop whose result may be one of its arguments (written
 * in place: element i is read before it is written, no other element is
 * touched): there is no dependence between iterations, so the compiler may
 * vectorise without the overlap check that would send every in-place run
 * to its scalar loop. */
#if defined(__GNUC__) && !defined(__clang__)
#define OPS_IVDEP _Pragma("GCC ivdep")
#else
#define OPS_IVDEP /* clang's assume_safety warns wherever it cannot vectorise (-O1, sanitizers) */
#endif

/* Segment descriptor that an op is about to use on data of length LEN:
 * fatal unless every non-empty segment lies inside the data. */
void ops_check_segments(Value *sd);

#endif

/* vcode/optable.h — static facts about every VCODE instruction:
 * its spelling, which type operands it accepts, and its stack signature.
 * The parser, the checker, the -c argument checks and the printers all
 * read this one table. */
#ifndef VCODE_OPTABLE_H
#define VCODE_OPTABLE_H

#include "vcode/program.h"
#include "vcode/semantics.h"

/* Which operands follow the op word in the source. */
typedef enum {
    OPND_NONE,      /* nothing */
    OPND_NUM,       /* INT | FLOAT */
    OPND_LOGIC,     /* INT | BOOL */
    OPND_ALL3,      /* INT | BOOL | FLOAT */
    OPND_ALL5,      /* INT | BOOL | FLOAT | SEGDES | CHAR */
    OPND_INTONLY,   /* INT (SRAND) */
    OPND_TWOINT,    /* two integer literals (COPY/POP/CPOP) */
    OPND_ONEINT,    /* one integer literal (FUSED) */
    OPND_NAME,      /* function name (CALL) */
    OPND_CONST      /* CONST forms */
} OperandKind;

/* Length rules checked between arguments (used by -c and by the
 * always-on safety checks). */
typedef enum {
    LC_NONE = 0,
    LC_SAME,        /* len(arg) == len(ref)   (for a descriptor, len = m) */
    LC_COMPAT       /* arg is a descriptor with n == len(ref) */
} LenRule;

#define OP_MAXARGS 6

/* The arguments of the permutes and vector instructions (their length
 * rules in vcode/ops.h), deepest first: PERMUTE data idx sd; DPERMUTE data
 * idx dflt ssd dsd; FPERMUTE data idx flags ssd dsd; BPERMUTE data idx ssd
 * dsd; BFPERMUTE data idx flags ssd dsd; DFPERMUTE data idx flags dflt ssd
 * dsd (the classic -c table's bug is applied by the checker, under -c
 * only); EXTRACT data idx sd; REPLACE data idx vals sd; DIST vals sd;
 * INDEX init stride sd; PACK data flags sd. */

typedef struct {
    const char *name;       /* source spelling */
    OperandKind operand;
    /* Signature: one character per argument, deepest first, and per result.
     *   T = the type operand, I = Int, B = Bool, F = Float, S = Segdes,
     *   A = any non-pair vector, X = anything.
     * NULL for ops with special stack effects (stack, control, I/O). */
    const char *args;
    const char *results;
    /* Up to two length rules per argument: rule[i][k] relates argument i to
     * argument ref[i][k] (0-based). */
    unsigned char rule[OP_MAXARGS][2];
    signed char ref[OP_MAXARGS][2];
    /* An elementwise binary instruction that a function of
     * vcode/semantics.h defines (SEMOP rows): the function on Ints and on
     * Floats (NULL: that type is not allowed) and their names, which
     * generated code calls. Every layer runs such an instruction through
     * these: the reference, the λcu evaluator, the generated C and CUDA. */
    int32_t (*sem_int)(int32_t, int32_t);
    double (*sem_float)(double, double);
    const char *sem_int_name, *sem_float_name;
} OpInfo;

extern const OpInfo vc_ops[OP_COUNT];

/* Is OP an elementwise binary instruction defined by vcode/semantics.h? */
static inline int vc_op_is_sem(Opcode op)
{
    return (unsigned)op < OP_COUNT && (vc_ops[op].sem_int || vc_ops[op].sem_float);
}

/* Look up an op word; returns OP_COUNT when the word is not an op. */
Opcode vc_op_lookup(const char *word);

/* "Int", "Bool", "Float", "Segdes", "String" — the -d program spellings. */
const char *vc_type_name(VcType t);

/* The reduction operator (vcode/semantics.h) of scan or reduction OP over
 * elements of type T: + * MAX MIN over Int or Float, AND OR XOR over Int
 * (bitwise) or Bool; VS_NROPS for any other pair (no such operator). The
 * one mapping the interpreter and the lowering to λcu share. */
VsRop vc_rop_of(Opcode op, VcType t);

#endif

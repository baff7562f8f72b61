/* vcode/optable.h — static facts about every VCODE instruction:
 * its spelling, which type operands it accepts, and its stack signature.
 * The parser, the checker, the -c argument checks and the printers all
 * read this one table. */
#ifndef VCODE_OPTABLE_H
#define VCODE_OPTABLE_H

#include "vcode/program.h"

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
} OpInfo;

extern const OpInfo vc_ops[OP_COUNT];

/* Look up an op word; returns OP_COUNT when the word is not an op. */
Opcode vc_op_lookup(const char *word);

/* "Int", "Bool", "Float", "Segdes", "String" — the -d program spellings. */
const char *vc_type_name(VcType t);

#endif

/* translate/lcu_prims.h — the λcu scalar primitives, one row each: name,
 * arity, operand and result types, printed form, the C (and libm) function
 * of the math ones, and the VCODE instruction lowered to it. The builder,
 * printer, validator, lowering, evaluator and code generator all read this
 * table; what each primitive computes is vcode/semantics.h's or C's. */
#ifndef TRANSLATE_LCU_PRIMS_H
#define TRANSLATE_LCU_PRIMS_H

#include "translate/lcu.h"
#include "vcode/optable.h"

typedef enum {
    LPO_NUM,    /* Int or Float */
    LPO_INT,
    LPO_FLOAT,
    LPO_BITS,   /* Int or Bool */
    LPO_BOOL
} LcuPrimOperand;

typedef enum {
    LPR_OPERAND,        /* the operands' type */
    LPR_INT,
    LPR_BOOL,
    LPR_FLOAT
} LcuPrimResultRule;

typedef struct {
    const char *name;           /* lcu_prim_name */
    int arity;                  /* 1 or 2 */
    LcuPrimOperand operand;     /* every operand's type */
    LcuPrimResultRule result;
    const char *infix;          /* printed between the operands; NULL: name(args) */
    const char *infix_bool;     /* on Bools, when it differs from infix */
    const char *math;           /* Float -> Float through this C function (libm) */
    double (*fmath)(double);    /* the same function, for the evaluator */
    Opcode op;                  /* the VCODE instruction lowered to it alone; OP_COUNT: none */
} LcuPrimInfo;

extern const LcuPrimInfo lcu_prims[LP_COUNT];

/* The primitive VCODE's instruction OP lowers to, or LP_COUNT. */
LcuPrim lcu_prim_of_op(Opcode op);
/* Is T a legal operand type of P? */
int lcu_prim_operand_ok(LcuPrim p, VsElem t);

#endif

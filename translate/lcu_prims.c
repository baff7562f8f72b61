/* translate/lcu_prims.c — the table of λcu primitives (see lcu_prims.h).
 * One row per LcuPrim, in its order. */
#include "translate/lcu_prims.h"

#include <math.h>

#define BIN(NAME, OPND, RES, INFIX, BINFIX, OP) { NAME, 2, OPND, RES, INFIX, BINFIX, NULL, NULL, OP }
#define UN(NAME, OPND, RES, OP) { NAME, 1, OPND, RES, NULL, NULL, NULL, NULL, OP }
#define MATH(NAME, FN, OP) { NAME, 1, LPO_FLOAT, LPR_FLOAT, NULL, NULL, #FN, FN, OP }

const LcuPrimInfo lcu_prims[LP_COUNT] = {
    [LP_ADD] = BIN("add", LPO_NUM, LPR_OPERAND, "+", NULL, OP_ADD),
    [LP_SUB] = BIN("sub", LPO_NUM, LPR_OPERAND, "-", NULL, OP_SUB),
    [LP_MUL] = BIN("mul", LPO_NUM, LPR_OPERAND, "*", NULL, OP_MUL),
    [LP_DIV] = BIN("div", LPO_NUM, LPR_OPERAND, "/", NULL, OP_DIV),
    [LP_MOD] = BIN("mod", LPO_INT, LPR_OPERAND, "%", NULL, OP_MOD),
    [LP_LT] = BIN("lt", LPO_NUM, LPR_BOOL, "<", NULL, OP_LT),
    [LP_LE] = BIN("le", LPO_NUM, LPR_BOOL, "<=", NULL, OP_LE),
    [LP_GT] = BIN("gt", LPO_NUM, LPR_BOOL, ">", NULL, OP_GT),
    [LP_GE] = BIN("ge", LPO_NUM, LPR_BOOL, ">=", NULL, OP_GE),
    [LP_EQ] = BIN("eq", LPO_NUM, LPR_BOOL, "==", NULL, OP_EQ),
    [LP_NE] = BIN("ne", LPO_NUM, LPR_BOOL, "!=", NULL, OP_NE),
    [LP_LSHIFT] = BIN("lshift", LPO_INT, LPR_OPERAND, "<<", NULL, OP_LSHIFT),
    [LP_RSHIFT] = BIN("rshift", LPO_INT, LPR_OPERAND, ">>", NULL, OP_RSHIFT),
    [LP_AND] = BIN("and", LPO_BITS, LPR_OPERAND, "&", "&&", OP_AND),
    [LP_OR] = BIN("or", LPO_BITS, LPR_OPERAND, "|", "||", OP_OR),
    [LP_XOR] = BIN("xor", LPO_BITS, LPR_OPERAND, "^", "^^", OP_XOR),
    [LP_NOT] = UN("not", LPO_BITS, LPR_OPERAND, OP_NOT),
    [LP_NEG] = UN("neg", LPO_NUM, LPR_OPERAND, OP_COUNT),
    [LP_FLOOR] = UN("floor", LPO_FLOAT, LPR_INT, OP_FLOOR),
    [LP_CEIL] = UN("ceil", LPO_FLOAT, LPR_INT, OP_CEIL),
    [LP_TRUNC] = UN("trunc", LPO_FLOAT, LPR_INT, OP_TRUNC),
    [LP_ROUND] = UN("round", LPO_FLOAT, LPR_INT, OP_ROUND),
    [LP_LOG] = MATH("log", log, OP_LOG),
    [LP_SQRT] = MATH("sqrt", sqrt, OP_SQRT),
    [LP_EXP] = MATH("exp", exp, OP_EXP),
    [LP_SIN] = MATH("sin", sin, OP_SIN),
    [LP_COS] = MATH("cos", cos, OP_COS),
    [LP_TAN] = MATH("tan", tan, OP_TAN),
    [LP_ASIN] = MATH("asin", asin, OP_ASIN),
    [LP_ACOS] = MATH("acos", acos, OP_ACOS),
    [LP_ATAN] = MATH("atan", atan, OP_ATAN),
    [LP_SINH] = MATH("sinh", sinh, OP_SINH),
    [LP_COSH] = MATH("cosh", cosh, OP_COSH),
    [LP_TANH] = MATH("tanh", tanh, OP_TANH),
    [LP_I_TO_F] = UN("i_to_f", LPO_INT, LPR_FLOAT, OP_I_TO_F),
    [LP_I_TO_B] = UN("i_to_b", LPO_INT, LPR_BOOL, OP_I_TO_B),
    [LP_B_TO_I] = UN("b_to_i", LPO_BOOL, LPR_INT, OP_B_TO_I),
    [LP_RANDMOD] = BIN("randmod", LPO_INT, LPR_INT, NULL, NULL, OP_COUNT),
    [LP_CHECKIDX] = BIN("checkidx", LPO_INT, LPR_INT, NULL, NULL, OP_COUNT),
};

LcuPrim lcu_prim_of_op(Opcode op)
{
    for (int p = 0; p < LP_COUNT; p++)
        if (lcu_prims[p].op == op && op != OP_COUNT)
            return (LcuPrim)p;
    return LP_COUNT;
}

int lcu_prim_operand_ok(LcuPrim p, LcuBase t)
{
    if ((unsigned)p >= LP_COUNT)
        return 0;
    switch (lcu_prims[p].operand) {
    case LPO_NUM: return t == LB_INT || t == LB_FLOAT;
    case LPO_INT: return t == LB_INT;
    case LPO_FLOAT: return t == LB_FLOAT;
    case LPO_BITS: return t == LB_INT || t == LB_BOOL;
    default: return t == LB_BOOL;
    }
}

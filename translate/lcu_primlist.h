/* translate/lcu_primlist.h — the λcu scalar primitives, one line each:
 * X(NAME, ROW), NAME giving LP_NAME (translate/lcu.h's LcuPrim, in this
 * order) and ROW its LcuPrimInfo (translate/lcu_prims.h; the row macros
 * are lcu_prims.c's). Arithmetic and logic follow VCODE (Int wraps, C / and
 * %; AND/OR/XOR bitwise on Ints, logical on Bools; NOT ~ or !); NEG is the
 * rewrites' unary minus; FLOOR..ROUND are float -> int by VCODE's rule;
 * RANDMOD is (draw, limit) -> draw % limit, the limit checked non-zero;
 * CHECKIDX is (index, length) -> index, fatal unless 0 <= index < length
 * (the segment-relative bounds checks of the VCODE instructions). A BIN
 * row without an infix (NULL) is printed name(a, b); every row runs its
 * VCODE instruction's meaning from vcode/semantics.h. */
#ifndef TRANSLATE_LCU_PRIMLIST_H
#define TRANSLATE_LCU_PRIMLIST_H

#define LCU_PRIMS(X) \
    X(ADD, BIN("add", LPO_NUM, LPR_OPERAND, "+", NULL, OP_ADD)) \
    X(SUB, BIN("sub", LPO_NUM, LPR_OPERAND, "-", NULL, OP_SUB)) \
    X(MUL, BIN("mul", LPO_NUM, LPR_OPERAND, "*", NULL, OP_MUL)) \
    X(DIV, BIN("div", LPO_NUM, LPR_OPERAND, "/", NULL, OP_DIV)) \
    X(MOD, BIN("mod", LPO_INT, LPR_OPERAND, "%", NULL, OP_MOD)) \
    X(LT, BIN("lt", LPO_NUM, LPR_BOOL, "<", NULL, OP_LT)) \
    X(LE, BIN("le", LPO_NUM, LPR_BOOL, "<=", NULL, OP_LE)) \
    X(GT, BIN("gt", LPO_NUM, LPR_BOOL, ">", NULL, OP_GT)) \
    X(GE, BIN("ge", LPO_NUM, LPR_BOOL, ">=", NULL, OP_GE)) \
    X(EQ, BIN("eq", LPO_NUM, LPR_BOOL, "==", NULL, OP_EQ)) \
    X(NE, BIN("ne", LPO_NUM, LPR_BOOL, "!=", NULL, OP_NE)) \
    X(LSHIFT, BIN("lshift", LPO_INT, LPR_OPERAND, "<<", NULL, OP_LSHIFT)) \
    X(RSHIFT, BIN("rshift", LPO_INT, LPR_OPERAND, ">>", NULL, OP_RSHIFT)) \
    X(AND, BIN("and", LPO_BITS, LPR_OPERAND, "&", "&&", OP_AND)) \
    X(OR, BIN("or", LPO_BITS, LPR_OPERAND, "|", "||", OP_OR)) \
    X(XOR, BIN("xor", LPO_BITS, LPR_OPERAND, "^", "^^", OP_XOR)) \
    X(NOT, UN("not", LPO_BITS, LPR_OPERAND, OP_NOT)) \
    X(NEG, UN("neg", LPO_NUM, LPR_OPERAND, OP_COUNT)) \
    X(FLOOR, UN("floor", LPO_FLOAT, LPR_INT, OP_FLOOR)) \
    X(CEIL, UN("ceil", LPO_FLOAT, LPR_INT, OP_CEIL)) \
    X(TRUNC, UN("trunc", LPO_FLOAT, LPR_INT, OP_TRUNC)) \
    X(ROUND, UN("round", LPO_FLOAT, LPR_INT, OP_ROUND)) \
    X(LOG, MATH("log", vs_log, OP_LOG)) \
    X(SQRT, MATH("sqrt", vs_sqrt, OP_SQRT)) \
    X(EXP, MATH("exp", vs_exp, OP_EXP)) \
    X(SIN, MATH("sin", vs_sin, OP_SIN)) \
    X(COS, MATH("cos", vs_cos, OP_COS)) \
    X(TAN, MATH("tan", vs_tan, OP_TAN)) \
    X(ASIN, MATH("asin", vs_asin, OP_ASIN)) \
    X(ACOS, MATH("acos", vs_acos, OP_ACOS)) \
    X(ATAN, MATH("atan", vs_atan, OP_ATAN)) \
    X(SINH, MATH("sinh", vs_sinh, OP_SINH)) \
    X(COSH, MATH("cosh", vs_cosh, OP_COSH)) \
    X(TANH, MATH("tanh", vs_tanh, OP_TANH)) \
    X(I_TO_F, UN("i_to_f", LPO_INT, LPR_FLOAT, OP_I_TO_F)) \
    X(I_TO_B, UN("i_to_b", LPO_INT, LPR_BOOL, OP_I_TO_B)) \
    X(B_TO_I, UN("b_to_i", LPO_BOOL, LPR_INT, OP_B_TO_I)) \
    X(RANDMOD, BIN("randmod", LPO_INT, LPR_INT, NULL, NULL, OP_COUNT)) \
    X(CHECKIDX, BIN("checkidx", LPO_INT, LPR_INT, NULL, NULL, OP_COUNT))

#endif

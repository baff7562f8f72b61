/* vcode/ops.h — VCODE's instructions, one line each: X(NAME, ROW), NAME
 * giving OP_NAME (vcode/program.h's Opcode, in this order) and ROW its
 * OpInfo (vcode/optable.h: spelling, type operand, stack signature,
 * length rules and, for an instruction that a function of
 * vcode/semantics.h defines, that function). The row macros are
 * optable.c's; the permutes' arguments are named in optable.h. */
#ifndef VCODE_OPS_H
#define VCODE_OPS_H

#define VC_OPS(X) \
    X(ADD, BINOP("+", OPND_NUM, "T")) \
    X(SUB, BINOP("-", OPND_NUM, "T")) \
    X(MUL, BINOP("*", OPND_NUM, "T")) \
    X(DIV, BINOP("/", OPND_NUM, "T")) \
    X(MOD, { "%", OPND_NONE, "II", "I", BIN_RULES }) \
    X(LT, BINOP("<", OPND_NUM, "B")) \
    X(LE, BINOP("<=", OPND_NUM, "B")) \
    X(GT, BINOP(">", OPND_NUM, "B")) \
    X(GE, BINOP(">=", OPND_NUM, "B")) \
    X(EQ, BINOP("=", OPND_NUM, "B")) \
    X(NE, BINOP("!=", OPND_NUM, "B")) \
    X(LSHIFT, SEMOP("LSHIFT", OPND_NONE, "II", "I", vs_lshift, NULL)) \
    X(RSHIFT, SEMOP("RSHIFT", OPND_NONE, "II", "I", vs_rshift, NULL)) \
    X(AND, BINOP("AND", OPND_LOGIC, "T")) \
    X(OR, BINOP("OR", OPND_LOGIC, "T")) \
    X(XOR, BINOP("XOR", OPND_LOGIC, "T")) \
    X(NOT, { "NOT", OPND_LOGIC, "T", "T", NO_RULES }) \
    X(SELECT, { "SELECT", OPND_ALL3, "BTT", "T", {{0,0},{LC_SAME,0},{LC_SAME,0},{0,0},{0,0},{0,0}}, {{0,0},{0,0},{0,0},{0,0},{0,0},{0,0}} }) \
    X(RAND, UNOP("RAND", "I", "I")) \
    X(FLOOR, UNOP("FLOOR", "F", "I")) \
    X(CEIL, UNOP("CEIL", "F", "I")) \
    X(TRUNC, UNOP("TRUNC", "F", "I")) \
    X(ROUND, UNOP("ROUND", "F", "I")) \
    X(LOG, UNOP("LOG", "F", "F")) \
    X(SQRT, UNOP("SQRT", "F", "F")) \
    X(EXP, UNOP("EXP", "F", "F")) \
    X(SIN, UNOP("SIN", "F", "F")) \
    X(COS, UNOP("COS", "F", "F")) \
    X(TAN, UNOP("TAN", "F", "F")) \
    X(ASIN, UNOP("ASIN", "F", "F")) \
    X(ACOS, UNOP("ACOS", "F", "F")) \
    X(ATAN, UNOP("ATAN", "F", "F")) \
    X(SINH, UNOP("SINH", "F", "F")) \
    X(COSH, UNOP("COSH", "F", "F")) \
    X(TANH, UNOP("TANH", "F", "F")) \
    X(I_TO_F, UNOP("I_TO_F", "I", "F")) \
    X(I_TO_B, UNOP("I_TO_B", "I", "B")) \
    X(B_TO_I, UNOP("B_TO_I", "B", "I")) \
    X(PLUS_SCAN, SEGOP("+_SCAN", OPND_NUM)) \
    X(MUL_SCAN, SEGOP("*_SCAN", OPND_NUM)) \
    X(MAX_SCAN, SEGOP("MAX_SCAN", OPND_NUM)) \
    X(MIN_SCAN, SEGOP("MIN_SCAN", OPND_NUM)) \
    X(AND_SCAN, SEGOP("AND_SCAN", OPND_LOGIC)) \
    X(OR_SCAN, SEGOP("OR_SCAN", OPND_LOGIC)) \
    X(XOR_SCAN, SEGOP("XOR_SCAN", OPND_LOGIC)) \
    X(PLUS_REDUCE, SEGOP("+_REDUCE", OPND_NUM)) \
    X(MUL_REDUCE, SEGOP("*_REDUCE", OPND_NUM)) \
    X(MAX_REDUCE, SEGOP("MAX_REDUCE", OPND_NUM)) \
    X(MIN_REDUCE, SEGOP("MIN_REDUCE", OPND_NUM)) \
    X(AND_REDUCE, SEGOP("AND_REDUCE", OPND_LOGIC)) \
    X(OR_REDUCE, SEGOP("OR_REDUCE", OPND_LOGIC)) \
    X(XOR_REDUCE, SEGOP("XOR_REDUCE", OPND_LOGIC)) \
    X(PERMUTE, { "PERMUTE", OPND_ALL3, "TIS", "T", {{0,0},{LC_SAME,0},{LC_COMPAT,0},{0,0},{0,0},{0,0}}, {{0,0},{0,0},{0,0},{0,0},{0,0},{0,0}} }) \
    X(DPERMUTE, { "DPERMUTE", OPND_ALL3, "TITSS", "T", {{0,0},{LC_SAME,0},{0,0},{LC_COMPAT,0},{LC_COMPAT,0},{0,0}}, {{0,0},{0,0},{0,0},{0,0},{2,0},{0,0}} }) \
    X(FPERMUTE, { "FPERMUTE", OPND_ALL3, "TIBSS", "T", {{0,0},{LC_SAME,0},{LC_SAME,0},{LC_COMPAT,0},{LC_SAME,0},{0,0}}, {{0,0},{0,0},{0,0},{0,0},{3,0},{0,0}} }) \
    X(BPERMUTE, { "BPERMUTE", OPND_ALL3, "TISS", "T", {{0,0},{0,0},{LC_COMPAT,0},{LC_COMPAT,0},{0,0},{0,0}}, {{0,0},{0,0},{0,0},{1,0},{0,0},{0,0}} }) \
    X(BFPERMUTE, { "BFPERMUTE", OPND_ALL3, "TIBSS", "T", {{0,0},{0,0},{LC_SAME,0},{LC_COMPAT,0},{LC_COMPAT,LC_SAME},{0,0}}, {{0,0},{0,0},{1,0},{0,0},{1,3},{0,0}} }) \
    X(DFPERMUTE, { "DFPERMUTE", OPND_ALL3, "TIBTSS", "T", {{0,0},{0,0},{LC_SAME,0},{0,0},{LC_COMPAT,0},{LC_COMPAT,LC_SAME}}, {{0,0},{0,0},{1,0},{0,0},{0,0},{3,4}} }) \
    X(EXTRACT, { "EXTRACT", OPND_ALL3, "TIS", "T", {{0,0},{0,0},{LC_COMPAT,LC_SAME},{0,0},{0,0},{0,0}}, {{0,0},{0,0},{0,1},{0,0},{0,0},{0,0}} }) \
    X(REPLACE, { "REPLACE", OPND_ALL3, "TITS", "T", {{0,0},{0,0},{LC_SAME,0},{LC_COMPAT,LC_SAME},{0,0},{0,0}}, {{0,0},{0,0},{1,0},{0,1},{0,0},{0,0}} }) \
    X(DIST, { "DIST", OPND_ALL3, "TS", "T", {{0,0},{LC_SAME,0},{0,0},{0,0},{0,0},{0,0}}, {{0,0},{0,0},{0,0},{0,0},{0,0},{0,0}} }) \
    X(INDEX, { "INDEX", OPND_NONE, "IIS", "I", {{0,0},{LC_SAME,0},{LC_SAME,0},{0,0},{0,0},{0,0}}, {{0,0},{0,0},{0,0},{0,0},{0,0},{0,0}} }) \
    X(RANK_UP, { "RANK_UP", OPND_NUM, "TS", "I", SEG_RULES }) \
    X(RANK_DOWN, { "RANK_DOWN", OPND_NUM, "TS", "I", SEG_RULES }) \
    X(PACK, { "PACK", OPND_ALL3, "TBS", "TS", {{0,0},{LC_SAME,0},{LC_COMPAT,0},{0,0},{0,0},{0,0}}, {{0,0},{0,0},{0,0},{0,0},{0,0},{0,0}} }) \
    X(LENGTH, { "LENGTH", OPND_ALL3, "A", "I", NO_RULES }) \
    X(MAKE_SEGDES, { "MAKE_SEGDES", OPND_NONE, "I", "S", NO_RULES }) \
    X(LENGTHS, { "LENGTHS", OPND_NONE, "S", "I", NO_RULES }) \
    X(COPY, { "COPY", OPND_TWOINT, NULL, NULL, NO_RULES }) \
    X(POP, { "POP", OPND_TWOINT, NULL, NULL, NO_RULES }) \
    X(CPOP, { "CPOP", OPND_TWOINT, NULL, NULL, NO_RULES }) \
    X(PAIR, { "PAIR", OPND_NONE, NULL, NULL, NO_RULES }) \
    X(UNPAIR, { "UNPAIR", OPND_NONE, NULL, NULL, NO_RULES }) \
    X(CALL, { "CALL", OPND_NAME, NULL, NULL, NO_RULES }) \
    X(RET, { "RET", OPND_NONE, NULL, NULL, NO_RULES }) \
    X(IF, { "IF", OPND_NONE, NULL, NULL, NO_RULES }) \
    X(ELSE, { "ELSE", OPND_NONE, NULL, NULL, NO_RULES }) \
    X(ENDIF, { "ENDIF", OPND_NONE, NULL, NULL, NO_RULES }) \
    X(EXIT, { "EXIT", OPND_NONE, NULL, NULL, NO_RULES }) \
    X(CONST, { "CONST", OPND_CONST, NULL, NULL, NO_RULES }) \
    X(START_TIMER, { "START_TIMER", OPND_NONE, "", "", NO_RULES }) \
    X(STOP_TIMER, { "STOP_TIMER", OPND_NONE, "", "F", NO_RULES }) \
    X(READ, { "READ", OPND_ALL5, NULL, NULL, NO_RULES }) \
    X(WRITE, { "WRITE", OPND_ALL5, NULL, NULL, NO_RULES }) \
    X(FOPEN, { "FOPEN", OPND_NONE, NULL, NULL, NO_RULES }) \
    X(FCLOSE, { "FCLOSE", OPND_NONE, NULL, NULL, NO_RULES }) \
    X(FREAD, { "FREAD", OPND_ALL5, NULL, NULL, NO_RULES }) \
    X(FREAD_CHAR, { "FREAD_CHAR", OPND_NONE, NULL, NULL, NO_RULES }) \
    X(FWRITE, { "FWRITE", OPND_ALL5, NULL, NULL, NO_RULES }) \
    X(SPAWN, { "SPAWN", OPND_NONE, NULL, NULL, NO_RULES }) \
    X(SRAND, { "SRAND", OPND_INTONLY, "I", "B", NO_RULES }) \
    X(FUSED, { "FUSED", OPND_ONEINT, NULL, NULL, NO_RULES })

#endif

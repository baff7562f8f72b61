/* vcode/optable.c — the instruction table (see optable.h). */
#include "vcode/optable.h"

#include <string.h>
#include <threads.h>

#define R0 {{0,0},{0,0},{0,0},{0,0},{0,0},{0,0}}
#define REFS0 {{0,0},{0,0},{0,0},{0,0},{0,0},{0,0}}
/* Shorthands for the common rule sets. */
#define BIN_RULES  {{0,0},{LC_SAME,0},{0,0},{0,0},{0,0},{0,0}}, {{0,0},{0,0},{0,0},{0,0},{0,0},{0,0}}
#define SEG_RULES  {{0,0},{LC_COMPAT,0},{0,0},{0,0},{0,0},{0,0}}, {{0,0},{0,0},{0,0},{0,0},{0,0},{0,0}}
#define NO_RULES   R0, REFS0

#define BINOP(nm, kind, res) { nm, kind, "TT", res, BIN_RULES }
#define UNOP(nm, a, r)       { nm, OPND_NONE, a, r, NO_RULES }
#define SEGOP(nm, kind)      { nm, kind, "TS", "T", SEG_RULES }

const OpInfo vc_ops[OP_COUNT] = {
    [OP_ADD] = BINOP("+", OPND_NUM, "T"),
    [OP_SUB] = BINOP("-", OPND_NUM, "T"),
    [OP_MUL] = BINOP("*", OPND_NUM, "T"),
    [OP_DIV] = BINOP("/", OPND_NUM, "T"),
    [OP_MOD] = { "%", OPND_NONE, "II", "I", BIN_RULES },
    [OP_LT] = BINOP("<", OPND_NUM, "B"),
    [OP_LE] = BINOP("<=", OPND_NUM, "B"),
    [OP_GT] = BINOP(">", OPND_NUM, "B"),
    [OP_GE] = BINOP(">=", OPND_NUM, "B"),
    [OP_EQ] = BINOP("=", OPND_NUM, "B"),
    [OP_NE] = BINOP("!=", OPND_NUM, "B"),
    [OP_LSHIFT] = { "LSHIFT", OPND_NONE, "II", "I", BIN_RULES },
    [OP_RSHIFT] = { "RSHIFT", OPND_NONE, "II", "I", BIN_RULES },
    [OP_AND] = BINOP("AND", OPND_LOGIC, "T"),
    [OP_OR] = BINOP("OR", OPND_LOGIC, "T"),
    [OP_XOR] = BINOP("XOR", OPND_LOGIC, "T"),
    [OP_NOT] = { "NOT", OPND_LOGIC, "T", "T", NO_RULES },
    [OP_SELECT] = { "SELECT", OPND_ALL3, "BTT", "T",
                    {{0,0},{LC_SAME,0},{LC_SAME,0},{0,0},{0,0},{0,0}},
                    {{0,0},{0,0},{0,0},{0,0},{0,0},{0,0}} },
    [OP_RAND] = UNOP("RAND", "I", "I"),
    [OP_FLOOR] = UNOP("FLOOR", "F", "I"),
    [OP_CEIL] = UNOP("CEIL", "F", "I"),
    [OP_TRUNC] = UNOP("TRUNC", "F", "I"),
    [OP_ROUND] = UNOP("ROUND", "F", "I"),
    [OP_LOG] = UNOP("LOG", "F", "F"),
    [OP_SQRT] = UNOP("SQRT", "F", "F"),
    [OP_EXP] = UNOP("EXP", "F", "F"),
    [OP_SIN] = UNOP("SIN", "F", "F"),
    [OP_COS] = UNOP("COS", "F", "F"),
    [OP_TAN] = UNOP("TAN", "F", "F"),
    [OP_ASIN] = UNOP("ASIN", "F", "F"),
    [OP_ACOS] = UNOP("ACOS", "F", "F"),
    [OP_ATAN] = UNOP("ATAN", "F", "F"),
    [OP_SINH] = UNOP("SINH", "F", "F"),
    [OP_COSH] = UNOP("COSH", "F", "F"),
    [OP_TANH] = UNOP("TANH", "F", "F"),
    [OP_I_TO_F] = UNOP("I_TO_F", "I", "F"),
    [OP_I_TO_B] = UNOP("I_TO_B", "I", "B"),
    [OP_B_TO_I] = UNOP("B_TO_I", "B", "I"),
    [OP_PLUS_SCAN] = SEGOP("+_SCAN", OPND_NUM),
    [OP_MUL_SCAN] = SEGOP("*_SCAN", OPND_NUM),
    [OP_MAX_SCAN] = SEGOP("MAX_SCAN", OPND_NUM),
    [OP_MIN_SCAN] = SEGOP("MIN_SCAN", OPND_NUM),
    [OP_AND_SCAN] = SEGOP("AND_SCAN", OPND_LOGIC),
    [OP_OR_SCAN] = SEGOP("OR_SCAN", OPND_LOGIC),
    [OP_XOR_SCAN] = SEGOP("XOR_SCAN", OPND_LOGIC),
    [OP_PLUS_REDUCE] = SEGOP("+_REDUCE", OPND_NUM),
    [OP_MUL_REDUCE] = SEGOP("*_REDUCE", OPND_NUM),
    [OP_MAX_REDUCE] = SEGOP("MAX_REDUCE", OPND_NUM),
    [OP_MIN_REDUCE] = SEGOP("MIN_REDUCE", OPND_NUM),
    [OP_AND_REDUCE] = SEGOP("AND_REDUCE", OPND_LOGIC),
    [OP_OR_REDUCE] = SEGOP("OR_REDUCE", OPND_LOGIC),
    [OP_XOR_REDUCE] = SEGOP("XOR_REDUCE", OPND_LOGIC),
    /* data idx sd */
    [OP_PERMUTE] = { "PERMUTE", OPND_ALL3, "TIS", "T",
                     {{0,0},{LC_SAME,0},{LC_COMPAT,0},{0,0},{0,0},{0,0}},
                     {{0,0},{0,0},{0,0},{0,0},{0,0},{0,0}} },
    /* data idx dflt ssd dsd */
    [OP_DPERMUTE] = { "DPERMUTE", OPND_ALL3, "TITSS", "T",
                      {{0,0},{LC_SAME,0},{0,0},{LC_COMPAT,0},{LC_COMPAT,0},{0,0}},
                      {{0,0},{0,0},{0,0},{0,0},{2,0},{0,0}} },
    /* data idx flags ssd dsd */
    [OP_FPERMUTE] = { "FPERMUTE", OPND_ALL3, "TIBSS", "T",
                      {{0,0},{LC_SAME,0},{LC_SAME,0},{LC_COMPAT,0},{LC_SAME,0},{0,0}},
                      {{0,0},{0,0},{0,0},{0,0},{3,0},{0,0}} },
    /* data idx ssd dsd */
    [OP_BPERMUTE] = { "BPERMUTE", OPND_ALL3, "TISS", "T",
                      {{0,0},{0,0},{LC_COMPAT,0},{LC_COMPAT,0},{0,0},{0,0}},
                      {{0,0},{0,0},{0,0},{1,0},{0,0},{0,0}} },
    /* data idx flags ssd dsd */
    [OP_BFPERMUTE] = { "BFPERMUTE", OPND_ALL3, "TIBSS", "T",
                       {{0,0},{0,0},{LC_SAME,0},{LC_COMPAT,0},{LC_COMPAT,LC_SAME},{0,0}},
                       {{0,0},{0,0},{1,0},{0,0},{1,3},{0,0}} },
    /* data idx flags dflt ssd dsd; the classic -c table's bug is applied by
     * the checker only under -c (see runtime), not here. */
    [OP_DFPERMUTE] = { "DFPERMUTE", OPND_ALL3, "TIBTSS", "T",
                       {{0,0},{0,0},{LC_SAME,0},{0,0},{LC_COMPAT,0},{LC_COMPAT,LC_SAME}},
                       {{0,0},{0,0},{1,0},{0,0},{0,0},{3,4}} },
    /* data idx sd */
    [OP_EXTRACT] = { "EXTRACT", OPND_ALL3, "TIS", "T",
                     {{0,0},{0,0},{LC_COMPAT,LC_SAME},{0,0},{0,0},{0,0}},
                     {{0,0},{0,0},{0,1},{0,0},{0,0},{0,0}} },
    /* data idx vals sd */
    [OP_REPLACE] = { "REPLACE", OPND_ALL3, "TITS", "T",
                     {{0,0},{0,0},{LC_SAME,0},{LC_COMPAT,LC_SAME},{0,0},{0,0}},
                     {{0,0},{0,0},{1,0},{0,1},{0,0},{0,0}} },
    /* vals sd */
    [OP_DIST] = { "DIST", OPND_ALL3, "TS", "T",
                  {{0,0},{LC_SAME,0},{0,0},{0,0},{0,0},{0,0}},
                  {{0,0},{0,0},{0,0},{0,0},{0,0},{0,0}} },
    /* init stride sd */
    [OP_INDEX] = { "INDEX", OPND_NONE, "IIS", "I",
                   {{0,0},{LC_SAME,0},{LC_SAME,0},{0,0},{0,0},{0,0}},
                   {{0,0},{0,0},{0,0},{0,0},{0,0},{0,0}} },
    [OP_RANK_UP] = { "RANK_UP", OPND_NUM, "TS", "I", SEG_RULES },
    [OP_RANK_DOWN] = { "RANK_DOWN", OPND_NUM, "TS", "I", SEG_RULES },
    /* data flags sd */
    [OP_PACK] = { "PACK", OPND_ALL3, "TBS", "TS",
                  {{0,0},{LC_SAME,0},{LC_COMPAT,0},{0,0},{0,0},{0,0}},
                  {{0,0},{0,0},{0,0},{0,0},{0,0},{0,0}} },
    [OP_LENGTH] = { "LENGTH", OPND_ALL3, "A", "I", NO_RULES },
    [OP_MAKE_SEGDES] = { "MAKE_SEGDES", OPND_NONE, "I", "S", NO_RULES },
    [OP_LENGTHS] = { "LENGTHS", OPND_NONE, "S", "I", NO_RULES },
    [OP_COPY] = { "COPY", OPND_TWOINT, NULL, NULL, NO_RULES },
    [OP_POP] = { "POP", OPND_TWOINT, NULL, NULL, NO_RULES },
    [OP_CPOP] = { "CPOP", OPND_TWOINT, NULL, NULL, NO_RULES },
    [OP_PAIR] = { "PAIR", OPND_NONE, NULL, NULL, NO_RULES },
    [OP_UNPAIR] = { "UNPAIR", OPND_NONE, NULL, NULL, NO_RULES },
    [OP_CALL] = { "CALL", OPND_NAME, NULL, NULL, NO_RULES },
    [OP_RET] = { "RET", OPND_NONE, NULL, NULL, NO_RULES },
    [OP_IF] = { "IF", OPND_NONE, NULL, NULL, NO_RULES },
    [OP_ELSE] = { "ELSE", OPND_NONE, NULL, NULL, NO_RULES },
    [OP_ENDIF] = { "ENDIF", OPND_NONE, NULL, NULL, NO_RULES },
    [OP_EXIT] = { "EXIT", OPND_NONE, NULL, NULL, NO_RULES },
    [OP_CONST] = { "CONST", OPND_CONST, NULL, NULL, NO_RULES },
    [OP_START_TIMER] = { "START_TIMER", OPND_NONE, "", "", NO_RULES },
    [OP_STOP_TIMER] = { "STOP_TIMER", OPND_NONE, "", "F", NO_RULES },
    [OP_READ] = { "READ", OPND_ALL5, NULL, NULL, NO_RULES },
    [OP_WRITE] = { "WRITE", OPND_ALL5, NULL, NULL, NO_RULES },
    [OP_FOPEN] = { "FOPEN", OPND_NONE, NULL, NULL, NO_RULES },
    [OP_FCLOSE] = { "FCLOSE", OPND_NONE, NULL, NULL, NO_RULES },
    [OP_FREAD] = { "FREAD", OPND_ALL5, NULL, NULL, NO_RULES },
    [OP_FREAD_CHAR] = { "FREAD_CHAR", OPND_NONE, NULL, NULL, NO_RULES },
    [OP_FWRITE] = { "FWRITE", OPND_ALL5, NULL, NULL, NO_RULES },
    [OP_SPAWN] = { "SPAWN", OPND_NONE, NULL, NULL, NO_RULES },
    [OP_SRAND] = { "SRAND", OPND_INTONLY, "I", "B", NO_RULES },
    [OP_FUSED] = { "FUSED", OPND_ONEINT, NULL, NULL, NO_RULES },
};

/* Every instruction word is looked up once per line of a program (a
 * linear search of the table was a third of the time to load a large
 * one): an open-addressed table of the names, filled on first use. */
#define LOOKUP_SLOTS 512
static unsigned char lookup_table[LOOKUP_SLOTS]; /* opcode + 1; 0 empty */

static unsigned word_hash(const char *w)
{
    unsigned h = 2166136261u;
    for (; *w; w++)
        h = (h ^ (unsigned char)*w) * 16777619u;
    return h;
}

static void lookup_fill(void)
{
    for (int i = 0; i < OP_COUNT; i++) {
        unsigned h = word_hash(vc_ops[i].name) % LOOKUP_SLOTS;
        while (lookup_table[h])
            h = (h + 1) % LOOKUP_SLOTS;
        lookup_table[h] = (unsigned char)(i + 1);
    }
}

Opcode vc_op_lookup(const char *word)
{
    _Static_assert(OP_COUNT < 255 && OP_COUNT < LOOKUP_SLOTS / 2, "the lookup table holds every opcode");
    static once_flag filled = ONCE_FLAG_INIT;
    call_once(&filled, lookup_fill);
    for (unsigned h = word_hash(word) % LOOKUP_SLOTS; lookup_table[h]; h = (h + 1) % LOOKUP_SLOTS)
        if (strcmp(vc_ops[lookup_table[h] - 1].name, word) == 0)
            return (Opcode)(lookup_table[h] - 1);
    return OP_COUNT;
}

const char *vc_type_name(VcType t)
{
    switch (t) {
    case TY_INT: return "Int";
    case TY_BOOL: return "Bool";
    case TY_FLOAT: return "Float";
    case TY_SEGDES: return "Segdes";
    case TY_CHAR: return "String";
    default: return "";
    }
}

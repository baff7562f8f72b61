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
/* An elementwise binary instruction defined by vcode/semantics.h's FI (on
 * Ints) and FF (on Floats), either NULL where that type is not allowed. */
#define SEMOP(nm, kind, args, res, fi, ff) { nm, kind, args, res, BIN_RULES, fi, ff, #fi, #ff }

#define VC_OP_ROW(name, ...) [OP_##name] = __VA_ARGS__,
const OpInfo vc_ops[OP_COUNT] = {
    VC_OPS(VC_OP_ROW)
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

VsRop vc_rop_of(Opcode op, VcType t)
{
    int i = t == TY_INT, f = t == TY_FLOAT, b = t == TY_BOOL;
    switch (op) {
    case OP_PLUS_SCAN: case OP_PLUS_REDUCE: return i ? VS_IADD : f ? VS_FADD : VS_NROPS;
    case OP_MUL_SCAN: case OP_MUL_REDUCE: return i ? VS_IMUL : f ? VS_FMUL : VS_NROPS;
    case OP_MAX_SCAN: case OP_MAX_REDUCE: return i ? VS_IMAX : f ? VS_FMAX : VS_NROPS;
    case OP_MIN_SCAN: case OP_MIN_REDUCE: return i ? VS_IMIN : f ? VS_FMIN : VS_NROPS;
    case OP_AND_SCAN: case OP_AND_REDUCE: return i ? VS_IAND : b ? VS_BAND : VS_NROPS;
    case OP_OR_SCAN: case OP_OR_REDUCE: return i ? VS_IOR : b ? VS_BOR : VS_NROPS;
    case OP_XOR_SCAN: case OP_XOR_REDUCE: return i ? VS_IXOR : b ? VS_BXOR : VS_NROPS;
    default: return VS_NROPS;
    }
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

/* translate/lcu_prims.c — the table of λcu primitives (see lcu_prims.h).
 * One row per LcuPrim, in its order. */
#include "translate/lcu_prims.h"

#include "vcode/semantics.h"

#include <math.h>

#define BIN(NAME, OPND, RES, INFIX, BINFIX, OP) { NAME, 2, OPND, RES, INFIX, BINFIX, NULL, NULL, OP }
#define UN(NAME, OPND, RES, OP) { NAME, 1, OPND, RES, NULL, NULL, NULL, NULL, OP }
#define MATH(NAME, FN, OP) { NAME, 1, LPO_FLOAT, LPR_FLOAT, NULL, NULL, #FN, FN, OP }

#define LCU_PRIM_ROW(name, ...) [LP_##name] = __VA_ARGS__,
const LcuPrimInfo lcu_prims[LP_COUNT] = {
    LCU_PRIMS(LCU_PRIM_ROW)
};

LcuPrim lcu_prim_of_op(Opcode op)
{
    for (int p = 0; p < LP_COUNT; p++)
        if (lcu_prims[p].op == op && op != OP_COUNT)
            return (LcuPrim)p;
    return LP_COUNT;
}

int lcu_prim_operand_ok(LcuPrim p, VsElem t)
{
    if ((unsigned)p >= LP_COUNT)
        return 0;
    switch (lcu_prims[p].operand) {
    case LPO_NUM: return t == VS_INT || t == VS_FLOAT;
    case LPO_INT: return t == VS_INT;
    case LPO_FLOAT: return t == VS_FLOAT;
    case LPO_BITS: return t == VS_INT || t == VS_BOOL;
    default: return t == VS_BOOL;
    }
}

/* translate/dfg.h — basic blocks and their dataflow graphs.
 *
 * A block is a maximal run of instructions of one function that contains
 * no control point: no CALL, RET, IF/ELSE/ENDIF, EXIT, I/O, timer, SRAND,
 * PAIR/UNPAIR or FUSED. Within a block the stack is simulated symbolically:
 * COPY/POP/CPOP vanish into renaming, and what remains is a graph of vector
 * operations over SSA values. Values 0..nin-1 are the block's inputs, the
 * stack entries it reads from below its own pushes (value j is the entry at
 * depth j when the block starts, so value 0 is the top of the stack). */
#ifndef TRANSLATE_DFG_H
#define TRANSLATE_DFG_H

#include "vcode/program.h"

typedef struct {
    int func;
    int start, end;     /* instruction range [start, end) */
    int nvector;        /* vector instructions in it (0: nothing to plan) */
} Block;

/* Split every live function of P into blocks; *out gets a malloc'ed array. */
int dfg_blocks(const Program *p, Block **out);

/* Value types: the run-time type a value must have. */
typedef enum { DT_UNKNOWN = 0, DT_INT, DT_BOOL, DT_FLOAT, DT_SEGDES } DfgType;

typedef struct {
    Opcode op;          /* a vector instruction, MAKE_SEGDES, LENGTHS, LENGTH or CONST */
    VcType type;        /* its type operand */
    int instr;          /* index of the instruction in the program */
    int scalar;         /* CONST: a scalar (length 1), not a vector constant */
    int nargs;
    int args[6];        /* value ids, a1 first */
    int nres;
    int res[2];         /* value ids */
} DfgNode;

typedef struct {
    int nin;            /* block inputs: values 0..nin-1 */
    int nvals;
    DfgType *types;     /* per value */
    int nnodes;
    DfgNode *nodes;     /* in program order */
    int nout;
    int *out;           /* values left on the stack, bottom -> top; they
                           replace the nin input entries */
    int *producer;      /* per value: node index, or -1 for inputs */
} Dfg;

/* Build the graph of block B. Returns 0, or -1 when the block cannot be
 * expressed (then the interpreter runs it instruction by instruction). */
int dfg_build(const Program *p, const Block *b, Dfg *g);
void dfg_free(Dfg *g);

#endif

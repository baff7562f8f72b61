/* translate/lower.h — VCODE instruction → λcu (Nessie thesis §6, with the
 * segmented forms): every vector instruction of a block's dataflow graph
 * becomes a kernel with one SOAC (RAND: a library stream kernel and a MAP),
 * and LENGTH, LENGTHS, MAKE_SEGDES and CONST become host steps on
 * metadata. An instruction with no lowering is an error, not a silent
 * fallback. */
#ifndef TRANSLATE_LOWER_H
#define TRANSLATE_LOWER_H

#include "translate/dfg.h"
#include "translate/lcu.h"

typedef enum { STEP_HOST, STEP_KERNEL } StepKind;

typedef struct {
    StepKind kind;
    int node;           /* the dataflow node it comes from */
    LcuKernel *k;       /* STEP_KERNEL */
} LowStep;

typedef struct {
    int nvars;          /* plan variables: the graph's values, then extras */
    LcuVarType *types;
    unsigned char *typed; /* 0: the type is unknown (an input only passed through) */
    int nsteps;
    LowStep *steps;     /* in program order */
    int nkernels;
    int nlocals;        /* thunk-local numbers used so far (fresh ones start here) */
} Lowered;

/* Lower every node of G. Returns 0, or -1 with a message naming the
 * instruction that has no lowering. */
int lower_block(const Program *p, const Dfg *g, Lowered *out, char *msg, size_t msglen);
void lowered_free(Lowered *l);

#endif

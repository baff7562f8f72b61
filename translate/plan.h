/* translate/plan.h — block plans: what a basic block becomes after
 * lowering, shape analysis, fusion scheduling and rewriting. A plan is a
 * list of steps in execution order: host steps on metadata (CONST, LENGTH,
 * LENGTHS, MAKE_SEGDES) and kernels (fused or not). */
#ifndef TRANSLATE_PLAN_H
#define TRANSLATE_PLAN_H

#include <stdio.h>
#include "translate/dfg.h"
#include "translate/fuse.h"
#include "translate/lcu.h"
#include "translate/lower.h"
#include "translate/shape.h"

typedef struct {
    StepKind kind;      /* STEP_HOST: the graph node's instruction; STEP_KERNEL: k */
    int node;           /* graph node (for a fused kernel: its first node) */
    LcuKernel *k;
    int nrelease;       /* variables whose last use is this step */
    int *release;
    /* STEP_KERNEL: per k->rets[r], a parameter released by this step whose
     * storage the result may take (an elementwise MAP reading it only at
     * its own index), or -1; NULL when there is none. The backend donates
     * it when nothing else holds it (value.h val_donate): generated code
     * must not assume that a MAP's result and arguments never alias (no
     * restrict on them). */
    int *donor;
    /* the donor may be one of the block's inputs: nothing in the block can
     * fail once this step writes (translate/plan.c input_donor_ok), as
     * long as every array the step reads is at least as long as its MAP's
     * shape (the backend checks that when it offers) */
    int input_donor;
} PlanStep;

typedef struct {
    int fusion;         /* 0: one kernel per instruction */
    FuseOptions fuse;
    FILE *trace;        /* -d fusion */
    int float_reassoc;  /* --float-reassoc: float + and * reductions fold by
                           chunks (LcuSoac.chunked, vcode/semantics.h) */
} PlanOptions;

typedef struct {
    Block blk;
    Dfg dfg;
    int nvars;
    LcuVarType *types;
    unsigned char *typed;
    Shapes shapes;
    int nsteps;
    PlanStep *steps;
    int fused;
    /* block inputs that no step reads and that are not outputs (the
     * block only pops them): the backend lets them go at the start */
    int ndead_in;
    int *dead_in;
    /* static figures, for -d stats */
    int kernels_unfused, kernels_fused;
    int arrays_unfused, arrays_fused;
    FuseResult fr;
    double translate_seconds;
} BlockPlan;

/* Build the plan of block B. Returns 0, or -1 when the block cannot be
 * planned (MSG says why; the interpreter then runs it as it is). */
int plan_build(const Program *p, const Block *b, const PlanOptions *opt, BlockPlan *out,
               char *msg, size_t msglen);
void plan_free(BlockPlan *bp);

#endif

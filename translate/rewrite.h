/* translate/rewrite.h — merging a cluster of single-SOAC kernels into one
 * kernel (Nessie thesis §8): vertical fusion of MAPs into their consumers
 * by thunk substitution (MAP-MAP, MAP-REDUCE, MAP-SCAN, MAP-PERMUTE,
 * MAP-FILTER and their segmented forms), FILTER-REDUCE (filtered-out
 * elements contribute the reduction's identity), horizontal merges of
 * SOACs of the same kind over the same iteration space (one SOAC with a
 * tuple thunk), then removal of SOACs whose results nobody needs. */
#ifndef TRANSLATE_REWRITE_H
#define TRANSLATE_REWRITE_H

#include "translate/lcu.h"

typedef struct {
    int nvars;
    const LcuVarType *types;
    const unsigned char *need;  /* per variable: read outside the cluster or live out */
    const int *shape_class;     /* per variable: its length class (for horizontal merges) */
    int *nlocals;               /* fresh thunk locals are taken from here */
    unsigned char *mark;        /* per variable, scratch: all 0 between calls */
} RewriteCtx;

/* Merge the SOACs of KERNELS[0..n) (each a kernel of one SOAC, in program
 * order; their SOACs are moved out, the kernels freed) into one kernel
 * with id ID. Returns it, finished (params and rets set). */
LcuKernel *rewrite_cluster(LcuKernel **kernels, int n, int id, const RewriteCtx *cx);

/* The reduction operator's identity as an expression. */
LcuExpr *rewrite_rop_identity(VsRop r);

#endif

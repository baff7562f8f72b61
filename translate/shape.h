/* translate/shape.h — length classes of a block (union-find).
 *
 * Every plan variable has a length quantity (an array's length, a segment
 * descriptor's segment count m) and a descriptor also has its element count
 * n. The instructions equate quantities (elementwise operands and result
 * share one; a reduction's result has its descriptor's m; DIST's result has
 * its descriptor's n; PACK starts a new one ...). Fusion uses the classes
 * to know which iteration spaces agree; at run time the plan checks the
 * actual lengths against them. */
#ifndef TRANSLATE_SHAPE_H
#define TRANSLATE_SHAPE_H

#include "translate/dfg.h"

typedef struct {
    int nq;             /* quantities: 2*var (len / m), 2*var+1 (n), and ONE */
    int *parent;
    int one;            /* the quantity "1" */
} Shapes;

#define SQ_LEN(v) (2 * (v))
#define SQ_N(v) (2 * (v) + 1)

/* Classes for a block whose plan has NVARS variables (the graph's values
 * first; EXTRA_EQ lists pairs of extra equalities, -1 terminated). */
void shape_analyse(const Dfg *g, int nvars, const int *extra_eq, Shapes *s);
int shape_find(Shapes *s, int q);
void shape_union(Shapes *s, int a, int b);
void shape_free(Shapes *s);

#endif

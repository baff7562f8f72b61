/* translate/fuse_impl.h — what fuse_ilp.c and fuse_greedy.c share: the
 * dependence relations of a FuseGraph as bit matrices, the rule that says
 * when two dataflow-independent nodes may share a cluster, and the cost of
 * a schedule. Internal to the fusion scheduler (the contract is fuse.h). */
#ifndef TRANSLATE_FUSE_IMPL_H
#define TRANSLATE_FUSE_IMPL_H

#include "translate/fuse.h"

#include <stdint.h>

typedef struct {
    int n;              /* nodes */
    int words;          /* uint64_t words per matrix row */
    uint64_t *reach;    /* path i -> j of one or more edges */
    uint64_t *edge;     /* some edge i -> j */
    uint64_t *vbad;     /* some edge i -> j cannot be fused vertically */
    struct FusePairOpt *scratch; /* n + 4 options, for fuse_pair_ok */
} FuseRel;

static inline int fuse_bit(const uint64_t *m, int words, int i, int j)
{
    return (int)((m[(size_t)i * (size_t)words + (size_t)(j >> 6)] >> (j & 63)) & 1u);
}

/* Build the relations. -1 when the graph is malformed (an index out of
 * range, an edge whose producer is not before its consumer) or memory runs
 * out; r is then empty and fuse_rel_free is still safe. */
int fuse_rel_init(FuseRel *r, const FuseGraph *g);
void fuse_rel_free(FuseRel *r);

/* 1 when i and j (i != j) are dataflow-independent: no path either way. */
static inline int fuse_indep(const FuseRel *r, int i, int j)
{
    return !fuse_bit(r->reach, r->words, i, j) && !fuse_bit(r->reach, r->words, j, i);
}

/* One way in which independent nodes a and b may share a cluster: they may,
 * provided that for each k < nreq the edge req[k][0] -> req[k][1] is fused
 * as well (the via_filter fusions of HFUSE-PREDS). nreq == 0: always. */
typedef struct FusePairOpt {
    int nreq;
    int req[2][2];
} FusePairOpt;

/* The ways in which independent nodes a and b may share a cluster, at most
 * cap of them (cap >= 4 + number of nodes is always enough). 0: never.
 *   - same kind, horizontally compatible as they are: unconditionally;
 *   - same kind, compatible once a and/or b iterates over the shape/seg of
 *     its via_filter FILTER: provided that FILTER -> node edge is fused;
 *   - a FILTER b and a node a of another kind: provided b is fused with a
 *     consumer r whose via_filter is b, of a's kind, independent of a and
 *     horizontally compatible with a over b's shape/seg (norm2: sum1 with
 *     the FILTER that feeds sum2). Symmetrically with a and b swapped. */
int fuse_pair_options(const FuseGraph *g, const FuseRel *r, int a, int b, FusePairOpt *opts,
                      int cap);

/* An option holds under a (possibly partial: -1 = unplaced) schedule. */
int fuse_opt_holds(const FusePairOpt *o, const int *cluster);

/* Independent a and b may share a cluster under cluster[] (their own
 * entries included). */
int fuse_pair_ok(const FuseGraph *g, const FuseRel *r, int a, int b, const int *cluster);

/* fuse_check on the nodes [0, upto) of a partial schedule. */
int fuse_check_rel(const FuseGraph *g, const FuseRel *r, const int *cluster, int upto);

/* Arrays materialised under a schedule: live-out arrays and those with a
 * consumer in another cluster than their producer. */
int fuse_count_materialised(const FuseGraph *g, const int *cluster);

#endif

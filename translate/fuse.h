/* translate/fuse.h — choosing which kernel invocations of a block to fuse
 * (Nessie thesis §7): an integer linear program solved with lp_solve, with a
 * greedy schedule as the fallback.
 *
 * The input is an abstract graph: one node per single-SOAC kernel
 * invocation, with what the scheduler needs to know about it (its SOAC
 * kind, its iteration-space shape class, the arrays it reads and writes).
 * The output is a cluster number per node: nodes with equal numbers are
 * fused into one kernel, and cluster numbers are a valid execution order
 * (a producer's cluster number is never greater than its consumers'). */
#ifndef TRANSLATE_FUSE_H
#define TRANSLATE_FUSE_H

#include <stdio.h>

/* How a consumer reads a producer's array. */
typedef enum {
    FA_ELEM,            /* element i at iteration i (x[i]) */
    FA_OTHER            /* anything else (gather, broadcast, whole-array) */
} FuseAccess;

typedef enum {
    FK_MAP, FK_REDUCE, FK_SCAN, FK_FILTER, FK_PERMUTE, FK_ONCE,
    FK_LIB              /* library kernels and host steps: never fused */
} FuseKind;

typedef struct {
    int producer;       /* node index */
    int consumer;       /* node index, producer < consumer */
    int array;          /* array index */
    FuseAccess access;
} FuseEdge;

typedef struct {
    FuseKind kind;
    int shape;          /* iteration-space class: nodes with equal shape and
                           compatible kinds may fuse horizontally */
    int seg;            /* segmented SOACs: the segment descriptor's class
                           (reductions/scans fuse only over the same one); -1 */
    int via_filter;     /* a REDUCE/FILTER that iterates over the output of the
                           FILTER node via_filter (else -1): fused with it, this
                           node iterates over that FILTER's shape/seg instead,
                           which may enable horizontal fusion (HFUSE-PREDS) */
} FuseNode;

typedef struct {
    int nnodes;
    FuseNode *nodes;    /* in program order (a topological order) */
    int nedges;
    FuseEdge *edges;
    int narrays;        /* arrays produced by nodes */
    int *live_out;      /* per array: 1 if used outside the block (must be materialised) */
    int *array_producer;/* per array: producing node */
} FuseGraph;

typedef struct {
    int fell_back;      /* 1: greedy schedule used */
    const char *why;    /* reason for the fallback, or NULL */
    int nvars, nconstraints;
    double objective;
    double seconds;     /* solver time (measured for -d stats; never decides) */
    long work;          /* lp_solve work spent (see ilp_max_work) */
    int nclusters;
    int materialised;   /* arrays materialised under this schedule */
} FuseResult;

/* The schedule depends only on the graph and these options, never on the
 * clock: the ILP is bounded by solver work, so a loaded machine gets the
 * same plans (and kernel-cache keys) as an idle one. */
typedef struct {
    int max_nodes;      /* larger graphs go to the greedy schedule (default 60) */
    FILE *trace;        /* -d fusion: print the ILP here, or NULL */
    long ilp_max_work;  /* lp_solve work limit for one schedule: the sum over the
                           calls of its abort callback (about one per simplex
                           iteration and B&B node) of the model's rows +
                           columns; past it, greedy (default FUSE_ILP_MAX_WORK) */
} FuseOptions;

/* About 0.2-0.3 s of lp_solve at 20-30 ns a unit; the corpus's largest ILP
 * (bn_black_scholes: 43 nodes, 2283 rows) needs 4.3 million. */
#define FUSE_ILP_MAX_WORK 10000000L

/* May nodes a (producer) and b (consumer) be fused vertically through an
 * edge with access ACC? May independent nodes a and b fuse horizontally? */
int fuse_vertical_ok(const FuseNode *a, const FuseNode *b, FuseAccess acc);
int fuse_horizontal_ok(const FuseNode *a, const FuseNode *b);

/* Fill cluster[0..nnodes) and *res. Uses the ILP, falling back to
 * fuse_greedy past the work limit, on infeasibility, a too-large graph or an
 * lp_solve failure. Graphs of more than FUSE_WINDOW nodes are scheduled in
 * windows of consecutive nodes (see fuse_greedy). */
void fuse_schedule(const FuseGraph *g, const FuseOptions *opt, int *cluster, FuseResult *res);
/* The greedy schedule alone (the ILP's fallback). A graph of
 * more than FUSE_WINDOW nodes is cut into windows of consecutive nodes (at
 * most FUSE_WINDOW each, as even as they come) scheduled one after
 * another: no cluster crosses a window, so time and memory are linear in
 * the number of nodes. Each window's schedule is checked (fuse_check). */
void fuse_greedy(const FuseGraph *g, int *cluster, FuseResult *res);

/* 512 keeps every fusion graph of the corpus but one (515 nodes) whole. */
#define FUSE_WINDOW 512

/* Check a schedule: clusters respect dependences (no cycle between
 * clusters), fused pairs are compatible. Returns 0 or -1. */
int fuse_check(const FuseGraph *g, const int *cluster);

#endif

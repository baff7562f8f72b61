/* translate/fuse_ilp.c — the fusion schedule as an integer linear program
 * solved by lp_solve (Nessie thesis §7.2–7.4), with the greedy schedule as
 * the fallback.
 *
 * The pairs of nodes that may be fused (an edge that can fuse vertically,
 * or independent nodes that may share a cluster) split the graph into
 * components; nodes of different components never share a cluster and the
 * objective is a sum over components, so each component of two or more
 * nodes gets its own ILP (see solve_ilp for how they are put back
 * together). For a component of K nodes:
 *
 * Variables (M = K):
 *   o_i in [0, K-1]    execution slot of node i (continuous: with the f
 *                      fixed, the o rows are difference constraints)
 *   f_ij in {0,1}      1: i and j are not fused; one per pair that may fuse
 *   c_a in {0,1}       array a is materialised; one per array not live out
 *                      whose every consumer may fuse with its producer
 *                      (the other arrays always are)
 *   z                  the objective (a continuous copy, see build)
 * Rows:
 *   edge p -> q        o_q - o_p >= f_pq, o_q - o_p <= M f_pq (VFUSE-CLUSTER:
 *                      order kept, fused iff same slot)
 *   strict order       o_q - o_p >= 1 when some path p -> ... -> q leaves
 *                      the component or takes an edge that cannot fuse
 *                      (VFUSE-COMPAT; paths inside keep order through their
 *                      edges' rows, and o_p = o_q forces the nodes between
 *                      into the slot too)
 *   independent a, b   |o_a - o_b| <= M f_ab (fused => same slot); when they
 *   that may fuse      may share a cluster only through via_filter fusions
 *                      (HFUSE-PREDS): 1 - f_ab <= sum over the ways
 *                      (1 - f_way)
 *   arrays             c_a >= f_pq for each edge p -> q carrying a
 *   triangles          for pairs ij, ik, jk that all have f (or can never
 *                      fuse: f = 1): f_ij <= f_ik + f_jk and rotations; true
 *                      of every clustering, they tighten the LP (at most
 *                      MAX_TRIANGLE_ROWS)
 *   chain cuts         added lazily, see solve_component: they keep apart
 *                      independent nodes that may not share a cluster
 *                      (HFUSE-COMPAT)
 * Objective: minimise W2 sum c_a + W1 sum sr(i,j) f_ij + sum f_ij, where
 * sr(i,j) counts the produced arrays both read or that flow between them,
 * W1 = w, W2 = w^2, w = 1 + max(#f, sum sr, #c): fewer allocations beat
 * fewer traversals beat fewer launches. (The thesis's f of pairs that can
 * never fuse and c of arrays that are always materialised are constants,
 * left out.)
 *
 * A solution is read as the connected components of its fused (f = 0)
 * pairs (not by equal o: nodes on one slot that no fused pairs join are
 * separate kernels with no path between them); the clusters are numbered
 * in a topological order of the graph between them. res->objective is the
 * objective of the schedule over the whole graph (weights of the whole
 * graph). */
#include "translate/fuse.h"
#include "translate/fuse_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lpsolve/lp_lib.h>

#define MAX_TRIANGLE_ROWS 20000

/* For res->seconds (-d stats) only: no decision reads the clock. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* lp_solve calls this about once per simplex iteration and B&B node. Each
 * call counts as rows + columns of the model (what an iteration costs,
 * roughly); the sum is the solver's work, the same on a loaded machine as
 * on an idle one, so a limit on it (unlike a time limit) keeps schedules
 * deterministic. */
typedef struct {
    long used, max;
} Work;

static int __WINAPI abort_cb(lprec *lp, void *handle)
{
    Work *wk = handle;
    wk->used += 1L + get_Nrows(lp) + get_Ncolumns(lp);
    return wk->used > wk->max ? TRUE : FALSE;
}

static int __WINAPI write_cb(void *handle, char *buf)
{
    fputs(buf, (FILE *)handle);
    return TRUE;
}

static int popcount64(uint64_t x)
{
    int c = 0;
    while (x) {
        x &= x - 1;
        c++;
    }
    return c;
}

static int uf_find(int *parent, int x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

static void uf_union(int *parent, int a, int b)
{
    a = uf_find(parent, a);
    b = uf_find(parent, b);
    if (a != b)
        parent[a > b ? a : b] = a < b ? a : b;
}

/* ---- rows ---------------------------------------------------------------- */

typedef struct {
    lprec *lp;
    int ok;
    int nrows;
    FILE *trace;        /* row names are kept only when tracing */
    char **names;
    int cap;
} Rows;

/* add_constraintex sorts cols[] and vals[] in place: callers fill both
 * again for every row. */
static void add_row(Rows *b, int cnt, int *cols, double *vals, int type, double rhs,
                    const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static void add_row(Rows *b, int cnt, int *cols, double *vals, int type, double rhs,
                    const char *fmt, ...)
{
    if (!b->ok)
        return;
    if (!add_constraintex(b->lp, cnt, vals, cols, type, rhs)) {
        b->ok = 0;
        return;
    }
    b->nrows++;
    if (!b->trace)
        return;
    if (b->nrows > b->cap) {
        int cap = b->cap ? 2 * b->cap : 64;
        char **nn = realloc(b->names, (size_t)cap * sizeof *nn);
        if (!nn) {
            b->ok = 0;
            return;
        }
        b->names = nn;
        b->cap = cap;
    }
    char buf[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *name = malloc(strlen(buf) + 1);
    if (name)
        strcpy(name, buf);
    b->names[b->nrows - 1] = name;
}

static void free_rows(Rows *b)
{
    for (int i = 0; i < b->nrows && i < b->cap; i++)
        free(b->names[i]);
    free(b->names);
}

/* ---- the whole graph ------------------------------------------------------ */

enum { P_NONE, P_EDGE, P_PATH, P_COMPAT, P_APART };

typedef struct {
    const FuseGraph *g;
    const FuseRel *r;
    int n;
    unsigned char *ptype;   /* per pair i < j (at i * n + j): P_* */
    unsigned char *freef;   /* the pair may fuse: it has an f */
    int *sr;                /* per pair: shared reads */
    int *comp;              /* per node: its component (smallest node) */
    FusePairOpt *opts;      /* n + 4 */
    double w1, w2;          /* weights of the whole-graph objective */
    FILE *trace;
    Work work;          /* shared by all the solves of one schedule */
} Whole;

static size_t gix(const Whole *w, int i, int j)
{
    return i < j ? (size_t)i * (size_t)w->n + (size_t)j : (size_t)j * (size_t)w->n + (size_t)i;
}

static void free_whole(Whole *w)
{
    free(w->ptype);
    free(w->freef);
    free(w->sr);
    free(w->comp);
    free(w->opts);
}

/* Pair kinds, shared reads, components, whole-graph weights. */
static const char *init_whole(Whole *w)
{
    const FuseGraph *g = w->g;
    const FuseRel *r = w->r;
    int n = w->n, na = g->narrays;
    size_t nn = (size_t)n * (size_t)n;
    int aw = na > 0 ? (na + 63) / 64 : 1;
    const char *why = NULL;
    w->ptype = calloc(nn, 1);
    w->freef = calloc(nn, 1);
    w->sr = calloc(nn, sizeof *w->sr);
    w->comp = malloc((size_t)n * sizeof *w->comp);
    w->opts = malloc(((size_t)n + 4) * sizeof *w->opts);
    uint64_t *cons = calloc((size_t)n * (size_t)aw, sizeof *cons);
    uint64_t *out = calloc((size_t)n * (size_t)aw, sizeof *out);
    if (!w->ptype || !w->freef || !w->sr || !w->comp || !w->opts || !cons || !out) {
        why = "out of memory";
        goto done;
    }
    for (int i = 0; i < n; i++)
        w->comp[i] = i;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t ij = gix(w, i, j);
            if (fuse_bit(r->edge, r->words, i, j)) {
                w->ptype[ij] = P_EDGE;
                w->freef[ij] = !fuse_bit(r->vbad, r->words, i, j);
            } else if (fuse_bit(r->reach, r->words, i, j)) {
                w->ptype[ij] = P_PATH;
            } else if (fuse_pair_options(g, r, i, j, w->opts, n + 4) > 0) {
                w->ptype[ij] = P_COMPAT;
                w->freef[ij] = 1;
            } else {
                w->ptype[ij] = P_APART;
            }
            if (w->freef[ij])
                uf_union(w->comp, i, j);
        }
    for (int i = 0; i < n; i++)
        w->comp[i] = uf_find(w->comp, i);

    for (int e = 0; e < g->nedges; e++) {
        const FuseEdge *ed = &g->edges[e];
        uint64_t bit = (uint64_t)1 << (ed->array & 63);
        cons[(size_t)ed->consumer * (size_t)aw + (size_t)(ed->array >> 6)] |= bit;
        out[(size_t)ed->producer * (size_t)aw + (size_t)(ed->array >> 6)] |= bit;
    }
    long npairs = 0, srsum = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t ij = gix(w, i, j);
            if (w->ptype[ij] != P_EDGE && w->ptype[ij] != P_COMPAT)
                continue;
            const uint64_t *ci = cons + (size_t)i * (size_t)aw, *cj = cons + (size_t)j * (size_t)aw;
            const uint64_t *oi = out + (size_t)i * (size_t)aw, *oj = out + (size_t)j * (size_t)aw;
            int s = 0;
            for (int k = 0; k < aw; k++)
                s += popcount64(ci[k] & cj[k]) + popcount64(oi[k] & cj[k]) +
                     popcount64(oj[k] & ci[k]);
            w->sr[ij] = s;
            srsum += s;
            npairs++;
        }
    long big = npairs > srsum ? npairs : srsum;
    if (na > big)
        big = na;
    w->w1 = (double)big + 1.0;
    w->w2 = w->w1 * w->w1;
done:
    free(cons);
    free(out);
    return why;
}

/* The thesis objective of a schedule of the whole graph. */
static double cost_of(const Whole *w, const int *cluster)
{
    double c = w->w2 * fuse_count_materialised(w->g, cluster);
    for (int i = 0; i < w->n; i++)
        for (int j = i + 1; j < w->n; j++) {
            size_t ij = gix(w, i, j);
            if ((w->ptype[ij] == P_EDGE || w->ptype[ij] == P_COMPAT) && cluster[i] != cluster[j])
                c += w->w1 * w->sr[ij] + 1;
        }
    return c;
}

/* Number the clusters given by parent[] (a union-find over the nodes) in a
 * topological order of the graph between them, the one with the first
 * node first among those ready. Returns the number of clusters, or -1 on a
 * cycle. */
static int order_clusters(const FuseGraph *g, int *parent, int *cluster)
{
    int n = g->nnodes, k = 0;
    int *indeg = calloc((size_t)n, sizeof *indeg), *minix = malloc((size_t)n * sizeof *minix);
    if (!indeg || !minix) {
        free(indeg);
        free(minix);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        minix[i] = n;
        cluster[i] = -1;
    }
    for (int i = 0; i < n; i++) {
        int c = uf_find(parent, i);
        if (i < minix[c])
            minix[c] = i;
    }
    for (int e = 0; e < g->nedges; e++) {
        int a = uf_find(parent, g->edges[e].producer), b = uf_find(parent, g->edges[e].consumer);
        if (a != b)
            indeg[b]++;
    }
    for (;;) {
        int best = -1;
        for (int c = 0; c < n; c++)
            if (parent[c] == c && cluster[c] < 0 && indeg[c] == 0 &&
                (best < 0 || minix[c] < minix[best]))
                best = c;
        if (best < 0)
            break;
        cluster[best] = k++;
        for (int e = 0; e < g->nedges; e++) {
            int a = uf_find(parent, g->edges[e].producer), b = uf_find(parent, g->edges[e].consumer);
            if (a == best && b != best)
                indeg[b]--;
        }
    }
    int ok = 1;
    for (int i = 0; i < n && ok; i++)
        ok = cluster[uf_find(parent, i)] >= 0;
    /* On a cycle, cluster[] of the roots left unnumbered stays -1. */
    for (int i = 0; i < n && ok; i++)
        if (parent[i] != i)
            cluster[i] = cluster[uf_find(parent, i)];
    free(indeg);
    free(minix);
    return ok ? k : -1;
}

/* After order_clusters found a cycle: the clusters it left unnumbered that
 * also lead to an unnumbered cluster (those on cycles, or between them),
 * marked in core[] by root. */
static void cyclic_core(const FuseGraph *g, int *parent, const int *cluster, unsigned char *core)
{
    int n = g->nnodes, changed = 1;
    for (int i = 0; i < n; i++)
        core[i] = parent[i] == i && cluster[i] < 0;
    while (changed) {
        changed = 0;
        for (int c = 0; c < n; c++) {
            if (!core[c])
                continue;
            int leads = 0;
            for (int e = 0; e < g->nedges && !leads; e++) {
                int a = uf_find(parent, g->edges[e].producer), b = uf_find(parent, g->edges[e].consumer);
                leads = a == c && b != c && core[b];
            }
            if (!leads) {
                core[c] = 0;
                changed = 1;
            }
        }
    }
}

/* ---- one component's ILP -------------------------------------------------- */

typedef struct {
    Whole *w;
    int k;                  /* nodes */
    const int *node;        /* local -> global */
    int *loc;               /* global -> local, -1 outside */
    unsigned char *strict;  /* k * k: u strictly before v */
    lprec *lp;
    Rows rows;
    int *fcol;              /* k * k: column of f_uv (u < v), or 0 */
    int *ccol;              /* per array: column of c_a, or 0 */
    double w1, w2;
    int *cols;              /* row buffers */
    double *vals;
    double *vars;           /* solution, 1-based */
    int *parent, *prev, *queue;
} Ilp;

static size_t lix(const Ilp *m, int u, int v)
{
    return u < v ? (size_t)u * (size_t)m->k + (size_t)v : (size_t)v * (size_t)m->k + (size_t)u;
}

static int never(const Ilp *m, int u, int v)
{
    return m->w->ptype[gix(m->w, m->node[u], m->node[v])] == P_APART ||
           m->strict[(size_t)u * (size_t)m->k + (size_t)v] ||
           m->strict[(size_t)v * (size_t)m->k + (size_t)u];
}

static void free_ilp(Ilp *m)
{
    if (m->lp)
        delete_lp(m->lp);
    free_rows(&m->rows);
    free(m->strict);
    free(m->fcol);
    free(m->ccol);
    free(m->cols);
    free(m->vals);
    free(m->vars);
    free(m->parent);
    free(m->prev);
    free(m->queue);
}

/* strict[u][v]: some path from u to v leaves the component or takes an
 * edge that cannot fuse. */
static const char *find_strict(Ilp *m)
{
    const Whole *w = m->w;
    const FuseGraph *g = w->g;
    const FuseRel *r = w->r;
    int words = r->words;
    uint64_t *from = malloc((size_t)words * sizeof *from), *bad = malloc((size_t)words * sizeof *bad);
    if (!from || !bad) {
        free(from);
        free(bad);
        return "out of memory";
    }
    for (int u = 0; u < m->k; u++) {
        int gu = m->node[u];
        memcpy(from, r->reach + (size_t)gu * (size_t)words, (size_t)words * sizeof *from);
        from[gu >> 6] |= (uint64_t)1 << (gu & 63);
        memset(bad, 0, (size_t)words * sizeof *bad);
        for (int e = 0; e < g->nedges; e++) {
            int x = g->edges[e].producer, y = g->edges[e].consumer;
            if (!((from[x >> 6] >> (x & 63)) & 1) || w->freef[gix(w, x, y)])
                continue;
            const uint64_t *ry = r->reach + (size_t)y * (size_t)words;
            for (int t = 0; t < words; t++)
                bad[t] |= ry[t];
            bad[y >> 6] |= (uint64_t)1 << (y & 63);
        }
        for (int v = 0; v < m->k; v++) {
            int gv = m->node[v];
            m->strict[(size_t)u * (size_t)m->k + (size_t)v] = (unsigned char)((bad[gv >> 6] >> (gv & 63)) & 1);
        }
    }
    free(from);
    free(bad);
    return NULL;
}

/* Triangle rows: first those with a pair that never fuses (f_ik + f_jk >=
 * 1), then transitivity, up to MAX_TRIANGLE_ROWS in all. */
static int add_triangles(Ilp *m)
{
    int k = m->k, count = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int a = 0; a < k; a++)
            for (int b = a + 1; b < k; b++) {
                int fab = m->fcol[lix(m, a, b)], nab = !fab && never(m, a, b);
                if (!fab && !nab)
                    continue;
                for (int c = b + 1; c < k; c++) {
                    int pr[3][2] = {{a, b}, {a, c}, {b, c}}, fc[3], nev = 0, ok = 1;
                    for (int t = 0; t < 3 && ok; t++) {
                        fc[t] = m->fcol[lix(m, pr[t][0], pr[t][1])];
                        if (!fc[t]) {
                            if (never(m, pr[t][0], pr[t][1]))
                                nev++;
                            else
                                ok = 0;
                        }
                    }
                    if (!ok || nev > 1 || (pass == 0) != (nev == 1))
                        continue;
                    if (count + (nev ? 1 : 3) > MAX_TRIANGLE_ROWS)
                        return count;
                    int ga = m->node[a], gb = m->node[b], gc = m->node[c];
                    if (nev) {
                        int cnt = 0;
                        for (int t = 0; t < 3; t++)
                            if (fc[t])
                                m->cols[cnt] = fc[t], m->vals[cnt++] = 1;
                        add_row(&m->rows, 2, m->cols, m->vals, GE, 1, "tri_%d_%d_%d", ga, gb, gc);
                        count++;
                        continue;
                    }
                    for (int t = 0; t < 3; t++) {
                        for (int u = 0; u < 3; u++)
                            m->cols[u] = fc[u], m->vals[u] = u == t ? -1 : 1;
                        add_row(&m->rows, 3, m->cols, m->vals, GE, 0, "tri%d_%d_%d_%d", t, ga, gb,
                                gc);
                        count++;
                    }
                }
            }
    return count;
}

/* The f column of a fusion a way of HFUSE-PREDS needs, or 0 when there is
 * none (the way is then impossible). */
static int way_col(const Ilp *m, const int req[2])
{
    int v = m->loc[req[0]], x = m->loc[req[1]];
    return v < 0 || x < 0 || v == x ? 0 : m->fcol[lix(m, v, x)];
}

/* The columns: o (1..k), then an f for each pair that may fuse and is
 * not ordered strictly, then a c for each array produced here, not live
 * out, whose every consumer is joined to its producer by an f; and the
 * objective's weights. Returns the last column; *NF, *NC: the counts. */
static int assign_columns(Ilp *m, int *nf, int *nc)
{
    Whole *w = m->w;
    const FuseGraph *g = w->g;
    int k = m->k, na = g->narrays, ncol = k;
    long srsum = 0;
    for (int u = 0; u < k; u++)
        for (int v = u + 1; v < k; v++) {
            size_t ij = gix(w, m->node[u], m->node[v]);
            if (w->freef[ij] && !m->strict[(size_t)u * (size_t)k + (size_t)v]) {
                m->fcol[lix(m, u, v)] = ++ncol;
                (*nf)++;
                srsum += w->sr[ij];
            }
        }
    for (int e = 0; e < g->nedges; e++) {
        int a = g->edges[e].array, p = g->edges[e].producer;
        if (m->loc[p] >= 0 && !(g->live_out && g->live_out[a]))
            m->ccol[a] = -1; /* candidate */
    }
    for (int e = 0; e < g->nedges; e++) {
        const FuseEdge *ed = &g->edges[e];
        if (m->ccol[ed->array] == -1 &&
            (m->loc[ed->consumer] < 0 || !m->fcol[lix(m, m->loc[ed->producer], m->loc[ed->consumer])]))
            m->ccol[ed->array] = 0;
    }
    for (int a = 0; a < na; a++)
        if (m->ccol[a] == -1) {
            m->ccol[a] = ++ncol;
            (*nc)++;
        }
    long big = *nf > srsum ? *nf : srsum;
    if (*nc > big)
        big = *nc;
    m->w1 = (double)big + 1.0;
    m->w2 = m->w1 * m->w1;
    return ncol;
}

/* The rows of the pair of component nodes U < V (program order, so a path
 * goes from u to v): strictly before, ordered when fused along an edge,
 * the same position unless fused (compatible), and HFUSE-PREDS. */
static void add_pair_rows(Ilp *m, int u, int v)
{
    Whole *w = m->w;
    const FuseGraph *g = w->g;
    int *cols = m->cols;
    double *vals = m->vals;
    const double M = (double)m->k;
    int gu = m->node[u], gv = m->node[v];
    size_t ij = gix(w, gu, gv);
    int ou = 1 + u, ov = 1 + v, f = m->fcol[lix(m, u, v)];
    if (m->strict[(size_t)u * (size_t)m->k + (size_t)v]) {
        cols[0] = ov, vals[0] = 1, cols[1] = ou, vals[1] = -1;
        add_row(&m->rows, 2, cols, vals, GE, 1, "before_%d_%d", gu, gv);
        return;
    }
    if (w->ptype[ij] == P_EDGE && f) {
        /* o_v - o_u - f >= 0;  o_v - o_u - M f <= 0 */
        cols[0] = ov, vals[0] = 1, cols[1] = ou, vals[1] = -1, cols[2] = f, vals[2] = -1;
        add_row(&m->rows, 3, cols, vals, GE, 0, "order_%d_%d", gu, gv);
        cols[0] = ov, vals[0] = 1, cols[1] = ou, vals[1] = -1, cols[2] = f, vals[2] = -M;
        add_row(&m->rows, 3, cols, vals, LE, 0, "fused_%d_%d", gu, gv);
        return;
    }
    if (w->ptype[ij] != P_COMPAT)
        return;
    /* f = 0 => o_u = o_v:  |o_u - o_v| <= M f */
    cols[0] = ou, vals[0] = 1, cols[1] = ov, vals[1] = -1, cols[2] = f, vals[2] = -M;
    add_row(&m->rows, 3, cols, vals, LE, 0, "same_%d_%d", gu, gv);
    cols[0] = ou, vals[0] = -1, cols[1] = ov, vals[1] = 1, cols[2] = f, vals[2] = -M;
    add_row(&m->rows, 3, cols, vals, LE, 0, "same2_%d_%d", gu, gv);
    /* HFUSE-PREDS */
    FusePairOpt *opts = w->opts;
    int no = fuse_pair_options(g, w->r, gu, gv, opts, w->n + 4), uncond = 0, singles = 0;
    for (int t = 0; t < no; t++) {
        uncond |= opts[t].nreq == 0;
        singles += opts[t].nreq == 1;
    }
    if (uncond)
        return;
    /* The fusions a way needs join nodes of this component. */
    if (singles > 0) {
        /* 1 - f_uv <= sum over the ways (1 - f_way) */
        int c2 = 0;
        cols[c2] = f, vals[c2++] = 1;
        for (int t = 0; t < no; t++)
            if (opts[t].nreq == 1) {
                int fw = way_col(m, opts[t].req[0]);
                if (fw)
                    cols[c2] = fw, vals[c2++] = -1;
            }
        add_row(&m->rows, c2, cols, vals, GE, 1 - (c2 - 1), "preds_%d_%d", gu, gv);
        return;
    }
    /* The one way, needing two fusions: both. */
    for (int t = 0; t < 2; t++) {
        int fw = way_col(m, opts[0].req[t]);
        cols[0] = f, vals[0] = 1;
        if (fw)
            cols[1] = fw, vals[1] = -1;
        add_row(&m->rows, fw ? 2 : 1, cols, vals, GE, fw ? 0 : 1, "preds%d_%d_%d", t, gu, gv);
    }
}

/* c_a >= f_pq for each edge p -> q carrying a (once per pair). */
static void add_alloc_rows(Ilp *m)
{
    const FuseGraph *g = m->w->g;
    int *cols = m->cols;
    double *vals = m->vals;
    for (int e = 0; e < g->nedges; e++) {
        const FuseEdge *ed = &g->edges[e];
        if (!m->ccol[ed->array])
            continue;
        int dup = 0;
        for (int e2 = 0; e2 < e && !dup; e2++)
            dup = g->edges[e2].array == ed->array && g->edges[e2].producer == ed->producer &&
                  g->edges[e2].consumer == ed->consumer;
        if (dup)
            continue;
        cols[0] = m->ccol[ed->array], vals[0] = 1;
        cols[1] = m->fcol[lix(m, m->loc[ed->producer], m->loc[ed->consumer])], vals[1] = -1;
        add_row(&m->rows, 2, cols, vals, GE, 0, "alloc_%d_%d_%d", ed->array, ed->producer, ed->consumer);
    }
}

/* Bounds and kinds of the columns; their names when tracing. */
static void kinds_and_names(Ilp *m, int zcol)
{
    lprec *lp = m->lp;
    FILE *trace = m->w->trace;
    int k = m->k, na = m->w->g->narrays;
    char name[48];
    for (int u = 0; u < k; u++) {
        set_bounds(lp, 1 + u, 0, (double)(k - 1));
        if (trace) {
            snprintf(name, sizeof name, "o%d", m->node[u]);
            set_col_name(lp, 1 + u, name);
        }
    }
    for (int u = 0; u < k; u++)
        for (int v = u + 1; v < k; v++) {
            int f = m->fcol[lix(m, u, v)];
            if (!f)
                continue;
            set_binary(lp, f, TRUE);
            if (trace) {
                snprintf(name, sizeof name, "f%d_%d", m->node[u], m->node[v]);
                set_col_name(lp, f, name);
            }
        }
    if (trace)
        set_col_name(lp, zcol, "z");
    for (int a = 0; a < na; a++) {
        if (!m->ccol[a])
            continue;
        set_binary(lp, m->ccol[a], TRUE);
        if (trace) {
            snprintf(name, sizeof name, "c%d", a);
            set_col_name(lp, m->ccol[a], name);
        }
    }
}

/* Build the component's ILP (all but the cuts). NULL, or what went wrong. */
static const char *build(Ilp *m)
{
    Whole *w = m->w;
    const FuseGraph *g = w->g;
    FILE *trace = w->trace;
    int k = m->k, na = g->narrays;
    size_t kk = (size_t)k * (size_t)k;
    m->strict = calloc(kk, 1);
    m->fcol = calloc(kk, sizeof *m->fcol);
    m->ccol = calloc((size_t)(na > 0 ? na : 1), sizeof *m->ccol);
    m->parent = malloc((size_t)k * sizeof(int));
    m->prev = malloc((size_t)k * sizeof(int));
    m->queue = malloc((size_t)k * sizeof(int));
    if (!m->strict || !m->fcol || !m->ccol || !m->parent || !m->prev || !m->queue)
        return "out of memory";
    const char *why = find_strict(m);
    if (why)
        return why;

    int nf = 0, nc = 0;
    int ncol = assign_columns(m, &nf, &nc);

    size_t buf = (size_t)ncol + (size_t)k + 9;
    m->cols = malloc(buf * sizeof *m->cols);
    m->vals = malloc(buf * sizeof *m->vals);
    m->vars = malloc(((size_t)ncol + 2) * sizeof *m->vars); /* and z */
    if (!m->cols || !m->vals || !m->vars)
        return "out of memory";
    int *cols = m->cols;
    double *vals = m->vals;
    /* The objective is a continuous copy z of the sum: with the integer
     * columns in the objective itself, lp_solve guesses a smallest step of
     * the objective from their coefficients (MIP_stepOF) and can prune the
     * optimum. */
    int zcol = ++ncol;
    lprec *lp = m->lp = make_lp(0, ncol);
    if (!lp)
        return "lp_solve: make_lp failed";
    set_verbose(lp, NEUTRAL);
    int cnt = 0;
    for (int u = 0; u < k; u++)
        for (int v = u + 1; v < k; v++) {
            int f = m->fcol[lix(m, u, v)];
            if (f) {
                cols[cnt] = f;
                vals[cnt++] = m->w1 * w->sr[gix(w, m->node[u], m->node[v])] + 1.0;
            }
        }
    for (int a = 0; a < na; a++)
        if (m->ccol[a]) {
            cols[cnt] = m->ccol[a];
            vals[cnt++] = m->w2;
        }
    for (int t = 0; t < cnt; t++)
        vals[t] = -vals[t];
    cols[cnt] = zcol, vals[cnt++] = 1;
    double one = 1;
    set_minim(lp);
    if (!set_obj_fnex(lp, 1, &one, &zcol))
        return "lp_solve: set_obj_fnex failed";

    m->rows.lp = lp;
    m->rows.ok = 1;
    m->rows.trace = trace;
    set_add_rowmode(lp, TRUE);
    /* z = W2 sum c + sum (W1 sr + 1) f */
    add_row(&m->rows, cnt, cols, vals, EQ, 0, "objective");
    for (int u = 0; u < k; u++)
        for (int v = u + 1; v < k; v++)
            add_pair_rows(m, u, v);
    add_alloc_rows(m);
    int ntri = add_triangles(m);
    set_add_rowmode(lp, FALSE);
    if (!m->rows.ok)
        return "lp_solve: add_constraintex failed";
    kinds_and_names(m, zcol);
    if (trace)
        fprintf(trace,
                "fusion: ILP for a component of %d nodes (first %d): %d f, %d c, %d triangle "
                "rows; weights %.0f per allocation, %.0f per shared read, 1 per launch\n",
                k, m->node[0], nf, nc, ntri, m->w2, m->w1);
    return NULL;
}

/* Components of the fused pairs of the current solution, in parent[]. */
static void components(Ilp *m)
{
    int k = m->k;
    for (int u = 0; u < k; u++)
        m->parent[u] = u;
    for (int u = 0; u < k; u++)
        for (int v = u + 1; v < k; v++) {
            int f = m->fcol[lix(m, u, v)];
            if (f && m->vars[f] < 0.5)
                uf_union(m->parent, u, v);
        }
}

/* A pair in one component of the solution that may not be fused so. */
static int violates(const Ilp *m, int u, int v)
{
    int t = m->w->ptype[gix(m->w, m->node[u], m->node[v])];
    int f = m->fcol[lix(m, u, v)];
    return t == P_APART || (t == P_COMPAT && (!f || m->vars[f] > 0.5));
}

/* Cut the chain of fused pairs that joins u and v in the current solution:
 * the f over the chain sum to >= 1 when u and v may never share a cluster,
 * to >= f_uv when they may only with f_uv = 0. */
static void add_cut(Ilp *m, int u0, int v0)
{
    int k = m->k, head = 0, tail = 0, *prev = m->prev, *queue = m->queue;
    for (int u = 0; u < k; u++)
        prev[u] = -1;
    prev[u0] = u0;
    queue[tail++] = u0;
    while (head < tail && prev[v0] < 0) {
        int u = queue[head++];
        for (int v = 0; v < k; v++) {
            int f = v == u ? 0 : m->fcol[lix(m, u, v)];
            if (f && prev[v] < 0 && m->vars[f] < 0.5) {
                prev[v] = u;
                queue[tail++] = v;
            }
        }
    }
    if (prev[v0] < 0)
        return; /* not joined: cannot be, for a pair of one component */
    int cnt = 0;
    for (int v = v0; v != u0; v = prev[v]) {
        m->cols[cnt] = m->fcol[lix(m, prev[v], v)];
        m->vals[cnt++] = 1;
    }
    int fuv = m->fcol[lix(m, u0, v0)];
    if (fuv) {
        m->cols[cnt] = fuv;
        m->vals[cnt++] = -1;
    }
    add_row(&m->rows, cnt, m->cols, m->vals, GE, fuv ? 0 : 1, "cut_%d_%d_%d", m->node[u0],
            m->node[v0], m->rows.nrows);
}

/* Cut every pair that shares a component of the solution but may not;
 * returns how many. */
static int add_cuts(Ilp *m)
{
    int added = 0;
    for (int u = 0; u < m->k; u++)
        for (int v = u + 1; v < m->k; v++)
            if (uf_find(m->parent, u) == uf_find(m->parent, v) && violates(m, u, v)) {
                add_cut(m, u, v);
                added++;
            }
    return added;
}

/* Keeping a solution that is valid and better than greedy when the work
 * limit stops lp_solve gives better schedules, but the project's rule is
 * "past the limit, fall back to the greedy schedule and say so"; set to 1
 * to keep such solutions. */
static const int keep_unproven = 0;

#define WHY_WORK "lp_solve work limit reached"

/* Solve the component's ILP. 0: solved to optimality; 1: stopped by the
 * work limit with a solution whose clusters are valid (not proven optimal);
 * -1: no usable solution, *why set. sol[] of each node is set to the first
 * node of its cluster. Rows that
 * keep independent nodes apart are added lazily, as cuts: where a cluster
 * of the solution holds a pair that may not share one, the chain of fused
 * pairs joining them is cut and the ILP solved again. A solution without
 * such a pair is a valid schedule whose objective is its true cost, and
 * every valid schedule satisfies every cut, so it is optimal. */
static int solve_component(Ilp *m, int *sol, FuseResult *res, const char **why)
{
    FILE *trace = m->w->trace;
    *why = build(m);
    if (*why)
        return -1;
    lprec *lp = m->lp;
    /* lp_solve's default gaps (its absolute gap does not act as a plain
     * threshold on this model); the relative one tightened for the large
     * objective values. */
    set_mip_gap(lp, FALSE, 1e-11);
    /* No set_timeout: lp_solve's own clock stays out of the decision. */
    put_abortfunc(lp, abort_cb, &m->w->work);
    int rounds = 0, status = NOTRUN, rc = -1;
    for (;;) {
        /* Every solve counts too, so rounds of cuts stay bounded even
         * where lp_solve never calls abort_cb (small models). */
        Work *wk = &m->w->work;
        wk->used += 1L + get_Nrows(lp) + get_Ncolumns(lp);
        if (wk->used > wk->max) {
            *why = WHY_WORK;
            break;
        }
        double t0 = now_s();
        status = solve(lp);
        res->seconds += now_s() - t0;
        rounds++;
        if (trace)
            fprintf(trace, "fusion: round %d: %d variables, %d constraints: lp_solve: %s (%d), "
                           "objective %.0f\n",
                    rounds, get_Ncolumns(lp), get_Nrows(lp), get_statustext(lp, status), status,
                    get_objective(lp));
        if (status == SUBOPTIMAL || status == USERABORT || status == TIMEOUT) {
            *why = WHY_WORK;
            break;
        }
        if (status == INFEASIBLE) {
            *why = "ILP infeasible";
            break;
        }
        if (status != OPTIMAL && status != PRESOLVED) {
            *why = "lp_solve failed";
            break;
        }
        if (!get_variables(lp, m->vars + 1)) {
            *why = "lp_solve: get_variables failed";
            break;
        }
        components(m);
        int added = add_cuts(m);
        if (!m->rows.ok) {
            *why = "lp_solve: adding constraints failed";
            break;
        }
        if (!added) {
            rc = 0;
            break;
        }
        if (trace)
            fprintf(trace, "fusion: %d chain cuts\n", added);
    }
    if (rc != 0 && status == SUBOPTIMAL && get_variables(lp, m->vars + 1)) {
        /* Stopped with a solution: usable if its clusters are valid. */
        components(m);
        rc = 1;
        for (int u = 0; u < m->k && rc; u++)
            for (int v = u + 1; v < m->k && rc; v++)
                if (uf_find(m->parent, u) == uf_find(m->parent, v) && violates(m, u, v))
                    rc = -1;
    }
    res->nvars += get_Ncolumns(lp);
    res->nconstraints += get_Nrows(lp);
    if (trace) {
        for (int i = 0; i < m->rows.nrows; i++)
            if (m->rows.names[i])
                set_row_name(lp, 1 + i, m->rows.names[i]);
        write_lpex(lp, trace, write_cb);
        fprintf(trace, "fusion: %d round%s%s\n", rounds, rounds == 1 ? "" : "s",
                rc == 0 ? "" : rc == 1 ? ", work limit: best solution kept" : ", no solution");
    }
    if (rc >= 0)
        for (int u = 0; u < m->k; u++)
            sol[m->node[u]] = m->node[uf_find(m->parent, u)];
    return rc;
}

/* Fill cluster[] from the ILPs of the components. NULL on success, else
 * why not.
 *
 * Each component's ILP keeps order along the paths that leave it, but not
 * the order that the fusions of another component impose (fusing p -> q in
 * one component and r -> s in another, with edges p -> s and r -> q, is a
 * cycle): solved apart they are a relaxation of the ILP of the whole graph.
 * So when their clusters together have a cycle, the components of the
 * clusters on cycles are merged and solved again, until there is none; the
 * schedule is then optimal for the whole graph.
 *
 * A component whose ILP reaches the work limit keeps the best solution
 * lp_solve found when its clusters are valid, else its greedy clusters; the
 * schedule is then kept only if it is cheaper than the greedy one. */
/* The greedy clusters of G into *GCL (made on first use), and the K
 * nodes NODE of one component given them in SOL (each the first node of
 * its greedy cluster; none when K is 0). 0, or -1 out of memory. */
static int greedy_component(const FuseGraph *g, int **gcl, const int *node, int k, int *sol)
{
    if (!*gcl && (*gcl = malloc((size_t)g->nnodes * sizeof **gcl)) != NULL) {
        FuseResult gres;
        fuse_greedy(g, *gcl, &gres);
    }
    if (!*gcl)
        return -1;
    for (int t = 0; t < k; t++) {
        int rep = node[t];
        for (int t2 = 0; t2 < t && rep == node[t]; t2++)
            if ((*gcl)[node[t2]] == (*gcl)[node[t]])
                rep = node[t2];
        sol[node[t]] = rep;
    }
    return 0;
}

/* The clusters GPARENT (union-find) of several components form a cycle:
 * merge the components of the clusters on cycles into the lowest of them,
 * marked DIRTY with its nodes unfused in SOL, to be solved again. NULL, or
 * why not (no cycle found: the schedule is wrong). */
static const char *merge_cyclic(Whole *w, int *gparent, int *cluster, unsigned char *core, unsigned char *dirty,
                                int *sol)
{
    int n = w->n;
    cyclic_core(w->g, gparent, cluster, core);
    int root = -1;
    for (int i = 0; i < n; i++)
        if (core[uf_find(gparent, i)] && (root < 0 || w->comp[i] < root))
            root = w->comp[i];
    if (root < 0)
        return "ILP schedule failed fuse_check";
    int merged = 0;
    for (int i = 0; i < n; i++)
        if (core[uf_find(gparent, i)] && w->comp[i] != root) {
            int old = w->comp[i];
            for (int j = 0; j < n; j++)
                if (w->comp[j] == old)
                    w->comp[j] = root;
            merged++;
        }
    if (!merged)
        return "ILP schedule failed fuse_check";
    dirty[root] = 1;
    for (int i = 0; i < n; i++)
        if (w->comp[i] == root)
            sol[i] = i;
    if (w->trace)
        fprintf(w->trace, "fusion: clusters of several components form a cycle: merged them "
                          "into the component of node %d\n",
                root);
    return NULL;
}

static const char *solve_ilp(const FuseGraph *g, long max_work, FILE *trace, int *cluster,
                             FuseResult *res)
{
    FuseRel r;
    if (fuse_rel_init(&r, g) != 0)
        return "malformed graph or out of memory";
    int n = g->nnodes;
    Whole w;
    memset(&w, 0, sizeof w);
    w.g = g;
    w.r = &r;
    w.n = n;
    w.trace = trace;
    w.work.max = max_work;
    int *sol = malloc((size_t)n * sizeof *sol), *gparent = malloc((size_t)n * sizeof *gparent);
    int *node = malloc((size_t)n * sizeof *node), *loc = malloc((size_t)n * sizeof *loc);
    unsigned char *dirty = calloc((size_t)n, 1), *unproven = calloc((size_t)n, 1);
    unsigned char *core = calloc((size_t)n, 1);
    int *gcl = NULL;
    const char *reason = WHY_WORK; /* why a solution is not proven */
    const char *why = init_whole(&w);
    if (!why && (!sol || !gparent || !node || !loc || !dirty || !unproven || !core))
        why = "out of memory";
    if (!why) {
        for (int i = 0; i < n; i++) {
            sol[i] = i;
            loc[i] = -1;
            dirty[w.comp[i]] = 1;
        }
    }
    while (!why) {
        for (int c = 0; c < n && !why; c++) {
            if (w.comp[c] != c || !dirty[c])
                continue;
            dirty[c] = 0;
            int k = 0;
            for (int i = c; i < n; i++)
                if (w.comp[i] == c) {
                    loc[i] = k;
                    node[k++] = i;
                }
            if (k >= 2) {
                Ilp m;
                memset(&m, 0, sizeof m);
                m.w = &w;
                m.k = k;
                m.node = node;
                m.loc = loc;
                const char *cwhy = NULL;
                int rc = solve_component(&m, sol, res, &cwhy);
                free_ilp(&m);
                unproven[c] = rc != 0;
                if (rc < 0) {
                    /* No solution within the limit: the greedy clusters of
                     * these nodes (greedy never joins nodes of two
                     * components). */
                    reason = cwhy;
                    if (greedy_component(g, &gcl, node, k, sol) < 0) {
                        why = "out of memory";
                        break;
                    }
                    if (trace)
                        fprintf(trace, "fusion: %s: greedy clusters for the component of node %d\n",
                                cwhy, c);
                }
            }
            for (int t = 0; t < k; t++)
                loc[node[t]] = -1;
        }
        if (why)
            break;
        for (int i = 0; i < n; i++)
            gparent[i] = sol[i];
        int nc = order_clusters(g, gparent, cluster);
        if (nc >= 0) {
            if (fuse_check_rel(g, &r, cluster, n) != 0) {
                why = "ILP schedule failed fuse_check";
            } else {
                res->nclusters = nc;
                res->materialised = fuse_count_materialised(g, cluster);
                res->objective = cost_of(&w, cluster);
            }
            break;
        }
        /* A cycle between the clusters of several components */
        why = merge_cyclic(&w, gparent, cluster, core, dirty, sol);
    }
    int proven = 1;
    for (int c = 0; c < n && !why; c++)
        if (w.comp[c] == c && unproven[c])
            proven = 0;
    if (!why && !proven && !keep_unproven) {
        /* The rule: past the work limit, the greedy schedule. */
        why = reason;
    } else if (!why && !proven) {
        /* Not proven optimal: keep it only if it beats greedy. */
        if (greedy_component(g, &gcl, NULL, 0, NULL) < 0) {
            why = "out of memory";
        } else {
            double gc = cost_of(&w, gcl);
            if (trace)
                fprintf(trace, "fusion: not proven optimal: ILP schedule objective %.0f, greedy %.0f\n",
                        res->objective, gc);
            if (!(res->objective < gc - 0.5))
                why = reason;
        }
    }
    free(gcl);
    free(sol);
    free(gparent);
    free(node);
    free(loc);
    free(dirty);
    free(unproven);
    free(core);
    free_whole(&w);
    fuse_rel_free(&r);
    res->work = w.work.used;
    return why;
}

void fuse_schedule(const FuseGraph *g, const FuseOptions *opt, int *cluster, FuseResult *res)
{
    FuseResult dummy;
    if (!res)
        res = &dummy;
    memset(res, 0, sizeof *res);
    long max_work = opt && opt->ilp_max_work > 0 ? opt->ilp_max_work : FUSE_ILP_MAX_WORK;
    int max_nodes = opt && opt->max_nodes > 0 ? opt->max_nodes : 60;
    FILE *trace = opt ? opt->trace : NULL;
    int n = g->nnodes;
    if (n <= 1) {
        if (n == 1)
            cluster[0] = 0;
        res->nclusters = n > 0 ? n : 0;
        res->materialised = n == 1 ? fuse_count_materialised(g, cluster) : 0;
        return;
    }
    const char *why;
    if (n > max_nodes || n > FUSE_WINDOW)
        why = "too many nodes for the ILP";
    else
        why = solve_ilp(g, max_work, trace, cluster, res);
    if (why) {
        FuseResult ilp = *res;
        fuse_greedy(g, cluster, res);
        /* (fuse_greedy checks each window of a larger graph itself.) */
        if (n <= FUSE_WINDOW && fuse_check(g, cluster) != 0) {
            /* Not expected: nothing fused is always valid. */
            for (int i = 0; i < n; i++)
                cluster[i] = i;
            res->nclusters = n;
            res->materialised = fuse_count_materialised(g, cluster);
        }
        res->nvars = ilp.nvars;
        res->nconstraints = ilp.nconstraints;
        res->seconds = ilp.seconds;
        res->work = ilp.work;
        res->objective = ilp.objective;
        res->fell_back = 1;
        res->why = why;
    }
    if (trace) {
        fprintf(trace, "fusion: %d nodes -> %d clusters, %d arrays materialised%s%s, lp_solve work %ld:",
                n, res->nclusters, res->materialised, res->fell_back ? ", greedy: " : " (ILP)",
                res->fell_back ? res->why : "", res->work);
        for (int i = 0; i < n; i++)
            fprintf(trace, " %d", cluster[i]);
        fputc('\n', trace);
    }
}

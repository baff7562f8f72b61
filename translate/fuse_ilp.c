/* translate/fuse_ilp.c — the fusion schedule as an integer linear program
 * solved by lp_solve (Nessie thesis §7.2–7.4), with the greedy schedule as
 * the fallback.
 *
 * Variables (N nodes, M = N):
 *   o_i in [0, N-1]    execution slot of node i (continuous: with the f
 *                      fixed, the o rows are difference constraints)
 *   f_ij in {0,1}      1: i and j are not fused; one per pair with a
 *                      direct edge and per independent pair that may share
 *                      a cluster (pairs joined by a longer path need none)
 *   c_a in {0,1}       array a is materialised
 * Rows:
 *   edge p -> q        o_q - o_p >= f_pq, o_q - o_p <= M f_pq (VFUSE-CLUSTER:
 *                      order kept, fused iff same slot); f_pq = 1 when an
 *                      edge p -> q cannot fuse vertically (VFUSE-COMPAT)
 *   independent a, b   |o_a - o_b| <= M f_ab (fused => same slot); when they
 *   that may fuse      may share a cluster only through via_filter fusions
 *                      (HFUSE-PREDS): 1 - f_ab <= sum over the ways
 *                      (1 - f_way)
 *   arrays             c_a >= f_pq for each edge p -> q carrying a; c_a = 1
 *                      when live out
 *   triangles          for pairs ij, ik, jk that all have f (or can never
 *                      fuse, f = 1): f_ij <= f_ik + f_jk and rotations;
 *                      they hold for every clustering and tighten the LP
 *                      (at most MAX_TRIANGLE_ROWS of them)
 *   chain cuts (lazy)  see solve_ilp
 * Objective: minimise W2 sum c_a + W1 sum sr(i,j) f_ij + sum f_ij, where
 * sr(i,j) counts the produced arrays both read or that flow between them,
 * W1 = w, W2 = w^2, w = 1 + max(#f, sum sr, #arrays): fewer allocations
 * beat fewer traversals beat fewer launches.
 *
 * A solution is read as the connected components of its fused (f = 0)
 * pairs, numbered in a topological order of the component graph. */
#include "translate/fuse.h"
#include "translate/fuse_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lpsolve/lp_lib.h>

#define MAX_TRIANGLE_ROWS 20000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int __WINAPI abort_cb(lprec *lp, void *handle)
{
    (void)lp;
    return now_s() > *(const double *)handle ? TRUE : FALSE;
}

static int __WINAPI write_cb(void *handle, char *buf)
{
    fputs(buf, (FILE *)handle);
    return TRUE;
}

enum { P_NONE, P_EDGE, P_PATH, P_COMPAT, P_APART };

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

typedef struct {
    const FuseGraph *g;
    const FuseRel *r;
    int n;
    lprec *lp;
    Rows rows;
    unsigned char *ptype;   /* per pair i < j: P_* */
    int *fcol;              /* per pair: column of f_ij, or 0 */
    int *ccol;              /* per array: column of c_a */
    int *sr;                /* per pair: shared reads */
    double w1, w2;
    int *cols;              /* row buffers */
    double *vals;
    double *vars;           /* solution, 1-based */
    int *parent, *prev, *queue, *indeg, *minix;
} Ilp;

static size_t pix(const Ilp *m, int i, int j)
{
    return i < j ? (size_t)i * (size_t)m->n + (size_t)j : (size_t)j * (size_t)m->n + (size_t)i;
}

/* i and j can never share a cluster: an independent pair that may not, or
 * an edge that cannot fuse vertically. */
static int never(const Ilp *m, int i, int j)
{
    size_t ij = pix(m, i, j);
    return m->ptype[ij] == P_APART ||
           (m->ptype[ij] == P_EDGE && fuse_bit(m->r->vbad, m->r->words, i < j ? i : j, i < j ? j : i));
}

/* Triangle rows: first those with a pair that never fuses (f_ik + f_jk >=
 * 1), then transitivity, up to MAX_TRIANGLE_ROWS in all. */
static int add_triangles(Ilp *m)
{
    int n = m->n, count = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                for (int k = j + 1; k < n; k++) {
                    int pr[3][2] = {{i, j}, {i, k}, {j, k}}, fc[3], nev = 0, ok = 1;
                    for (int t = 0; t < 3 && ok; t++) {
                        fc[t] = m->fcol[pix(m, pr[t][0], pr[t][1])];
                        if (never(m, pr[t][0], pr[t][1]))
                            fc[t] = -1, nev++;
                        else if (!fc[t])
                            ok = 0;
                    }
                    if (!ok || nev > 1 || (pass == 0) != (nev == 1))
                        continue;
                    if (count + (nev ? 1 : 3) > MAX_TRIANGLE_ROWS)
                        return count;
                    if (nev) {
                        int c = 0;
                        for (int t = 0; t < 3; t++)
                            if (fc[t] > 0)
                                m->cols[c] = fc[t], m->vals[c++] = 1;
                        add_row(&m->rows, 2, m->cols, m->vals, GE, 1, "tri_%d_%d_%d", i, j, k);
                        count++;
                        continue;
                    }
                    for (int t = 0; t < 3; t++) {
                        for (int u = 0; u < 3; u++)
                            m->cols[u] = fc[u], m->vals[u] = u == t ? -1 : 1;
                        add_row(&m->rows, 3, m->cols, m->vals, GE, 0, "tri%d_%d_%d_%d", t, i, j,
                                k);
                        count++;
                    }
                }
    return count;
}

/* Components of the fused pairs of the current solution, in parent[]. */
static void components(Ilp *m)
{
    int n = m->n;
    for (int i = 0; i < n; i++)
        m->parent[i] = i;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            int f = m->fcol[pix(m, i, j)];
            if (f && m->vars[f] < 0.5) {
                int a = uf_find(m->parent, i), b = uf_find(m->parent, j);
                if (a != b)
                    m->parent[a > b ? a : b] = a < b ? a : b;
            }
        }
}

/* Cut the chain of fused pairs that joins independent i and j in the
 * current solution: the f over the chain sum to >= 1 when i and j may never
 * share a cluster, to >= f_ij when they may only with f_ij = 0. */
static void add_cut(Ilp *m, int i, int j)
{
    int n = m->n, head = 0, tail = 0, *prev = m->prev, *queue = m->queue;
    for (int u = 0; u < n; u++)
        prev[u] = -1;
    prev[i] = i;
    queue[tail++] = i;
    while (head < tail && prev[j] < 0) {
        int u = queue[head++];
        for (int v = 0; v < n; v++) {
            int f = v == u ? 0 : m->fcol[pix(m, u, v)];
            if (f && prev[v] < 0 && m->vars[f] < 0.5) {
                prev[v] = u;
                queue[tail++] = v;
            }
        }
    }
    if (prev[j] < 0)
        return; /* not joined: cannot happen for a pair of one component */
    int cnt = 0;
    for (int v = j; v != i; v = prev[v]) {
        m->cols[cnt] = m->fcol[pix(m, prev[v], v)];
        m->vals[cnt++] = 1;
    }
    int fij = m->fcol[pix(m, i, j)];
    if (fij) {
        m->cols[cnt] = fij;
        m->vals[cnt++] = -1;
    }
    add_row(&m->rows, cnt, m->cols, m->vals, GE, fij ? 0 : 1, "cut_%d_%d_%d", i, j,
            m->rows.nrows);
}

/* Cut every pair that shares a component but may not; returns how many. */
static int add_cuts(Ilp *m)
{
    int n = m->n, added = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t ij = pix(m, i, j);
            if (uf_find(m->parent, i) != uf_find(m->parent, j))
                continue;
            if (m->ptype[ij] == P_APART ||
                (m->ptype[ij] == P_COMPAT && m->vars[m->fcol[ij]] > 0.5)) {
                add_cut(m, i, j);
                added++;
            }
        }
    return added;
}

/* Number the components in a topological order of the graph between them
 * (ties: the component with the first node first). Returns the number of
 * clusters, or -1 on a cycle. */
static int order_components(Ilp *m, int *cluster)
{
    const FuseGraph *g = m->g;
    int n = m->n, k = 0;
    for (int i = 0; i < n; i++) {
        m->indeg[i] = 0;
        m->minix[i] = n;
        cluster[i] = -1;
    }
    for (int i = 0; i < n; i++) {
        int c = uf_find(m->parent, i);
        if (i < m->minix[c])
            m->minix[c] = i;
    }
    for (int e = 0; e < g->nedges; e++) {
        int a = uf_find(m->parent, g->edges[e].producer);
        int b = uf_find(m->parent, g->edges[e].consumer);
        if (a != b)
            m->indeg[b]++;
    }
    for (;;) {
        int best = -1;
        for (int c = 0; c < n; c++)
            if (m->parent[c] == c && cluster[c] < 0 && m->indeg[c] == 0 &&
                (best < 0 || m->minix[c] < m->minix[best]))
                best = c;
        if (best < 0)
            break;
        cluster[best] = k++;
        for (int e = 0; e < g->nedges; e++) {
            int a = uf_find(m->parent, g->edges[e].producer);
            int b = uf_find(m->parent, g->edges[e].consumer);
            if (a == best && b != best)
                m->indeg[b]--;
        }
    }
    for (int i = 0; i < n; i++) {
        int c = uf_find(m->parent, i);
        if (cluster[c] < 0)
            return -1;
    }
    for (int i = 0; i < n; i++)
        if (m->parent[i] != i)
            cluster[i] = cluster[uf_find(m->parent, i)];
    return k;
}

/* The objective of a schedule. */
static double cost_of(const Ilp *m, const int *cluster)
{
    double c = m->w2 * fuse_count_materialised(m->g, cluster);
    for (int i = 0; i < m->n; i++)
        for (int j = i + 1; j < m->n; j++) {
            size_t ij = pix(m, i, j);
            if (m->fcol[ij] && cluster[i] != cluster[j])
                c += m->w1 * m->sr[ij] + 1;
        }
    return c;
}

/* Read the current solution as a schedule: 0, or -1 when its components
 * are not yet a valid schedule. */
static int read_schedule(Ilp *m, int *cluster, FuseResult *res)
{
    if (!get_variables(m->lp, m->vars + 1))
        return -1;
    components(m);
    int n = m->n;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t ij = pix(m, i, j);
            if (uf_find(m->parent, i) == uf_find(m->parent, j) &&
                (m->ptype[ij] == P_APART ||
                 (m->ptype[ij] == P_COMPAT && m->vars[m->fcol[ij]] > 0.5)))
                return -1;
        }
    int k = order_components(m, cluster);
    if (k < 0 || fuse_check_rel(m->g, m->r, cluster, n) != 0)
        return -1;
    res->nclusters = k;
    res->materialised = fuse_count_materialised(m->g, cluster);
    return 0;
}

static void free_ilp(Ilp *m)
{
    if (m->lp)
        delete_lp(m->lp);
    free_rows(&m->rows);
    free(m->ptype);
    free(m->fcol);
    free(m->ccol);
    free(m->sr);
    free(m->cols);
    free(m->vals);
    free(m->vars);
    free(m->parent);
    free(m->prev);
    free(m->queue);
    free(m->indeg);
    free(m->minix);
}

/* Build the ILP (all but the lazy cuts). NULL, or what went wrong. */
static const char *build(Ilp *m, FILE *trace)
{
    const FuseGraph *g = m->g;
    const FuseRel *r = m->r;
    int n = m->n, na = g->narrays;
    size_t nn = (size_t)n * (size_t)n;
    int aw = na > 0 ? (na + 63) / 64 : 1;
    const char *why = NULL;
    m->ptype = calloc(nn, 1);
    m->fcol = calloc(nn, sizeof *m->fcol);
    m->ccol = calloc((size_t)(na > 0 ? na : 1), sizeof *m->ccol);
    m->sr = calloc(nn, sizeof *m->sr);
    m->parent = malloc((size_t)n * sizeof(int));
    m->prev = malloc((size_t)n * sizeof(int));
    m->queue = malloc((size_t)n * sizeof(int));
    m->indeg = malloc((size_t)n * sizeof(int));
    m->minix = malloc((size_t)n * sizeof(int));
    uint64_t *cons = calloc((size_t)n * (size_t)aw, sizeof *cons);
    uint64_t *out = calloc((size_t)n * (size_t)aw, sizeof *out);
    FusePairOpt *opts = malloc(((size_t)n + 4) * sizeof *opts);
    if (!m->ptype || !m->fcol || !m->ccol || !m->sr || !m->parent || !m->prev || !m->queue ||
        !m->indeg || !m->minix || !cons || !out || !opts) {
        why = "out of memory";
        goto done;
    }

    /* Columns: o, then f, then c. */
    int ncol = n, nf = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t ij = pix(m, i, j);
            if (fuse_bit(r->edge, r->words, i, j)) {
                m->ptype[ij] = P_EDGE;
                m->fcol[ij] = ++ncol;
                nf++;
            } else if (fuse_bit(r->reach, r->words, i, j)) {
                m->ptype[ij] = P_PATH;
            } else if (fuse_pair_options(g, r, i, j, opts, n + 4) > 0) {
                m->ptype[ij] = P_COMPAT;
                m->fcol[ij] = ++ncol;
                nf++;
            } else {
                m->ptype[ij] = P_APART;
            }
        }
    for (int a = 0; a < na; a++)
        m->ccol[a] = ++ncol;

    /* Shared reads, and the weights. */
    for (int e = 0; e < g->nedges; e++) {
        const FuseEdge *ed = &g->edges[e];
        uint64_t bit = (uint64_t)1 << (ed->array & 63);
        cons[(size_t)ed->consumer * (size_t)aw + (size_t)(ed->array >> 6)] |= bit;
        out[(size_t)ed->producer * (size_t)aw + (size_t)(ed->array >> 6)] |= bit;
    }
    long srsum = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t ij = pix(m, i, j);
            if (!m->fcol[ij])
                continue;
            const uint64_t *ci = cons + (size_t)i * (size_t)aw, *cj = cons + (size_t)j * (size_t)aw;
            const uint64_t *oi = out + (size_t)i * (size_t)aw, *oj = out + (size_t)j * (size_t)aw;
            int s = 0;
            for (int w = 0; w < aw; w++)
                s += popcount64(ci[w] & cj[w]) + popcount64(oi[w] & cj[w]) +
                     popcount64(oj[w] & ci[w]);
            m->sr[ij] = s;
            srsum += s;
        }
    long big = nf;
    if (srsum > big)
        big = srsum;
    if (na > big)
        big = na;
    m->w1 = (double)big + 1.0;
    m->w2 = m->w1 * m->w1;

    /* Buffers: a row has at most n + 2 terms; the objective nf + na. */
    size_t buf = (size_t)ncol + (size_t)n + 8;
    m->cols = malloc(buf * sizeof *m->cols);
    m->vals = malloc(buf * sizeof *m->vals);
    m->vars = malloc(((size_t)ncol + 1) * sizeof *m->vars);
    if (!m->cols || !m->vals || !m->vars) {
        why = "out of memory";
        goto done;
    }
    int *cols = m->cols;
    double *vals = m->vals;
    lprec *lp = m->lp = make_lp(0, ncol);
    if (!lp) {
        why = "lp_solve: make_lp failed";
        goto done;
    }
    set_verbose(lp, NEUTRAL);
    int k = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t ij = pix(m, i, j);
            if (m->fcol[ij]) {
                cols[k] = m->fcol[ij];
                vals[k++] = m->w1 * m->sr[ij] + 1.0;
            }
        }
    for (int a = 0; a < na; a++) {
        cols[k] = m->ccol[a];
        vals[k++] = m->w2;
    }
    set_minim(lp);
    if (k > 0 && !set_obj_fnex(lp, k, vals, cols)) {
        why = "lp_solve: set_obj_fnex failed";
        goto done;
    }

    const double M = (double)n;
    m->rows.lp = lp;
    m->rows.ok = 1;
    m->rows.trace = trace;
    set_add_rowmode(lp, TRUE);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t ij = pix(m, i, j);
            int oi = 1 + i, oj = 1 + j, f = m->fcol[ij];
            if (m->ptype[ij] == P_EDGE) {
                /* o_j - o_i - f >= 0;  o_j - o_i - M f <= 0 */
                cols[0] = oj, vals[0] = 1, cols[1] = oi, vals[1] = -1, cols[2] = f, vals[2] = -1;
                add_row(&m->rows, 3, cols, vals, GE, 0, "order_%d_%d", i, j);
                cols[0] = oj, vals[0] = 1, cols[1] = oi, vals[1] = -1, cols[2] = f, vals[2] = -M;
                add_row(&m->rows, 3, cols, vals, LE, 0, "fused_%d_%d", i, j);
            } else if (m->ptype[ij] == P_COMPAT) {
                /* f = 0 => o_i = o_j:  |o_i - o_j| <= M f */
                cols[0] = oi, vals[0] = 1, cols[1] = oj, vals[1] = -1, cols[2] = f, vals[2] = -M;
                add_row(&m->rows, 3, cols, vals, LE, 0, "same_%d_%d", i, j);
                cols[0] = oi, vals[0] = -1, cols[1] = oj, vals[1] = 1, cols[2] = f, vals[2] = -M;
                add_row(&m->rows, 3, cols, vals, LE, 0, "same2_%d_%d", i, j);
                /* HFUSE-PREDS */
                int no = fuse_pair_options(g, r, i, j, opts, n + 4), uncond = 0, singles = 0;
                for (int t = 0; t < no; t++) {
                    uncond |= opts[t].nreq == 0;
                    singles += opts[t].nreq == 1;
                }
                if (uncond)
                    continue;
                if (singles > 0) {
                    /* 1 - f_ij <= sum over the ways (1 - f_way) */
                    int cnt = 0;
                    cols[cnt] = f, vals[cnt++] = 1;
                    for (int t = 0; t < no; t++)
                        if (opts[t].nreq == 1) {
                            cols[cnt] = m->fcol[pix(m, opts[t].req[0][0], opts[t].req[0][1])];
                            vals[cnt++] = -1;
                        }
                    add_row(&m->rows, cnt, cols, vals, GE, 1 - singles, "preds_%d_%d", i, j);
                } else {
                    /* The one way, needing two fusions: both. */
                    for (int t = 0; t < 2; t++) {
                        cols[0] = f, vals[0] = 1;
                        cols[1] = m->fcol[pix(m, opts[0].req[t][0], opts[0].req[t][1])];
                        vals[1] = -1;
                        add_row(&m->rows, 2, cols, vals, GE, 0, "preds%d_%d_%d", t, i, j);
                    }
                }
            }
        }
    /* c_a >= f_pq for each edge p -> q carrying a (once per pair). */
    for (int e = 0; e < g->nedges; e++) {
        const FuseEdge *ed = &g->edges[e];
        int dup = 0;
        for (int e2 = 0; e2 < e && !dup; e2++)
            dup = g->edges[e2].array == ed->array && g->edges[e2].producer == ed->producer &&
                  g->edges[e2].consumer == ed->consumer;
        if (dup)
            continue;
        cols[0] = m->ccol[ed->array], vals[0] = 1;
        cols[1] = m->fcol[pix(m, ed->producer, ed->consumer)], vals[1] = -1;
        add_row(&m->rows, 2, cols, vals, GE, 0, "alloc_%d_%d_%d", ed->array, ed->producer,
                ed->consumer);
    }
    int ntri = add_triangles(m);
    set_add_rowmode(lp, FALSE);
    if (!m->rows.ok) {
        why = "lp_solve: add_constraintex failed";
        goto done;
    }

    /* Bounds, kinds, names. */
    char name[48];
    for (int i = 0; i < n; i++) {
        set_bounds(lp, 1 + i, 0, (double)(n - 1));
        if (trace) {
            snprintf(name, sizeof name, "o%d", i);
            set_col_name(lp, 1 + i, name);
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t ij = pix(m, i, j);
            if (!m->fcol[ij])
                continue;
            set_binary(lp, m->fcol[ij], TRUE);
            if (m->ptype[ij] == P_EDGE && fuse_bit(r->vbad, r->words, i, j))
                set_lowbo(lp, m->fcol[ij], 1); /* VFUSE-COMPAT */
            if (trace) {
                snprintf(name, sizeof name, "f%d_%d", i, j);
                set_col_name(lp, m->fcol[ij], name);
            }
        }
    for (int a = 0; a < na; a++) {
        set_binary(lp, m->ccol[a], TRUE);
        if (g->live_out && g->live_out[a])
            set_lowbo(lp, m->ccol[a], 1);
        if (trace) {
            snprintf(name, sizeof name, "c%d", a);
            set_col_name(lp, m->ccol[a], name);
        }
    }
    if (trace)
        fprintf(trace,
                "fusion: ILP of %d nodes, %d arrays: %d f, %d triangle rows; weights %.0f per "
                "allocation, %.0f per shared read, 1 per launch\n",
                n, na, nf, ntri, m->w2, m->w1);
done:
    free(cons);
    free(out);
    free(opts);
    return why;
}

/* Build and solve the ILP; fills cluster[] and *res. Returns NULL on
 * success, else why it could not be used.
 *
 * Rows that keep independent nodes apart are added lazily, as cuts: where
 * a component of the solution holds an independent pair that may not share
 * a cluster (or one with f = 1), the chain of fused pairs joining them is
 * cut (sum of its f >= 1, or >= f_ij) and the ILP solved again. A solution
 * without such a pair is a valid schedule whose objective is its true cost,
 * and every valid schedule satisfies every cut, so it is optimal.
 *
 * On timeout, the best solution lp_solve found is kept when it is a valid
 * schedule cheaper than the greedy one (res->why stays NULL; the trace
 * says it is not proven optimal). */
static const char *solve_ilp(const FuseGraph *g, double timeout, FILE *trace, int *cluster,
                             FuseResult *res)
{
    double deadline = now_s() + timeout;
    FuseRel r;
    if (fuse_rel_init(&r, g) != 0)
        return "malformed graph or out of memory";
    Ilp m;
    memset(&m, 0, sizeof m);
    m.g = g;
    m.r = &r;
    m.n = g->nnodes;
    const char *why = build(&m, trace);
    if (why)
        goto done;
    lprec *lp = m.lp;
    /* Default MIP gaps (lp_solve's absolute gap does not behave as a plain
     * threshold on this model); the relative one tightened for the large
     * objective values. */
    set_mip_gap(lp, FALSE, 1e-11);
    put_abortfunc(lp, abort_cb, &deadline);
    int rounds = 0, status = NOTRUN;
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0) {
            why = "lp_solve timed out";
            break;
        }
        set_timeout(lp, (long)ceil(left));
        double t0 = now_s();
        status = solve(lp);
        res->seconds += now_s() - t0;
        res->objective = get_objective(lp);
        rounds++;
        if (trace)
            fprintf(trace, "fusion: round %d: %d variables, %d constraints: lp_solve: %s (%d), "
                           "objective %.0f\n",
                    rounds, get_Ncolumns(lp), get_Nrows(lp), get_statustext(lp, status), status,
                    res->objective);
        if (status == SUBOPTIMAL || status == USERABORT || status == TIMEOUT) {
            why = "lp_solve timed out";
            break;
        }
        if (status == INFEASIBLE) {
            why = "ILP infeasible";
            break;
        }
        if (status != OPTIMAL && status != PRESOLVED) {
            why = "lp_solve failed";
            break;
        }
        if (!get_variables(lp, m.vars + 1)) {
            why = "lp_solve: get_variables failed";
            break;
        }
        components(&m);
        int added = add_cuts(&m);
        if (!m.rows.ok) {
            why = "lp_solve: adding constraints failed";
            break;
        }
        if (!added)
            break;
        if (trace)
            fprintf(trace, "fusion: %d chain cuts\n", added);
    }
    res->nvars = get_Ncolumns(lp);
    res->nconstraints = get_Nrows(lp);
    if (trace) {
        for (int i = 0; i < m.rows.nrows; i++)
            if (m.rows.names[i])
                set_row_name(lp, 1 + i, m.rows.names[i]);
        write_lpex(lp, trace, write_cb);
        fprintf(trace, "fusion: lp_solve: %d round%s, %.6f s\n", rounds, rounds == 1 ? "" : "s",
                res->seconds);
    }
    if (!why) {
        if (read_schedule(&m, cluster, res) != 0)
            why = "ILP schedule failed fuse_check";
    } else if (status == SUBOPTIMAL && read_schedule(&m, cluster, res) == 0) {
        /* Timed out with a valid schedule: keep it if it beats greedy. */
        int *gcl = malloc((size_t)m.n * sizeof *gcl);
        FuseResult gres;
        if (gcl) {
            fuse_greedy(g, gcl, &gres);
            double ic = cost_of(&m, cluster), gc = cost_of(&m, gcl);
            if (ic < gc - 0.5) {
                res->objective = ic;
                why = NULL;
                if (trace)
                    fprintf(trace, "fusion: timed out: keeping the best ILP schedule (objective "
                                   "%.0f, greedy %.0f), not proven optimal\n",
                            ic, gc);
            }
            free(gcl);
        }
    }
done:
    free_ilp(&m);
    fuse_rel_free(&r);
    return why;
}

void fuse_schedule(const FuseGraph *g, const FuseOptions *opt, int *cluster, FuseResult *res)
{
    FuseResult dummy;
    if (!res)
        res = &dummy;
    memset(res, 0, sizeof *res);
    double timeout = opt && opt->timeout_s > 0 ? opt->timeout_s : 0.1;
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
    if (n > max_nodes)
        why = "too many nodes for the ILP";
    else
        why = solve_ilp(g, timeout, trace, cluster, res);
    if (why) {
        FuseResult ilp = *res;
        fuse_greedy(g, cluster, res);
        if (fuse_check(g, cluster) != 0) {
            /* Not expected: nothing fused is always valid. */
            for (int i = 0; i < n; i++)
                cluster[i] = i;
            res->nclusters = n;
            res->materialised = fuse_count_materialised(g, cluster);
        }
        res->nvars = ilp.nvars;
        res->nconstraints = ilp.nconstraints;
        res->seconds = ilp.seconds;
        res->objective = ilp.objective;
        res->fell_back = 1;
        res->why = why;
    }
    if (trace) {
        fprintf(trace, "fusion: %d nodes -> %d clusters, %d arrays materialised%s%s:", n,
                res->nclusters, res->materialised, res->fell_back ? ", greedy: " : " (ILP)",
                res->fell_back ? res->why : "");
        for (int i = 0; i < n; i++)
            fprintf(trace, " %d", cluster[i]);
        fputc('\n', trace);
    }
}

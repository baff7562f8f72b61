/* translate/fuse_ilp.c — the fusion schedule as an integer linear program
 * solved by lp_solve (Nessie thesis §7.2–7.4), with the greedy schedule as
 * the fallback.
 *
 * Variables (N nodes, M = N):
 *   o_i in [0, N-1], integer   execution slot of node i; equal o = fused
 *   f_ij in {0,1}              1: i and j are not fused; one per pair with
 *                              a direct edge and per independent pair that
 *                              may share a cluster
 *   d_ij in {0,1}              which of o_i < o_j, o_i > o_j holds when
 *                              independent i and j are apart
 *   c_a in {0,1}               array a is materialised
 * Constraints:
 *   edge p -> q     o_q - o_p >= f_pq, o_q - o_p <= M f_pq   (VFUSE-CLUSTER:
 *                   order kept; fused iff same slot); f_pq = 1 when some
 *                   edge p -> q is not vertically fusable (VFUSE-COMPAT).
 *                   Paths keep order through their edges, and a path
 *                   p -> ... -> q with o_p = o_q forces its inner nodes
 *                   into the same slot, so such pairs need no variable.
 *   independent a, b that may fuse: |o_a - o_b| <= M f_ab and, through
 *                   d_ab, f_ab = 1 => o_a != o_b; when they may share a
 *                   cluster only through via_filter fusions (HFUSE-PREDS):
 *                   1 - f_ab <= sum over the ways (1 - f_way), a way that
 *                   needs two fusions requiring both.
 *   independent a, b that may not: o_a != o_b through d_ab (HFUSE-COMPAT).
 *   arrays          c_a >= f_pq for each edge p -> q carrying a; c_a = 1
 *                   when live out.
 * Objective: minimise W2 sum c_a + W1 sum sr(i,j) f_ij + sum f_ij, where
 * sr(i,j) counts the produced arrays both read or that flow between them,
 * W1 = n, W2 = n^2, n = 1 + max(#f, sum sr, #arrays): fewer allocations
 * beat fewer traversals beat fewer launches. */
#include "translate/fuse.h"
#include "translate/fuse_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lpsolve/lp_lib.h>

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
    FILE *trace;        /* names are kept only when tracing */
    char **names;
    int cap;
} Rows;

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
    b->names[b->nrows - 1] = malloc(strlen(buf) + 1);
    if (!b->names[b->nrows - 1]) {
        b->ok = 0;
        return;
    }
    strcpy(b->names[b->nrows - 1], buf);
}

static void free_rows(Rows *b)
{
    if (b->names)
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
    int n;
    lprec *lp;
    Rows rows;
    unsigned char *ptype;
    int *fcol, *dcol, *ccol;
    int *cols;
    double *vals, *vars;
    int maxcols;        /* capacity of vars (columns + 1) */
    FILE *trace;
} Ilp;

/* Keep independent i and j apart unless f_ij = 0 (COMPAT) or always
 * (APART), through a new binary d_ij. 0 on failure. */
static int add_apart(Ilp *m, int i, int j)
{
    size_t ij = (size_t)i * (size_t)m->n + (size_t)j;
    if (!add_columnex(m->lp, 0, NULL, NULL))
        return 0;
    int d = get_Ncolumns(m->lp);
    m->dcol[ij] = d;
    set_binary(m->lp, d, TRUE);
    if (m->trace) {
        char name[48];
        snprintf(name, sizeof name, "d%d_%d", i, j);
        set_col_name(m->lp, d, name);
    }
    double M = (double)m->n;
    int oi = 1 + i, oj = 1 + j, f = m->fcol[ij], cnt = f ? 4 : 3;
    int *cols = m->cols;
    double *vals = m->vals;
    /* o_i - o_j + M d >= f:  d = 0 => o_i > o_j when f = 1 */
    cols[0] = oi, vals[0] = 1, cols[1] = oj, vals[1] = -1, cols[2] = d, vals[2] = M;
    cols[3] = f, vals[3] = -1;
    add_row(&m->rows, cnt, cols, vals, GE, f ? 0 : 1, "apart_%d_%d", i, j);
    /* o_j - o_i - M d >= f - M:  d = 1 => o_j > o_i when f = 1 */
    vals[0] = -1, vals[1] = 1, vals[2] = -M;
    add_row(&m->rows, cnt, cols, vals, GE, f ? -M : 1 - M, "apart2_%d_%d", i, j);
    return m->rows.ok;
}

/* Build and solve the ILP; fills cluster[] and *res. Returns NULL on
 * success, else why it could not be used.
 *
 * The constraints that keep independent nodes apart (the d_ij) are added
 * lazily: a solution is read as the connected components of its f = 0
 * pairs; where a component holds an independent pair that may not share a
 * cluster (or one whose f_ij = 1), that pair's d_ij rows are added and the
 * ILP solved again. A solution with no such pair is optimal for the full
 * ILP: ordering its components by o gives every component its own slot
 * without changing f or c (components on one slot have no path between
 * them, since a path on one slot has f = 0 on every edge). */
static const char *solve_ilp(const FuseGraph *g, double timeout, FILE *trace, int *cluster,
                             FuseResult *res)
{
    const char *why = NULL;
    int n = g->nnodes, na = g->narrays;
    double t_start = now_s(), deadline = t_start + timeout;
    FuseRel r;
    if (fuse_rel_init(&r, g) != 0)
        return "malformed graph or out of memory";

    size_t nn = (size_t)n * (size_t)n;
    int aw = na > 0 ? (na + 63) / 64 : 1;
    Ilp m = {0};
    m.g = g;
    m.n = n;
    m.trace = trace;
    m.ptype = calloc(nn, 1);
    m.fcol = calloc(nn, sizeof *m.fcol);
    m.dcol = calloc(nn, sizeof *m.dcol);
    m.ccol = calloc((size_t)(na > 0 ? na : 1), sizeof *m.ccol);
    uint64_t *cons = calloc((size_t)n * (size_t)aw, sizeof *cons);
    uint64_t *out = calloc((size_t)n * (size_t)aw, sizeof *out);
    FusePairOpt *opts = malloc(((size_t)n + 4) * sizeof *opts);
    int *sr = calloc(nn, sizeof *sr);
    int *parent = malloc((size_t)n * sizeof *parent);
    int *minix = malloc((size_t)n * sizeof *minix);
    if (!m.ptype || !m.fcol || !m.dcol || !m.ccol || !cons || !out || !opts || !sr || !parent ||
        !minix) {
        why = "out of memory";
        goto done;
    }

    /* Columns: o, then f, then c; d are added later. */
    int ncol = n, nf = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t ij = (size_t)i * (size_t)n + (size_t)j;
            if (fuse_bit(r.edge, r.words, i, j)) {
                m.ptype[ij] = P_EDGE;
                m.fcol[ij] = ++ncol;
                nf++;
            } else if (fuse_bit(r.reach, r.words, i, j)) {
                m.ptype[ij] = P_PATH;
            } else if (fuse_pair_options(g, &r, i, j, opts, n + 4) > 0) {
                m.ptype[ij] = P_COMPAT;
                m.fcol[ij] = ++ncol;
                nf++;
            } else {
                m.ptype[ij] = P_APART;
            }
        }
    for (int a = 0; a < na; a++)
        m.ccol[a] = ++ncol;

    /* Shared reads, and the weights. */
    for (int e = 0; e < g->nedges; e++) {
        const FuseEdge *ed = &g->edges[e];
        cons[(size_t)ed->consumer * (size_t)aw + (size_t)(ed->array >> 6)] |=
            (uint64_t)1 << (ed->array & 63);
        out[(size_t)ed->producer * (size_t)aw + (size_t)(ed->array >> 6)] |=
            (uint64_t)1 << (ed->array & 63);
    }
    long srsum = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t ij = (size_t)i * (size_t)n + (size_t)j;
            if (!m.fcol[ij])
                continue;
            const uint64_t *ci = cons + (size_t)i * (size_t)aw, *cj = cons + (size_t)j * (size_t)aw;
            const uint64_t *oi = out + (size_t)i * (size_t)aw, *oj = out + (size_t)j * (size_t)aw;
            int s = 0;
            for (int w = 0; w < aw; w++)
                s += popcount64(ci[w] & cj[w]) + popcount64(oi[w] & cj[w]) +
                     popcount64(oj[w] & ci[w]);
            sr[ij] = s;
            srsum += s;
        }
    long big = nf;
    if (srsum > big)
        big = srsum;
    if (na > big)
        big = na;
    double w1 = (double)big + 1.0, w2 = w1 * w1;

    /* Buffers: a row has at most n + 5 terms; the objective nf + na. */
    int buf = ncol + n + 8;
    m.maxcols = ncol + (int)(nn / 2) + 2;
    m.vals = malloc((size_t)buf * sizeof *m.vals);
    m.cols = malloc((size_t)buf * sizeof *m.cols);
    m.vars = malloc((size_t)m.maxcols * sizeof *m.vars);
    if (!m.vals || !m.cols || !m.vars) {
        why = "out of memory";
        goto done;
    }
    int *cols = m.cols;
    double *vals = m.vals;
    m.lp = make_lp(0, ncol);
    if (!m.lp) {
        why = "lp_solve: make_lp failed";
        goto done;
    }
    lprec *lp = m.lp;
    set_verbose(lp, NEUTRAL);
    int k = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t ij = (size_t)i * (size_t)n + (size_t)j;
            if (m.fcol[ij]) {
                cols[k] = m.fcol[ij];
                vals[k++] = w1 * sr[ij] + 1.0;
            }
        }
    for (int a = 0; a < na; a++) {
        cols[k] = m.ccol[a];
        vals[k++] = w2;
    }
    set_minim(lp);
    if (k > 0 && !set_obj_fnex(lp, k, vals, cols)) {
        why = "lp_solve: set_obj_fnex failed";
        goto done;
    }

    /* Rows. */
    const double M = (double)n;
    m.rows.lp = lp;
    m.rows.ok = 1;
    m.rows.trace = trace;
    set_add_rowmode(lp, TRUE);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t ij = (size_t)i * (size_t)n + (size_t)j;
            int oi = 1 + i, oj = 1 + j, f = m.fcol[ij];
            if (m.ptype[ij] == P_EDGE) {
                /* o_j - o_i - f >= 0;  o_j - o_i - M f <= 0 */
                cols[0] = oj, vals[0] = 1, cols[1] = oi, vals[1] = -1, cols[2] = f, vals[2] = -1;
                add_row(&m.rows, 3, cols, vals, GE, 0, "order_%d_%d", i, j);
                vals[2] = -M;
                add_row(&m.rows, 3, cols, vals, LE, 0, "fused_%d_%d", i, j);
            } else if (m.ptype[ij] == P_COMPAT) {
                /* f = 0 => o_i = o_j:  |o_i - o_j| <= M f */
                cols[0] = oi, vals[0] = 1, cols[1] = oj, vals[1] = -1, cols[2] = f, vals[2] = -M;
                add_row(&m.rows, 3, cols, vals, LE, 0, "same_%d_%d", i, j);
                vals[0] = -1, vals[1] = 1;
                add_row(&m.rows, 3, cols, vals, LE, 0, "same2_%d_%d", i, j);
                /* HFUSE-PREDS */
                int no = fuse_pair_options(g, &r, i, j, opts, n + 4), uncond = 0, singles = 0;
                for (int t = 0; t < no; t++) {
                    uncond |= opts[t].nreq == 0;
                    singles += opts[t].nreq == 1;
                }
                if (uncond)
                    continue;
                int cnt = 0;
                cols[cnt] = f, vals[cnt++] = 1;
                if (singles > 0) {
                    /* 1 - f_ij <= sum over the ways (1 - f_way) */
                    for (int t = 0; t < no; t++) {
                        if (opts[t].nreq != 1)
                            continue;
                        int v = opts[t].req[0][0], x = opts[t].req[0][1];
                        cols[cnt] = m.fcol[(size_t)v * (size_t)n + (size_t)x], vals[cnt++] = -1;
                    }
                    add_row(&m.rows, cnt, cols, vals, GE, 1 - singles, "preds_%d_%d", i, j);
                } else {
                    /* The one way, needing two fusions: both. */
                    for (int t = 0; t < 2; t++) {
                        int v = opts[0].req[t][0], x = opts[0].req[t][1];
                        cols[1] = m.fcol[(size_t)v * (size_t)n + (size_t)x], vals[1] = -1;
                        add_row(&m.rows, 2, cols, vals, GE, 0, "preds%d_%d_%d", t, i, j);
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
        cols[0] = m.ccol[ed->array], vals[0] = 1;
        cols[1] = m.fcol[(size_t)ed->producer * (size_t)n + (size_t)ed->consumer], vals[1] = -1;
        add_row(&m.rows, 2, cols, vals, GE, 0, "alloc_%d_%d_%d", ed->array, ed->producer,
                ed->consumer);
    }
    set_add_rowmode(lp, FALSE);
    if (!m.rows.ok) {
        why = "lp_solve: add_constraintex failed";
        goto done;
    }

    /* Bounds, kinds, names. */
    char name[48];
    for (int i = 0; i < n; i++) {
        set_int(lp, 1 + i, TRUE);
        set_bounds(lp, 1 + i, 0, (double)(n - 1));
        if (trace) {
            snprintf(name, sizeof name, "o%d", i);
            set_col_name(lp, 1 + i, name);
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t ij = (size_t)i * (size_t)n + (size_t)j;
            if (!m.fcol[ij])
                continue;
            set_binary(lp, m.fcol[ij], TRUE);
            if (m.ptype[ij] == P_EDGE && fuse_bit(r.vbad, r.words, i, j))
                set_lowbo(lp, m.fcol[ij], 1); /* VFUSE-COMPAT */
            if (trace) {
                snprintf(name, sizeof name, "f%d_%d", i, j);
                set_col_name(lp, m.fcol[ij], name);
            }
        }
    for (int a = 0; a < na; a++) {
        set_binary(lp, m.ccol[a], TRUE);
        if (g->live_out && g->live_out[a])
            set_lowbo(lp, m.ccol[a], 1);
        if (trace) {
            snprintf(name, sizeof name, "c%d", a);
            set_col_name(lp, m.ccol[a], name);
        }
    }
    if (trace)
        fprintf(trace, "fusion: ILP of %d nodes, %d arrays; weights %.0f per allocation, "
                       "%.0f per shared read, 1 per launch\n",
                n, na, w2, w1);

    /* Solve, adding apart constraints until the components are valid.
     * The objective is integral, so a gap under 1 is optimal. */
    set_mip_gap(lp, TRUE, 0.5);
    set_mip_gap(lp, FALSE, 1e-12);
#ifdef FUSE_EXPERIMENT
    if (getenv("FUSE_FLOOR"))
        set_bb_floorfirst(lp, atoi(getenv("FUSE_FLOOR")));
    if (getenv("FUSE_RULE"))
        set_bb_rule(lp, atoi(getenv("FUSE_RULE")));
    if (getenv("FUSE_DEPTH"))
        set_bb_depthlimit(lp, atoi(getenv("FUSE_DEPTH")));
    if (getenv("FUSE_PRESOLVE"))
        set_presolve(lp, atoi(getenv("FUSE_PRESOLVE")), get_presolveloops(lp));
#endif
    put_abortfunc(lp, abort_cb, &deadline);
    int rounds = 0;
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0) {
            why = "lp_solve timed out";
            break;
        }
        set_timeout(lp, (long)ceil(left));
        double t0 = now_s();
        int status = solve(lp);
        res->seconds += now_s() - t0;
        res->objective = get_objective(lp);
        rounds++;
        if (trace)
            fprintf(trace, "fusion: round %d: %d variables, %d constraints: lp_solve %s (%d), "
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
        if (get_Ncolumns(lp) + 1 > m.maxcols || !get_variables(lp, m.vars + 1)) {
            why = "lp_solve: get_variables failed";
            break;
        }
        /* Components of the fused (f = 0) pairs. */
        for (int i = 0; i < n; i++)
            parent[i] = i;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) {
                int f = m.fcol[(size_t)i * (size_t)n + (size_t)j];
                if (f && m.vars[f] < 0.5) {
                    int a = uf_find(parent, i), b = uf_find(parent, j);
                    if (a != b)
                        parent[a > b ? a : b] = a < b ? a : b;
                }
            }
        int added = 0;
        for (int i = 0; i < n && m.rows.ok; i++)
            for (int j = i + 1; j < n && m.rows.ok; j++) {
                size_t ij = (size_t)i * (size_t)n + (size_t)j;
                if (m.dcol[ij] || uf_find(parent, i) != uf_find(parent, j))
                    continue;
                int f = m.fcol[ij];
                if (m.ptype[ij] == P_APART || (m.ptype[ij] == P_COMPAT && m.vars[f] > 0.5))
                    added += add_apart(&m, i, j);
            }
        if (!m.rows.ok) {
            why = "lp_solve: adding constraints failed";
            break;
        }
        if (trace && added)
            fprintf(trace, "fusion: %d pairs to keep apart\n", added);
        if (!added)
            break;
    }
    res->nvars = get_Ncolumns(lp);
    res->nconstraints = get_Nrows(lp);
    if (trace) {
        for (int i = 0; i < m.rows.nrows; i++)
            set_row_name(lp, 1 + i, m.rows.names[i]);
        write_lpex(lp, trace, write_cb);
        fprintf(trace, "fusion: lp_solve: %d round%s, %.6f s\n", rounds, rounds == 1 ? "" : "s",
                res->seconds);
        fflush(trace);
    }
    if (why)
        goto done;

    /* Clusters: components, ordered by slot, then by first node. */
    for (int i = 0; i < n; i++)
        minix[i] = n;
    for (int i = 0; i < n; i++) {
        int root = uf_find(parent, i);
        if (i < minix[root])
            minix[root] = i;
    }
    for (int i = 0; i < n; i++)
        cluster[i] = (int)floor(m.vars[1 + i] + 0.5) * (n + 1) + minix[uf_find(parent, i)];
    res->nclusters = fuse_renumber(n, cluster);
    if (fuse_check_rel(g, &r, cluster, n) != 0) {
        why = "ILP schedule failed fuse_check";
        goto done;
    }
    res->materialised = fuse_count_materialised(g, cluster);

done:
    if (m.lp)
        delete_lp(m.lp);
    free_rows(&m.rows);
    free(m.ptype);
    free(m.fcol);
    free(m.dcol);
    free(m.ccol);
    free(m.vals);
    free(m.cols);
    free(m.vars);
    free(cons);
    free(out);
    free(opts);
    free(sr);
    free(parent);
    free(minix);
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

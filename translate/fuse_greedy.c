/* translate/fuse_greedy.c — the fusion rules (which SOAC pairs may fuse),
 * the check of a schedule, and the greedy schedule used when the ILP is not
 * (fuse.h; Nessie thesis §7.1 and §7.3). */
#include "translate/fuse.h"
#include "translate/fuse_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- the pairwise rules ------------------------------------------------ */

int fuse_vertical_ok(const FuseNode *a, const FuseNode *b, FuseAccess acc)
{
    if (a->kind == FK_LIB || b->kind == FK_LIB)
        return 0;
    switch (a->kind) {
    case FK_MAP:
        /* A MAP flows into any SOAC over the same index space that reads
         * it element by element (a ONCE is a MAP over a single index). */
        return acc == FA_ELEM && a->shape == b->shape &&
               (b->kind == FK_MAP || b->kind == FK_REDUCE || b->kind == FK_SCAN ||
                b->kind == FK_FILTER || b->kind == FK_PERMUTE || b->kind == FK_ONCE);
    case FK_ONCE:
        /* scalar code: into more scalar code over the same single index */
        return acc == FA_ELEM && a->shape == b->shape && (b->kind == FK_ONCE || b->kind == FK_MAP);
    case FK_FILTER:
        /* FILTER -> REDUCE/FILTER: the consumer iterates over the filter's
         * output (its via_filter); that it is this very producer is checked
         * by the graph-level code, which knows node indices. */
        return acc == FA_ELEM && b->via_filter >= 0 &&
               (b->kind == FK_REDUCE || b->kind == FK_FILTER);
    case FK_REDUCE:
        return b->kind == FK_ONCE;
    default:
        return 0;
    }
}

int fuse_horizontal_ok(const FuseNode *a, const FuseNode *b)
{
    if (a->kind == FK_LIB || b->kind == FK_LIB || a->shape != b->shape)
        return 0;
    /* Over the same index space a MAP can share a kernel with any other
     * SOAC: it is folded into a consumer there, or computed in the same
     * pass (the λcu paper: "such as MAP and REDUCE"). */
    if (a->kind != b->kind) {
        if ((a->kind == FK_MAP && b->kind == FK_ONCE) || (a->kind == FK_ONCE && b->kind == FK_MAP))
            return 1; /* both over the single index */
        return (a->kind == FK_MAP || b->kind == FK_MAP) && a->kind != FK_ONCE && b->kind != FK_ONCE;
    }
    switch (a->kind) {
    case FK_REDUCE:
    case FK_SCAN:
    case FK_FILTER:
    case FK_PERMUTE:
        return a->seg == b->seg;
    default:
        return 1;
    }
}

/* ---- relations -------------------------------------------------------- */

static void setbit(uint64_t *m, int words, int i, int j)
{
    m[(size_t)i * (size_t)words + (size_t)(j >> 6)] |= (uint64_t)1 << (j & 63);
}

void fuse_rel_free(FuseRel *r)
{
    free(r->reach);
    free(r->edge);
    free(r->vbad);
    free(r->scratch);
    memset(r, 0, sizeof *r);
}

/* Indices in range, edges forward. */
static int graph_ok(const FuseGraph *g)
{
    int n = g->nnodes;
    if (n < 0 || (n > 0 && !g->nodes) || g->nedges < 0 || (g->nedges > 0 && !g->edges))
        return 0;
    for (int i = 0; i < n; i++) {
        int v = g->nodes[i].via_filter;
        if (v < -1 || v >= n || v == i)
            return 0;
    }
    for (int e = 0; e < g->nedges; e++) {
        const FuseEdge *ed = &g->edges[e];
        if (ed->producer < 0 || ed->consumer >= n || ed->producer >= ed->consumer)
            return 0;
        if (ed->array < 0 || ed->array >= g->narrays)
            return 0;
    }
    return 1;
}

int fuse_rel_init(FuseRel *r, const FuseGraph *g)
{
    memset(r, 0, sizeof *r);
    int n = g->nnodes;
    if (!graph_ok(g))
        return -1;
    r->n = n;
    r->words = n > 0 ? (n + 63) / 64 : 1;
    size_t cells = (size_t)(n > 0 ? n : 1) * (size_t)r->words;
    r->reach = calloc(cells, sizeof(uint64_t));
    r->edge = calloc(cells, sizeof(uint64_t));
    r->vbad = calloc(cells, sizeof(uint64_t));
    r->scratch = malloc(((size_t)n + 4) * sizeof(FusePairOpt));
    if (!r->reach || !r->edge || !r->vbad || !r->scratch) {
        fuse_rel_free(r);
        return -1;
    }
    for (int e = 0; e < g->nedges; e++) {
        const FuseEdge *ed = &g->edges[e];
        int p = ed->producer, q = ed->consumer;
        setbit(r->edge, r->words, p, q);
        const FuseNode *a = &g->nodes[p], *b = &g->nodes[q];
        if (!fuse_vertical_ok(a, b, ed->access) || (a->kind == FK_FILTER && b->via_filter != p))
            setbit(r->vbad, r->words, p, q);
    }
    /* Edges go forward, so one backward sweep closes the relation. */
    for (int i = n - 1; i >= 0; i--) {
        uint64_t *ri = r->reach + (size_t)i * (size_t)r->words;
        const uint64_t *ei = r->edge + (size_t)i * (size_t)r->words;
        for (int j = i + 1; j < n; j++) {
            if (!fuse_bit(ei, 0, 0, j))
                continue;
            const uint64_t *rj = r->reach + (size_t)j * (size_t)r->words;
            for (int w = 0; w < r->words; w++)
                ri[w] |= rj[w];
            setbit(ri, 0, 0, j);
        }
    }
    return 0;
}

/* ---- when independent nodes may share a cluster ------------------------ */

/* x as it iterates once fused with its via_filter FILTER, when that is a
 * fusable edge; else 0. */
static int alt_node(const FuseGraph *g, const FuseRel *r, int x, FuseNode *out)
{
    int v = g->nodes[x].via_filter;
    if (v < 0 || !fuse_bit(r->edge, r->words, v, x) || fuse_bit(r->vbad, r->words, v, x))
        return 0;
    *out = g->nodes[x];
    out->shape = g->nodes[v].shape;
    out->seg = g->nodes[v].seg;
    return 1;
}

static int add_opt(FusePairOpt *opts, int cap, int k, int nreq, int v0, int x0, int v1, int x1)
{
    if (k >= cap)
        return k;
    opts[k].nreq = nreq;
    opts[k].req[0][0] = v0;
    opts[k].req[0][1] = x0;
    opts[k].req[1][0] = v1;
    opts[k].req[1][1] = x1;
    return k + 1;
}

/* x of another kind than the FILTER y shares y's cluster through a consumer
 * r of y that iterates over y's output and then matches x. */
static int mixed_opts(const FuseGraph *g, const FuseRel *r, int x, int y, FusePairOpt *opts,
                      int cap, int k)
{
    if (g->nodes[y].kind != FK_FILTER)
        return k;
    for (int q = y + 1; q < g->nnodes; q++) {
        if (q == x || g->nodes[q].via_filter != y || g->nodes[q].kind != g->nodes[x].kind)
            continue;
        FuseNode alt;
        if (!alt_node(g, r, q, &alt) || !fuse_indep(r, q, x))
            continue;
        if (fuse_horizontal_ok(&g->nodes[x], &alt))
            k = add_opt(opts, cap, k, 1, y, q, -1, -1);
    }
    return k;
}

int fuse_pair_options(const FuseGraph *g, const FuseRel *r, int a, int b, FusePairOpt *opts,
                      int cap)
{
    const FuseNode *na = &g->nodes[a], *nb = &g->nodes[b];
    if (na->kind == FK_LIB || nb->kind == FK_LIB)
        return 0;
    int k = 0;
    if (na->kind == nb->kind) {
        if (fuse_horizontal_ok(na, nb))
            return add_opt(opts, cap, 0, 0, -1, -1, -1, -1);
        FuseNode aa, bb;
        int has_a = alt_node(g, r, a, &aa), has_b = alt_node(g, r, b, &bb);
        if (has_b && fuse_horizontal_ok(na, &bb))
            k = add_opt(opts, cap, k, 1, nb->via_filter, b, -1, -1);
        if (has_a && fuse_horizontal_ok(&aa, nb))
            k = add_opt(opts, cap, k, 1, na->via_filter, a, -1, -1);
        if (has_a && has_b && fuse_horizontal_ok(&aa, &bb))
            k = add_opt(opts, cap, k, 2, na->via_filter, a, nb->via_filter, b);
        return k;
    }
    if (fuse_horizontal_ok(na, nb)) /* a MAP beside another SOAC over the same space */
        return add_opt(opts, cap, 0, 0, -1, -1, -1, -1);
    k = mixed_opts(g, r, a, b, opts, cap, k);
    k = mixed_opts(g, r, b, a, opts, cap, k);
    return k;
}

int fuse_opt_holds(const FusePairOpt *o, const int *cluster)
{
    for (int k = 0; k < o->nreq; k++) {
        int v = o->req[k][0], x = o->req[k][1];
        if (cluster[v] < 0 || cluster[v] != cluster[x])
            return 0;
    }
    return 1;
}

int fuse_pair_ok(const FuseGraph *g, const FuseRel *r, int a, int b, const int *cluster)
{
    int k = fuse_pair_options(g, r, a, b, r->scratch, r->n + 4);
    for (int i = 0; i < k; i++)
        if (fuse_opt_holds(&r->scratch[i], cluster))
            return 1;
    return 0;
}

/* ---- checking a schedule ----------------------------------------------- */

int fuse_check_rel(const FuseGraph *g, const FuseRel *r, const int *cluster, int upto)
{
    for (int i = 0; i < upto; i++)
        if (cluster[i] < 0)
            return -1;
    /* Every edge goes to the same or a later cluster, so cluster numbers
     * are an execution order and a path between two nodes of one cluster
     * stays inside it. */
    for (int e = 0; e < g->nedges; e++) {
        int p = g->edges[e].producer, q = g->edges[e].consumer;
        if (q >= upto)
            continue;
        if (cluster[p] > cluster[q])
            return -1;
        if (cluster[p] == cluster[q] && fuse_bit(r->vbad, r->words, p, q))
            return -1;
    }
    for (int i = 0; i < upto; i++)
        for (int j = i + 1; j < upto; j++)
            if (cluster[i] == cluster[j] && fuse_indep(r, i, j) &&
                !fuse_pair_ok(g, r, i, j, cluster))
                return -1;
    return 0;
}

int fuse_check(const FuseGraph *g, const int *cluster)
{
    FuseRel r;
    if (fuse_rel_init(&r, g) != 0)
        return -1;
    int rc = fuse_check_rel(g, &r, cluster, g->nnodes);
    fuse_rel_free(&r);
    return rc;
}

int fuse_count_materialised(const FuseGraph *g, const int *cluster)
{
    int count = 0;
    unsigned char *m = calloc((size_t)(g->narrays > 0 ? g->narrays : 1), 1);
    if (m) {
        /* One pass over the edges: linear in the graph. */
        for (int a = 0; a < g->narrays; a++)
            m[a] = g->live_out && g->live_out[a];
        for (int e = 0; e < g->nedges; e++)
            if (cluster[g->edges[e].producer] != cluster[g->edges[e].consumer])
                m[g->edges[e].array] = 1;
        for (int a = 0; a < g->narrays; a++)
            count += m[a];
        free(m);
        return count;
    }
    for (int a = 0; a < g->narrays; a++) {
        int m = g->live_out && g->live_out[a];
        for (int e = 0; e < g->nedges && !m; e++)
            if (g->edges[e].array == a &&
                cluster[g->edges[e].producer] != cluster[g->edges[e].consumer])
                m = 1;
        count += m;
    }
    return count;
}


/* ---- the greedy schedule ------------------------------------------------ */

/* Put n into cluster c (c is at or after the clusters of n's producers)
 * when that keeps the schedule of nodes [0, n] valid. first[c] and next[]
 * list each cluster's members, so a try costs the size of c. */
static int try_join(const FuseGraph *g, const FuseRel *r, int *cluster, const int *first,
                    const int *next, int n, int c)
{
    cluster[n] = c;
    for (int m = first[c]; m >= 0; m = next[m]) {
        int ok;
        if (fuse_bit(r->edge, r->words, m, n))
            ok = !fuse_bit(r->vbad, r->words, m, n);
        else if (fuse_bit(r->reach, r->words, m, n))
            ok = 1; /* the path in between is in c too: see fuse_check_rel */
        else
            ok = fuse_pair_ok(g, r, m, n, cluster);
        if (!ok) {
            cluster[n] = -1;
            return 0;
        }
    }
    return 1;
}

/* The greedy schedule of a graph small enough for bit matrices; in_first
 * and in_edge list the edges into each node (CSR). Returns the number of
 * clusters, or -1 when out of memory. */
static int greedy_core(const FuseGraph *g, const FuseRel *r, const int *in_first,
                       const int *in_edge, int *cluster)
{
    int n = g->nnodes, k = 0;
    int *first = malloc((size_t)(n > 0 ? n : 1) * sizeof *first);
    int *last = malloc((size_t)(n > 0 ? n : 1) * sizeof *last);
    int *next = malloc((size_t)(n > 0 ? n : 1) * sizeof *next);
    if (!first || !last || !next) {
        free(first);
        free(last);
        free(next);
        return -1;
    }
    for (int i = 0; i < n; i++)
        cluster[i] = -1;
    for (int i = 0; i < n; i++) {
        int maxprod = -1, vert = 0;
        for (int t = in_first[i]; t < in_first[i + 1]; t++)
            if (cluster[g->edges[in_edge[t]].producer] > maxprod)
                maxprod = cluster[g->edges[in_edge[t]].producer];
        /* Vertically into the latest producer's cluster... */
        for (int t = in_first[i]; t < in_first[i + 1] && !vert; t++) {
            int p = g->edges[in_edge[t]].producer;
            vert = cluster[p] == maxprod && !fuse_bit(r->vbad, r->words, p, i);
        }
        int placed = vert && try_join(g, r, cluster, first, next, i, maxprod);
        /* ...else horizontally into the first cluster at or after it that
         * takes it... */
        for (int c = maxprod < 0 ? 0 : maxprod; c < k && !placed; c++)
            if (!(vert && c == maxprod))
                placed = try_join(g, r, cluster, first, next, i, c);
        /* ...else alone. */
        if (!placed) {
            cluster[i] = k;
            first[k] = -1;
            k++;
        }
        int c = cluster[i];
        next[i] = -1;
        if (first[c] < 0)
            first[c] = i;
        else
            next[last[c]] = i;
        last[c] = i;
    }
    free(first);
    free(last);
    free(next);
    return k;
}

/* in_first[0..n] and in_edge[]: the edges into each node, in edge order. */
static int edges_by_consumer(const FuseGraph *g, int **in_first, int **in_edge)
{
    int n = g->nnodes;
    *in_first = calloc((size_t)n + 2, sizeof **in_first);
    *in_edge = malloc((size_t)(g->nedges > 0 ? g->nedges : 1) * sizeof **in_edge);
    if (!*in_first || !*in_edge) {
        free(*in_first);
        free(*in_edge);
        *in_first = *in_edge = NULL;
        return -1;
    }
    int *f = *in_first;
    for (int e = 0; e < g->nedges; e++)
        f[g->edges[e].consumer + 2]++;
    for (int i = 0; i < n; i++)
        f[i + 2] += f[i + 1];
    for (int e = 0; e < g->nedges; e++)
        (*in_edge)[f[g->edges[e].consumer + 1]++] = e;
    return 0;
}

/* Schedule nodes [lo, hi) of G on their own: the edges from before lo are
 * left out (their producers are in earlier clusters anyway), so are
 * via_filter links to before lo (such a fusion would cross the window).
 * Writes cluster[lo..hi) as 0..k-1 and returns k, or -1. */
static int greedy_window(const FuseGraph *g, const int *in_first, const int *in_edge, int lo,
                         int hi, int *amap, int *cluster)
{
    int w = hi - lo, ne = 0, na = 0, k = -1;
    for (int t = in_first[lo]; t < in_first[hi]; t++)
        ne += g->edges[in_edge[t]].producer >= lo;
    FuseGraph s;
    memset(&s, 0, sizeof s);
    s.nnodes = w;
    s.nodes = malloc((size_t)w * sizeof *s.nodes);
    s.edges = malloc((size_t)(ne > 0 ? ne : 1) * sizeof *s.edges);
    int *sf = malloc(((size_t)w + 1) * sizeof *sf), *se = malloc((size_t)(ne > 0 ? ne : 1) * sizeof *se);
    if (!s.nodes || !s.edges || !sf || !se)
        goto done;
    for (int i = 0; i < w; i++) {
        s.nodes[i] = g->nodes[lo + i];
        int v = s.nodes[i].via_filter;
        s.nodes[i].via_filter = v >= lo ? v - lo : -1;
    }
    /* Arrays renumbered densely (amap[] is -1 outside this call). */
    for (int i = 0; i < w; i++) {
        sf[i] = s.nedges;
        for (int t = in_first[lo + i]; t < in_first[lo + i + 1]; t++) {
            FuseEdge ed = g->edges[in_edge[t]];
            if (ed.producer < lo)
                continue;
            if (amap[ed.array] < 0)
                amap[ed.array] = na++;
            ed.array = amap[ed.array];
            ed.producer -= lo;
            ed.consumer -= lo;
            se[s.nedges] = s.nedges;
            s.edges[s.nedges++] = ed;
        }
    }
    sf[w] = s.nedges;
    s.narrays = na;
    for (int t = in_first[lo]; t < in_first[hi]; t++)
        amap[g->edges[in_edge[t]].array] = -1;
    FuseRel r;
    if (fuse_rel_init(&r, &s) != 0)
        goto done;
    k = greedy_core(&s, &r, sf, se, cluster + lo);
    if (k >= 0 && fuse_check_rel(&s, &r, cluster + lo, w) != 0) {
        /* Not expected: nothing fused is always valid. */
        for (int i = 0; i < w; i++)
            cluster[lo + i] = i;
        k = w;
    }
    fuse_rel_free(&r);
done:
    free(s.nodes);
    free(s.edges);
    free(sf);
    free(se);
    return k;
}

void fuse_greedy(const FuseGraph *g, int *cluster, FuseResult *res)
{
    FuseResult dummy;
    if (!res)
        res = &dummy;
    memset(res, 0, sizeof *res);
    res->fell_back = 1;
    int n = g->nnodes > 0 ? g->nnodes : 0;
    int *in_first = NULL, *in_edge = NULL, *amap = NULL, k = 0;
    if (graph_ok(g) && edges_by_consumer(g, &in_first, &in_edge) == 0 &&
        (amap = malloc((size_t)(g->narrays > 0 ? g->narrays : 1) * sizeof *amap)) != NULL) {
        for (int a = 0; a < g->narrays; a++)
            amap[a] = -1;
        /* Windows of consecutive nodes, as even as they come: no cluster
         * crosses a window, which bounds the cost of this schedule (bit
         * matrices and pair checks are quadratic in a window) and of
         * merging a cluster (rewrite.c) by the window's size, so a long
         * block costs time linear in its length. */
        int nw = (n + FUSE_WINDOW - 1) / FUSE_WINDOW, size = nw > 0 ? (n + nw - 1) / nw : 0;
        for (int lo = 0; lo < n && k >= 0; lo += size) {
            int hi = lo + size < n ? lo + size : n;
            int kw = greedy_window(g, in_first, in_edge, lo, hi, amap, cluster);
            if (kw < 0) {
                k = -1;
                break;
            }
            for (int i = lo; i < hi; i++)
                cluster[i] += k;
            k += kw;
        }
    } else {
        k = -1;
    }
    free(in_first);
    free(in_edge);
    free(amap);
    if (k < 0) {
        /* Malformed graph or no memory: nothing fused. */
        for (int i = 0; i < n; i++)
            cluster[i] = i;
        res->nclusters = n;
        res->why = "greedy: malformed graph or out of memory, nothing fused";
        return;
    }
    res->nclusters = k;
    res->materialised = fuse_count_materialised(g, cluster);
}

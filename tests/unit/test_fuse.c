/* tests/unit/test_fuse.c — the fusion scheduler (translate/fuse.h): the
 * norm2 example of the λcu paper §5, small graphs whose right schedule is
 * written down here, fuse_check on bad schedules, random graphs whose
 * ILP schedule is compared with the best one found by brute force, the
 * work limit of the ILP and the windows of long blocks. */
#include "check.h"
#include "translate/fuse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXN 64

/* Random graphs checked against brute force, and their largest size
 * (-D to check more). */
#ifndef RANDOM_GRAPHS
#define RANDOM_GRAPHS 300
#endif
#ifndef RANDOM_MAXN
#define RANDOM_MAXN 6
#endif

typedef struct {
    FuseNode nodes[MAXN];
    FuseEdge edges[4 * MAXN];
    int live[MAXN], prod[MAXN];
    int nn, ne, na;
} G;

static int node(G *g, FuseKind k, int shape, int seg, int via)
{
    g->nodes[g->nn] = (FuseNode){k, shape, seg, via};
    return g->nn++;
}

/* The array node p produces (one per node here: array index = node). */
static void produce_all(G *g)
{
    g->na = g->nn;
    for (int i = 0; i < g->nn; i++)
        g->prod[i] = i;
}

static void edge(G *g, int p, int q, FuseAccess acc)
{
    g->edges[g->ne++] = (FuseEdge){p, q, p, acc};
}

static FuseGraph graph(G *g)
{
    FuseGraph fg = {g->nn, g->nodes, g->ne, g->edges, g->na, g->live, g->prod};
    return fg;
}

static int same(const int *a, const int *b, int n)
{
    return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

static FuseOptions defaults(void)
{
    FuseOptions o;
    memset(&o, 0, sizeof o);
    o.max_nodes = 60;
    return o;
}

static double max_seconds;

static void schedule(const FuseGraph *fg, int *cl, FuseResult *res)
{
    FuseOptions o = defaults();
    fuse_schedule(fg, &o, cl, res);
    if (res->seconds > max_seconds)
        max_seconds = res->seconds;
}

/* norm2 (λcu paper §5; Robinson et al.):
 *   0 sum1 = REDUCE xs        shape S, seg D
 *   1 gts  = FILTER xs        shape S, seg D
 *   2 sum2 = REDUCE gts       shape G, seg D', via_filter 1
 *   3 res1 = MAP xs / sum1    shape S
 *   4 res2 = MAP xs / sum2    shape S */
static void build_norm2(G *g)
{
    memset(g, 0, sizeof *g);
    enum { S = 0, GS = 1, D = 0, D2 = 1 };
    node(g, FK_REDUCE, S, D, -1);
    node(g, FK_FILTER, S, D, -1);
    node(g, FK_REDUCE, GS, D2, 1);
    node(g, FK_MAP, S, -1, -1);
    node(g, FK_MAP, S, -1, -1);
    produce_all(g);
    edge(g, 1, 2, FA_ELEM);
    edge(g, 0, 3, FA_OTHER);
    edge(g, 2, 4, FA_OTHER);
    g->live[3] = g->live[4] = 1;
}

static void test_rules(void)
{
    FuseNode map = {FK_MAP, 0, -1, -1}, map1 = {FK_MAP, 1, -1, -1};
    FuseNode red = {FK_REDUCE, 0, 0, -1}, red_s1 = {FK_REDUCE, 0, 1, -1};
    FuseNode filt = {FK_FILTER, 0, 0, -1}, red_via = {FK_REDUCE, 1, 2, 0};
    FuseNode once = {FK_ONCE, 0, -1, -1}, lib = {FK_LIB, 0, -1, -1};
    FuseNode scan = {FK_SCAN, 0, 0, -1}, perm = {FK_PERMUTE, 0, 0, -1};
    CHECK(fuse_vertical_ok(&map, &map, FA_ELEM));
    CHECK(fuse_vertical_ok(&map, &red, FA_ELEM));
    CHECK(fuse_vertical_ok(&map, &scan, FA_ELEM));
    CHECK(fuse_vertical_ok(&map, &filt, FA_ELEM));
    CHECK(fuse_vertical_ok(&map, &perm, FA_ELEM));
    CHECK(fuse_vertical_ok(&map, &once, FA_ELEM));  /* a ONCE is a MAP over one index */
    CHECK(fuse_vertical_ok(&once, &once, FA_ELEM));
    CHECK(!fuse_vertical_ok(&once, &red, FA_ELEM));
    CHECK(!fuse_vertical_ok(&map, &map, FA_OTHER));
    CHECK(!fuse_vertical_ok(&map, &map1, FA_ELEM));
    CHECK(fuse_vertical_ok(&filt, &red_via, FA_ELEM));
    CHECK(!fuse_vertical_ok(&filt, &red, FA_ELEM));
    CHECK(!fuse_vertical_ok(&filt, &map, FA_ELEM));
    CHECK(fuse_vertical_ok(&red, &once, FA_OTHER));
    CHECK(!fuse_vertical_ok(&red, &map, FA_OTHER));
    CHECK(!fuse_vertical_ok(&map, &lib, FA_ELEM));
    CHECK(!fuse_vertical_ok(&lib, &map, FA_ELEM));
    CHECK(!fuse_vertical_ok(&scan, &map, FA_ELEM));
    CHECK(fuse_horizontal_ok(&map, &map));
    CHECK(!fuse_horizontal_ok(&map, &map1));
    CHECK(fuse_horizontal_ok(&red, &red));
    CHECK(!fuse_horizontal_ok(&red, &red_s1));
    CHECK(!fuse_horizontal_ok(&red, &filt));
    /* a MAP shares a kernel with another SOAC over the same space */
    CHECK(fuse_horizontal_ok(&map, &red));
    CHECK(fuse_horizontal_ok(&filt, &map));
    CHECK(!fuse_horizontal_ok(&map1, &red));
    CHECK(fuse_horizontal_ok(&map, &once));
    CHECK(!fuse_horizontal_ok(&map, &lib));
    CHECK(!fuse_horizontal_ok(&lib, &lib));
    CHECK(fuse_horizontal_ok(&once, &once));
}

static void test_norm2(void)
{
    G g;
    build_norm2(&g);
    FuseGraph fg = graph(&g);
    int cl[5], want[5] = {0, 0, 0, 1, 1};
    FuseResult res;
    schedule(&fg, cl, &res);
    CHECK(!res.fell_back);
    CHECK(res.why == NULL);
    CHECK(same(cl, want, 5));
    CHECK(res.nclusters == 2);
    CHECK(res.materialised == 4); /* sum1, sum2, res1, res2: not gts */
    CHECK(res.nvars > 5 && res.nconstraints > 0);
    CHECK(res.objective > 0);
    CHECK(fuse_check(&fg, cl) == 0);

    /* Greedy, top-down, misses filter-reduce-with-sum1: three clusters. */
    int gcl[5], gwant[5] = {0, 1, 1, 2, 2};
    FuseResult gres;
    fuse_greedy(&fg, gcl, &gres);
    CHECK(same(gcl, gwant, 5));
    CHECK(gres.nclusters == 3);
    CHECK(gres.fell_back);
    CHECK(gres.materialised == 4);
    CHECK(fuse_check(&fg, gcl) == 0);

    /* Without the via_filter link the reductions cannot meet. */
    g.nodes[2].via_filter = -1;
    fg = graph(&g);
    schedule(&fg, cl, &res);
    CHECK(!res.fell_back);
    CHECK(fuse_check(&fg, cl) == 0);
    CHECK(cl[0] != cl[1] && cl[1] != cl[2] && cl[3] == cl[4]);
    CHECK(res.materialised == 5);
}

static void test_chain(void)
{
    G g;
    memset(&g, 0, sizeof g);
    for (int i = 0; i < 6; i++)
        node(&g, FK_MAP, 3, -1, -1);
    produce_all(&g);
    for (int i = 0; i + 1 < 6; i++)
        edge(&g, i, i + 1, FA_ELEM);
    g.live[5] = 1;
    FuseGraph fg = graph(&g);
    int cl[6], zero[6] = {0};
    FuseResult res;
    schedule(&fg, cl, &res);
    CHECK(!res.fell_back);
    CHECK(same(cl, zero, 6));
    CHECK(res.nclusters == 1 && res.materialised == 1);
    fuse_greedy(&fg, cl, &res);
    CHECK(same(cl, zero, 6));
    CHECK(res.nclusters == 1 && res.materialised == 1);

    /* A gather (FA_OTHER) in the middle splits it. */
    g.edges[2].access = FA_OTHER;
    fg = graph(&g);
    int want[6] = {0, 0, 0, 1, 1, 1};
    schedule(&fg, cl, &res);
    CHECK(same(cl, want, 6));
    CHECK(res.materialised == 2);
    fuse_greedy(&fg, cl, &res);
    CHECK(same(cl, want, 6));
}

static void test_lib(void)
{
    G g;
    memset(&g, 0, sizeof g);
    node(&g, FK_MAP, 0, -1, -1);
    node(&g, FK_LIB, 0, -1, -1);
    node(&g, FK_MAP, 0, -1, -1);
    produce_all(&g);
    edge(&g, 0, 1, FA_ELEM);
    edge(&g, 1, 2, FA_ELEM);
    g.live[2] = 1;
    FuseGraph fg = graph(&g);
    int cl[3], want[3] = {0, 1, 2};
    FuseResult res;
    schedule(&fg, cl, &res);
    CHECK(!res.fell_back);
    CHECK(same(cl, want, 3));
    CHECK(res.nclusters == 3 && res.materialised == 3);
    fuse_greedy(&fg, cl, &res);
    CHECK(same(cl, want, 3));
}

static void test_independent(void)
{
    G g;
    memset(&g, 0, sizeof g);
    node(&g, FK_REDUCE, 0, 0, -1);
    node(&g, FK_REDUCE, 1, 0, -1);
    produce_all(&g);
    g.live[0] = g.live[1] = 1;
    FuseGraph fg = graph(&g);
    int cl[2];
    FuseResult res;
    schedule(&fg, cl, &res);
    CHECK(!res.fell_back);
    CHECK(cl[0] != cl[1] && res.nclusters == 2);
    fuse_greedy(&fg, cl, &res);
    CHECK(cl[0] != cl[1]);
    int both[2] = {0, 0};
    CHECK(fuse_check(&fg, both) != 0);

    /* Same shape and segments: one kernel. */
    g.nodes[1].shape = 0;
    fg = graph(&g);
    schedule(&fg, cl, &res);
    CHECK(same(cl, both, 2) && res.nclusters == 1);
    fuse_greedy(&fg, cl, &res);
    CHECK(same(cl, both, 2));
    /* Different segment descriptors: apart again. */
    g.nodes[1].seg = 1;
    fg = graph(&g);
    schedule(&fg, cl, &res);
    CHECK(cl[0] != cl[1]);
}

static void test_fallback(void)
{
    G g;
    build_norm2(&g);
    FuseGraph fg = graph(&g);
    int cl[5], gwant[5] = {0, 1, 1, 2, 2};
    FuseResult res;
    FuseOptions o = defaults();
    o.max_nodes = 3;
    fuse_schedule(&fg, &o, cl, &res);
    CHECK(res.fell_back);
    CHECK(res.why != NULL);
    CHECK(same(cl, gwant, 5));
    CHECK(res.nclusters == 3);
    /* A work limit of one unit: lp_solve stops at once, greedy is used. */
    o = defaults();
    o.ilp_max_work = 1;
    fuse_schedule(&fg, &o, cl, &res);
    CHECK(res.fell_back);
    CHECK(res.why != NULL && strstr(res.why, "work limit") != NULL);
    CHECK(same(cl, gwant, 5));
    /* Zeroed options mean the defaults. */
    FuseOptions z;
    memset(&z, 0, sizeof z);
    fuse_schedule(&fg, &z, cl, &res);
    CHECK(!res.fell_back);
    fuse_schedule(&fg, NULL, cl, &res);
    CHECK(!res.fell_back && res.nclusters == 2);
    /* A malformed graph (backward edge) is never scheduled by the ILP. */
    g.edges[0] = (FuseEdge){2, 1, 2, FA_ELEM};
    fg = graph(&g);
    o = defaults();
    fuse_schedule(&fg, &o, cl, &res);
    CHECK(res.fell_back);
    CHECK(res.why != NULL && strstr(res.why, "malformed") != NULL);
    CHECK(fuse_check(&fg, cl) != 0);
}

/* a -> b, a -> c, b -> d, c -> d. */
static void test_diamond(void)
{
    G g;
    memset(&g, 0, sizeof g);
    for (int i = 0; i < 4; i++)
        node(&g, FK_MAP, 0, -1, -1);
    produce_all(&g);
    edge(&g, 0, 1, FA_ELEM);
    edge(&g, 0, 2, FA_ELEM);
    edge(&g, 1, 3, FA_ELEM);
    edge(&g, 2, 3, FA_ELEM);
    g.live[3] = 1;
    FuseGraph fg = graph(&g);
    int cl[4], zero[4] = {0};
    FuseResult res;
    schedule(&fg, cl, &res);
    CHECK(same(cl, zero, 4) && res.materialised == 1);
    fuse_greedy(&fg, cl, &res);
    CHECK(same(cl, zero, 4));

    /* With b a library call, a, c and d cannot all meet (b lies between a
     * and d). Fusing c into d saves c's array; fusing a with c saves
     * nothing (b reads a anyway): the ILP takes the first, greedy the
     * second. */
    g.nodes[1].kind = FK_LIB;
    fg = graph(&g);
    int want[4] = {0, 1, 2, 2}, gwant[4] = {0, 1, 0, 2};
    schedule(&fg, cl, &res);
    CHECK(!res.fell_back);
    CHECK(same(cl, want, 4));
    CHECK(res.materialised == 3);
    FuseResult gres;
    fuse_greedy(&fg, cl, &gres);
    CHECK(same(cl, gwant, 4));
    CHECK(gres.materialised == 4);
}

/* Two pairs that may fuse, p -> q and r -> s, in separate components, with
 * unfusable edges p -> s and r -> q: fusing both is a cycle, so the ILPs of
 * the two components are merged and exactly one of the pairs is fused. */
static void test_cross_cycle(void)
{
    G g;
    memset(&g, 0, sizeof g);
    node(&g, FK_MAP, 0, -1, -1); /* 0 p */
    node(&g, FK_MAP, 1, -1, -1); /* 1 r */
    node(&g, FK_MAP, 0, -1, -1); /* 2 q */
    node(&g, FK_MAP, 1, -1, -1); /* 3 s */
    produce_all(&g);
    edge(&g, 0, 2, FA_ELEM);
    edge(&g, 1, 2, FA_OTHER);
    edge(&g, 0, 3, FA_OTHER);
    edge(&g, 1, 3, FA_ELEM);
    g.live[2] = g.live[3] = 1;
    FuseGraph fg = graph(&g);
    int both[4] = {0, 1, 0, 1};
    CHECK(fuse_check(&fg, both) != 0);
    int cl[4];
    FuseResult res;
    FILE *f = tmpfile();
    FuseOptions o = defaults();
    o.trace = f;
    fuse_schedule(&fg, &o, cl, &res);
    CHECK(!res.fell_back);
    CHECK(fuse_check(&fg, cl) == 0);
    CHECK(res.nclusters == 3);
    CHECK((cl[0] == cl[2]) != (cl[1] == cl[3]));
    CHECK(res.materialised == 4);
    if (f) {
        long len = ftell(f);
        rewind(f);
        char *buf = calloc((size_t)len + 1, 1);
        CHECK(buf && fread(buf, 1, (size_t)len, f) == (size_t)len);
        CHECK(buf && strstr(buf, "form a cycle") != NULL);
        free(buf);
        fclose(f);
    }
    int gwant[4] = {0, 1, 2, 1};
    fuse_greedy(&fg, cl, &res);
    CHECK(same(cl, gwant, 4));
}

static void test_check(void)
{
    G g;
    memset(&g, 0, sizeof g);
    for (int i = 0; i < 3; i++)
        node(&g, FK_MAP, 0, -1, -1);
    produce_all(&g);
    edge(&g, 0, 1, FA_ELEM);
    edge(&g, 1, 2, FA_ELEM);
    FuseGraph fg = graph(&g);
    int ok[3] = {0, 0, 1}, back[3] = {1, 0, 2}, hole[3] = {0, 1, 0}, neg[3] = {0, -1, 0};
    int gaps[3] = {0, 5, 9};
    CHECK(fuse_check(&fg, ok) == 0);
    CHECK(fuse_check(&fg, gaps) == 0);
    CHECK(fuse_check(&fg, back) != 0); /* consumer before producer */
    CHECK(fuse_check(&fg, hole) != 0); /* 0 and 2 fused around 1: a cycle */
    CHECK(fuse_check(&fg, neg) != 0);
    /* Incompatible nodes fused. */
    g.nodes[2].kind = FK_REDUCE;
    g.nodes[2].seg = 0;
    g.edges[1].access = FA_OTHER;
    fg = graph(&g);
    int all[3] = {0, 0, 0};
    CHECK(fuse_check(&fg, all) != 0);
    /* Independent MAP and REDUCE over the same space may share a cluster;
     * over different spaces they may not. */
    g.ne = 1;
    fg = graph(&g);
    int mr[3] = {0, 1, 0};
    CHECK(fuse_check(&fg, mr) == (g.nodes[0].shape == g.nodes[2].shape ? 0 : -1));
    /* norm2: sum1 with the filter only when sum2 joins them. */
    build_norm2(&g);
    fg = graph(&g);
    int n_ok[5] = {0, 0, 0, 1, 1}, n_bad[5] = {0, 0, 1, 2, 2}, n_bad2[5] = {0, 1, 0, 2, 2};
    CHECK(fuse_check(&fg, n_ok) == 0);
    CHECK(fuse_check(&fg, n_bad) != 0);
    CHECK(fuse_check(&fg, n_bad2) != 0);
}

static void test_trace(void)
{
    G g;
    build_norm2(&g);
    FuseGraph fg = graph(&g);
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return;
    FuseOptions o = defaults();
    o.trace = f;
    int cl[5];
    FuseResult res;
    fuse_schedule(&fg, &o, cl, &res);
    long len = ftell(f);
    rewind(f);
    char *buf = calloc((size_t)len + 1, 1);
    CHECK(buf && fread(buf, 1, (size_t)len, f) == (size_t)len);
    if (buf) {
        CHECK(strstr(buf, "min:") != NULL);
        CHECK(strstr(buf, "order_1_2") != NULL);
        CHECK(strstr(buf, "f1_2") != NULL);
        CHECK(strstr(buf, "fusion: round 1") != NULL);
        CHECK(strstr(buf, "-> 2 clusters") != NULL);
    }
    free(buf);
    fclose(f);
}

/* ---- random graphs against brute force --------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15u;
static int rnd(int n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int)(rng % (uint64_t)n);
}

static void random_graph(G *g, int n)
{
    static const FuseKind kinds[] = {FK_MAP, FK_MAP, FK_MAP, FK_REDUCE, FK_REDUCE,
                                     FK_FILTER, FK_SCAN, FK_ONCE, FK_LIB};
    memset(g, 0, sizeof *g);
    int mode = rnd(3); /* 1: mostly MAPs; 2: mostly FILTERs and REDUCEs */
    for (int i = 0; i < n; i++) {
        FuseKind k = kinds[rnd((int)(sizeof kinds / sizeof kinds[0]))];
        if (mode == 1 && rnd(10) < 6)
            k = FK_MAP;
        else if (mode == 2 && rnd(10) < 7)
            k = rnd(2) ? FK_FILTER : FK_REDUCE;
        int seg = (k == FK_REDUCE || k == FK_SCAN || k == FK_FILTER) ? rnd(2) : -1;
        node(g, k, rnd(2), seg, -1);
    }
    produce_all(g);
    for (int q = 1; q < n; q++)
        for (int p = 0; p < q; p++)
            if (rnd(100) < 35)
                edge(g, p, q, rnd(10) < 7 ? FA_ELEM : FA_OTHER);
    /* Filter-fed reductions and filters. */
    for (int e = 0; e < g->ne; e++) {
        FuseEdge *ed = &g->edges[e];
        FuseNode *c = &g->nodes[ed->consumer];
        if (g->nodes[ed->producer].kind == FK_FILTER && ed->access == FA_ELEM &&
            (c->kind == FK_REDUCE || c->kind == FK_FILTER) && c->via_filter < 0 && rnd(10) < 8) {
            c->via_filter = ed->producer;
            c->shape = 2 + rnd(2);
        }
    }
    for (int i = 0; i < n; i++)
        g->live[i] = rnd(10) < 3;
}

/* (materialised, shared reads across clusters, launches), compared in
 * that order, over the pairs that have an edge or no path between them. */
typedef struct {
    long alloc, reads, launches;
} Cost;

static int reaches(const G *g, int p, int q)
{
    if (p == q)
        return 1;
    for (int e = 0; e < g->ne; e++)
        if (g->edges[e].producer == p && reaches(g, g->edges[e].consumer, q))
            return 1;
    return 0;
}

static Cost cost(const G *g, const FuseGraph *fg, const int *cl)
{
    Cost c = {0, 0, 0};
    int n = g->nn;
    int cons[MAXN][MAXN] = {{0}}, edge_[MAXN][MAXN] = {{0}};
    for (int e = 0; e < g->ne; e++) {
        cons[g->edges[e].consumer][g->edges[e].array] = 1;
        edge_[g->edges[e].producer][g->edges[e].consumer] = 1;
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (!edge_[i][j] && (reaches(g, i, j) || reaches(g, j, i)))
                continue;
            if (cl[i] == cl[j])
                continue;
            int sr = 0;
            for (int a = 0; a < g->na; a++)
                sr += (cons[i][a] && cons[j][a]) + (g->prod[a] == i && cons[j][a]) +
                      (g->prod[a] == j && cons[i][a]);
            c.reads += sr;
            c.launches++;
        }
    /* Materialised arrays as fuse.h counts them. */
    for (int a = 0; a < g->na; a++) {
        int m = g->live[a];
        for (int e = 0; e < g->ne; e++)
            if (g->edges[e].array == a && cl[g->edges[e].producer] != cl[g->edges[e].consumer])
                m = 1;
        c.alloc += m;
    }
    (void)fg;
    return c;
}

static int cost_less(Cost a, Cost b)
{
    if (a.alloc != b.alloc)
        return a.alloc < b.alloc;
    if (a.reads != b.reads)
        return a.reads < b.reads;
    return a.launches < b.launches;
}

static int cost_eq(Cost a, Cost b)
{
    return !cost_less(a, b) && !cost_less(b, a);
}

/* The best valid schedule, over every ordered partition. */
static Cost brute_force(const G *g, const FuseGraph *fg)
{
    int n = g->nn, cl[MAXN];
    long total = 1;
    for (int i = 0; i < n; i++)
        total *= n;
    Cost best = {1L << 40, 0, 0};
    for (long x = 0; x < total; x++) {
        long y = x;
        int used = 0, maxv = 0;
        for (int i = 0; i < n; i++) {
            cl[i] = (int)(y % n);
            y /= n;
            used |= 1 << cl[i];
            if (cl[i] > maxv)
                maxv = cl[i];
        }
        if (used != (1 << (maxv + 1)) - 1)
            continue; /* only 0..k-1 */
        if (fuse_check(fg, cl) != 0)
            continue;
        Cost c = cost(g, fg, cl);
        if (cost_less(c, best))
            best = c;
    }
    return best;
}

static void test_random(void)
{
    int graphs = 0, optimal = 0, fell = 0, better = 0;
    for (int t = 0; t < RANDOM_GRAPHS; t++) {
        G g;
        int n = 3 + rnd(RANDOM_MAXN - 2);
        random_graph(&g, n);
        FuseGraph fg = graph(&g);
        int cl[MAXN], gcl[MAXN];
        FuseResult res, gres;
        schedule(&fg, cl, &res);
        fuse_greedy(&fg, gcl, &gres);
        CHECK(fuse_check(&fg, cl) == 0);
        CHECK(fuse_check(&fg, gcl) == 0);
        Cost best = brute_force(&g, &fg), c = cost(&g, &fg, cl), gc = cost(&g, &fg, gcl);
        graphs++;
        fell += res.fell_back;
        if (res.fell_back) {
            fprintf(stderr, "random graph %d: fell back: %s\n", t, res.why);
            continue;
        }
        CHECK(res.materialised == c.alloc);
        CHECK(!cost_less(gc, c));
        better += cost_less(c, gc);
        if (cost_eq(c, best)) {
            optimal++;
        } else {
            CHECK(cost_eq(c, best));
            fprintf(stderr, "random graph %d: ILP (%ld,%ld,%ld) best (%ld,%ld,%ld)\n", t,
                    c.alloc, c.reads, c.launches, best.alloc, best.reads, best.launches);
        }
    }
    printf("random: %d graphs, %d ILP optimal, %d fell back, ILP better than greedy on %d\n",
           graphs, optimal, fell, better);
}

/* Layers of four: MAPs over two shapes, a REDUCE, a LIB. */
static void layered(G *g, int n)
{
    memset(g, 0, sizeof *g);
    for (int i = 0; i < n; i++) {
        int l = i % 4;
        node(g, l == 3 ? FK_LIB : l == 2 ? FK_REDUCE : FK_MAP, l == 1 ? 1 : 0, l == 2 ? 0 : -1, -1);
    }
    produce_all(g);
    for (int i = 4; i < n; i++) {
        edge(g, i - 4, i, FA_ELEM);
        if (i % 4 == 0)
            edge(g, i - 2, i, FA_OTHER);
    }
    for (int i = n - 4; i < n; i++)
        g->live[i] = 1;
}

/* The ILP is bounded by lp_solve's work, not by time: the same graph gets
 * the same schedule and spends the same work every time, solves with a
 * limit of exactly that work and falls back to greedy with one unit
 * less. */
static void test_work_limit(void)
{
    static const int sizes[] = {20, 30};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        G g;
        layered(&g, sizes[s]);
        FuseGraph fg = graph(&g);
        int n = g.nn, cl1[MAXN], cl2[MAXN], gcl[MAXN];
        FuseResult r1, r2, gres;
        FuseOptions o = defaults();
        fuse_schedule(&fg, &o, cl1, &r1);
        CHECK(!r1.fell_back && r1.work > 0);
        for (int t = 0; t < 3; t++) {
            fuse_schedule(&fg, &o, cl2, &r2);
            CHECK(!r2.fell_back && r2.work == r1.work && same(cl1, cl2, n));
        }
        o.ilp_max_work = r1.work;
        fuse_schedule(&fg, &o, cl2, &r2);
        CHECK(!r2.fell_back && r2.work == r1.work && same(cl1, cl2, n));
        o.ilp_max_work = r1.work - 1;
        fuse_schedule(&fg, &o, cl2, &r2);
        fuse_greedy(&fg, gcl, &gres);
        CHECK(r2.fell_back && r2.why && strstr(r2.why, "work limit") != NULL);
        CHECK(same(cl2, gcl, n));
        printf("work limit: %d nodes: ILP work %ld\n", n, r1.work);
    }
}

/* Graphs of more than FUSE_WINDOW nodes (heap-allocated: MAXN is small). */
typedef struct {
    FuseNode *nodes;
    FuseEdge *edges;
    int *live, *prod;
    int nn, ne;
    FuseGraph fg;
} BigG;

static void big_free(BigG *b)
{
    free(b->nodes);
    free(b->edges);
    free(b->live);
    free(b->prod);
}

/* n nodes; node i reads nodes i-1 and (every third node) i-5 and i-17.
 * kinds: 0 all MAPs of one shape; 1 a mix (MAPs over two shapes, REDUCEs,
 * SCANs, LIBs, ONCEs, FILTERs feeding REDUCEs). */
static int big_graph(BigG *b, int n, int kinds)
{
    memset(b, 0, sizeof *b);
    b->nodes = calloc((size_t)n, sizeof *b->nodes);
    b->edges = calloc((size_t)n * 3, sizeof *b->edges);
    b->live = calloc((size_t)n, sizeof *b->live);
    b->prod = calloc((size_t)n, sizeof *b->prod);
    if (!b->nodes || !b->edges || !b->live || !b->prod)
        return -1;
    for (int i = 0; i < n; i++) {
        FuseNode *nd = &b->nodes[i];
        *nd = (FuseNode){FK_MAP, 0, -1, -1};
        if (kinds) {
            static const FuseKind ks[] = {FK_MAP, FK_MAP, FK_REDUCE, FK_MAP, FK_SCAN, FK_LIB, FK_MAP,
                                          FK_ONCE, FK_FILTER, FK_REDUCE};
            nd->kind = ks[(i * 7 + i / 13) % 10];
            nd->shape = (i / 5) % 2;
            if (nd->kind == FK_REDUCE || nd->kind == FK_SCAN)
                nd->seg = 0;
            if (nd->kind == FK_ONCE)
                nd->shape = 2;
            if (nd->kind == FK_REDUCE && i > 0 && b->nodes[i - 1].kind == FK_FILTER)
                nd->via_filter = i - 1;
        }
        b->prod[i] = i;
        static const int back[] = {1, 5, 17};
        for (int t = 0; t < 3; t++) {
            int p = i - back[t];
            if (p < 0 || (t > 0 && i % 3 != 0))
                continue;
            FuseAccess acc = kinds && (t == 2 || i % 11 == 0) ? FA_OTHER : FA_ELEM;
            b->edges[b->ne++] = (FuseEdge){p, i, p, acc};
        }
    }
    b->nn = n;
    for (int i = n - 3; i < n; i++)
        if (i >= 0)
            b->live[i] = 1;
    b->fg = (FuseGraph){n, b->nodes, b->ne, b->edges, n, b->live, b->prod};
    return 0;
}

/* Long blocks: windows of at most FUSE_WINDOW consecutive nodes, each
 * scheduled alone; the whole schedule is valid. No timing here: a
 * schedule of the whole graph at once would need its bit matrices (n^2
 * bits each), which the largest graph below cannot afford. */
static void test_windows(void)
{
    static const int sizes[] = {FUSE_WINDOW, FUSE_WINDOW + 1, 3 * FUSE_WINDOW + 7, 5000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int kinds = 0; kinds < 2; kinds++) {
            BigG b;
            int n = sizes[s];
            int *cl = calloc((size_t)n, sizeof *cl);
            CHECK(cl != NULL && big_graph(&b, n, kinds) == 0);
            if (!cl) {
                big_free(&b);
                continue;
            }
            FuseResult res;
            FuseOptions o = defaults();
            fuse_schedule(&b.fg, &o, cl, &res);
            CHECK(res.fell_back && res.why && strstr(res.why, "too many nodes") != NULL);
            CHECK(fuse_check(&b.fg, cl) == 0);
            int nw = (n + FUSE_WINDOW - 1) / FUSE_WINDOW, size = (n + nw - 1) / nw;
            int ok = 1, maxc = -1;
            for (int i = 0; i < n; i++) {
                /* clusters never span windows, and are numbered in order */
                if (i % size == 0 && cl[i] <= maxc)
                    ok = 0;
                if (cl[i] > maxc)
                    maxc = cl[i];
            }
            CHECK(ok);
            CHECK(res.nclusters == maxc + 1);
            if (!kinds)
                CHECK(res.nclusters == nw); /* one chain of MAPs per window */
            free(cl);
            big_free(&b);
        }
    /* A graph far too large for whole-graph bit matrices (3 x 40 GB). */
    BigG b;
    int n = 1000000, *cl = calloc((size_t)n, sizeof *cl);
    CHECK(cl != NULL && big_graph(&b, n, 1) == 0);
    if (cl) {
        FuseResult res;
        fuse_greedy(&b.fg, cl, &res);
        CHECK(res.why == NULL && res.nclusters < n);
        int ok = 1;
        for (int e = 0; e < b.ne; e++)
            ok &= cl[b.edges[e].producer] <= cl[b.edges[e].consumer];
        CHECK(ok);
    }
    free(cl);
    big_free(&b);
}

/* Larger blocks: the schedule is valid whether the ILP finishes within its
 * work limit or not, and prints how long it took. */
static void test_sizes(void)
{
    static const int sizes[] = {10, 20, 30, 60};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        G g;
        int n = sizes[s];
        layered(&g, n);
        FuseGraph fg = graph(&g);
        int cl[MAXN], gcl[MAXN];
        FuseResult res, gres;
        FuseOptions o = defaults();
        double t0 = (double)clock() / CLOCKS_PER_SEC;
        fuse_schedule(&fg, &o, cl, &res);
        double t1 = (double)clock() / CLOCKS_PER_SEC;
        fuse_greedy(&fg, gcl, &gres);
        CHECK(fuse_check(&fg, cl) == 0);
        CHECK(fuse_check(&fg, gcl) == 0);
        CHECK(res.materialised <= gres.materialised || res.fell_back);
        printf("size %d: %d vars, %d rows, solve %.4f s (total %.4f s), %s%s, %d clusters "
               "(greedy %d), %d materialised (greedy %d)\n",
               n, res.nvars, res.nconstraints, res.seconds, t1 - t0,
               res.fell_back ? "fell back: " : "ILP", res.fell_back ? res.why : "",
               res.nclusters, gres.nclusters, res.materialised, gres.materialised);
    }
}

int main(void)
{
    test_rules();
    test_norm2();
    test_chain();
    test_lib();
    test_independent();
    test_fallback();
    test_diamond();
    test_cross_cycle();
    test_check();
    test_trace();
    test_random();
    test_work_limit();
    test_windows();
    test_sizes();
    printf("largest solve time of the fixed tests: %.4f s\n", max_seconds);
    return check_report("fuse");
}

/* translate/plan.c — see plan.h. The pipeline for one block:
 * dataflow graph → one-SOAC kernels (lower.c) → length classes (shape.c) →
 * fusion graph → schedule (fuse.h: ILP or greedy) → one kernel per cluster
 * (rewrite.c) → steps in cluster order, with each variable released after
 * its last use. */
#include "translate/plan.h"
#include "vcode/xalloc.h"
#include "translate/rewrite.h"
#include "vcode/optable.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The length class of the iteration space of SOAC S. */
static int soac_shape_class(Shapes *sh, const LcuSoac *s)
{
    switch (s->shape.kind) {
    case LSH_LEN: return shape_find(sh, SQ_LEN(s->shape.var));
    case LSH_SEG_N: return shape_find(sh, SQ_N(s->shape.var));
    case LSH_SEG_M: return shape_find(sh, SQ_LEN(s->shape.var));
    default: return shape_find(sh, sh->one);
    }
}

/* i := 0 in E */
static LcuExpr *index_to_zero(LcuExpr *e)
{
    if (e->kind == LE_INDEX) {
        lcu_expr_free(e);
        return lcu_int(0);
    }
    for (int k = 0; k < e->nkids; k++)
        e->kids[k] = index_to_zero(e->kids[k]);
    return e;
}

/* A MAP over the class of length 1 is scalar code: make it a ONCE (so a
 * kernel reads "REDUCE, then ONCE" where a reduction and the scalar code
 * after it were fused). */
static void scalar_maps_to_once(LcuKernel *k, Shapes *sh)
{
    int one = shape_find(sh, sh->one);
    for (int i = 0; i < k->nsoacs; i++) {
        LcuSoac *s = k->soacs[i];
        if (s->kind != LS_MAP || s->shape.kind == LSH_ONE || soac_shape_class(sh, s) != one)
            continue;
        s->kind = LS_ONCE;
        s->shape.kind = LSH_ONE;
        s->shape.var = -1;
        s->pull->body = index_to_zero(s->pull->body);
        lcu_thunk_recompute_using(s->pull);
    }
}

static FuseKind fuse_kind(const LowStep *st)
{
    if (st->kind == STEP_HOST)
        return FK_LIB;
    switch (st->k->soacs[0]->kind) {
    case LS_MAP: return FK_MAP;
    case LS_SEG_REDUCE: case LS_REDUCE: return FK_REDUCE;
    case LS_SEG_SCAN: case LS_SCAN: return FK_SCAN;
    case LS_SEG_FILTER: case LS_FILTER: return FK_FILTER;
    case LS_SEG_PERMUTE: case LS_PERMUTE: return FK_PERMUTE;
    case LS_ONCE: return FK_ONCE;
    default: return FK_LIB;
    }
}

/* Variables a step reads, and binds. */
static void step_io(const Dfg *g, const LowStep *st, int *reads, int *nreads, int *binds, int *nbinds)
{
    *nreads = *nbinds = 0;
    if (st->kind == STEP_HOST) {
        const DfgNode *nd = &g->nodes[st->node];
        for (int a = 0; a < nd->nargs; a++)
            reads[(*nreads)++] = nd->args[a];
        for (int r = 0; r < nd->nres; r++)
            binds[(*nbinds)++] = nd->res[r];
        return;
    }
    const LcuKernel *k = st->k;
    for (int i = 0; i < k->nparams; i++)
        reads[(*nreads)++] = k->params[i];
    for (int i = 0; i < k->nsoacs; i++)
        for (int r = 0; r < k->soacs[i]->nres; r++)
            binds[(*nbinds)++] = k->soacs[i]->res[r];
}

/* How consumer step C reads variable V: element-wise at its own index, or
 * otherwise. */
static FuseAccess access_of(Shapes *sh, const LowStep *c, int v)
{
    if (c->kind == STEP_HOST)
        return FA_OTHER;
    const LcuSoac *s = c->k->soacs[0];
    if (s->kind == LS_LIB)
        return FA_OTHER;
    /* a shape #v is v's own length, which the class check below covers;
     * a descriptor as the shape is a whole-array read */
    if (s->shape.kind != LSH_ONE && s->shape.kind != LSH_LEN && s->shape.var == v)
        return FA_OTHER;
    if (s->kind == LS_SEG_PERMUTE) {
        if (s->dst_sd == v)
            return FA_OTHER;
        for (int r = 0; r < s->nres; r++)
            if (s->dflt[r] == v)
                return FA_OTHER;
    }
    /* every read must be v[i], and v must have the iteration space's length */
    const LcuThunk *ths[3] = { s->pull, s->idx, s->pred };
    for (int t = 0; t < 3; t++) {
        if (!ths[t])
            continue;
        const LcuExpr *stack[256];
        int sp = 0;
        stack[sp++] = ths[t]->body;
        while (sp > 0) {
            const LcuExpr *e = stack[--sp];
            if (e->var == v && (e->kind == LE_SUB || e->kind == LE_LEN || e->kind == LE_SEG_OF ||
                                e->kind == LE_SEG_START || e->kind == LE_SEG_LEN || e->kind == LE_SEG_COUNT)) {
                if (e->kind != LE_SUB || e->nkids != 1 || e->kids[0]->kind != LE_INDEX)
                    return FA_OTHER;
            }
            for (int k = 0; k < e->nkids; k++) {
                if (sp == 256)
                    return FA_OTHER;
                stack[sp++] = e->kids[k];
            }
        }
    }
    if (shape_find(sh, SQ_LEN(v)) != soac_shape_class(sh, s))
        return FA_OTHER;
    return FA_ELEM;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The source lines a block covers (inlined code comes from several
 * functions), as sorted ranges: "lines 37-38, 240-247". */
static void print_lines(FILE *f, const Program *p, const Block *b)
{
    int n = b->end - b->start;
    int *l = vc_xcalloc((size_t)n, sizeof *l);
    for (int i = 0; i < n; i++)
        l[i] = p->code[b->start + i].line;
    qsort(l, (size_t)n, sizeof *l, cmp_int);
    fprintf(f, "== block in %s (%d instructions, %d vector ops), lines ", p->funcs[b->func].name, n, b->nvector);
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && l[j + 1] <= l[j] + 1)
            j++;
        fprintf(f, i ? ", %d" : "%d", l[i]);
        if (l[j] != l[i])
            fprintf(f, "-%d", l[j]);
        i = j + 1;
    }
    fputc('\n', f);
    free(l);
}

static void print_steps(FILE *f, const Program *p, const Dfg *g, const LowStep *steps, int n,
                        const LcuVarType *types)
{
    for (int i = 0; i < n; i++) {
        if (steps[i].kind == STEP_HOST) {
            const DfgNode *nd = &g->nodes[steps[i].node];
            fprintf(f, "host %s (line %d):", vc_ops[nd->op].name, p->code[nd->instr].line);
            for (int a = 0; a < nd->nargs; a++)
                fprintf(f, " x%d", nd->args[a]);
            fprintf(f, " ->");
            for (int r = 0; r < nd->nres; r++)
                fprintf(f, " x%d", nd->res[r]);
            fputc('\n', f);
        } else {
            lcu_print_kernel(f, steps[i].k, types);
        }
    }
}

/* ---- storage donors ------------------------------------------------------ */

/* How expression E reads variable V: 0 not at all (or only its length),
 * 1 only as V[i] at the thunk's own index, 2 otherwise. */
static int reads_of(const LcuExpr *e, int v)
{
    if (!e)
        return 0;
    int r = 0;
    switch (e->kind) {
    case LE_SUB:
        if (e->var == v)
            r = e->kids[0]->kind == LE_INDEX ? 1 : 2;
        break;
    case LE_SEG_OF: case LE_SEG_START: case LE_SEG_LEN: case LE_SEG_COUNT:
        if (e->var == v)
            r = 2;
        break;
    default:
        break;
    }
    for (int k = 0; k < e->nkids && r < 2; k++) {
        int q = reads_of(e->kids[k], v);
        r = q > r ? q : r;
    }
    return r;
}

static int soac_reads(const LcuSoac *s, int v)
{
    const LcuThunk *th[3] = { s->pull, s->idx, s->pred };
    int r = 0;
    for (int t = 0; t < 3; t++)
        if (th[t]) {
            int q = reads_of(th[t]->body, v);
            r = q > r ? q : r;
        }
    if (s->dst_sd == v && s->kind == LS_SEG_PERMUTE)
        r = 2;
    for (int i = 0; i < s->nres; i++)
        if (s->kind == LS_SEG_PERMUTE && s->dflt[i] == v)
            r = 2;
    for (int i = 0; s->kind == LS_LIB && i < s->nargs; i++)
        if (s->args[i] == v)
            r = 2;
    return r;
}

static int same_storage(const LcuVarType *a, const LcuVarType *b)
{
    if (a->kind != LV_ARRAY || b->kind != LV_ARRAY)
        return 0;
    return (a->base == VS_FLOAT) == (b->base == VS_FLOAT);
}

/* The parameter whose storage result RET of kernel step PS may take: RET
 * is the only result of an elementwise MAP, the parameter is released by
 * this step, has RET's element size, and no SOAC of the kernel reads it
 * but that MAP, at the MAP's own index (so each element is read before
 * the same element is written). -1 when none. */
static int donor_of(const BlockPlan *bp, const PlanStep *ps, int ret, const int *taken)
{
    const LcuKernel *k = ps->k;
    const LcuSoac *map = NULL;
    for (int i = 0; i < k->nsoacs && !map; i++)
        for (int r = 0; r < k->soacs[i]->nres; r++)
            if (k->soacs[i]->res[r] == ret)
                map = k->soacs[i];
    if (!map || map->kind != LS_MAP || map->nres != 1 || map->shape.kind != LSH_LEN)
        return -1;
    for (int r = 0; r < ps->nrelease; r++) {
        int p = ps->release[r], ok = same_storage(&bp->types[p], &bp->types[ret]);
        int is_param = 0;
        for (int j = 0; j < k->nparams; j++)
            is_param |= k->params[j] == p;
        for (int j = 0; j < k->nrets; j++)
            ok &= k->rets[j] != p && taken[j] != p;
        if (!ok || !is_param)
            continue;
        for (int i = 0; i < k->nsoacs && ok; i++) {
            int q = soac_reads(k->soacs[i], p);
            ok = k->soacs[i] == map ? q <= 1 : q == 0;
        }
        if (ok)
            return p;
    }
    return -1;
}

/* Can expression E stop the run with an error, given that every array it
 * reads at the thunk's own index is long enough? (Int / and %, RANDMOD
 * and CHECKIDX can; so can a read at another index, and the segment
 * functions.) */
static int expr_may_fail(const LcuExpr *e)
{
    if (!e)
        return 0;
    switch (e->kind) {
    case LE_SUB:
        if (e->kids[0]->kind != LE_INDEX)
            return 1;
        break;
    case LE_SEG_OF: case LE_SEG_START: case LE_SEG_LEN: case LE_SEG_COUNT:
        return 1;
    case LE_PRIM:
        if (e->prim == LP_MOD || e->prim == LP_RANDMOD || e->prim == LP_CHECKIDX ||
            (e->prim == LP_DIV && e->type != VS_FLOAT))
            return 1;
        break;
    default:
        break;
    }
    for (int k = 0; k < e->nkids; k++)
        if (expr_may_fail(e->kids[k]))
            return 1;
    return 0;
}

/* May step S's donor be one of the block's inputs? A replay (a fatal
 * error in the block: the reference reruns it from its inputs) needs the
 * inputs intact, so only when nothing can fail once the step has begun to
 * write: its kernel is one MAP that reads its arrays at its own index
 * (the backend checks that they are long enough) and computes nothing
 * that can fail, and every later step is a CONST or a LENGTH, which need
 * no more memory whatever the values. (The MAP's results are allocated
 * before its loop: running out of -m there writes nothing.) */
static int input_donor_ok(const BlockPlan *bp, int s)
{
    const LcuKernel *k = bp->steps[s].k;
    if (k->nsoacs != 1 || k->soacs[0]->kind != LS_MAP || k->soacs[0]->shape.kind != LSH_LEN ||
        !k->soacs[0]->pull || expr_may_fail(k->soacs[0]->pull->body))
        return 0;
    for (int t = s + 1; t < bp->nsteps; t++) {
        const PlanStep *ps = &bp->steps[t];
        Opcode op = bp->dfg.nodes[ps->node].op;
        if (ps->kind != STEP_HOST || (op != OP_CONST && op != OP_LENGTH))
            return 0;
    }
    return 1;
}

static void plan_donors(BlockPlan *bp)
{
    for (int s = 0; s < bp->nsteps; s++) {
        PlanStep *ps = &bp->steps[s];
        if (ps->kind != STEP_KERNEL || !ps->nrelease || !ps->k->nrets)
            continue;
        int *d = vc_xcalloc((size_t)ps->k->nrets, sizeof *d), any = 0;
        for (int r = 0; r < ps->k->nrets; r++)
            d[r] = -1;
        for (int r = 0; r < ps->k->nrets; r++) {
            d[r] = donor_of(bp, ps, ps->k->rets[r], d);
            any |= d[r] >= 0;
        }
        if (any) {
            ps->donor = d;
            ps->input_donor = input_donor_ok(bp, s);
        } else {
            free(d);
        }
    }
}

/* --float-reassoc: every reduction with a float + or * folds by chunks
 * (set before the rewrites and fusion, which keep it). */
static void mark_chunked(Lowered *low)
{
    for (int i = 0; i < low->nsteps; i++) {
        LcuKernel *k = low->steps[i].kind == STEP_KERNEL ? low->steps[i].k : NULL;
        for (int j = 0; k && j < k->nsoacs; j++) {
            LcuSoac *s = k->soacs[j];
            if (s->kind != LS_REDUCE && s->kind != LS_SEG_REDUCE)
                continue;
            for (int r = 0; r < s->nres; r++)
                s->chunked |= vs_rop_chunks(s->rops[r]);
        }
    }
}

/* The fusion graph of the N lowered steps of LOW (NV variables; PRODUCER:
 * the step binding each, or -1; LIVE: live out of the block): a node per
 * step, an edge per (producer, consumer, variable). READS and BINDS are
 * scratch of NV + 8 entries. Free its arrays with free_fuse_graph. */
static void build_fuse_graph(const Dfg *g, const Lowered *low, BlockPlan *out, int n, int nv,
                             const int *producer, const unsigned char *live, int *reads, int *binds, FuseGraph *fgp)
{
    FuseGraph fg;
    memset(&fg, 0, sizeof fg);
    fg.nnodes = n;
    fg.nodes = vc_xcalloc((size_t)n, sizeof *fg.nodes);
    fg.narrays = nv;
    fg.live_out = vc_xcalloc((size_t)nv, sizeof *fg.live_out);
    fg.array_producer = vc_xcalloc((size_t)nv, sizeof *fg.array_producer);
    int capedges = 16;
    fg.edges = vc_xcalloc((size_t)capedges, sizeof *fg.edges);
    int last_rand = -1;
    for (int v = 0; v < nv; v++) {
        fg.live_out[v] = live[v];
        fg.array_producer[v] = producer[v];
    }
    for (int i = 0; i < n; i++) {
        FuseNode *fn = &fg.nodes[i];
        fn->kind = fuse_kind(&low->steps[i]);
        fn->seg = -1;
        fn->via_filter = -1;
        if (low->steps[i].kind == STEP_KERNEL) {
            const LcuSoac *s = low->steps[i].k->soacs[0];
            fn->shape = soac_shape_class(&out->shapes, s);
            /* A MAP over the class of length 1 is scalar code: a ONCE,
             * which may follow a reduction in the same kernel
             * (REDUCE-into-ONCE). */
            if (fn->kind == FK_MAP && fn->shape == shape_find(&out->shapes, out->shapes.one))
                fn->kind = FK_ONCE;
            if (s->shape.kind == LSH_SEG_N && s->kind != LS_MAP)
                fn->seg = s->shape.var;
            if ((s->kind == LS_SEG_REDUCE || s->kind == LS_SEG_FILTER) && s->shape.kind == LSH_SEG_N) {
                int f = producer[s->shape.var];
                if (f >= 0 && low->steps[f].kind == STEP_KERNEL && low->steps[f].k->soacs[0]->kind == LS_SEG_FILTER)
                    fn->via_filter = f;
            }
        } else {
            fn->shape = -1 - i;
        }
        int nr, nb;
        step_io(g, &low->steps[i], reads, &nr, binds, &nb);
        /* RAND streams keep their program order: each depends on the last. */
        int is_rand = low->steps[i].kind == STEP_KERNEL && low->steps[i].k->soacs[0]->kind == LS_LIB &&
                      low->steps[i].k->soacs[0]->lib == LL_RAND_STREAM;
        if (is_rand && last_rand >= 0)
            reads[nr++] = low->steps[last_rand].k->soacs[0]->res[0];
        int e0 = fg.nedges; /* this node's edges start here */
        for (int k = 0; k < nr; k++) {
            int v = reads[k], pr = producer[v];
            if (pr < 0 || pr >= i)
                continue;
            int dup = 0;
            for (int e = e0; e < fg.nedges && !dup; e++)
                dup = fg.edges[e].producer == pr && fg.edges[e].consumer == i && fg.edges[e].array == v;
            if (dup)
                continue;
            if (fg.nedges == capedges) {
                capedges *= 2;
                fg.edges = realloc(fg.edges, (size_t)capedges * sizeof *fg.edges);
                if (!fg.edges) {
                    fprintf(stderr, "vinterp: out of memory while planning\n");
                    exit(1);
                }
            }
            FuseEdge *e = &fg.edges[fg.nedges++];
            e->producer = pr;
            e->consumer = i;
            e->array = v;
            e->access = access_of(&out->shapes, &low->steps[i], v);
            if (fg.nodes[i].via_filter == pr && e->access == FA_OTHER) {
                /* the reduce reads the filtered data at i and iterates the filter's descriptor */
                const LcuSoac *f = low->steps[pr].k->soacs[0];
                if (v == f->res[f->nres - 1])
                    e->access = FA_ELEM;
            }
        }
        if (is_rand)
            last_rand = i;
    }
    *fgp = fg;
}

static void free_fuse_graph(FuseGraph *fg)
{
    free(fg->nodes);
    free(fg->edges);
    free(fg->live_out);
    free(fg->array_producer);
}

/* The shapes of G's values (shape.h); RAND streams: their length equals
 * the limit vector's. */
static void analyse_shapes(const Dfg *g, const Lowered *low, BlockPlan *out)
{
    int *extra = vc_xcalloc((size_t)(2 * low->nsteps + 1), sizeof *extra);
    int ne = 0;
    for (int i = 0; i < low->nsteps; i++)
        if (low->steps[i].kind == STEP_KERNEL && low->steps[i].k->soacs[0]->kind == LS_LIB &&
            low->steps[i].k->soacs[0]->lib == LL_RAND_STREAM) {
            extra[ne++] = SQ_LEN(low->steps[i].k->soacs[0]->res[0]);
            extra[ne++] = SQ_LEN(low->steps[i].k->soacs[0]->args[0]);
        }
    extra[ne] = -1;
    shape_analyse(g, out->nvars, extra, &out->shapes);
    free(extra);
}

/* The N steps by cluster (CLUSTER[i] < NCL), each cluster's in program
 * order: cluster c's are BY_CL[CL_FIRST[c] .. CL_FIRST[c + 1] - 1] (a
 * counting sort: a scan of all steps per cluster would be quadratic in
 * the block). */
static void cluster_order(const int *cluster, int n, int ncl, int **cl_first, int **by_cl)
{
    int *first = vc_xcalloc((size_t)ncl + 1, sizeof *first), *by = vc_xcalloc((size_t)n + 1, sizeof *by);
    for (int i = 0; i < n; i++)
        first[cluster[i] + 1]++;
    for (int c = 0; c < ncl; c++)
        first[c + 1] += first[c];
    int *at = vc_xcalloc((size_t)ncl + 1, sizeof *at);
    memcpy(at, first, ((size_t)ncl + 1) * sizeof *at);
    for (int i = 0; i < n; i++)
        by[at[cluster[i]]++] = i;
    free(at);
    *cl_first = first;
    *by_cl = by;
}

/* OUT's steps in cluster order: host steps as they are, each cluster's
 * kernels (taken from LOW) merged into one (rewrite.h); NEED: the values
 * read outside their cluster or live out. */
static void merge_clusters(BlockPlan *out, Lowered *low, unsigned char *need, int ncl, const int *cl_first,
                           const int *by_cl)
{
    int n = low->nsteps, nv = out->nvars;
    int *shape_class = vc_xcalloc((size_t)nv, sizeof *shape_class);
    for (int v = 0; v < nv; v++)
        shape_class[v] = shape_find(&out->shapes, SQ_LEN(v));
    unsigned char *mark = vc_xcalloc((size_t)nv, 1);
    RewriteCtx cx = { nv, out->types, need, shape_class, &low->nlocals, mark };
    out->steps = vc_xcalloc((size_t)n, sizeof *out->steps);
    LcuKernel **ks = vc_xcalloc((size_t)n, sizeof *ks);
    int kid = 0;
    for (int c = 0; c < ncl; c++) {
        int nk = 0, first = -1;
        for (int t = cl_first[c]; t < cl_first[c + 1]; t++) {
            int i = by_cl[t];
            if (low->steps[i].kind == STEP_HOST) {
                PlanStep *ps = &out->steps[out->nsteps++];
                ps->kind = STEP_HOST;
                ps->node = low->steps[i].node;
                continue;
            }
            if (first < 0)
                first = low->steps[i].node;
            ks[nk++] = low->steps[i].k;
            low->steps[i].k = NULL;
        }
        if (nk == 0)
            continue;
        PlanStep *ps = &out->steps[out->nsteps++];
        ps->kind = STEP_KERNEL;
        ps->node = first;
        if (nk == 1) {
            ps->k = ks[0];
            ps->k->id = kid++;
            lcu_kernel_finish(ps->k, need, nv);
        } else {
            ps->k = rewrite_cluster(ks, nk, kid++, &cx);
        }
        if (out->fused)
            scalar_maps_to_once(ps->k, &out->shapes);
        lcu_kernel_finish(ps->k, need, nv);
        out->kernels_fused++;
        out->arrays_fused += ps->k->nrets;
    }
    free(ks);
    free(mark);
    free(shape_class);
    if (!out->fused)
        out->arrays_fused = out->arrays_unfused;
}

/* Every kernel of OUT valid (lcu_validate.h)? 0, or -1 with MSG (and the
 * kernel on TRACE). */
static int validate_kernels(const BlockPlan *out, FILE *trace, char *msg, size_t msglen)
{
    for (int i = 0; i < out->nsteps; i++) {
        if (out->steps[i].kind != STEP_KERNEL)
            continue;
        char vm[300];
        if (lcu_validate_kernel(out->steps[i].k, out->types, out->nvars, vm, sizeof vm) < 0) {
            snprintf(msg, msglen, "invalid kernel K%d after fusion: %s", out->steps[i].k->id, vm);
            if (trace) {
                fprintf(trace, "-- INVALID: %s\n", msg);
                lcu_print_kernel(trace, out->steps[i].k, out->types);
            }
            return -1;
        }
    }
    return 0;
}

/* Release points: each variable after its last reading step, unless it is
 * live out (LIVE); inputs no step reads are dead on entry. READS and BINDS
 * are scratch of the values' size. */
static void place_releases(const Dfg *g, BlockPlan *out, const unsigned char *live, int *reads, int *binds)
{
    int nv = out->nvars;
    int *last = vc_xcalloc((size_t)nv, sizeof *last);
    for (int v = 0; v < nv; v++)
        last[v] = -1;
    for (int i = 0; i < out->nsteps; i++) {
        PlanStep *ps = &out->steps[i];
        int nr = 0, nb = 0;
        LowStep tmp = { ps->kind, ps->node, ps->k };
        step_io(g, &tmp, reads, &nr, binds, &nb);
        for (int k = 0; k < nr; k++)
            last[reads[k]] = i;
        for (int k = 0; k < nb; k++)
            if (last[binds[k]] < i)
                last[binds[k]] = i;
    }
    for (int v = 0; v < g->nin && v < nv; v++)
        if (!live[v] && last[v] < 0) {
            out->dead_in = vc_xrealloc(out->dead_in, (size_t)(out->ndead_in + 1) * sizeof *out->dead_in);
            out->dead_in[out->ndead_in++] = v;
        }
    for (int v = 0; v < nv; v++) {
        if (live[v] || last[v] < 0)
            continue;
        PlanStep *ps = &out->steps[last[v]];
        ps->release = vc_xrealloc(ps->release, (size_t)(ps->nrelease + 1) * sizeof *ps->release);
        ps->release[ps->nrelease++] = v;
    }
    free(last);
}

/* -d plan: the schedule, its clusters and the steps of the plan. */
static void trace_plan(FILE *trace, const Program *p, const Dfg *g, const BlockPlan *out, int ncl,
                       const int *cl_first, const int *by_cl)
{
    if (out->fused) {
        fprintf(trace, "-- schedule: %d clusters%s%s%s; ILP %d variables, %d constraints, objective %g, %.3f ms\n",
                out->fr.nclusters, out->fr.fell_back ? " (greedy fallback: " : "",
                out->fr.fell_back && out->fr.why ? out->fr.why : "", out->fr.fell_back ? ")" : "", out->fr.nvars,
                out->fr.nconstraints, out->fr.objective, out->fr.seconds * 1e3);
        fprintf(trace, "-- clusters:");
        for (int c = 0; c < ncl; c++) {
            fprintf(trace, " {");
            for (int t = cl_first[c]; t < cl_first[c + 1]; t++)
                fprintf(trace, t > cl_first[c] ? " %d" : "%d", by_cl[t]);
            fprintf(trace, "}");
        }
        fputc('\n', trace);
    }
    fprintf(trace, "-- %s (%d kernels, %d arrays materialised; unfused %d, %d)\n", out->fused ? "fused" : "plan",
            out->kernels_fused, out->arrays_fused, out->kernels_unfused, out->arrays_unfused);
    for (int i = 0; i < out->nsteps; i++) {
        LowStep tmp = { out->steps[i].kind, out->steps[i].node, out->steps[i].k };
        print_steps(trace, p, g, &tmp, 1, out->types);
    }
}

int plan_build(const Program *p, const Block *b, const PlanOptions *opt, BlockPlan *out,
               char *msg, size_t msglen)
{
    double t0 = now();
    memset(out, 0, sizeof *out);
    out->blk = *b;
    if (dfg_build(p, b, &out->dfg) < 0) {
        snprintf(msg, msglen, "no dataflow graph (type conflict or bad stack operands)");
        return -1;
    }
    Dfg *g = &out->dfg;
    Lowered low;
    if (lower_block(p, g, &low, msg, msglen) < 0) {
        dfg_free(g);
        return -1;
    }
    if (opt->float_reassoc)
        mark_chunked(&low);
    out->nvars = low.nvars;
    out->types = low.types;
    out->typed = low.typed;
    low.types = NULL;
    low.typed = NULL;
    analyse_shapes(g, &low, out);
    for (int i = 0; i < low.nsteps; i++)
        if (low.steps[i].k)
            lcu_kernel_finish(low.steps[i].k, NULL, out->nvars);

    int n = low.nsteps, nv = out->nvars;
    int *cluster = vc_xcalloc((size_t)n, sizeof *cluster);
    int *producer = vc_xcalloc((size_t)nv, sizeof *producer);
    for (int v = 0; v < nv; v++)
        producer[v] = -1;
    int *reads = vc_xcalloc((size_t)nv + 8, sizeof *reads), *binds = vc_xcalloc((size_t)nv + 8, sizeof *binds);
    for (int i = 0; i < n; i++) {
        int nr, nb;
        step_io(g, &low.steps[i], reads, &nr, binds, &nb);
        for (int k = 0; k < nb; k++)
            producer[binds[k]] = i;
    }
    unsigned char *live = vc_xcalloc((size_t)nv, 1);
    for (int i = 0; i < g->nout; i++)
        live[g->out[i]] = 1;
    out->kernels_unfused = low.nkernels;
    for (int i = 0; i < n; i++)
        if (low.steps[i].kind == STEP_KERNEL)
            for (int s = 0; s < low.steps[i].k->nsoacs; s++)
                out->arrays_unfused += low.steps[i].k->soacs[s]->nres;

    if (opt->trace) {
        print_lines(opt->trace, p, b);
        fprintf(opt->trace, "-- unfused (%d kernels)\n", low.nkernels);
        print_steps(opt->trace, p, g, low.steps, n, out->types);
    }

    if (opt->fusion && low.nkernels > 1) {
        FuseGraph fg;
        build_fuse_graph(g, &low, out, n, nv, producer, live, reads, binds, &fg);
        FuseOptions fo = opt->fuse;
        fo.trace = opt->trace;
        fuse_schedule(&fg, &fo, cluster, &out->fr);
        free_fuse_graph(&fg);
        out->fused = 1;
    } else {
        for (int i = 0; i < n; i++)
            cluster[i] = i;
    }
    /* Host steps and library kernels stay on their own. */
    int ncl = 0;
    for (int i = 0; i < n; i++)
        if (cluster[i] + 1 > ncl)
            ncl = cluster[i] + 1;
    /* need[v]: read by a step of another cluster, or live out. */
    unsigned char *need = vc_xcalloc((size_t)nv, 1);
    for (int v = 0; v < nv; v++)
        need[v] = live[v];
    for (int i = 0; i < n; i++) {
        int nr, nb;
        step_io(g, &low.steps[i], reads, &nr, binds, &nb);
        for (int k = 0; k < nr; k++) {
            int pr = producer[reads[k]];
            if (pr >= 0 && (cluster[pr] != cluster[i] || low.steps[i].kind == STEP_HOST))
                need[reads[k]] = 1;
        }
    }
    /* The steps of each cluster, in program order; each cluster's kernels
     * merged into one. */
    int *cl_first = NULL, *by_cl = NULL;
    cluster_order(cluster, n, ncl, &cl_first, &by_cl);
    merge_clusters(out, &low, need, ncl, cl_first, by_cl);
    int rc = validate_kernels(out, opt->trace, msg, msglen);
    if (rc < 0)
        goto done;
    place_releases(g, out, live, reads, binds);
    plan_donors(out);
    if (opt->trace)
        trace_plan(opt->trace, p, g, out, ncl, cl_first, by_cl);
done:
    free(cl_first);
    free(by_cl);
    free(cluster);
    free(producer);
    free(reads);
    free(binds);
    free(live);
    free(need);
    lowered_free(&low);
    if (rc < 0) {
        plan_free(out);
        return -1;
    }
    out->translate_seconds = now() - t0;
    return 0;
}

void plan_free(BlockPlan *bp)
{
    for (int i = 0; i < bp->nsteps; i++) {
        if (bp->steps[i].k)
            lcu_kernel_free(bp->steps[i].k);
        free(bp->steps[i].release);
        free(bp->steps[i].donor);
    }
    free(bp->steps);
    free(bp->dead_in);
    free(bp->types);
    free(bp->typed);
    shape_free(&bp->shapes);
    dfg_free(&bp->dfg);
    memset(bp, 0, sizeof *bp);
}

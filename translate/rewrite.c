/* translate/rewrite.c — see rewrite.h. */
#include "translate/rewrite.h"
#include "vcode/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

LcuExpr *rewrite_rop_identity(VsRop r)
{
    switch (r) {
    case VS_FADD: case VS_FMUL: case VS_FMAX: case VS_FMIN: return lcu_float(vs_rop_fident(r));
    case VS_BAND: case VS_BOR: case VS_BXOR: return lcu_bool(vs_rop_iident(r));
    default: return lcu_int(vs_rop_iident(r));
    }
}

/* ---- expression utilities ---------------------------------------------- */

/* Does E read VAR other than as VAR[i]? Does it read VAR[i]? */
static void scan_reads(const LcuExpr *e, int var, int *elem, int *other)
{
    if (!e)
        return;
    if (e->kind == LE_SUB && e->var == var) {
        if (e->nkids == 1 && e->kids[0]->kind == LE_INDEX)
            *elem = 1;
        else
            *other = 1;
    } else if ((e->kind == LE_LEN || e->kind == LE_SEG_OF || e->kind == LE_SEG_START ||
                e->kind == LE_SEG_LEN || e->kind == LE_SEG_COUNT) && e->var == var) {
        *other = 1;
    }
    for (int k = 0; k < e->nkids; k++)
        scan_reads(e->kids[k], var, elem, other);
}

static int thunk_reads_var(const LcuThunk *t, int var)
{
    if (!t)
        return 0;
    for (int k = 0; k < t->nusing; k++)
        if (t->using[k] == var)
            return 1;
    return 0;
}

static int soac_reads_var(const LcuSoac *s, int var)
{
    if (thunk_reads_var(s->pull, var) || thunk_reads_var(s->idx, var) || thunk_reads_var(s->pred, var))
        return 1;
    if (s->shape.kind != LSH_ONE && s->shape.var == var)
        return 1;
    if (s->kind == LS_SEG_PERMUTE) {
        if (s->dst_sd == var)
            return 1;
        for (int r = 0; r < s->nres; r++)
            if (s->dflt[r] == var)
                return 1;
    }
    if (s->kind == LS_LIB)
        for (int a = 0; a < s->nargs; a++)
            if (s->args[a] == var)
                return 1;
    return 0;
}

/* soac_reads_var for any variable with mark[v] set. */
static int soac_reads_marked(const LcuSoac *s, const unsigned char *mark, int nvars)
{
#define MARKED(v) ((v) >= 0 && (v) < nvars && mark[(v)])
    const LcuThunk *ths[3] = { s->pull, s->idx, s->pred };
    for (int t = 0; t < 3; t++)
        if (ths[t])
            for (int k = 0; k < ths[t]->nusing; k++)
                if (MARKED(ths[t]->using[k]))
                    return 1;
    if (s->shape.kind != LSH_ONE && MARKED(s->shape.var))
        return 1;
    if (s->kind == LS_SEG_PERMUTE) {
        if (MARKED(s->dst_sd))
            return 1;
        for (int r = 0; r < s->nres; r++)
            if (MARKED(s->dflt[r]))
                return 1;
    }
    if (s->kind == LS_LIB)
        for (int a = 0; a < s->nargs; a++)
            if (MARKED(s->args[a]))
                return 1;
    return 0;
#undef MARKED
}

static void mark_results(const LcuSoac *s, unsigned char *mark, int nvars, unsigned char on)
{
    for (int r = 0; r < s->nres; r++)
        if (s->res[r] >= 0 && s->res[r] < nvars)
            mark[s->res[r]] = on;
}

/* Replace every VAR[i] in E by the local T (of type TY). Returns E. */
static LcuExpr *subst_elem(LcuExpr *e, int var, int t, VsElem ty)
{
    if (e->kind == LE_SUB && e->var == var && e->nkids == 1 && e->kids[0]->kind == LE_INDEX) {
        lcu_expr_free(e);
        return lcu_local(t, ty);
    }
    for (int k = 0; k < e->nkids; k++)
        e->kids[k] = subst_elem(e->kids[k], var, t, ty);
    return e;
}


static int count_elem(const LcuExpr *e, int var)
{
    int n = e->kind == LE_SUB && e->var == var && e->nkids == 1 && e->kids[0]->kind == LE_INDEX;
    for (int k = 0; k < e->nkids; k++)
        n += count_elem(e->kids[k], var);
    return n;
}

/* Cheap enough to repeat: literals, i, locals, x[i]. */
static int atomic(const LcuExpr *e)
{
    switch (e->kind) {
    case LE_INT: case LE_FLOAT: case LE_BOOL: case LE_INDEX: case LE_LOCAL:
        return 1;
    case LE_SUB:
        return e->kids[0]->kind == LE_INDEX;
    default:
        return 0;
    }
}

/* Replace every VAR[i] in E by a copy of VALUE. */
static LcuExpr *subst_copy(LcuExpr *e, int var, const LcuExpr *value)
{
    if (e->kind == LE_SUB && e->var == var && e->nkids == 1 && e->kids[0]->kind == LE_INDEX) {
        lcu_expr_free(e);
        return lcu_expr_copy(value);
    }
    for (int k = 0; k < e->nkids; k++)
        e->kids[k] = subst_copy(e->kids[k], var, value);
    return e;
}

/* In BODY (one item, not a tuple): replace VAR[i] by VALUE — directly when
 * VALUE is atomic or used once, else through a let of a fresh local (so
 * it is computed once). Expressions are pure and the locals of VALUE are
 * unique to it, so moving it cannot capture anything. */
static LcuExpr *inline_item(LcuExpr *body, int var, const LcuExpr *value, VsElem ty, int *nlocals)
{
    int uses = count_elem(body, var);
    if (uses == 0)
        return body;
    if (uses == 1 || atomic(value))
        return subst_copy(body, var, value);
    int t = (*nlocals)++;
    body = subst_elem(body, var, t, ty);
    return lcu_let(t, lcu_expr_copy(value), body);
}

/* The I-th item of a thunk body (the body itself when arity is 1). */
static LcuExpr **item_ref(LcuThunk *th, int i)
{
    if (th->arity > 1 && th->body->kind == LE_TUPLE)
        return &th->body->kids[i];
    return &th->body;
}

static int expr_size(const LcuExpr *e)
{
    int n = 1;
    for (int k = 0; k < e->nkids; k++)
        n += expr_size(e->kids[k]);
    return n;
}

/* A thunk body may grow to this many nodes by substitution; beyond it the
 * producer stays a SOAC of its own in the kernel. Substituting into both
 * arms of a diamond copies the producer twice, so a chain of diamonds
 * would otherwise grow exponentially. */
#define MAX_THUNK_NODES 2000

static int thunk_size(const LcuThunk *t) { return t ? expr_size(t->body) : 0; }

/* Substitute VAR[i] := VALUE in every item of thunk TH. */
static void inline_into_thunk(LcuThunk *th, int var, const LcuExpr *value, VsElem ty, int *nlocals)
{
    if (!th || !thunk_reads_var(th, var))
        return;
    for (int i = 0; i < th->arity; i++) {
        LcuExpr **it = item_ref(th, i);
        *it = inline_item(*it, var, value, ty, nlocals);
    }
    lcu_thunk_recompute_using(th);
}

/* Does SOAC S read VAR only as VAR[i] (in its thunks), and not through its
 * shape, descriptors or library arguments? */
static int reads_only_elem(const LcuSoac *s, int var)
{
    int elem = 0, other = 0;
    const LcuThunk *ths[3] = { s->pull, s->idx, s->pred };
    for (int k = 0; k < 3; k++)
        if (ths[k])
            scan_reads(ths[k]->body, var, &elem, &other);
    if (other)
        return 0;
    /* #var as the shape is fine: the substitution takes the producer's */
    if (s->shape.kind != LSH_ONE && s->shape.kind != LSH_LEN && s->shape.var == var)
        return 0;
    if (s->kind == LS_LIB)
        return 0;
    if (s->kind == LS_SEG_PERMUTE) {
        if (s->dst_sd == var)
            return 0;
        for (int r = 0; r < s->nres; r++)
            if (s->dflt[r] == var)
                return 0;
    }
    return 1;
}

/* ---- the cluster -------------------------------------------------------- */

typedef struct {
    LcuSoac **s;
    int n;
    /* per SOAC: a SOAC that can fail (lcu_soac_may_fail) substituted into a
     * consumer that evaluates it at every one of its indices: the
     * consumer fails where it does, and it may go when dead */
    unsigned char *covered;
} SoacList;

static void drop(SoacList *l, int i)
{
    lcu_soac_free(l->s[i]);
    memmove(l->s + i, l->s + i + 1, (size_t)(l->n - i - 1) * sizeof *l->s);
    memmove(l->covered + i, l->covered + i + 1, (size_t)(l->n - i - 1));
    l->n--;
}

static int used_later(const SoacList *l, int from, int var)
{
    for (int j = from; j < l->n; j++)
        if (soac_reads_var(l->s[j], var))
            return 1;
    return 0;
}

/* SOAC I's results unused: it may go, unless it can fail where the
 * reference would (a division by zero whose quotient is popped still stops
 * the run) and no consumer evaluates its code at each of its indices. */
static int results_dead(const SoacList *l, int i, const RewriteCtx *cx)
{
    const LcuSoac *s = l->s[i];
    if (!l->covered[i] && lcu_soac_may_fail(s))
        return 0;
    for (int r = 0; r < s->nres; r++)
        if (cx->need[s->res[r]] || used_later(l, i + 1, s->res[r]))
            return 0;
    return 1;
}

/* Is some read of VAR in E under an IF's branch (evaluated for some
 * indices only)? */
static int read_conditional(const LcuExpr *e, int var, int under_if)
{
    if (!e)
        return 0;
    if (e->kind == LE_SUB && e->var == var && under_if)
        return 1;
    for (int k = 0; k < e->nkids; k++)
        if (read_conditional(e->kids[k], var, under_if || (e->kind == LE_IF && k > 0)))
            return 1;
    return 0;
}

/* Does B evaluate every read of VAR at each of its indices (so that what
 * is substituted for VAR fails in B wherever it would fail on its own)?
 * Not a permute's pull (only the winning source evaluates it), nor a
 * filter's (the kept elements may be the only ones), nor a read under an
 * IF's branch. */
static int evaluates_everywhere(const LcuSoac *b, int var)
{
    switch (b->kind) {
    case LS_MAP: case LS_ONCE: case LS_REDUCE: case LS_SCAN: case LS_SEG_REDUCE: case LS_SEG_SCAN:
        break;
    case LS_PERMUTE: case LS_SEG_PERMUTE: case LS_FILTER: case LS_PARTITION: case LS_SEG_FILTER:
        if (b->pull && thunk_reads_var(b->pull, var))
            return 0;
        break;
    default:
        return 0;
    }
    const LcuThunk *t[3] = { b->pull, b->idx, b->pred };
    for (int k = 0; k < 3; k++)
        if (t[k] && read_conditional(t[k]->body, var, 0))
            return 0;
    return 1;
}

/* MAP-into-consumer: substitute every single-result MAP into the later
 * SOACs that read its result element-wise. A MAP that can fail is only
 * substituted into consumers that evaluate it everywhere (and it stays,
 * so that it fails, when no such consumer takes it). */
static void vertical_maps(SoacList *l, const RewriteCtx *cx)
{
    for (int i = 0; i < l->n; i++) {
        LcuSoac *a = l->s[i];
        if (a->kind != LS_MAP || a->nres != 1)
            continue;
        int v = a->res[0];
        VsElem ty = cx->types[v].base;
        int fails = lcu_soac_may_fail(a);
        for (int j = i + 1; j < l->n; j++) {
            LcuSoac *b = l->s[j];
            if (!soac_reads_var(b, v) || !reads_only_elem(b, v))
                continue;
            if (fails && !evaluates_everywhere(b, v))
                continue;
            int grow = expr_size(a->pull->body) * (b->pull ? b->pull->arity : 1);
            if (thunk_size(b->pull) + thunk_size(b->idx) + thunk_size(b->pred) + 3 * grow > MAX_THUNK_NODES)
                continue;
            inline_into_thunk(b->pull, v, a->pull->body, ty, cx->nlocals);
            inline_into_thunk(b->idx, v, a->pull->body, ty, cx->nlocals);
            inline_into_thunk(b->pred, v, a->pull->body, ty, cx->nlocals);
            if (b->shape.kind == LSH_LEN && b->shape.var == v)
                b->shape = a->shape;    /* the same length, not read through v */
            if (fails)
                l->covered[i] = 1;
        }
    }
}

static int rop_filter_safe(VsRop r)
{
    /* Adding the identity for filtered-out elements is exact for these;
     * float MAX/MIN differ from skipping when a NaN is involved. */
    return r != VS_FMAX && r != VS_FMIN;
}

/* Does E use the index i other than in an element F-data[i] of the data
 * results of filter F? Moved from F's output space to its input space, a
 * consumer keeps its meaning only when i reaches nothing else: another
 * array of the filtered length (the output of another filter, say) read at
 * i, or a segment helper at i, would be read at the wrong position. */
static int index_outside_filter(const LcuExpr *e, const LcuSoac *f)
{
    if (!e)
        return 0;
    if (e->kind == LE_INDEX)
        return 1;
    if (e->kind == LE_SUB && e->nkids == 1 && e->kids[0] && e->kids[0]->kind == LE_INDEX) {
        for (int d = 0; d < f->nres - 1; d++)
            if (f->res[d] == e->var)
                return 0;
        return 1;
    }
    for (int k = 0; k < e->nkids; k++)
        if (index_outside_filter(e->kids[k], f))
            return 1;
    return 0;
}

/* Does thunk T read the outputs of filter F only element-wise, and not F's
 * descriptor? */
static int reads_filter_elemwise(const LcuThunk *t, const LcuSoac *f)
{
    if (!t)
        return 1;
    int nsd = f->res[f->nres - 1];
    for (int u = 0; u < t->nusing; u++)
        if (t->using[u] == nsd)
            return 0;
    for (int d = 0; d < f->nres - 1; d++) {
        int elem = 0, other = 0;
        scan_reads(t->body, f->res[d], &elem, &other);
        if (other)
            return 0;
    }
    return 1;
}

/* Replace the filter's outputs read at i in thunk T by the filter's
 * element expressions (T then iterates over the filter's input). */
static void absorb_filter_outputs(LcuThunk *t, const LcuSoac *f, const RewriteCtx *cx)
{
    for (int d = 0; d < f->nres - 1; d++)
        inline_into_thunk(t, f->res[d], *item_ref(f->pull, d), cx->types[f->res[d]].base, cx->nlocals);
}

/* FILTER-REDUCE: a SEG_REDUCE over a SEG_FILTER's output descriptor that
 * reads the filtered arrays element-wise becomes a SEG_REDUCE over the
 * filter's input, with the identity where the filter drops an element. */
static void filter_reduce(SoacList *l, const RewriteCtx *cx)
{
    for (int i = 0; i < l->n; i++) {
        LcuSoac *f = l->s[i];
        if (f->kind != LS_SEG_FILTER)
            continue;
        int nsd = f->res[f->nres - 1];
        for (int j = i + 1; j < l->n; j++) {
            LcuSoac *r = l->s[j];
            if (r->kind != LS_SEG_REDUCE || r->shape.kind != LSH_SEG_N || r->shape.var != nsd)
                continue;
            int ok = !r->chunked; /* its chunks are runs of the kept elements */
            for (int q = 0; q < r->nres && ok; q++)
                ok = rop_filter_safe(r->rops[q]);
            if (!ok || !reads_filter_elemwise(r->pull, f) || index_outside_filter(r->pull->body, f))
                continue;
            absorb_filter_outputs(r->pull, f, cx);
            for (int q = 0; q < r->nres; q++) {
                LcuExpr **it = item_ref(r->pull, q);
                *it = lcu_if(lcu_expr_copy(f->pred->body), *it, rewrite_rop_identity(r->rops[q]));
            }
            lcu_thunk_recompute_using(r->pull);
            r->shape = f->shape;
        }
    }
}

/* FILTER-FILTER: a SEG_FILTER over another's output keeps an element when
 * both predicates hold, and is computed over the first one's input. */
static void filter_filter(SoacList *l, const RewriteCtx *cx)
{
    for (int i = 0; i < l->n; i++) {
        LcuSoac *f = l->s[i];
        if (f->kind != LS_SEG_FILTER)
            continue;
        int nsd = f->res[f->nres - 1];
        for (int j = i + 1; j < l->n; j++) {
            LcuSoac *g = l->s[j];
            if (g->kind != LS_SEG_FILTER || g->shape.kind != LSH_SEG_N || g->shape.var != nsd)
                continue;
            if (!reads_filter_elemwise(g->pull, f) || !reads_filter_elemwise(g->pred, f))
                continue;
            if (index_outside_filter(g->pull->body, f) || index_outside_filter(g->pred->body, f))
                continue;
            absorb_filter_outputs(g->pull, f, cx);
            absorb_filter_outputs(g->pred, f, cx);
            LcuExpr *both = lcu_prim2(LP_AND, VS_BOOL, lcu_expr_copy(f->pred->body), g->pred->body);
            g->pred->body = both;
            lcu_thunk_recompute_using(g->pred);
            g->shape = f->shape;
        }
    }
}

static int same_shape(const LcuSoac *a, const LcuSoac *b, const RewriteCtx *cx)
{
    if (a->shape.kind != b->shape.kind)
        return 0;
    if (a->shape.var == b->shape.var)
        return 1;
    /* equal length classes iterate over the same space */
    if (a->kind == LS_MAP && a->shape.kind == LSH_LEN)
        return cx->shape_class[a->shape.var] == cx->shape_class[b->shape.var];
    return 0;
}

/* Append B's items to A's thunk (making a tuple). */
static void append_items(LcuThunk **pa, LcuThunk *b)
{
    LcuThunk *a = *pa;
    int n = a->arity + b->arity;
    LcuExpr **items = vc_xrealloc(NULL, (size_t)n * sizeof *items);
    for (int i = 0; i < a->arity; i++) {
        LcuExpr **it = item_ref(a, i);
        items[i] = *it;
        *it = NULL;
    }
    for (int i = 0; i < b->arity; i++) {
        LcuExpr **it = item_ref(b, i);
        items[a->arity + i] = *it;
        *it = NULL;
    }
    /* the old containers are now empty shells */
    if (a->arity > 1 && a->body)
        a->body->nkids = 0;
    if (b->arity > 1 && b->body)
        b->body->nkids = 0;
    LcuThunk *t = lcu_thunk(lcu_tuple(n, items), n);
    free(items);
    lcu_thunk_free(a);
    *pa = t;
}

/* Horizontal merge of same-kind SOACs over the same space, when the later
 * one does not depend on anything bound from the earlier one onwards. The
 * variables bound from a onwards are kept marked in cx->mark, so a merge
 * test costs what b reads, not the SOACs in between (quadratic in the
 * cluster, not cubic). */
static void horizontal(SoacList *l, const RewriteCtx *cx)
{
    unsigned char *mark = cx->mark;
    int nv = cx->nvars;
    for (int i = 0; i < l->n; i++) {
        LcuSoac *a = l->s[i];
        if (a->kind != LS_MAP && a->kind != LS_SEG_REDUCE && a->kind != LS_SEG_SCAN)
            continue;
        mark_results(a, mark, nv, 1);
        for (int j = i + 1; j < l->n; j++) {
            LcuSoac *b = l->s[j];
            if (b->kind != a->kind || !same_shape(a, b, cx) || a->nres + b->nres > LCU_MAXRES ||
                soac_reads_marked(b, mark, nv)) {
                mark_results(b, mark, nv, 1);
                continue;
            }
            append_items(&a->pull, b->pull);
            for (int r = 0; r < b->nres; r++) {
                a->res[a->nres] = b->res[r];
                a->rops[a->nres] = b->rops[r];
                a->nres++;
            }
            mark_results(b, mark, nv, 1);
            lcu_thunk_free(b->pull);
            b->pull = NULL;
            b->nres = 0;
            lcu_soac_free(b);
            memmove(l->s + j, l->s + j + 1, (size_t)(l->n - j - 1) * sizeof *l->s);
            memmove(l->covered + j, l->covered + j + 1, (size_t)(l->n - j - 1));
            l->n--;
            j--;
        }
        for (int j = i; j < l->n; j++)
            mark_results(l->s[j], mark, nv, 0);
    }
}

LcuKernel *rewrite_cluster(LcuKernel **kernels, int n, int id, const RewriteCtx *cx)
{
    SoacList l;
    l.n = 0;
    l.s = vc_xrealloc(NULL, (size_t)(n * 2 + 1) * sizeof *l.s);
    l.covered = vc_xrealloc(NULL, (size_t)(n * 2 + 1));
    memset(l.covered, 0, (size_t)(n * 2 + 1));
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < kernels[k]->nsoacs; i++)
            l.s[l.n++] = kernels[k]->soacs[i];
        kernels[k]->nsoacs = 0;
        lcu_kernel_free(kernels[k]);
    }
    if (l.n > 1) {
        vertical_maps(&l, cx);
        filter_filter(&l, cx);
        filter_reduce(&l, cx);
        /* remove what the substitutions made dead, last first */
        for (int i = l.n - 1; i >= 0; i--)
            if (l.s[i]->kind != LS_LIB && results_dead(&l, i, cx))
                drop(&l, i);
        horizontal(&l, cx);
    }
    LcuKernel *k = lcu_kernel_new(id);
    for (int i = 0; i < l.n; i++)
        lcu_kernel_add(k, l.s[i]);
    free(l.s);
    free(l.covered);
    lcu_kernel_finish(k, cx->need, cx->nvars);
    return k;
}

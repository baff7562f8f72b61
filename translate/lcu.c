/* translate/lcu.c — construction, copying and freeing of λcu trees, kernel
 * parameter/result computation, and the name tables (see translate/lcu.h).
 *
 * Self-contained: depends only on the C library, so that tests and tools
 * can link it without the interpreter. Allocation failure is fatal
 * ("vinterp: out of memory", exit status 1). */
#include "translate/lcu.h"
#include "vcode/xalloc.h"
#include "translate/lcu_prims.h"

#include <stdlib.h>
#include <string.h>


/* A growable int list. */
typedef struct {
    int n, cap;
    int *v;
} IntList;

static void il_push(IntList *l, int x)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->v = vc_xrealloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    l->v[l->n++] = x;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Sort and remove duplicates in place. */
static void il_sort_unique(IntList *l)
{
    if (l->n < 2)
        return;
    qsort(l->v, (size_t)l->n, sizeof *l->v, cmp_int);
    int w = 1;
    for (int r = 1; r < l->n; r++)
        if (l->v[r] != l->v[w - 1])
            l->v[w++] = l->v[r];
    l->n = w;
}

/* ---- expressions ------------------------------------------------------ */

static LcuExpr *node(LcuExprKind k, VsElem type, int nkids)
{
    LcuExpr *e = vc_xcalloc(1, sizeof *e);
    e->kind = k;
    e->type = type;
    e->var = -1;
    e->local = -1;
    e->nkids = nkids;
    e->kids = nkids > 0 ? vc_xcalloc((size_t)nkids, sizeof *e->kids) : NULL;
    return e;
}

LcuExpr *lcu_int(int32_t v)
{
    LcuExpr *e = node(LE_INT, VS_INT, 0);
    e->ival = v;
    return e;
}

LcuExpr *lcu_float(double v)
{
    LcuExpr *e = node(LE_FLOAT, VS_FLOAT, 0);
    e->fval = v;
    return e;
}

LcuExpr *lcu_bool(int v)
{
    LcuExpr *e = node(LE_BOOL, VS_BOOL, 0);
    e->ival = v != 0;
    return e;
}

LcuExpr *lcu_index(void)
{
    return node(LE_INDEX, VS_INT, 0);
}

LcuExpr *lcu_local(int local, VsElem type)
{
    LcuExpr *e = node(LE_LOCAL, type, 0);
    e->local = local;
    return e;
}

LcuExpr *lcu_sub(int var, VsElem elem, LcuExpr *at)
{
    LcuExpr *e = node(LE_SUB, elem, 1);
    e->var = var;
    e->kids[0] = at;
    return e;
}

LcuExpr *lcu_len(int var)
{
    LcuExpr *e = node(LE_LEN, VS_INT, 0);
    e->var = var;
    return e;
}

/* The result type of prim P given TYPE. TYPE may be the operand type or
 * the result type: the two coincide for the prims whose result type
 * depends on it (arithmetic, shifts, and/or/xor, not, neg); every other
 * prim has a fixed result type. */
VsElem lcu_prim_result(LcuPrim p, VsElem t)
{
    switch ((unsigned)p < LP_COUNT ? lcu_prims[p].result : LPR_OPERAND) {
    case LPR_INT: return VS_INT;
    case LPR_BOOL: return VS_BOOL;
    case LPR_FLOAT: return VS_FLOAT;
    default: return t;  /* arithmetic, shifts, logic, NOT, NEG */
    }
}

LcuExpr *lcu_prim1(LcuPrim p, VsElem type, LcuExpr *a)
{
    LcuExpr *e = node(LE_PRIM, lcu_prim_result(p, type), 1);
    e->prim = p;
    e->kids[0] = a;
    return e;
}

LcuExpr *lcu_prim2(LcuPrim p, VsElem type, LcuExpr *a, LcuExpr *b)
{
    LcuExpr *e = node(LE_PRIM, lcu_prim_result(p, type), 2);
    e->prim = p;
    e->kids[0] = a;
    e->kids[1] = b;
    return e;
}

LcuExpr *lcu_if(LcuExpr *c, LcuExpr *t, LcuExpr *f)
{
    LcuExpr *e = node(LE_IF, t ? t->type : VS_INT, 3);
    e->kids[0] = c;
    e->kids[1] = t;
    e->kids[2] = f;
    return e;
}

LcuExpr *lcu_let(int local, LcuExpr *value, LcuExpr *body)
{
    LcuExpr *e = node(LE_LET, body ? body->type : VS_INT, 2);
    e->local = local;
    e->kids[0] = value;
    e->kids[1] = body;
    return e;
}

LcuExpr *lcu_tuple(int n, LcuExpr **items)
{
    LcuExpr *e = node(LE_TUPLE, n > 0 && items[0] ? items[0]->type : VS_INT, n);
    for (int i = 0; i < n; i++)
        e->kids[i] = items[i];
    return e;
}

LcuExpr *lcu_seg(LcuExprKind k, int sd, LcuExpr *arg)
{
    LcuExpr *e = node(k, VS_INT, arg ? 1 : 0);
    e->var = sd;
    if (arg)
        e->kids[0] = arg;
    return e;
}

LcuExpr *lcu_expr_copy(const LcuExpr *e)
{
    if (!e)
        return NULL;
    LcuExpr *c = vc_xcalloc(1, sizeof *c);
    *c = *e;
    c->kids = e->nkids > 0 ? vc_xcalloc((size_t)e->nkids, sizeof *c->kids) : NULL;
    for (int i = 0; i < e->nkids; i++)
        c->kids[i] = lcu_expr_copy(e->kids[i]);
    return c;
}

void lcu_expr_free(LcuExpr *e)
{
    if (!e)
        return;
    for (int i = 0; i < e->nkids; i++)
        lcu_expr_free(e->kids[i]);
    free(e->kids);
    free(e);
}

/* ---- thunks ----------------------------------------------------------- */

static void collect_vars(const LcuExpr *e, IntList *out)
{
    if (!e)
        return;
    switch (e->kind) {
    case LE_SUB: case LE_LEN:
    case LE_SEG_OF: case LE_SEG_START: case LE_SEG_LEN: case LE_SEG_COUNT:
        il_push(out, e->var);
        break;
    default:
        break;
    }
    for (int i = 0; i < e->nkids; i++)
        collect_vars(e->kids[i], out);
}

LcuThunk *lcu_thunk(LcuExpr *body, int arity)
{
    LcuThunk *t = vc_xcalloc(1, sizeof *t);
    t->body = body;
    t->arity = arity;
    lcu_thunk_recompute_using(t);
    return t;
}

void lcu_thunk_recompute_using(LcuThunk *t)
{
    IntList l = {0, 0, NULL};
    collect_vars(t->body, &l);
    il_sort_unique(&l);
    free(t->using);
    t->nusing = l.n;
    t->using = l.v;
    if (!t->using)
        t->nusing = 0;
}

LcuThunk *lcu_thunk_copy(const LcuThunk *t)
{
    if (!t)
        return NULL;
    LcuThunk *c = vc_xcalloc(1, sizeof *c);
    c->body = lcu_expr_copy(t->body);
    c->arity = t->arity;
    c->nusing = t->nusing;
    if (t->nusing > 0) {
        c->using = vc_xcalloc((size_t)t->nusing, sizeof *c->using);
        memcpy(c->using, t->using, (size_t)t->nusing * sizeof *c->using);
    }
    return c;
}

void lcu_thunk_free(LcuThunk *t)
{
    if (!t)
        return;
    lcu_expr_free(t->body);
    free(t->using);
    free(t);
}

/* ---- SOACs and kernels -------------------------------------------------- */

LcuSoac *lcu_soac_new(LcuSoacKind kind)
{
    LcuSoac *s = vc_xcalloc(1, sizeof *s);
    s->kind = kind;
    s->dst_sd = -1;
    for (int r = 0; r < LCU_MAXRES; r++)
        s->dflt[r] = -1;
    /* An unset shape names no variable, so that forgetting to set it is a
     * validation error rather than a silent read of x0. ONCE and LIB have
     * no iteration space. */
    s->shape.kind = (kind == LS_ONCE || kind == LS_LIB) ? LSH_ONE : LSH_LEN;
    s->shape.var = -1;
    return s;
}

void lcu_soac_free(LcuSoac *s)
{
    if (!s)
        return;
    lcu_thunk_free(s->pull);
    lcu_thunk_free(s->idx);
    lcu_thunk_free(s->pred);
    free(s);
}

LcuKernel *lcu_kernel_new(int id)
{
    LcuKernel *k = vc_xcalloc(1, sizeof *k);
    k->id = id;
    return k;
}

void lcu_kernel_add(LcuKernel *k, LcuSoac *s)
{
    k->soacs = vc_xrealloc(k->soacs, (size_t)(k->nsoacs + 1) * sizeof *k->soacs);
    k->soacs[k->nsoacs++] = s;
}

/* ---- renumbering --------------------------------------------------------- */

static void expr_renumber(LcuExpr *e, const int *to)
{
    if (!e)
        return;
    switch (e->kind) {
    case LE_SUB: case LE_LEN: case LE_SEG_OF: case LE_SEG_START: case LE_SEG_LEN: case LE_SEG_COUNT:
        e->var = to[e->var];
        break;
    default:
        break;
    }
    for (int i = 0; i < e->nkids; i++)
        expr_renumber(e->kids[i], to);
}

static LcuThunk *thunk_renumbered(const LcuThunk *t, const int *to)
{
    LcuThunk *c = lcu_thunk_copy(t);
    if (c) {
        expr_renumber(c->body, to);
        lcu_thunk_recompute_using(c);
    }
    return c;
}

static int var_to(int v, const int *to) { return v < 0 ? v : to[v]; }

LcuKernel *lcu_kernel_renumber(const LcuKernel *k, const int *to)
{
    LcuKernel *c = lcu_kernel_new(k->id);
    for (int j = 0; j < k->nsoacs; j++) {
        const LcuSoac *s = k->soacs[j];
        LcuSoac *d = lcu_soac_new(s->kind);
        *d = *s;
        d->pull = thunk_renumbered(s->pull, to);
        d->idx = thunk_renumbered(s->idx, to);
        d->pred = thunk_renumbered(s->pred, to);
        for (int r = 0; r < s->nres && r < LCU_MAXRES; r++) {
            d->res[r] = var_to(s->res[r], to);
            d->dflt[r] = var_to(s->dflt[r], to);
        }
        d->shape.var = s->shape.kind == LSH_ONE ? s->shape.var : var_to(s->shape.var, to);
        d->dst_sd = var_to(s->dst_sd, to);
        for (int a = 0; a < s->nargs && a < 8; a++)
            d->args[a] = var_to(s->args[a], to);
        lcu_kernel_add(c, d);
    }
    c->nparams = k->nparams;
    c->params = k->nparams ? vc_xcalloc((size_t)k->nparams, sizeof *c->params) : NULL;
    for (int i = 0; i < k->nparams; i++)
        c->params[i] = to[k->params[i]];
    c->nrets = k->nrets;
    c->rets = k->nrets ? vc_xcalloc((size_t)k->nrets, sizeof *c->rets) : NULL;
    for (int i = 0; i < k->nrets; i++)
        c->rets[i] = to[k->rets[i]];
    return c;
}

static void thunk_reads(const LcuThunk *t, IntList *out)
{
    if (!t)
        return;
    for (int i = 0; i < t->nusing; i++)
        il_push(out, t->using[i]);
}

/* Every plan variable SOAC S reads: its thunks' captures, its shape, the
 * destination segdes and defaults of SEG_PERMUTE, a library kernel's args.
 * ONCE and LIB have no shape. Negative entries (unset) are skipped. */
static void soac_reads(const LcuSoac *s, IntList *out)
{
    IntList l = {0, 0, NULL};
    thunk_reads(s->pull, &l);
    thunk_reads(s->idx, &l);
    thunk_reads(s->pred, &l);
    if (s->kind != LS_ONCE && s->kind != LS_LIB && s->shape.kind != LSH_ONE)
        il_push(&l, s->shape.var);
    if (s->kind == LS_SEG_PERMUTE) {
        il_push(&l, s->dst_sd);
        for (int r = 0; r < s->nres && r < LCU_MAXRES; r++)
            il_push(&l, s->dflt[r]);
    }
    if (s->kind == LS_LIB)
        for (int a = 0; a < s->nargs && a < 8; a++)
            il_push(&l, s->args[a]);
    for (int i = 0; i < l.n; i++)
        if (l.v[i] >= 0)
            il_push(out, l.v[i]);
    free(l.v);
}

/* The index of the first SOAC of K binding VAR, or -1. */
static int first_binder(const LcuKernel *k, int var)
{
    for (int j = 0; j < k->nsoacs; j++) {
        const LcuSoac *s = k->soacs[j];
        for (int r = 0; r < s->nres && r < LCU_MAXRES; r++)
            if (s->res[r] == var)
                return j;
    }
    return -1;
}

void lcu_kernel_finish(LcuKernel *k, const unsigned char *need, int nvars)
{
    IntList params = {0, 0, NULL}, rets = {0, 0, NULL};
    for (int j = 0; j < k->nsoacs; j++) {
        IntList reads = {0, 0, NULL};
        soac_reads(k->soacs[j], &reads);
        for (int i = 0; i < reads.n; i++) {
            int b = first_binder(k, reads.v[i]);
            if (b < 0 || b >= j)
                il_push(&params, reads.v[i]);
        }
        free(reads.v);
    }
    il_sort_unique(&params);

    for (int j = 0; j < k->nsoacs; j++) {
        const LcuSoac *s = k->soacs[j];
        for (int r = 0; r < s->nres && r < LCU_MAXRES; r++) {
            int v = s->res[r];
            if (first_binder(k, v) != j)
                continue;               /* a (bad) second binding: listed once */
            int dup = 0;
            for (int q = 0; q < r; q++)
                dup |= s->res[q] == v;
            if (dup)
                continue;
            int needed = !need || v < 0 || v >= nvars || need[v] != 0;
            if (needed)
                il_push(&rets, v);
        }
    }

    free(k->params);
    free(k->rets);
    k->nparams = params.n;
    k->params = params.v;
    k->nrets = rets.n;
    k->rets = rets.v;
}

int lcu_expr_may_fail(const LcuExpr *e)
{
    if (!e)
        return 0;
    if (e->kind == LE_PRIM) {
        if (e->prim == LP_RANDMOD || e->prim == LP_CHECKIDX)
            return 1;
        /* an Int quotient or remainder (a Float / is IEEE: no fault) */
        if ((e->prim == LP_DIV || e->prim == LP_MOD) && e->type == VS_INT)
            return 1;
    }
    for (int k = 0; k < e->nkids; k++)
        if (lcu_expr_may_fail(e->kids[k]))
            return 1;
    return 0;
}

int lcu_soac_may_fail(const LcuSoac *s)
{
    if (s->kind == LS_LIB || s->kind == LS_PERMUTE || s->kind == LS_SEG_PERMUTE)
        return 1;
    const LcuThunk *t[3] = { s->pull, s->idx, s->pred };
    for (int k = 0; k < 3; k++)
        if (t[k] && lcu_expr_may_fail(t[k]->body))
            return 1;
    return 0;
}

void lcu_kernel_free(LcuKernel *k)
{
    if (!k)
        return;
    for (int j = 0; j < k->nsoacs; j++)
        lcu_soac_free(k->soacs[j]);
    free(k->soacs);
    free(k->params);
    free(k->rets);
    free(k);
}

/* ---- names --------------------------------------------------------------- */

const char *lcu_soac_name(LcuSoacKind k)
{
    static const char *const names[] = {
        "MAP", "PERMUTE", "REDUCE", "SCAN", "FILTER", "PARTITION", "ONCE",
        "SEG_REDUCE", "SEG_SCAN", "SEG_PERMUTE", "SEG_FILTER", "LIB",
    };
    _Static_assert(sizeof names / sizeof names[0] == LS_COUNT, "one name per value");
    return (unsigned)k < LS_COUNT ? names[k] : "?soac";
}

const char *lcu_rop_name(VsRop r)
{
    static const char *const names[] = {
        "iadd", "imul", "imax", "imin", "iand", "ior", "ixor",
        "fadd", "fmul", "fmax", "fmin",
        "band", "bor", "bxor",
    };
    _Static_assert(sizeof names / sizeof names[0] == VS_NROPS, "one name per value");
    return (unsigned)r < VS_NROPS ? names[r] : "?rop";
}

const char *lcu_prim_name(LcuPrim p)
{
    return (unsigned)p < LP_COUNT ? lcu_prims[p].name : "?prim";
}

const char *lcu_lib_name(LcuLib l)
{
    static const char *const names[] = {"rank_up", "rank_down", "rand_stream"};
    _Static_assert(sizeof names / sizeof names[0] == LL_COUNT, "one name per value");
    return (unsigned)l < LL_COUNT ? names[l] : "?lib";
}

const char *lcu_base_name(VsElem b)
{
    static const char *const names[] = {"int", "bool", "float"};
    return (unsigned)b <= VS_FLOAT ? names[b] : "?base";
}

VsElem lcu_rop_base(VsRop r)
{
    switch (r) {
    case VS_FADD: case VS_FMUL: case VS_FMAX: case VS_FMIN:
        return VS_FLOAT;
    case VS_BAND: case VS_BOR: case VS_BXOR:
        return VS_BOOL;
    default:
        return VS_INT;
    }
}

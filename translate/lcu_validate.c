/* translate/lcu_validate.c — the λcu kernel checker (lcu_validate_kernel,
 * see translate/lcu.h).
 *
 * Rules checked, per SOAC in order (messages name the kernel, the SOAC's
 * index and kind, and the thunk concerned):
 *   - 1 <= nres <= LCU_MAXRES; each result variable is in range, bound
 *     once in the kernel, and has the type the SOAC produces (arrays of
 *     the thunk's component types; PARTITION: kept then dropped arrays;
 *     SEG_FILTER: arrays then a segdes; LIB: see below);
 *   - the thunks the kind needs are present, the others NULL: pull for all
 *     but LIB, idx for PERMUTE / SEG_PERMUTE (int), pred for FILTER /
 *     PARTITION / SEG_FILTER and optionally SEG_PERMUTE (bool);
 *   - thunk arity = nres (PARTITION nres/2, SEG_FILTER nres-1; idx and
 *     pred 1) and the body yields that many values; a tuple appears only
 *     in tail position of the body (its top, a let body or an if branch
 *     in tail position) with nkids == arity;
 *   - `using` is strictly increasing and contains every variable the body
 *     reads; every captured variable is readable here: bound by an
 *     earlier SOAC of the kernel, or (bound nowhere in it and) a kernel
 *     parameter. Reading a variable bound by this or a later SOAC is an
 *     error;
 *   - expressions: the stored `type` is the one the builders compute;
 *     literals are well formed; `i` does not occur in ONCE thunks; every
 *     local is bound by an enclosing let (inner lets shadow outer ones);
 *     subscripts only of arrays, with an int index and the array's element
 *     type; #x of an array or segdes; seg_* only of segdes, with an int
 *     argument; prim operands as in VCODE (+ - * / on int or float; % <<
 *     >> randmod checkidx on int; comparisons on int or float, both alike; and/or/
 *     xor/not on int or bool; neg on int or float; float->int and float
 *     math on float; i_to_f, i_to_b on int; b_to_i on bool); an if's
 *     condition is bool and its branches yield the same types;
 *   - rops (REDUCE, SCAN, SEG_REDUCE, SEG_SCAN) have the base type of
 *     their component;
 *   - shapes: MAP .. PARTITION: (#x) of an array, (n x) / (m x) of a
 *     segdes, or (); SEG_*: (n x) of a segdes. ONCE and LIB have none;
 *   - SEG_PERMUTE: dst_sd a readable segdes; each default -1 or a readable
 *     array of its component's type;
 *   - LIB: no thunks; args readable; rank_up/rank_down(data, sd) with data
 *     [int] or [float] and one [int] result; rand_stream(lim) with lim
 *     [int] and one [int] result.
 * Kernel level: params in range, distinct, not bound in the kernel; rets
 * distinct and bound in the kernel.
 *
 * Scalar fields a kind does not use (shape of ONCE/LIB, dst_sd, dflt,
 * rops, lib, args) are ignored. With TYPES NULL, the checks that need
 * variable types are skipped. */
#include "translate/lcu.h"
#include "translate/lcu_prims.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const LcuKernel *k;
    const LcuVarType *types;
    int nvars;
    char *msg;
    size_t msglen;
    int *binder;                /* per variable: SOAC binding it, or -1 */
    int si;                     /* current SOAC, or -1 at kernel level */
    const char *what;           /* current thunk ("pull"), or NULL */
    const LcuThunk *thunk;      /* current thunk */
    int once;                   /* current thunk is a ONCE thunk */
} V;

typedef struct Scope {
    int local;
    VsElem type;
    const struct Scope *up;
} Scope;

static int fail(V *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(V *v, const char *fmt, ...)
{
    if (!v->msg || v->msglen == 0)
        return -1;
    char head[128];
    if (v->si < 0)
        snprintf(head, sizeof head, "K%d: ", v->k->id);
    else if (v->what)
        snprintf(head, sizeof head, "K%d SOAC %d (%s), %s thunk: ", v->k->id, v->si,
                 lcu_soac_name(v->k->soacs[v->si]->kind), v->what);
    else
        snprintf(head, sizeof head, "K%d SOAC %d (%s): ", v->k->id, v->si,
                 lcu_soac_name(v->k->soacs[v->si]->kind));
    size_t n = strlen(head);
    if (n >= v->msglen)
        n = v->msglen - 1;
    memcpy(v->msg, head, n);
    v->msg[n] = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->msg + n, v->msglen - n, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *type_str(LcuVarType t)
{
    if (t.kind == LV_SEGDES)
        return "segdes";
    switch (t.base) {
    case VS_INT: return "[int]";
    case VS_BOOL: return "[bool]";
    case VS_FLOAT: return "[float]";
    }
    return "[?]";
}

static int valid_base(VsElem b)
{
    return b == VS_INT || b == VS_BOOL || b == VS_FLOAT;
}

/* Is VAR readable at the current SOAC? Fills *t (when types are known)
 * and returns 1 if types are known, 0 if not, -1 on error. */
static int check_read(V *v, int var, const char *role, LcuVarType *t)
{
    if (var < 0 || var >= v->nvars)
        return fail(v, "%s x%d is not a variable (nvars %d)", role, var, v->nvars);
    int b = v->binder[var];
    if (b == v->si)
        return fail(v, "%s x%d is bound by this SOAC itself", role, var);
    if (b > v->si)
        return fail(v, "%s x%d is bound later, by SOAC %d", role, var, b);
    if (b < 0) {
        int found = 0;
        for (int i = 0; i < v->k->nparams && !found; i++)
            found = v->k->params[i] == var;
        if (!found)
            return fail(v, "%s x%d is neither a kernel parameter nor bound earlier", role, var);
    }
    if (!v->types)
        return 0;
    *t = v->types[var];
    if (t->kind != LV_ARRAY && t->kind != LV_SEGDES)
        return fail(v, "%s x%d has a bad variable kind %d", role, var, (int)t->kind);
    if (t->kind == LV_ARRAY && !valid_base(t->base))
        return fail(v, "%s x%d has a bad element type %d", role, var, (int)t->base);
    return 1;
}

/* A read of VAR from the current thunk's body: it must be captured. */
static int check_thunk_read(V *v, int var, const char *role, LcuVarType *t)
{
    const LcuThunk *th = v->thunk;
    int found = 0;
    for (int i = 0; i < th->nusing && !found; i++)
        found = th->using[i] == var;
    if (!found)
        return fail(v, "reads x%d, which is not in its using list", var);
    return check_read(v, var, role, t);
}


/* Number of operands of P, and whether operand type T is legal for it
 * (lcu_prims.h). */
static int prim_arity(LcuPrim p) { return (unsigned)p < LP_COUNT ? lcu_prims[p].arity : 0; }

static int prim_operand_ok(LcuPrim p, VsElem t) { return lcu_prim_operand_ok(p, t); }

static int vexpr(V *v, const LcuExpr *e, const Scope *sc, int tail, int *n, VsElem *tys);

static int vscalar(V *v, const LcuExpr *e, const Scope *sc, VsElem *t)
{
    int n;
    return vexpr(v, e, sc, 0, &n, t);
}

static int want_kids(V *v, const LcuExpr *e, int lo, int hi, const char *what)
{
    if (e->nkids < lo || e->nkids > hi || (e->nkids > 0 && !e->kids))
        return fail(v, "%s with %d operands", what, e->nkids);
    for (int i = 0; i < e->nkids; i++)
        if (!e->kids[i])
            return fail(v, "%s with a missing operand %d", what, i);
    return 0;
}

static int want_type(V *v, const LcuExpr *e, VsElem t, const char *what)
{
    if (e->type != t)
        return fail(v, "%s has type %s, should be %s", what, lcu_base_name(e->type), lcu_base_name(t));
    return 0;
}

/* x[i]: an array of this thunk's reads, subscripted by an int. */
static int vsub(V *v, const LcuExpr *e, const Scope *sc, VsElem *tys)
{
    LcuVarType vt;
    VsElem a;
    int r;
    if (want_kids(v, e, 1, 1, "a subscript") < 0)
        return -1;
    if ((r = check_thunk_read(v, e->var, "subscripted", &vt)) < 0)
        return -1;
    if (r == 1 && vt.kind != LV_ARRAY)
        return fail(v, "subscript of x%d, a segdes", e->var);
    if (r == 1 && e->type != vt.base)
        return fail(v, "x%d[...] has type %s, but x%d is %s", e->var, lcu_base_name(e->type), e->var,
                    type_str(vt));
    if (!valid_base(e->type))
        return fail(v, "x%d[...] has a bad type", e->var);
    if (vscalar(v, e->kids[0], sc, &a) < 0)
        return -1;
    if (a != VS_INT)
        return fail(v, "x%d subscripted by a %s", e->var, lcu_base_name(a));
    tys[0] = e->type;
    return 0;
}

/* The segment helpers: seg_of(i), seg_start(s), seg_len(s), seg_count of a
 * segdes this thunk reads. */
static int vseg(V *v, const LcuExpr *e, const Scope *sc, VsElem *tys)
{
    LcuVarType vt;
    VsElem a;
    int r;
    const char *name = e->kind == LE_SEG_OF ? "seg_of" : e->kind == LE_SEG_START ? "seg_start"
                     : e->kind == LE_SEG_LEN ? "seg_len" : "seg_count";
    int nk = e->kind == LE_SEG_COUNT ? 0 : 1;
    if (want_kids(v, e, nk, nk, name) < 0 || want_type(v, e, VS_INT, name) < 0)
        return -1;
    if ((r = check_thunk_read(v, e->var, "segment helper on", &vt)) < 0)
        return -1;
    if (r == 1 && vt.kind != LV_SEGDES)
        return fail(v, "%s of x%d, which is %s, not a segdes", name, e->var, type_str(vt));
    if (nk) {
        if (vscalar(v, e->kids[0], sc, &a) < 0)
            return -1;
        if (a != VS_INT)
            return fail(v, "%s of x%d with a %s argument", name, e->var, lcu_base_name(a));
    }
    tys[0] = VS_INT;
    return 0;
}

/* A primitive: its arity, its operands' types, its result's. */
static int vprim(V *v, const LcuExpr *e, const Scope *sc, VsElem *tys)
{
    VsElem a, b;
    if ((unsigned)e->prim >= LP_COUNT)
        return fail(v, "a bad prim %d", (int)e->prim);
    const char *pn = lcu_prim_name(e->prim);
    int ar = prim_arity(e->prim);
    if (want_kids(v, e, ar, ar, pn) < 0)
        return -1;
    if (vscalar(v, e->kids[0], sc, &a) < 0)
        return -1;
    if (!prim_operand_ok(e->prim, a))
        return fail(v, "%s applied to %s", pn, lcu_base_name(a));
    if (ar == 2) {
        if (vscalar(v, e->kids[1], sc, &b) < 0)
            return -1;
        if (b != a)
            return fail(v, "%s applied to %s and %s", pn, lcu_base_name(a), lcu_base_name(b));
    }
    if (want_type(v, e, lcu_prim_result(e->prim, a), pn) < 0)
        return -1;
    tys[0] = e->type;
    return 0;
}

/* if c a b: a bool condition, branches yielding the same values. */
static int vif(V *v, const LcuExpr *e, const Scope *sc, int tail, int *n, VsElem *tys)
{
    int n1, n2;
    VsElem a, t1[LCU_MAXRES], t2[LCU_MAXRES];
    if (want_kids(v, e, 3, 3, "if") < 0)
        return -1;
    if (vscalar(v, e->kids[0], sc, &a) < 0)
        return -1;
    if (a != VS_BOOL)
        return fail(v, "if condition of type %s, not bool", lcu_base_name(a));
    if (vexpr(v, e->kids[1], sc, tail, &n1, t1) < 0 || vexpr(v, e->kids[2], sc, tail, &n2, t2) < 0)
        return -1;
    if (n1 != n2)
        return fail(v, "if branches yield %d and %d values", n1, n2);
    for (int i = 0; i < n1; i++)
        if (t1[i] != t2[i])
            return fail(v, "if branches disagree: %s and %s", lcu_base_name(t1[i]), lcu_base_name(t2[i]));
    if (want_type(v, e, t1[0], "if") < 0)
        return -1;
    *n = n1;
    memcpy(tys, t1, (size_t)n1 * sizeof *tys);
    return 0;
}

static int vexpr(V *v, const LcuExpr *e, const Scope *sc, int tail, int *n, VsElem *tys)
{
    LcuVarType vt;
    *n = 1;
    if (!e)
        return fail(v, "a missing expression");
    switch (e->kind) {
    case LE_INT:
    case LE_FLOAT:
    case LE_BOOL:
    case LE_INDEX: {
        VsElem want = e->kind == LE_FLOAT ? VS_FLOAT : e->kind == LE_BOOL ? VS_BOOL : VS_INT;
        if (want_kids(v, e, 0, 0, "a literal") < 0 || want_type(v, e, want, "a literal") < 0)
            return -1;
        if (e->kind == LE_BOOL && e->ival != 0 && e->ival != 1)
            return fail(v, "a bool literal with value %d", (int)e->ival);
        if (e->kind == LE_INDEX && v->once)
            return fail(v, "the index i in a ONCE thunk");
        tys[0] = want;
        return 0;
    }
    case LE_LOCAL:
        if (want_kids(v, e, 0, 0, "a local") < 0)
            return -1;
        for (; sc; sc = sc->up)
            if (sc->local == e->local)
                break;
        if (!sc)
            return fail(v, "t%d is not bound by an enclosing let", e->local);
        if (e->type != sc->type)
            return fail(v, "t%d used as %s but bound to %s", e->local, lcu_base_name(e->type),
                        lcu_base_name(sc->type));
        tys[0] = e->type;
        return 0;
    case LE_SUB:
        return vsub(v, e, sc, tys);
    case LE_LEN:
        if (want_kids(v, e, 0, 0, "#x") < 0 || want_type(v, e, VS_INT, "#x") < 0)
            return -1;
        if (check_thunk_read(v, e->var, "measured", &vt) < 0)
            return -1;
        tys[0] = VS_INT;
        return 0;
    case LE_SEG_OF:
    case LE_SEG_START:
    case LE_SEG_LEN:
    case LE_SEG_COUNT:
        return vseg(v, e, sc, tys);
    case LE_PRIM:
        return vprim(v, e, sc, tys);
    case LE_IF:
        return vif(v, e, sc, tail, n, tys);
    case LE_LET: {
        if (want_kids(v, e, 2, 2, "let") < 0)
            return -1;
        if (e->local < 0)
            return fail(v, "let of a bad local t%d", e->local);
        Scope s = {e->local, VS_INT, sc};
        if (vscalar(v, e->kids[0], sc, &s.type) < 0)
            return -1;
        if (vexpr(v, e->kids[1], &s, tail, n, tys) < 0)
            return -1;
        return want_type(v, e, tys[0], "let");
    }
    case LE_TUPLE:
        if (!tail)
            return fail(v, "a tuple not in tail position of the body");
        if (want_kids(v, e, 1, LCU_MAXRES, "a tuple") < 0)
            return -1;
        for (int i = 0; i < e->nkids; i++)
            if (vscalar(v, e->kids[i], sc, &tys[i]) < 0)
                return -1;
        *n = e->nkids;
        return want_type(v, e, tys[0], "a tuple");
    }
    return fail(v, "a bad expression kind %d", (int)e->kind);
}

/* Check thunk T (role WHAT) of arity ARITY; its component types go to TYS. */
static int vthunk(V *v, const LcuThunk *t, const char *what, int arity, int once, VsElem *tys)
{
    v->what = what;
    v->thunk = t;
    v->once = once;
    if (!t)
        return fail(v, "missing");
    if (t->arity != arity)
        return fail(v, "has arity %d, the SOAC needs %d", t->arity, arity);
    if (t->nusing < 0 || (t->nusing > 0 && !t->using))
        return fail(v, "a bad using list");
    for (int i = 0; i < t->nusing; i++) {
        LcuVarType vt;
        if (i > 0 && t->using[i] <= t->using[i - 1])
            return fail(v, "using list not strictly increasing at x%d", t->using[i]);
        if (check_read(v, t->using[i], "captures", &vt) < 0)
            return -1;
    }
    int n;
    if (vexpr(v, t->body, NULL, 1, &n, tys) < 0)
        return -1;
    if (n != arity)
        return fail(v, "body yields %d values, arity %d", n, arity);
    v->what = NULL;
    v->thunk = NULL;
    v->once = 0;
    return 0;
}

static int no_thunk(V *v, const LcuThunk *t, const char *what)
{
    if (t)
        return fail(v, "has a %s thunk it does not use", what);
    return 0;
}

static int vshape(V *v, LcuShape sh, int seg_only)
{
    LcuVarType vt;
    int r;
    if (seg_only && sh.kind != LSH_SEG_N)
        return fail(v, "the shape must be (n sd) of a segdes");
    switch (sh.kind) {
    case LSH_ONE:
        return 0;
    case LSH_LEN:
        if ((r = check_read(v, sh.var, "shape", &vt)) < 0)
            return -1;
        if (r == 1 && vt.kind != LV_ARRAY)
            return fail(v, "shape (#x%d) of a segdes; use (n x%d)", sh.var, sh.var);
        return 0;
    case LSH_SEG_N:
    case LSH_SEG_M:
        if ((r = check_read(v, sh.var, "shape", &vt)) < 0)
            return -1;
        if (r == 1 && vt.kind != LV_SEGDES)
            return fail(v, "shape (%c x%d) of %s, not a segdes", sh.kind == LSH_SEG_N ? 'n' : 'm', sh.var,
                        type_str(vt));
        return 0;
    }
    return fail(v, "a bad shape kind %d", (int)sh.kind);
}

/* Result R of the current SOAC must have type WANT. */
static int want_res(V *v, const LcuSoac *s, int r, LcuVarKind kind, VsElem base)
{
    if (!v->types)
        return 0;
    LcuVarType t = v->types[s->res[r]];
    if (t.kind != kind || (kind == LV_ARRAY && t.base != base)) {
        LcuVarType w = {kind, base};
        return fail(v, "result x%d is %s, but the SOAC produces %s", s->res[r], type_str(t), type_str(w));
    }
    return 0;
}

static int vlib(V *v, const LcuSoac *s)
{
    LcuVarType vt[8];
    int known = 1;
    if (no_thunk(v, s->pull, "pull") < 0 || no_thunk(v, s->idx, "idx") < 0 || no_thunk(v, s->pred, "pred") < 0)
        return -1;
    if (s->nargs < 0 || s->nargs > 8)
        return fail(v, "%d library arguments", s->nargs);
    for (int a = 0; a < s->nargs; a++) {
        int r = check_read(v, s->args[a], "argument", &vt[a]);
        if (r < 0)
            return -1;
        known &= r;
    }
    switch (s->lib) {
    case LL_RANK_UP:
    case LL_RANK_DOWN:
        if (s->nargs != 2 || s->nres != 1)
            return fail(v, "%s takes (data, sd) and gives one result", lcu_lib_name(s->lib));
        if (known && (vt[0].kind != LV_ARRAY || vt[0].base == VS_BOOL || vt[1].kind != LV_SEGDES))
            return fail(v, "%s of %s and %s; needs [int] or [float] and a segdes", lcu_lib_name(s->lib),
                        type_str(vt[0]), type_str(vt[1]));
        return want_res(v, s, 0, LV_ARRAY, VS_INT);
    case LL_RAND_STREAM:
        if (s->nargs != 1 || s->nres != 1)
            return fail(v, "rand_stream takes (lim) and gives one result");
        if (known && (vt[0].kind != LV_ARRAY || vt[0].base != VS_INT))
            return fail(v, "rand_stream of %s, needs [int]", type_str(vt[0]));
        return want_res(v, s, 0, LV_ARRAY, VS_INT);
    case LL_COUNT:
        break;
    }
    return fail(v, "a bad library kernel %d", (int)s->lib);
}

static int vsoac(V *v, const LcuSoac *s)
{
    VsElem tys[LCU_MAXRES], t1[LCU_MAXRES];
    int nres = s->nres;
    if (s->kind == LS_LIB)
        return vlib(v, s);

    int arity = nres;
    if (s->kind == LS_PARTITION) {
        if (nres % 2 != 0)
            return fail(v, "PARTITION with an odd number (%d) of results", nres);
        arity = nres / 2;
    } else if (s->kind == LS_SEG_FILTER) {
        if (nres < 2)
            return fail(v, "SEG_FILTER needs arrays and a segdes result");
        arity = nres - 1;
    }
    int once = s->kind == LS_ONCE;

    /* The iteration space first: thunks are read inside it. */
    switch (s->kind) {
    case LS_ONCE:
        break;
    case LS_SEG_REDUCE: case LS_SEG_SCAN: case LS_SEG_PERMUTE: case LS_SEG_FILTER:
        if (vshape(v, s->shape, 1) < 0)
            return -1;
        break;
    default:
        if (vshape(v, s->shape, 0) < 0)
            return -1;
        break;
    }

    if (vthunk(v, s->pull, "pull", arity, once, tys) < 0)
        return -1;

    int has_idx = s->kind == LS_PERMUTE || s->kind == LS_SEG_PERMUTE;
    int has_pred = s->kind == LS_FILTER || s->kind == LS_PARTITION || s->kind == LS_SEG_FILTER;
    if (has_idx) {
        if (vthunk(v, s->idx, "idx", 1, 0, t1) < 0)
            return -1;
        if (t1[0] != VS_INT)
            return fail(v, "the idx thunk yields %s, not int", lcu_base_name(t1[0]));
    } else if (no_thunk(v, s->idx, "idx") < 0) {
        return -1;
    }
    if (has_pred || (s->kind == LS_SEG_PERMUTE && s->pred)) {
        const char *what = s->kind == LS_SEG_PERMUTE ? "flag" : "pred";
        if (vthunk(v, s->pred, what, 1, 0, t1) < 0)
            return -1;
        if (t1[0] != VS_BOOL)
            return fail(v, "the %s thunk yields %s, not bool", what, lcu_base_name(t1[0]));
    } else if (no_thunk(v, s->pred, "pred") < 0) {
        return -1;
    }

    if (s->kind == LS_REDUCE || s->kind == LS_SCAN || s->kind == LS_SEG_REDUCE || s->kind == LS_SEG_SCAN) {
        for (int r = 0; r < nres; r++) {
            if ((unsigned)s->rops[r] >= VS_NROPS)
                return fail(v, "a bad rop %d for result %d", (int)s->rops[r], r);
            if (lcu_rop_base(s->rops[r]) != tys[r])
                return fail(v, "rop %s (%s) for result %d, whose type is %s", lcu_rop_name(s->rops[r]),
                            lcu_base_name(lcu_rop_base(s->rops[r])), r, lcu_base_name(tys[r]));
        }
    }

    if (s->kind == LS_SEG_PERMUTE) {
        LcuVarType vt;
        int r = check_read(v, s->dst_sd, "destination segdes", &vt);
        if (r < 0)
            return -1;
        if (r == 1 && vt.kind != LV_SEGDES)
            return fail(v, "destination x%d is %s, not a segdes", s->dst_sd, type_str(vt));
        for (int q = 0; q < nres; q++) {
            if (s->dflt[q] == -1)
                continue;
            if ((r = check_read(v, s->dflt[q], "default", &vt)) < 0)
                return -1;
            if (r == 1 && (vt.kind != LV_ARRAY || vt.base != tys[q]))
                return fail(v, "default x%d for result %d is %s, needs [%s]", s->dflt[q], q, type_str(vt),
                            lcu_base_name(tys[q]));
        }
    }

    /* Result types. */
    for (int r = 0; r < arity; r++) {
        if (want_res(v, s, r, LV_ARRAY, tys[r]) < 0)
            return -1;
        if (s->kind == LS_PARTITION && want_res(v, s, r + arity, LV_ARRAY, tys[r]) < 0)
            return -1;
    }
    if (s->kind == LS_SEG_FILTER && want_res(v, s, nres - 1, LV_SEGDES, VS_INT) < 0)
        return -1;
    return 0;
}

int lcu_validate_kernel(const LcuKernel *k, const LcuVarType *types, int nvars, char *msg, size_t msglen)
{
    V v = {k, types, nvars, msg, msglen, NULL, -1, NULL, NULL, 0};
    int rc = -1;
    if (msg && msglen)
        msg[0] = 0;
    if (nvars < 0 || k->nsoacs < 0 || (k->nsoacs > 0 && !k->soacs) || k->nparams < 0 || k->nrets < 0 ||
        (k->nparams > 0 && !k->params) || (k->nrets > 0 && !k->rets))
        return fail(&v, "malformed kernel");
    v.binder = malloc((size_t)(nvars ? nvars : 1) * sizeof *v.binder);
    if (!v.binder)
        return fail(&v, "out of memory");
    for (int i = 0; i < nvars; i++)
        v.binder[i] = -1;

    /* Bindings: each result in range and bound once. */
    for (int j = 0; j < k->nsoacs; j++) {
        const LcuSoac *s = k->soacs[j];
        v.si = -1;
        if (!s) {
            fail(&v, "SOAC %d is missing", j);
            goto out;
        }
        v.si = j;
        if ((unsigned)s->kind >= LS_COUNT) {
            fail(&v, "a bad SOAC kind %d", (int)s->kind);
            goto out;
        }
        if (s->nres < 1 || s->nres > LCU_MAXRES) {
            fail(&v, "%d results", s->nres);
            goto out;
        }
        for (int r = 0; r < s->nres; r++) {
            int x = s->res[r];
            if (x < 0 || x >= nvars) {
                fail(&v, "result x%d is not a variable (nvars %d)", x, nvars);
                goto out;
            }
            if (v.binder[x] >= 0) {
                if (v.binder[x] == j)
                    fail(&v, "binds x%d twice", x);
                else
                    fail(&v, "binds x%d, already bound by SOAC %d", x, v.binder[x]);
                goto out;
            }
            v.binder[x] = j;
        }
    }

    for (int j = 0; j < k->nsoacs; j++) {
        v.si = j;
        v.what = NULL;
        if (vsoac(&v, k->soacs[j]) < 0)
            goto out;
    }
    /* Kernel interface (after the SOACs, so that a use before the binding
     * is reported as such rather than as a parameter bound inside). */
    v.si = -1;
    for (int i = 0; i < k->nparams; i++) {
        int x = k->params[i];
        if (x < 0 || x >= nvars) {
            fail(&v, "parameter x%d is not a variable (nvars %d)", x, nvars);
            goto out;
        }
        if (v.binder[x] >= 0) {
            fail(&v, "parameter x%d is bound inside the kernel, by SOAC %d", x, v.binder[x]);
            goto out;
        }
        for (int q = 0; q < i; q++)
            if (k->params[q] == x) {
                fail(&v, "parameter x%d listed twice", x);
                goto out;
            }
    }
    for (int i = 0; i < k->nrets; i++) {
        int x = k->rets[i];
        if (x < 0 || x >= nvars || v.binder[x] < 0) {
            fail(&v, "returns x%d, which the kernel does not bind", x);
            goto out;
        }
        for (int q = 0; q < i; q++)
            if (k->rets[q] == x) {
                fail(&v, "returns x%d twice", x);
                goto out;
            }
    }

    rc = 0;
out:
    free(v.binder);
    return rc;
}

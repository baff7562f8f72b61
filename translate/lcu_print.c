/* translate/lcu_print.c — printing λcu in the style of the λcu paper.
 *
 * The output is deterministic (it is compared in tests and used as a cache
 * key), so the format is fixed here:
 *
 * Kernel:
 *     kernel K<id> (<params>) -> (<rets>) {
 *       <one line per SOAC>
 *       return (<rets>)
 *     }
 *   params are `x1, x4`, or with TYPES `x1 : [float], x4 : segdes`
 *   (arrays `[int]`, `[bool]`, `[float]`). Rets are always parenthesised,
 *   even when there is one or none: `-> (x7)`, `return ()`.
 *
 * SOAC line (lcu_print_soac prints it without indentation or newline):
 *     let x7 = <form>                 one result
 *     let (x7, x9) = <form>           several
 *   forms:
 *     MAP A shape                     PERMUTE A I shape
 *     REDUCE A (rops) shape           SCAN A (rops) shape
 *     FILTER A P shape                PARTITION A P shape
 *     ONCE A
 *     SEG_REDUCE A (rops) x2          SEG_SCAN A (rops) x2
 *     SEG_PERMUTE A I [F] x2 -> x5 [default d]
 *     SEG_FILTER A P x2
 *     LIB rank_up(x3, x2)
 *   where A, I, P, F are thunks, rops is `fadd, iadd, ...` (lcu_rop_name),
 *   and x2 is the SEG_* SOAC's (source) segdes. The default list of
 *   SEG_PERMUTE is printed only when some result has one: `default x6`
 *   for one result, `default (x6, _)` for several, `_` meaning zero fill.
 *   A SEG_* SOAC whose shape is not LSH_SEG_N prints the shape in the
 *   general form instead of x2 (the validator rejects it).
 *
 * Thunks:  `{ i => e using x1, x3 }` (captures sorted as stored); no
 *   captures: `{ i => e }`; ONCE thunks are written `{ () => e ... }`.
 * Shapes:  `(#x1)` length of an array, `(n x2)` / `(m x2)` element / segment
 *   count of a segdes, `()` a single iteration.
 *
 * Expressions:
 *   literals   ints `%d` (-3); floats in the shortest of `%.15g`, `%.16g`,
 *              `%.17g` that reads back exactly, plus ".0" when that looks
 *              like an integer (0.0, -0.0, 1e+20 stays as is, inf, nan);
 *              bools `T` / `F`
 *   i          the thunk index; `t3` a let-bound local; `x1` a plan variable
 *   x1[e]  #x1  seg_of(x2, e)  seg_start(x2, e)  seg_len(x2, e)  seg_count(x2)
 *   infix      + - * / %  < <= > >= == !=  << >>
 *              AND OR XOR: `&` `|` `^` on ints, `&&` `||` `^^` on bools
 *              (chosen by the type of the first operand)
 *   prefix     name(args) with lcu_prim_name: not(e) (~ on ints, ! on
 *              bools), neg(e), floor(e), sqrt(e), i_to_f(e), randmod(a, b)...
 *   if c then a else b      let t3 = e in e      (a, b)
 * Parentheses: an infix operation is parenthesised when it is an operand
 * of another infix operation; `if` and `let` are parenthesised when they
 * are an operand, an `if` condition or then-branch, or a `let` value.
 * Everywhere else (thunk body, tuple items, else-branch, let body,
 * subscripts, function arguments) nothing is parenthesised. So
 * `x1[i] * (x2[i] + 1)` and `(x1[i] * x2[i]) + 1`. */
#include "translate/lcu.h"
#include "translate/lcu_prims.h"

#include <stdlib.h>
#include <string.h>

typedef enum {
    CTX_OPEN,           /* nothing needs parentheses */
    CTX_GUARDED,        /* if condition / then-branch / let value: if and let need them */
    CTX_OPERAND         /* operand of an infix operation: infix, if and let need them */
} Ctx;

static void print_float(FILE *f, double v)
{
    char buf[64];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (prec == 17 || strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, f);
    if (!strpbrk(buf, ".eEnNiI"))
        fputs(".0", f);
}

/* The infix symbol of P on operands of type T, or NULL for prefix prims. */
static const char *infix_symbol(LcuPrim p, VsElem t)
{
    if ((unsigned)p >= LP_COUNT)
        return NULL;
    return t == VS_BOOL && lcu_prims[p].infix_bool ? lcu_prims[p].infix_bool : lcu_prims[p].infix;
}

static void pexpr(FILE *f, const LcuExpr *e, Ctx ctx);

static void pvar(FILE *f, int v)
{
    fprintf(f, "x%d", v);
}

static void pkid(FILE *f, const LcuExpr *e, int i, Ctx ctx)
{
    if (i < e->nkids)
        pexpr(f, e->kids[i], ctx);
    else
        fputs("?", f);
}

static void pexpr(FILE *f, const LcuExpr *e, Ctx ctx)
{
    if (!e) {
        fputs("?", f);
        return;
    }
    switch (e->kind) {
    case LE_INT:
        fprintf(f, "%d", (int)e->ival);
        return;
    case LE_FLOAT:
        print_float(f, e->fval);
        return;
    case LE_BOOL:
        fputs(e->ival ? "T" : "F", f);
        return;
    case LE_INDEX:
        fputs("i", f);
        return;
    case LE_LOCAL:
        fprintf(f, "t%d", e->local);
        return;
    case LE_SUB:
        pvar(f, e->var);
        fputs("[", f);
        pkid(f, e, 0, CTX_OPEN);
        fputs("]", f);
        return;
    case LE_LEN:
        fputs("#", f);
        pvar(f, e->var);
        return;
    case LE_SEG_OF:
    case LE_SEG_START:
    case LE_SEG_LEN:
        fputs(e->kind == LE_SEG_OF ? "seg_of(" : e->kind == LE_SEG_START ? "seg_start(" : "seg_len(", f);
        pvar(f, e->var);
        fputs(", ", f);
        pkid(f, e, 0, CTX_OPEN);
        fputs(")", f);
        return;
    case LE_SEG_COUNT:
        fputs("seg_count(", f);
        pvar(f, e->var);
        fputs(")", f);
        return;
    case LE_PRIM: {
        VsElem t = e->nkids > 0 && e->kids[0] ? e->kids[0]->type : e->type;
        const char *sym = infix_symbol(e->prim, t);
        if (sym && e->nkids == 2) {
            if (ctx == CTX_OPERAND)
                fputs("(", f);
            pexpr(f, e->kids[0], CTX_OPERAND);
            fprintf(f, " %s ", sym);
            pexpr(f, e->kids[1], CTX_OPERAND);
            if (ctx == CTX_OPERAND)
                fputs(")", f);
            return;
        }
        fprintf(f, "%s(", lcu_prim_name(e->prim));
        for (int i = 0; i < e->nkids; i++) {
            if (i)
                fputs(", ", f);
            pexpr(f, e->kids[i], CTX_OPEN);
        }
        fputs(")", f);
        return;
    }
    case LE_IF:
        if (ctx != CTX_OPEN)
            fputs("(", f);
        fputs("if ", f);
        pkid(f, e, 0, CTX_GUARDED);
        fputs(" then ", f);
        pkid(f, e, 1, CTX_GUARDED);
        fputs(" else ", f);
        pkid(f, e, 2, CTX_OPEN);
        if (ctx != CTX_OPEN)
            fputs(")", f);
        return;
    case LE_LET:
        if (ctx != CTX_OPEN)
            fputs("(", f);
        fprintf(f, "let t%d = ", e->local);
        pkid(f, e, 0, CTX_GUARDED);
        fputs(" in ", f);
        pkid(f, e, 1, CTX_OPEN);
        if (ctx != CTX_OPEN)
            fputs(")", f);
        return;
    case LE_TUPLE:
        fputs("(", f);
        for (int i = 0; i < e->nkids; i++) {
            if (i)
                fputs(", ", f);
            pexpr(f, e->kids[i], CTX_OPEN);
        }
        fputs(")", f);
        return;
    }
    fprintf(f, "?expr%d", (int)e->kind);
}

void lcu_print_expr(FILE *f, const LcuExpr *e)
{
    pexpr(f, e, CTX_OPEN);
}

static void print_thunk(FILE *f, const LcuThunk *t, int once)
{
    if (!t) {
        fputs("{ ? }", f);
        return;
    }
    fputs(once ? "{ () => " : "{ i => ", f);
    pexpr(f, t->body, CTX_OPEN);
    if (t->nusing > 0) {
        fputs(" using ", f);
        for (int i = 0; i < t->nusing; i++) {
            if (i)
                fputs(", ", f);
            pvar(f, t->using[i]);
        }
    }
    fputs(" }", f);
}

static void print_shape(FILE *f, LcuShape sh)
{
    switch (sh.kind) {
    case LSH_LEN: fprintf(f, "(#x%d)", sh.var); return;
    case LSH_SEG_N: fprintf(f, "(n x%d)", sh.var); return;
    case LSH_SEG_M: fprintf(f, "(m x%d)", sh.var); return;
    case LSH_ONE: fputs("()", f); return;
    }
    fputs("(?)", f);
}

/* The segdes operand of a SEG_* SOAC. */
static void print_seg_shape(FILE *f, LcuShape sh)
{
    if (sh.kind == LSH_SEG_N)
        pvar(f, sh.var);
    else
        print_shape(f, sh);
}

static void print_rops(FILE *f, const LcuSoac *s)
{
    fputs("(", f);
    for (int r = 0; r < s->nres && r < LCU_MAXRES; r++) {
        if (r)
            fputs(", ", f);
        fputs(lcu_rop_name(s->rops[r]), f);
    }
    fputs(s->chunked ? ") chunked" : ")", f);
}

static void print_var_list(FILE *f, int n, const int *v)
{
    for (int i = 0; i < n; i++) {
        if (i)
            fputs(", ", f);
        pvar(f, v[i]);
    }
}

void lcu_print_soac(FILE *f, const LcuSoac *s)
{
    int nres = s->nres < 0 ? 0 : s->nres > LCU_MAXRES ? LCU_MAXRES : s->nres;
    fputs("let ", f);
    if (nres == 1) {
        pvar(f, s->res[0]);
    } else {
        fputs("(", f);
        print_var_list(f, nres, s->res);
        fputs(")", f);
    }
    fprintf(f, " = %s ", lcu_soac_name(s->kind));
    switch (s->kind) {
    case LS_MAP:
        print_thunk(f, s->pull, 0);
        fputs(" ", f);
        print_shape(f, s->shape);
        return;
    case LS_PERMUTE:
        print_thunk(f, s->pull, 0);
        fputs(" ", f);
        print_thunk(f, s->idx, 0);
        fputs(" ", f);
        print_shape(f, s->shape);
        return;
    case LS_REDUCE:
    case LS_SCAN:
        print_thunk(f, s->pull, 0);
        fputs(" ", f);
        print_rops(f, s);
        fputs(" ", f);
        print_shape(f, s->shape);
        return;
    case LS_FILTER:
    case LS_PARTITION:
        print_thunk(f, s->pull, 0);
        fputs(" ", f);
        print_thunk(f, s->pred, 0);
        fputs(" ", f);
        print_shape(f, s->shape);
        return;
    case LS_ONCE:
        print_thunk(f, s->pull, 1);
        return;
    case LS_SEG_REDUCE:
    case LS_SEG_SCAN:
        print_thunk(f, s->pull, 0);
        fputs(" ", f);
        print_rops(f, s);
        fputs(" ", f);
        print_seg_shape(f, s->shape);
        return;
    case LS_SEG_PERMUTE: {
        print_thunk(f, s->pull, 0);
        fputs(" ", f);
        print_thunk(f, s->idx, 0);
        if (s->pred) {
            fputs(" ", f);
            print_thunk(f, s->pred, 0);
        }
        fputs(" ", f);
        print_seg_shape(f, s->shape);
        fputs(" -> ", f);
        pvar(f, s->dst_sd);
        int any = 0;
        for (int r = 0; r < nres; r++)
            any |= s->dflt[r] >= 0;
        if (any) {
            fputs(" default ", f);
            if (nres > 1)
                fputs("(", f);
            for (int r = 0; r < nres; r++) {
                if (r)
                    fputs(", ", f);
                if (s->dflt[r] >= 0)
                    pvar(f, s->dflt[r]);
                else
                    fputs("_", f);
            }
            if (nres > 1)
                fputs(")", f);
        }
        return;
    }
    case LS_SEG_FILTER:
        print_thunk(f, s->pull, 0);
        fputs(" ", f);
        print_thunk(f, s->pred, 0);
        fputs(" ", f);
        print_seg_shape(f, s->shape);
        return;
    case LS_LIB:
        fprintf(f, "%s(", lcu_lib_name(s->lib));
        print_var_list(f, s->nargs < 0 ? 0 : s->nargs > 8 ? 8 : s->nargs, s->args);
        fputs(")", f);
        return;
    case LS_COUNT:
        break;
    }
    fputs("?", f);
}

static void print_type(FILE *f, LcuVarType t)
{
    if (t.kind == LV_SEGDES)
        fputs("segdes", f);
    else
        fprintf(f, "[%s]", lcu_base_name(t.base));
}

void lcu_print_kernel(FILE *f, const LcuKernel *k, const LcuVarType *types)
{
    fprintf(f, "kernel K%d (", k->id);
    for (int i = 0; i < k->nparams; i++) {
        if (i)
            fputs(", ", f);
        pvar(f, k->params[i]);
        if (types && k->params[i] >= 0) {
            fputs(" : ", f);
            print_type(f, types[k->params[i]]);
        }
    }
    fputs(") -> (", f);
    print_var_list(f, k->nrets, k->rets);
    fputs(") {\n", f);
    for (int j = 0; j < k->nsoacs; j++) {
        fputs("  ", f);
        lcu_print_soac(f, k->soacs[j]);
        fputs("\n", f);
    }
    fputs("  return (", f);
    print_var_list(f, k->nrets, k->rets);
    fputs(")\n}\n", f);
}

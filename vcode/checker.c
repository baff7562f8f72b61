/* vcode/checker.c — static stack checker (see program.h InstrState).
 *
 * Each function is walked once per pass with an abstract stack that starts
 * empty; reaching below it materialises the caller's slots as AT_INPUT(j).
 * A CALL applies the callee's summary; a call whose summary is not known
 * yet (recursion) makes the rest of that path unknown ("bottom"), and the
 * IF merge takes the other arm. Passes repeat until no summary changes,
 * then a last pass records the state before every instruction. */
#include "vcode/program.h"
#include "vcode/xalloc.h"
#include "vcode/optable.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int bottom;         /* no path reaches here */
    int top;            /* reached, but the program does not determine the
                           stack here (IF arms that disagree, or after an
                           error); nothing is checked until the path ends */
    int nin;            /* caller slots materialised */
    int n;              /* entries in s */
    int cap;
    AbsType *s;         /* bottom → top */
} AStack;

typedef struct {
    Program *p;
    VcError *err;
    int failed;
    int record;         /* last pass: fill p->state */
    int reporting;      /* the function being walked is reachable from the
                           entry: its definite errors are reported */
    size_t pool_n, pool_cap;
    AbsType *pool;
    size_t *pool_off;   /* per instruction, offset into pool */
} Checker;

static void as_reserve(AStack *a, int n)
{
    if (n > a->cap) {
        a->cap = n < 16 ? 16 : n * 2;
        a->s = vc_xrealloc(a->s, (size_t)a->cap * sizeof *a->s);
    }
}

static void as_copy(AStack *dst, const AStack *src)
{
    dst->bottom = src->bottom;
    dst->top = src->top;
    dst->nin = src->nin;
    dst->n = src->n;
    as_reserve(dst, src->n);
    if (src->n)
        memcpy(dst->s, src->s, (size_t)src->n * sizeof *src->s);
}

static void as_free(AStack *a) { free(a->s); memset(a, 0, sizeof *a); }

/* A function may reach this many entries below its own pushes; deeper
 * references make its stack undetermined (checked at run time). */
#define MAX_INPUTS 4096

/* Bounds on the checker's own work, whatever the program (a few COPYs
 * double the stack each; a long function keeps a copy of the stack per
 * instruction). An abstract stack deeper than MAX_DEPTH, or reaching more
 * than MAX_NIN caller slots in all (AT_INPUT(j) must fit an AbsType), is
 * undetermined from there on; once MAX_POOL slots are recorded, further
 * states are recorded as undetermined. NESL's programs stay far below:
 * depth 115 and 170,000 recorded slots at most over ../shared/corpus. */
#define MAX_DEPTH 65536
#define MAX_NIN 8192
#define MAX_POOL ((size_t)1 << 25)

/* Make sure the abstract stack holds at least K entries, materialising
 * caller slots below. */
static void as_need(AStack *a, int k)
{
    if (a->n >= k)
        return;
    int add = k - a->n;
    as_reserve(a, k);
    memmove(a->s + add, a->s, (size_t)a->n * sizeof *a->s);
    for (int i = 0; i < add; i++)
        a->s[add - 1 - i] = AT_INPUT(a->nin + i);
    a->nin += add;
    a->n = k;
}

static void as_push(AStack *a, AbsType t)
{
    as_reserve(a, a->n + 1);
    a->s[a->n++] = t;
}

static int fail(Checker *c, const Instr *in, const char *fmt, ...)
{
    if (c->failed)
        return -1;
    if (!c->record || !c->reporting)
        return -1; /* reported in the recording pass, in file order, and only
                      for code the entry can reach */
    c->failed = 1;
    c->err->line = in ? in->line : 0;
    c->err->classic = 0;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err->msg, sizeof c->err->msg, "%s: %s", in ? vc_ops[in->op].name : "check", msg);
    return -1;
}

/* Something legal that NESL never writes: one line on p->warn, naming the
 * source line. Only in the recording pass (once per instruction), for code
 * the entry reaches, and up to the first definite error. */
static void warn(Checker *c, const Instr *in, const char *fmt, ...)
{
    FILE *w = c->p->warn;
    if (!w || !c->record || !c->reporting || c->failed)
        return;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(w, "vinterp: %s:%d: warning: %s\n", c->p->filename ? c->p->filename : "-", in->line, msg);
}

static AbsType from_vc(VcType t)
{
    switch (t) {
    case TY_INT: case TY_CHAR: return AT_INT;
    case TY_BOOL: return AT_BOOL;
    case TY_FLOAT: return AT_FLOAT;
    case TY_SEGDES: return AT_SEGDES;
    default: return AT_ANY;
    }
}

static const char *at_name(AbsType t)
{
    switch (t) {
    case AT_INT: return "Int";
    case AT_BOOL: return "Bool";
    case AT_FLOAT: return "Float";
    case AT_SEGDES: return "Segdes";
    case AT_PAIR: return "Pair";
    default: return "unknown";
    }
}

static int concrete(AbsType t) { return t >= AT_INT && t <= AT_PAIR; }

/* Signature letter → the abstract type it requires (AT_ANY: no check). */
static AbsType sig_type(char ch, VcType operand)
{
    switch (ch) {
    case 'T': return from_vc(operand);
    case 'I': return AT_INT;
    case 'B': return AT_BOOL;
    case 'F': return AT_FLOAT;
    case 'S': return AT_SEGDES;
    default: return AT_ANY;
    }
}

/* Check that slot type HAVE fits the signature letter CH. */
static int fits(char ch, AbsType want, AbsType have)
{
    if (!concrete(have))
        return 1;
    if (ch == 'X' || ch == '*')
        return 1;
    if (ch == 'A')
        return have != AT_PAIR && have != AT_SEGDES;
    return want == AT_ANY || want == have;
}

static int fail_classic(Checker *c, const Instr *in, const char *text)
{
    if (c->failed || !c->record || !c->reporting)
        return -1;
    c->failed = 1;
    c->err->line = in->line;
    c->err->classic = 1;
    snprintf(c->err->msg, sizeof c->err->msg, "vinterp: line %d: %s", in->cline, text);
    return -1;
}

static int apply_sig(Checker *c, AStack *a, const Instr *in, const char *args, const char *res)
{
    int k = (int)strlen(args);
    as_need(a, k);
    /* The classic's always-on checks keep their own texts (vcode/SPEC.md §4.6, §4.9). */
    if (in->op == OP_LENGTH && a->s[a->n - 1] == AT_SEGDES)
        return fail_classic(c, in, "applying LENGTH to a segment descriptor.");
    if (in->op == OP_LENGTHS && concrete(a->s[a->n - 1]) && a->s[a->n - 1] != AT_SEGDES)
        return fail_classic(c, in, "applying LENGTHS to a non-segment descriptor.");
    for (int i = 0; i < k; i++) {
        AbsType have = a->s[a->n - k + i];
        AbsType want = sig_type(args[i], in->type);
        if (!fits(args[i], want, have))
            return fail(c, in, "argument %d is %s, expected %s", i + 1, at_name(have),
                        args[i] == 'A' ? "a vector" : at_name(want));
    }
    a->n -= k;
    for (const char *r = res; *r; r++)
        as_push(a, sig_type(*r, in->type));
    return 0;
}

static AbsType merge_type(AbsType x, AbsType y)
{
    return x == y ? x : AT_ANY;
}

/* Merge arm B into arm A (the state after an IF). */
static int merge(Checker *c, const Instr *at, AStack *a, AStack *b)
{
    if (b->bottom)
        return 0;
    if (a->bottom) {
        as_copy(a, b);
        return 0;
    }
    if (a->top || b->top) {
        a->top = 1;
        return 0;
    }
    if (a->nin < b->nin)
        as_need(a, a->n + (b->nin - a->nin));
    else if (b->nin < a->nin)
        as_need(b, b->n + (a->nin - b->nin));
    (void)c;
    (void)at;
    if (a->n != b->n) {
        /* Legal VCODE, though NESL never writes it: from here on the
         * stack shape is not determined statically. */
        a->top = 1;
        return 0;
    }
    for (int i = 0; i < a->n; i++)
        a->s[i] = merge_type(a->s[i], b->s[i]);
    return 0;
}

static void record(Checker *c, int idx, const AStack *a)
{
    InstrState *st = &c->p->state[idx];
    st->reached = !a->bottom;
    st->determined = !a->bottom && !a->top && c->pool_n + (size_t)a->n <= MAX_POOL;
    if (!st->determined) {
        st->depth = 0;
        st->nslots = 0;
        c->pool_off[idx] = c->pool_n;
        return;
    }
    st->depth = a->n - a->nin;
    st->nslots = a->n;
    if (c->pool_n + (size_t)a->n > c->pool_cap) {
        c->pool_cap = (c->pool_n + (size_t)a->n) * 2 + 1024;
        c->pool = vc_xrealloc(c->pool, c->pool_cap * sizeof *c->pool);
    }
    c->pool_off[idx] = c->pool_n;
    if (a->n)
        memcpy(c->pool + c->pool_n, a->s, (size_t)a->n * sizeof *a->s);
    c->pool_n += (size_t)a->n;
}

/* Walk function F once. On return *out holds the state at its RET (bottom
 * when no path returns). Returns -1 on a definite error. */
static int walk(Checker *c, int fi, AStack *out)
{
    Program *p = c->p;
    Func *f = &p->funcs[fi];
    AStack a = { 0 };
    /* Per open IF: the state at the IF (for the else arm) and the state at
     * the end of the then arm. */
    AStack saved_if[64], saved_then[64];
    int has_else[64], if_at[64];
    int depth = 0;
    memset(saved_if, 0, sizeof saved_if);
    memset(saved_then, 0, sizeof saved_then);
    int rc = 0;
    int entry = fi == p->entry;
    for (int i = f->start; i < f->end && rc == 0; i++) {
        const Instr *in = &p->code[i];
        if (c->record)
            record(c, i, &a);
        int nin_before = a.nin;
        if ((a.bottom || a.top) && in->op != OP_ELSE && in->op != OP_ENDIF && in->op != OP_IF &&
            in->op != OP_RET)
            continue;
        const OpInfo *oi = &vc_ops[in->op];
        switch (in->op) {
        case OP_COPY: case OP_POP: case OP_CPOP: {
            int ci = in->a, cj = in->b;
            int64_t reach = (int64_t)ci + cj;
            if (ci < 0 || cj < 0) {
                rc = fail(c, in, "negative operand (%d %d)", ci, cj);
            } else if (ci == 0) {
                /* no effect, however deep (the classic checks the depth
                 * only under -c) */
            } else if (reach > a.n + MAX_INPUTS) {
                /* Deeper than any caller plausibly provides: in the entry
                 * function an underflow, elsewhere left to run time. */
                if (entry)
                    rc = fail(c, in, "stack underflow: %s %d %d reaches %lld entries deep, the stack holds %d",
                              oi->name, ci, cj, (long long)reach, a.n);
                else
                    a.top = 1;
            } else {
                as_need(&a, ci + cj);
                int lo = a.n - cj - ci;
                if (ci == 0) {
                    /* nothing moves */
                } else if (in->op == OP_COPY) {
                    for (int k = 0; k < ci; k++)
                        as_push(&a, a.s[lo + k]);
                } else if (in->op == OP_POP) {
                    memmove(a.s + lo, a.s + lo + ci, (size_t)cj * sizeof *a.s);
                    a.n -= ci;
                } else if (ci > 0) {
                    AbsType tmp[256], *t = ci <= 256 ? tmp : vc_xrealloc(NULL, (size_t)ci * sizeof *t);
                    memcpy(t, a.s + lo, (size_t)ci * sizeof *t);
                    memmove(a.s + lo, a.s + lo + ci, (size_t)cj * sizeof *a.s);
                    memcpy(a.s + a.n - ci, t, (size_t)ci * sizeof *t);
                    if (t != tmp)
                        free(t);
                }
            }
            break;
        }
        case OP_PAIR:
            as_need(&a, 2);
            a.n -= 2;
            as_push(&a, AT_PAIR);
            break;
        case OP_UNPAIR:
            as_need(&a, 1);
            if (concrete(a.s[a.n - 1]) && a.s[a.n - 1] != AT_PAIR)
                rc = fail(c, in, "argument is %s, expected a pair", at_name(a.s[a.n - 1]));
            a.n--;
            as_push(&a, AT_ANY);
            as_push(&a, AT_ANY);
            break;
        case OP_CALL: {
            const Func *g = &p->funcs[in->target];
            if (g->sum.known && !g->sum.undetermined && g->sum.nin > a.n + MAX_INPUTS) {
                a.top = 1;
                break;
            }
            if (!g->sum.known) {
                a.bottom = 1;
                break;
            }
            if (g->sum.undetermined) {
                a.top = 1;
                break;
            }
            as_need(&a, g->sum.nin);
            AbsType tmp[64], *res = g->sum.nout <= 64 ? tmp : vc_xrealloc(NULL, (size_t)g->sum.nout * sizeof *res);
            for (int k = 0; k < g->sum.nout; k++) {
                AbsType t = g->sum.out[k];
                res[k] = AT_IS_INPUT(t) ? a.s[a.n - 1 - (t - AT_INPUT0)] : t;
            }
            a.n -= g->sum.nin;
            for (int k = 0; k < g->sum.nout; k++)
                as_push(&a, res[k]);
            if (res != tmp)
                free(res);
            break;
        }
        case OP_RET:
            break;
        case OP_IF:
            if (depth == 64) {
                rc = fail(c, in, "IF nesting too deep for the checker");
                break;
            }
            if (!a.bottom && !a.top) {
                as_need(&a, 1);
                AbsType t = a.s[a.n - 1];
                /* The classic takes the first 4 bytes of any vector as the
                 * flag; Bool is the sensible one, Int, Float and Segdes
                 * run as in the classic with a warning (a Float's flag is
                 * the low half of its first element's bits). */
                if (concrete(t) && t != AT_BOOL && t != AT_INT && t != AT_FLOAT && t != AT_SEGDES)
                    rc = fail(c, in, "the condition is %s, expected Bool", at_name(t));
                else if (t == AT_INT)
                    warn(c, in, "IF on an Int, not a Bool: its first element is the flag (nonzero is true), "
                                "as in the classic");
                else if (t == AT_FLOAT)
                    warn(c, in, "IF on a Float, not a Bool: the first 4 bytes of its first element are the flag "
                                "(the low half of its bits: 1.0 is false), as in the classic");
                else if (t == AT_SEGDES)
                    warn(c, in, "IF on a Segdes, not a Bool: its first length is the flag (nonzero is true), "
                                "as in the classic");
                a.n--;
            }
            as_copy(&saved_if[depth], &a);
            has_else[depth] = 0;
            if_at[depth] = i;
            depth++;
            break;
        case OP_ELSE:
            as_copy(&saved_then[depth - 1], &a);
            has_else[depth - 1] = 1;
            as_copy(&a, &saved_if[depth - 1]);
            break;
        case OP_ENDIF: {
            depth--;
            AStack *other = has_else[depth] ? &saved_then[depth] : &saved_if[depth];
            /* Both arms end with a stack the checker knows (no EXIT, no
             * undetermined call, no error before): their depths are facts. */
            if (!a.bottom && !a.top && !other->bottom && !other->top &&
                a.n - a.nin != other->n - other->nin) {
                const AStack *yes = has_else[depth] ? other : &a, *no = has_else[depth] ? &a : other;
                int d0 = saved_if[depth].n - saved_if[depth].nin;
                warn(c, &p->code[if_at[depth]],
                     "IF: its arms leave different stack depths at the ENDIF on line %d "
                     "(true arm %+d, false arm %+d); accepted, as by the classic",
                     in->line, yes->n - yes->nin - d0, no->n - no->nin - d0);
            }
            rc = merge(c, in, &a, other);
            break;
        }
        case OP_EXIT:
            a.bottom = 1;
            break;
        case OP_CONST:
            as_push(&a, from_vc(in->type));
            break;
        case OP_READ:
            as_push(&a, in->type == TY_SEGDES ? AT_ANY : from_vc(in->type));
            as_push(&a, AT_INT);
            as_push(&a, AT_BOOL);
            break;
        case OP_WRITE:
            rc = apply_sig(c, &a, in, "*", "IB");
            break;
        /* The I/O ops check their own arguments at run time, with the
         * classic's rules (vcode/SPEC.md §4.15); '*' is "any value" here. */
        case OP_FOPEN:
            rc = apply_sig(c, &a, in, "**", "IIB");
            break;
        case OP_FCLOSE:
            rc = apply_sig(c, &a, in, "*", "IB");
            break;
        case OP_FREAD:
            rc = apply_sig(c, &a, in, "*", "*IB");
            if (rc == 0)
                a.s[a.n - 3] = in->type == TY_SEGDES ? AT_ANY : from_vc(in->type);
            break;
        case OP_FREAD_CHAR:
            rc = apply_sig(c, &a, in, "***", "IIIB");
            break;
        case OP_FWRITE:
            rc = apply_sig(c, &a, in, "**", "IB");
            break;
        case OP_SPAWN:
            rc = apply_sig(c, &a, in, "****", "IIIIB");
            break;
        case OP_FUSED:
            rc = fail(c, in, "fused-operation libraries (-l) are not supported by this interpreter (FUSED %d)", in->a);
            break;
        default:
            rc = apply_sig(c, &a, in, oi->args, oi->results);
            break;
        }
        if (rc == 0 && entry && a.nin > nin_before && !a.bottom && !a.top)
            rc = fail(c, in, "stack underflow: the instruction needs %d more value%s than the stack holds",
                      a.nin - nin_before, a.nin - nin_before == 1 ? "" : "s");
        if (rc != 0) {
            /* Keep walking so every instruction gets a state. */
            a.top = 1;
            rc = 0;
        }
        if (a.n > MAX_DEPTH || a.nin > MAX_NIN)
            a.top = 1;
    }
    rc = c->failed ? -1 : 0;
    as_copy(out, &a);
    as_free(&a);
    for (int k = 0; k < 64; k++) {
        as_free(&saved_if[k]);
        as_free(&saved_then[k]);
    }
    return rc;
}

static int same_summary(const FuncSummary *s, const AStack *a)
{
    if (!s->known || s->undetermined != a->top)
        return 0;
    if (a->top)
        return 1;
    if (s->nin != a->nin || s->nout != a->n)
        return 0;
    return a->n == 0 || memcmp(s->out, a->s, (size_t)a->n * sizeof *a->s) == 0;
}

/* Functions the entry can reach through CALLs. */
static char *reachable(const Program *p)
{
    char *r = vc_xrealloc(NULL, (size_t)(p->nfuncs ? p->nfuncs : 1));
    memset(r, 0, (size_t)p->nfuncs);
    int *work = vc_xrealloc(NULL, (size_t)(p->nfuncs ? p->nfuncs : 1) * sizeof *work);
    int n = 0;
    if (p->entry >= 0) {
        r[p->entry] = 1;
        work[n++] = p->entry;
    }
    while (n > 0) {
        const Func *f = &p->funcs[work[--n]];
        for (int i = f->start; i < f->end; i++) {
            int g = p->code[i].op == OP_CALL ? p->code[i].target : -1;
            if (g >= 0 && !r[g]) {
                r[g] = 1;
                work[n++] = g;
            }
        }
    }
    free(work);
    return r;
}

static int cancelled(const Program *p) { return p->cancel && atomic_load(p->cancel); }

int vc_check(Program *p, VcError *err)
{
    Checker c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.err = err;
    AStack res = { 0 };
    int rc = 0;
    for (int pass = 0; pass < 100; pass++) {
        int changed = 0;
        for (int fi = p->nfuncs - 1; fi >= 0; fi--) {
            if (cancelled(p)) {
                as_free(&res);
                snprintf(err->msg, sizeof err->msg, "cancelled");
                return -1;
            }
            if (!p->funcs[fi].live)
                continue;
            walk(&c, fi, &res);
            if (!res.bottom && !same_summary(&p->funcs[fi].sum, &res)) {
                FuncSummary *s = &p->funcs[fi].sum;
                s->known = 1;
                s->undetermined = res.top;
                s->nin = res.nin;
                s->nout = res.n;
                s->out = vc_xrealloc(s->out, (size_t)(res.n ? res.n : 1) * sizeof *s->out);
                if (res.n)
                    memcpy(s->out, res.s, (size_t)res.n * sizeof *res.s);
                changed = 1;
            }
        }
        if (!changed)
            break;
    }
    {
        free(p->state);
        p->state = vc_xrealloc(NULL, (size_t)(p->ncode ? p->ncode : 1) * sizeof *p->state);
        memset(p->state, 0, (size_t)p->ncode * sizeof *p->state);
        c.pool_off = vc_xrealloc(NULL, (size_t)(p->ncode ? p->ncode : 1) * sizeof *c.pool_off);
        memset(c.pool_off, 0, (size_t)p->ncode * sizeof *c.pool_off);
        c.record = 1;
        char *reach = reachable(p);
        for (int fi = 0; fi < p->nfuncs && !cancelled(p); fi++)
            if (p->funcs[fi].live) {
                c.reporting = reach[fi];
                walk(&c, fi, &res);
            }
        free(reach);
        rc = c.failed || cancelled(p) ? -1 : 0;
        for (int i = 0; i < p->ncode; i++)
            p->state[i].slots = c.pool ? c.pool + c.pool_off[i] : NULL;
        free(p->slot_pool);
        p->slot_pool = c.pool;
        free(c.pool_off);
    }
    as_free(&res);
    return rc;
}

void vc_check_forget(Program *p)
{
    free(p->state);
    free(p->slot_pool);
    p->state = NULL;
    p->slot_pool = NULL;
}

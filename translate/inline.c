/* translate/inline.c — see inline.h. */
#include "translate/inline.h"
#include "vcode/xalloc.h"

#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static char *xstrdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = vc_xmalloc(n);
    memcpy(d, s, n);
    return d;
}

/* Tarjan's strongly connected components over the call graph: a function
 * is recursive when its component has several members or it calls itself. */
typedef struct {
    const Program *p;
    int *index, *low, *onstack, *stack, *comp, *compsize;
    int next, sp, ncomp;
} Scc;

static void scc_visit(Scc *s, int f)
{
    /* Iterative DFS: frames of (function, next instruction to scan). */
    int n = s->p->nfuncs;
    int *fs = vc_xmalloc((size_t)n * sizeof *fs), *pcs = vc_xmalloc((size_t)n * sizeof *pcs);
    int depth = 0;
    fs[0] = f;
    pcs[0] = s->p->funcs[f].start;
    s->index[f] = s->low[f] = s->next++;
    s->stack[s->sp++] = f;
    s->onstack[f] = 1;
    while (depth >= 0) {
        int g = fs[depth];
        const Func *fn = &s->p->funcs[g];
        int pushed = 0;
        while (pcs[depth] < fn->end) {
            const Instr *in = &s->p->code[pcs[depth]++];
            if (in->op != OP_CALL || in->target < 0)
                continue;
            int h = in->target;
            if (s->index[h] < 0) {
                s->index[h] = s->low[h] = s->next++;
                s->stack[s->sp++] = h;
                s->onstack[h] = 1;
                depth++;
                fs[depth] = h;
                pcs[depth] = s->p->funcs[h].start;
                pushed = 1;
                break;
            } else if (s->onstack[h] && s->index[h] < s->low[g]) {
                s->low[g] = s->index[h];
            }
        }
        if (pushed)
            continue;
        if (s->low[g] == s->index[g]) {
            int h, size = 0;
            do {
                h = s->stack[--s->sp];
                s->onstack[h] = 0;
                s->comp[h] = s->ncomp;
                size++;
            } while (h != g);
            s->compsize[s->ncomp++] = size;
        }
        depth--;
        if (depth >= 0 && s->low[g] < s->low[fs[depth]])
            s->low[fs[depth]] = s->low[g];
    }
    free(fs);
    free(pcs);
}

static int *recursive_functions(const Program *p, int *count)
{
    int n = p->nfuncs;
    Scc s;
    memset(&s, 0, sizeof s);
    s.p = p;
    s.index = vc_xmalloc((size_t)n * sizeof(int));
    s.low = vc_xmalloc((size_t)n * sizeof(int));
    s.onstack = calloc((size_t)n + 1, sizeof(int));
    s.stack = vc_xmalloc((size_t)n * sizeof(int));
    s.comp = vc_xmalloc((size_t)n * sizeof(int));
    s.compsize = vc_xmalloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++)
        s.index[i] = -1;
    for (int i = 0; i < n; i++)
        if (s.index[i] < 0)
            scc_visit(&s, i);
    int *rec = calloc((size_t)n + 1, sizeof(int));
    *count = 0;
    for (int f = 0; f < n; f++) {
        int r = s.compsize[s.comp[f]] > 1;
        for (int i = p->funcs[f].start; i < p->funcs[f].end && !r; i++)
            if (p->code[i].op == OP_CALL && p->code[i].target == f)
                r = 1;
        rec[f] = r;
        *count += r;
    }
    free(s.index);
    free(s.low);
    free(s.onstack);
    free(s.stack);
    free(s.comp);
    free(s.compsize);
    return rec;
}

/* A growable instruction list. */
typedef struct {
    Instr *code;
    int n, cap;
} Code;

static void code_push(Code *c, const Instr *in)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->code = vc_xrealloc(c->code, (size_t)c->cap * sizeof *c->code);
    }
    c->code[c->n++] = *in;
}

/* Re-pair IF/ELSE/ENDIF targets within a body starting at index BASE. */
static void fix_branches(Instr *code, int n, int base)
{
    int stack[64], depth = 0;
    for (int i = 0; i < n; i++) {
        Instr *in = &code[i];
        if (in->op == OP_IF) {
            if (depth < 64)
                stack[depth] = i;
            depth++;
        } else if (in->op == OP_ELSE && depth > 0 && depth <= 64) {
            code[stack[depth - 1]].target = base + i + 1;
            stack[depth - 1] = i;
        } else if (in->op == OP_ENDIF && depth > 0) {
            depth--;
            if (depth < 64)
                code[stack[depth]].target = base + i;
        }
    }
}

int inline_program(const Program *src, Program *dst, const InlineOptions *opt, InlineStats *st)
{
    return inline_program_map(src, dst, opt, st, NULL);
}

/* The functions in post-order over SRC's non-recursive call edges (REC:
 * per function, 1 when recursive): callees before their callers. Returns
 * how many went into ORDER (every function). */
static int call_order(const Program *src, const int *rec, int *order)
{
    int nf = src->nfuncs, norder = 0;
    int *state = vc_xcalloc((size_t)nf + 1, sizeof *state); /* 0 unvisited, 1 in progress, 2 finished */
    int *fstack = vc_xmalloc((size_t)(nf + 1) * sizeof *fstack), *pcs = vc_xmalloc((size_t)(nf + 1) * sizeof *pcs);
    for (int root = 0; root < nf; root++) {
        if (state[root])
            continue;
        int d = 0;
        fstack[0] = root;
        pcs[0] = src->funcs[root].start;
        state[root] = 1;
        while (d >= 0) {
            int g = fstack[d];
            int pushed = 0;
            while (pcs[d] < src->funcs[g].end) {
                const Instr *in = &src->code[pcs[d]++];
                if (in->op == OP_CALL && in->target >= 0 && !rec[in->target] && state[in->target] == 0) {
                    state[in->target] = 1;
                    d++;
                    fstack[d] = in->target;
                    pcs[d] = src->funcs[in->target].start;
                    pushed = 1;
                    break;
                }
            }
            if (pushed)
                continue;
            state[g] = 2;
            order[norder++] = g;
            d--;
        }
    }
    free(fstack);
    free(pcs);
    free(state);
    return norder;
}

/* DST from the inlined BODY of each of SRC's functions, each with its RET;
 * PCMAP (or NULL), relative to each body, made absolute. */
static void assemble(const Program *src, const Code *body, Program *dst, int *pcmap)
{
    int nf = src->nfuncs, total = 0;
    for (int f = 0; f < nf; f++)
        total += body[f].n + 1;
    dst->code = vc_xmalloc((size_t)total * sizeof *dst->code);
    dst->capcode = total;
    dst->funcs = vc_xmalloc((size_t)(nf ? nf : 1) * sizeof *dst->funcs);
    dst->capfuncs = nf;
    for (int f = 0; f < nf; f++) {
        const Func *fn = &src->funcs[f];
        Func *g = &dst->funcs[dst->nfuncs++];
        *g = *fn;
        g->name = xstrdup(fn->name);
        g->sum.out = NULL;
        memset(&g->sum, 0, sizeof g->sum);
        g->start = dst->ncode;
        if (body[f].n > 0)
            memcpy(dst->code + dst->ncode, body[f].code, (size_t)body[f].n * sizeof *dst->code);
        dst->ncode += body[f].n;
        dst->code[dst->ncode++] = src->code[fn->end - 1]; /* RET */
        g->end = dst->ncode;
        if (pcmap) {
            for (int i = fn->start; i < fn->end - 1; i++)
                pcmap[i] += g->start;
            pcmap[fn->end - 1] = g->end - 1;
        }
        fix_branches(dst->code + g->start, g->end - g->start, g->start);
    }
    for (int i = 0; i < dst->ncode; i++)
        dst->code[i].name = xstrdup(dst->code[i].name);
}

/* SRC's constants into DST: a deep copy, so that vc_free(dst) is
 * independent of SRC. */
static void copy_consts(const Program *src, Program *dst)
{
    dst->nconsts = dst->capconsts = src->nconsts;
    dst->consts = vc_xmalloc((size_t)(src->nconsts ? src->nconsts : 1) * sizeof *dst->consts);
    for (int i = 0; i < src->nconsts; i++) {
        VcConst c = src->consts[i];
        size_t n = (size_t)(c.len ? c.len : 1);
        if (c.ints) {
            int32_t *v = vc_xmalloc(n * sizeof *v);
            memcpy(v, src->consts[i].ints, (size_t)c.len * sizeof *v);
            c.ints = v;
        }
        if (c.floats) {
            double *v = vc_xmalloc(n * sizeof *v);
            memcpy(v, src->consts[i].floats, (size_t)c.len * sizeof *v);
            c.floats = v;
        }
        dst->consts[i] = c;
    }
}

int inline_program_map(const Program *src, Program *dst, const InlineOptions *opt, InlineStats *st, int *pcmap)
{
    InlineOptions def;
    if (!opt) {
        inline_default_options(&def);
        opt = &def;
    }
    memset(st, 0, sizeof *st);
    memset(dst, 0, sizeof *dst);
    for (int i = 0; pcmap && i < src->ncode; i++)
        pcmap[i] = -1;
    int nf = src->nfuncs;
    int *rec = recursive_functions(src, &st->recursive_funcs);
    /* Inlined bodies (without RET), computed callees first by memoised
     * recursion over the acyclic part of the call graph. */
    Code *body = vc_xcalloc((size_t)nf + 1, sizeof *body);
    int *order = vc_xmalloc((size_t)(nf ? nf : 1) * sizeof *order);
    int norder = call_order(src, rec, order);
    /* The program's size as inlined so far (bodies done, the others as
     * they are), and its cap: bodies are built callees first, so without
     * a cap a chain of n small functions each calling the next grows to
     * about n * max_callee / 2. */
    long size = src->ncode, growth = opt->max_growth > 0 ? opt->max_growth : 200000;
    long cap = size + (size > growth ? size : growth);
    int rc = 0;
    for (int k = 0; k < norder && rc == 0; k++) {
        if (opt->cancel && atomic_load(opt->cancel)) { /* a tier worker told to stop */
            rc = -1;
            break;
        }
        int f = order[k];
        const Func *fn = &src->funcs[f];
        Code *c = &body[f];
        for (int i = fn->start; i < fn->end - 1; i++) {
            const Instr *in = &src->code[i];
            int g = in->op == OP_CALL ? in->target : -1;
            if (pcmap)
                pcmap[i] = c->n; /* made absolute by assemble */
            int ok = g >= 0 && !rec[g] && body[g].n <= opt->max_callee &&
                     c->n + body[g].n + (fn->end - 1 - i) <= opt->max_function;
            if (ok && size + body[g].n - 1 > cap) {
                ok = 0;
                st->calls_over_budget++;
            }
            if (ok) {
                for (int j = 0; j < body[g].n; j++)
                    code_push(c, &body[g].code[j]);
                size += body[g].n - 1;
                st->calls_inlined++;
            } else {
                code_push(c, in);
                if (g >= 0)
                    st->calls_kept++;
            }
        }
    }
    if (rc == 0) {
        assemble(src, body, dst, pcmap);
        copy_consts(src, dst);
        dst->filename = xstrdup(src->filename);
        dst->entry = src->entry;
        st->code_before = src->ncode;
        st->code_after = dst->ncode;
    }
    for (int f = 0; f < nf; f++)
        free(body[f].code);
    free(body);
    free(order);
    free(rec);
    return rc;
}

void inline_default_options(InlineOptions *o)
{
    memset(o, 0, sizeof *o);
    o->max_callee = 400;
    o->max_function = 20000;
    o->max_growth = 200000;
}

/* runtime/fused/cuda_guard.c — IFs whose THEN branch is NESL's runtime
 * error exit (see cuda_guard.h). */
#include "runtime/fused/cuda_guard.h"
#include "runtime/core/errors.h"

#include <stdlib.h>

struct GuardCache {
    const Program *p;
    int8_t *known; /* per pc: 0 not looked at, 1 a guard, -1 not */
    int32_t *msg;
    int32_t *depth;
};

GuardCache *guard_cache_new(void) { return rt_xcalloc(1, sizeof(GuardCache)); }

static void drop(GuardCache *g)
{
    free(g->known);
    free(g->msg);
    free(g->depth);
    g->known = NULL;
    g->msg = g->depth = NULL;
    g->p = NULL;
}

void guard_cache_free(GuardCache *g)
{
    if (!g)
        return;
    drop(g);
    free(g);
}

static int is_op(const Program *p, int i, int op) { return i < p->ncode && (int)p->code[i].op == op; }

/* CONST of a scalar Int (or Bool when BOOL) at I. */
static int const_scalar(const Program *p, int i, int bool_)
{
    return is_op(p, i, OP_CONST) && p->code[i].ckind != CK_VECTOR && p->code[i].type == (bool_ ? TY_BOOL : TY_INT);
}

/* NESL's print_string's body at S: POP 1 1 / WRITE CHAR / POP 2 0 /
 * CONST BOOL b (then its RET, or the code it was inlined into). */
static int print_body(const Program *p, int s)
{
    const Instr *c = p->code;
    return s + 4 <= p->ncode && c[s].op == OP_POP && c[s].a == 1 && c[s].b == 1 && c[s + 1].op == OP_WRITE &&
           c[s + 1].type == TY_CHAR && c[s + 2].op == OP_POP && c[s + 2].a == 2 && c[s + 2].b == 0 &&
           const_scalar(p, s + 3, 1);
}

/* After the message at I: a CALL of print_string (its body and RET), or
 * its body inlined; the index after it, or -1. */
static int printed(const Program *p, int i)
{
    if (is_op(p, i, OP_CALL)) {
        int f = p->code[i].target;
        if (f < 0 || f >= p->nfuncs || !print_body(p, p->funcs[f].start) || !is_op(p, p->funcs[f].start + 4, OP_RET))
            return -1;
        return i + 1;
    }
    return print_body(p, i) ? i + 4 : -1;
}

static int recognize(const Program *p, int pc, int *msg, int *depth)
{
    const Instr *c = p->code;
    int i = pc + 1, need = 0, gone = 0;
    while (is_op(p, i, OP_POP)) { /* the caller's values going: POP a b drops a entries at depth b */
        int reach = c[i].a + c[i].b + gone; /* entries the stack had below the condition */
        if (reach > need)
            need = reach;
        gone += c[i].a;
        i++;
    }
    if (!const_scalar(p, i, 0) || !is_op(p, i + 1, OP_MAKE_SEGDES) || !is_op(p, i + 2, OP_CONST) ||
        c[i + 2].ckind != CK_VECTOR || c[i + 2].cidx < 0 || c[i + 2].cidx >= p->nconsts ||
        !p->consts[c[i + 2].cidx].is_string)
        return 0;
    int j = printed(p, i + 3);
    if (j < 0 || !is_op(p, j, OP_POP) || c[j].a != 1 || c[j].b != 0 || !const_scalar(p, j + 1, 0) ||
        !is_op(p, j + 2, OP_EXIT))
        return 0;
    *msg = c[i + 2].cidx;
    *depth = need;
    return 1;
}

int guard_exit_if(GuardCache *g, const Program *p, int pc, int *msg, int *depth)
{
    if (pc < 0 || pc >= p->ncode || p->code[pc].op != OP_IF)
        return 0;
    if (g->p != p) {
        drop(g);
        g->known = rt_xcalloc((size_t)p->ncode, 1);
        g->msg = rt_xcalloc((size_t)p->ncode, sizeof *g->msg);
        g->depth = rt_xcalloc((size_t)p->ncode, sizeof *g->depth);
        g->p = p;
    }
    if (!g->known[pc]) {
        int m = 0, d = 0;
        g->known[pc] = recognize(p, pc, &m, &d) ? 1 : -1;
        g->msg[pc] = m;
        g->depth[pc] = d;
    }
    *msg = g->msg[pc];
    *depth = g->depth[pc];
    return g->known[pc] == 1;
}

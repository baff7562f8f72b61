/* translate/dfg.c — see dfg.h. */
#include "translate/dfg.h"
#include "vcode/xalloc.h"
#include "vcode/optable.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Instructions that end a block (and are not part of any). */
static int is_control(Opcode op)
{
    switch (op) {
    case OP_CALL: case OP_RET: case OP_IF: case OP_ELSE: case OP_ENDIF: case OP_EXIT:
    case OP_READ: case OP_WRITE: case OP_FOPEN: case OP_FCLOSE: case OP_FREAD:
    case OP_FREAD_CHAR: case OP_FWRITE: case OP_SPAWN:
    case OP_START_TIMER: case OP_STOP_TIMER: case OP_SRAND:
    case OP_PAIR: case OP_UNPAIR: case OP_FUSED:
        return 1;
    default:
        return 0;
    }
}

static int is_vector(Opcode op)
{
    return !is_control(op) && op != OP_COPY && op != OP_POP && op != OP_CPOP && op != OP_CONST;
}

int dfg_blocks(const Program *p, Block **out)
{
    int n = 0, cap = 64;
    Block *b = vc_xrealloc(NULL, (size_t)cap * sizeof *b);
    for (int f = 0; f < p->nfuncs; f++) {
        if (!p->funcs[f].live)
            continue;
        int i = p->funcs[f].start, end = p->funcs[f].end;
        while (i < end) {
            if (is_control(p->code[i].op)) {
                i++;
                continue;
            }
            int s = i, nv = 0;
            while (i < end && !is_control(p->code[i].op)) {
                nv += is_vector(p->code[i].op);
                i++;
            }
            if (n == cap) {
                cap *= 2;
                b = vc_xrealloc(b, (size_t)cap * sizeof *b);
            }
            b[n].func = f;
            b[n].start = s;
            b[n].end = i;
            b[n].nvector = nv;
            n++;
        }
    }
    *out = b;
    return n;
}

/* The symbolic stack: value ids, bottom -> top; inputs are materialised
 * below on demand. */
typedef struct {
    int *s;
    int n, cap;
} SymStack;

static DfgType type_of(char sig, VcType operand)
{
    switch (sig) {
    case 'T':
        switch (operand) {
        case TY_BOOL: return DT_BOOL;
        case TY_FLOAT: return DT_FLOAT;
        case TY_SEGDES: return DT_SEGDES;
        default: return DT_INT;
        }
    case 'I': return DT_INT;
    case 'B': return DT_BOOL;
    case 'F': return DT_FLOAT;
    case 'S': return DT_SEGDES;
    default: return DT_UNKNOWN;
    }
}

typedef struct {
    Dfg *g;
    int capvals, capnodes;
    SymStack st;
} Builder;

static int new_value(Builder *b, DfgType t, int producer)
{
    Dfg *g = b->g;
    if (g->nvals == b->capvals) {
        b->capvals = b->capvals ? 2 * b->capvals : 64;
        g->types = vc_xrealloc(g->types, (size_t)b->capvals * sizeof *g->types);
        g->producer = vc_xrealloc(g->producer, (size_t)b->capvals * sizeof *g->producer);
    }
    g->types[g->nvals] = t;
    g->producer[g->nvals] = producer;
    return g->nvals++;
}

/* Make the symbolic stack hold at least K entries. Inputs must be created
 * before any computed value, so this is only legal while the block has not
 * produced anything below the current bottom — which holds because inputs
 * are numbered by entry depth and created in increasing depth. */
static int need(Builder *b, int k)
{
    SymStack *s = &b->st;
    if (s->n >= k)
        return 0;
    int add = k - s->n;
    if (s->cap < k) {
        s->cap = k * 2 + 16;
        s->s = vc_xrealloc(s->s, (size_t)s->cap * sizeof *s->s);
    }
    memmove(s->s + add, s->s, (size_t)s->n * sizeof *s->s);
    for (int i = 0; i < add; i++) {
        /* the new entry at position add-1-i has entry depth nin */
        int v = new_value(b, DT_UNKNOWN, -1);
        b->g->nin++;
        s->s[add - 1 - i] = v;
    }
    s->n = k;
    return 0;
}

static void push(Builder *b, int v)
{
    SymStack *s = &b->st;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->s = vc_xrealloc(s->s, (size_t)s->cap * sizeof *s->s);
    }
    s->s[s->n++] = v;
}

int dfg_build(const Program *p, const Block *blk, Dfg *g)
{
    memset(g, 0, sizeof *g);
    Builder b;
    memset(&b, 0, sizeof b);
    b.g = g;
    int rc = 0;
    /* Inputs get value ids in order of discovery, which is increasing entry
     * depth; values computed in the block come after. Since inputs and
     * computed values interleave in discovery, renumbering is needed: keep
     * a map and fix up at the end. Simpler: inputs are discovered lazily, so
     * record (value, depth) and renumber so that input j = depth j. */
    for (int i = blk->start; i < blk->end && rc == 0; i++) {
        const Instr *in = &p->code[i];
        const OpInfo *oi = &vc_ops[in->op];
        switch (in->op) {
        case OP_COPY: case OP_POP: case OP_CPOP: {
            int64_t ci = in->a, cj = in->b;
            if (ci < 0 || cj < 0 || ci + cj > 100000) {
                rc = -1;
                break;
            }
            need(&b, (int)(ci + cj));
            int lo = b.st.n - (int)cj - (int)ci;
            if (in->op == OP_COPY) {
                for (int k = 0; k < ci; k++)
                    push(&b, b.st.s[lo + k]);
            } else if (in->op == OP_POP) {
                if (ci > 0 && cj > 0)
                    memmove(b.st.s + lo, b.st.s + lo + ci, (size_t)cj * sizeof *b.st.s);
                b.st.n -= (int)ci;
            } else if (ci > 0 && cj > 0) {
                int *t = vc_xrealloc(NULL, (size_t)ci * sizeof *t);
                memcpy(t, b.st.s + lo, (size_t)ci * sizeof *t);
                memmove(b.st.s + lo, b.st.s + lo + ci, (size_t)cj * sizeof *b.st.s);
                memcpy(b.st.s + b.st.n - ci, t, (size_t)ci * sizeof *t);
                free(t);
            }
            break;
        }
        default: {
            if (g->nnodes == b.capnodes) {
                b.capnodes = b.capnodes ? 2 * b.capnodes : 32;
                g->nodes = vc_xrealloc(g->nodes, (size_t)b.capnodes * sizeof *g->nodes);
            }
            DfgNode *nd = &g->nodes[g->nnodes];
            memset(nd, 0, sizeof *nd);
            nd->op = in->op;
            nd->type = in->type;
            nd->instr = i;
            if (in->op == OP_CONST) {
                DfgType t = type_of('T', in->type);
                if (in->ckind == CK_VECTOR && p->consts[in->cidx].type == TY_SEGDES)
                    t = DT_SEGDES;
                nd->scalar = in->ckind == CK_SCALAR;
                nd->nres = 1;
                nd->res[0] = new_value(&b, t, g->nnodes);
                push(&b, nd->res[0]);
                g->nnodes++;
                break;
            }
            const char *args = oi->args, *res = oi->results;
            if (!args) {
                rc = -1;
                break;
            }
            int k = (int)strlen(args);
            need(&b, k);
            nd->nargs = k;
            for (int a = 0; a < k; a++) {
                int v = b.st.s[b.st.n - k + a];
                nd->args[a] = v;
                DfgType want = type_of(args[a], in->type);
                if (args[a] == 'A')
                    want = DT_UNKNOWN;
                if (want != DT_UNKNOWN) {
                    if (g->types[v] == DT_UNKNOWN && g->producer[v] < 0)
                        g->types[v] = want; /* an input: its type is now known */
                    else if (g->types[v] != want && g->types[v] != DT_UNKNOWN)
                        rc = -1;            /* a type error: let the interpreter report it */
                }
            }
            b.st.n -= k;
            nd->nres = (int)strlen(res);
            for (int r = 0; r < nd->nres; r++) {
                DfgType t = type_of(res[r], in->type);
                /* PACK's data result and DIST's etc. follow the type operand. */
                nd->res[r] = new_value(&b, t, g->nnodes);
                push(&b, nd->res[r]);
            }
            g->nnodes++;
            break;
        }
        }
    }
    if (rc == 0) {
        /* Renumber: inputs first, input j = entry depth j. Inputs were
         * created in increasing depth, so the k-th input created has depth k. */
        int nv = g->nvals;
        int *map = vc_xrealloc(NULL, (size_t)(nv ? nv : 1) * sizeof *map);
        int next_in = 0, next_other = g->nin;
        for (int v = 0; v < nv; v++)
            map[v] = g->producer[v] < 0 ? next_in++ : next_other++;
        DfgType *nt = vc_xrealloc(NULL, (size_t)(nv ? nv : 1) * sizeof *nt);
        int *np = vc_xrealloc(NULL, (size_t)(nv ? nv : 1) * sizeof *np);
        for (int v = 0; v < nv; v++) {
            nt[map[v]] = g->types[v];
            np[map[v]] = g->producer[v];
        }
        free(g->types);
        free(g->producer);
        g->types = nt;
        g->producer = np;
        for (int n = 0; n < g->nnodes; n++) {
            for (int a = 0; a < g->nodes[n].nargs; a++)
                g->nodes[n].args[a] = map[g->nodes[n].args[a]];
            for (int r = 0; r < g->nodes[n].nres; r++)
                g->nodes[n].res[r] = map[g->nodes[n].res[r]];
        }
        g->nout = b.st.n;
        g->out = vc_xrealloc(NULL, (size_t)(b.st.n ? b.st.n : 1) * sizeof *g->out);
        for (int i = 0; i < b.st.n; i++)
            g->out[i] = map[b.st.s[i]];
        free(map);
    }
    free(b.st.s);
    if (rc != 0)
        dfg_free(g);
    return rc;
}

void dfg_free(Dfg *g)
{
    free(g->types);
    free(g->nodes);
    free(g->out);
    free(g->producer);
    memset(g, 0, sizeof *g);
}

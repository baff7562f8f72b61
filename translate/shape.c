/* translate/shape.c — see shape.h. */
#include "translate/shape.h"
#include "vcode/optable.h"

#include <stdio.h>
#include <stdlib.h>

int shape_find(Shapes *s, int q)
{
    while (s->parent[q] != q) {
        s->parent[q] = s->parent[s->parent[q]];
        q = s->parent[q];
    }
    return q;
}

void shape_union(Shapes *s, int a, int b)
{
    a = shape_find(s, a);
    b = shape_find(s, b);
    if (a != b) {
        /* keep the smaller root: deterministic class numbers */
        if (a < b)
            s->parent[b] = a;
        else
            s->parent[a] = b;
    }
}

#define L(v) SQ_LEN(v)
#define N(v) SQ_N(v)

void shape_analyse(const Dfg *g, int nvars, const int *extra_eq, Shapes *s)
{
    s->nq = 2 * nvars + 1;
    s->one = 2 * nvars;
    s->parent = malloc((size_t)s->nq * sizeof *s->parent);
    if (!s->parent) {
        fprintf(stderr, "vinterp: out of memory in shape analysis\n");
        exit(1);
    }
    for (int q = 0; q < s->nq; q++)
        s->parent[q] = q;
    for (int i = 0; i < g->nnodes; i++) {
        const DfgNode *nd = &g->nodes[i];
        const int *a = nd->args, *r = nd->res;
        /* Between the arguments: the instruction's length rules
         * (vcode/optable.c), for a descriptor L = its segments, N = its
         * elements. */
        const OpInfo *oi = (unsigned)nd->op < OP_COUNT ? &vc_ops[nd->op] : NULL;
        for (int j = 0; oi && j < nd->nargs && j < OP_MAXARGS; j++)
            for (int k = 0; k < 2; k++) {
                int ref = oi->ref[j][k];
                if (oi->rule[j][k] == LC_NONE || ref < 0 || ref >= nd->nargs)
                    continue;
                shape_union(s, oi->rule[j][k] == LC_SAME ? L(a[j]) : N(a[j]), L(a[ref]));
            }
        /* The results' lengths. */
        switch (nd->op) {
        case OP_CONST:
            if (nd->scalar)
                shape_union(s, L(r[0]), s->one);
            break;
        case OP_LENGTH:
            shape_union(s, L(r[0]), s->one);
            break;
        case OP_LENGTHS: case OP_MAKE_SEGDES: case OP_SELECT:
        case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MOD:
        case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE:
        case OP_AND: case OP_OR: case OP_XOR:
        case OP_PLUS_SCAN: case OP_MUL_SCAN: case OP_MAX_SCAN: case OP_MIN_SCAN:
        case OP_AND_SCAN: case OP_OR_SCAN: case OP_XOR_SCAN:
        case OP_RANK_UP: case OP_RANK_DOWN: case OP_PERMUTE: case OP_REPLACE:
        case OP_RAND: case OP_NOT: case OP_FLOOR: case OP_CEIL: case OP_TRUNC: case OP_ROUND:
        case OP_LOG: case OP_SQRT: case OP_EXP: case OP_SIN: case OP_COS: case OP_TAN:
        case OP_ASIN: case OP_ACOS: case OP_ATAN: case OP_SINH: case OP_COSH: case OP_TANH:
        case OP_I_TO_F: case OP_I_TO_B: case OP_B_TO_I:
            shape_union(s, L(r[0]), L(a[0]));
            break;
        case OP_PLUS_REDUCE: case OP_MUL_REDUCE: case OP_MAX_REDUCE: case OP_MIN_REDUCE:
        case OP_AND_REDUCE: case OP_OR_REDUCE: case OP_XOR_REDUCE:
        case OP_BPERMUTE: case OP_BFPERMUTE: case OP_EXTRACT:
            shape_union(s, L(r[0]), L(a[1]));
            break;
        case OP_DPERMUTE: /* data idx dflt ssd dsd */
            shape_union(s, L(r[0]), L(a[2]));
            break;
        case OP_FPERMUTE: /* data idx flags ssd dsd */
            shape_union(s, L(r[0]), N(a[4]));
            break;
        case OP_DFPERMUTE: /* data idx flags dflt ssd dsd */
            /* the index has the data's length: a rule the classic's -c
             * table (and so optable) lacks */
            shape_union(s, L(a[1]), L(a[0]));
            shape_union(s, L(r[0]), L(a[3]));
            break;
        case OP_DIST: /* vals sd */
            shape_union(s, L(r[0]), N(a[1]));
            break;
        case OP_INDEX: /* init stride sd */
            shape_union(s, L(r[0]), N(a[2]));
            break;
        case OP_PACK: /* data flags sd -> data' sd' */
            shape_union(s, L(r[1]), L(a[2]));
            shape_union(s, L(r[0]), N(r[1]));
            break;
        default:
            if (vc_op_is_sem(nd->op)) /* elementwise */
                shape_union(s, L(r[0]), L(a[0]));
            break;
        }
    }
    for (const int *e = extra_eq; e && e[0] >= 0; e += 2)
        shape_union(s, e[0], e[1]);
}

void shape_free(Shapes *s)
{
    free(s->parent);
    s->parent = NULL;
}

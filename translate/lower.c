/* translate/lower.c — see lower.h. The kernels follow the thesis §6 table,
 * in their segmented forms:
 *   elementwise op        MAP { i => a[i] op b[i] } (#a)
 *   SELECT                MAP { i => if f[i] then a[i] else b[i] } (#f)
 *   RAND                  LIB rand_stream(lim); MAP { i => randmod(s[i], lim[i]) }
 *   OP_SCAN / OP_REDUCE   SEG_SCAN / SEG_REDUCE { i => d[i] } (rop) sd
 *   PERMUTE family        SEG_PERMUTE value index [flag] ssd -> dsd [default]
 *   BPERMUTE, BFPERMUTE   MAP over the destination with a gather
 *   EXTRACT               MAP over the segments
 *   DIST, INDEX           MAP with seg_of / seg_start
 *   REPLACE               a host step, in place when the block owns the data
 *                         (the reference's O(segments) update, not a copy)
 *   PACK                  SEG_FILTER { i => d[i] } { i => f[i] } sd
 *   RANK_UP, RANK_DOWN    LIB rank_up / rank_down
 * Segment-relative indices are checked with checkidx, as the reference
 * interpreter checks them. */
#include "translate/lower.h"
#include "vcode/xalloc.h"
#include "translate/lcu_prims.h"
#include "vcode/optable.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static VsElem base_of(DfgType t)
{
    switch (t) {
    case DT_BOOL: return VS_BOOL;
    case DT_FLOAT: return VS_FLOAT;
    default: return VS_INT;
    }
}

static VsElem base_of_vc(VcType t)
{
    switch (t) {
    case TY_BOOL: return VS_BOOL;
    case TY_FLOAT: return VS_FLOAT;
    default: return VS_INT;
    }
}

typedef struct {
    Lowered *l;
    int capsteps, capvars;
    int nlocals;        /* fresh thunk-local numbers */
    int kid;            /* next kernel id */
} Low;

static int new_var(Low *w, LcuVarKind kind, VsElem base)
{
    Lowered *l = w->l;
    if (l->nvars == w->capvars) {
        w->capvars = w->capvars ? 2 * w->capvars : 64;
        l->types = vc_xrealloc(l->types, (size_t)w->capvars * sizeof *l->types);
        l->typed = vc_xrealloc(l->typed, (size_t)w->capvars);
    }
    l->types[l->nvars].kind = kind;
    l->types[l->nvars].base = base;
    l->typed[l->nvars] = 1;
    return l->nvars++;
}

static void add_step(Low *w, StepKind kind, int node, LcuKernel *k)
{
    Lowered *l = w->l;
    if (l->nsteps == w->capsteps) {
        w->capsteps = w->capsteps ? 2 * w->capsteps : 32;
        l->steps = vc_xrealloc(l->steps, (size_t)w->capsteps * sizeof *l->steps);
    }
    l->steps[l->nsteps].kind = kind;
    l->steps[l->nsteps].node = node;
    l->steps[l->nsteps].k = k;
    l->nsteps++;
    if (kind == STEP_KERNEL)
        l->nkernels++;
}

static LcuKernel *one_soac(Low *w, LcuSoac *s)
{
    LcuKernel *k = lcu_kernel_new(w->kid++);
    lcu_kernel_add(k, s);
    return k;
}

static LcuShape shape_len(int var) { LcuShape s = { LSH_LEN, var }; return s; }
static LcuShape shape_segn(int sd) { LcuShape s = { LSH_SEG_N, sd }; return s; }
static LcuShape shape_segm(int sd) { LcuShape s = { LSH_SEG_M, sd }; return s; }

/* x[i] for array variable X of element type B */
static LcuExpr *at_i(int x, VsElem b) { return lcu_sub(x, b, lcu_index()); }

static LcuPrim prim_of(Opcode op) { return lcu_prim_of_op(op); }

/* let k = seg_of(sd, i) in BODY(k) — BODY builds with the local number. */
static int fresh(Low *w) { return w->nlocals++; }

/* data[seg_start(ssd, k) + checkidx(ix, seg_len(ssd, k))] */
static LcuExpr *seg_gather(int data, VsElem b, int ssd, LcuExpr *k, LcuExpr *ix)
{
    LcuExpr *len = lcu_seg(LE_SEG_LEN, ssd, lcu_expr_copy(k));
    LcuExpr *chk = lcu_prim2(LP_CHECKIDX, VS_INT, ix, len);
    LcuExpr *pos = lcu_prim2(LP_ADD, VS_INT, lcu_seg(LE_SEG_START, ssd, k), chk);
    return lcu_sub(data, b, pos);
}

/* The permutes: PERMUTE, DPERMUTE, FPERMUTE, DFPERMUTE as SEG_PERMUTEs
 * (push), BPERMUTE and BFPERMUTE as MAPs that gather (pull). */
static LcuSoac *lower_permute(Low *w, const DfgNode *nd, VsElem T)
{
    const int *a = nd->args;
    LcuSoac *s;
    switch (nd->op) {
    case OP_PERMUTE: case OP_DPERMUTE: case OP_FPERMUTE: case OP_DFPERMUTE: {
        /* data idx [flags] [dflt] ssd dsd (PERMUTE: data idx sd, one
         * descriptor for both sides) */
        int fl = nd->op == OP_FPERMUTE || nd->op == OP_DFPERMUTE;
        int df = nd->op == OP_DPERMUTE || nd->op == OP_DFPERMUTE;
        int ssd = 2 + fl + df;
        s = lcu_soac_new(LS_SEG_PERMUTE);
        s->pull = lcu_thunk(at_i(a[0], T), 1);
        s->idx = lcu_thunk(at_i(a[1], VS_INT), 1);
        if (fl)
            s->pred = lcu_thunk(at_i(a[2], VS_BOOL), 1);
        if (df)
            s->dflt[0] = a[2 + fl];
        s->shape = shape_segn(a[ssd]);
        s->dst_sd = nd->op == OP_PERMUTE ? a[ssd] : a[ssd + 1];
        return s;
    }
    default: { /* BPERMUTE data idx ssd dsd: r[j] = data[start(ssd, k) + idx[j]], k = seg_of(dsd, j);
                * BFPERMUTE data idx flags ssd dsd */
        int bf = nd->op == OP_BFPERMUTE;
        int ssd = a[bf ? 3 : 2], dsd = a[bf ? 4 : 3];
        int k = fresh(w);
        LcuExpr *g1 = seg_gather(a[0], T, ssd, lcu_local(k, VS_INT), at_i(a[1], VS_INT));
        LcuExpr *body = lcu_let(k, lcu_seg(LE_SEG_OF, dsd, lcu_index()), g1);
        if (bf) {
            LcuExpr *zero = T == VS_FLOAT ? lcu_float(0.0) : T == VS_BOOL ? lcu_bool(0) : lcu_int(0);
            body = lcu_if(at_i(a[2], VS_BOOL), body, zero);
        }
        s = lcu_soac_new(LS_MAP);
        s->pull = lcu_thunk(body, 1);
        s->shape = shape_len(a[1]);
        return s;
    }
    }
}

/* The segment instructions: EXTRACT, DIST, INDEX, PACK, RANK_UP/DOWN. */
static LcuSoac *lower_segment(Low *w, const DfgNode *nd, VsElem T)
{
    const int *a = nd->args;
    LcuSoac *s;
    switch (nd->op) {
    case OP_EXTRACT: /* data idx sd: r[k] = data[start(sd,k) + idx[k]] over the segments */
        s = lcu_soac_new(LS_MAP);
        s->pull = lcu_thunk(seg_gather(a[0], T, a[2], lcu_index(), at_i(a[1], VS_INT)), 1);
        s->shape = shape_segm(a[2]);
        return s;
    case OP_DIST: /* vals sd */
        s = lcu_soac_new(LS_MAP);
        s->pull = lcu_thunk(lcu_sub(a[0], T, lcu_seg(LE_SEG_OF, a[1], lcu_index())), 1);
        s->shape = shape_segn(a[1]);
        return s;
    case OP_INDEX: { /* init stride sd */
        int k = fresh(w);
        LcuExpr *rel = lcu_prim2(LP_SUB, VS_INT, lcu_index(), lcu_seg(LE_SEG_START, a[2], lcu_local(k, VS_INT)));
        LcuExpr *step = lcu_prim2(LP_MUL, VS_INT, rel, lcu_sub(a[1], VS_INT, lcu_local(k, VS_INT)));
        LcuExpr *body = lcu_prim2(LP_ADD, VS_INT, lcu_sub(a[0], VS_INT, lcu_local(k, VS_INT)), step);
        s = lcu_soac_new(LS_MAP);
        s->pull = lcu_thunk(lcu_let(k, lcu_seg(LE_SEG_OF, a[2], lcu_index()), body), 1);
        s->shape = shape_segn(a[2]);
        return s;
    }
    case OP_PACK: /* data flags sd -> data', sd' */
        s = lcu_soac_new(LS_SEG_FILTER);
        s->pull = lcu_thunk(at_i(a[0], T), 1);
        s->pred = lcu_thunk(at_i(a[1], VS_BOOL), 1);
        s->shape = shape_segn(a[2]);
        return s;
    default: /* RANK_UP, RANK_DOWN */
        s = lcu_soac_new(LS_LIB);
        s->lib = nd->op == OP_RANK_UP ? LL_RANK_UP : LL_RANK_DOWN;
        s->nargs = 2;
        s->args[0] = a[0];
        s->args[1] = a[1];
        s->shape = shape_len(a[0]);
        return s;
    }
}

/* Node N's SOAC (RAND's stream as a step of its own first), or NULL for
 * a host step (*HOST 1) or an instruction without a lowering (-1 with
 * MSG). */
static LcuSoac *lower_node(Low *w, const Dfg *g, int n, int *host, char *msg, size_t msglen)
{
    const DfgNode *nd = &g->nodes[n];
    const int *a = nd->args;
    const Lowered *out = w->l;
    VsElem T = base_of_vc(nd->type);
    LcuSoac *s = NULL;
    *host = 0;
    switch (nd->op) {
    case OP_CONST: case OP_LENGTH: case OP_LENGTHS: case OP_MAKE_SEGDES:
    case OP_REPLACE: /* in place on the host (runtime/fused/replace_step.h) */
        *host = 1;
        return NULL;
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MOD:
    case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE:
    case OP_AND: case OP_OR: case OP_XOR: {
        VsElem in = nd->op == OP_MOD ? VS_INT : T;
        VsElem rt = out->types[nd->res[0]].base;
        s = lcu_soac_new(LS_MAP);
        s->pull = lcu_thunk(lcu_prim2(prim_of(nd->op), rt, at_i(a[0], in), at_i(a[1], in)), 1);
        s->shape = shape_len(a[0]);
        return s;
    }
    case OP_NOT: case OP_FLOOR: case OP_CEIL: case OP_TRUNC: case OP_ROUND:
    case OP_LOG: case OP_SQRT: case OP_EXP: case OP_SIN: case OP_COS: case OP_TAN:
    case OP_ASIN: case OP_ACOS: case OP_ATAN: case OP_SINH: case OP_COSH: case OP_TANH:
    case OP_I_TO_F: case OP_I_TO_B: case OP_B_TO_I: {
        VsElem in = out->types[a[0]].base;
        VsElem rt = out->types[nd->res[0]].base;
        s = lcu_soac_new(LS_MAP);
        s->pull = lcu_thunk(lcu_prim1(prim_of(nd->op), rt, at_i(a[0], in)), 1);
        s->shape = shape_len(a[0]);
        return s;
    }
    case OP_SELECT:
        s = lcu_soac_new(LS_MAP);
        s->pull = lcu_thunk(lcu_if(at_i(a[0], VS_BOOL), at_i(a[1], T), at_i(a[2], T)), 1);
        s->shape = shape_len(a[0]);
        return s;
    case OP_RAND: {
        int stream = new_var(w, LV_ARRAY, VS_INT);
        LcuSoac *ls = lcu_soac_new(LS_LIB);
        ls->lib = LL_RAND_STREAM;
        ls->nargs = 1;
        ls->args[0] = a[0];
        ls->nres = 1;
        ls->res[0] = stream;
        ls->shape = shape_len(a[0]);
        add_step(w, STEP_KERNEL, n, one_soac(w, ls));
        s = lcu_soac_new(LS_MAP);
        s->pull = lcu_thunk(lcu_prim2(LP_RANDMOD, VS_INT, at_i(stream, VS_INT), at_i(a[0], VS_INT)), 1);
        s->shape = shape_len(a[0]);
        return s;
    }
    case OP_PLUS_SCAN: case OP_MUL_SCAN: case OP_MAX_SCAN: case OP_MIN_SCAN:
    case OP_AND_SCAN: case OP_OR_SCAN: case OP_XOR_SCAN:
    case OP_PLUS_REDUCE: case OP_MUL_REDUCE: case OP_MAX_REDUCE: case OP_MIN_REDUCE:
    case OP_AND_REDUCE: case OP_OR_REDUCE: case OP_XOR_REDUCE: {
        int scan = nd->op <= OP_XOR_SCAN;
        s = lcu_soac_new(scan ? LS_SEG_SCAN : LS_SEG_REDUCE);
        s->pull = lcu_thunk(at_i(a[0], T), 1);
        s->rops[0] = vc_rop_of(nd->op, nd->type);
        s->shape = shape_segn(a[1]);
        return s;
    }
    case OP_PERMUTE: case OP_DPERMUTE: case OP_FPERMUTE: case OP_DFPERMUTE: case OP_BPERMUTE: case OP_BFPERMUTE:
        return lower_permute(w, nd, T);
    case OP_EXTRACT: case OP_DIST: case OP_INDEX: case OP_PACK: case OP_RANK_UP: case OP_RANK_DOWN:
        return lower_segment(w, nd, T);
    default:
        if (vc_op_is_sem(nd->op) && lcu_prim_of_op(nd->op) != LP_COUNT) {
            /* defined by vcode/semantics.h: a MAP of its primitive */
            VsElem in = vc_ops[nd->op].args[0] == 'I' ? VS_INT : vc_ops[nd->op].args[0] == 'F' ? VS_FLOAT : T;
            VsElem rt = out->types[nd->res[0]].base;
            s = lcu_soac_new(LS_MAP);
            s->pull = lcu_thunk(lcu_prim2(prim_of(nd->op), rt, at_i(a[0], in), at_i(a[1], in)), 1);
            s->shape = shape_len(a[0]);
            return s;
        }
        snprintf(msg, msglen, "%s has no lowering to λcu", vc_ops[nd->op].name);
        return NULL;
    }
}

int lower_block(const Program *p, const Dfg *g, Lowered *out, char *msg, size_t msglen)
{
    (void)p;
    memset(out, 0, sizeof *out);
    Low w;
    memset(&w, 0, sizeof w);
    w.l = out;
    /* Plan variables 0..nvals-1 are the graph's values. */
    for (int v = 0; v < g->nvals; v++) {
        DfgType t = g->types[v];
        int var = new_var(&w, t == DT_SEGDES ? LV_SEGDES : LV_ARRAY, base_of(t));
        out->typed[var] = t != DT_UNKNOWN;
    }
    for (int n = 0; n < g->nnodes; n++) {
        const DfgNode *nd = &g->nodes[n];
        int host;
        LcuSoac *s = lower_node(&w, g, n, &host, msg, msglen);
        if (host) {
            add_step(&w, STEP_HOST, n, NULL);
            continue;
        }
        if (!s) {
            lowered_free(out);
            return -1;
        }
        s->nres = nd->nres;
        for (int r = 0; r < nd->nres; r++)
            s->res[r] = nd->res[r];
        add_step(&w, STEP_KERNEL, n, one_soac(&w, s));
    }
    out->nlocals = w.nlocals;
    return 0;
}

void lowered_free(Lowered *l)
{
    for (int i = 0; i < l->nsteps; i++)
        if (l->steps[i].k)
            lcu_kernel_free(l->steps[i].k);
    free(l->steps);
    free(l->types);
    free(l->typed);
    memset(l, 0, sizeof *l);
}

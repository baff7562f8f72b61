/* runtime/fused/lcu_eval.c — the reference evaluator for λcu kernels (see
 * lcu_eval.h).
 *
 * Each SOAC of a kernel runs in order. Its thunks are evaluated one index at
 * a time, in increasing order, by a tree walk over LcuExpr with a small
 * scalar union (int32 for INT and BOOL, double for FLOAT). Reductions and
 * scans combine strictly left to right from the VCODE identity, scatters
 * write in increasing source order, integer arithmetic wraps through
 * unsigned, and float->int conversions follow cvttsd2si: the results are
 * those of runtime/interp/ops_*.c, bit for bit.
 *
 * Per kernel evaluation: one locals array (sized by the largest local
 * number in any thunk of the kernel), and a small table of seg_of hints
 * keyed by descriptor (the last segment found, so that an increasing index
 * finds its segment in O(1), else a binary search of the offsets; a
 * per-element segment table only for descriptors with negative lengths,
 * whose offsets are not monotonic). Nothing is allocated per element.
 *
 * Before a SOAC runs, every variable its thunks read is checked once
 * (bound, array or descriptor as read, Float exactly where read as float,
 * descriptors fitting their data); per element only subscripts, segment
 * numbers and divisors are checked.
 *
 * FILTER, PARTITION and SEG_FILTER evaluate the predicate of every element
 * first, then pull only for the elements kept (PARTITION: for all): an
 * element the reference would never have computed (filtered out before a
 * fused MAP) cannot raise an error. SEG_PERMUTE / PERMUTE evaluate flag,
 * then index, then pull. */
#include "runtime/fused/lcu_eval.h"
#include "translate/lcu_prims.h"
#include "runtime/core/rank.h"
#include "runtime/core/errors.h"
#include "runtime/core/rand.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>


typedef union {
    int32_t i;
    double f;
} Scal;

#define NHINTS 16

typedef struct {
    const Value *sd;    /* NULL: free slot */
    int64_t last;       /* segment found by the previous seg_of */
    int32_t *segid;     /* only for descriptors that are not sane */
    int64_t segid_bytes;        /* charged for it (-m) */
} SegHint;

/* The results of the SOAC being evaluated, as they are allocated. */
typedef struct {
    int n;
    Value *v[LCU_MAXRES];
    void *d[LCU_MAXRES];
    uint8_t f[LCU_MAXRES];      /* 1: double elements */
} Outs;

/* The state of one kernel evaluation. It is static, not on the C stack:
 * when a fatal error leaves through the embedder's hook (errors.h), what
 * the abandoned evaluation holds (its SOAC's results so far, scratch
 * arrays) is still reachable and the next lcu_eval_kernel releases it. */
typedef struct {
    int active;         /* an evaluation is under way (or was abandoned) */
    Value **env;
    int nvars;
    Scal *locals;
    Scal small[32];     /* locals when few */
    int32_t index;      /* the current thunk index i */
    int64_t calls;      /* thunk evaluations, added to the stats at the end */
    SegHint hints[NHINTS];
    int next_hint;      /* round-robin eviction */
    Outs out;           /* the current SOAC's results */
    Value *extra;       /* SEG_FILTER's descriptor before it joins out */
    void *scratch;      /* the current SOAC's host scratch array */
    int64_t scratch_bytes;      /* charged for it (-m) */
} Ctx;

static Ctx cur;

static LcuEvalStats stats;

const LcuEvalStats *lcu_eval_stats(void) { return &stats; }

/* ---- helpers ----------------------------------------------------------- */

/* Host tables that grow with the data are charged against -m while held
 * (value.h mem_alloc_charged). */
static void seg_table_free(SegHint *h)
{
    if (h->segid)
        mem_free_charged(h->segid, h->segid_bytes);
    h->segid = NULL;
    h->segid_bytes = 0;
}

static void *scratch_new(Ctx *c, int64_t bytes, const char *what)
{
    c->scratch = mem_alloc_charged(bytes, what);
    c->scratch_bytes = bytes;
    return c->scratch;
}

static void scratch_free(Ctx *c)
{
    if (c->scratch)
        mem_free_charged(c->scratch, c->scratch_bytes);
    c->scratch = NULL;
    c->scratch_bytes = 0;
}

static int64_t nonneg(int64_t x) { return x > 0 ? x : 0; }



static Value *bound(Ctx *c, int var)
{
    if (var < 0 || var >= c->nvars)
        rt_fatal("lcu: variable x%d outside the plan's %d variables", var, c->nvars);
    Value *v = c->env[var];
    if (!v)
        rt_fatal("lcu: variable x%d is read before it is bound", var);
    return v;
}

static void check_segments(Value *sd, int var)
{
    if (!sd->sane && seg_check_ranges(sd) != 0)
        rt_fatal("segment descriptor x%d with negative lengths does not fit its data", var);
}

static Value *segdes(Ctx *c, int var)
{
    Value *v = bound(c, var);
    if (v->type != VT_SEGDES)
        rt_fatal("lcu: variable x%d is a %s vector, not a segment descriptor", var,
                 val_type_name((ValType)v->type));
    return v;
}

static Value *array(Ctx *c, int var)
{
    Value *v = bound(c, var);
    if (v->type == VT_SEGDES || v->type == VT_PAIR)
        rt_fatal("lcu: variable x%d is a %s, not an array", var, val_type_name((ValType)v->type));
    return v;
}

/* ---- segment lookup ---------------------------------------------------- */

static SegHint *hint_for(Ctx *c, const Value *sd)
{
    for (int h = 0; h < NHINTS; h++)
        if (c->hints[h].sd == sd)
            return &c->hints[h];
    SegHint *s = &c->hints[c->next_hint];
    c->next_hint = (c->next_hint + 1) % NHINTS;
    seg_table_free(s);
    s->sd = sd;
    s->last = 0;
    return s;
}

/* Forget what is known about SD (its value is being released). */
static void hint_drop(Ctx *c, const Value *sd)
{
    for (int h = 0; h < NHINTS; h++)
        if (c->hints[h].sd == sd) {
            seg_table_free(&c->hints[h]);
            c->hints[h].sd = NULL;
        }
}

static int32_t seg_of(Ctx *c, Value *sd, int var, int64_t i)
{
    int64_t n = sd->n, m = sd->len;
    if (i < 0 || i >= n)
        rt_fatal("seg_of: element %lld outside descriptor x%d of %lld elements", (long long)i, var,
                 (long long)nonneg(n));
    const int32_t *L = VI(sd);
    const int64_t *o = seg_offsets(sd);
    SegHint *h = hint_for(c, sd);
    if (!sd->sane) {
        /* Offsets may go backwards: a table, the later segment winning an
         * element covered twice, as the reference's writes do. */
        if (!h->segid) {
            h->segid_bytes = n * (int64_t)sizeof *h->segid;
            h->segid = mem_alloc_charged(h->segid_bytes, "the element -> segment table");
            for (int64_t j = 0; j < n; j++)
                h->segid[j] = -1;
            for (int64_t k = 0; k < m; k++)
                for (int64_t j = o[k]; j < o[k] + L[k]; j++)
                    if (j >= 0 && j < n)
                        h->segid[j] = (int32_t)k;
        }
        if (h->segid[i] < 0)
            rt_fatal("seg_of: element %lld of x%d lies in no segment", (long long)i, var);
        return h->segid[i];
    }
    /* Sane: the segment is the last k with o[k] <= i. Try the previous
     * answer and its successors first. */
    int64_t k = h->last;
    if (k < m && o[k] <= i) {
        for (int step = 0; step < 4; step++) {
            if (i < o[k] + L[k])
                return (int32_t)(h->last = k);
            if (k + 1 >= m || o[k + 1] > i)
                break;
            k++;
        }
    }
    int64_t lo = 0, hi = m - 1; /* o[lo] <= i holds: o[0] = 0 */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (o[mid] <= i)
            lo = mid;
        else
            hi = mid - 1;
    }
    h->last = lo;
    return (int32_t)lo;
}

static void bad_segment(const char *what, int var, int64_t s, int64_t m)
{
    rt_fatal("%s: segment %lld outside descriptor x%d of %lld segments", what, (long long)s, var,
             (long long)m);
}

/* ---- expressions ------------------------------------------------------- */

static Scal ev(Ctx *c, const LcuExpr *e);

static Scal prim(Ctx *c, const LcuExpr *e)
{
    Scal a = ev(c, e->kids[0]), b = { 0 }, r = { 0 };
    int f;
    VsElem t = e->kids[0]->type;
    int isf = t == VS_FLOAT, isb = t == VS_BOOL;
    if (e->nkids > 1)
        b = ev(c, e->kids[1]);
    switch (e->prim) {
    case LP_ADD:
        if (isf) r.f = vs_fadd(a.f, b.f);
        else r.i = vs_iadd(a.i, b.i);
        return r;
    case LP_SUB:
        if (isf) r.f = vs_fsub(a.f, b.f);
        else r.i = vs_isub(a.i, b.i);
        return r;
    case LP_MUL:
        if (isf) r.f = vs_fmul(a.f, b.f);
        else r.i = vs_imul(a.i, b.i);
        return r;
    case LP_DIV:
        if (isf) {
            r.f = vs_fdiv(a.f, b.f);
            return r;
        }
        if ((f = vs_idiv(a.i, b.i, &r.i)) != VS_OK)
            rt_fatal(vs_fault_format(f), (long long)c->index);
        return r;
    case LP_MOD:
        if ((f = vs_imod(a.i, b.i, &r.i)) != VS_OK)
            rt_fatal(vs_fault_format(f), (long long)c->index);
        return r;
    case LP_LT: r.i = isf ? vs_flt(a.f, b.f) : vs_ilt(a.i, b.i); return r;
    case LP_LE: r.i = isf ? vs_fle(a.f, b.f) : vs_ile(a.i, b.i); return r;
    case LP_GT: r.i = isf ? vs_fgt(a.f, b.f) : vs_igt(a.i, b.i); return r;
    case LP_GE: r.i = isf ? vs_fge(a.f, b.f) : vs_ige(a.i, b.i); return r;
    case LP_EQ: r.i = isf ? vs_feq(a.f, b.f) : vs_ieq(a.i, b.i); return r;
    case LP_NE: r.i = isf ? vs_fne(a.f, b.f) : vs_ine(a.i, b.i); return r;
    case LP_AND: r.i = isb ? vs_band(a.i, b.i) : vs_iand(a.i, b.i); return r;
    case LP_OR: r.i = isb ? vs_bor(a.i, b.i) : vs_ior(a.i, b.i); return r;
    case LP_XOR: r.i = vs_ixor(a.i, b.i); return r;
    case LP_NOT: r.i = isb ? vs_bnot(a.i) : vs_inot(a.i); return r;
    case LP_NEG:
        if (isf) r.f = vs_fneg(a.f);
        else r.i = vs_ineg(a.i);
        return r;
    case LP_FLOOR: r.i = vs_floor(a.f); return r;
    case LP_CEIL: r.i = vs_ceil(a.f); return r;
    case LP_TRUNC: r.i = vs_f2i(a.f); return r;
    case LP_ROUND: r.i = vs_round(a.f); return r;
    case LP_LOG: case LP_SQRT: case LP_EXP: case LP_SIN: case LP_COS: case LP_TAN:
    case LP_ASIN: case LP_ACOS: case LP_ATAN: case LP_SINH: case LP_COSH: case LP_TANH:
        r.f = lcu_prims[e->prim].fmath(a.f);
        return r;
    case LP_I_TO_F: r.f = vs_i2f(a.i); return r;
    case LP_I_TO_B: r.i = vs_i2b(a.i); return r;
    case LP_B_TO_I: r.i = vs_b2i(a.i); return r;
    case LP_RANDMOD:
        if ((f = vs_randmod(a.i, b.i, &r.i)) != VS_OK)
            rt_fatal(vs_fault_format(f), (long long)c->index);
        return r;
    case LP_CHECKIDX:
        if ((f = vs_checkidx(a.i, b.i)) != VS_OK)
            rt_fatal(vs_fault_format(f), (long long)a.i, (long long)b.i);
        r.i = a.i;
        return r;
    default: { /* an instruction defined by vcode/semantics.h */
        Opcode op = (unsigned)e->prim < LP_COUNT ? lcu_prims[e->prim].op : OP_COUNT;
        if (vc_op_is_sem(op) && isf && vc_ops[op].sem_float) {
            r.f = vc_ops[op].sem_float(a.f, b.f);
            return r;
        }
        if (vc_op_is_sem(op) && !isf && vc_ops[op].sem_int) {
            r.i = vc_ops[op].sem_int(a.i, b.i);
            return r;
        }
        break;
    }
    }
    rt_fatal("lcu: internal error: primitive %d", (int)e->prim);
}

static Scal ev(Ctx *c, const LcuExpr *e)
{
    Scal r;
    for (;;) {
        switch (e->kind) {
        case LE_INT:
        case LE_BOOL:
            r.i = e->ival;
            return r;
        case LE_FLOAT:
            r.f = e->fval;
            return r;
        case LE_INDEX:
            r.i = c->index;
            return r;
        case LE_LOCAL:
            return c->locals[e->local];
        case LE_SUB: {
            Value *v = c->env[e->var];
            if (!v)
                rt_fatal("lcu: variable x%d is read before it is bound", e->var);
            const LcuExpr *ix = e->kids[0];
            int64_t j = ix->kind == LE_INDEX ? c->index : ev(c, ix).i;    /* x[i]: the common case */
            if (j < 0 || j >= v->len)
                rt_fatal("index %lld outside an array of length %lld", (long long)j,
                         (long long)v->len);
            if (v->type == VT_FLOAT)
                r.f = VF(v)[j];
            else
                r.i = VI(v)[j];
            return r;
        }
        case LE_LEN: {
            Value *v = bound(c, e->var);
            r.i = (int32_t)(v->type == VT_SEGDES ? nonneg(v->n) : v->len);
            return r;
        }
        case LE_PRIM:
            return prim(c, e);
        case LE_IF:
            e = ev(c, e->kids[0]).i ? e->kids[1] : e->kids[2];
            continue;
        case LE_LET:
            c->locals[e->local] = ev(c, e->kids[0]);
            e = e->kids[1];
            continue;
        case LE_SEG_OF: {
            Value *sd = c->env[e->var];
            r.i = seg_of(c, sd, e->var, ev(c, e->kids[0]).i);
            return r;
        }
        case LE_SEG_START:
        case LE_SEG_LEN: {
            Value *sd = c->env[e->var];
            int64_t s = ev(c, e->kids[0]).i;
            if (s < 0 || s >= sd->len)
                bad_segment(e->kind == LE_SEG_START ? "seg_start" : "seg_len", e->var, s, sd->len);
            r.i = e->kind == LE_SEG_START ? (int32_t)seg_offsets(sd)[s] : VI(sd)[s];
            return r;
        }
        case LE_SEG_COUNT:
            r.i = (int32_t)c->env[e->var]->len;
            return r;
        case LE_TUPLE:
            rt_fatal("lcu: internal error: a tuple inside an expression");
        }
        rt_fatal("lcu: internal error: expression kind %d", (int)e->kind);
    }
}

/* A thunk body in tail position: lets and ifs may surround the tuple. */
static void ev_tail(Ctx *c, const LcuExpr *e, int arity, Scal *out)
{
    for (;;) {
        switch (e->kind) {
        case LE_TUPLE:
            if (e->nkids != arity)
                rt_fatal("lcu: internal error: a %d-tuple where the thunk has arity %d", e->nkids,
                         arity);
            for (int k = 0; k < arity; k++)
                out[k] = ev(c, e->kids[k]);
            return;
        case LE_LET:
            c->locals[e->local] = ev(c, e->kids[0]);
            e = e->kids[1];
            continue;
        case LE_IF:
            e = ev(c, e->kids[0]).i ? e->kids[1] : e->kids[2];
            continue;
        default:
            if (arity != 1)
                rt_fatal("lcu: internal error: a scalar where the thunk has arity %d", arity);
            out[0] = ev(c, e);
            return;
        }
    }
}

static inline void call(Ctx *c, const LcuThunk *t, int64_t i, Scal *out)
{
    c->index = (int32_t)i;
    c->calls++;
    ev_tail(c, t->body, t->arity, out);
}

static inline int32_t call1(Ctx *c, const LcuThunk *t, int64_t i)
{
    Scal s;
    call(c, t, i, &s);
    return s.i;
}

/* ---- checking a kernel before it runs ----------------------------------- */

static int prim_arity(LcuPrim p) { return lcu_prims[p].arity; }

/* Walk E: the largest local, the shape of every node (what the evaluator
 * relies on without looking again). */
static void scan_expr(const LcuExpr *e, int nvars, int *maxlocal)
{
    if (!e)
        rt_fatal("lcu: internal error: missing expression");
    int want = -1;
    switch (e->kind) {
    case LE_INT: case LE_FLOAT: case LE_BOOL: case LE_INDEX:
        want = 0;
        break;
    case LE_LOCAL:
        want = 0;
        break;
    case LE_SUB: case LE_SEG_OF: case LE_SEG_START: case LE_SEG_LEN:
        want = 1;
        break;
    case LE_LEN: case LE_SEG_COUNT:
        want = 0;
        break;
    case LE_PRIM:
        if ((int)e->prim < 0 || e->prim >= LP_COUNT)
            rt_fatal("lcu: internal error: primitive %d", (int)e->prim);
        want = prim_arity(e->prim);
        break;
    case LE_IF:
        want = 3;
        break;
    case LE_LET:
        want = 2;
        break;
    case LE_TUPLE:
        want = e->nkids;
        break;
    }
    if (want < 0 || e->nkids != want)
        rt_fatal("lcu: internal error: expression kind %d with %d operands", (int)e->kind, e->nkids);
    if (e->kind == LE_LOCAL || e->kind == LE_LET) {
        if (e->local < 0)
            rt_fatal("lcu: internal error: local t%d", e->local);
        if (e->local > *maxlocal)
            *maxlocal = e->local;
    }
    switch (e->kind) {
    case LE_SUB: case LE_LEN: case LE_SEG_OF: case LE_SEG_START: case LE_SEG_LEN: case LE_SEG_COUNT:
        if (e->var < 0 || e->var >= nvars)
            rt_fatal("lcu: variable x%d outside the plan's %d variables", e->var, nvars);
        break;
    default:
        break;
    }
    for (int k = 0; k < e->nkids; k++)
        scan_expr(e->kids[k], nvars, maxlocal);
}

/* Before a SOAC runs: every variable a thunk reads is bound and of the kind
 * it is read as (descriptors are checked to fit, as the reference does). */
static void check_reads(Ctx *c, const LcuExpr *e)
{
    switch (e->kind) {
    case LE_SUB: {
        Value *v = array(c, e->var);
        if ((v->type == VT_FLOAT) != (e->type == VS_FLOAT))
            rt_fatal("lcu: x%d holds a %s vector, the kernel reads it as %s", e->var,
                     val_type_name((ValType)v->type), lcu_base_name(e->type));
        break;
    }
    case LE_LEN:
        bound(c, e->var);
        break;
    case LE_SEG_OF: case LE_SEG_START: case LE_SEG_LEN: case LE_SEG_COUNT:
        check_segments(segdes(c, e->var), e->var);
        break;
    default:
        break;
    }
    for (int k = 0; k < e->nkids; k++)
        check_reads(c, e->kids[k]);
}

static void check_thunk(Ctx *c, const LcuThunk *t, int arity, const char *what)
{
    if (!t)
        rt_fatal("lcu: internal error: %s thunk missing", what);
    if (t->arity != arity)
        rt_fatal("lcu: internal error: %s thunk of arity %d where %d is needed", what, t->arity,
                 arity);
    check_reads(c, t->body);
}

/* ---- results ----------------------------------------------------------- */

static void outs_new(Outs *o, const LcuSoac *s, int first, int n, const LcuVarType *types,
                     int64_t len, int zero)
{
    for (int r = 0; r < n; r++) {
        int var = s->res[first + r];
        ValType t = lcu_val_type(&types[var]);
        if (t == VT_SEGDES)
            rt_fatal("lcu: internal error: %s result x%d is typed as a descriptor",
                     lcu_soac_name(s->kind), var);
        Value *v = zero ? val_new_zero(t, len) : val_new(t, len);
        o->v[o->n] = v;
        o->d[o->n] = v->data;
        o->f[o->n] = t == VT_FLOAT;
        o->n++;
    }
}

static inline void outs_put(const Outs *o, int first, int n, int64_t at, const Scal *x)
{
    for (int r = 0; r < n; r++) {
        if (o->f[first + r])
            ((double *)o->d[first + r])[at] = x[r].f;
        else
            ((int32_t *)o->d[first + r])[at] = x[r].i;
    }
}

/* ---- reduction operators ------------------------------------------------ */

static Scal rop_identity(VsRop r)
{
    Scal s;
    if (r == VS_FADD || r == VS_FMUL || r == VS_FMAX || r == VS_FMIN)
        s.f = vs_rop_fident(r);
    else
        s.i = vs_rop_iident(r);
    return s;
}

static inline Scal rop_combine(VsRop r, Scal a, Scal v)
{
    if (r == VS_FADD || r == VS_FMUL || r == VS_FMAX || r == VS_FMIN)
        a.f = vs_rop_fcombine(r, a.f, v.f);
    else
        a.i = vs_rop_icombine(r, a.i, v.i);
    return a;
}

static void check_rops(const LcuSoac *s, const LcuVarType *types)
{
    for (int r = 0; r < s->nres; r++) {
        if ((int)s->rops[r] < 0 || s->rops[r] >= VS_NROPS)
            rt_fatal("lcu: internal error: reduction operator %d", (int)s->rops[r]);
        const LcuVarType *t = &types[s->res[r]];
        if (t->kind != LV_ARRAY || (lcu_rop_base(s->rops[r]) == VS_FLOAT) != (t->base == VS_FLOAT))
            rt_fatal("lcu: internal error: %s of x%d does not match its type",
                     lcu_rop_name(s->rops[r]), s->res[r]);
    }
}

/* ---- SOACs --------------------------------------------------------------- */

static int64_t shape_len(Ctx *c, const LcuShape *sh, Value **sdp)
{
    *sdp = NULL;
    switch (sh->kind) {
    case LSH_LEN: {
        Value *v = bound(c, sh->var);
        return v->type == VT_SEGDES ? nonneg(v->n) : v->len;
    }
    case LSH_SEG_N:
    case LSH_SEG_M: {
        Value *sd = segdes(c, sh->var);
        check_segments(sd, sh->var);
        if (sh->kind == LSH_SEG_M)
            return sd->len;
        *sdp = sd;
        return nonneg(sd->n);
    }
    case LSH_ONE:
        return 1;
    }
    rt_fatal("lcu: internal error: shape kind %d", (int)sh->kind);
}

/* The SEG_* SOACs iterate over the elements of a descriptor (LSH_SEG_N). */
static Value *need_sd(const LcuSoac *s, Value *sd)
{
    if (!sd)
        rt_fatal("lcu: internal error: %s over a shape that is not #elements of a descriptor",
                 lcu_soac_name(s->kind));
    return sd;
}

static void run_map(Ctx *c, const LcuSoac *s, const LcuVarType *types, int64_t n, Outs *o)
{
    /* a single result may take the storage offered in its slot (the
     * element i of the donor is read before element i is written) */
    Value *d = s->nres == 1 ? val_take_donation(c->env[s->res[0]], lcu_val_type(&types[s->res[0]]), n) : NULL;
    if (d) {
        val_drop_device(d);
        o->v[0] = d;
        o->d[0] = d->data;
        o->f[0] = d->type == VT_FLOAT;
        o->n = 1;
    } else {
        outs_new(o, s, 0, s->nres, types, n, 0);
    }
    Scal x[LCU_MAXRES];
    for (int64_t i = 0; i < n; i++) {
        call(c, s->pull, i, x);
        outs_put(o, 0, s->nres, i, x);
    }
}

static void bad_index(int64_t i, int64_t j, int64_t len)
{
    rt_fatal(VS_MSG_PERMUTE_INDEX, (long long)j,
             (long long)i, (long long)len);
}

static void run_permute(Ctx *c, const LcuSoac *s, const LcuVarType *types, int64_t n, Outs *o)
{
    outs_new(o, s, 0, s->nres, types, n, 1);
    Scal x[LCU_MAXRES];
    for (int64_t i = 0; i < n; i++) {
        if (s->pred && !call1(c, s->pred, i))
            continue;
        int64_t j = call1(c, s->idx, i);
        if (j < 0 || j >= n)
            bad_index(i, j, n);
        call(c, s->pull, i, x);
        outs_put(o, 0, s->nres, j, x);
    }
}

/* Folds elements [LO, HI) into ACC: left to right, or by chunks for the
 * float + and * of a chunked reduction (vcode/semantics.h VS_CHUNK). */
static void fold_range(Ctx *c, const LcuSoac *s, int64_t lo, int64_t hi, Scal *acc)
{
    int nr = s->nres;
    Scal x[LCU_MAXRES], part[LCU_MAXRES];
    int by[LCU_MAXRES];
    for (int r = 0; r < nr; r++)
        by[r] = s->chunked && hi - lo > VS_CHUNK && vs_rop_chunks(s->rops[r]);
    for (int64_t c0 = lo; c0 < hi; c0 += VS_CHUNK) {
        int64_t c1 = hi - c0 < VS_CHUNK ? hi : c0 + VS_CHUNK;
        for (int r = 0; r < nr; r++)
            if (by[r])
                part[r] = rop_identity(s->rops[r]);
        for (int64_t i = c0; i < c1; i++) {
            call(c, s->pull, i, x);
            for (int r = 0; r < nr; r++) {
                Scal *a = by[r] ? &part[r] : &acc[r];
                *a = rop_combine(s->rops[r], *a, x[r]);
            }
        }
        for (int r = 0; r < nr; r++)
            if (by[r])
                acc[r] = rop_combine(s->rops[r], acc[r], part[r]);
    }
}

static void run_reduce(Ctx *c, const LcuSoac *s, const LcuVarType *types, int64_t n, Outs *o)
{
    int nr = s->nres;
    Scal acc[LCU_MAXRES];
    for (int r = 0; r < nr; r++)
        acc[r] = rop_identity(s->rops[r]);
    fold_range(c, s, 0, n, acc);
    outs_new(o, s, 0, nr, types, 1, 0);
    outs_put(o, 0, nr, 0, acc);
}

static void run_scan(Ctx *c, const LcuSoac *s, const LcuVarType *types, int64_t n, Outs *o)
{
    int nr = s->nres;
    outs_new(o, s, 0, nr, types, n, 0);
    Scal acc[LCU_MAXRES], x[LCU_MAXRES];
    for (int r = 0; r < nr; r++)
        acc[r] = rop_identity(s->rops[r]);
    for (int64_t i = 0; i < n; i++) {
        call(c, s->pull, i, x);
        outs_put(o, 0, nr, i, acc);
        for (int r = 0; r < nr; r++)
            acc[r] = rop_combine(s->rops[r], acc[r], x[r]);
    }
}

/* FILTER and PARTITION: the predicate for every element first, then the
 * values of the elements in order (pull is never evaluated for an element
 * FILTER drops: the reference may never have computed it). */
static void run_filter(Ctx *c, const LcuSoac *s, const LcuVarType *types, int64_t n, Outs *o)
{
    int part = s->kind == LS_PARTITION;
    int ar = part ? s->nres / 2 : s->nres;
    uint8_t *keep = scratch_new(c, n, "the kept flags");
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        keep[i] = call1(c, s->pred, i) != 0;
        kept += keep[i];
    }
    outs_new(o, s, 0, ar, types, kept, 0);
    if (part)
        outs_new(o, s, ar, ar, types, n - kept, 0);
    Scal x[LCU_MAXRES];
    int64_t wk = 0, wd = 0;
    for (int64_t i = 0; i < n; i++) {
        if (keep[i]) {
            call(c, s->pull, i, x);
            outs_put(o, 0, ar, wk++, x);
        } else if (part) {
            call(c, s->pull, i, x);
            outs_put(o, ar, ar, wd++, x);
        }
    }
    (void)keep;
    scratch_free(c);
}

static void run_once(Ctx *c, const LcuSoac *s, const LcuVarType *types, Outs *o)
{
    Scal x[LCU_MAXRES];
    call(c, s->pull, 0, x);
    outs_new(o, s, 0, s->nres, types, 1, 0);
    outs_put(o, 0, s->nres, 0, x);
}

static void run_seg_reduce_scan(Ctx *c, const LcuSoac *s, const LcuVarType *types, Value *sd,
                                Outs *o)
{
    int scan = s->kind == LS_SEG_SCAN, nr = s->nres;
    int64_t m = sd->len, n = nonneg(sd->n);
    outs_new(o, s, 0, nr, types, scan ? n : m, 0);
    const int32_t *L = VI(sd);
    const int64_t *off = seg_offsets(sd);
    Scal acc[LCU_MAXRES], x[LCU_MAXRES];
    for (int64_t k = 0; k < m; k++) {
        for (int r = 0; r < nr; r++)
            acc[r] = rop_identity(s->rops[r]);
        int64_t lo = off[k], hi = off[k] + nonneg(L[k]);
        if (!scan) {
            fold_range(c, s, lo, hi, acc);
            outs_put(o, 0, nr, k, acc);
            continue;
        }
        for (int64_t i = lo; i < hi; i++) {
            call(c, s->pull, i, x);
            outs_put(o, 0, nr, i, acc);
            for (int r = 0; r < nr; r++)
                acc[r] = rop_combine(s->rops[r], acc[r], x[r]);
        }
    }
}

static void run_seg_permute(Ctx *c, const LcuSoac *s, const LcuVarType *types, Value *ssd, Outs *o)
{
    Value *dsd = segdes(c, s->dst_sd);
    check_segments(dsd, s->dst_sd);
    int64_t dn = nonneg(dsd->n), sm = ssd->len, dm = dsd->len;
    int nr = s->nres;
    for (int r = 0; r < nr; r++) {
        int var = s->res[r];
        ValType t = lcu_val_type(&types[var]);
        if (t == VT_SEGDES)
            rt_fatal("lcu: internal error: SEG_PERMUTE result x%d is typed as a descriptor", var);
        Value *v;
        if (s->dflt[r] >= 0) {
            Value *d = array(c, s->dflt[r]);
            if (d->len != dsd->n)
                rt_fatal("destination descriptor covers %lld elements, default has %lld",
                         (long long)dsd->n, (long long)d->len);
            if ((d->type == VT_FLOAT) != (t == VT_FLOAT))
                rt_fatal("lcu: default x%d is %s, result x%d is not", s->dflt[r],
                         val_type_name((ValType)d->type), var);
            v = val_new(t, dn);
            if (dn)
                memcpy(v->data, d->data, (size_t)dn * val_esize(t));
        } else {
            v = val_new_zero(t, dn);
        }
        o->v[o->n] = v;
        o->d[o->n] = v->data;
        o->f[o->n] = t == VT_FLOAT;
        o->n++;
    }
    const int32_t *SL = VI(ssd), *DL = VI(dsd);
    const int64_t *so = seg_offsets(ssd), *dof = seg_offsets(dsd);
    Scal x[LCU_MAXRES];
    for (int64_t k = 0; k < sm; k++) {
        int64_t sl = SL[k];
        if (sl <= 0)
            continue;
        if (k >= dm)
            rt_fatal(VS_MSG_PERMUTE_PARTNER, (long long)k, "destination");
        int64_t dl = nonneg(DL[k]), d0 = dof[k];
        for (int64_t i = so[k]; i < so[k] + sl; i++) {
            if (s->pred && !call1(c, s->pred, i))
                continue;
            int64_t j = call1(c, s->idx, i);
            if (j < 0 || j >= dl)
                bad_index(i, j, dl);
            call(c, s->pull, i, x);
            outs_put(o, 0, nr, d0 + j, x);
        }
    }
}

static void run_seg_filter(Ctx *c, const LcuSoac *s, const LcuVarType *types, Value *sd, Outs *o)
{
    int ar = s->nres - 1;
    int sdvar = s->res[ar];
    if (types[sdvar].kind != LV_SEGDES)
        rt_fatal("lcu: internal error: SEG_FILTER's last result x%d is not a descriptor", sdvar);
    int64_t m = sd->len, n = nonneg(sd->n);
    const int32_t *L = VI(sd);
    const int64_t *off = seg_offsets(sd);
    uint8_t *keep = scratch_new(c, n, "the kept flags");
    Value *nsd = c->extra = seg_new(m);
    int32_t *NL = VI(nsd);
    int64_t total = 0;
    for (int64_t k = 0; k < m; k++) {
        int32_t cnt = 0;
        for (int64_t i = off[k]; i < off[k] + L[k]; i++) {
            keep[i] = call1(c, s->pred, i) != 0;
            cnt += keep[i];
        }
        NL[k] = cnt;
        total += cnt;
    }
    seg_finish(nsd);
    outs_new(o, s, 0, ar, types, total, 0);
    Scal x[LCU_MAXRES];
    int64_t w = 0;
    for (int64_t k = 0; k < m; k++)
        for (int64_t i = off[k]; i < off[k] + L[k]; i++)
            if (keep[i]) {
                call(c, s->pull, i, x);
                outs_put(o, 0, ar, w++, x);
            }
    (void)keep;
    scratch_free(c);
    c->extra = NULL;
    o->v[o->n] = nsd;
    o->d[o->n] = NULL;
    o->f[o->n] = 0;
    o->n++;
}

/* ---- library kernels ------------------------------------------------------ */

static Value *lib_rank(Ctx *c, const LcuSoac *s)
{
    if (s->nargs != 2)
        rt_fatal("lcu: internal error: %s takes 2 arguments, not %d", lcu_lib_name(s->lib), s->nargs);
    Value *d = array(c, s->args[0]);
    Value *sd = segdes(c, s->args[1]);
    check_segments(sd, s->args[1]);
    if (d->type != VT_INT && d->type != VT_FLOAT)
        rt_fatal("%s of a %s vector", lcu_lib_name(s->lib), val_type_name((ValType)d->type));
    int64_t n = d->len, m = sd->len;
    const int32_t *L = VI(sd);
    const int64_t *off = seg_offsets(sd);
    for (int64_t k = 0; k < m; k++)
        if (L[k] > 0 && (off[k] < 0 || off[k] + L[k] > n))
            rt_fatal("%s: segment %lld (%lld elements at %lld) outside data of length %lld",
                     lcu_lib_name(s->lib), (long long)k, (long long)L[k], (long long)off[k],
                     (long long)n);
    Value *r = c->extra = val_new_zero(VT_INT, n);
    rank_segments(d, sd, s->lib == LL_RANK_DOWN, VI(r));
    return r;
}

static Value *lib_rand(Ctx *c, const LcuSoac *s)
{
    if (s->nargs != 1)
        rt_fatal("lcu: internal error: %s takes 1 argument, not %d", lcu_lib_name(s->lib), s->nargs);
    Value *lim = bound(c, s->args[0]);
    int64_t n = lim->type == VT_SEGDES ? nonneg(lim->n) : lim->len;
    Value *r = val_new(VT_INT, n);
    if (n)
        rnd_fill(rnd_global(), VI(r), n);
    return r;
}

static void run_lib(Ctx *c, const LcuSoac *s, const LcuVarType *types, Outs *o)
{
    if (s->nres != 1)
        rt_fatal("lcu: internal error: %s with %d results", lcu_lib_name(s->lib), s->nres);
    if (types[s->res[0]].kind != LV_ARRAY || types[s->res[0]].base != VS_INT)
        rt_fatal("lcu: internal error: %s result x%d is not an Int array", lcu_lib_name(s->lib),
                 s->res[0]);
    Value *v;
    switch (s->lib) {
    case LL_RANK_UP:
    case LL_RANK_DOWN:
        v = lib_rank(c, s);
        break;
    case LL_RAND_STREAM:
        v = lib_rand(c, s);
        break;
    default:
        rt_fatal("lcu: internal error: library kernel %d", (int)s->lib);
    }
    c->extra = NULL;
    o->v[o->n] = v;
    o->d[o->n] = v->data;
    o->f[o->n] = 0;
    o->n++;
}

/* ---- kernels -------------------------------------------------------------- */

static void run_soac(Ctx *c, const LcuSoac *s, const LcuVarType *types)
{
    if (s->nres < 1 || s->nres > LCU_MAXRES)
        rt_fatal("lcu: internal error: %s with %d results", lcu_soac_name(s->kind), s->nres);
    for (int r = 0; r < s->nres; r++)
        if (s->res[r] < 0 || s->res[r] >= c->nvars)
            rt_fatal("lcu: result variable x%d outside the plan's %d variables", s->res[r], c->nvars);
    int nr = s->nres;
    switch (s->kind) {
    case LS_MAP: case LS_REDUCE: case LS_SCAN: case LS_ONCE: case LS_SEG_REDUCE: case LS_SEG_SCAN:
        check_thunk(c, s->pull, nr, "pull");
        break;
    case LS_PERMUTE: case LS_SEG_PERMUTE:
        check_thunk(c, s->pull, nr, "pull");
        check_thunk(c, s->idx, 1, "index");
        if (s->pred)
            check_thunk(c, s->pred, 1, "flag");
        break;
    case LS_FILTER:
        check_thunk(c, s->pull, nr, "pull");
        check_thunk(c, s->pred, 1, "predicate");
        break;
    case LS_PARTITION:
        if (nr % 2)
            rt_fatal("lcu: internal error: PARTITION with %d results", nr);
        check_thunk(c, s->pull, nr / 2, "pull");
        check_thunk(c, s->pred, 1, "predicate");
        break;
    case LS_SEG_FILTER:
        if (nr < 2)
            rt_fatal("lcu: internal error: SEG_FILTER with %d results", nr);
        check_thunk(c, s->pull, nr - 1, "pull");
        check_thunk(c, s->pred, 1, "predicate");
        break;
    case LS_LIB:
        break;
    default:
        rt_fatal("lcu: internal error: SOAC kind %d", (int)s->kind);
    }
    if (s->kind == LS_REDUCE || s->kind == LS_SCAN || s->kind == LS_SEG_REDUCE ||
        s->kind == LS_SEG_SCAN)
        check_rops(s, types);

    Outs *o = &c->out;
    o->n = 0;
    Value *sd = NULL;
    int64_t n = s->kind == LS_LIB || s->kind == LS_ONCE ? 1 : shape_len(c, &s->shape, &sd);
    switch (s->kind) {
    case LS_MAP: run_map(c, s, types, n, o); break;
    case LS_PERMUTE: run_permute(c, s, types, n, o); break;
    case LS_REDUCE: run_reduce(c, s, types, n, o); break;
    case LS_SCAN: run_scan(c, s, types, n, o); break;
    case LS_FILTER: case LS_PARTITION: run_filter(c, s, types, n, o); break;
    case LS_ONCE: run_once(c, s, types, o); break;
    case LS_SEG_REDUCE: case LS_SEG_SCAN:
        run_seg_reduce_scan(c, s, types, need_sd(s, sd), o);
        break;
    case LS_SEG_PERMUTE: run_seg_permute(c, s, types, need_sd(s, sd), o); break;
    case LS_SEG_FILTER: run_seg_filter(c, s, types, need_sd(s, sd), o); break;
    case LS_LIB: run_lib(c, s, types, o); break;
    default: break;
    }
    /* Bind the results; a value they replace is released. */
    for (int r = 0; r < nr; r++) {
        Value *old = c->env[s->res[r]];
        if (old) {
            hint_drop(c, old);
            val_release(old);
        }
        c->env[s->res[r]] = o->v[r];
    }
    o->n = 0;
    stats.soacs++;
}

/* Release what the evaluation in C holds besides the env: after a normal
 * end only the hints and locals, after an abandoned one also the partial
 * results and scratch of the SOAC that failed. */
static void ctx_release(Ctx *c)
{
    for (int r = 0; r < c->out.n; r++)
        val_release(c->out.v[r]);
    c->out.n = 0;
    if (c->extra)
        val_release(c->extra);
    c->extra = NULL;
    scratch_free(c);
    for (int h = 0; h < NHINTS; h++)
        seg_table_free(&c->hints[h]);
    if (c->locals && c->locals != c->small)
        free(c->locals);
    c->locals = NULL;
    c->active = 0;
}

static void scan_soac(const LcuSoac *s, int nvars, int *maxlocal)
{
    const LcuThunk *th[3] = { s->pull, s->idx, s->pred };
    for (int t = 0; t < 3; t++)
        if (th[t])
            scan_expr(th[t]->body, nvars, maxlocal);
}

static void ctx_locals(Ctx *c, int maxlocal)
{
    if (maxlocal < (int)(sizeof c->small / sizeof c->small[0])) {
        c->locals = c->small;
    } else {
        c->locals = malloc((size_t)(maxlocal + 1) * sizeof *c->locals);
        if (!c->locals)
            rt_fatal("out of host memory for %d thunk locals", maxlocal + 1);
    }
}

void lcu_eval_soac(const LcuSoac *s, Value **env, const LcuVarType *types, int nvars)
{
    Ctx *c = &cur;
    if (c->active)
        ctx_release(c);
    memset(c, 0, sizeof *c);
    c->active = 1;
    c->env = env;
    c->nvars = nvars;
    if (!types)
        rt_fatal("lcu: internal error: SOAC without variable types");
    int maxlocal = -1;
    scan_soac(s, nvars, &maxlocal);
    ctx_locals(c, maxlocal);
    run_soac(c, s, types);
    stats.thunk_calls += c->calls;
    ctx_release(c);
}

void lcu_eval_kernel(const LcuKernel *k, Value **env, const LcuVarType *types, int nvars)
{
    Ctx *c = &cur;
    if (c->active)
        ctx_release(c);     /* an evaluation left by a fatal error */
    memset(c, 0, sizeof *c);
    c->active = 1;
    c->env = env;
    c->nvars = nvars;
    if (!types)
        rt_fatal("lcu: internal error: kernel K%d without variable types", k->id);
    for (int p = 0; p < k->nparams; p++) {
        int v = k->params[p];
        if (v < 0 || v >= nvars)
            rt_fatal("lcu: kernel K%d: parameter x%d outside the plan's %d variables", k->id, v, nvars);
        if (!env[v])
            rt_fatal("lcu: kernel K%d: parameter x%d is not bound", k->id, v);
    }
    int maxlocal = -1;
    for (int i = 0; i < k->nsoacs; i++)
        scan_soac(k->soacs[i], nvars, &maxlocal);
    ctx_locals(c, maxlocal);

    for (int i = 0; i < k->nsoacs; i++)
        run_soac(c, k->soacs[i], types);

    lcu_release_internal(k, NULL, env);
    stats.kernels++;
    stats.thunk_calls += c->calls;
    ctx_release(c);
}

void lcu_release_internal(const LcuKernel *k, const int *map, Value **env)
{
    for (int i = 0; i < k->nsoacs; i++) {
        const LcuSoac *s = k->soacs[i];
        for (int r = 0; r < s->nres; r++) {
            int v = s->res[r], ret = 0;
            for (int j = 0; j < k->nrets && !ret; j++)
                ret = k->rets[j] == v;
            int slot = map ? map[v] : v;
            if (!ret && env[slot]) {
                val_release(env[slot]);
                env[slot] = NULL;
            }
        }
    }
}

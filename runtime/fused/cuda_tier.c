/* runtime/fused/cuda_tier.c — the device tier (see cuda_tier.h): which
 * instructions it takes, and each one as a primitive call (the checks it
 * leaves pending on the device: cuda_tier_checks.c; its -d stats lines:
 * cuda_tier_report.c). */
#include "runtime/fused/cuda_tier.h"
#include "runtime/fused/cuda_tier_impl.h"
#include "runtime/fused/cuda_chain.h"
#include "runtime/fused/cuda_guard.h"
#include "runtime/fused/exec_cuda_impl.h"
#include "runtime/fused/tuning.h"
#include "kernels/rand_jump.h"
#include "kernels/vk_elem.h"
#include "runtime/core/errors.h"
#include "runtime/core/rand.h"
#include "runtime/core/settings.h"
#include "runtime/core/trace.h"
#include "runtime/interp/ops.h"
#include "vcode/optable.h"

#include <stdlib.h>
#include <string.h>

_Static_assert((int)VK_OP_B_TO_I == (int)OP_B_TO_I && (int)VK_OP_COUNT == (int)OP_COUNT,
               "kernels/vk_elem.h numbers the instructions as vcode/program.h");

typedef enum {
    K_NONE, K_ELEM, K_RAND, K_DIST, K_INDEX, K_SCAN, K_REDUCE, K_PERM, K_PACK, K_EXTRACT, K_REPLACE, K_MAKE_SEGDES,
    K_LENGTHS, K_RANK, K_CONST
} Kind;

static Kind kind_of(int op)
{
    if (vk_map_takes(op))
        return K_ELEM;
    switch (op) {
    case OP_RAND: return K_RAND;
    case OP_DIST: return K_DIST;
    case OP_INDEX: return K_INDEX;
    case OP_PLUS_SCAN: case OP_MUL_SCAN: case OP_MAX_SCAN: case OP_MIN_SCAN:
    case OP_AND_SCAN: case OP_OR_SCAN: case OP_XOR_SCAN:
        return K_SCAN;
    case OP_PLUS_REDUCE: case OP_MUL_REDUCE: case OP_MAX_REDUCE: case OP_MIN_REDUCE:
    case OP_AND_REDUCE: case OP_OR_REDUCE: case OP_XOR_REDUCE:
        return K_REDUCE;
    case OP_PERMUTE: case OP_DPERMUTE: case OP_FPERMUTE: case OP_BPERMUTE: case OP_BFPERMUTE: case OP_DFPERMUTE:
        return K_PERM;
    case OP_PACK: return K_PACK;
    case OP_EXTRACT: return K_EXTRACT;
    case OP_REPLACE: return K_REPLACE;
    case OP_MAKE_SEGDES: return K_MAKE_SEGDES;
    case OP_LENGTHS: return K_LENGTHS;
    case OP_RANK_UP: case OP_RANK_DOWN: return K_RANK;
    case OP_CONST: return K_CONST;
    default: return K_NONE;
    }
}

/* Stack operands of OP (its signature's length; 0 for the stack shuffles
 * and control, which read no vector). */
static int nargs_of(int op)
{
    static int8_t na[OP_COUNT]; /* + 1; 0: not looked up yet */
    if (!na[op])
        na[op] = (int8_t)(1 + (vc_ops[op].args ? (int)strlen(vc_ops[op].args) : 0));
    return na[op] - 1;
}

const uint8_t *cuda_tier_ops(void)
{
    static uint8_t want[OP_COUNT];
    static int made;
    if (!made) {
        for (int op = 0; op < OP_COUNT; op++)
            want[op] = kind_of(op) != K_NONE || nargs_of(op) > 0 || op == OP_IF;
        made = 1;
    }
    return want;
}

CudaTier *cuda_tier_new(CudaExec *c, int64_t min)
{
    CudaTier *t = rt_xcalloc(1, sizeof *t);
    t->c = c;
    t->min = min;
    t->ahead_on = settings_choice(SET_DEVICE_READ_AHEAD, 1) == 1;
    t->fault_d = cx_dalloc_fixed(c, sizeof *t->fault_d);
    t->shape_d = cx_dalloc_fixed(c, sizeof *t->shape_d);
    t->guards = guard_cache_new();
    t->guards_on = settings_choice(SET_DEVICE_GUARDS, 1) == 1;
    tier_checks_init(t);
    chain_init(min);
    mem_set_reclaim(tier_reclaim); /* after chain_init's own */
    return t;
}

void cuda_tier_free(CudaTier *t)
{
    if (!t)
        return;
    tier_checks_free(t);
    guard_cache_free(t->guards);
    cx_dfree(t->c, t->fault_d);
    cx_dfree(t->c, t->shape_d);
    for (int k = 0; k < POS_KEPT; k++)
        if (t->kept[k].pd) {
            cx_dfree(t->c, t->kept[k].pd);
            free(t->kept[k].h);
        }
    free(t);
}

int64_t cuda_tier_bytes(const CudaTier *t) { return t->dbytes + chain_stats()->bytes; }

CudaTier *cuda_tier_current(void)
{
    CudaExec *c = cx_current();
    return c ? cx_tier(c) : NULL;
}

/* ---- where an instruction runs ------------------------------------------------- */

/* A vector on the device (a descriptor's device copy is its metadata,
 * not a home). */
static int on_dev(const Value *v) { return v->type != VT_PAIR && v->type != VT_SEGDES && v->dev != NULL; }

/* Whether the device ledger can take BYTES more, once the pending chains
 * have let their leaves go and the pending checks the values they hold
 * (tier_reclaim) if it could not (as the reference would have). */
static int room_for(int64_t bytes)
{
    return bytes <= mem_dev_room_bytes() || (tier_reclaim() && bytes <= mem_dev_room_bytes());
}

/* Whether the device memory left ($VINTERP_DEVICE_MEM, -m) holds what
 * the instruction whose NA operands are on IT's stack may need: its host
 * operands uploaded, and three times its longest operand or descriptor
 * total in 8-byte elements (its result and a primitive's scratch), a
 * bound, not a count. */
static int fits(Interp *it, int na, int scratch)
{
    int64_t need = 0, longest = 0;
    for (int j = 0; j < na; j++) {
        const Value *v = vs_at(it, j);
        if (v->type == VT_PAIR)
            continue;
        int64_t len = v->type == VT_SEGDES ? (v->n > v->len ? v->n : v->len) : v->len;
        longest = len > longest ? len : longest;
        if (!v->dev && !v->lazy)
            need += v->len * (v->type == VT_SEGDES ? 12 : (int64_t)val_esize((ValType)v->type));
    }
    need += scratch * 3 * 8 * longest;
    return room_for(need);
}

/* MAKE_SEGDES and LENGTHS on the device, one rule for the tier's own
 * instructions (claims) and a fused block's steps (cuda_tier_meta_step):
 * long lengths on the device (or a long fill) make a descriptor that lives
 * there; LENGTHS of a descriptor whose lengths only the device has. */
static int meta_on_device(const CudaTier *t, int op, const Value *arg)
{
    if (op == OP_MAKE_SEGDES)
        return arg->type == VT_INT && arg->len >= t->min && (on_dev(arg) || arg->lazy);
    if (op == OP_LENGTHS)
        return arg->type == VT_SEGDES && arg->sane && arg->dev && arg->hstale && arg->len >= t->min;
    return 0;
}

/* 1 when elementwise INS over short vectors is deferred into a chain
 * (cuda_chain.h): its vector operands only the device has (a reduction's
 * sums, a short EXTRACT's result), the others lazy fills. The chain runs
 * on the device if a device instruction reads it (no read back), on the
 * host if the host does (chain_host_run: the wait the host's reading the
 * operands would have cost, no launch). */
static int short_chain(Interp *it, const Instr *ins, int na)
{
    Value *v[3] = { NULL, NULL, NULL };
    if (na < 1 || na > 3)
        return 0;
    for (int j = 0; j < na; j++)
        v[j] = vs_at(it, na - 1 - j);
    return chain_takes(ins, v, na, v[0]->len);
}

/* 1 when the tier runs INS: an operand is a long vector on the device, or
 * it makes a long vector from short operands (cuda_tier.h). Short device
 * vectors (a reduction's sums) do not bring an instruction to the device:
 * the host reads them when it needs them. A declined instruction with an
 * operand on the device is counted (its operands go to the host). */
static int claims(CudaTier *t, Interp *it, const Instr *ins)
{
    Kind k = kind_of(ins->op);
    if (k == K_CONST) { /* a vector constant's home by its length: made (uploaded once) on the device */
        if (ins->ckind != CK_VECTOR)
            return 0;
        const Value *v = it->consts[ins->cidx];
        if (v->type == VT_SEGDES || v->len < t->min)
            return 0;
        if (!room_for(v->len * 8)) {
            t->mem_declined[OP_CONST]++;
            return 0;
        }
        return 1;
    }
    int na = nargs_of(ins->op);
    if (na == 0 || it->sp < na)
        return 0;
    int any_dev = 0, any_short_dev = 0, any_long_fill = 0, pair = 0;
    int64_t dev_bytes = 0;
    for (int j = 0; j < na; j++) {
        const Value *v = vs_at(it, j);
        pair |= v->type == VT_PAIR;
        any_long_fill |= v->type != VT_PAIR && v->lazy && v->len >= t->min;
        if (on_dev(v)) {
            any_dev |= v->len >= t->min;
            any_short_dev = 1;
            if (v->hstale)
                dev_bytes += v->len * (int64_t)val_esize((ValType)v->type);
        }
    }
    int take = 0;
    if (!pair && k != K_NONE) {
        const Value *top = vs_at(it, 0);
        int seg = k != K_ELEM && k != K_RAND && k != K_MAKE_SEGDES;
        /* the permutes but PERMUTE have two descriptors */
        const Value *sd2 = k == K_PERM && ins->op != OP_PERMUTE ? vs_at(it, 1) : top;
        if (seg && (top->type != VT_SEGDES || !top->sane || sd2->type != VT_SEGDES || !sd2->sane))
            take = 0;
        else if (k == K_PERM || k == K_PACK)
            take = any_dev || any_long_fill;
        else if (k == K_RANK) /* Int or Float keys (a Bool is the interpreter's error) */
            take = any_dev && vs_at(it, 1)->type != VT_BOOL && vs_at(it, 1)->len < INT32_MAX;
        else if (k == K_MAKE_SEGDES || k == K_LENGTHS)
            take = meta_on_device(t, ins->op, top);
        else if (k == K_EXTRACT || k == K_REPLACE) /* the data on the device */
            take = on_dev(vs_at(it, na - 1));
        else if (k == K_ELEM) /* over lazy fills alone, the host makes a lazy fill */
            take = any_dev || (any_short_dev && short_chain(it, ins, na));
        else if (k == K_SCAN)
            take = any_dev || any_long_fill;
        else if (k == K_REDUCE) /* --float-reassoc's chunked float folds are the host's; so is a
                                   lazy fill's over a host descriptor (folded without its copies) */
            take = any_dev && !(it->opt.float_reassoc && ins->type == TY_FLOAT &&
                                vs_rop_chunks(vc_rop_of(ins->op, ins->type)));
        else if (k == K_RAND)
            take = any_dev || (top->lazy && top->len >= t->min);
        else if (k == K_DIST)
            take = top->n >= t->min && (any_short_dev || top->len > 1);
        else /* INDEX */
            take = any_dev || top->n >= t->min;
    }
    if (take && !fits(it, na, 1)) {
        t->mem_declined[ins->op]++;
        take = 0;
    }
    if (!take && any_dev) { /* a long device vector goes to the host: worth naming */
        t->fell[ins->op]++;
        t->fell_bytes[ins->op] += dev_bytes;
    } else if (!take && any_short_dev) {
        t->short_reads++;
        t->short_bytes += dev_bytes;
        t->short_op[ins->op]++;
        t->short_op_bytes[ins->op] += dev_bytes;
    }
    return take;
}

/* ---- running it ---------------------------------------------------------------- */

static VsElem elem_of(int type) { return type == VT_FLOAT ? VS_FLOAT : type == VT_BOOL ? VS_BOOL : VS_INT; }

/* A host vector of BYTES uploaded as an operand. */
static void note_up(CudaTier *t, int64_t bytes)
{
    t->up_count++;
    t->up_bytes += bytes;
    t->up_op[t->op]++;
    t->up_op_bytes[t->op] += bytes;
}

/* V's elements on the device (a lazy fill made there), or NULL for no V. */
static void *dev_of(CudaTier *t, Value *v)
{
    if (!v)
        return NULL;
    if (!v->dev && !v->lazy)
        note_up(t, v->len * (int64_t)val_esize((ValType)v->type));
    return cx_on_device(t->c, v)->d;
}

/* V as a primitive's argument: its device copy, its fill as a scalar
 * (a lazy fill; any vector of one element when ONE_OK), or uploaded. */
static VkArg arg_of(CudaTier *t, Value *v, int one_ok)
{
    VkArg a;
    memset(&a, 0, sizeof a);
    if (v->dev) {
        a.d = ((DevCopy *)v->dev)->d;
    } else if (v->lazy || (one_ok && v->len == 1)) {
        const void *x = v->lazy ? (const void *)&v->fill : v->data;
        if (v->type == VT_FLOAT)
            memcpy(&a.f, x, sizeof a.f);
        else
            memcpy(&a.i, x, sizeof a.i);
    } else {
        a.d = dev_of(t, v);
    }
    return a;
}

/* The descriptor's offsets on the device (NULL for one segment). */
static const int64_t *offsets_of(CudaTier *t, Value *sd)
{
    if (sd->len <= 1)
        return NULL;
    if (!sd->dev)
        note_up(t, sd->len * 12);
    return cx_on_device(t->c, sd)->off;
}

/* Replace the top NA entries with R. A short result stays on the device
 * until the host reads it (val_for_host), as a long one does. */
static void finish(CudaTier *t, Interp *it, int na, Value *r)
{
    (void)t;
    for (int j = 0; j < na; j++)
        val_release(vs_pop(it));
    vs_push(it, r);
}

static ValType result_type(const Instr *ins, const Value *a0, const Value *a1)
{
    switch (ins->op) {
    case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE: case OP_I_TO_B: return VT_BOOL;
    case OP_FLOOR: case OP_CEIL: case OP_TRUNC: case OP_ROUND: case OP_B_TO_I: return VT_INT;
    case OP_I_TO_F: case OP_LOG: case OP_SQRT: case OP_EXP: case OP_SIN: case OP_COS: case OP_TAN:
    case OP_ASIN: case OP_ACOS: case OP_ATAN: case OP_SINH: case OP_COSH: case OP_TANH:
        return VT_FLOAT;
    case OP_SELECT: return (ValType)a1->type;
    default: return (ValType)a0->type;
    }
}

/* The argument (an index into V) an elementwise result is written over,
 * as the reference writes in place: one that only the stack holds, of the
 * result's element size, on the device (element i is read before it is
 * written); -1 for none. */
static int in_place_arg(Value **v, int na, ValType rt, int64_t n)
{
    for (int j = na - 1; j >= 0; j--) {
        Value *a = v[j];
        if (val_unique(a) && a->dev && !a->lazy && a->len == n && val_esize((ValType)a->type) == val_esize(rt) &&
            !((DevCopy *)a->dev)->planted && !((DevCopy *)a->dev)->off)
            return j;
    }
    return -1;
}

/* The result of an elementwise instruction run now: over that argument,
 * else new. */
static Value *in_place(CudaTier *t, Value **v, int na, ValType rt, int64_t n)
{
    int j = in_place_arg(v, na, rt, n);
    if (j < 0)
        return cx_device_value(t->c, rt, n);
    Value *a = v[j];
    t->in_place++;
    val_ref(a);
    a->type = (uint8_t)rt;
    a->hstale = 1;
    return a;
}

static void run_elem(CudaTier *t, Interp *it, const Instr *ins, int na)
{
    Value *v[3] = { NULL, NULL, NULL };
    VkArg args[3];
    int fmask = 0;
    for (int j = 0; j < na; j++) {
        v[j] = vs_at(it, na - 1 - j); /* in the signature's order */
        if (v[j]->type == VT_FLOAT)
            fmask |= 1 << j;
    }
    int64_t n = v[0]->len;
    ValType rt = result_type(ins, v[0], na > 1 ? v[1] : NULL);
    if (n == 0) {
        finish(t, it, na, val_new(rt, 0));
        return;
    }
    if (chain_takes(ins, v, na, n)) { /* deferred: a chain (cuda_chain.h) */
        chain_settle_holds(v, na);
        int self = in_place_arg(v, na, rt, n);
        t->in_place += self >= 0;
        finish(t, it, na, chain_defer(t->c, ins, v, na, rt, n, self));
        return;
    }
    for (int j = 0; j < na; j++)
        args[j] = arg_of(t, v[j], 0);
    int may_fail = ins->type != TY_FLOAT && (ins->op == OP_DIV || ins->op == OP_MOD);
    Value *r = in_place(t, v, na, rt, n);
    /* Int / and %: their faults checked on the device, read later (settle) */
    unsigned long long *fault = may_fail ? &tier_defer_slot(t, it, ins, NULL, PEND_MAP)->err : NULL;
    VsElem ty = ins->type == TY_FLOAT ? VS_FLOAT : ins->type == TY_BOOL ? VS_BOOL : VS_INT;
    if (cx_lib(t->c)->map(ins->op, ty, fmask, rt == VT_FLOAT, args, na, n, ((DevCopy *)r->dev)->d, fault) != 0)
        cx_lib_fail(t->c, vc_ops[ins->op].name);
    cx_lib_called(t->c);
    for (int j = 0; j < na; j++)
        t->dbytes += args[j].d ? n * (int64_t)val_esize((ValType)v[j]->type) : 0;
    t->dbytes += n * (int64_t)val_esize(rt);
    finish(t, it, na, r);
}

static void run_rand(CudaTier *t, Interp *it, const Instr *ins)
{
    Value *lim = vs_at(it, 0);
    int64_t n = lim->len;
    if (n == 0) {
        finish(t, it, 1, val_new(VT_INT, 0));
        return;
    }
    VkArg args[2];
    args[1] = arg_of(t, lim, 0);
    Value *r = cx_device_value(t->c, VT_INT, n);
    void *o = ((DevCopy *)r->dev)->d;
    RandState *st = rnd_global();
    const VkLib *l = cx_lib(t->c);
    if (l->rand(st->ring, st->k, n, o) != 0)
        cx_lib_fail(t->c, "RAND");
    vkr_jump(st->ring, &st->k, (uint64_t)n);
    memset(&args[0], 0, sizeof args[0]);
    args[0].d = o;
    if (l->map(OP_MOD, VS_INT, 0, 0, args, 2, n, o, &tier_defer_slot(t, it, ins, NULL, PEND_RAND)->err) != 0)
        cx_lib_fail(t->c, "RAND");
    cx_lib_called(t->c);
    cx_lib_called(t->c);
    t->dbytes += n * 4 * (args[1].d ? 4 : 3);
    finish(t, it, 1, r);
}

static void run_dist(CudaTier *t, Interp *it)
{
    Value *val = vs_at(it, 1), *sd = vs_at(it, 0);
    int64_t m = sd->len, n = sd->n;
    if (n > 0 && chain_on()) { /* deferred: a leaf spread over the segments (cuda_chain.h) */
        VkArg a = arg_of(t, val, 1);
        (void)offsets_of(t, sd);
        if (!a.d || !((DevCopy *)val->dev)->planted) {
            finish(t, it, 2, chain_dist(t->c, &a, a.d ? val : NULL, sd, (ValType)val->type, n));
            return;
        }
    }
    Value *r = cx_device_value(t->c, (ValType)val->type, n);
    if (n > 0) {
        VkArg a = arg_of(t, val, 1);
        if (cx_lib(t->c)->dist(val_esize((ValType)val->type), &a, offsets_of(t, sd), m, n, ((DevCopy *)r->dev)->d) != 0)
            cx_lib_fail(t->c, "DIST");
        cx_lib_called(t->c);
        t->dbytes += n * (int64_t)val_esize((ValType)val->type);
    }
    finish(t, it, 2, r);
}

static void run_index(CudaTier *t, Interp *it)
{
    Value *start = vs_at(it, 2), *stride = vs_at(it, 1), *sd = vs_at(it, 0);
    int64_t m = sd->len, n = sd->n;
    if (n > 0 && chain_on()) { /* deferred: a node over its start and stride spread over the segments */
        VkArg a = arg_of(t, start, 1), b = arg_of(t, stride, 1);
        (void)offsets_of(t, sd);
        if ((!a.d || !((DevCopy *)start->dev)->planted) && (!b.d || !((DevCopy *)stride->dev)->planted)) {
            finish(t, it, 3, chain_index(t->c, &a, a.d ? start : NULL, &b, b.d ? stride : NULL, sd, n));
            return;
        }
    }
    Value *r = cx_device_value(t->c, VT_INT, n);
    if (n > 0) {
        VkArg a = arg_of(t, start, 1), b = arg_of(t, stride, 1);
        if (cx_lib(t->c)->index(&a, &b, offsets_of(t, sd), m, n, ((DevCopy *)r->dev)->d) != 0)
            cx_lib_fail(t->c, "INDEX");
        cx_lib_called(t->c);
        t->dbytes += n * 4;
    }
    finish(t, it, 3, r);
}

static void run_fold(CudaTier *t, Interp *it, const Instr *ins, int scan)
{
    Value *data = vs_at(it, 1), *sd = vs_at(it, 0);
    int64_t m = sd->len, n = data->len;
    VsRop op = vc_rop_of(ins->op, ins->type);
    Value *r = cx_device_value(t->c, (ValType)data->type, scan ? n : m);
    void *o = ((DevCopy *)r->dev)->d;
    if (!scan && m == 1 && n > 0 && chain_pending(data)) { /* one launch with its chain (cuda_chain.h) */
        chain_reduce(data, op, o);
        t->dbytes += r->len * (int64_t)val_esize((ValType)data->type);
        finish(t, it, 2, r);
        return;
    }
    const VkLib *l = cx_lib(t->c);
    VkArg a;
    memset(&a, 0, sizeof a);
    a.d = n > 0 ? cx_on_device(t->c, data)->d : NULL;
    int rc = 0;
    if (scan && n == 0) {
        /* nothing to write */
    } else if (m == 1) {
        rc = scan ? l->scan(op, a.d, n, o) : l->reduce(op, a.d, n, o);
    } else if (m > 1) {
        DevCopy *dc = cx_on_device(t->c, sd);
        int64_t longest = sd->shaped ? sd->maxl : -1;
        rc = scan ? l->seg_scan(op, a.d, dc->d, dc->off, m, n, longest, o)
                  : l->seg_reduce(op, a.d, dc->d, dc->off, m, n, longest, o);
    }
    if (rc != 0)
        cx_lib_fail(t->c, vc_ops[ins->op].name);
    cx_lib_called(t->c);
    t->dbytes += (n + r->len) * (int64_t)val_esize((ValType)data->type);
    finish(t, it, 2, r);
}

/* A primitive's failure: an index outside its segment, or a segment
 * without a partner, is the reference's error, in its words (kernels.h
 * gives them so); anything else is the device's. */
static void perm_fail(CudaTier *t, const char *what)
{
    const char *msg = cx_lib(t->c)->last_error();
    if (strncmp(msg, "index ", 6) == 0 || strncmp(msg, "segment ", 8) == 0)
        rt_fatal("%s", msg);
    cx_lib_fail(t->c, what);
}

/* The six permutes (vcode/SPEC.md §4.4; runtime/interp/ops_permute.c):
 * scatters into a cleared result or a copy of the default, gathers. */
static void run_permute(CudaTier *t, Interp *it, const Instr *ins)
{
    int op = ins->op, na = nargs_of(op);
    Value *data = vs_at(it, na - 1), *idx = vs_at(it, na - 2), *flags = NULL, *dflt = NULL;
    Value *dsd = vs_at(it, 0), *ssd = op == OP_PERMUTE ? dsd : vs_at(it, 1);
    if (op == OP_FPERMUTE || op == OP_BFPERMUTE || op == OP_DFPERMUTE)
        flags = vs_at(it, na - 3);
    if (op == OP_DPERMUTE || op == OP_DFPERMUTE)
        dflt = vs_at(it, 2);
    if (dflt)
        ops_permute_lengths(data, idx, flags, dflt, dsd);
    int gather = op == OP_BPERMUTE || op == OP_BFPERMUTE;
    int64_t len = gather ? idx->len : dflt ? dflt->len : op == OP_PERMUTE ? data->len : dsd->n > 0 ? dsd->n : 0;
    ValType ty = (ValType)data->type;
    size_t es = val_esize(ty);
    if (op == OP_BPERMUTE && chain_gather_takes(data, idx, ssd, dsd)) { /* deferred (cuda_chain.h) */
        if (ssd->len > 1) {
            (void)cx_on_device(t->c, ssd);
            (void)cx_on_device(t->c, dsd);
        }
        Value *r = cx_device_value(t->c, ty, len); /* new, as the reference's (may run every chain first) */
        VkPermFault *rec =
            chain_gather_joins(data, idx, ssd, dsd) ? NULL : tier_defer_slot(t, it, ins, "source", PEND_PERMUTE);
        finish(t, it, na, chain_gather(r, data, idx, ssd, dsd, rec));
        return;
    }
    if (op == OP_PERMUTE && chain_scatter_takes(data, idx, dsd, dsd, len, 0)) { /* deferred into a scatter group */
        chain_force(data);
        chain_force(idx);
        if (dsd->len > 1)
            (void)cx_on_device(t->c, dsd);
        Value *r = cx_device_value(t->c, ty, len); /* new, as the reference's (may run every chain first) */
        VkPermFault *rec =
            chain_scatter_joins(idx, dsd, dsd, len, 0) ? NULL : tier_defer_slot(t, it, ins, "destination", PEND_PERMUTE);
        finish(t, it, na, chain_scatter(r, data, idx, dsd, dsd, NULL, rec));
        return;
    }
    /* the default written over when only the stack holds it, as the
     * reference writes over it (ops_permute.c copy_of_default): no second
     * vector of its length at once, against -m */
    if (dflt && val_unique(dflt) && !dflt->lazy)
        cx_on_device(t->c, dflt); /* a host default uploaded, to be written over there */
    Value *r = dflt ? in_place(t, &dflt, 1, ty, len) : cx_device_value(t->c, ty, len);
    int copied = dflt && r != dflt;
    /* a lazy fill's value written into the result by the scatter itself
     * (vk_scatter_fill: one launch for a short source), not a device copy
     * of the fill made and then copied */
    int filled = copied && dflt->lazy && !dflt->dev && len > 0;
    VkArg fa;
    memset(&fa, 0, sizeof fa);
    if (filled) {
        if (ty == VT_FLOAT)
            fa.f = dflt->fill.f;
        else
            fa.i = dflt->fill.i;
    } else if (copied) {
        cx_d2d(t->c, ((DevCopy *)r->dev)->d, dev_of(t, dflt), (size_t)len * es);
    }
    if (filled && op == OP_DPERMUTE && chain_scatter_takes(data, idx, ssd, dsd, len, 1)) {
        /* deferred into a scatter group (DPERMUTEs into fills at one index) */
        chain_force(data);
        chain_force(idx);
        if (ssd->len > 1) {
            (void)cx_on_device(t->c, ssd);
            (void)cx_on_device(t->c, dsd);
        }
        VkPermFault *rec =
            chain_scatter_joins(idx, ssd, dsd, len, 1) ? NULL : tier_defer_slot(t, it, ins, "destination", PEND_PERMUTE);
        finish(t, it, na, chain_scatter(r, data, idx, ssd, dsd, &fa, rec));
        return;
    }
    void *o = ((DevCopy *)r->dev)->d;
    /* PERMUTE and FPERMUTE: the positions no element writes are 0, made
     * so by the scatter itself (VK_SCATTER_ZERO), not by a clear first */
    int zero = !dflt && !gather;
    t->dbytes += (filled ? 1 : copied ? 2 : zero ? 1 : 0) * len * (int64_t)es;
    int64_t ns = data->len;
    if (gather ? len > 0 : ns > 0) { /* a scatter into nothing still checks its indices */
        const int32_t *sl = NULL, *dl = NULL;
        const int64_t *so = NULL, *dof = NULL;
        if (ssd->len != 1 || dsd->len != 1) { /* both given, or neither */
            DevCopy *a = cx_on_device(t->c, ssd), *b = cx_on_device(t->c, dsd);
            sl = a->d, so = a->off, dl = b->d, dof = b->off;
        }
        const VkLib *l = cx_lib(t->c);
        const void *in = ns > 0 ? dev_of(t, data) : NULL;
        const int32_t *ix = dev_of(t, idx), *fl = dev_of(t, flags);
        /* the index check does not wait: its record is read later (settle) */
        VkPermFault *rec = tier_defer_slot(t, it, ins, gather ? "source" : "destination", PEND_PERMUTE);
        int rc = gather   ? l->gather(es, in, ns, ix, fl, sl, so, ssd->len, dl, dof, dsd->len, o, len, rec)
                 : filled ? l->scatter_fill(es, &fa, in, ns, ix, fl, sl, so, ssd->len, dl, dof, dsd->len, o, len, rec)
                          : l->scatter(es, in, ns, ix, fl, sl, so, ssd->len, dl, dof, dsd->len, o, len,
                                       zero ? VK_SCATTER_ZERO : 0, rec);
        cx_lib_called(t->c);
        t->dbytes += (gather ? 2 * len : 2 * ns) * (int64_t)es + (gather ? len : ns) * (flags ? 8 : 4);
        if (rc != 0) {
            val_release(r);
            perm_fail(t, vc_ops[op].name);
        }
    } else if (zero && len > 0) { /* nothing scattered into it */
        cx_memset0(t->c, o, (size_t)len * es);
    } else if (filled) { /* nothing scattered into the fill's value */
        if (cx_lib(t->c)->dist(es, &fa, NULL, 1, len, o) != 0)
            cx_lib_fail(t->c, vc_ops[op].name);
        cx_lib_called(t->c);
    }
    finish(t, it, na, r);
}

/* A descriptor of M >= 1 segments whose lengths are on the device
 * (cx_device_segdes): its offsets made there and its shape (the lengths'
 * sum, the shortest and the longest) into one record (vk_seg_shape: two
 * launches), read back in one wait, so that the host knows its shape. */
static void shape_on_device(CudaTier *t, Value *sd)
{
    DevCopy *dc = sd->dev;
    int64_t m = sd->len;
    if (cx_lib(t->c)->seg_shape(dc->d, m, dc->off, t->shape_d) != 0)
        cx_lib_fail(t->c, "a descriptor's shape");
    cx_lib_called(t->c);
    cx_lib_called(t->c);
    t->dbytes += m * (4 + 8 + 4);
    VkShape rec;
    cx_d2h(t->c, &rec, t->shape_d, sizeof rec);
    seg_set_shape(sd, rec.n, rec.lo, rec.hi);
}

/* PACK's new descriptor: each segment's count of kept elements, summed
 * on the device (COUNT: all of them, used for one segment). A long one
 * lives there; a short one is read back to the host. */
static Value *pack_segdes(CudaTier *t, Value *sd, const int32_t *fl, int64_t n, int64_t count)
{
    int64_t m = sd->len;
    int on_device = m >= t->min && n > 0;
    Value *nsd = on_device ? cx_device_segdes(t->c, m) : seg_new(m);
    if (!on_device && (m == 1 || n == 0)) {
        if (m)
            memset(VI(nsd), 0, (size_t)m * 4);
        if (m == 1)
            VI(nsd)[0] = (int32_t)count;
        seg_finish(nsd);
        return nsd;
    }
    DevCopy *dc = cx_on_device(t->c, sd);
    int32_t *lens = on_device ? ((DevCopy *)nsd->dev)->d : cx_dalloc(t->c, (size_t)m * 4);
    if (cx_lib(t->c)->seg_reduce(VS_IADD, fl, dc->d, dc->off, m, n, sd->shaped ? sd->maxl : -1, lens) != 0)
        cx_lib_fail(t->c, "PACK");
    cx_lib_called(t->c);
    if (on_device) {
        shape_on_device(t, nsd);
    } else {
        cx_d2h(t->c, VI(nsd), lens, (size_t)m * 4);
        cx_dfree(t->c, lens);
        seg_finish(nsd);
    }
    return nsd;
}

/* PACK: the kept elements in order, and the new descriptor (on the
 * device when it is long). One segment: the elements selected into a
 * temporary, their count read back (the result's length). Several: the
 * new lengths first, read back (or the long descriptor's shape), their sum
 * the result's length, then the elements selected straight into the
 * result: one wait, not two. */
static void run_pack(CudaTier *t, Interp *it)
{
    Value *data = vs_at(it, 2), *flags = vs_at(it, 1), *sd = vs_at(it, 0);
    int64_t n = data->len;
    ValType ty = (ValType)data->type;
    size_t es = val_esize(ty);
    const VkLib *l = cx_lib(t->c);
    int64_t count = 0;
    Value *r;
    const int32_t *fl = n > 0 ? dev_of(t, flags) : NULL;
    if (n > 0 && sd->len > 1) {
        Value *nsd = pack_segdes(t, sd, fl, n, -1);
        count = nsd->n;
        r = cx_device_value(t->c, ty, count);
        if (count > 0 && l->select_flagged(elem_of(ty), dev_of(t, data), fl, n, ((DevCopy *)r->dev)->d, NULL) != 0)
            cx_lib_fail(t->c, "PACK");
        cx_lib_called(t->c);
        t->dbytes += n * ((int64_t)es + 4) + count * (int64_t)es;
        for (int j = 0; j < 3; j++)
            val_release(vs_pop(it));
        vs_push(it, r);
        vs_push(it, nsd);
        return;
    }
    if (n > 0) {
        void *tmp = cx_dalloc(t->c, (size_t)n * es);
        if (l->select_flagged(elem_of(ty), dev_of(t, data), fl, n, tmp, &count) != 0)
            cx_lib_fail(t->c, "PACK");
        cx_lib_called(t->c);
        cx_note_sync(t->c);
        r = cx_device_value(t->c, ty, count);
        cx_d2d(t->c, ((DevCopy *)r->dev)->d, tmp, (size_t)count * es);
        t->dbytes += n * ((int64_t)es + 4) + 3 * count * (int64_t)es;
        cx_dfree(t->c, tmp);
    } else {
        r = val_new(ty, 0);
    }
    Value *nsd = pack_segdes(t, sd, fl, n, count);
    for (int j = 0; j < 3; j++)
        val_release(vs_pop(it));
    vs_push(it, r);
    vs_push(it, nsd);
}

/* EXTRACT's and REPLACE's indices IDX checked on the host against the
 * descriptor SD's lengths, the reference's message for the first bad one
 * (it does not return; POS, when given, freed first), and when POS is
 * given, their positions into it in the same pass: segment k's offset
 * plus its index (the offsets summed here, not cached on the descriptor:
 * charged against -m while cached, where the reference holds none). */
static void walk_indices(Value *idx, Value *sd, int64_t *pos)
{
    val_for_host(idx);
    val_for_host(sd);
    const int32_t *l = VI(sd), *ix = VI(idx);
    int64_t at = 0;
    for (int64_t k = 0; k < sd->len; k++) {
        int32_t lim = l[k] > 0 ? l[k] : 0;
        if ((uint32_t)ix[k] >= (uint32_t)lim) {
            free(pos);
            ops_bad_segment_index(k, ix[k], lim);
        }
        if (pos) {
            pos[k] = at + ix[k];
            at += l[k];
        }
    }
}

static void check_indices(Value *idx, Value *sd) { walk_indices(idx, sd, NULL); }

/* EXTRACT's and REPLACE's positions on the host, each index checked. */
static int64_t *positions(Value *idx, Value *sd)
{
    int64_t m = sd->len;
    int64_t *pos = rt_xmalloc((size_t)(m ? m : 1) * sizeof *pos);
    walk_indices(idx, sd, pos);
    return pos;
}

/* MAKE_SEGDES of long lengths on the device, or of a long lazy fill (every
 * segment as long: its shape known on the host, its lengths and offsets
 * made on the device): the descriptor lives there. */
static Value *segdes_of_lengths(CudaTier *t, Value *l, int take)
{
    Value *sd = take ? cx_device_take(t->c, l, VT_SEGDES) : NULL;
    if (sd) {
        t->in_place++, t->taken++;
    } else {
        sd = cx_device_segdes(t->c, l->len);
        cx_d2d(t->c, ((DevCopy *)sd->dev)->d, dev_of(t, l), (size_t)l->len * 4);
    }
    if (l->lazy) { /* its shape known here: no wait */
        DevCopy *dc = sd->dev;
        if (cx_lib(t->c)->seg_offsets(dc->d, sd->len, dc->off, NULL) != 0)
            cx_lib_fail(t->c, "a descriptor's offsets");
        cx_lib_called(t->c);
        t->dbytes += sd->len * (4 + 8);
        seg_set_shape(sd, (int64_t)l->fill.i * sd->len, l->fill.i, l->fill.i);
    } else {
        shape_on_device(t, sd);
    }
    return sd;
}

static void run_make_segdes(CudaTier *t, Interp *it) { finish(t, it, 1, segdes_of_lengths(t, vs_at(it, 0), 1)); }

/* LENGTHS of a descriptor that lives on the device: its lengths taken
 * when TAKE and only the stack holds it (cx_device_take), else copied:
 * when TAKE, in a chain (cuda_chain.h chain_lengths: no launch where the
 * chain is read by an elementwise instruction or a reduction). */
static Value *lengths_of(CudaTier *t, Value *sd, int take)
{
    Value *r = take ? cx_device_take(t->c, sd, VT_INT) : NULL;
    if (r) {
        t->in_place++, t->taken++;
        return r;
    }
    if (take && chain_on() && sd->len > 0 && !((DevCopy *)sd->dev)->planted)
        return chain_lengths(t->c, sd);
    r = cx_device_value(t->c, VT_INT, sd->len);
    cx_d2d(t->c, ((DevCopy *)r->dev)->d, ((DevCopy *)sd->dev)->d, (size_t)sd->len * 4);
    return r;
}

static void run_lengths(CudaTier *t, Interp *it) { finish(t, it, 1, lengths_of(t, vs_at(it, 0), 1)); }

Value *cuda_tier_meta_step(CudaTier *t, int op, Value *arg)
{
    if (!meta_on_device(t, op, arg))
        return NULL;
    if (!room_for(arg->len * 24)) { /* lengths, offsets and a copy */
        t->mem_declined[op]++;
        return NULL;
    }
    t->ran[op]++;
    t->in_blocks[op]++;
    t->op = op;
    int64_t w0 = cx_syncs(t->c);
    double tt = trace_now();
    Value *r = op == OP_MAKE_SEGDES ? segdes_of_lengths(t, arg, 0) : lengths_of(t, arg, 0);
    t->waits[op] += cx_syncs(t->c) - w0;
    if (trace_on)
        trace_span("device tier", op == OP_MAKE_SEGDES ? "MAKE_SEGDES (a fused block's)" : "LENGTHS (a fused block's)",
                   tt, trace_now(), -1);
    return r;
}

/* RANK_UP, RANK_DOWN: each element's place in its segment sorted stably
 * (the reference's order of keys, runtime/core/rank.c). */
static void run_rank(CudaTier *t, Interp *it, const Instr *ins)
{
    Value *keys = vs_at(it, 1), *sd = vs_at(it, 0);
    int64_t n = keys->len, m = sd->len;
    Value *r = cx_device_value(t->c, VT_INT, n);
    if (n > 0) {
        const int32_t *len = NULL;
        const int64_t *off = NULL;
        if (m != 1) {
            DevCopy *dc = cx_on_device(t->c, sd);
            len = dc->d;
            off = dc->off;
        }
        if (cx_lib(t->c)->seg_rank(ins->op == OP_RANK_DOWN, elem_of(keys->type), dev_of(t, keys), len, off, m, n,
                                   ((DevCopy *)r->dev)->d) != 0)
            cx_lib_fail(t->c, vc_ops[ins->op].name);
        cx_lib_called(t->c);
        t->dbytes += n * (int64_t)(val_esize((ValType)keys->type) + 4) * 4; /* a radix sort's passes, roughly */
    }
    finish(t, it, 2, r);
}

/* The device's check of EXTRACT's and REPLACE's indices (positions_dev)
 * read back (a wait): a bad index is the reference's message for the
 * least bad segment (PD freed first). */
static void positions_checked(CudaTier *t, Value *idx, Value *sd, const unsigned long long *fault_d, int64_t *pd)
{
    unsigned long long f;
    cx_d2h(t->c, &f, fault_d, sizeof f);
    if (f == VK_NO_FAULT)
        return;
    cx_dfree(t->c, pd);
    tier_bad_position(t, idx, sd, (int64_t)(f >> 3));
}

/* Whether V's elements are on the host (a lazy fill's are). */
static int on_host(const Value *v) { return v->lazy || !(v->dev && v->hstale); }

/* EXTRACT's and REPLACE's positions are made on the host when their
 * indices and descriptor are there and the descriptor has no device copy
 * or at most HOST_POSITIONS_MAX segments (one upload of the positions, or
 * none when positions_up kept the same; no launch, no wait), else on the
 * device (positions_dev). */
static int host_positions(const Value *idx, const Value *sd)
{
    return on_host(idx) && on_host(sd) && (!sd->dev || sd->len <= HOST_POSITIONS_MAX);
}

/* The positions POS[0..M) on the device (an upload, counted), given
 * back with positions_release. Up to HOST_POSITIONS_MAX of them are kept
 * after their instruction (POS_KEPT arrays, the least lately used
 * replaced): a later EXTRACT or REPLACE whose positions are the same,
 * compared here by content, uses them without an upload (radix's loops:
 * a gather at some indices, then a REPLACE at the same ones). They are
 * the executor's own memory, not charged against -m: the reference holds
 * no positions between instructions. */
static int64_t *positions_up(CudaTier *t, const int64_t *pos, int64_t m)
{
    size_t bytes = (size_t)m * sizeof *pos;
    if (m > HOST_POSITIONS_MAX || m <= 0) {
        int64_t *pd = cx_dalloc(t->c, bytes);
        cx_h2d(t->c, pd, pos, bytes);
        note_up(t, (int64_t)bytes);
        return pd;
    }
    int slot = 0;
    for (int k = 0; k < POS_KEPT; k++) {
        if (t->kept[k].pd && t->kept[k].m == m && memcmp(t->kept[k].h, pos, bytes) == 0) {
            t->kept[k].used = ++t->kept_clock;
            t->pos_reused++;
            t->pos_reused_bytes += (int64_t)bytes;
            return t->kept[k].pd;
        }
        if (t->kept[k].used < t->kept[slot].used)
            slot = k;
    }
    if (t->kept[slot].pd) {
        cx_dfree(t->c, t->kept[slot].pd);
        free(t->kept[slot].h);
    }
    t->kept[slot].pd = cx_dalloc_fixed(t->c, bytes);
    t->kept[slot].h = rt_xmalloc(bytes);
    memcpy(t->kept[slot].h, pos, bytes);
    t->kept[slot].m = m;
    t->kept[slot].used = ++t->kept_clock;
    cx_h2d(t->c, t->kept[slot].pd, pos, bytes);
    note_up(t, (int64_t)bytes);
    return t->kept[slot].pd;
}

/* Positions PD done with: freed unless positions_up keeps them. */
static void positions_release(CudaTier *t, int64_t *pd)
{
    for (int k = 0; k < POS_KEPT; k++)
        if (t->kept[k].pd == pd)
            return;
    cx_dfree(t->c, pd);
}

/* EXTRACT's and REPLACE's positions made on the device from the indices
 * IDX and the descriptor SD (uploaded when on the host). Indices on the
 * host are checked there; indices on the device are checked there: the
 * caller reads the record when it gives FAULT_D, else it is left pending
 * (tier_defer_positions: read with the host's next wait; a bad index
 * makes position 0) when the data DATA_LEN long has an element 0, else
 * read back at once (a wait). */
static int64_t *positions_dev(CudaTier *t, Interp *it, const Instr *ins, Value *idx, Value *sd,
                              unsigned long long *fault_d, int64_t data_len)
{
    int64_t m = sd->len;
    int host_check = on_host(idx) && on_host(sd);
    if (host_check)
        check_indices(idx, sd);
    if (!sd->dev)
        note_up(t, m * 12);
    DevCopy *dc = cx_on_device(t->c, sd);
    VkArg a = arg_of(t, idx, 0);
    int64_t *pd = cx_dalloc(t->c, (size_t)m * sizeof *pd);
    int defer = !host_check && !fault_d && data_len > 0;
    unsigned long long *fd = fault_d ? fault_d : t->fault_d, none = VK_NO_FAULT;
    if (defer)
        fd = &tier_defer_positions(t, it, ins, idx, sd)->err;
    else
        cx_h2d_small(t->c, fd, &none, sizeof none);
    if (cx_lib(t->c)->seg_positions(&a, dc->d, dc->off, m, pd, fd) != 0)
        cx_lib_fail(t->c, vc_ops[t->op].name);
    cx_lib_called(t->c);
    t->dbytes += m * (4 + 4 + 8 + 8);
    if (!host_check && !fault_d && !defer)
        positions_checked(t, idx, sd, fd, pd);
    return pd;
}

/* A new device vector of DATA's elements at the M positions PD (on the
 * device, freed here). */
static Value *gather_at(CudaTier *t, Value *data, int64_t *pd, int64_t m)
{
    ValType ty = (ValType)data->type;
    Value *r = cx_device_value(t->c, ty, m);
    if (cx_lib(t->c)->elems_get(val_esize(ty), ((DevCopy *)data->dev)->d, pd, m, ((DevCopy *)r->dev)->d) != 0)
        cx_lib_fail(t->c, "EXTRACT");
    cx_lib_called(t->c);
    t->dbytes += m * (int64_t)(8 + 2 * val_esize(ty));
    positions_release(t, pd);
    return r;
}

/* EXTRACT from a device vector: a few elements (up to
 * DEVICE_FEW_SEGMENTS) are read back, the indices checked on the host;
 * more, short, with the indices on the host: gathered into a device
 * vector from positions made on the host (read back only when the host
 * reads it); short with the indices on the device: gathered there and
 * read back with the check's record; long: gathered from positions made
 * on the device. */
static void run_extract(CudaTier *t, Interp *it, const Instr *ins)
{
    Value *data = vs_at(it, 2), *idx = vs_at(it, 1), *sd = vs_at(it, 0);
    int64_t m = sd->len;
    ValType ty = (ValType)data->type;
    Value *r;
    if (m == 1 && host_positions(idx, sd) && chain_element_takes(data)) {
        /* one element, left on the device until something reads it
         * (cuda_chain.h chain_element: read with its kin in one wait) */
        int64_t *pos = positions(idx, sd);
        r = chain_element(t->c, data, pos[0]);
        free(pos);
    } else if (m <= DEVICE_FEW_SEGMENTS) {
        int64_t *pos = positions(idx, sd);
        r = val_new(ty, m);
        if (m)
            val_dev_elems(data, pos, m, r->data, 0);
        free(pos);
    } else if (m < t->min && host_positions(idx, sd)) {
        /* checked on the host; the short result stays on the device
         * until something reads it (the host: a wait then; a device
         * instruction or a chain over it: none) */
        int64_t *pos = positions(idx, sd);
        int64_t *pd = positions_up(t, pos, m);
        free(pos);
        r = gather_at(t, data, pd, m);
    } else if (m < t->min) {
        /* a short result's home is the host: gathered on the device, read
         * back with the check's record in one wait */
        size_t es = val_esize(ty), body = ((size_t)m * es + 7) / 8 * 8;
        char *tmp = cx_dalloc(t->c, body + 8);
        unsigned long long *fd = (unsigned long long *)(tmp + body);
        int64_t *pd = positions_dev(t, it, ins, idx, sd, fd, 0);
        if (data->len && cx_lib(t->c)->elems_get(es, ((DevCopy *)data->dev)->d, pd, m, tmp) != 0)
            cx_lib_fail(t->c, "EXTRACT");
        cx_lib_called(t->c);
        t->dbytes += m * (int64_t)(8 + 2 * es);
        char *buf = rt_xmalloc(body + 8);
        cx_d2h(t->c, buf, tmp, body + 8);
        unsigned long long f;
        memcpy(&f, buf + body, sizeof f);
        if (f != VK_NO_FAULT) {
            free(buf);
            positions_checked(t, idx, sd, fd, pd); /* does not return */
        }
        cx_dfree(t->c, pd);
        cx_dfree(t->c, tmp);
        r = val_new(ty, m);
        memcpy(r->data, buf, (size_t)m * es);
        free(buf);
    } else {
        r = gather_at(t, data, positions_dev(t, it, ins, idx, sd, NULL, data->len), m);
    }
    finish(t, it, 3, r);
}

/* REPLACE in a device vector: in place when only the stack holds it, else
 * in a copy on the device; a few new elements written from the host (the
 * indices checked there), more scattered from the device at positions
 * made there. */
static void run_replace(CudaTier *t, Interp *it, const Instr *ins)
{
    Value *data = vs_at(it, 3), *idx = vs_at(it, 2), *vals = vs_at(it, 1), *sd = vs_at(it, 0);
    int64_t m = sd->len, *pos = NULL, *pd = NULL;
    if (m <= DEVICE_FEW_SEGMENTS || host_positions(idx, sd)) {
        pos = positions(idx, sd);
        if (m <= DEVICE_FEW_SEGMENTS)
            val_for_host(vals);
        else
            pd = positions_up(t, pos, m);
    } else {
        pd = positions_dev(t, it, ins, idx, sd, NULL, data->len);
    }
    Value *r;
    if (val_unique(data)) {
        r = val_ref(data);
    } else {
        r = cx_device_value(t->c, (ValType)data->type, data->len);
        cx_d2d(t->c, ((DevCopy *)r->dev)->d, ((DevCopy *)data->dev)->d,
               (size_t)data->len * val_esize((ValType)data->type));
    }
    r->hstale = 1; /* the device copy alone is written */
    if (!pd) {
        if (m > 0)
            val_dev_elems(r, pos, m, vals->data, 1);
    } else if (chain_put_takes(vals, ((DevCopy *)r->dev)->d)) {
        /* the new values' chain writes them in place (cuda_chain.h chain_put) */
        chain_put(vals, ((DevCopy *)r->dev)->d, pd);
        t->dbytes += m * 8;
        positions_release(t, pd);
    } else {
        size_t es = val_esize((ValType)r->type);
        if (cx_lib(t->c)->elems_put(es, ((DevCopy *)r->dev)->d, pd, m, dev_of(t, vals)) != 0)
            cx_lib_fail(t->c, "REPLACE");
        cx_lib_called(t->c);
        t->dbytes += m * (int64_t)(8 + 2 * es);
        positions_release(t, pd);
    }
    free(pos);
    finish(t, it, 4, r);
}

/* Before INS runs (TAKE: on the device): its operands written and their
 * counts of references the reference's (cuda_chain.h), unless it is an
 * elementwise instruction the tier defers (run_elem). */
static void settle_chains(Interp *it, const Instr *ins, int take)
{
    int na = nargs_of(ins->op);
    if (na == 0 || it->sp < na)
        return;
    Value *v[16];
    if (na > 16)
        rt_fatal("internal error: %s has %d operands", vc_ops[ins->op].name, na);
    for (int j = 0; j < na; j++)
        v[j] = vs_at(it, na - 1 - j);
    if (take && kind_of(ins->op) == K_ELEM && chain_takes(ins, v, na, v[0]->len))
        return;
    /* a gather writes no operand's storage: its index may stay pending
     * or held (run_permute) */
    if (take && ins->op == OP_BPERMUTE && chain_gather_takes(v[0], v[1], v[2], v[3])) {
        chain_force(v[0]);
        return;
    }
    /* nor does a scatter (a new result): its operands may stay held by a
     * group (run_permute) */
    if (take && ins->op == OP_PERMUTE && chain_scatter_takes(v[0], v[1], v[2], v[2], v[0]->len, 0)) {
        chain_force_operands(v, 2);
        return;
    }
    if (take && ins->op == OP_DPERMUTE && v[2]->lazy && !v[2]->dev &&
        chain_scatter_takes(v[0], v[1], v[3], v[4], v[2]->len, 1)) {
        chain_force_operands(v, 2);
        return;
    }
    if (take && kind_of(ins->op) == K_REDUCE && v[1]->type == VT_SEGDES && v[1]->len == 1 && chain_pending(v[0])) {
        chain_settle_operands(v + 1, na - 1); /* the data's chain runs with the reduction (run_fold) */
        return;
    }
    if (take && ins->op == OP_REPLACE && chain_pending(v[2])) {
        /* the new values' chain may run with the scatter (run_replace) */
        Value *o[3] = { v[0], v[1], v[3] };
        chain_settle_operands(o, 3);
        return;
    }
    if (take)
        chain_settle_operands(v, na);
    else
        chain_settle_for_host(v, na);
}

/* 1 when the tier takes IF INS ahead of its condition (cuda_guard.h):
 * its THEN branch NESL's runtime error exit, its condition a Bool scalar
 * that only the device has, the stack deep enough for the branch's POPs. */
static int guard_takes(CudaTier *t, Interp *it, const Instr *ins)
{
    if (!t->guards_on || it->sp < 1)
        return 0;
    const Value *c = vs_at(it, 0);
    if (c->type != VT_BOOL || c->len != 1 || c->lazy || !c->dev || !c->hstale)
        return 0;
    int msg, depth;
    if (!guard_exit_if(t->guards, it->prog, (int)(ins - it->prog->code), &msg, &depth) || it->sp - 1 < depth)
        return 0;
    return 1;
}

/* IF INS taken so: its condition popped and held in a pending slot, read
 * with the next settle (a wait the host makes anyway, I/O, a fatal error,
 * EXIT, the end); the interpreter goes on in the ELSE branch. */
static void guard_run(CudaTier *t, Interp *it, const Instr *ins)
{
    Value *c = vs_pop(it);
    chain_force(c); /* (a pending value: its chain runs, no wait) */
    int msg, depth;
    (void)guard_exit_if(t->guards, it->prog, (int)(ins - it->prog->code), &msg, &depth);
    tier_hold_guard(t, it, ins, c, it->consts[msg]);
    t->guard_ifs++;
}

int cuda_tier_op(void *ctx, Interp *it, const Instr *ins, int run)
{
    CudaTier *t = ctx;
    t->it = it;
    if (ins->op == OP_IF) {
        if (run)
            guard_run(t, it, ins);
        return run || guard_takes(t, it, ins);
    }
    if (!run) {
        int take = claims(t, it, ins);
        if (chain_any())
            settle_chains(it, ins, take);
        return take;
    }
    t->ran[ins->op]++;
    t->op = ins->op;
    int64_t w0 = cx_syncs(t->c);
    double tt = trace_now();
    switch (kind_of(ins->op)) {
    case K_ELEM: run_elem(t, it, ins, nargs_of(ins->op)); break;
    case K_RAND: run_rand(t, it, ins); break;
    case K_DIST: run_dist(t, it); break;
    case K_INDEX: run_index(t, it); break;
    case K_SCAN: run_fold(t, it, ins, 1); break;
    case K_REDUCE: run_fold(t, it, ins, 0); break;
    case K_PERM: run_permute(t, it, ins); break;
    case K_PACK: run_pack(t, it); break;
    case K_EXTRACT: run_extract(t, it, ins); break;
    case K_REPLACE: run_replace(t, it, ins); break;
    case K_MAKE_SEGDES: run_make_segdes(t, it); break;
    case K_LENGTHS: run_lengths(t, it); break;
    case K_RANK: run_rank(t, it, ins); break;
    case K_CONST: {
        Value *v = it->consts[ins->cidx];
        (void)dev_of(t, v);
        vs_push(it, val_ref(v));
        break;
    }
    default: rt_fatal("internal error: the device tier cannot run %s", vc_ops[ins->op].name);
    }
    t->waits[ins->op] += cx_syncs(t->c) - w0;
    if (trace_on) {
        char name[64];
        snprintf(name, sizeof name, "%s (line %d)", vc_ops[ins->op].name, ins->cline);
        trace_span("device tier", name, tt, trace_now(), -1);
    }
    return 1;
}

/* ---- the read-ahead ------------------------------------------------------------ */

/* The host is about to wait for V, a vector only the device has: the
 * short vectors of V's length that only the device has, near the top of
 * the stack, come back in the same wait (exec_cuda_data.c), as the host
 * reads the fields of a tuple (a NESL pair of sequences, say) one after
 * another. Reading one the host never reads costs only its bytes; a
 * chain's pending result is not read (it may yet run on the host). */
int cuda_tier_read_ahead(CudaTier *t, const Value *v, Value **out, int max)
{
    const DevCopy *vc = v->dev;
    Interp *it = t->it;
    if (!t->ahead_on || !it || !vc || v->len >= t->min || v->type == VT_SEGDES || v->type == VT_PAIR)
        return 0;
    int n = 0;
    for (int64_t j = 0; j < it->sp && j < READ_AHEAD_DEPTH && n < max; j++) {
        Value *u = vs_at(it, j);
        const DevCopy *uc = u->dev;
        if (u == v || u->len != v->len || u->type == VT_PAIR || u->type == VT_SEGDES || !uc || !u->hstale ||
            u->lazy || !uc->d || uc->chain || uc->planted || uc->d == vc->d)
            continue;
        int seen = 0;
        for (int q = 0; q < n; q++)
            seen |= out[q] == u;
        if (seen)
            continue;
        out[n++] = u;
        t->ahead_bytes += u->len * (int64_t)val_esize((ValType)u->type);
    }
    if (n) {
        t->ahead_waits++;
        t->ahead_vals += n;
    }
    return n;
}

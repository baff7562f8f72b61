/* runtime/fused/cuda_chain.c — the device tier's deferred elementwise
 * instructions (see cuda_chain.h). */
#include "runtime/fused/cuda_chain.h"
#include "kernels/vk_elem.h"
#include "runtime/core/errors.h"
#include "runtime/core/settings.h"

#include <stdlib.h>
#include <string.h>

typedef struct Chain Chain;
struct Chain {
    Chain *prev, *next;             /* the live chains */
    Value *owner;                   /* the value it writes (not a reference) */
    int64_t n;                      /* its elements */
    VkExpr e;
    /* leaf k: a vector held (a reference, counted in its DevCopy.holds),
     * the owner's own storage (SELF: read before it is written), or a
     * scalar (neither) */
    Value *lv[VK_EXPR_LEAVES];
    uint8_t self[VK_EXPR_LEAVES];
};

static Chain *live;
static ChainStats stats;
static int enabled = -1; /* $VINTERP_DEVICE_CHAINS; -1: not read yet */

const ChainStats *chain_stats(void) { return &stats; }

static DevCopy *dc_of(const Value *v) { return v->type == VT_PAIR || v->type == VT_SEGDES ? NULL : v->dev; }

static Chain *chain_of(const Value *v)
{
    DevCopy *dc = dc_of(v);
    return dc ? dc->chain : NULL;
}

int chain_pending(const Value *v) { return chain_of(v) != NULL; }

int chain_any(void) { return live != NULL; }

static void link_chain(Chain *ch)
{
    ch->prev = NULL;
    ch->next = live;
    if (live)
        live->prev = ch;
    live = ch;
}

static void unlink_chain(Chain *ch)
{
    if (ch->prev)
        ch->prev->next = ch->next;
    else
        live = ch->next;
    if (ch->next)
        ch->next->prev = ch->prev;
    ch->prev = ch->next = NULL;
}

static void let_go(Value *v)
{
    ((DevCopy *)v->dev)->holds--;
    val_release(v);
}

static void release_leaves(Chain *ch)
{
    for (int k = 0; k < ch->e.nl; k++)
        if (ch->lv[k]) {
            Value *v = ch->lv[k];
            ch->lv[k] = NULL;
            let_go(v);
        }
}

void chain_force(Value *v)
{
    Chain *ch = chain_of(v);
    if (!ch)
        return;
    DevCopy *dc = v->dev;
    dc->chain = NULL;
    unlink_chain(ch);
    CudaExec *c = cx_current();
    if (cx_lib(c)->expr(&ch->e, ch->n, dc->d) != 0)
        cx_lib_fail(c, "an elementwise chain");
    cx_lib_called(c);
    for (int k = 0; k < ch->e.nl; k++)
        if (ch->e.leaf[k].d)
            stats.bytes += ch->n * ((ch->e.lmask >> k) & 1 ? 8 : 4);
    stats.bytes += ch->n * (ch->e.out_f ? 8 : 4);
    stats.runs++;
    release_leaves(ch);
    free(ch);
}

int chain_force_all(void)
{
    int n = 0;
    while (live) {
        chain_force(live->owner);
        n++;
    }
    return n;
}

void chain_drop(Value *v)
{
    Chain *ch = chain_of(v);
    if (!ch)
        return;
    ((DevCopy *)v->dev)->chain = NULL;
    unlink_chain(ch);
    stats.dropped++;
    release_leaves(ch);
    free(ch);
}

static int reclaim(void) { return chain_force_all() > 0; }

void chain_init(void) { mem_set_reclaim(reclaim); }

/* A leaf whose count of references, less the chains' holds, is 1: the
 * reference would see it as only the stack's (val_unique). */
static int unique_but_for_chains(const Value *v)
{
    const DevCopy *dc = dc_of(v);
    return dc && dc->holds > 0 && v->rc - dc->holds == 1;
}

void chain_settle_holds(Value *const *v, int na)
{
    for (int j = 0; j < na; j++)
        if (unique_but_for_chains(v[j])) {
            chain_force_all();
            return;
        }
}

void chain_settle_operands(Value *const *v, int na)
{
    for (int j = 0; j < na; j++)
        chain_force(v[j]);
    chain_settle_holds(v, na);
}

int chain_takes(const Instr *ins, Value *const *v, int na, int64_t n)
{
    if (enabled < 0)
        enabled = settings_choice(SET_DEVICE_CHAINS, 1);
    if (!enabled || !vk_map_takes(ins->op) || na < 1 || na > 3 || n <= 0)
        return 0;
    if (ins->type != TY_FLOAT && (ins->op == OP_DIV || ins->op == OP_MOD))
        return 0; /* may fail: its check is the tier's (a record read later) */
    for (int j = 0; j < na; j++) {
        const Value *a = v[j];
        if (a->type == VT_PAIR || a->type == VT_SEGDES || a->len != n)
            return 0;
        if (a->lazy)
            continue;
        const DevCopy *dc = a->dev;
        if (!dc || !a->hstale || dc->planted || dc->off)
            return 0;
    }
    return 1;
}

static int leaf_float(const Value *v) { return v->type == VT_FLOAT; }

/* A new leaf of NC: its operand reference (-1 - k). */
static int add_leaf(Chain *nc, const void *d, int f)
{
    int k = nc->e.nl++;
    if (k >= VK_EXPR_LEAVES)
        rt_fatal("internal error: an elementwise chain of more than %d leaves", VK_EXPR_LEAVES);
    memset(&nc->e.leaf[k], 0, sizeof nc->e.leaf[k]);
    nc->e.leaf[k].d = d;
    if (f)
        nc->e.lmask |= 1 << k;
    nc->lv[k] = NULL;
    nc->self[k] = 0;
    return -1 - k;
}

/* Device vector A (not pending) as a leaf of NC, held (once per chain). */
static int leaf_value(Chain *nc, Value *a)
{
    for (int k = 0; k < nc->e.nl; k++)
        if (nc->lv[k] == a)
            return -1 - k;
    DevCopy *dc = a->dev;
    int r = add_leaf(nc, dc->d, leaf_float(a));
    nc->lv[-1 - r] = val_ref(a);
    dc->holds++;
    return r;
}

/* Lazy fill A as a scalar leaf. */
static int leaf_scalar(Chain *nc, const Value *a)
{
    int r = add_leaf(nc, NULL, leaf_float(a));
    VkArg *l = &nc->e.leaf[-1 - r];
    if (leaf_float(a))
        l->f = a->fill.f;
    else
        l->i = a->fill.i;
    return r;
}

/* Pending A (only the stack holds it; not NC's owner) taken into NC: its
 * nodes after NC's, its leaves NC's (its own storage, which holds a leaf
 * when its chain began by writing over an argument, is then held as a
 * leaf); the reference of its result. */
static int merge(Chain *nc, Value *a)
{
    Chain *q = chain_of(a);
    ((DevCopy *)a->dev)->chain = NULL;
    unlink_chain(q);
    int lmap[VK_EXPR_LEAVES];
    for (int k = 0; k < q->e.nl; k++) {
        if (q->self[k]) {
            lmap[k] = leaf_value(nc, a);
        } else if (q->lv[k]) {
            lmap[k] = leaf_value(nc, q->lv[k]);
            let_go(q->lv[k]);
        } else {
            int r = add_leaf(nc, NULL, (q->e.lmask >> k) & 1);
            nc->e.leaf[-1 - r] = q->e.leaf[k];
            lmap[k] = r;
        }
    }
    int base = nc->e.nn;
    for (int k = 0; k < q->e.nn; k++) {
        VkExprNode nd = q->e.node[k];
        for (int j = 0; j < nd.nargs; j++)
            nd.a[j] = (int8_t)(nd.a[j] >= 0 ? nd.a[j] + base : lmap[-1 - nd.a[j]]);
        nc->e.node[nc->e.nn++] = nd;
    }
    free(q);
    stats.merged++;
    return nc->e.nn - 1;
}

static int mergeable(const Value *a) { return chain_of(a) && a->rc == 1; }

Value *chain_defer(CudaExec *c, const Instr *ins, Value *const *v, int na, ValType rt, int64_t n, int self)
{
    /* what the chain may grow to; past the kernel's bounds, its pending
     * operands run first (their results then leaves) */
    int nodes = 1, leaves = 0;
    for (int j = 0; j < na; j++) {
        const Chain *q = chain_of(v[j]);
        if (q && (j == self || mergeable(v[j]))) {
            nodes += q->e.nn;
            leaves += q->e.nl + 1;
        } else {
            leaves++;
        }
    }
    if (nodes > VK_EXPR_NODES || leaves > VK_EXPR_LEAVES) {
        stats.full++;
        for (int j = 0; j < na; j++)
            chain_force(v[j]);
    }
    /* the result's storage, as the reference's (a new vector may first
     * run every chain to make room: mem_set_reclaim) */
    Value *r = self >= 0 ? val_ref(v[self]) : cx_device_value(c, rt, n);
    Chain *nc = self >= 0 ? chain_of(r) : NULL;
    int prev = nc ? nc->e.nn - 1 : 0;
    if (!nc) {
        nc = rt_xcalloc(1, sizeof *nc);
        link_chain(nc);
    }
    int ref[3] = { 0, 0, 0 };
    for (int j = 0; j < na; j++) {
        Value *a = v[j];
        if (j == self && chain_of(a)) {
            ref[j] = prev;
        } else if (j == self) { /* its storage is the result's: read first, then written */
            ref[j] = add_leaf(nc, ((DevCopy *)a->dev)->d, leaf_float(a));
            nc->self[-1 - ref[j]] = 1;
        } else if (a->lazy) {
            ref[j] = leaf_scalar(nc, a);
        } else if (mergeable(a)) {
            ref[j] = merge(nc, a);
        } else {
            chain_force(a);
            ref[j] = leaf_value(nc, a);
        }
    }
    VkExprNode *nd = &nc->e.node[nc->e.nn++];
    memset(nd, 0, sizeof *nd);
    nd->op = (uint8_t)ins->op;
    nd->ty = (uint8_t)(ins->type == TY_FLOAT ? VS_FLOAT : ins->type == TY_BOOL ? VS_BOOL : VS_INT);
    nd->nargs = (uint8_t)na;
    for (int j = 0; j < na; j++)
        nd->a[j] = (int8_t)ref[j];
    nc->owner = r;
    nc->n = n;
    nc->e.out_f = rt == VT_FLOAT;
    r->type = (uint8_t)rt;
    r->hstale = 1;
    ((DevCopy *)r->dev)->chain = nc;
    stats.deferred++;
    return r;
}

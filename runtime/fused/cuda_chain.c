/* runtime/fused/cuda_chain.c — the device tier's deferred elementwise
 * instructions (see cuda_chain.h). */
#include "runtime/fused/cuda_chain.h"
#include "runtime/fused/chain_host.h"
#include "kernels/vk_count.h"
#include "kernels/vk_elem.h"
#include "runtime/core/errors.h"
#include "runtime/core/settings.h"

#include <stdlib.h>
#include <string.h>

typedef struct Chain Chain;
struct Chain {
    Chain *prev, *next;             /* the live chains */
    int64_t n;                      /* elements of every leaf and output */
    VkExpr e;                       /* (an output's D is NULL only in a reduction's run) */
    Value *ov[VK_EXPR_OUTS];        /* output k's value (not a reference) */
    /* leaf k: a vector held (LV, a reference counted in its DevCopy.holds);
     * the old contents of storage an output writes over (SELF; read
     * before they are written), OWNED by the chain once that output's
     * value has gone; or a scalar (none of these) */
    Value *lv[VK_EXPR_LEAVES];
    Value *ls[VK_EXPR_LEAVES];      /* a leaf spread over segments (DIST's): its descriptor, held */
    uint8_t self[VK_EXPR_LEAVES];
    void *owned[VK_EXPR_LEAVES];
    /* its gathers (e.gfault set): their source and destination
     * descriptors, held, and their index (held as a leaf or an output;
     * NULL once it is neither: no later gather joins) */
    Value *gsd[2], *gidx;
    /* a scatter group (chain_scatter) when SIDX is set: leaf k scattered
     * into output k, for each k, at the index SIDX from the descriptor SSD
     * to SDSD (all held; the same for PERMUTE), one check into SREC; no
     * nodes. SFILLED: DPERMUTEs into lazy fills, output k SNDST elements
     * of SFILL[k] first; else PERMUTEs, the unclaimed positions 0. */
    Value *sidx, *ssd, *sdsd;
    VkPermFault *srec;
    int sfilled;
    int64_t sndst;
    VkArg sfill[VK_SCATTER_MANY];
    /* never run on the host (chain_element's: its leaf is one element of
     * a vector the host would read back whole) */
    int device_only;
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

/* 1 when CH is a scatter group (chain_scatter), not an expression. */
static int is_scatter(const Chain *ch) { return ch->sidx != NULL; }

int chain_pending(const Value *v)
{
    const Chain *ch = chain_of(v);
    return ch && !is_scatter(ch);
}

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

/* The output slot of V in CH. */
static int out_of(const Chain *ch, const Value *v)
{
    for (int k = 0; k < ch->e.no; k++)
        if (ch->ov[k] == v)
            return k;
    rt_fatal("internal error: a pending vector is not its chain's output");
}

static void let_go(Value *v)
{
    ((DevCopy *)v->dev)->holds--;
    val_release(v);
}

/* CH's leaves let go and the chain freed (its outputs no longer pending). */
static void free_chain(Chain *ch)
{
    unlink_chain(ch);
    for (int k = 0; k < ch->e.no; k++)
        ((DevCopy *)ch->ov[k]->dev)->chain = NULL;
    CudaExec *c = cx_current();
    for (int k = 0; k < ch->e.nl; k++) {
        if (ch->owned[k] && c)
            cx_dfree(c, ch->owned[k]);
        if (ch->lv[k]) {
            Value *v = ch->lv[k];
            ch->lv[k] = NULL;
            let_go(v);
        }
        if (ch->ls[k]) {
            Value *sd = ch->ls[k];
            ch->ls[k] = NULL;
            val_release(sd);
        }
    }
    for (int k = 0; k < 2; k++)
        if (ch->gsd[k]) {
            Value *sd = ch->gsd[k];
            ch->gsd[k] = NULL;
            val_release(sd);
        }
    if (ch->sidx) {
        Value *idx = ch->sidx, *sd = ch->ssd, *dsd = ch->sdsd;
        ch->sidx = ch->ssd = ch->sdsd = NULL;
        let_go(idx);
        val_release(sd);
        val_release(dsd);
    }
    free(ch);
}

/* The bytes a run of CH reads and writes: each leaf vector once (one
 * spread over segments: its values and offsets), each output written
 * once. */
static void count_run(const Chain *ch)
{
    for (int k = 0; k < ch->e.nl; k++)
        if (ch->e.leaf[k].d) {
            int64_t m = ch->e.lm[k], es = (ch->e.lmask >> k) & 1 ? 8 : 4;
            stats.bytes += m == 0 ? ch->n * es : m * es + (m > 1 ? m * 8 : 0);
        }
    for (int k = 0; k < ch->e.no; k++)
        if (ch->e.out[k].d) {
            stats.bytes += ch->n * (ch->e.out[k].f ? 8 : 4);
            stats.outputs++;
        }
    /* (a gather's data is a leaf, counted above once, as the tier counts
     * a gather run by itself; neither counts the segment search) */
    stats.runs++;
}

static void run_scatter(Chain *ch);
static int runs_with(const Chain *ch, const Chain *q, int reserve);
static void merge(Chain *nc, Chain *q);

/* CH about to run (with RESERVE outputs more for the run): live chains
 * of its length taken into it where they fit (runs_with), so that their
 * launch is CH's (no launch more: each would run in one of its own) —
 * one-element reads (chain_element), which the host wants with their kin,
 * and when GATHERS those with gathers, whose records the tier reads at
 * the host's next wait (CH a reduction's or a REPLACE's: a wait follows
 * as a rule, for an IF; elsewhere a later gather at their index may still
 * join them). */
static void take_kin(Chain *ch, int reserve, int gathers)
{
    for (Chain *q = live; q;) {
        Chain *next = q->next;
        if (q != ch && (q->device_only || (gathers && q->e.gfault)) && runs_with(ch, q, reserve)) {
            merge(ch, q);
            stats.together++;
        }
        q = next;
    }
}

static void run_chain(Chain *ch)
{
    if (is_scatter(ch)) {
        run_scatter(ch);
        return;
    }
    take_kin(ch, 0, 0);
    CudaExec *c = cx_current();
    if (cx_lib(c)->expr(&ch->e, ch->n) != 0)
        cx_lib_fail(c, "an elementwise chain");
    cx_lib_called(c);
    count_run(ch);
    free_chain(ch);
}

void chain_reduce(Value *v, VsRop rop, void *out_d)
{
    Chain *ch = chain_of(v);
    take_kin(ch, 1, 1); /* (one output kept free for the reduction's temporary) */
    int k = out_of(ch, v);
    if (v->rc == 1) /* the reduction is its last reader: never written */
        ch->e.out[k].d = NULL;
    CudaExec *c = cx_current();
    if (cx_lib(c)->expr_reduce(&ch->e, ch->e.out[k].node, rop, ch->n, out_d) != 0)
        cx_lib_fail(c, "an elementwise chain's reduction");
    cx_lib_called(c);
    count_run(ch);
    stats.reduced++;
    free_chain(ch);
}

int chain_put_takes(const Value *v, const void *dst_d)
{
    const Chain *ch = chain_of(v);
    if (!ch || is_scatter(ch) || ch->e.no >= VK_EXPR_OUTS)
        return 0;
    for (int k = 0; k < ch->e.nl; k++)
        if (ch->e.leaf[k].d == dst_d || (ch->owned[k] && ch->owned[k] == dst_d))
            return 0;
    for (int k = 0; k < ch->e.no; k++)
        if (ch->e.out[k].d == dst_d)
            return 0;
    return 1;
}

void chain_put(Value *v, void *dst_d, const int64_t *pos_d)
{
    Chain *ch = chain_of(v);
    take_kin(ch, 1, 1);
    int k = out_of(ch, v);
    VkExpr e = ch->e; /* the run's: one output more (not a value's) */
    int o = e.no++;
    e.out[o] = e.out[k];
    e.out[o].d = dst_d;
    e.out[o].pos = pos_d;
    if (v->rc == 1) /* the REPLACE is its last reader: its own copy never written */
        ch->e.out[k].d = e.out[k].d = NULL;
    CudaExec *c = cx_current();
    if (cx_lib(c)->expr(&e, ch->n) != 0)
        cx_lib_fail(c, "an elementwise chain with a REPLACE");
    cx_lib_called(c);
    count_run(ch);
    stats.bytes += ch->n * (e.out[o].f ? 8 : 4);
    stats.puts++;
    free_chain(ch);
}

void chain_force(Value *v)
{
    Chain *ch = chain_of(v);
    if (ch)
        run_chain(ch);
}

/* 1 when chain Q can be taken into CH for one run: as many elements,
 * the kernel's bounds (leaves counted as if none were shared), at most
 * one of them with gathers (one record), and neither writing storage the
 * other reads. */
static int runs_with(const Chain *ch, const Chain *q, int reserve)
{
    if (ch == q || ch->n != q->n || (ch->e.gfault && q->e.gfault) || is_scatter(ch) || is_scatter(q))
        return 0;
    if (ch->e.nn + q->e.nn > VK_EXPR_NODES || ch->e.nl + q->e.nl > VK_EXPR_LEAVES ||
        ch->e.no + q->e.no > VK_EXPR_OUTS - reserve)
        return 0;
    for (int pass = 0; pass < 2; pass++) {
        const Chain *w = pass ? q : ch, *r = pass ? ch : q;
        for (int k = 0; k < w->e.no; k++)
            for (int j = 0; j < r->e.nl; j++)
                if (w->e.out[k].d &&
                    (r->e.leaf[j].d == w->e.out[k].d || (r->owned[j] && r->owned[j] == w->e.out[k].d)))
                    return 0;
    }
    return 1;
}

/* The chains CS[0 .. M) run now, those that can taken into one another
 * (runs_with) so that each launch runs as many of them as it may:
 * chains made apart whose values are wanted at the same time (an
 * instruction's operands, every chain at once) cost one launch, not one
 * each. CS's entries are distinct and live. */
static void run_together(Chain **cs, int m)
{
    for (int i = 0; i < m; i++) {
        if (!cs[i])
            continue;
        for (int j = i + 1; j < m; j++)
            if (cs[j] && runs_with(cs[i], cs[j], 0)) {
                merge(cs[i], cs[j]);
                stats.together++;
                cs[j] = NULL;
            }
        run_chain(cs[i]);
        cs[i] = NULL;
    }
}

int chain_force_all(void)
{
    int n = 0;
    while (live) {
        Chain *cs[64];
        int m = 0;
        for (Chain *ch = live; ch && m < 64; ch = ch->next)
            cs[m++] = ch;
        n += m;
        run_together(cs, m);
    }
    return n;
}

void chain_force_checks(void)
{
    Chain *ch = live;
    while (ch) {
        Chain *next = ch->next;
        if (ch->e.gfault || is_scatter(ch))
            run_chain(ch);
        ch = next;
    }
}

void chain_drop(Value *v)
{
    Chain *ch = chain_of(v);
    if (!ch)
        return;
    if (is_scatter(ch)) { /* its check is the reference's, and its outputs go with their sources: it runs */
        run_chain(ch);
        return;
    }
    DevCopy *dc = v->dev;
    int k = out_of(ch, v);
    dc->chain = NULL;
    if (ch->gidx == v)
        ch->gidx = NULL;
    for (int j = 0; j < ch->e.nl; j++)
        if (ch->self[j] && !ch->owned[j] && ch->e.leaf[j].d == ch->e.out[k].d) {
            ch->owned[j] = dc->d; /* its old contents are still to be read: the chain frees it */
            dc->d = NULL;
        }
    /* the slot goes (the last one takes its place) */
    int last = --ch->e.no;
    ch->e.out[k] = ch->e.out[last];
    ch->ov[k] = ch->ov[last];
    ch->ov[last] = NULL;
    if (ch->e.no > 0)
        return;
    if (ch->e.gfault) { /* its gathers' check is still the reference's: it runs for that */
        run_chain(ch);
        return;
    }
    stats.dropped++;
    free_chain(ch);
}

static int reclaim(void) { return chain_force_all() > 0; }

static int64_t host_max; /* chains of at most this many elements may run on the host */

void chain_init(int64_t hmax)
{
    host_max = hmax;
    mem_set_reclaim(reclaim);
}

/* 1 when CH may run on the host (cuda_chain.h chain_host_run). */
static int host_runnable(const Chain *ch)
{
    if (ch->n > host_max || ch->e.gfault || is_scatter(ch) || ch->device_only || ch->e.no < 1)
        return 0;
    for (int k = 0; k < ch->e.nl; k++)
        if (ch->ls[k] || (ch->e.leaf[k].d && !ch->lv[k] && !ch->self[k]))
            return 0;
    for (int k = 0; k < ch->e.no; k++)
        if (!ch->e.out[k].d || (!ch->ov[k]->data && !ch->ov[k]->nohost))
            return 0;
    return 1;
}

/* CH run on the host (host_runnable said so): its leaves' host copies
 * made current, its outputs written to their host copies, their device
 * copies dropped, CH freed. */
static void run_on_host(Chain *ch)
{
    CudaExec *c = cx_current();
    VkExpr e = ch->e;
    void *old[VK_EXPR_LEAVES] = { NULL };
    for (int k = 0; k < e.nl; k++) {
        Value *a = ch->lv[k];
        if (ch->self[k]) { /* the old contents of storage an output writes over: read into a buffer of their own */
            size_t bytes = (size_t)ch->n * val_esize((e.lmask >> k) & 1 ? VT_FLOAT : VT_INT);
            old[k] = rt_xmalloc(bytes ? bytes : 1);
            cx_d2h(c, old[k], e.leaf[k].d, bytes);
            e.leaf[k].d = old[k];
            continue;
        }
        if (!a)
            continue;
        if (a->hstale) { /* read back as val_for_host would, the device copy kept (the chain holds it) */
            val_host_storage(a);
            cx_d2h(c, a->data, ((DevCopy *)a->dev)->d, (size_t)a->len * val_esize((ValType)a->type));
            a->hstale = 0;
        }
        e.leaf[k].d = a->data;
    }
    Value *outs[VK_EXPR_OUTS];
    int no = e.no;
    for (int k = 0; k < no; k++) {
        outs[k] = val_ref(ch->ov[k]); /* kept while the chain goes */
        val_host_storage(outs[k]);
        e.out[k].d = outs[k]->data;
    }
    chain_host_eval(&e, ch->n);
    for (int k = 0; k < e.nl; k++)
        free(old[k]);
    stats.host_runs++;
    free_chain(ch);
    for (int k = 0; k < no; k++) {
        outs[k]->hstale = 0;
        val_drop_device(outs[k]); /* its device copy was never written */
        val_release(outs[k]);
    }
}

int chain_host_run(Value *v)
{
    Chain *ch = chain_of(v);
    if (!ch || !host_runnable(ch))
        return 0;
    run_on_host(ch);
    return 1;
}

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

/* The chains of V[0 .. NA) (each once, at most CAP of them) into CS;
 * how many. */
static int chains_of(Value *const *v, int na, Chain **cs, int cap)
{
    int m = 0;
    for (int j = 0; j < na && m < cap; j++) {
        Chain *q = chain_of(v[j]);
        int seen = 0;
        for (int k = 0; k < m; k++)
            seen |= cs[k] == q;
        if (q && !seen)
            cs[m++] = q;
    }
    return m;
}

void chain_force_operands(Value *const *v, int na)
{
    Chain *cs[32];
    int m;
    while ((m = chains_of(v, na, cs, 32)) > 0) /* a run chain is no operand's any more */
        run_together(cs, m);
}

void chain_settle_operands(Value *const *v, int na)
{
    chain_force_operands(v, na);
    chain_settle_holds(v, na);
}

/* 1 when CH holds V as a leaf. */
static int holds_leaf(const Chain *ch, const Value *v)
{
    for (int k = 0; k < ch->e.nl; k++)
        if (ch->lv[k] == v)
            return 1;
    return 0;
}

void chain_settle_for_host(Value *const *v, int na)
{
    for (int j = 0; j < na; j++)
        (void)chain_host_run(v[j]);
    chain_force_operands(v, na);
    for (int j = 0; j < na; j++) {
        if (!unique_but_for_chains(v[j]))
            continue;
        /* the chains holding it let it go: on the host where they may,
         * else every chain runs (chain_settle_holds) */
        for (Chain *ch = live; ch;) {
            if (holds_leaf(ch, v[j]) && host_runnable(ch)) {
                run_on_host(ch); /* (its read back may run other chains: from the start again) */
                ch = live;
            } else {
                ch = ch->next;
            }
        }
        chain_settle_holds(v + j, 1);
    }
}

int chain_takes(const Instr *ins, Value *const *v, int na, int64_t n)
{
    if (!chain_on() || !vk_map_takes(ins->op) || na < 1 || na > 3 || n <= 0)
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
    nc->e.loff[k] = NULL;
    nc->e.lm[k] = 0;
    if (f)
        nc->e.lmask |= 1 << k;
    nc->lv[k] = NULL;
    nc->ls[k] = NULL;
    nc->self[k] = 0;
    nc->owned[k] = NULL;
    return -1 - k;
}

/* A new node and a new output slot of NC (chain_defer keeps within the
 * kernel's bounds). */
static int new_node(Chain *nc)
{
    if (nc->e.nn >= VK_EXPR_NODES)
        rt_fatal("internal error: an elementwise chain of more than %d nodes", VK_EXPR_NODES);
    return nc->e.nn++;
}

static int new_output(Chain *nc)
{
    if (nc->e.no >= VK_EXPR_OUTS)
        rt_fatal("internal error: an elementwise chain of more than %d outputs", VK_EXPR_OUTS);
    nc->e.out[nc->e.no].pos = NULL;
    return nc->e.no++;
}

/* Device vector A (not pending) as a leaf of NC, held (once per chain). */
static int leaf_value(Chain *nc, Value *a)
{
    DevCopy *dc = a->dev;
    for (int k = 0; k < nc->e.nl; k++) /* (not one element of it: chain_element's leaf) */
        if (nc->lv[k] == a && !nc->ls[k] && nc->e.leaf[k].d == dc->d)
            return -1 - k;
    int r = add_leaf(nc, dc->d, leaf_float(a));
    nc->lv[-1 - r] = val_ref(a);
    dc->holds++;
    return r;
}

/* Device vector A (one element a segment) spread over descriptor SD's
 * segments (DIST) as a leaf of NC, both held (once per chain). */
static int leaf_spread(Chain *nc, Value *a, Value *sd)
{
    for (int k = 0; k < nc->e.nl; k++)
        if (nc->lv[k] == a && nc->ls[k] == sd)
            return -1 - k;
    DevCopy *dc = a->dev;
    int r = add_leaf(nc, dc->d, leaf_float(a));
    int k = -1 - r;
    nc->e.lm[k] = sd->len;
    nc->e.loff[k] = sd->len > 1 ? ((DevCopy *)sd->dev)->off : NULL;
    nc->lv[k] = val_ref(a);
    nc->ls[k] = val_ref(sd);
    dc->holds++;
    return r;
}

/* One value VAL (no vector: VAL->d NULL; Floats when F) spread over
 * descriptor SD's segments (INDEX's start or stride when the host has it
 * as one value): its offsets read through the leaf, SD held. */
static int leaf_spread_value(Chain *nc, const VkArg *val, int f, Value *sd)
{
    int r = add_leaf(nc, NULL, f);
    int k = -1 - r;
    nc->e.leaf[k] = *val;
    nc->e.lm[k] = sd->len;
    nc->e.loff[k] = sd->len > 1 ? ((DevCopy *)sd->dev)->off : NULL;
    nc->ls[k] = val_ref(sd);
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

/* Q's gathers' record, descriptors and index NC's (Q's references moved). */
static void adopt_gathers(Chain *nc, Chain *q)
{
    nc->e.gfault = q->e.gfault;
    nc->e.glen = q->e.glen;
    nc->e.gsoff = q->e.gsoff;
    nc->e.gdoff = q->e.gdoff;
    nc->e.gm = q->e.gm;
    nc->e.gnsrc = q->e.gnsrc;
    nc->gsd[0] = q->gsd[0];
    nc->gsd[1] = q->gsd[1];
    nc->gidx = q->gidx;
    q->gsd[0] = q->gsd[1] = q->gidx = NULL;
    q->e.gfault = NULL;
}

/* Chain Q taken into NC: its leaves, nodes (after NC's) and live outputs
 * NC's; Q freed. */
static void merge(Chain *nc, Chain *q)
{
    unlink_chain(q);
    int lmap[VK_EXPR_LEAVES];
    for (int k = 0; k < q->e.nl; k++) {
        if (q->lv[k] && !q->ls[k] && q->e.leaf[k].d != ((DevCopy *)q->lv[k]->dev)->d) {
            /* one element of a vector (chain_element): a leaf of its own */
            lmap[k] = add_leaf(nc, q->e.leaf[k].d, (q->e.lmask >> k) & 1);
            nc->lv[-1 - lmap[k]] = q->lv[k]; /* its reference and hold moved */
            q->lv[k] = NULL;
        } else if (q->lv[k]) {
            lmap[k] = q->ls[k] ? leaf_spread(nc, q->lv[k], q->ls[k]) : leaf_value(nc, q->lv[k]);
            let_go(q->lv[k]);
            if (q->ls[k])
                val_release(q->ls[k]);
        } else {
            int r = add_leaf(nc, NULL, (q->e.lmask >> k) & 1);
            nc->e.leaf[-1 - r] = q->e.leaf[k];
            nc->self[-1 - r] = q->self[k];
            nc->owned[-1 - r] = q->owned[k];
            nc->e.lm[-1 - r] = q->e.lm[k]; /* one value spread over segments (leaf_spread_value) */
            nc->e.loff[-1 - r] = q->e.loff[k];
            nc->ls[-1 - r] = q->ls[k]; /* its descriptor's reference moved */
            q->ls[k] = NULL;
            lmap[k] = r;
        }
    }
    int base = nc->e.nn;
    for (int k = 0; k < q->e.nn; k++) {
        VkExprNode nd = q->e.node[k];
        for (int j = 0; j < nd.nargs; j++)
            nd.a[j] = (int8_t)(nd.a[j] >= 0 ? nd.a[j] + base : lmap[-1 - nd.a[j]]);
        nc->e.node[new_node(nc)] = nd;
    }
    for (int k = 0; k < q->e.no; k++) {
        int o = new_output(nc);
        nc->e.out[o] = q->e.out[k];
        nc->e.out[o].node += base;
        nc->ov[o] = q->ov[k];
        ((DevCopy *)q->ov[k]->dev)->chain = nc;
    }
    if (q->e.gfault) { /* its gathers NC's (chain_defer keeps one chain with gathers of those it merges) */
        if (nc->e.gfault)
            rt_fatal("internal error: two elementwise chains with gathers merged");
        adopt_gathers(nc, q);
    }
    free(q);
}


Value *chain_defer(CudaExec *c, const Instr *ins, Value *const *v, int na, ValType rt, int64_t n, int self)
{
    for (int j = 0; j < na; j++) { /* a scatter group's outputs are written first: leaves then */
        Chain *q = chain_of(v[j]);
        if (q && is_scatter(q))
            run_chain(q);
    }
    /* what the chain may grow to; past the kernel's bounds, the operands'
     * chains run first (their results then leaves) */
    Chain *cs[3];
    int m = chains_of(v, na, cs, 3);
    int nodes = 1, leaves = na, outs = 1;
    for (int k = 0; k < m; k++) {
        nodes += cs[k]->e.nn;
        leaves += cs[k]->e.nl;
        outs += cs[k]->e.no;
    }
    /* (one output kept free for vk_expr_reduce's temporary) */
    if (nodes > VK_EXPR_NODES || leaves > VK_EXPR_LEAVES || outs > VK_EXPR_OUTS - 1) {
        stats.full++;
        for (int k = 0; k < m; k++)
            run_chain(cs[k]);
    }
    /* the result's storage, as the reference's (a new vector may first
     * run every chain to make room: mem_set_reclaim) */
    Value *r = self >= 0 ? val_ref(v[self]) : cx_device_value(c, rt, n);
    m = chains_of(v, na, cs, 3);
    /* one chain's gathers at most (one record): the others' chains run */
    for (int k = 0, seen = 0; k < m; k++)
        if (cs[k]->e.gfault && seen++)
            run_chain(cs[k]);
    m = chains_of(v, na, cs, 3);
    Chain *nc;
    if (m) {
        nc = cs[0];
        for (int k = 1; k < m; k++) {
            merge(nc, cs[k]);
            stats.merged++;
        }
    } else {
        nc = rt_xcalloc(1, sizeof *nc);
        nc->n = n;
        link_chain(nc);
    }
    int ref[3] = { 0, 0, 0 };
    int slot = -1; /* the result's output, when it is pending already (written over) */
    for (int j = 0; j < na; j++) {
        Value *a = v[j];
        if (chain_of(a)) {
            int k = out_of(nc, a);
            ref[j] = nc->e.out[k].node;
            if (j == self)
                slot = k;
        } else if (j == self) { /* its storage is the result's: read first, then written */
            ref[j] = add_leaf(nc, ((DevCopy *)a->dev)->d, leaf_float(a));
            nc->self[-1 - ref[j]] = 1;
        } else if (a->lazy) {
            ref[j] = leaf_scalar(nc, a);
        } else {
            ref[j] = leaf_value(nc, a);
        }
    }
    int node = new_node(nc);
    VkExprNode *nd = &nc->e.node[node];
    memset(nd, 0, sizeof *nd);
    nd->op = (uint8_t)ins->op;
    nd->ty = (uint8_t)(ins->type == TY_FLOAT ? VS_FLOAT : ins->type == TY_BOOL ? VS_BOOL : VS_INT);
    nd->nargs = (uint8_t)na;
    for (int j = 0; j < na; j++)
        nd->a[j] = (int8_t)ref[j];
    if (slot < 0) {
        slot = new_output(nc);
        nc->e.out[slot].d = ((DevCopy *)r->dev)->d;
        nc->ov[slot] = r;
        ((DevCopy *)r->dev)->chain = nc;
    }
    nc->e.out[slot].node = node;
    nc->e.out[slot].f = rt == VT_FLOAT;
    r->type = (uint8_t)rt;
    r->hstale = 1;
    stats.deferred++;
    return r;
}

/* A new chain of N elements whose one output will be a new vector of N
 * elements of T (allocated as the reference's would be: may run every
 * chain first); *R that vector. */
static Chain *chain_new(CudaExec *c, ValType t, int64_t n, Value **r)
{
    *r = cx_device_value(c, t, n);
    Chain *nc = rt_xcalloc(1, sizeof *nc);
    nc->n = n;
    link_chain(nc);
    return nc;
}

/* NC's one node, OP of type TY over A0 (and A1 when NARGS is 2), written
 * to R (Floats when R is), which is then pending. */
static Value *chain_one_node(Chain *nc, Value *r, int op, int ty, int nargs, int a0, int a1)
{
    int node = new_node(nc);
    VkExprNode *nd = &nc->e.node[node];
    memset(nd, 0, sizeof *nd);
    nd->op = (uint8_t)op;
    nd->ty = (uint8_t)ty;
    nd->nargs = (uint8_t)nargs;
    nd->a[0] = (int8_t)a0;
    nd->a[1] = (int8_t)a1;
    int slot = new_output(nc);
    nc->e.out[slot].d = ((DevCopy *)r->dev)->d;
    nc->e.out[slot].node = node;
    nc->e.out[slot].f = r->type == VT_FLOAT;
    nc->ov[slot] = r;
    ((DevCopy *)r->dev)->chain = nc;
    stats.deferred++;
    return r;
}

Value *chain_dist(CudaExec *c, const VkArg *val, Value *held, Value *sd, ValType t, int64_t n)
{
    Value *r;
    Chain *nc = chain_new(c, t, n, &r);
    int ref;
    if (held) {
        ref = leaf_spread(nc, held, sd);
    } else { /* one value for every element */
        ref = add_leaf(nc, NULL, t == VT_FLOAT);
        nc->e.leaf[-1 - ref] = *val;
    }
    stats.spread++;
    return chain_one_node(nc, r, VK_EXPR_COPY, 0, 1, ref, 0);
}

Value *chain_index(CudaExec *c, const VkArg *start, Value *start_v, const VkArg *stride, Value *stride_v, Value *sd,
                   int64_t n)
{
    Value *r;
    Chain *nc = chain_new(c, VT_INT, n, &r);
    int a = start_v ? leaf_spread(nc, start_v, sd) : leaf_spread_value(nc, start, 0, sd);
    int b = stride_v ? leaf_spread(nc, stride_v, sd) : leaf_spread_value(nc, stride, 0, sd);
    stats.indexed++;
    return chain_one_node(nc, r, VK_EXPR_INDEX, VS_INT, 2, a, b);
}

Value *chain_lengths(CudaExec *c, Value *sd)
{
    Value *r;
    Chain *nc = chain_new(c, VT_INT, sd->len, &r);
    int ref = leaf_value(nc, sd); /* its lengths, an Int vector of its M elements */
    return chain_one_node(nc, r, VK_EXPR_COPY, VS_INT, 1, ref, 0);
}

int chain_on(void)
{
    if (enabled < 0)
        enabled = settings_choice(SET_DEVICE_CHAINS, 1);
    return enabled;
}

/* ---- gathers (BPERMUTE) ---------------------------------------------------- */

/* A vector with a whole device copy of its own (a gather's leaf: read
 * there whether or not the host's copy is current too). */
static int on_device(const Value *v)
{
    const DevCopy *dc = dc_of(v);
    return dc && !dc->planted && !dc->off && !v->lazy;
}

int chain_gather_takes(const Value *data, const Value *idx, const Value *ssd, const Value *dsd)
{
    if (!chain_on() || data->type == VT_PAIR || data->type == VT_SEGDES || idx->type != VT_INT)
        return 0;
    if (ssd->type != VT_SEGDES || dsd->type != VT_SEGDES || !ssd->sane || !dsd->sane)
        return 0;
    /* as many segments on each side (no segment without a partner), an
     * index for every destination element, the source descriptor the
     * data's (its lengths are what the indices are checked against),
     * something to gather from */
    if (ssd->len != dsd->len || ssd->len < 1 || idx->len < 1 || dsd->n != idx->len || ssd->n != data->len ||
        data->len < 1 || idx->len >= VK_EXPR_GATHER_MAX)
        return 0;
    return on_device(data) && (idx->lazy || on_device(idx));
}

/* 1 when descriptors A and B are the same: one value, or one segment
 * each of as many elements, or lengths the host holds that are equal. */
static int same_segdes(const Value *a, const Value *b)
{
    if (a == b)
        return 1;
    if (a->len != b->len || a->n != b->n || !a->sane || !b->sane)
        return 0;
    if (a->len == 1)
        return 1;
    return !a->hstale && !b->hstale && !a->lazy && !b->lazy && a->data && b->data &&
           memcmp(a->data, b->data, (size_t)a->len * 4) == 0;
}

/* 1 when CH's gathers are over SSD and DSD at IDX. */
static int same_gathers(const Chain *ch, const Value *idx, const Value *ssd, const Value *dsd)
{
    return ch->e.gfault && ch->gidx == idx && same_segdes(ch->gsd[0], ssd) && same_segdes(ch->gsd[1], dsd) &&
           ch->n == idx->len;
}

/* 1 when CH can take one gather more (a node, an output, two leaves). */
static int room_for_gather(const Chain *ch)
{
    return ch->e.nn + 1 <= VK_EXPR_NODES && ch->e.nl + 2 <= VK_EXPR_LEAVES && ch->e.no + 1 <= VK_EXPR_OUTS - 1;
}

/* The chain whose gathers a gather of DATA at IDX over SSD and DSD joins,
 * sharing their record: its index's chain when that is one, else a chain
 * that holds the index as a leaf; NULL when there is none (or no room,
 * or DATA is its output). */
static Chain *gather_join(const Value *data, const Value *idx, const Value *ssd, const Value *dsd)
{
    Chain *q = chain_of(idx);
    if (!q)
        for (Chain *ch = live; ch && !q; ch = ch->next)
            if (same_gathers(ch, idx, ssd, dsd))
                q = ch;
    if (!q || !same_gathers(q, idx, ssd, dsd) || !room_for_gather(q) || chain_of(data) == q)
        return NULL;
    return q;
}

int chain_gather_joins(const Value *data, const Value *idx, const Value *ssd, const Value *dsd)
{
    return gather_join(data, idx, ssd, dsd) != NULL;
}

Value *chain_gather(Value *r, Value *data, Value *idx, Value *ssd, Value *dsd, VkPermFault *rec)
{
    chain_force(data);
    Chain *qi = chain_of(idx);
    if (qi && is_scatter(qi))
        run_chain(qi);
    int64_t n = idx->len;
    Chain *nc = rec ? NULL : gather_join(data, idx, ssd, dsd); /* a record given is used */
    if (!nc && !rec)
        rt_fatal("internal error: a gather without a record joins no chain");
    if (!nc) {
        Chain *q = chain_of(idx);
        /* its index's chain takes it when it has no gathers and has room;
         * else that chain runs and the index is a leaf of a new chain */
        if (q && (q->e.gfault || !room_for_gather(q))) {
            run_chain(q);
            q = NULL;
        }
        if (q) {
            nc = q;
        } else {
            nc = rt_xcalloc(1, sizeof *nc);
            nc->n = n;
            link_chain(nc);
        }
        nc->e.gfault = rec;
        nc->e.gm = ssd->len;
        nc->e.gnsrc = data->len;
        if (ssd->len > 1) {
            const DevCopy *s = ssd->dev, *d = dsd->dev;
            nc->e.glen = s->d;
            nc->e.gsoff = s->off;
            nc->e.gdoff = d->off;
        }
        nc->gsd[0] = val_ref(ssd);
        nc->gsd[1] = val_ref(dsd);
        nc->gidx = idx->lazy ? NULL : idx; /* a lazy fill is not held: no later gather joins on it */
    } else {
        stats.gather_joins++;
    }
    int iref = chain_of(idx) == nc ? nc->e.out[out_of(nc, idx)].node : idx->lazy ? leaf_scalar(nc, idx)
                                                                              : leaf_value(nc, idx);
    int sref = leaf_value(nc, data);
    int node = new_node(nc);
    VkExprNode *nd = &nc->e.node[node];
    memset(nd, 0, sizeof *nd);
    nd->op = VK_EXPR_GATHER;
    nd->ty = (uint8_t)(data->type == VT_FLOAT ? VS_FLOAT : data->type == VT_BOOL ? VS_BOOL : VS_INT);
    nd->nargs = 2;
    nd->a[0] = (int8_t)iref;
    nd->a[1] = (int8_t)sref;
    int slot = new_output(nc);
    nc->e.out[slot].d = ((DevCopy *)r->dev)->d;
    nc->e.out[slot].node = node;
    nc->e.out[slot].f = data->type == VT_FLOAT;
    nc->ov[slot] = r;
    ((DevCopy *)r->dev)->chain = nc;
    r->hstale = 1;
    stats.deferred++;
    stats.gathers++;
    return r;
}

/* ---- one element (EXTRACT) ---------------------------------------------------- */

int chain_element_takes(const Value *data)
{
    return chain_on() && data->type != VT_PAIR && data->type != VT_SEGDES && data->len >= 1 &&
           (on_device(data) || chain_of(data));
}

Value *chain_element(CudaExec *c, Value *data, int64_t pos)
{
    chain_force(data);
    Value *r;
    Chain *nc = chain_new(c, (ValType)data->type, 1, &r); /* (may run every chain: DATA's device copy stays) */
    DevCopy *dc = data->dev;
    int k = -1 - add_leaf(nc, (const char *)dc->d + (size_t)pos * (data->type == VT_FLOAT ? 8 : 4), leaf_float(data));
    nc->lv[k] = val_ref(data);
    dc->holds++;
    nc->device_only = 1;
    stats.elements++;
    return chain_one_node(nc, r, VK_EXPR_COPY, 0, 1, -1 - k, 0);
}

/* ---- scatters at one index (PERMUTE, DPERMUTE into a fill) ------------------- */

int chain_scatter_takes(const Value *data, const Value *idx, const Value *ssd, const Value *dsd, int64_t n_dst,
                        int filled)
{
    if (!chain_on() || data->type == VT_PAIR || data->type == VT_SEGDES || idx->type != VT_INT || idx->lazy)
        return 0;
    if (ssd->type != VT_SEGDES || dsd->type != VT_SEGDES || !ssd->sane || !dsd->sane || ssd->len < 1 ||
        dsd->len != ssd->len || data->len < 1 || idx->len != data->len || ssd->n != data->len || dsd->n != n_dst)
        return 0;
    if (filled ? n_dst < 1 || (!vk_scatter_fill_one(data->len, n_dst) && !vk_scatter_one_pass(data->len, n_dst, 0, 0))
               : n_dst != data->len || !vk_scatter_one_pass(data->len, n_dst, VK_SCATTER_ZERO, 0))
        return 0;
    return (on_device(data) || chain_of(data)) && (on_device(idx) || chain_of(idx));
}

/* The scatter group that a scatter at IDX from SSD to DSD of N elements
 * into N_DST (FILLED: into fills) joins: a live one with all those the
 * same and room; NULL when none. */
static Chain *scatter_join(const Value *idx, const Value *ssd, const Value *dsd, int64_t n, int64_t n_dst, int filled)
{
    for (Chain *ch = live; ch; ch = ch->next)
        if (is_scatter(ch) && ch->sidx == idx && ch->n == n && ch->sndst == n_dst && ch->sfilled == filled &&
            same_segdes(ch->ssd, ssd) && same_segdes(ch->sdsd, dsd) && ch->e.no < VK_SCATTER_MANY)
            return ch;
    return NULL;
}

int chain_scatter_joins(const Value *idx, const Value *ssd, const Value *dsd, int64_t n_dst, int filled)
{
    return scatter_join(idx, ssd, dsd, idx->len, n_dst, filled) != NULL;
}

Value *chain_scatter(Value *r, Value *data, Value *idx, Value *ssd, Value *dsd, const VkArg *fill, VkPermFault *rec)
{
    int64_t n = data->len;
    int filled = fill != NULL;
    Chain *nc = rec ? NULL : scatter_join(idx, ssd, dsd, n, r->len, filled);
    if (!nc && !rec)
        rt_fatal("internal error: a scatter without a record joins no group");
    if (nc) {
        stats.scatter_joins++;
    } else {
        nc = rt_xcalloc(1, sizeof *nc);
        nc->n = n;
        nc->sidx = val_ref(idx);
        ((DevCopy *)idx->dev)->holds++;
        nc->ssd = val_ref(ssd);
        nc->sdsd = val_ref(dsd);
        nc->srec = rec;
        nc->sfilled = filled;
        nc->sndst = r->len;
        link_chain(nc);
    }
    /* leaf k: output k's source, held (a vector scattered twice: twice) */
    DevCopy *dc = data->dev;
    int k = -1 - add_leaf(nc, dc->d, leaf_float(data));
    nc->lv[k] = val_ref(data);
    dc->holds++;
    int slot = new_output(nc);
    nc->e.out[slot].d = ((DevCopy *)r->dev)->d;
    nc->e.out[slot].node = 0;
    nc->e.out[slot].f = data->type == VT_FLOAT;
    if (filled)
        nc->sfill[slot] = *fill;
    nc->ov[slot] = r;
    ((DevCopy *)r->dev)->chain = nc;
    r->hstale = 1;
    stats.scatters++;
    return r;
}

/* CH, a scatter group, run: one vk_scatter_many (vk_scatter_fill_many)
 * over its pairs. */
static void run_scatter(Chain *ch)
{
    CudaExec *c = cx_current();
    size_t es[VK_SCATTER_MANY];
    const void *in[VK_SCATTER_MANY];
    void *out[VK_SCATTER_MANY];
    int nv = ch->e.no;
    for (int k = 0; k < nv; k++) {
        es[k] = ch->e.out[k].f ? 8 : 4;
        in[k] = ch->e.leaf[k].d;
        out[k] = ch->e.out[k].d;
        stats.bytes += (ch->n * 2 + ch->sndst) * (int64_t)es[k]; /* read, written; the zeroes or the fill */
    }
    stats.bytes += ch->n * 4;
    const Value *ssd = ch->ssd, *dsd = ch->sdsd;
    const int32_t *sl = NULL, *dl = NULL;
    const int64_t *so = NULL, *dof = NULL;
    if (ssd->len != 1 || dsd->len != 1) {
        const DevCopy *a = ssd->dev, *b = dsd->dev;
        sl = a->d, so = a->off, dl = b->d, dof = b->off;
    }
    const int32_t *ix = ((DevCopy *)ch->sidx->dev)->d;
    const VkLib *l = cx_lib(c);
    int rc = ch->sfilled ? l->scatter_fill_many(nv, es, ch->sfill, in, out, ch->n, ix, sl, so, ssd->len, dl, dof,
                                                dsd->len, ch->sndst, ch->srec)
                         : l->scatter_many(nv, es, in, out, ch->n, ix, sl, so, ssd->len, dl, dof, dsd->len, ch->sndst,
                                           VK_SCATTER_ZERO, ch->srec);
    if (rc != 0)
        cx_lib_fail(c, ch->sfilled ? "DPERMUTE" : "PERMUTE");
    cx_lib_called(c);
    stats.scatter_runs++;
    free_chain(ch);
}

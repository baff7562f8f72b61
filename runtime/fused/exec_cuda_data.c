/* runtime/fused/exec_cuda_data.c — the cuda executor's data on the
 * device (exec_cuda_state.h): device memory from the device layer,
 * charged against -m's device ledger; copies up and down (each read back
 * a wait, counted); the value hooks of runtime/core/value.h, which give a
 * value its device copy and bring it back when the host reads it; the
 * device's primitives wrapped, timed and their pointers checked; and the
 * program's timed region (START_TIMER to STOP_TIMER) with its model. A
 * value's device copy is a DevCopy: the data, and for a descriptor its
 * int64 offsets. */
#include "runtime/fused/exec_cuda_state.h"
#include "runtime/fused/cuda_chain.h"
#include "kernels/vk_count.h"
#include "runtime/core/clock.h"
#include "runtime/core/errors.h"
#include "runtime/fused/kernel_fail.h"
#include "runtime/core/trace.h"
#include "runtime/fused/tuning.h"

#include <stdlib.h>
#include <string.h>

/* A copy or a clear on the device: queued as a launch is, counted for the
 * model (-d stats). */
int cx_d2d_rc(CudaExec *c, void *dst, const void *src, size_t bytes)
{
    c->dops++;
    return c->dev->d2d(c->dev, dst, src, bytes);
}
int cx_memset0_rc(CudaExec *c, void *dst, size_t bytes)
{
    c->dops++;
    return c->dev->memset0(c->dev, dst, bytes);
}

static CudaExec *current; /* the value hooks' executor (one per process) */

size_t cx_esize(const Value *v) { return v->type == VT_FLOAT ? 8 : 4; }

/* "; the last kernel launched: ..." naming its generated entry points,
 * the VCODE lines of its block and the unit's source, or "". */
static void last_launch(const CudaExec *c, char *buf, size_t len)
{
    buf[0] = 0;
    if (!c->last_bp || !c->prog)
        return;
    const Program *p = c->prog;
    const BlockPlan *bp = c->last_bp;
    const char *path = c->kpath && c->last_block < c->nblocks && c->last_unique >= 0
                           ? c->kpath[c->ubase[c->last_block] + c->last_unique]
                           : NULL;
    int lo, hi;
    vc_line_range(p, bp->blk.start, bp->blk.end, &lo, &hi);
    snprintf(buf, len, "; the last kernel launched: vk_u%d_s%d_* of the block at lines %d-%d (function %s), in %s",
             c->last_unique, c->last_soac, lo, hi, p->funcs[bp->blk.func].name, path && path[0] ? path : "a unit not cached");
}

void cx_dev_fail(CudaExec *c, const char *what)
{
    char ctx[1600];
    last_launch(c, ctx, sizeof ctx);
    rt_fatal_device("cuda: %s failed: %s%s", what, c->dev->error(c->dev), ctx);
}

void cx_lib_fail(CudaExec *c, const char *what)
{
    char ctx[1600];
    last_launch(c, ctx, sizeof ctx);
    rt_fatal_device("cuda: %s failed: %s%s", what, c->lib.last_error(), ctx);
}

/* ---- device memory, charged against -m (value.h's device ledger) ------------ */

static size_t alloc_slot(const CudaExec *c, const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(h >> 20) & (c->acap - 1);
}

static void alloc_put(CudaExec *c, void *p, size_t bytes, int fixed)
{
    if (2 * (c->alive + 1) > c->acap) {
        size_t ocap = c->acap, ncap = ocap ? 2 * ocap : 256;
        struct DevAlloc *old = c->allocs, *t = calloc(ncap, sizeof *t);
        if (!t)
            rt_fatal("out of host memory");
        c->allocs = t;
        c->acap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].p) {
                size_t j = alloc_slot(c, old[i].p);
                while (t[j].p)
                    j = (j + 1) & (ncap - 1);
                t[j] = old[i];
            }
        free(old);
    }
    size_t j = alloc_slot(c, p);
    while (c->allocs[j].p)
        j = (j + 1) & (c->acap - 1);
    c->allocs[j].p = p;
    c->allocs[j].bytes = bytes;
    c->allocs[j].fixed = fixed;
    c->alive++;
}

/* P's entry in the ledger, or NULL. */
static struct DevAlloc *alloc_find(CudaExec *c, const void *p)
{
    if (!c->acap || !p)
        return NULL;
    size_t j = alloc_slot(c, p), mask = c->acap - 1;
    while (c->allocs[j].p && c->allocs[j].p != p)
        j = (j + 1) & mask;
    return c->allocs[j].p ? &c->allocs[j] : NULL;
}

/* Forget P; returns the size charged for it (0 when it was not recorded,
 * or is one of the executor's fixed records). */
static size_t alloc_take(CudaExec *c, const void *p)
{
    struct DevAlloc *a = alloc_find(c, p);
    if (!a)
        return 0;
    size_t j = (size_t)(a - c->allocs), mask = c->acap - 1;
    size_t bytes = c->allocs[j].fixed ? 0 : c->allocs[j].bytes;
    c->allocs[j].p = NULL;
    c->alive--;
    /* backward shift: move later entries of the run into the hole */
    for (size_t k = (j + 1) & mask; c->allocs[k].p; k = (k + 1) & mask) {
        size_t home = alloc_slot(c, c->allocs[k].p);
        if (((k - home) & mask) >= ((k - j) & mask)) {
            c->allocs[j] = c->allocs[k];
            c->allocs[k].p = NULL;
            j = k;
        }
    }
    return bytes;
}

void *cx_dalloc(CudaExec *c, size_t bytes)
{
    if (!bytes)
        bytes = 8;
    mem_dev_charge_bytes((int64_t)bytes, NULL);
    /* timed only for a report (two clock reads an allocation, and the tier
     * allocates for most instructions) */
    int timed = c->base.time_kernels || trace_on;
    double t0 = timed ? rt_seconds() : 0.0;
    void *p = c->dev->alloc(c->dev, bytes);
    double dt = timed ? rt_seconds() - t0 : 0.0;
    c->alloc_seconds += dt;
    c->alloc_count++;
    if (trace_on)
        trace_span("allocation", "device memory", trace_now() - dt * 1e6, trace_now(), (int64_t)bytes);
    if (!p) {
        mem_dev_uncharge_bytes((int64_t)bytes);
        /* the device's own words: out of memory, or an earlier fault */
        cx_dev_fail(c, "allocating device memory");
    }
    alloc_put(c, p, bytes, 0);
    return p;
}

/* The executor's own fixed records (the error record, the variable
 * table): not vector memory, not charged (but in the ledger: they are
 * device allocations of this run). */
void *cx_dalloc_fixed(CudaExec *c, size_t bytes)
{
    if (!bytes)
        bytes = 8;
    double t0 = rt_seconds();
    void *p = c->dev->alloc(c->dev, bytes);
    c->alloc_seconds += rt_seconds() - t0;
    c->alloc_count++;
    if (!p)
        cx_dev_fail(c, "allocating device memory");
    alloc_put(c, p, bytes, 1);
    return p;
}

/* ---- the pointer check ($VINTERP_CUDA_CHECK_PTRS=1) -------------------------
 * Every pointer a launch's variable table holds, and every pointer a
 * primitive receives, must lie in a device allocation of this run (the
 * ledger above: vectors and the executor's records). A host pointer would
 * be refused by a GPU without the driver's heterogeneous memory
 * management, and read over the bus by one with it; the emulated device,
 * whose memory is host memory, would take it silently. A debug mode: it
 * scans the ledger for each pointer. */
int cx_in_ledger(const CudaExec *c, const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (size_t j = 0; j < c->acap; j++)
        if (c->allocs[j].p && a >= (uintptr_t)c->allocs[j].p && a <= (uintptr_t)c->allocs[j].p + c->allocs[j].bytes)
            return 1;
    return 0;
}

void cx_ptr_refused(CudaExec *c, const char *who, const char *what, const void *p)
{
    char ctx[1600];
    last_launch(c, ctx, sizeof ctx);
    rt_fatal_device("cuda: %s receives a pointer that is no device allocation of this run (%s = %p)%s", who, what, p,
                    ctx);
}

/* The pointers P[0..N) given to primitive WHO (NULL ones skipped). */
static void check_prim_ptrs(CudaExec *c, const char *who, int n, const void *const *p)
{
    if (!c->check_ptrs)
        return;
    for (int i = 0; i < n; i++)
        if (p[i] && !cx_in_ledger(c, p[i])) {
            char what[32];
            snprintf(what, sizeof what, "argument %d", i + 1);
            cx_ptr_refused(c, who, what, p[i]);
        }
}

/* ---- the kernels' time ----------------------------------------------------- */

void cx_kmark(CudaExec *c, int begin, int kind)
{
    if (!c->base.time_kernels)
        return;
    if (c->dev->mark) {
        c->dev->mark(c->dev, begin, kind);
        return;
    }
    if (begin)
        c->kt0 = rt_seconds();
    else
        c->khost[kind] += rt_seconds() - c->kt0;
}

/* Seconds in generated kernels (KIND 0) or primitives (1) so far. */
double cx_kernel_seconds(CudaExec *c, int kind)
{
    return c->dev->kernel_seconds ? c->dev->kernel_seconds(c->dev, kind) : c->khost[kind];
}

/* The primitives as the executor calls them (c->lib): their pointers
 * checked (check_prim_ptrs), their time marked. PRIM_AT takes the
 * pointers as an array PP of NP, PRIM as a brace list (PTRS). */
#define PRIM_AT(name, np, pp, call)                                                                         \
    do {                                                                                                  \
        CudaExec *c_ = current;                                                                           \
        check_prim_ptrs(c_, "the primitive " name, np, pp);                                               \
        double tt_ = trace_now();                                                                         \
        cx_kmark(c_, 1, 1);                                                                                  \
        int rc_ = c_->dev->lib.call;                                                                      \
        cx_kmark(c_, 0, 1);                                                                                  \
        if (trace_on)                                                                                     \
            trace_span("primitive", name, tt_, trace_now(), -1);                                          \
        return rc_;                                                                                       \
    } while (0)
#define PRIM(name, np, ptrs, call)                                                                          \
    do {                                                                                                  \
        const void *p_[] = ptrs;                                                                          \
        PRIM_AT(name, np, p_, call);                                                                      \
    } while (0)
#define PTRS(...) { __VA_ARGS__ }

/* What a primitive call queues on the device, for the tallies and the
 * model (kernels/vk_count.h: the same on the real and emulated device). */
static void queued(CudaExec *c, VkCount q)
{
    c->lib_kernels += q.k;
    c->lib_copies += q.c;
}

static int w_seg_offsets(const int32_t *len_d, int64_t m, int64_t *off_d, int64_t *n_host)
{
    queued(current, vk_count_seg_offsets(m, n_host != NULL));
    PRIM("seg_offsets", 2, PTRS(len_d, off_d), seg_offsets(len_d, m, off_d, n_host));
}
static int w_seg_shape(const int32_t *len_d, int64_t m, int64_t *off_d, VkShape *rec_d)
{
    queued(current, vk_count_seg_shape(m));
    PRIM("seg_shape", 3, PTRS(len_d, off_d, rec_d), seg_shape(len_d, m, off_d, rec_d));
}
static int w_reduce(VsRop rop, const void *in_d, int64_t n, void *out_d)
{
    queued(current, vk_count_reduce(n));
    PRIM("reduce", 2, PTRS(in_d, out_d), reduce(rop, in_d, n, out_d));
}
static int w_scan(VsRop rop, const void *in_d, int64_t n, void *out_d)
{
    queued(current, vk_count_scan(n));
    PRIM("scan", 2, PTRS(in_d, out_d), scan(rop, in_d, n, out_d));
}
static int w_seg_reduce(VsRop rop, const void *in_d, const int32_t *len_d, const int64_t *off_d, int64_t m, int64_t n,
                        int64_t longest, void *out_d)
{
    queued(current, vk_count_fold(n, m, longest, 1, 0));
    PRIM("seg_reduce", 4, PTRS(in_d, len_d, off_d, out_d), seg_reduce(rop, in_d, len_d, off_d, m, n, longest, out_d));
}
static int w_seg_scan(VsRop rop, const void *in_d, const int32_t *len_d, const int64_t *off_d, int64_t m, int64_t n,
                      int64_t longest, void *out_d)
{
    queued(current, vk_count_fold(n, m, longest, 1, 1));
    PRIM("seg_scan", 4, PTRS(in_d, len_d, off_d, out_d), seg_scan(rop, in_d, len_d, off_d, m, n, longest, out_d));
}
static int w_seg_rank(int down, VsElem type, const void *keys_d, const int32_t *len_d, const int64_t *off_d, int64_t m,
                      int64_t n, int32_t *rank_d)
{
    queued(current, vk_count_seg_rank(n, m, len_d != NULL, type == VS_FLOAT));
    PRIM("seg_rank", 4, PTRS(keys_d, len_d, off_d, rank_d), seg_rank(down, type, keys_d, len_d, off_d, m, n, rank_d));
}
static int w_rand(const uint32_t ring[31], uint64_t k, int64_t n, int32_t *out_d)
{
    queued(current, vk_count_one(n));
    PRIM("rand", 1, PTRS(out_d), rand(ring, k, n, out_d));
}
static int w_elems_get(size_t esize, const void *src_d, const int64_t *pos_d, int64_t m, void *dst_d)
{
    queued(current, vk_count_one(m));
    PRIM("elems_get", 3, PTRS(src_d, pos_d, dst_d), elems_get(esize, src_d, pos_d, m, dst_d));
}
static int w_elems_put(size_t esize, void *dst_d, const int64_t *pos_d, int64_t m, const void *src_d)
{
    queued(current, vk_count_one(m));
    PRIM("elems_put", 3, PTRS(dst_d, pos_d, src_d), elems_put(esize, dst_d, pos_d, m, src_d));
}
static int w_map(int op, int ty, int fmask, int out_f, const VkArg *args, int nargs, int64_t n, void *out_d,
                 unsigned long long *fault_d)
{
    queued(current, vk_count_one(n));
    PRIM("map", 5, PTRS(out_d, fault_d, args[0].d, nargs > 1 ? args[1].d : NULL, nargs > 2 ? args[2].d : NULL),
         map(op, ty, fmask, out_f, args, nargs, n, out_d, fault_d));
}
/* A chain's pointers: its leaves, its outputs, OUT_D, and its gathers'
 * record and descriptors. */
enum { EXPR_PTRS = VK_EXPR_LEAVES + VK_EXPR_OUTS + 5 };
static void expr_ptrs(const VkExpr *e, const void *out_d, const void **p)
{
    for (int k = 0; k < VK_EXPR_LEAVES; k++)
        p[k] = k < e->nl ? e->leaf[k].d : NULL;
    for (int k = 0; k < VK_EXPR_OUTS; k++)
        p[VK_EXPR_LEAVES + k] = k < e->no ? e->out[k].d : NULL;
    const void **q = p + VK_EXPR_LEAVES + VK_EXPR_OUTS;
    q[0] = out_d;
    q[1] = e->gfault;
    q[2] = e->glen;
    q[3] = e->gsoff;
    q[4] = e->gdoff;
}
static int w_expr(const VkExpr *e, int64_t n)
{
    queued(current, vk_count_expr(n, e->gfault != NULL));
    const void *p[EXPR_PTRS];
    expr_ptrs(e, NULL, p);
    PRIM_AT("expr", EXPR_PTRS, p, expr(e, n));
}
static int w_expr_reduce(const VkExpr *e, int node, VsRop rop, int64_t n, void *out_d)
{
    queued(current, vk_count_expr_reduce(n, e->gfault != NULL, vs_rop_tree_ok(rop)));
    const void *p[EXPR_PTRS];
    expr_ptrs(e, out_d, p);
    PRIM_AT("expr_reduce", EXPR_PTRS, p, expr_reduce(e, node, rop, n, out_d));
}
static int w_dist(size_t esize, const VkArg *val, const int64_t *off_d, int64_t m, int64_t n, void *out_d)
{
    queued(current, vk_count_one(n));
    PRIM("dist", 3, PTRS(val->d, off_d, out_d), dist(esize, val, off_d, m, n, out_d));
}
static int w_index(const VkArg *start, const VkArg *stride, const int64_t *off_d, int64_t m, int64_t n, int32_t *out_d)
{
    queued(current, vk_count_one(n));
    PRIM("index", 4, PTRS(start->d, stride->d, off_d, out_d), index(start, stride, off_d, m, n, out_d));
}
static int w_seg_positions(const VkArg *idx, const int32_t *len_d, const int64_t *off_d, int64_t m, int64_t *pos_d,
                           unsigned long long *fault_d)
{
    queued(current, vk_count_one(m));
    PRIM("seg_positions", 5, PTRS(idx->d, len_d, off_d, pos_d, fault_d),
         seg_positions(idx, len_d, off_d, m, pos_d, fault_d));
}
static int w_scatter(size_t esize, const void *in_d, int64_t n_src, const int32_t *idx_d, const int32_t *flags_d,
                     const int32_t *slen_d, const int64_t *soff_d, int64_t sm, const int32_t *dlen_d,
                     const int64_t *doff_d, int64_t dm, void *out_d, int64_t n_dst, int mode,
                     VkPermFault *fault_d)
{
    queued(current, vk_count_scatter(n_src, sm, slen_d != NULL, n_dst, mode, flags_d != NULL, fault_d != NULL));
    PRIM("scatter", 8, PTRS(in_d, idx_d, flags_d, slen_d, soff_d, dlen_d, doff_d, fault_d),
         scatter(esize, in_d, n_src, idx_d, flags_d, slen_d, soff_d, sm, dlen_d, doff_d, dm, out_d, n_dst, mode,
                 fault_d));
}
/* The pointers a scatter of NV vectors at one index receives, for the
 * pointer check: its index, descriptors and record, then each vector's
 * source and destination (NULL past NV). */
#define MANY_PTRS (2 * VK_SCATTER_MANY + 6)
static void many_ptrs(const void **p, int nv, const void *const *in_d, void *const *out_d, const int32_t *idx_d,
                      const int32_t *slen_d, const int64_t *soff_d, const int32_t *dlen_d, const int64_t *doff_d,
                      const VkPermFault *fault_d)
{
    const void *fixed[6] = { idx_d, slen_d, soff_d, dlen_d, doff_d, fault_d };
    for (int i = 0; i < MANY_PTRS; i++)
        p[i] = i < 6 ? fixed[i] : NULL;
    for (int v = 0; v < nv && v < VK_SCATTER_MANY; v++) {
        p[6 + 2 * v] = in_d[v];
        p[7 + 2 * v] = out_d[v];
    }
}
static int w_scatter_many(int nv, const size_t *esize, const void *const *in_d, void *const *out_d, int64_t n_src,
                          const int32_t *idx_d, const int32_t *slen_d, const int64_t *soff_d, int64_t sm,
                          const int32_t *dlen_d, const int64_t *doff_d, int64_t dm, int64_t n_dst, int mode,
                          VkPermFault *fault_d)
{
    queued(current, vk_count_scatter_many(nv, n_src, sm, slen_d != NULL, n_dst, mode, fault_d != NULL));
    const void *p[MANY_PTRS];
    many_ptrs(p, nv, in_d, out_d, idx_d, slen_d, soff_d, dlen_d, doff_d, fault_d);
    PRIM_AT("scatter_many", MANY_PTRS, p,
            scatter_many(nv, esize, in_d, out_d, n_src, idx_d, slen_d, soff_d, sm, dlen_d, doff_d, dm, n_dst, mode,
                         fault_d));
}
static int w_scatter_fill(size_t esize, const VkArg *fill, const void *in_d, int64_t n_src, const int32_t *idx_d,
                          const int32_t *flags_d, const int32_t *slen_d, const int64_t *soff_d, int64_t sm,
                          const int32_t *dlen_d, const int64_t *doff_d, int64_t dm, void *out_d, int64_t n_dst,
                          VkPermFault *fault_d)
{
    queued(current, vk_count_scatter_fill(n_src, sm, slen_d != NULL, n_dst, flags_d != NULL, fault_d != NULL));
    PRIM("scatter_fill", 8, PTRS(in_d, idx_d, flags_d, slen_d, soff_d, dlen_d, doff_d, fault_d),
         scatter_fill(esize, fill, in_d, n_src, idx_d, flags_d, slen_d, soff_d, sm, dlen_d, doff_d, dm, out_d, n_dst,
                      fault_d));
}
static int w_scatter_fill_many(int nv, const size_t *esize, const VkArg *fill, const void *const *in_d,
                               void *const *out_d, int64_t n_src, const int32_t *idx_d, const int32_t *slen_d,
                               const int64_t *soff_d, int64_t sm, const int32_t *dlen_d, const int64_t *doff_d,
                               int64_t dm, int64_t n_dst, VkPermFault *fault_d)
{
    queued(current, vk_count_scatter_fill_many(nv, n_src, sm, slen_d != NULL, n_dst, fault_d != NULL));
    const void *p[MANY_PTRS];
    many_ptrs(p, nv, in_d, out_d, idx_d, slen_d, soff_d, dlen_d, doff_d, fault_d);
    PRIM_AT("scatter_fill_many", MANY_PTRS, p,
            scatter_fill_many(nv, esize, fill, in_d, out_d, n_src, idx_d, slen_d, soff_d, sm, dlen_d, doff_d, dm, n_dst,
                              fault_d));
}
static int w_gather(size_t esize, const void *in_d, int64_t n_src, const int32_t *idx_d, const int32_t *flags_d,
                    const int32_t *slen_d, const int64_t *soff_d, int64_t sm, const int32_t *dlen_d,
                    const int64_t *doff_d, int64_t dm, void *out_d, int64_t n_dst, VkPermFault *fault_d)
{
    queued(current, vk_count_gather(n_dst, dm, dlen_d != NULL, fault_d != NULL));
    PRIM("gather", 8, PTRS(in_d, idx_d, flags_d, slen_d, soff_d, dlen_d, doff_d, fault_d),
         gather(esize, in_d, n_src, idx_d, flags_d, slen_d, soff_d, sm, dlen_d, doff_d, dm, out_d, n_dst, fault_d));
}
static int w_select_flagged(VsElem type, const void *in_d, const int32_t *flags_d, int64_t n, void *out_d,
                            int64_t *count_host)
{
    queued(current, vk_count_select(n));
    PRIM("select_flagged", 3, PTRS(in_d, flags_d, out_d), select_flagged(type, in_d, flags_d, n, out_d, count_host));
}
static const char *w_last_error(void) { return current->dev->lib.last_error(); }

/* ---- the timed region --------------------------------------------------------- */

struct Tally cx_tally(CudaExec *c)
{
    struct Tally t;
    t.launches = c->launches + c->lib_kernels;
    t.syncs = c->d2h_count;
    t.h2d = c->h2d_bytes;
    t.d2h = c->d2h_bytes;
    t.ksecs = cx_kernel_seconds(c, 0) + cx_kernel_seconds(c, 1);
    t.dbytes = (c->tier ? cuda_tier_bytes(c->tier) : 0) + c->kbytes;
    t.dops = c->dops + c->lib_copies;
    t.wall = rt_seconds();
    t.dsecs = t.ksecs + c->transfer_seconds;
    return t;
}

/* The host waits until the device has done what it was given (a few
 * bytes read back: a sync, no data). */
static void device_wait(CudaExec *c)
{
    if (!c->wait_d)
        c->wait_d = cx_dalloc_fixed(c, sizeof(int64_t));
    int64_t w;
    double t0 = trace_now();
    if (c->tier)
        cuda_tier_before_wait(c->tier);
    if (c->dev->d2h(c->dev, &w, c->wait_d, sizeof w) != 0)
        cx_dev_fail(c, "waiting for the device at the program's timer");
    c->d2h_count++;
    if (trace_on)
        trace_span("wait", "the program's timer", t0, trace_now(), -1);
}

/* START_TIMER and STOP_TIMER, before the clock is read: the chains the
 * device tier deferred run and the device finishes its queue, so that
 * the work before the region stays outside it and the region's inside. */
static void timer_hook(int start)
{
    CudaExec *c = current;
    if (!c)
        return;
    chain_force_all();
    device_wait(c);
    struct Tally t = cx_tally(c);
    if (start) {
        c->t_start = t;
        return;
    }
    c->t_region.launches = t.launches - c->t_start.launches;
    c->t_region.syncs = t.syncs - c->t_start.syncs;
    c->t_region.h2d = t.h2d - c->t_start.h2d;
    c->t_region.d2h = t.d2h - c->t_start.d2h;
    c->t_region.ksecs = t.ksecs - c->t_start.ksecs;
    c->t_region.dbytes = t.dbytes - c->t_start.dbytes;
    c->t_region.dops = t.dops - c->t_start.dops;
    c->t_region.wall = t.wall - c->t_start.wall;
    c->t_region.dsecs = t.dsecs - c->t_start.dsecs;
    c->regions++;
}

/* What the tally would take on the modelled device (runtime/fused/tuning.h). */
double cx_model_seconds(const struct Tally *t)
{
    return (double)(t->launches + t->dops) * MODEL_LAUNCH_S + (double)t->syncs * MODEL_WAIT_S +
           (double)(t->h2d + t->d2h) / MODEL_BUS_BPS + (double)t->dbytes / MODEL_HBM_BPS;
}

void cx_print_tally(FILE *f, const char *what, const struct Tally *t)
{
    fprintf(f, "stats: %s: %lld launches, %lld syncs, %lld bytes host to device, %lld bytes device to host, %.6f s in "
               "kernels\n",
            what, (long long)t->launches, (long long)t->syncs, (long long)t->h2d, (long long)t->d2h, t->ksecs);
}

void cx_wrap_lib(CudaExec *c)
{
    VkLib *l = &c->lib;
    const VkLib *d = &c->dev->lib;
    l->seg_offsets = d->seg_offsets ? w_seg_offsets : NULL;
    l->seg_shape = d->seg_shape ? w_seg_shape : NULL;
    l->reduce = d->reduce ? w_reduce : NULL;
    l->scan = d->scan ? w_scan : NULL;
    l->seg_reduce = d->seg_reduce ? w_seg_reduce : NULL;
    l->seg_scan = d->seg_scan ? w_seg_scan : NULL;
    l->seg_rank = d->seg_rank ? w_seg_rank : NULL;
    l->rand = d->rand ? w_rand : NULL;
    l->elems_get = d->elems_get ? w_elems_get : NULL;
    l->elems_put = d->elems_put ? w_elems_put : NULL;
    l->map = d->map ? w_map : NULL;
    l->expr = d->expr ? w_expr : NULL;
    l->expr_reduce = d->expr_reduce ? w_expr_reduce : NULL;
    l->dist = d->dist ? w_dist : NULL;
    l->index = d->index ? w_index : NULL;
    l->seg_positions = d->seg_positions ? w_seg_positions : NULL;
    l->scatter = d->scatter ? w_scatter : NULL;
    l->scatter_many = d->scatter_many ? w_scatter_many : NULL;
    l->scatter_fill = d->scatter_fill ? w_scatter_fill : NULL;
    l->scatter_fill_many = d->scatter_fill_many ? w_scatter_fill_many : NULL;
    l->gather = d->gather ? w_gather : NULL;
    l->select_flagged = d->select_flagged ? w_select_flagged : NULL;
    l->last_error = d->last_error ? w_last_error : NULL;
}

void cx_dfree(CudaExec *c, void *p)
{
    if (!p)
        return;
    mem_dev_uncharge_bytes((int64_t)alloc_take(c, p));
    c->dev->free(c->dev, p);
}

void cx_h2d(CudaExec *c, void *dst, const void *src, size_t bytes)
{
    if (!bytes)
        return;
    double t0 = rt_seconds();
    if (c->dev->h2d(c->dev, dst, src, bytes) != 0)
        cx_dev_fail(c, "copy to the device");
    double dt = rt_seconds() - t0;
    c->transfer_seconds += dt;
    c->h2d_seconds += dt;
    c->h2d_bytes += (int64_t)bytes;
    c->h2d_count++;
    if (trace_on)
        trace_span("copy", "host to device", trace_now() - dt * 1e6, trace_now(), (int64_t)bytes);
}

/* The host waits for the device (it reads something back): after it, a
 * new upload of the variable tables costs no extra wait. Counted once
 * between uploads, in a block run that has uploaded (or found) its
 * tables. */
void cx_note_sync_point(CudaExec *c)
{
    if (c->in_run && !c->fresh && !c->synced) {
        c->synced = 1;
        c->sync_points++;
    }
}

/* The error record, read once per block run (Executor.check_errors: at
 * the block's end, and before a step that changes its inputs in place) or
 * before the host reads anything back (a count, a value), whichever comes
 * first: a kernel's failed check skips its write, so later kernels of the
 * block run on harmless values until then. Reports the first failure. */
void cx_check_errors(CudaExec *c)
{
    if (c->tier) { /* the record is one of the tier's pending checks: all read, in order */
        if (c->er_slot)
            cuda_tier_settle_now(c->tier);
        return;
    }
    if (!c->er_pending)
        return;
    c->er_pending = 0;
    cx_note_sync_point(c);
    unsigned long long er[4];
    double t0 = rt_seconds();
    if (c->dev->d2h(c->dev, er, c->er_d, sizeof er) != 0)
        cx_dev_fail(c, "reading the kernels' error record");
    c->d2h_seconds += rt_seconds() - t0;
    c->er_reads++;
    c->d2h_count++;
    c->d2h_bytes += (int64_t)sizeof er;
    if (er[0])
        kernel_fail((int)er[0], (int64_t)er[1], (int64_t)er[2], (int64_t)er[3]);
}

/* The copies down of N pieces (DST[i] gets BYTES[i] from SRC[i]: one
 * copy, or several with one wait), their seconds and bytes counted; the
 * seconds. */
static double d2h_copy(CudaExec *c, int n, void *const *dst, const void *const *src, const size_t *bytes)
{
    double t0 = rt_seconds();
    int rc = n == 1 ? c->dev->d2h(c->dev, dst[0], src[0], bytes[0]) : c->dev->d2h_many(c->dev, n, dst, src, bytes);
    if (rc != 0)
        cx_dev_fail(c, "copy from the device");
    double dt = rt_seconds() - t0;
    c->transfer_seconds += dt;
    c->d2h_seconds += dt;
    for (int i = 0; i < n; i++)
        c->d2h_bytes += (int64_t)bytes[i];
    return dt;
}

/* The host waits for the device to read N pieces back (d2h_copy): the
 * checks left pending read first, one sync counted. */
static void read_back(CudaExec *c, int n, void *const *dst, const void *const *src, const size_t *bytes)
{
    if (c->tier)
        cuda_tier_before_wait(c->tier); /* the kernels' records among its checks */
    else
        cx_check_errors(c);
    cx_note_sync_point(c);
    double dt = d2h_copy(c, n, dst, src, bytes);
    c->d2h_count++;
    if (trace_on) {
        int64_t total = 0;
        for (int i = 0; i < n; i++)
            total += (int64_t)bytes[i];
        trace_span("wait", n == 1 ? "device to host (a wait)" : "device to host (a wait, read ahead)",
                   trace_now() - dt * 1e6, trace_now(), total);
    }
}

void cx_d2h(CudaExec *c, void *dst, const void *src, size_t bytes)
{
    if (bytes)
        read_back(c, 1, &dst, &src, &bytes);
}

/* V and the N vectors MORE read back in one wait (the device tier's
 * read-ahead); MORE's host copies are current after it, as if the host
 * had read them. */
static void read_with(CudaExec *c, Value *v, Value **more, int n)
{
    void *dst[READ_AHEAD_MAX + 1];
    const void *src[READ_AHEAD_MAX + 1];
    size_t bytes[READ_AHEAD_MAX + 1];
    for (int i = 0; i <= n; i++) {
        Value *u = i ? more[i - 1] : v;
        val_host_storage(u);
        dst[i] = u->data;
        src[i] = ((DevCopy *)u->dev)->d;
        bytes[i] = (size_t)u->len * cx_esize(u);
    }
    read_back(c, n + 1, dst, src, bytes);
    for (int i = 0; i < n; i++)
        more[i]->hstale = 0;
}

/* ---- device copies of values (the hooks of runtime/core/value.h) ---------------- */

static void hook_to_host(Value *v)
{
    CudaExec *c = current;
    DevCopy *dc = v->dev; /* (its host storage made by value.c before this hook) */
    if (dc && dc->chain && chain_host_run(v))
        return; /* computed on the host, its device copy dropped (cuda_chain.h) */
    if (dc && dc->chain)
        chain_force(v);
    if (c && dc && v->len && !dc->planted) {
        Value *more[READ_AHEAD_MAX];
        int n = c->tier ? cuda_tier_read_ahead(c->tier, v, more, READ_AHEAD_MAX) : 0;
        if (n)
            read_with(c, v, more, n);
        else
            cx_d2h(c, v->data, dc->d, (size_t)v->len * cx_esize(v));
    }
    v->hstale = 0;
}

static void hook_release(Value *v)
{
    CudaExec *c = current;
    DevCopy *dc = v->dev;
    if (dc && dc->chain)
        chain_drop(v);
    if (c && dc) {
        if (!dc->planted)
            cx_dfree(c, dc->d);
        if (dc->off)
            cx_dfree(c, dc->off);
    }
    free(dc);
    v->dev = NULL;
}

static void hook_elems(Value *v, const int64_t *pos, int64_t m, void *buf, int write)
{
    CudaExec *c = current;
    DevCopy *dc = v->dev;
    if (!c || !dc)
        return;
    if (dc->chain)
        chain_force(v);
    size_t es = cx_esize(v);
    if (m <= 4) { /* a copy each (read back with one wait) */
        void *dst[4];
        const void *src[4];
        size_t bytes[4];
        for (int64_t k = 0; k < m; k++) {
            char *d = (char *)dc->d + (size_t)pos[k] * es, *h = (char *)buf + (size_t)k * es;
            if (write) {
                cx_h2d(c, d, h, es);
            } else {
                dst[k] = h;
                src[k] = d;
                bytes[k] = es;
            }
        }
        if (!write && m > 0)
            read_back(c, (int)m, dst, src, bytes);
        return;
    }
    /* the positions and values in two copies, a gather or scatter between */
    int64_t *pd = cx_dalloc(c, (size_t)m * sizeof *pd);
    void *vd = cx_dalloc(c, (size_t)m * es);
    cx_h2d(c, pd, pos, (size_t)m * sizeof *pd);
    if (write) {
        cx_h2d(c, vd, buf, (size_t)m * es);
        cx_check_errors(c);
        if (c->lib.elems_put(es, dc->d, pd, m, vd) != 0)
            cx_lib_fail(c, "writing elements in place");
    } else {
        cx_check_errors(c);
        if (c->lib.elems_get(es, dc->d, pd, m, vd) != 0)
            cx_lib_fail(c, "reading elements");
        cx_d2h(c, buf, vd, (size_t)m * es);
    }
    c->lib_calls++;
    cx_dfree(c, pd);
    cx_dfree(c, vd);
}

/* Stop charging the device allocation P (it stays allocated until
 * freed, which then gives nothing back). */
static void alloc_stop_charging(CudaExec *c, const void *p)
{
    struct DevAlloc *a = alloc_find(c, p);
    if (a && !a->fixed) {
        mem_dev_uncharge_bytes((int64_t)a->bytes);
        a->fixed = 1;
    }
}

static void hook_uncharge(Value *v)
{
    CudaExec *c = current;
    DevCopy *dc = v->dev;
    if (c && dc) {
        if (!dc->planted)
            alloc_stop_charging(c, dc->d);
        alloc_stop_charging(c, dc->off);
    }
}

static const ValDevice hooks = { hook_to_host, hook_release, hook_elems, hook_uncharge };

DevCopy *cx_new_copy(Value *v)
{
    DevCopy *dc = rt_xcalloc(1, sizeof *dc);
    v->dev = dc;
    return dc;
}

/* A vector of BYTES uploaded for the step in progress: the largest kept
 * for -d stats, with their block and variable. */
static void note_upload(CudaExec *c, int64_t bytes)
{
    c->vec_up_bytes += bytes;
    c->vec_up_count++;
    int n = (int)(sizeof c->top_up / sizeof c->top_up[0]);
    int i = n - 1;
    if (bytes <= c->top_up[i].bytes)
        return;
    for (; i > 0 && c->top_up[i - 1].bytes < bytes; i--)
        c->top_up[i] = c->top_up[i - 1];
    c->top_up[i].bytes = bytes;
    c->top_up[i].line0 = c->top_up[i].line1 = 0;
    if (c->cur_bp && c->prog) {
        vc_line_range(c->prog, c->cur_bp->blk.start, c->cur_bp->blk.end, &c->top_up[i].line0, &c->top_up[i].line1);
    }
    c->top_up[i].var = c->cur_var;
}

/* V's device copy, uploaded when it has none. A lazy fill (value.h) is
 * filled on the device, one launch (DIST of its value over one segment:
 * nothing uploaded), while the host keeps it lazy. */
DevCopy *cx_on_device(CudaExec *c, Value *v)
{
    if (v->dev) {
        if (((DevCopy *)v->dev)->chain)
            chain_force(v);
        return v->dev;
    }
    DevCopy *dc = cx_new_copy(v);
    size_t bytes = (size_t)v->len * cx_esize(v);
    dc->d = cx_dalloc(c, bytes);
    if (v->lazy) {
        VkArg a;
        memset(&a, 0, sizeof a);
        if (v->type == VT_FLOAT)
            a.f = v->fill.f;
        else
            a.i = v->fill.i;
        if (v->len > 0 && c->lib.dist(cx_esize(v), &a, NULL, 1, v->len, dc->d) != 0)
            cx_lib_fail(c, "filling a lazy fill on the device");
        c->lib_calls++;
        c->kbytes += (int64_t)bytes;
        c->lazy_fills++;
        return dc;
    }
    if (c->plant_host_ptr && bytes > 0 && !v->lazy) {
        /* tests: this vector is not uploaded; its table entry gets the host
         * pointer (what a device with heterogeneous memory management
         * would read over the bus). The pointer check must refuse it. */
        c->plant_host_ptr = 0;
        cx_dfree(c, dc->d);
        dc->d = v->data;
        dc->planted = 1;
        return dc;
    }
    cx_h2d(c, dc->d, v->data, bytes);
    note_upload(c, (int64_t)bytes);
    if (v->type == VT_SEGDES && v->len) {
        /* the offsets the copy needs: the host's when it has them cached,
         * else made for the copy alone (which is synchronous) and not
         * charged: the reference holds none, and -m must fail where it
         * fails (the device copy is charged on the device's ledger) */
        int64_t *mine = v->offs ? NULL : rt_xmalloc((size_t)v->len * sizeof *mine);
        const int64_t *off = v->offs ? v->offs : mine;
        if (mine)
            seg_offsets_into(v, mine);
        /* one segment's offsets are not charged, as on the host (seg_offsets) */
        dc->off = v->len > 1 ? cx_dalloc(c, (size_t)v->len * sizeof *off) : cx_dalloc_fixed(c, sizeof *off);
        cx_h2d(c, dc->off, off, (size_t)v->len * sizeof *off);
        free(mine);
    }
    return dc;
}

/* ---- what the device tier uses (exec_cuda_impl.h) ---------------------------- */

CudaExec *cx_current(void) { return current; }
const VkLib *cx_lib(CudaExec *c) { return &c->lib; }
void cx_d2h_after_wait(CudaExec *c, void *dst, const void *src, size_t bytes)
{
    if (bytes)
        (void)d2h_copy(c, 1, &dst, &src, &bytes);
}
void cx_lib_called(CudaExec *c) { c->lib_calls++; }
void cx_d2d(CudaExec *c, void *dst, const void *src, size_t bytes)
{
    if (bytes && cx_d2d_rc(c, dst, src, bytes) != 0)
        cx_dev_fail(c, "a copy on the device");
}
void cx_memset0(CudaExec *c, void *dst, size_t bytes)
{
    if (bytes && cx_memset0_rc(c, dst, bytes) != 0)
        cx_dev_fail(c, "clearing device memory");
}
void cx_note_sync(CudaExec *c) { c->d2h_count++; }
int64_t cx_syncs(const CudaExec *c) { return c->d2h_count; }
CudaTier *cx_tier(CudaExec *c) { return c->tier; }

void cx_h2d_small(CudaExec *c, void *dst, const void *src, size_t bytes)
{
    if (c->dev->h2d_staged(c->dev, dst, src, bytes) != 0)
        cx_dev_fail(c, "copy to the device");
    c->h2d_bytes += (int64_t)bytes;
    c->h2d_count++;
}

Value *cx_device_segdes(CudaExec *c, int64_t m)
{
    Value *v = val_new_remote(VT_SEGDES, m);
    DevCopy *dc = cx_new_copy(v);
    dc->d = cx_dalloc(c, (size_t)m * 4);
    /* one segment's offsets are not charged, as on the host (seg_offsets) */
    dc->off = m > 1 ? cx_dalloc(c, (size_t)m * sizeof *dc->off) : cx_dalloc_fixed(c, sizeof *dc->off);
    v->hstale = 1;
    return v;
}

/* A new value of T (Int, or a descriptor with its offsets allocated
 * here) that takes FROM's device elements (an Int's or a descriptor's
 * lengths) when only the stack holds FROM and no chain reads or writes
 * them: LENGTHS and MAKE_SEGDES give their argument's storage to their
 * result, as the reference does (runtime/interp), not a copy. NULL when
 * FROM's must stay. */
Value *cx_device_take(CudaExec *c, Value *from, ValType t)
{
    DevCopy *fc = from->dev;
    if (!fc || from->lazy || fc->planted || fc->chain || fc->holds || !fc->d || !val_unique(from))
        return NULL;
    int64_t m = from->len;
    Value *v = val_new_remote(t, m);
    DevCopy *dc = cx_new_copy(v);
    dc->d = fc->d;
    fc->d = NULL;
    if (t == VT_SEGDES)
        dc->off = m > 1 ? cx_dalloc(c, (size_t)m * sizeof *dc->off) : cx_dalloc_fixed(c, sizeof *dc->off);
    v->hstale = 1;
    return v;
}

Value *cx_device_value(CudaExec *c, ValType t, int64_t len)
{
    Value *v = val_new_remote(t, len);
    DevCopy *dc = cx_new_copy(v);
    dc->d = cx_dalloc(c, (size_t)len * cx_esize(v));
    v->hstale = 1;
    return v;
}

void cx_attach(CudaExec *c)
{
    current = c;
    val_set_device(&hooks);
    interp_set_timer_hook(timer_hook);
}

/* Values freed after this (there should be none: the interpreter goes
 * first) drop only their DevCopy records. */
void cx_detach(void)
{
    current = NULL;
    interp_set_timer_hook(NULL);
}

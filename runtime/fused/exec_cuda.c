/* runtime/fused/exec_cuda.c — the cuda executor (see exec_cuda.h).
 *
 * prepare: every kernel of every planned block is generated as CUDA
 * (translate/cg_cuda.c) into one unit, compiled once (NVRTC, or host C++
 * on the emulated device) through the cache, and loaded.
 *
 * run: a kernel step runs on the host (the inner executor: generated C,
 * or the λcu evaluator without a C compiler) when it was not generated,
 * when a parameter descriptor has negative lengths (the primitives need
 * tiling segments), or when its data are small: the largest parameter
 * has fewer elements than the host threshold of the kernel's family
 * (elementwise: only MAP/ONCE/PERMUTE SOACs; scan: a reduction, scan,
 * filter or segmented permute; lib: RANK or RAND). Otherwise its
 * parameters are brought to the device (only those without a device copy
 * are uploaded), its SOACs are driven one by one as the protocol in
 * translate/codegen.h says, and its results stay on the device: their host
 * copies are marked stale and fetched only when the host uses them
 * (runtime/core/value.h's val_for_host: control flow, I/O, host steps, the
 * final print, --check).
 *
 * The variable tables of a block run's kernel steps are slices of one
 * image, prepared ahead of the launches and uploaded once while no
 * read-back intervenes (block_begin, prepare_ahead, upload_table).
 *
 * Device memory comes from the device layer (libvkernels.so's caching
 * pool on a GPU). A value's device copy is a DevCopy: the data, and for a
 * descriptor its int64 offsets. */
#include "runtime/fused/exec_cuda.h"
#include "runtime/fused/exec_cuda_impl.h"
#include "runtime/fused/cuda_chain.h"
#include "kernels/seg_plan.h"
#include "kernels/vk_count.h"
#include "runtime/core/clock.h"
#include "runtime/device/cuda_dev.h"
#include "runtime/core/errors.h"
#include "runtime/fused/exec_cpu.h"
#include "runtime/fused/kernel_fail.h"
#include "runtime/core/rand.h"
#include "runtime/core/settings.h"
#include "runtime/core/trace.h"
#include "runtime/fused/tuning.h"
#include "kernels/rand_jump.h"
#include "translate/cg_unit.h"
#include "translate/codegen.h"
#include "translate/codegen_abi.h"
#include "runtime/fused/lcu_eval.h"
#include "runtime/interp/interp.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


typedef void *Entry; /* a loaded entry point */

/* A reduction's or scan's temporaries (P_vals' t, or P_red's block
 * partials), made when its step was prepared or when it runs: HOW is the
 * RUN_* they were made for, over N elements (-1: none made). */
typedef struct SoacPrep {
    int how;
    int64_t n;
    int nt;
    void *p[LCU_MAXRES];
    int own[LCU_MAXRES];
} SoacPrep;

enum { FAM_ELEM, FAM_SCAN, FAM_LIB, NFAM };

/* The entry points of a SOAC (translate/codegen.h): the first phase
 * (map, claim, vals, flags), the second (a permute's perm, a filter's
 * pack), and the fused reductions and scans. */
enum {
    EP_MAIN, EP_PACK, EP_RED, EP_SCAN3, EP_SRED1, EP_SREDW, EP_SREDB, EP_SSCAN1, EP_SSCANW, EP_SSCANB, EP_FCOUNT,
    EP_FPACK, NEP
};
static const char *const ep_suffix[NEP] = { NULL,     NULL,     "red",    "scan3",  "sred1",  "sredw",
                                            "sredb",  "sscan1", "sscanw", "sscanb", "fcount", "fpack" };

/* How a reduction, scan or filter runs: the fused skeletons chosen by
 * size (auto), or forced ($VINTERP_CUDA_STRATEGY, for tests and tuning):
 * lib = the general path (element values to a temporary, then the
 * primitive; a filter's flags, their scan by the primitive, the scatter);
 * thread, warp, block = that group per segment for SEG_REDUCE and
 * SEG_SCAN. */
enum { ST_AUTO, ST_LIB, ST_THREAD, ST_WARP, ST_BLOCK };
static const char *const st_name[] = { "auto", "lib", "thread", "warp", "block" };
enum {
    RUN_LIB, RUN_RED, RUN_SCAN, RUN_SRED1, RUN_SREDW, RUN_SREDB, RUN_SSCAN1, RUN_SSCANW, RUN_SSCANB, RUN_FLAGS,
    RUN_FILTER, NRUN
};
static const char *const run_name[NRUN] = {
    "values + primitive",    "fused block reduce",     "fused block scan",
    "thread per segment",    "warp per segment",       "block per segment",
    "thread-per-segment scan", "warp-per-segment scan", "block-per-segment scan",
    "filters by flags + primitive scan", "fused filters"
};
static const char *const fam_name[NFAM] = { "elementwise", "scan", "lib" };

struct CudaExec {
    Executor base;
    CudaDev *dev;
    Executor *inner;            /* host path */
    const char *compile_only;
    int nblocks;
    CgKernelCode **code;        /* per block, per step */
    int *nsteps;                /* per block: plan steps (0: not planned) */
    Entry **ent;                /* per distinct kernel: per SOAC, NEP entry points (EP_*) */
    int ndistinct;              /* over all units */
    int *ubase;                 /* per block: its unit's first index in ent */
    char **kpath;               /* per distinct kernel: its part's cached source (in paths_owned) */
    char **paths_owned;         /* per part of a unit */
    size_t part_bytes;          /* a unit's parts: at most this much kernel text each (cg_unit_split) */
    int units, parts, npaths;
    int kernels_generated, kernels_not_generated;
    size_t unit_bytes;
    double generate_seconds, load_seconds;
    int64_t host_max[NFAM];
    int strategy;               /* ST_* */
    int opt;                    /* NVRTC's optimisation: OPT_* ($VINTERP_NVRTC_OPT) */
    /* figures */
    int64_t runs[NRUN];         /* reductions, scans and filters, by how they ran */
    int64_t on_device[NFAM], on_host[NFAM], launches, lib_calls;
    int64_t h2d_bytes, d2h_bytes, h2d_count, d2h_count;
    int64_t table_uploads, table_unchanged, er_reads;
    int64_t up_first, up_synced, up_hosted, up_other; /* the uploads: first of a block run, after a sync point,
                                                          after a host step, others */
    int64_t dev_runs, sync_points;          /* block runs with a step on the device; sync points in them */
    int64_t lazy_fills;         /* lazy fills filled on the device (on_device) */
    double transfer_seconds;
    /* where the time went (-d stats): allocations, copies up, reads back
     * (each waits for the device), and the kernels' own time (events
     * around launches [0] and primitive calls [1]; on the host around the
     * call when the device has no events) */
    double alloc_seconds, h2d_seconds, d2h_seconds, khost[2];
    int64_t alloc_count;
    double kt0;                 /* the host's clock at the open mark */
    int check_ptrs;             /* $VINTERP_CUDA_CHECK_PTRS */
    VkLib lib;                  /* the device's primitives, timed and checked (the w_* wrappers) */
    int plant_host_ptr;         /* tests: one upload left on the host (check_ptrs must refuse it) */
    void *wait_d;               /* a word read back to wait for the device (device_wait) */
    /* what the program's timed region did (START_TIMER to STOP_TIMER, the
     * last one): counters at its start and its end */
    struct Tally { int64_t launches, syncs, h2d, d2h, dbytes, dops; double ksecs; } t_start, t_region;
    int64_t dops;               /* copies and clears on the device (the model prices each as a launch) */
    int64_t lib_kernels, lib_copies; /* what the primitives queued (kernels/vk_count.h) */
    int64_t kbytes;             /* the model's bytes of the generated kernels' SOACs (soac_bytes) */
    int regions;
    /* the largest uploads of vectors (-d stats): bytes, block and variable */
    struct Upload { int64_t bytes; int line0, line1, var; } top_up[4];
    int64_t vec_up_bytes, vec_up_count;
    unsigned long long *er_d;   /* device error record (zero until a kernel fails) */
    int er_pending;             /* kernels ran since the record was last read */
    unsigned long long *er_slot; /* with the device tier: the running block's record among its pending checks */
    int32_t *pair_d;            /* two Ints read back together (scan_count) */
    /* The block run in progress (block_begin): the variable tables of its
     * kernel steps side by side in one host image, a slice per step, each
     * followed by its reductions' temporaries' pointers (P_vals' t). A
     * step's slice is prepared (parameters bound, results of known lengths
     * and temporaries allocated) when it starts, or before, together with
     * the steps after it (prepare_ahead); the image goes up whole before a
     * launch when it differs from what was last uploaded. */
    vk_arr *img, *img_up;       /* the image; as last uploaded */
    void *dimg;                 /* its device copy */
    size_t icap, iused, up_used;/* entries: allocated, laid out, on the device (0: nothing) */
    uint8_t *known, *prebound;  /* per entry: length known / result allocated before its SOAC ran */
    const BlockPlan *run_bp;
    int run_block, in_run, run_on_device;
    int fresh;                  /* nothing uploaded (or found unchanged) yet in the run */
    int synced;                 /* a sync point since the last upload */
    int hosted;                 /* a host step since the last upload */
    int scap, pcap;
    size_t *slice;              /* per step: its slice's first entry */
    uint8_t *ready;             /* per step: its slice prepared */
    int *soac0;                 /* per step: its first SoacPrep */
    struct SoacPrep *preps;     /* per SOAC of the run's kernel steps */
    /* the step in progress (or being prepared): its slice */
    vk_arr *hv;                 /* host: its entries */
    void *dv;                   /* device: its entries */
    uint8_t *kn, *pb;           /* its known and prebound flags */
    struct SoacPrep *sp;        /* its SOACs' records */
    int ahead, ahead_stop;      /* preparing a later step; it ran out of headroom */
    int64_t ahead_budget;       /* units it may still take (ahead_fits) */
    const PlanStep *ahead_ps;   /* the step prepared ahead (its donors: speculate_donation) */
    int64_t speculated;         /* results given a donor's storage ahead (speculate_donation) */
    /* for messages: the program, the block and SOAC running, and the last
     * kernel launched (a fault of a real GPU surfaces at a later call) */
    const Program *prog;
    const BlockPlan *cur_bp;
    int cur_block, cur_unique, cur_soac, cur_var;
    const BlockPlan *last_bp;
    int last_block, last_unique, last_soac;
    Value **env;                /* the plan's variables */
    const int *map;             /* local -> plan variable */
    const LcuVarType *types;    /* of the locals */
    const LcuKernel *k;         /* the canonical kernel */
    int nvars;                  /* locals */
    /* the live device allocations and their sizes (the -m device ledger):
     * open addressing, linear probing, NULL = empty */
    struct DevAlloc { void *p; size_t bytes; int fixed; } *allocs;
    size_t acap, alive;
    CudaTier *tier;             /* the device tier (cuda_tier.h), or NULL */
};

/* A copy or a clear on the device: queued as a launch is, counted for the
 * model (-d stats). */
static int dev_d2d(CudaExec *c, void *dst, const void *src, size_t bytes)
{
    c->dops++;
    return c->dev->d2d(c->dev, dst, src, bytes);
}
static int dev_memset0(CudaExec *c, void *dst, size_t bytes)
{
    c->dops++;
    return c->dev->memset0(c->dev, dst, bytes);
}

static CudaExec *current; /* the value hooks' executor (one per process) */

static size_t esize_of(const Value *v) { return v->type == VT_FLOAT ? 8 : 4; }

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

static void dev_fail(CudaExec *c, const char *what)
{
    char ctx[1600];
    last_launch(c, ctx, sizeof ctx);
    rt_fatal_device("cuda: %s failed: %s%s", what, c->dev->error(c->dev), ctx);
}

static void lib_fail(CudaExec *c, const char *what)
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

static void *dalloc(CudaExec *c, size_t bytes)
{
    if (!bytes)
        bytes = 8;
    mem_dev_charge_bytes((int64_t)bytes, NULL);
    double t0 = rt_seconds();
    void *p = c->dev->alloc(c->dev, bytes);
    c->alloc_seconds += rt_seconds() - t0;
    c->alloc_count++;
    if (trace_on)
        trace_span("allocation", "device memory", trace_now() - (rt_seconds() - t0) * 1e6, trace_now(),
                   (int64_t)bytes);
    if (!p) {
        mem_dev_uncharge_bytes((int64_t)bytes);
        /* the device's own words: out of memory, or an earlier fault */
        dev_fail(c, "allocating device memory");
    }
    alloc_put(c, p, bytes, 0);
    return p;
}

/* The executor's own fixed records (the error record, the variable
 * table): not vector memory, not charged (but in the ledger: they are
 * device allocations of this run). */
static void *dalloc_fixed(CudaExec *c, size_t bytes)
{
    if (!bytes)
        bytes = 8;
    double t0 = rt_seconds();
    void *p = c->dev->alloc(c->dev, bytes);
    c->alloc_seconds += rt_seconds() - t0;
    c->alloc_count++;
    if (!p)
        dev_fail(c, "allocating device memory");
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
static int in_ledger(const CudaExec *c, const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (size_t j = 0; j < c->acap; j++)
        if (c->allocs[j].p && a >= (uintptr_t)c->allocs[j].p && a <= (uintptr_t)c->allocs[j].p + c->allocs[j].bytes)
            return 1;
    return 0;
}

static void ptr_refused(CudaExec *c, const char *who, const char *what, const void *p)
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
        if (p[i] && !in_ledger(c, p[i])) {
            char what[32];
            snprintf(what, sizeof what, "argument %d", i + 1);
            ptr_refused(c, who, what, p[i]);
        }
}

/* ---- the kernels' time ----------------------------------------------------- */

static void kmark(CudaExec *c, int begin, int kind)
{
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
static double kernel_seconds(CudaExec *c, int kind)
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
        kmark(c_, 1, 1);                                                                                  \
        int rc_ = c_->dev->lib.call;                                                                      \
        kmark(c_, 0, 1);                                                                                  \
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
    queued(current, vk_count_scatter(n_src, sm, slen_d != NULL, n_dst, mode, fault_d != NULL));
    PRIM("scatter", 8, PTRS(in_d, idx_d, flags_d, slen_d, soff_d, dlen_d, doff_d, fault_d),
         scatter(esize, in_d, n_src, idx_d, flags_d, slen_d, soff_d, sm, dlen_d, doff_d, dm, out_d, n_dst, mode,
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

static struct Tally tally(CudaExec *c)
{
    struct Tally t;
    t.launches = c->launches + c->lib_kernels;
    t.syncs = c->d2h_count;
    t.h2d = c->h2d_bytes;
    t.d2h = c->d2h_bytes;
    t.ksecs = kernel_seconds(c, 0) + kernel_seconds(c, 1);
    t.dbytes = (c->tier ? cuda_tier_bytes(c->tier) : 0) + c->kbytes;
    t.dops = c->dops + c->lib_copies;
    return t;
}

/* The host waits until the device has done what it was given (a few
 * bytes read back: a sync, no data). */
static void device_wait(CudaExec *c)
{
    if (!c->wait_d)
        c->wait_d = dalloc_fixed(c, sizeof(int64_t));
    int64_t w;
    double t0 = trace_now();
    if (c->tier)
        cuda_tier_before_wait(c->tier);
    if (c->dev->d2h(c->dev, &w, c->wait_d, sizeof w) != 0)
        dev_fail(c, "waiting for the device at the program's timer");
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
    struct Tally t = tally(c);
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
    c->regions++;
}

/* What the tally would take on the modelled device (runtime/fused/tuning.h). */
static double model_seconds(const struct Tally *t)
{
    return (double)(t->launches + t->dops) * MODEL_LAUNCH_S + (double)t->syncs * MODEL_WAIT_S +
           (double)(t->h2d + t->d2h) / MODEL_BUS_BPS + (double)t->dbytes / MODEL_HBM_BPS;
}

static void print_tally(FILE *f, const char *what, const struct Tally *t)
{
    fprintf(f, "stats: %s: %lld launches, %lld syncs, %lld bytes host to device, %lld bytes device to host, %.6f s in "
               "kernels\n",
            what, (long long)t->launches, (long long)t->syncs, (long long)t->h2d, (long long)t->d2h, t->ksecs);
}

static void wrap_lib(CudaExec *c)
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
    l->gather = d->gather ? w_gather : NULL;
    l->select_flagged = d->select_flagged ? w_select_flagged : NULL;
    l->last_error = d->last_error ? w_last_error : NULL;
}

static void dfree(CudaExec *c, void *p)
{
    if (!p)
        return;
    mem_dev_uncharge_bytes((int64_t)alloc_take(c, p));
    c->dev->free(c->dev, p);
}

static void h2d(CudaExec *c, void *dst, const void *src, size_t bytes)
{
    if (!bytes)
        return;
    double t0 = rt_seconds();
    if (c->dev->h2d(c->dev, dst, src, bytes) != 0)
        dev_fail(c, "copy to the device");
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
static void note_sync(CudaExec *c)
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
static void check_errors(CudaExec *c)
{
    if (c->tier) { /* the record is one of the tier's pending checks: all read, in order */
        if (c->er_slot)
            cuda_tier_settle_now(c->tier);
        return;
    }
    if (!c->er_pending)
        return;
    c->er_pending = 0;
    note_sync(c);
    unsigned long long er[4];
    double t0 = rt_seconds();
    if (c->dev->d2h(c->dev, er, c->er_d, sizeof er) != 0)
        dev_fail(c, "reading the kernels' error record");
    c->d2h_seconds += rt_seconds() - t0;
    c->er_reads++;
    c->d2h_count++;
    c->d2h_bytes += (int64_t)sizeof er;
    if (er[0])
        kernel_fail((int)er[0], (int64_t)er[1], (int64_t)er[2], (int64_t)er[3]);
}

/* The copy down and its seconds and bytes; the seconds. */
static double d2h_copy(CudaExec *c, void *dst, const void *src, size_t bytes)
{
    double t0 = rt_seconds();
    if (c->dev->d2h(c->dev, dst, src, bytes) != 0)
        dev_fail(c, "copy from the device");
    double dt = rt_seconds() - t0;
    c->transfer_seconds += dt;
    c->d2h_seconds += dt;
    c->d2h_bytes += (int64_t)bytes;
    return dt;
}

static void d2h(CudaExec *c, void *dst, const void *src, size_t bytes)
{
    if (!bytes)
        return;
    if (c->tier)
        cuda_tier_before_wait(c->tier); /* the kernels' records among its checks */
    else
        check_errors(c);
    note_sync(c);
    double dt = d2h_copy(c, dst, src, bytes);
    c->d2h_count++;
    if (trace_on)
        trace_span("wait", "device to host (a wait)", trace_now() - dt * 1e6, trace_now(), (int64_t)bytes);
}

/* ---- device copies of values (the hooks of runtime/core/value.h) ---------------- */

static void hook_to_host(Value *v)
{
    CudaExec *c = current;
    DevCopy *dc = v->dev;
    if (dc && dc->chain && chain_host_run(v))
        return; /* computed on the host, its device copy dropped (cuda_chain.h) */
    if (dc && dc->chain)
        chain_force(v);
    if (c && dc && v->len && !dc->planted)
        d2h(c, v->data, dc->d, (size_t)v->len * esize_of(v));
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
            dfree(c, dc->d);
        if (dc->off)
            dfree(c, dc->off);
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
    size_t es = esize_of(v);
    if (m <= 4) { /* a copy each */
        for (int64_t k = 0; k < m; k++) {
            char *d = (char *)dc->d + (size_t)pos[k] * es, *h = (char *)buf + (size_t)k * es;
            if (write)
                h2d(c, d, h, es);
            else
                d2h(c, h, d, es);
        }
        return;
    }
    /* the positions and values in two copies, a gather or scatter between */
    int64_t *pd = dalloc(c, (size_t)m * sizeof *pd);
    void *vd = dalloc(c, (size_t)m * es);
    h2d(c, pd, pos, (size_t)m * sizeof *pd);
    if (write) {
        h2d(c, vd, buf, (size_t)m * es);
        check_errors(c);
        if (c->lib.elems_put(es, dc->d, pd, m, vd) != 0)
            lib_fail(c, "writing elements in place");
    } else {
        check_errors(c);
        if (c->lib.elems_get(es, dc->d, pd, m, vd) != 0)
            lib_fail(c, "reading elements");
        d2h(c, buf, vd, (size_t)m * es);
    }
    c->lib_calls++;
    dfree(c, pd);
    dfree(c, vd);
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

static DevCopy *new_copy(Value *v)
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
static DevCopy *on_device(CudaExec *c, Value *v)
{
    if (v->dev) {
        if (((DevCopy *)v->dev)->chain)
            chain_force(v);
        return v->dev;
    }
    DevCopy *dc = new_copy(v);
    size_t bytes = (size_t)v->len * esize_of(v);
    dc->d = dalloc(c, bytes);
    if (v->lazy) {
        VkArg a;
        memset(&a, 0, sizeof a);
        if (v->type == VT_FLOAT)
            a.f = v->fill.f;
        else
            a.i = v->fill.i;
        if (v->len > 0 && c->lib.dist(esize_of(v), &a, NULL, 1, v->len, dc->d) != 0)
            lib_fail(c, "filling a lazy fill on the device");
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
        dfree(c, dc->d);
        dc->d = v->data;
        dc->planted = 1;
        return dc;
    }
    h2d(c, dc->d, v->data, bytes);
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
        dc->off = v->len > 1 ? dalloc(c, (size_t)v->len * sizeof *off) : dalloc_fixed(c, sizeof *off);
        h2d(c, dc->off, off, (size_t)v->len * sizeof *off);
        free(mine);
    }
    return dc;
}

/* A new result value of type T and LEN elements that lives on the device. */
static Value *new_result(CudaExec *c, int var, int64_t len)
{
    const LcuVarType *t = &c->types[var];
    Value **slot = &c->env[c->map[var]];
    /* storage offered in the slot (val_donate): its device copy, when it
     * has one, is written in place */
    Value *v = t->kind == LV_SEGDES ? NULL : val_take_donation(*slot, lcu_val_type(t), len);
    DevCopy *dc;
    if (v && v->dev && !((DevCopy *)v->dev)->off) {
        dc = v->dev;
    } else {
        if (v)
            val_drop_device(v);
        else
            v = t->kind == LV_SEGDES ? seg_new(len) : val_new(lcu_val_type(t), len);
        dc = new_copy(v);
        dc->d = dalloc(c, (size_t)len * esize_of(v));
    }
    v->hstale = 1;
    if (*slot)
        val_release(*slot);
    *slot = v;
    c->hv[var].d = dc->d;
    c->hv[var].len = len;
    c->hv[var].n = 0;
    c->hv[var].off = NULL;
    c->hv[var].segid = NULL;
    c->hv[var].ulen = 0;
    return v;
}

/* ---- what the device tier uses (exec_cuda_impl.h) ---------------------------- */

CudaExec *cx_current(void) { return current; }
const VkLib *cx_lib(CudaExec *c) { return &c->lib; }
void *cx_dalloc(CudaExec *c, size_t bytes) { return dalloc(c, bytes); }
void *cx_dalloc_fixed(CudaExec *c, size_t bytes) { return dalloc_fixed(c, bytes); }
void cx_d2h(CudaExec *c, void *dst, const void *src, size_t bytes) { d2h(c, dst, src, bytes); }
void cx_d2h_after_wait(CudaExec *c, void *dst, const void *src, size_t bytes)
{
    if (bytes)
        (void)d2h_copy(c, dst, src, bytes);
}
void cx_h2d(CudaExec *c, void *dst, const void *src, size_t bytes) { h2d(c, dst, src, bytes); }
DevCopy *cx_on_device(CudaExec *c, Value *v) { return on_device(c, v); }
void cx_lib_called(CudaExec *c) { c->lib_calls++; }
void cx_d2d(CudaExec *c, void *dst, const void *src, size_t bytes)
{
    if (bytes && dev_d2d(c, dst, src, bytes) != 0)
        dev_fail(c, "a copy on the device");
}
void cx_memset0(CudaExec *c, void *dst, size_t bytes)
{
    if (bytes && dev_memset0(c, dst, bytes) != 0)
        dev_fail(c, "clearing device memory");
}
void cx_dfree(CudaExec *c, void *p) { dfree(c, p); }
void cx_note_sync(CudaExec *c) { c->d2h_count++; }
int64_t cx_syncs(const CudaExec *c) { return c->d2h_count; }
void cx_lib_fail(CudaExec *c, const char *what) { lib_fail(c, what); }
CudaTier *cx_tier(CudaExec *c) { return c->tier; }

void cx_h2d_small(CudaExec *c, void *dst, const void *src, size_t bytes)
{
    if (c->dev->h2d_staged(c->dev, dst, src, bytes) != 0)
        dev_fail(c, "copy to the device");
    c->h2d_bytes += (int64_t)bytes;
    c->h2d_count++;
}

Value *cx_device_segdes(CudaExec *c, int64_t m)
{
    Value *v = seg_new(m);
    DevCopy *dc = new_copy(v);
    dc->d = dalloc(c, (size_t)m * 4);
    /* one segment's offsets are not charged, as on the host (seg_offsets) */
    dc->off = m > 1 ? dalloc(c, (size_t)m * sizeof *dc->off) : dalloc_fixed(c, sizeof *dc->off);
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
    Value *v = t == VT_SEGDES ? seg_new(m) : val_new(t, m);
    DevCopy *dc = new_copy(v);
    dc->d = fc->d;
    fc->d = NULL;
    if (t == VT_SEGDES)
        dc->off = m > 1 ? dalloc(c, (size_t)m * sizeof *dc->off) : dalloc_fixed(c, sizeof *dc->off);
    v->hstale = 1;
    return v;
}

Value *cx_device_value(CudaExec *c, ValType t, int64_t len)
{
    Value *v = val_new(t, len);
    DevCopy *dc = new_copy(v);
    dc->d = dalloc(c, (size_t)len * esize_of(v));
    v->hstale = 1;
    return v;
}

/* Result VAR of LEN elements: the one allocated when the step was
 * prepared (prebind_from), when it is still the slot's and the table's,
 * else a new one. */
static Value *result(CudaExec *c, int var, int64_t len)
{
    Value *v = c->pb[var] ? c->env[c->map[var]] : NULL;
    if (v && v->type != VT_SEGDES && v->len == len && v->dev && ((DevCopy *)v->dev)->d == c->hv[var].d) {
        v->hstale = 1; /* the kernel writes it */
        return v;
    }
    return new_result(c, var, len);
}

static int64_t shape_n(CudaExec *c, const LcuShape *sh);

/* Preparing a later step ahead of time: may it take BYTES more of device
 * (and host) memory? Ahead of time a step takes at most a quarter of the
 * headroom under -m left when the look-ahead began (prepare_ahead), so
 * that running ahead never brings a program that fits near its limit. */
static int ahead_fits(CudaExec *c, int64_t bytes)
{
    int64_t units = mem_bytes_units(bytes);
    if (!c->ahead)
        return 1;
    if (units > c->ahead_budget) {
        c->ahead_stop = 1;
        return 0;
    }
    c->ahead_budget -= units;
    return 1;
}

/* A step prepared ahead whose result VAR (a local) of LEN elements may be
 * offered a donor's storage (PlanStep.donor) when the step runs: the
 * backend decides that only then (offer_donors: nothing else may hold the
 * donor by then), and a result allocated now would refuse the offer. The
 * table gets the donor's device storage now, unallocated (not prebound):
 * when the step runs, the result takes the donation and the table stays
 * as it went up; if the offer is not made, the result is allocated then
 * and the table goes up again. Returns 1 when it did so. */
static int speculate_donation(CudaExec *c, int var, int64_t len)
{
    const PlanStep *ps = c->ahead ? c->ahead_ps : NULL;
    if (!ps || !ps->donor || c->types[var].kind != LV_ARRAY || c->base.no_donations)
        return 0;
    int p = -1;
    for (int r = 0; r < ps->k->nrets; r++)
        if (ps->k->rets[r] == c->map[var])
            p = ps->donor[r];
    /* the backend's rule for the block's inputs (backend.c offer_donors):
     * one is offered only to a step that may take an input's storage, and
     * only when its arrays are long enough (which is the case when LEN is
     * the donor's, read at its own index, below) */
    for (int u = 0; p >= 0 && !ps->input_donor && u < c->run_bp->dfg.nin; u++)
        if (c->env[u] == c->env[p])
            p = -1;
    if (p >= 0 && (!c->env[p] || c->env[p]->lazy)) /* a lazy fill is never taken (val_take_donation) */
        p = -1;
    for (int q = 0; p >= 0 && q < c->k->nparams; q++) {
        int l = c->k->params[q];
        if (c->map[l] != p || c->types[l].kind != LV_ARRAY || c->hv[l].len != len || !c->hv[l].d)
            continue;
        vk_arr *a = &c->hv[var];
        a->d = c->hv[l].d;
        a->len = len;
        a->n = 0;
        a->off = NULL;
        a->segid = NULL;
        a->ulen = 0;
        c->kn[var] = 1;
        c->speculated++;
        return 1;
    }
    return 0;
}

/* Allocate up front the results of the step's SOACs from J0 on whose
 * lengths follow from its parameters and the results before them (maps,
 * reductions and scans, permutes; not a filter's, nor what depends on
 * one, nor descriptors), so that the variable table is complete before
 * the step's first launch. J0 > 0: again after SOAC J0 - 1 (a filter)
 * has run, whose results are now known. */
static void prebind_from(CudaExec *c, int j0)
{
    const LcuKernel *k = c->k;
    if (j0 == 0) {
        memset(c->kn, 0, (size_t)c->nvars);
        memset(c->pb, 0, (size_t)c->nvars);
        for (int p = 0; p < k->nparams; p++)
            c->kn[k->params[p]] = 1;
    }
    for (int j = 0; j < j0; j++)
        for (int r = 0; r < k->soacs[j]->nres; r++)
            c->kn[k->soacs[j]->res[r]] = 1;
    for (int j = j0; j < k->nsoacs; j++) {
        const LcuSoac *s = k->soacs[j];
        int64_t len = -1;
        int seg = s->kind == LS_SEG_REDUCE || s->kind == LS_SEG_SCAN;
        int shape_ok = s->shape.kind == LSH_ONE || c->kn[s->shape.var];
        int done = s->nres > 0;
        for (int r = 0; r < s->nres; r++)
            done &= c->pb[s->res[r]];
        if (done)
            continue;
        switch (s->kind) {
        case LS_MAP: case LS_ONCE: case LS_PERMUTE:
            if (shape_ok)
                len = shape_n(c, &s->shape);
            break;
        case LS_REDUCE: case LS_SEG_REDUCE:
            if (shape_ok)
                len = seg ? c->hv[s->shape.var].len : 1;
            break;
        case LS_SCAN: case LS_SEG_SCAN:
            if (shape_ok)
                len = seg ? c->hv[s->shape.var].n : shape_n(c, &s->shape);
            break;
        case LS_SEG_PERMUTE:
            if (c->kn[s->dst_sd])
                len = c->hv[s->dst_sd].n;
            break;
        case LS_LIB:
            if (c->kn[s->args[0]])
                len = s->lib == LL_RAND_STREAM && c->types[s->args[0]].kind == LV_SEGDES ? c->hv[s->args[0]].n
                                                                                          : c->hv[s->args[0]].len;
            break;
        default:
            break;
        }
        for (int r = 0; r < s->nres && len >= 0; r++)
            if (c->types[s->res[r]].kind == LV_SEGDES)
                len = -1;
        if (len < 0)
            continue;
        if (s->nres == 1 && speculate_donation(c, s->res[0], len))
            continue;
        if (!ahead_fits(c, len * 8 * s->nres))
            return;
        for (int r = 0; r < s->nres; r++) {
            new_result(c, s->res[r], len);
            c->pb[s->res[r]] = c->kn[s->res[r]] = 1;
        }
    }
}

static void bind_param(CudaExec *c, int var, Value *v)
{
    c->cur_var = var;
    DevCopy *dc = on_device(c, v);
    vk_arr *a = &c->hv[var];
    a->d = dc->d;
    a->len = v->len;
    a->n = v->type == VT_SEGDES ? (v->n > 0 ? v->n : 0) : 0;
    a->off = dc->off;
    a->segid = NULL;
    a->ulen = v->type == VT_SEGDES ? seg_uniform_len(v) : 0;
}

/* The longest segment of descriptor (local) SD when the host knows it
 * (seg_finish), else -1. */
static int64_t longest_of(const CudaExec *c, int sd)
{
    const Value *v = c->env[c->map[sd]];
    return v && v->type == VT_SEGDES && v->shaped ? v->maxl : -1;
}

/* ---- the SOAC protocol ------------------------------------------------------- */


static int64_t shape_n(CudaExec *c, const LcuShape *sh)
{
    const vk_arr *a = sh->kind == LSH_ONE ? NULL : &c->hv[sh->var];
    switch (sh->kind) {
    case LSH_LEN: return c->types[sh->var].kind == LV_SEGDES ? a->n : a->len;
    case LSH_SEG_N: return a->n;
    case LSH_SEG_M: return a->len;
    case LSH_ONE: return 1;
    }
    return 0;
}

/* The block run's variable tables before a launch: the whole image, sent
 * only when it changed since the last upload, in one copy through the
 * device's staging (no wait). Each upload is counted as the run's first,
 * as one after a sync point, or as neither (which the preparation of the
 * steps ahead is there to avoid). */
static void upload_table(CudaExec *c)
{
    size_t bytes = c->iused * sizeof *c->img;
    if (c->up_used == c->iused && memcmp(c->img_up, c->img, bytes) == 0) {
        c->table_unchanged++;
        c->fresh = 0;
        return;
    }
    double t0 = rt_seconds();
    if (c->dev->h2d_staged(c->dev, c->dimg, c->img, bytes) != 0)
        dev_fail(c, "uploading the variable table");
    c->transfer_seconds += rt_seconds() - t0;
    c->h2d_bytes += (int64_t)bytes;
    c->h2d_count++;
    c->table_uploads++;
    if (c->fresh)
        c->up_first++;
    else if (c->synced)
        c->up_synced++;
    else if (c->hosted)
        c->up_hosted++;
    else
        c->up_other++;
    c->fresh = 0;
    c->synced = 0;
    c->hosted = 0;
    memcpy(c->img_up, c->img, bytes);
    c->up_used = c->iused;
}

/* Blocks for N iterations of a grid-stride loop, GROUP threads each. */
static unsigned grid_for(CudaExec *c, int64_t n, unsigned group)
{
    int64_t per = (int64_t)c->dev->block / (group ? group : 1);
    int64_t g = (n + per - 1) / per;
    if (g > (int64_t)c->dev->max_grid)
        g = c->dev->max_grid;
    return g < 1 ? 1u : (unsigned)g;
}

/* The pointers a launch receives (check_ptrs): its variable table's (the
 * step's locals: data, offsets, segment ids), the table itself, the error
 * record and the extra arguments. */
static void check_launch_ptrs(CudaExec *c, int nargs, void *p3, void *p4)
{
    char what[64];
    for (int v = 0; v < c->nvars; v++) {
        const vk_arr *a = &c->hv[v];
        const void *q[3] = { a->d, a->off, a->segid };
        static const char *const part[3] = { "d", "off", "segid" };
        for (int i = 0; i < 3; i++)
            if (q[i] && !in_ledger(c, q[i])) {
                snprintf(what, sizeof what, "V[%d].%s, %lld elements", v, part[i], (long long)a->len);
                c->last_bp = c->cur_bp;
                c->last_block = c->cur_block;
                c->last_unique = c->cur_unique;
                c->last_soac = c->cur_soac;
                ptr_refused(c, "a kernel launch", what, q[i]);
            }
    }
    const void *x[4] = { c->dv, c->er_slot ? (const void *)c->er_slot : c->er_d, nargs > 3 ? p3 : NULL,
                         nargs > 4 ? p4 : NULL };
    static const char *const xn[4] = { "its variable table", "the error record", "argument 4", "argument 5" };
    for (int i = 0; i < 4; i++)
        if (x[i] && !in_ledger(c, x[i]))
            ptr_refused(c, "a kernel launch", xn[i], x[i]);
}

static void launch_grid(CudaExec *c, void *fn, unsigned grid, int sync, int64_t n, int nargs, void *p3, void *p4)
{
    if (c->tier && !c->er_slot) {
        unsigned long long *r = cuda_tier_block_record(c->tier); /* may read the full list first */
        c->er_slot = r;
    }
    void *V = c->dv, *er = c->er_slot ? (void *)c->er_slot : (void *)c->er_d;
    void *args[5] = { &V, &er, &n, &p3, &p4 };
    c->last_bp = c->cur_bp;
    c->last_block = c->cur_block;
    c->last_unique = c->cur_unique;
    c->last_soac = c->cur_soac;
    if (c->check_ptrs)
        check_launch_ptrs(c, nargs, p3, p4);
    double tt = trace_now();
    kmark(c, 1, 0);
    int rc = c->dev->launch(c->dev, fn, grid, sync, nargs, args);
    kmark(c, 0, 0);
    if (rc != 0)
        dev_fail(c, "a kernel launch");
    c->launches++;
    if (trace_on) {
        char name[64];
        snprintf(name, sizeof name, "vk_u%d_s%d", c->cur_unique, c->cur_soac);
        trace_span("launch", name, tt, trace_now(), -1);
    }
}

static void launch(CudaExec *c, void *fn, int64_t n, int nargs, void *p3, void *p4)
{
    if (n <= 0)
        return;
    launch_grid(c, fn, grid_for(c, n, 1), 0, n, nargs, p3, p4);
}

/* ---- a reduction's or scan's temporaries ------------------------------------ */

static int has_temps(const LcuSoac *s)
{
    return s->kind == LS_REDUCE || s->kind == LS_SCAN || s->kind == LS_SEG_REDUCE || s->kind == LS_SEG_SCAN;
}

/* Where SOAC J of the step's kernel finds its temporaries' pointers:
 * after the slice's variable entries, a run of pointers per reduction or
 * scan. */
static size_t temps_at(const CudaExec *c, int j)
{
    size_t at = 0;
    for (int i = 0; i < j; i++)
        if (has_temps(c->k->soacs[i]))
            at += (size_t)c->k->soacs[i]->nres;
    return (size_t)c->nvars * sizeof(vk_arr) + at * sizeof(void *);
}

/* The entries of a step's slice: its variables, then its temporaries'
 * pointers. */
static size_t slice_entries(const CgKernelCode *kc)
{
    size_t ptrs = 0;
    for (int j = 0; j < kc->canon->nsoacs; j++)
        if (has_temps(kc->canon->soacs[j]))
            ptrs += (size_t)kc->canon->soacs[j]->nres;
    return (size_t)kc->nlocal + (ptrs * sizeof(void *) + sizeof(vk_arr) - 1) / sizeof(vk_arr);
}

static void temps_drop(CudaExec *c, SoacPrep *sp)
{
    for (int r = 0; r < sp->nt; r++)
        if (sp->own[r])
            dfree(c, sp->p[r]);
    sp->nt = 0;
    sp->how = -1;
}

/* Make SOAC J's temporaries for running as HOW over N elements, and put
 * their pointers in its slice: a grid-wide reduction's or scan's block
 * partials; the general path's element values (a SCAN's are its
 * results); none for a group per segment. 0, or -1 ahead of time when
 * they would not fit (ahead_fits). */
static int temps_make(CudaExec *c, int j, const LcuSoac *s, int how, int64_t n)
{
    SoacPrep *sp = &c->sp[j];
    int nr = s->nres, red = s->kind == LS_REDUCE || s->kind == LS_SEG_REDUCE;
    if (how == RUN_LIB && red) {
        int64_t bytes = 0;
        for (int r = 0; r < nr; r++)
            bytes += (n ? n : 1) * (lcu_val_type(&c->types[s->res[r]]) == VT_FLOAT ? 8 : 4);
        if (!ahead_fits(c, bytes))
            return -1;
    }
    sp->how = how;
    sp->n = n;
    sp->nt = 0;
    if (how == RUN_RED || how == RUN_SCAN) {
        size_t grid = grid_for(c, n, 1);
        for (int r = 0; r < nr; r++) {
            sp->p[r] = dalloc_fixed(c, grid * 8); /* per block, not per element */
            sp->own[r] = 1;
            sp->nt = r + 1;
        }
    } else if (how == RUN_LIB) {
        for (int r = 0; r < nr; r++) {
            if (red) {
                size_t es = lcu_val_type(&c->types[s->res[r]]) == VT_FLOAT ? 8 : 4;
                sp->p[r] = dalloc(c, (size_t)(n ? n : 1) * es);
                sp->own[r] = 1;
            } else {
                sp->p[r] = c->hv[s->res[r]].d;
                sp->own[r] = 0;
            }
            sp->nt = r + 1;
        }
    }
    memcpy((char *)c->hv + temps_at(c, j), sp->p, (size_t)sp->nt * sizeof(void *));
    return 0;
}

/* The device address of SOAC J's temporaries' pointers (P_vals' t). */
static void *temps_table(CudaExec *c, int j)
{
    return (char *)c->dv + temps_at(c, j);
}

/* How reduction or scan S of the step runs: its element count N, its
 * segment count M, and the RUN_* chosen (choose_run). */
static int choose_run(CudaExec *c, const LcuSoac *s, int seg, int red, int64_t n, int64_t m, int64_t longest);

static int red_plan(CudaExec *c, const LcuSoac *s, int64_t *n, int64_t *m)
{
    int seg = s->kind == LS_SEG_REDUCE || s->kind == LS_SEG_SCAN;
    int red = s->kind == LS_REDUCE || s->kind == LS_SEG_REDUCE;
    int sd = s->shape.var;
    *n = seg ? c->hv[sd].n : shape_n(c, &s->shape);
    *m = seg ? c->hv[sd].len : 1;
    return choose_run(c, s, seg, red, *n, *m, seg ? longest_of(c, sd) : *n);
}

/* The temporaries of the step's reductions and scans from SOAC J0 on
 * whose results are allocated already. */
static void prepare_temps_from(CudaExec *c, int j0)
{
    for (int j = j0; j < c->k->nsoacs && !c->ahead_stop; j++) {
        const LcuSoac *s = c->k->soacs[j];
        if (!has_temps(s) || c->sp[j].how >= 0)
            continue;
        int ready = 1;
        for (int r = 0; r < s->nres; r++)
            ready &= c->pb[s->res[r]];
        int64_t n = 0, m = 0;
        if (ready) {
            int how = red_plan(c, s, &n, &m);
            temps_make(c, j, s, how, n);
        }
    }
}

/* How reduction or scan S runs over N elements in M segments, the longest
 * LONGEST (SEG: a SEG_ kind; LONGEST < 0: unknown): a thread, a warp or a
 * block per segment, or the primitive, whose chunked strategy spreads
 * segments of any lengths over the device, by kernels/seg_plan.h's rule
 * (the primitive's own). One segment, or none, is the unsegmented case: a
 * grid-wide reduce or scan. Float MAX/MIN only run sequentially per
 * segment or in the primitive (cg_tree_safe). */
static int choose_run(CudaExec *c, const LcuSoac *s, int seg, int red, int64_t n, int64_t m, int64_t longest)
{
    int tree = cg_tree_safe(s), st = c->strategy;
    if (st == ST_LIB)
        return RUN_LIB;
    if (!seg || m == 1)
        return tree ? (red ? RUN_RED : RUN_SCAN) : RUN_LIB;
    int one = red ? RUN_SRED1 : RUN_SSCAN1, warp = red ? RUN_SREDW : RUN_SSCANW, block = red ? RUN_SREDB : RUN_SSCANB;
    if (st == ST_THREAD)
        return one;
    if (st == ST_WARP || st == ST_BLOCK)
        return tree ? (st == ST_WARP ? warp : block) : one;
    int64_t fill = c->dev->max_grid / 4 > 0 ? c->dev->max_grid / 4 : 1;
    switch (vk_seg_plan(n, m, longest, fill)) {
    case VK_PLAN_THREAD: return one;
    case VK_PLAN_WARP: return tree ? warp : RUN_LIB;
    case VK_PLAN_BLOCK: return tree ? block : RUN_LIB;
    default: return RUN_LIB;
    }
}

/* Reduction or scan J of the step by the fused skeletons (HOW !=
 * RUN_LIB), its temporaries made. */
static void run_fused_red(CudaExec *c, Entry *e, int j, const LcuSoac *s, int how, int64_t n, int64_t m)
{
    int nr = s->nres;
    if (how != RUN_RED && how != RUN_SCAN) {
        /* a group per segment */
        static const int ep_of[NRUN] = { [RUN_SRED1] = EP_SRED1, [RUN_SREDW] = EP_SREDW, [RUN_SREDB] = EP_SREDB,
                                         [RUN_SSCAN1] = EP_SSCAN1, [RUN_SSCANW] = EP_SSCANW,
                                         [RUN_SSCANB] = EP_SSCANB };
        int ep = ep_of[how];
        unsigned group = how == RUN_SREDW || how == RUN_SSCANW   ? c->dev->warp
                         : how == RUN_SREDB || how == RUN_SSCANB ? c->dev->block
                                                                 : 1;
        upload_table(c);
        if (m > 0)
            launch_grid(c, e[ep], grid_for(c, m, group), how != RUN_SSCAN1, m, 3, NULL, NULL);
        return;
    }
    /* grid-wide: block partials, then the primitive over them */
    unsigned grid = grid_for(c, n, 1);
    SoacPrep *t = &c->sp[j];
    upload_table(c);
    if (n > 0)
        launch_grid(c, e[EP_RED], grid, 1, n, 4, temps_table(c, j), NULL);
    for (int r = 0; r < nr; r++) {
        VsRop op = s->rops[r];
        int64_t parts = n > 0 ? grid : 0;
        int rc = how == RUN_RED ? c->lib.reduce(op, t->p[r], parts, c->hv[s->res[r]].d)
                                : c->lib.scan(op, t->p[r], parts, t->p[r]);
        c->lib_calls++;
        if (rc != 0) {
            temps_drop(c, t);
            lib_fail(c, how == RUN_RED ? "a reduction of block partials" : "a scan of block partials");
        }
    }
    if (how == RUN_SCAN && n > 0)
        launch_grid(c, e[EP_SCAN3], grid, 1, n, 4, temps_table(c, j), NULL);
}

/* A permute's two passes over N source elements into ND destination
 * elements: CLAIM marks each destination with its last source, PERM writes
 * the claimants (translate/codegen.h). */
static void permute_passes(CudaExec *c, void *claim, void *perm, int64_t n, int64_t nd)
{
    if (n <= 0)
        return;
    int32_t *w = dalloc(c, (size_t)(nd ? nd : 1) * 4);
    if (nd && dev_memset0(c, w, (size_t)nd * 4) != 0)
        dev_fail(c, "clearing a permute's claims");
    launch(c, claim, n, 4, w, NULL);
    launch(c, perm, n, 4, w, NULL);
    dfree(c, w);
}

/* OUT = the exclusive scan of the N (> 0) counts IN (device); returns
 * their total. */
static int64_t scan_count(CudaExec *c, const int32_t *in, int64_t n, int32_t *out, const char *what)
{
    if (c->lib.scan(VS_IADD, in, n, out) != 0)
        lib_fail(c, what);
    c->lib_calls++;
    /* the last scanned and the last count side by side, read in one copy */
    int32_t last[2];
    if (dev_d2d(c, c->pair_d, out + n - 1, 4) != 0 || dev_d2d(c, c->pair_d + 1, in + n - 1, 4) != 0)
        dev_fail(c, "a copy on the device");
    d2h(c, last, c->pair_d, sizeof last);
    return (int64_t)last[0] + last[1];
}

/* FILTER, PARTITION or a one-segment SEG_FILTER by the fused skeletons:
 * per-block counts, their exclusive scan (the primitive) and total, then
 * the tile scans and the scatter. */
static void run_fused_filter(CudaExec *c, Entry *e, const LcuSoac *s)
{
    int seg = s->kind == LS_SEG_FILTER, nr = s->nres;
    int nkept = s->kind == LS_PARTITION ? nr / 2 : seg ? nr - 1 : nr;
    int64_t n = seg ? c->hv[s->shape.var].n : shape_n(c, &s->shape), count = 0;
    unsigned grid = grid_for(c, n, 1);
    int32_t *cnt = dalloc_fixed(c, (size_t)grid * 4), *off = dalloc_fixed(c, (size_t)grid * 4);
    upload_table(c);
    if (n > 0) {
        launch_grid(c, e[EP_FCOUNT], grid, 1, n, 4, cnt, NULL);
        count = scan_count(c, cnt, grid, off, "the scan of a filter's block counts");
    }
    for (int r = 0; r < nkept; r++)
        new_result(c, s->res[r], count);
    for (int r = nkept; r < nr && !seg; r++)
        new_result(c, s->res[r], n - count);
    if (seg) {
        /* the new descriptor: one segment of COUNT */
        int nv = s->res[nr - 1];
        Value *ns = new_result(c, nv, 1);
        DevCopy *dc = ns->dev;
        int32_t len1 = (int32_t)count;
        int64_t off1 = 0;
        h2d(c, dc->d, &len1, 4);
        dc->off = dalloc_fixed(c, sizeof off1); /* one segment: not charged, as on the host */
        h2d(c, dc->off, &off1, sizeof off1);
        ns->n = count;
        ns->sane = 1;
        c->hv[nv].n = count;
        c->hv[nv].off = dc->off;
    }
    upload_table(c);
    if (n > 0)
        launch_grid(c, e[EP_FPACK], grid, 1, n, 4, off, NULL);
    dfree(c, cnt);
    dfree(c, off);
}

/* A reduction or scan, flat or segmented: fused (red_plan) or values by
 * the SOAC's kernel, then the library's primitive per result. */
static void run_red(CudaExec *c, Entry *e, int j, const LcuSoac *s)
{
    int nr = s->nres;
    int seg = s->kind == LS_SEG_REDUCE || s->kind == LS_SEG_SCAN;
    int red = s->kind == LS_REDUCE || s->kind == LS_SEG_REDUCE;
    int sd = s->shape.var;
    int64_t n = 0, m = 0;
    int how = red_plan(c, s, &n, &m);
    c->runs[how]++;
    for (int r = 0; r < nr; r++)
        result(c, s->res[r], red ? m : n);
    /* the temporaries made when the step was prepared, when they fit
     * (a SCAN's by the general path are its results: made again) */
    SoacPrep *t = &c->sp[j];
    if (t->how != how || t->n != n || (how == RUN_LIB && !red)) {
        temps_drop(c, t);
        temps_make(c, j, s, how, n);
    }
    if (how != RUN_LIB) {
        run_fused_red(c, e, j, s, how, n, m);
        temps_drop(c, t);
        return;
    }
    upload_table(c);
    launch(c, e[EP_MAIN], n, 4, temps_table(c, j), NULL);
    for (int r = 0; r < nr; r++) {
        VsRop op = s->rops[r];
        void *out = c->hv[s->res[r]].d;
        int rc;
        if (!seg)
            rc = red ? c->lib.reduce(op, t->p[r], n, out) : c->lib.scan(op, t->p[r], n, out);
        else if (red)
            rc = c->lib.seg_reduce(op, t->p[r], c->hv[sd].d, c->hv[sd].off, m, n, longest_of(c, sd), out);
        else
            rc = c->lib.seg_scan(op, t->p[r], c->hv[sd].d, c->hv[sd].off, m, n, longest_of(c, sd), out);
        c->lib_calls++;
        if (rc != 0) {
            temps_drop(c, t);
            lib_fail(c, red ? "a reduction" : "a scan");
        }
    }
    temps_drop(c, t);
}

/* A SEG_FILTER's result descriptor NV: the kept elements per segment (a
 * segmented sum of the flags F over N elements), their offsets, COUNT in
 * all. */
static void filter_segdes(CudaExec *c, const LcuSoac *s, int nv, const int32_t *f, int64_t n, int64_t count)
{
    int sd = s->shape.var;
    int64_t m = c->hv[sd].len;
    Value *ns = new_result(c, nv, m);
    DevCopy *dc = ns->dev;
    if (m > 0) {
        if (c->lib.seg_reduce(VS_IADD, f, c->hv[sd].d, c->hv[sd].off, m, n, longest_of(c, sd), dc->d) != 0)
            lib_fail(c, "counting a filter's segments");
        dc->off = m > 1 ? dalloc(c, (size_t)m * sizeof(int64_t)) : dalloc_fixed(c, sizeof(int64_t));
        int64_t total = 0;
        check_errors(c);
        if (c->lib.seg_offsets(dc->d, m, dc->off, &total) != 0)
            lib_fail(c, "the offsets of a filter's segments");
        c->lib_calls += 2;
        note_sync(c); /* the total came back */
        c->d2h_count++;
        c->d2h_bytes += 8;
        if (total != count)
            rt_fatal("cuda: internal error: filter kept %lld elements, its segments %lld", (long long)count,
                     (long long)total);
    }
    ns->n = count;
    ns->sane = 1;
    c->hv[nv].n = count;
    c->hv[nv].off = dc->off;
}

/* FILTER, PARTITION, SEG_FILTER: fused (run_fused_filter), or by flags,
 * the library's scan of them, and the pack. */
static void run_filter(CudaExec *c, Entry *e, const LcuSoac *s)
{
    int nr = s->nres;
    if ((s->kind != LS_SEG_FILTER || c->hv[s->shape.var].len == 1) && c->strategy != ST_LIB) {
        c->runs[RUN_FILTER]++;
        run_fused_filter(c, e, s);
        return;
    }
    c->runs[RUN_FLAGS]++;
    int sd = s->shape.var;
    int64_t n = s->kind == LS_SEG_FILTER ? c->hv[sd].n : shape_n(c, &s->shape);
    int32_t *f = dalloc(c, (size_t)(n ? n : 1) * 4), *p = dalloc(c, (size_t)(n ? n : 1) * 4);
    upload_table(c);
    launch(c, e[EP_MAIN], n, 4, f, NULL);
    int64_t count = 0;
    if (n > 0)
        count = scan_count(c, f, n, p, "the scan of a filter's flags");
    int nkept = s->kind == LS_PARTITION ? nr / 2 : s->kind == LS_SEG_FILTER ? nr - 1 : nr;
    for (int r = 0; r < nkept; r++)
        new_result(c, s->res[r], count);
    if (s->kind == LS_PARTITION)
        for (int r = nkept; r < nr; r++)
            new_result(c, s->res[r], n - count);
    if (s->kind == LS_SEG_FILTER)
        filter_segdes(c, s, s->res[nr - 1], f, n, count);
    upload_table(c);
    launch(c, e[EP_PACK], n, 5, f, p);
    dfree(c, f);
    dfree(c, p);
}

/* SEG_PERMUTE: results of the destination descriptor's length, from their
 * defaults or zero, then the permute's passes. */
static void run_seg_permute(CudaExec *c, Entry *e, const LcuSoac *s)
{
    int ssd = s->shape.var, dsd = s->dst_sd;
    int64_t nd = c->hv[dsd].n, n = c->hv[ssd].n;
    for (int r = 0; r < s->nres; r++) {
        Value *v = result(c, s->res[r], nd);
        size_t bytes = (size_t)nd * esize_of(v);
        if (s->dflt[r] >= 0) {
            const vk_arr *d = &c->hv[s->dflt[r]];
            if (d->len != nd)
                kernel_fail(VKF_DFLTLEN, nd, d->len, 0);
            if (bytes && dev_d2d(c, c->hv[s->res[r]].d, d->d, bytes) != 0)
                dev_fail(c, "copying a default");
        } else if (bytes && dev_memset0(c, c->hv[s->res[r]].d, bytes) != 0) {
            dev_fail(c, "clearing a result");
        }
    }
    upload_table(c);
    permute_passes(c, e[EP_MAIN], e[EP_PACK], n, nd);
}

/* A library call: RAND's stream, or a segmented RANK. */
static void run_lib(CudaExec *c, const LcuSoac *s)
{
    int res = s->res[0];
    if (s->lib == LL_RAND_STREAM) {
        const vk_arr *lim = &c->hv[s->args[0]];
        int64_t n = c->types[s->args[0]].kind == LV_SEGDES ? lim->n : lim->len;
        result(c, res, n);
        RandState *st = rnd_global();
        if (n > 0) {
            check_errors(c);
            if (c->lib.rand(st->ring, st->k, n, c->hv[res].d) != 0)
                lib_fail(c, "RAND");
            c->lib_calls++;
            vkr_jump(st->ring, &st->k, (uint64_t)n);
        }
        return;
    }
    int dv = s->args[0], sd = s->args[1];
    const vk_arr *d = &c->hv[dv];
    VsElem b = c->types[dv].base;
    if (b != VS_INT && b != VS_FLOAT)
        rt_fatal("%s of a Bool vector", lcu_lib_name(s->lib));
    if (c->hv[sd].n != d->len)
        rt_fatal("%s: the descriptor covers %lld elements, the data has %lld", lcu_lib_name(s->lib),
                 (long long)c->hv[sd].n, (long long)d->len);
    result(c, res, d->len);
    if (d->len > 0) {
        if (c->lib.seg_rank(s->lib == LL_RANK_DOWN, b, d->d, c->hv[sd].d, c->hv[sd].off, c->hv[sd].len, d->len,
                            c->hv[res].d) != 0)
            lib_fail(c, "RANK");
        c->lib_calls++;
    }
}

static void run_soac(CudaExec *c, int unique, int j, const LcuSoac *s)
{
    Entry *e = &c->ent[unique][(size_t)j * NEP];
    void *f1 = e[EP_MAIN], *f2 = e[EP_PACK];
    if (s->kind != LS_LIB && !f1)
        rt_fatal("cuda: internal error: no entry point for SOAC %d of vk_u%d", j, unique);
    switch (s->kind) {
    case LS_MAP: case LS_ONCE: case LS_PERMUTE: {
        int64_t n = shape_n(c, &s->shape);
        for (int r = 0; r < s->nres; r++) {
            Value *v = result(c, s->res[r], n);
            if (s->kind == LS_PERMUTE && dev_memset0(c, c->hv[s->res[r]].d, (size_t)n * esize_of(v)))
                dev_fail(c, "clearing a result");
        }
        upload_table(c);
        if (s->kind == LS_PERMUTE)
            permute_passes(c, f1, f2, n, n);
        else
            launch(c, f1, n, 3, NULL, NULL);
        return;
    }
    case LS_REDUCE: case LS_SCAN: case LS_SEG_REDUCE: case LS_SEG_SCAN:
        run_red(c, e, j, s);
        return;
    case LS_FILTER: case LS_PARTITION: case LS_SEG_FILTER:
        run_filter(c, e, s);
        return;
    case LS_SEG_PERMUTE:
        run_seg_permute(c, e, s);
        return;
    case LS_LIB:
        run_lib(c, s);
        return;
    default:
        rt_fatal("cuda: internal error: SOAC %s", lcu_soac_name(s->kind));
    }
}

/* ---- choosing host or device ------------------------------------------------- */

static int family(const LcuKernel *k)
{
    int f = FAM_ELEM;
    for (int j = 0; j < k->nsoacs; j++) {
        LcuSoacKind s = k->soacs[j]->kind;
        if (s == LS_LIB)
            return FAM_LIB;
        if (s != LS_MAP && s != LS_ONCE && s != LS_PERMUTE)
            f = FAM_SCAN;
    }
    return f;
}

/* The generated code of step STEP of block BLOCK, or NULL (a host step, a
 * kernel not generated, a block not prepared). */
static const CgKernelCode *step_code(const CudaExec *c, int block, const BlockPlan *bp, int step)
{
    if (bp->steps[step].kind != STEP_KERNEL || block >= c->nblocks || !c->code || !c->code[block] ||
        step >= c->nsteps[block])
        return NULL;
    const CgKernelCode *kc = &c->code[block][step];
    return kc->unique >= 0 ? kc : NULL;
}

/* Does kernel step STEP run on the device? Not when it was not generated,
 * a parameter descriptor has negative lengths, or its largest parameter
 * is under its family's host threshold and none lives on the device alone
 * (the device tier's). -1: a parameter is not bound yet
 * (looking ahead). */
static int step_on_device(const CudaExec *c, int block, const BlockPlan *bp, int step, Value **env)
{
    const LcuKernel *k = bp->steps[step].k;
    int64_t size = 0;
    int insane = 0, lives_there = 0;
    for (int p = 0; p < k->nparams; p++) {
        const Value *v = env[k->params[p]];
        if (!v || v->type == VT_PAIR)
            return -1;
        int64_t sz = v->type == VT_SEGDES ? v->n : v->len;
        if (sz > size)
            size = sz;
        if (v->type == VT_SEGDES && !v->sane)
            insane = 1;
        /* with the device tier, a parameter whose only up-to-date copy is
         * on the device keeps the step there (no read back) */
        lives_there |= c->tier && v->dev && v->hstale;
    }
    return step_code(c, block, bp, step) && !insane && (lives_there || size >= c->host_max[family(k)]);
}

/* ---- the model's bytes ------------------------------------------------------------ */

/* Bytes of the local L, N of its elements (a descriptor: its lengths and
 * offsets per segment). */
static int64_t local_bytes(const CudaExec *c, int l, int64_t n)
{
    const LcuVarType *t = &c->types[l];
    return n * (t->kind == LV_SEGDES ? 4 + 8 : t->base == VS_FLOAT ? 8 : 4);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* What SOAC S of the step now running read and wrote in device memory,
 * for the model (-d stats), counted as cuda_tier counts its primitives':
 * every array its thunks (or a library kernel) read, once, at most as
 * many elements as it has or as S iterates; every result written once.
 * An estimate from below for a SOAC of several phases (a filter's flags,
 * a permute's claims), from above for one that reads a long array at a
 * few places. */
static int64_t soac_bytes(const CudaExec *c, const LcuSoac *s)
{
    const vk_arr *hv = c->hv;
    int64_t iters = 1;
    switch (s->shape.kind) {
    case LSH_LEN: iters = hv[s->shape.var].len; break;
    case LSH_SEG_N: iters = hv[s->shape.var].n; break;
    case LSH_SEG_M: iters = hv[s->shape.var].len; break;
    case LSH_ONE: iters = 1; break;
    }
    if (s->kind == LS_LIB && s->nargs > 0)
        iters = hv[s->args[0]].len;
    int seen[64], nseen = 0;
    int64_t bytes = 0;
    const LcuThunk *th[3] = { s->pull, s->idx, s->pred };
    for (int t = 0; t < 3 + (s->kind == LS_LIB); t++) {
        int nu = t < 3 ? (th[t] ? th[t]->nusing : 0) : s->nargs;
        for (int u = 0; u < nu; u++) {
            int l = t < 3 ? th[t]->using[u] : s->args[u];
            int dup = 0;
            for (int q = 0; q < nseen && !dup; q++)
                dup = seen[q] == l;
            if (dup || l < 0 || l >= c->nvars)
                continue;
            if (nseen < 64)
                seen[nseen++] = l;
            bytes += local_bytes(c, l, min64(hv[l].len, iters > 0 ? iters : 0));
        }
    }
    for (int r = 0; r < s->nres; r++)
        if (s->res[r] >= 0 && s->res[r] < c->nvars)
            bytes += local_bytes(c, s->res[r], hv[s->res[r]].len);
    return bytes;
}

/* The step whose slice the SOAC protocol works on. */
static void set_step(CudaExec *c, int block, int step, Value **env)
{
    const CgKernelCode *kc = &c->code[block][step];
    size_t at = c->slice[step];
    c->env = env;
    c->map = kc->map;
    c->types = kc->ltypes;
    c->k = kc->canon;
    c->nvars = kc->nlocal;
    c->hv = c->img + at;
    c->dv = (char *)c->dimg + at * sizeof *c->img;
    c->kn = c->known + at;
    c->pb = c->prebound + at;
    c->sp = c->preps + c->soac0[step];
}

/* A run of block BLOCK begins: a slice of the image per kernel step. */
static void cuda_block_begin(Executor *x, int block, const BlockPlan *bp, Value **env)
{
    CudaExec *c = (CudaExec *)x;
    (void)env;
    if (c->in_run)
        for (int i = 0; i < c->pcap; i++)
            temps_drop(c, &c->preps[i]);
    if (c->scap < bp->nsteps + 1) {
        c->scap = 2 * (bp->nsteps + 1);
        c->slice = rt_xrealloc(c->slice, (size_t)c->scap * sizeof *c->slice);
        c->ready = rt_xrealloc(c->ready, (size_t)c->scap * sizeof *c->ready);
        c->soac0 = rt_xrealloc(c->soac0, (size_t)c->scap * sizeof *c->soac0);
    }
    size_t at = 0;
    int ns = 0;
    for (int s = 0; s < bp->nsteps; s++) {
        const CgKernelCode *kc = step_code(c, block, bp, s);
        c->ready[s] = 0;
        c->slice[s] = at;
        c->soac0[s] = ns;
        if (kc) {
            at += slice_entries(kc);
            ns += kc->canon->nsoacs;
        }
    }
    if (c->pcap < ns) {
        int old = c->pcap;
        c->pcap = 2 * ns;
        c->preps = rt_xrealloc(c->preps, (size_t)c->pcap * sizeof *c->preps);
        memset(c->preps + old, 0, (size_t)(c->pcap - old) * sizeof *c->preps);
    }
    for (int i = 0; i < c->pcap; i++)
        c->preps[i].how = -1;
    if (c->icap < at) {
        c->icap = 2 * at;
        c->img = rt_xrealloc(c->img, c->icap * sizeof *c->img);
        c->img_up = rt_xrealloc(c->img_up, c->icap * sizeof *c->img_up);
        c->known = rt_xrealloc(c->known, c->icap);
        c->prebound = rt_xrealloc(c->prebound, c->icap);
        if (c->dimg)
            dfree(c, c->dimg);
        c->dimg = dalloc_fixed(c, c->icap * sizeof *c->img);
        c->up_used = 0;
    }
    if (at) /* (a run with no kernel step: no image) */
        memset(c->img, 0, at * sizeof *c->img);
    c->iused = at;
    c->run_bp = bp;
    c->run_block = block;
    c->in_run = 1;
    c->run_on_device = 0;
    c->fresh = 1;
    c->synced = 0;
    c->hosted = 0;
}

/* Before a fused block binds its inputs: the device tier's pending
 * chains run (cuda_chain.h). */
static void cuda_flush(Executor *x)
{
    (void)x;
    chain_force_all();
}

static void cuda_block_end(Executor *x)
{
    CudaExec *c = (CudaExec *)x;
    for (int i = 0; c->in_run && i < c->pcap; i++)
        temps_drop(c, &c->preps[i]);
    c->in_run = 0;
}

/* Prepare the slice of step STEP (on the device): its parameters on the
 * device and bound, the results of known lengths allocated, and their
 * reductions' temporaries. */
static void prepare_step(CudaExec *c, int block, int step, Value **env)
{
    set_step(c, block, step, env);
    const CgKernelCode *kc = &c->code[block][step];
    for (int p = 0; p < kc->canon->nparams; p++) {
        int l = kc->canon->params[p];
        bind_param(c, l, env[kc->map[l]]);
    }
    prebind_from(c, 0);
    prepare_temps_from(c, 0);
    c->ready[step] = 1;
}

/* Prepare the kernel steps from FROM on that will run on the device, up to
 * the first that cannot be prepared now: a host step (the host waits for
 * the device before it), a step whose parameters are not all computed yet
 * (after a filter: its count comes back first), one that runs on the host,
 * or one that would take more memory ahead of time than ahead_fits allows.
 * A step that may be offered a donor's storage is prepared with it
 * (speculate_donation). Then one upload serves all of them. */
static void prepare_ahead(CudaExec *c, int block, const BlockPlan *bp, int from, Value **env)
{
    int64_t hh = mem_limit() - mem_used(), dh = mem_limit() - mem_dev_used();
    c->ahead = 1;
    c->ahead_stop = 0;
    c->ahead_budget = (hh < dh ? hh : dh) / 4;
    for (int t = from; t < bp->nsteps && !c->ahead_stop; t++) {
        const PlanStep *ps = &bp->steps[t];
        if (c->ready[t])
            continue;
        if (ps->kind != STEP_KERNEL || step_on_device(c, block, bp, t, env) != 1)
            break;
        /* parameters still on the host go up now */
        int64_t up = 0;
        for (int p = 0; p < ps->k->nparams; p++) {
            const Value *v = env[ps->k->params[p]];
            if (!v->dev)
                up += v->len * 8 + (v->type == VT_SEGDES ? v->len * 8 : 0);
        }
        if (!ahead_fits(c, up))
            break;
        c->ahead_ps = ps;
        prepare_step(c, block, t, env);
        c->ahead_ps = NULL;
    }
    c->ahead = 0;
    c->ahead_stop = 0;
}

/* A step prepared ahead runs on the host after all: its results go back
 * to the slots' owners, its temporaries to the device. */
static void unprepare_step(CudaExec *c, int block, int step, Value **env)
{
    set_step(c, block, step, env);
    for (int l = 0; l < c->nvars; l++)
        if (c->pb[l] && env[c->map[l]]) {
            val_release(env[c->map[l]]);
            env[c->map[l]] = NULL;
        }
    for (int j = 0; j < c->k->nsoacs; j++)
        temps_drop(c, &c->sp[j]);
    c->ready[step] = 0;
}

static void cuda_run(Executor *x, int block, const BlockPlan *bp, int step, Value **env)
{
    CudaExec *c = (CudaExec *)x;
    const LcuKernel *k = bp->steps[step].k;
    int fam = family(k);
    for (int p = 0; p < k->nparams; p++) {
        Value *v = env[k->params[p]];
        if (!v)
            rt_fatal("cuda: kernel K%d: parameter x%d is not bound", k->id, k->params[p]);
        if (v->type == VT_PAIR)
            rt_fatal("cuda: kernel K%d: parameter x%d is a pair", k->id, k->params[p]);
    }
    if (!c->in_run || c->run_bp != bp || c->run_block != block)
        cuda_block_begin(x, block, bp, env);
    if (step_on_device(c, block, bp, step, env) != 1) {
        if (c->ready[step])
            unprepare_step(c, block, step, env);
        for (int p = 0; p < k->nparams; p++)
            val_for_host(env[k->params[p]]);
        c->on_host[fam]++;
        c->inner->run_kernel(c->inner, block, bp, step, env);
        return;
    }
    c->on_device[fam]++;
    if (!c->run_on_device) {
        c->run_on_device = 1;
        c->dev_runs++;
    }
    const CgKernelCode *kc = &c->code[block][step];
    if (!c->ready[step])
        prepare_step(c, block, step, env);
    prepare_ahead(c, block, bp, step + 1, env);
    set_step(c, block, step, env);
    /* bound again: a value may have changed since the step was prepared
     * (the slice then changes, and goes up again) */
    c->cur_bp = bp;
    c->cur_block = block;
    for (int p = 0; p < kc->canon->nparams; p++) {
        int l = kc->canon->params[p];
        bind_param(c, l, env[kc->map[l]]);
    }
    for (int j = 0; j < kc->canon->nsoacs; j++) {
        const LcuSoac *s = kc->canon->soacs[j];
        c->cur_bp = bp;
        c->cur_block = block;
        c->cur_unique = kc->unique;
        c->cur_soac = j;
        run_soac(c, c->ubase[block] + kc->unique, j, s);
        c->kbytes += soac_bytes(c, s);
        if (s->kind == LS_FILTER || s->kind == LS_PARTITION || s->kind == LS_SEG_FILTER) {
            /* its count came back: what depends on it is prepared now,
             * with the steps ahead that were waiting for it */
            prebind_from(c, j + 1);
            prepare_temps_from(c, j + 1);
            prepare_ahead(c, block, bp, step + 1, env);
            set_step(c, block, step, env);
        }
    }
    for (int j = 0; j < kc->canon->nsoacs; j++)
        temps_drop(c, &c->sp[j]);
    c->er_pending = 1;
    lcu_release_internal(kc->canon, kc->map, env);
}

/* ---- preparation ----------------------------------------------------------------- */

/* The entry point of SOAC kind S's first phase (see phase2 for the second). */
static const char *phase1(LcuSoacKind s)
{
    switch (s) {
    case LS_MAP: case LS_ONCE: return "map";
    case LS_PERMUTE: case LS_SEG_PERMUTE: return "claim";
    case LS_REDUCE: case LS_SCAN: case LS_SEG_REDUCE: case LS_SEG_SCAN: return "vals";
    case LS_FILTER: case LS_PARTITION: case LS_SEG_FILTER: return "flags";
    default: return NULL;
    }
}

/* The entry point of the second phase, or NULL. */
static const char *phase2(LcuSoacKind s)
{
    switch (s) {
    case LS_PERMUTE: case LS_SEG_PERMUTE: return "perm";
    case LS_FILTER: case LS_PARTITION: case LS_SEG_FILTER: return "pack";
    default: return NULL;
    }
}

/* --cuda-check over many programs (tests/cuda_check.sh):
 * $VINTERP_CUDA_CHECK_DONE names a folder with a file per kernel compiled
 * already (its text's hash); a unit leaves those out, and adds its own
 * once it has compiled. */
static int done_seen(void *dir, uint64_t h)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%016llx", (const char *)dir, (unsigned long long)h);
    return access(path, F_OK) == 0;
}

static void done_record(const char *dir, const CgUnit *u)
{
    const uint64_t *h;
    int n = cg_unit_emitted(u, &h);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%016llx", dir, (unsigned long long)h[i]);
        int fd = open(path, O_WRONLY | O_CREAT, 0644);
        if (fd >= 0)
            close(fd);
    }
}

/* The CUDA unit of the kernels of PLANS (NULL entries skipped); CODE per
 * block and step, or NULL (text only); kernels DONE_DIR has are left out
 * (NULL: none). */
static CgUnit *make_unit(int nblocks, BlockPlan *const *plans, CgKernelCode **code, int *generated, int *not_generated,
                         const char *done_dir)
{
    CgUnit *u = cg_plans_unit(CG_CUDA, nblocks, plans, code, done_dir ? done_seen : NULL, (void *)done_dir, generated,
                              not_generated);
    if (!u)
        rt_fatal("out of host memory");
    return u;
}

/* Is the host path's code compiled? Only when some kernel runs go to the
 * host by size: with every threshold 0 (tiered, where the tiers keep short
 * runs in the interpreter, or every kernel forced onto the device) the
 * host path runs only what the device cannot (descriptors with negative
 * lengths), by the evaluator, and its C unit is not worth compiling. */
static int host_path_compiled(const CudaExec *c)
{
    return c->host_max[FAM_ELEM] > 0 || c->host_max[FAM_SCAN] > 0 || c->host_max[FAM_LIB] > 0;
}

/* The tier thread: the host path's unit and the CUDA unit into the cache. */
/* A unit's text in parts (cg_unit_split): NVRTC's time grows with a unit's
 * size and one compile runs on one thread, so a program's unit (bh.5000's:
 * 48028 instructions) is compiled as parts of at most part_bytes of
 * kernels each, in parallel (the real device's load_parts), each a cache
 * entry of its own; a part may cut a kernel between its SOACs. The entry
 * points of SOAC j of unique kernel q are in part PART_OF[FIRST[q] + j]. */
typedef struct {
    int n;
    char **text;
    size_t *len;
    int *part_of;   /* per piece (cg_unit_piece) */
    int *first;     /* per unique kernel: its first piece, or -1 */
} UnitParts;

/* The part holding SOAC J of unique kernel Q, or -1. */
static int part_of(const UnitParts *up, int q, int j)
{
    return up->first && up->first[q] >= 0 ? up->part_of[up->first[q] + j] : -1;
}

static void unit_parts_free(UnitParts *up)
{
    for (int p = 0; p < up->n; p++)
        free(up->text[p]);
    free(up->text);
    free(up->len);
    free(up->part_of);
    free(up->first);
    memset(up, 0, sizeof *up);
}

static int unit_parts(const CudaExec *c, const CgUnit *u, UnitParts *up)
{
    memset(up, 0, sizeof *up);
    int np = cg_unit_pieces(u), nd = cg_unit_distinct(u);
    int *first = malloc((size_t)(np + 1) * sizeof *first);
    up->part_of = malloc((size_t)(np + 1) * sizeof *up->part_of);
    up->first = malloc((size_t)(nd + 1) * sizeof *up->first);
    if (!first || !up->part_of || !up->first) {
        free(first);
        return -1;
    }
    for (int q = 0; q < nd; q++)
        up->first[q] = -1;
    int n = cg_unit_split(u, c->part_bytes, first, np > 0 ? np : 1);
    up->text = calloc((size_t)(n ? n : 1), sizeof *up->text);
    up->len = calloc((size_t)(n ? n : 1), sizeof *up->len);
    if (!up->text || !up->len) {
        free(first);
        return -1;
    }
    for (int p = 0; p < n; p++) {
        int from = first[p], to = p + 1 < n ? first[p + 1] : np;
        if (!(up->text[p] = cg_unit_part_text(u, from, to, &up->len[p]))) {
            up->n = p;
            free(first);
            return -1;
        }
        for (int i = from; i < to; i++) {
            int soac = 0, q = cg_unit_piece(u, i, &soac);
            up->part_of[i] = p;
            if (q >= 0 && q < nd && soac == 0)
                up->first[q] = i;
        }
    }
    up->n = n;
    free(first);
    return 0;
}

/* $VINTERP_NVRTC_OPT: every compile full, every compile quick, or staged
 * (the tiers' first compile of a block quick, then the full one in the
 * background, swapped in when ready: backend_tier.c). */
enum { OPT_FULL, OPT_FAST, OPT_STAGED };

/* Is a compile or load asked for the quick variant (FAST) to be one? */
static int stage_fast(const CudaExec *c, int fast)
{
    return c->opt == OPT_FAST ? 1 : c->opt == OPT_FULL ? 0 : fast;
}

static int cuda_build(Executor *x, int nblocks, BlockPlan *const *plans, JitBuildStats *st, char *msg, size_t msglen)
{
    CudaExec *c = (CudaExec *)x;
    int inner = c->inner->build && host_path_compiled(c) ? c->inner->build(c->inner, nblocks, plans, st, msg, msglen)
                                                         : 0;
    if (inner < 0 || (inner > 0 && st->probe))
        return inner;
    int gen = 0, notgen = 0;
    CgUnit *u = make_unit(nblocks, plans, NULL, &gen, &notgen, NULL);
    UnitParts up;
    int rc = 0;
    if (gen > 0 && unit_parts(c, u, &up) < 0)
        rt_fatal("out of host memory");
    /* each part into the cache (a probe: 1 as soon as one misses) */
    int asked = st->fast;
    st->fast = stage_fast(c, asked);
    for (int p = 0; gen > 0 && p < up.n && rc == 0; p++)
        rc = c->dev->build(c->dev, up.text[p], up.len[p], st, msg, msglen);
    st->fast = asked;
    if (gen > 0)
        unit_parts_free(&up);
    cg_unit_free(u);
    return rc;
}

/* The entry points of kernel KC (its distinct kernel's, per SOAC) into
 * EN, from the modules MODS of the unit's parts UP. 0, or -1 with MSG. */
static int bind_entries(CudaExec *c, const CgKernelCode *kc, Entry *en, const UnitParts *up, void **mods, char *msg,
                        size_t msglen)
{
    const LcuKernel *kk = kc->canon;
    char name[32], ep[96];
    cg_unique_name(name, sizeof name, kc->unique);
    for (int j = 0; j < kk->nsoacs; j++)
        for (int q = 0; q < NEP; q++) {
            const char *sfx = q == EP_MAIN ? phase1(kk->soacs[j]->kind)
                              : q == EP_PACK ? phase2(kk->soacs[j]->kind)
                                             : ep_suffix[q];
            if (!sfx || !cg_cuda_has_entry(kk->soacs[j], sfx))
                continue;
            snprintf(ep, sizeof ep, "%s_s%d_%s", name, j, sfx);
            int pt = part_of(up, kc->unique, j);
            void *mod = pt >= 0 ? mods[pt] : NULL;
            if (!mod || !(en[(size_t)j * NEP + q] = c->dev->func(c->dev, mod, ep))) {
                snprintf(msg, msglen, "the generated unit lacks %s", ep);
                return -1;
            }
        }
    return 0;
}

/* A unit loaded in parts: the parts, a module each, its cached source. */
typedef struct {
    UnitParts up;
    void **mods;
    char (*paths)[1200];
} Loaded;

static void loaded_free(Loaded *l)
{
    unit_parts_free(&l->up);
    free(l->mods);
    free(l->paths);
    memset(l, 0, sizeof *l);
}

/* Unit U cut into parts and loaded into L, the quick-compiled variant
 * when FAST. 0, or -1 with MSG (L to free either way). */
static int load_unit(CudaExec *c, const CgUnit *u, int fast, Loaded *l, char *msg, size_t msglen)
{
    memset(l, 0, sizeof *l);
    const UnitParts *up = &l->up;
    if (unit_parts(c, u, &l->up) < 0 || !(l->mods = calloc((size_t)up->n + 1, sizeof *l->mods)) ||
        !(l->paths = calloc((size_t)up->n + 1, sizeof *l->paths)))
        rt_fatal("out of host memory");
    void **mods = l->mods;
    char (*paths)[1200] = l->paths;
    int rc = 0;
    double l0 = rt_seconds();
    c->dev->load_fast = fast;
    if (c->dev->load_parts) {
        rc = c->dev->load_parts(c->dev, up->n, (const char *const *)up->text, up->len, mods, paths, msg, msglen);
    } else {
        for (int p = 0; p < up->n && rc == 0; p++) {
            if (!(mods[p] = c->dev->load(c->dev, up->text[p], up->len[p], msg, msglen)))
                rc = -1;
            else
                snprintf(paths[p], sizeof paths[p], "%s", c->dev->unit_path);
        }
    }
    c->dev->load_fast = 0;
    c->load_seconds += rt_seconds() - l0;
    if (trace_on)
        trace_span("compile", fast ? "compile and load a unit (quick)" : "compile and load a unit",
                   trace_now() - (rt_seconds() - l0) * 1e6, trace_now(), -1);
    c->parts += up->n;
    return rc;
}

/* The cached sources of L's parts kept (for messages and the -d stats
 * unit keys), and each of the unit's ND distinct kernels (numbered from
 * BASE) pointed at its part's (a kernel cut between parts: its first
 * SOAC's). */
static void keep_paths(CudaExec *c, const Loaded *l, int base, int nd)
{
    char **po = realloc(c->paths_owned, (size_t)(c->npaths + l->up.n + 1) * sizeof *po);
    int nk = base + nd > c->ndistinct ? base + nd : c->ndistinct;
    char **kp = realloc(c->kpath, (size_t)(nk + 1) * sizeof *kp);
    if (!po || !kp)
        rt_fatal("out of host memory");
    c->paths_owned = po;
    c->kpath = kp;
    int pbase = c->npaths;
    for (int p = 0; p < l->up.n; p++)
        if (!(po[c->npaths++] = strdup(l->paths[p])))
            rt_fatal("out of host memory");
    for (int q = 0; q < nd; q++)
        kp[base + q] = part_of(&l->up, q, 0) >= 0 ? po[pbase + part_of(&l->up, q, 0)] : NULL;
}

/* One unit for the blocks of PLANS: the host path's, then the CUDA text
 * compiled and loaded (in parts), and the entry points of its distinct
 * kernels. */
static int cuda_prepare(Executor *x, const Program *p, int nblocks, BlockPlan *const *plans, int fast, char *msg,
                        size_t msglen)
{
    CudaExec *c = (CudaExec *)x;
    c->prog = p;
    if (!c->compile_only && c->inner->prepare && host_path_compiled(c) &&
        c->inner->prepare(c->inner, p, nblocks, plans, 0, msg, msglen) != 0)
        return -1;
    double t0 = rt_seconds();
    if (!c->code) {
        c->nblocks = nblocks;
        c->code = calloc((size_t)nblocks + 1, sizeof *c->code);
        c->nsteps = calloc((size_t)nblocks + 1, sizeof *c->nsteps);
        c->ubase = calloc((size_t)nblocks + 1, sizeof *c->ubase);
        if (!c->code || !c->nsteps || !c->ubase)
            rt_fatal("out of host memory");
    }
    int coded = cg_plans_code(nblocks, plans, c->code, c->nsteps);
    if (coded == -2)
        rt_fatal("cuda: internal error: a block prepared twice");
    if (coded < 0)
        rt_fatal("out of host memory");
    const char *done = c->compile_only ? settings_text(SET_CUDA_CHECK_DONE) : NULL;
    if (done && !*done)
        done = NULL;
    CgUnit *u = make_unit(nblocks, plans, c->code, &c->kernels_generated, &c->kernels_not_generated, done);
    const uint64_t *emitted;
    int nemitted = cg_unit_emitted(u, &emitted);
    size_t len = 0;
    cg_unit_text(u, &len);
    c->unit_bytes += len;
    int nd = cg_unit_distinct(u), base = c->ndistinct;
    c->units++;
    c->generate_seconds += rt_seconds() - t0;
    int rc = 0;
    Loaded l;
    memset(&l, 0, sizeof l);
    if (nd > 0 && (!done || nemitted > 0)) {
        rc = load_unit(c, u, stage_fast(c, fast), &l, msg, msglen);
        if (rc == 0 && done)
            done_record(done, u);
    }
    cg_unit_free(u);
    if (c->compile_only || rc != 0) {
        loaded_free(&l);
        return rc;
    }
    keep_paths(c, &l, base, nd);
    /* Entry points per distinct kernel of this unit (numbered from BASE in
     * c->ent), from any kernel that uses it. */
    Entry **ent = rt_xrealloc(c->ent, (size_t)(base + nd + 1) * sizeof *ent);
    c->ent = ent;
    memset(ent + base, 0, (size_t)(nd + 1) * sizeof *ent);
    c->ndistinct = base + nd;
    /* Kernels that share a text can differ in their library SOACs (which
     * have no text): the tables are sized for the longest. */
    int *width = rt_xcalloc((size_t)nd + 1, sizeof *width);
    for (int k = 0; k < nblocks; k++) {
        if (!plans[k])
            continue;
        c->ubase[k] = base;
        for (int s = 0; s < c->nsteps[k]; s++) {
            const CgKernelCode *kc = &c->code[k][s];
            if (kc->unique >= 0 && kc->canon->nsoacs > width[kc->unique])
                width[kc->unique] = kc->canon->nsoacs;
        }
    }
    for (int k = 0; k < nblocks && rc == 0; k++) {
        for (int s = 0; plans[k] && s < c->nsteps[k] && rc == 0; s++) {
            const CgKernelCode *kc = &c->code[k][s];
            if (kc->unique < 0 || ent[base + kc->unique])
                continue;
            size_t w = ((size_t)width[kc->unique] + 1) * NEP;
            if (!(ent[base + kc->unique] = calloc(w, sizeof **ent)))
                rt_fatal("out of host memory");
            rc = bind_entries(c, kc, ent[base + kc->unique], &l.up, l.mods, msg, msglen);
        }
    }
    free(width);
    loaded_free(&l);
    return rc;
}

/* Staged (Executor.refine): the block of PLANS, prepared with its quick
 * code, gets its full code (which the tiers' build put in the cache): the
 * same unit loaded again without the quick option, the entry points of
 * its kernels replaced. The quick modules stay loaded (a launch queued
 * from them may not have run yet) until the end. */
static int cuda_refine(Executor *x, int nblocks, BlockPlan *const *plans, char *msg, size_t msglen)
{
    CudaExec *c = (CudaExec *)x;
    int k = 0;
    while (k < nblocks && !plans[k])
        k++;
    if (k == nblocks || k >= c->nblocks || !c->code || !c->code[k] || !c->ent) {
        snprintf(msg, msglen, "internal error: a block refined before it was prepared");
        return -1;
    }
    int gen = 0, notgen = 0;
    CgUnit *u = make_unit(nblocks, plans, NULL, &gen, &notgen, NULL);
    int nd = cg_unit_distinct(u), base = c->ubase[k], rc = 0;
    Loaded l;
    memset(&l, 0, sizeof l);
    if (gen > 0)
        rc = load_unit(c, u, 0, &l, msg, msglen);
    cg_unit_free(u);
    if (gen > 0 && rc == 0)
        keep_paths(c, &l, base, nd); /* --check reports name the full code's source */
    for (int s = 0; rc == 0 && gen > 0 && s < c->nsteps[k]; s++) {
        const CgKernelCode *kc = &c->code[k][s];
        if (kc->unique >= 0 && c->ent[base + kc->unique])
            rc = bind_entries(c, kc, c->ent[base + kc->unique], &l.up, l.mods, msg, msglen);
    }
    loaded_free(&l);
    return rc;
}

static const char *cuda_where(Executor *x, int block, int step, char *buf, size_t len)
{
    CudaExec *c = (CudaExec *)x;
    if (block < c->nblocks && c->code[block] && c->code[block][step].unique >= 0) {
        const char *path = c->kpath ? c->kpath[c->ubase[block] + c->code[block][step].unique] : NULL;
        if (!path)
            path = "";
        snprintf(buf, len, "generated CUDA vk_u%d_* in %s (device %s)%s", c->code[block][step].unique,
                 path[0] ? path : "(no cache)", c->dev->name,
                 c->inner->where ? "; on the host path: " : "");
        size_t used = strlen(buf);
        if (c->inner->where && used < len)
            c->inner->where(c->inner, block, step, buf + used, len - used);
        return buf;
    }
    return c->inner->where ? c->inner->where(c->inner, block, step, buf, len) : NULL;
}

/* A fused block's descriptor made or read on the device (its device tier). */
static Value *cuda_meta_step(Executor *x, int op, Value *arg)
{
    CudaExec *c = (CudaExec *)x;
    return c->tier ? cuda_tier_meta_step(c->tier, op, arg) : NULL;
}

static void cuda_check_errors(Executor *x)
{
    check_errors((CudaExec *)x);
}

/* A host step ran: the steps after it were not prepared ahead (their
 * tables go up again, counted apart). */
static void cuda_host_step_ran(Executor *x)
{
    CudaExec *c = (CudaExec *)x;
    if (c->in_run)
        c->hosted = 1;
}

/* The running block's record left among the tier's pending checks, with
 * its replay (executor.h). */
static int cuda_defer_errors(Executor *x, ErrReplay *r)
{
    CudaExec *c = (CudaExec *)x;
    if (!c->tier || !c->er_slot || !cuda_tier_block_defer(c->tier, c->er_slot, r))
        return 0;
    c->er_slot = NULL;
    return 1;
}

static void cuda_drain_deferred(Executor *x)
{
    CudaExec *c = (CudaExec *)x;
    if (c->tier)
        for (ErrReplay *r; (r = cuda_tier_take_done(c->tier));)
            r->drop(r);
}

void cx_block_records_read(CudaExec *c, int n)
{
    c->er_slot = NULL;
    c->er_reads += n > 0;
}

static void cuda_times(Executor *x, double *compile_s, double *transfer_s)
{
    CudaExec *c = (CudaExec *)x;
    *compile_s = c->load_seconds;
    *transfer_s = c->alloc_seconds + c->h2d_seconds + c->d2h_seconds;
}

static void cuda_report(Executor *x, FILE *f)
{
    CudaExec *c = (CudaExec *)x;
    if (!c->compile_only) {
        /* for scripts: exactly these two lines (launches count the
         * generated kernels' launches and the primitive calls; syncs the
         * host's waits for the device, every read back) */
        if (c->regions)
            print_tally(f, "timed region", &c->t_region);
        struct Tally all = tally(c);
        print_tally(f, "whole run", &all);
        if (c->tier) {
            cuda_tier_report(c->tier, f);
            fprintf(f, "stats: model: ");
            if (c->regions)
                fprintf(f, "timed region %.6f s, ", model_seconds(&c->t_region));
            fprintf(f, "whole run %.6f s (%.0f us a launch and a copy or clear on the device, of which %lld in the "
                       "timed region and %lld in the run, %.0f us a wait, %.0f GB/s host to device and back, %.0f GB/s "
                       "of device memory for %lld bytes the device tier's primitives and the generated kernels read and wrote)\n",
                    model_seconds(&all), MODEL_LAUNCH_S * 1e6, (long long)c->t_region.dops, (long long)all.dops,
                    MODEL_WAIT_S * 1e6, MODEL_BUS_BPS / 1e9, MODEL_HBM_BPS / 1e9, (long long)all.dbytes);
        }
        fprintf(f, "stats: cuda: where the time went: kernels %.6f s (%s: generated %.6f s in %lld launches, primitives "
                   "%.6f s in %lld calls); module loads and compiles %.6f s; allocations %.6f s (%lld); copies to the "
                   "device %.6f s; reads back, each a wait for the device, %.6f s\n",
                all.ksecs, c->dev->kernel_seconds ? "events around each" : "host-timed calls", kernel_seconds(c, 0),
                (long long)c->launches, kernel_seconds(c, 1), (long long)c->lib_calls, c->load_seconds,
                c->alloc_seconds, (long long)c->alloc_count, c->h2d_seconds, c->d2h_seconds);
        fprintf(f, "stats: cuda: vectors uploaded: %lld, %lld bytes; the largest:", (long long)c->vec_up_count,
                (long long)c->vec_up_bytes);
        for (size_t i = 0; i < sizeof c->top_up / sizeof c->top_up[0] && c->top_up[i].bytes > 0; i++) {
            const struct Upload *u = &c->top_up[i];
            if (u->line0)
                fprintf(f, " %lld bytes (block at lines %d-%d, variable %d);", (long long)u->bytes, u->line0, u->line1,
                        u->var);
            else
                fprintf(f, " %lld bytes;", (long long)u->bytes);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "stats: cuda: device %s (%s, %s); %d kernels generated, %d distinct (%d host only), %d units of "
               "%zu bytes in all generated in %.6f s, compiled (%d parts of at most %zu bytes of kernels) and loaded "
               "in %.6f s\n",
            c->dev->name, c->dev->kind, c->dev->arch, c->kernels_generated, c->ndistinct, c->kernels_not_generated,
            c->units, c->unit_bytes, c->generate_seconds, c->parts, c->part_bytes, c->load_seconds);
    if (c->dev->report)
        c->dev->report(c->dev, f);
    for (int i = 0; i < NFAM; i++)
        fprintf(f, "stats: cuda: %s kernels: %lld runs on the device, %lld on the host (threshold %lld elements)\n",
                fam_name[i], (long long)c->on_device[i], (long long)c->on_host[i], (long long)c->host_max[i]);
    fprintf(f, "stats: cuda: %lld device launches, %lld primitive calls; host to device %lld bytes in %lld copies, "
               "device to host %lld bytes in %lld copies, %.6f s in transfers\n",
            (long long)c->launches, (long long)c->lib_calls, (long long)c->h2d_bytes, (long long)c->h2d_count,
            (long long)c->d2h_bytes, (long long)c->d2h_count, c->transfer_seconds);
    fprintf(f, "stats: cuda: variable table: %lld uploads, %lld launches found it unchanged; the error record read "
               "%lld times\n",
            (long long)c->table_uploads, (long long)c->table_unchanged, (long long)c->er_reads);
    fprintf(f, "stats: cuda: variable table uploads: %lld first of a block run, %lld after a sync point, %lld after "
               "a host step, %lld others; %lld block runs on the device, %lld sync points in them\n",
            (long long)c->up_first, (long long)c->up_synced, (long long)c->up_hosted, (long long)c->up_other,
            (long long)c->dev_runs, (long long)c->sync_points);
    fprintf(f, "stats: cuda: results given a donor's storage when prepared ahead: %lld\n", (long long)c->speculated);
    fprintf(f, "stats: cuda: lazy fills filled on the device: %lld\n", (long long)c->lazy_fills);
    fprintf(f, "stats: cuda: reductions, scans and filters on the device (strategy %s):", st_name[c->strategy]);
    for (int i = 0; i < NRUN; i++)
        fprintf(f, "%s %lld %s", i ? "," : "", (long long)c->runs[i], run_name[i]);
    fputc('\n', f);
    exec_report_keys(f, "cuda", c->paths_owned, c->npaths);
    if (c->inner->report)
        c->inner->report(c->inner, f);
}

static void cuda_free(Executor *x)
{
    CudaExec *c = (CudaExec *)x;
    cuda_tier_free(c->tier);
    c->tier = NULL;
    for (int k = 0; k < c->nblocks; k++) {
        for (int st = 0; c->code && c->code[k] && st < c->nsteps[k]; st++)
            cg_kernel_code_free(&c->code[k][st]);
        free(c->code ? c->code[k] : NULL);
    }
    for (int u = 0; u < c->ndistinct; u++)
        free(c->ent ? c->ent[u] : NULL);
    free(c->ent);
    for (int u = 0; u < c->npaths; u++)
        free(c->paths_owned[u]);
    free(c->paths_owned);
    free(c->ubase);
    free(c->kpath);
    free(c->code);
    free(c->nsteps);
    free(c->img);
    free(c->img_up);
    free(c->known);
    free(c->prebound);
    free(c->slice);
    free(c->ready);
    free(c->soac0);
    if (c->dev) {
        for (int i = 0; c->in_run && i < c->pcap; i++)
            temps_drop(c, &c->preps[i]);
        if (c->dimg)
            dfree(c, c->dimg);
        if (c->er_d)
            dfree(c, c->er_d);
        if (c->pair_d)
            dfree(c, c->pair_d);
        if (c->wait_d)
            dfree(c, c->wait_d);
    }
    free(c->preps);
    c->inner->free(c->inner);
    free(c->allocs);
    /* Values freed after this (there should be none: the interpreter goes
     * first) drop only their DevCopy records: the device goes here. */
    current = NULL;
    interp_set_timer_hook(NULL);
    if (c->dev)
        c->dev->close(c->dev);
    free(c);
}

/* A unit's parts: at most CUDA_PART_BYTES of kernel text each (see
 * unit_parts; runtime/fused/tuning.h has the measurement). */

static int emulated(void) { return settings_count(SET_CUDA_EMULATE, 0) == 1; }

int cuda_usable(int dev, char *why, size_t len)
{
    if (emulated()) {
        if (jit_have(JIT_CXX))
            return 1;
        snprintf(why, len, "VINTERP_CUDA_EMULATE is set but there is no C++ compiler (set VINTERP_CXX)");
        return 0;
    }
    return cuda_real_usable(dev, why, len);
}

Executor *exec_cuda_new(int devno, const JitOptions *o, const char *compile_only_arch, int tiered, char *why,
                        size_t len)
{
    CudaDev *dev = compile_only_arch || !emulated() ? cuda_real_open(devno, o, compile_only_arch, why, len)
                                                    : cuda_emul_open(o, why, len);
    if (!dev)
        return NULL;
    CudaExec *c = rt_xcalloc(1, sizeof *c);
    c->dev = dev;
    c->compile_only = compile_only_arch;
    c->base.name = "cuda";
    c->base.eager = 1;
    /* CUDA's math library on a GPU; the emulated device calls the host's */
    c->base.libm_ulps = strcmp(dev->kind, "cuda") == 0 ? 3 : 0;
    c->base.takes_lazy = 1;
    c->base.prepare = cuda_prepare;
    c->base.build = cuda_build;
    c->base.run_kernel = cuda_run;
    c->base.check_errors = cuda_check_errors;
    c->base.defer_errors = cuda_defer_errors;
    c->base.drain_deferred = cuda_drain_deferred;
    c->base.host_step_ran = cuda_host_step_ran;
    c->base.meta_step = cuda_meta_step;
    c->base.block_begin = cuda_block_begin;
    c->base.block_end = cuda_block_end;
    c->base.flush = cuda_flush;
    c->base.where = cuda_where;
    c->base.report = cuda_report;
    c->base.times = cuda_times;
    c->base.free = cuda_free;
    /* Tiered, a block runs here only when its run is long enough (the
     * tiers' dispatch rule, tier.h): every kernel goes to the device, and
     * the host path (kernels the generator cannot express, descriptors
     * with negative lengths) is the evaluator, which compiles nothing.
     * Untiered (--tier=eager), steps below a size threshold per family
     * run on the host as generated C; see README "cuda backend". */
    c->inner = !tiered && jit_have_compiler() ? exec_cpu_new(o) : exec_lcu_new();
    c->host_max[FAM_ELEM] = settings_count(SET_CUDA_HOST_MAX_ELEM, tiered ? 0 : CUDA_HOST_MAX_ELEM);
    c->host_max[FAM_SCAN] = settings_count(SET_CUDA_HOST_MAX_SCAN, tiered ? 0 : CUDA_HOST_MAX_SCAN);
    c->host_max[FAM_LIB] = settings_count(SET_CUDA_HOST_MAX_LIB, tiered ? 0 : CUDA_HOST_MAX_LIB);
    /* NVRTC on a GPU machine; the emulated device's C++ compiler pays for
     * the prelude again in every part and runs one at a time: one part */
    c->part_bytes = (size_t)settings_count(SET_CUDA_PART_BYTES,
                                           strcmp(dev->kind, "cuda") == 0 ? CUDA_PART_BYTES : (int64_t)1 << 40);
    c->strategy = settings_choice(SET_CUDA_STRATEGY, 0); /* the order of st_name */
    /* NVRTC's choice: staged by default; the emulated device compiles in
     * full unless the setting is given (its -O0 saves little, and the
     * tests that stage ask for it) */
    c->opt = settings_given(SET_NVRTC_OPT) ? settings_choice(SET_NVRTC_OPT, 0)
             : strcmp(dev->kind, "cuda") == 0 ? OPT_STAGED
                                              : OPT_FULL;
    if (tiered && c->opt == OPT_STAGED) {
        c->base.staged = 1;
        c->base.refine = cuda_refine;
    }
    cg_set_plant_race((int)settings_count(SET_CG_PLANT_RACE, 0));
    wrap_lib(c);
    /* debug: every pointer a launch or a primitive receives checked against
     * the ledger of this run's device allocations */
    c->check_ptrs = settings_count(SET_CUDA_CHECK_PTRS, 0) == 1;
    /* (only where the check must refuse it) */
    c->plant_host_ptr = c->check_ptrs && settings_count(SET_TEST_CUDA_PLANT_HOST_PTR, 0) == 1;
    if (!compile_only_arch) {
        c->er_d = dalloc_fixed(c, 4 * sizeof *c->er_d);
        c->pair_d = dalloc_fixed(c, 2 * sizeof *c->pair_d);
        if (dev->memset0(dev, c->er_d, 4 * sizeof *c->er_d) != 0)
            dev_fail(c, "clearing the error record");
        current = c;
        val_set_device(&hooks);
        interp_set_timer_hook(timer_hook);
        /* the device tier: instructions on device vectors from the first
         * one ($VINTERP_DEVICE_TIER, cuda_tier.h) */
        if (settings_choice(SET_DEVICE_TIER, 0) == 1)
            c->tier = cuda_tier_new(c, settings_count(SET_DEVICE_MIN, DEVICE_MIN));
        /* the device ledger's own bound: $VINTERP_DEVICE_MEM, else nine
         * tenths of a GPU's memory (the rest: the primitives' scratch, the
         * pool's cache, the modules) */
        if (settings_given(SET_DEVICE_MEM))
            mem_dev_set_capacity(settings_count(SET_DEVICE_MEM, INT64_MAX));
        else if (dev->mem_bytes > 0)
            mem_dev_set_capacity(dev->mem_bytes / 10 * 9);
    }
    return &c->base;
}

/* runtime/fused/exec_cuda_state.h — the cuda executor's state and the
 * functions its three files give one another: exec_cuda.c (block runs:
 * the variable tables, the SOAC protocol, the executor's entry points),
 * exec_cuda_data.c (device memory and its -m ledger, copies and waits,
 * the value hooks, the timed primitives, the timed region) and
 * exec_cuda_build.c (units: generated, compiled, loaded). No other file
 * includes it; the device tier sees the executor through
 * exec_cuda_impl.h. */
#ifndef RUNTIME_FUSED_EXEC_CUDA_STATE_H
#define RUNTIME_FUSED_EXEC_CUDA_STATE_H

#include "runtime/fused/exec_cuda.h"
#include "runtime/fused/exec_cuda_impl.h"
#include "runtime/device/cuda_dev.h"
#include "runtime/fused/executor.h"
#include "translate/cg_unit.h"
#include "translate/codegen.h"
#include "translate/codegen_abi.h"
#include "runtime/fused/lcu_eval.h"
#include "runtime/interp/interp.h"

#include <stdio.h>

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

/* How a reduction, scan or filter runs: the fused skeletons chosen by
 * size (auto), or forced ($VINTERP_CUDA_STRATEGY, for tests and tuning):
 * lib = the general path (element values to a temporary, then the
 * primitive; a filter's flags, their scan by the primitive, the scatter);
 * thread, warp, block = that group per segment for SEG_REDUCE and
 * SEG_SCAN. */
enum { ST_AUTO, ST_LIB, ST_THREAD, ST_WARP, ST_BLOCK };
enum {
    RUN_LIB, RUN_RED, RUN_SCAN, RUN_SRED1, RUN_SREDW, RUN_SREDB, RUN_SSCAN1, RUN_SSCANW, RUN_SSCANB, RUN_FLAGS,
    RUN_FILTER, NRUN
};

/* $VINTERP_NVRTC_OPT: every compile full, every compile quick, or staged
 * (the tiers' first compile of a block quick, then the full one in the
 * background, swapped in when ready: backend_tier.c). */
enum { OPT_FULL, OPT_FAST, OPT_STAGED };

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
    /* WALL: the host's clock; DSECS: the device's own seconds as the
     * host saw them (kernels, copies; the emulated device's work runs on
     * the host), so that WALL - DSECS is the host's own work */
    struct Tally { int64_t launches, syncs, h2d, d2h, dbytes, dops; double ksecs, wall, dsecs; } t_start, t_region;
    int64_t dops;               /* copies and clears on the device (the model prices each as a launch) */
    int64_t lib_kernels, lib_copies; /* what the primitives queued (kernels/vk_count.h) */
    int64_t kbytes;             /* the model's bytes of the generated kernels' SOACs (soac_bytes) */
    int regions;
    double t_made;              /* the host's clock when the executor was made */
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

/* ---- exec_cuda_data.c ---------------------------------------------------------- */

/* The executor the value hooks and the program's timer serve (one per
 * process): attached once its device is open, detached when it closes. */
void cx_attach(CudaExec *c);
void cx_detach(void);
/* A copy or a clear on the device, counted for the model: the device's
 * status (cx_d2d and cx_memset0 fail instead). */
int cx_d2d_rc(CudaExec *c, void *dst, const void *src, size_t bytes);
int cx_memset0_rc(CudaExec *c, void *dst, size_t bytes);
/* A device call failed: fatal, naming the last kernel launched. */
void cx_dev_fail(CudaExec *c, const char *what);
/* A value's element size on the device (8 for a Float, else 4). */
size_t cx_esize(const Value *v);
/* The pointer check ($VINTERP_CUDA_CHECK_PTRS): P one of the run's
 * device allocations; a refused pointer (fatal). */
int cx_in_ledger(const CudaExec *c, const void *p);
void cx_ptr_refused(CudaExec *c, const char *who, const char *what, const void *p);
/* The kernels' time: a mark opened (BEGIN) or closed around launches
 * (KIND 0) or primitive calls (1); the seconds of each kind so far. */
void cx_kmark(CudaExec *c, int begin, int kind);
double cx_kernel_seconds(CudaExec *c, int kind);
/* The counters now; their modelled seconds; their -d stats line. */
struct Tally cx_tally(CudaExec *c);
double cx_model_seconds(const struct Tally *t);
void cx_print_tally(FILE *f, const char *what, const struct Tally *t);
/* c->lib: the device's primitives, timed and their pointers checked. */
void cx_wrap_lib(CudaExec *c);
/* V's new device copy record (no memory yet). */
DevCopy *cx_new_copy(Value *v);
/* The error record read (a block run's, or the tier's pending checks). */
void cx_check_errors(CudaExec *c);
/* The host waited for the device inside a block run (a sync point: the
 * next upload of the tables costs no wait of its own). */
void cx_note_sync_point(CudaExec *c);

/* ---- exec_cuda_build.c: Executor.prepare, .build and .refine ------------------- */

int cuda_prepare(Executor *x, const Program *p, int nblocks, BlockPlan *const *plans, int fast, char *msg,
                 size_t msglen);
int cuda_build(Executor *x, int nblocks, BlockPlan *const *plans, JitBuildStats *st, char *msg, size_t msglen);
int cuda_refine(Executor *x, int nblocks, BlockPlan *const *plans, char *msg, size_t msglen);

#endif

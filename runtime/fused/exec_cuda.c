/* runtime/fused/exec_cuda.c — the cuda executor (see exec_cuda.h).
 *
 * prepare (exec_cuda_build.c): every kernel of every planned block is
 * generated as CUDA (translate/cg_cuda.c) into one unit, compiled once
 * (NVRTC, or host C++ on the emulated device) through the cache, and
 * loaded.
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
 * Its state and the functions its three files share: exec_cuda_state.h;
 * device memory, copies, the value hooks and the timed region:
 * exec_cuda_data.c; generating, compiling and loading units:
 * exec_cuda_build.c. */
#include "runtime/fused/exec_cuda_state.h"
#include "runtime/fused/cuda_chain.h"
#include "kernels/vk_count.h"
#include "runtime/core/clock.h"
#include "runtime/core/errors.h"
#include "runtime/fused/exec_cpu.h"
#include "runtime/fused/kernel_fail.h"
#include "runtime/core/rand.h"
#include "runtime/core/settings.h"
#include "runtime/core/trace.h"
#include "runtime/fused/tuning.h"
#include "kernels/rand_jump.h"

#include <stdlib.h>
#include <string.h>

static const char *const st_name[] = { "auto", "lib", "thread", "warp", "block" };
static const char *const run_name[NRUN] = {
    "values + primitive",    "fused block reduce",     "fused block scan",
    "thread per segment",    "warp per segment",       "block per segment",
    "thread-per-segment scan", "warp-per-segment scan", "block-per-segment scan",
    "filters by flags + primitive scan", "fused filters"
};
static const char *const fam_name[NFAM] = { "elementwise", "scan", "lib" };

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
            v = val_new_remote(t->kind == LV_SEGDES ? VT_SEGDES : lcu_val_type(t), len);
        dc = cx_new_copy(v);
        dc->d = cx_dalloc(c, (size_t)len * cx_esize(v));
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
    DevCopy *dc = cx_on_device(c, v);
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
        cx_dev_fail(c, "uploading the variable table");
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
            if (q[i] && !cx_in_ledger(c, q[i])) {
                snprintf(what, sizeof what, "V[%d].%s, %lld elements", v, part[i], (long long)a->len);
                c->last_bp = c->cur_bp;
                c->last_block = c->cur_block;
                c->last_unique = c->cur_unique;
                c->last_soac = c->cur_soac;
                cx_ptr_refused(c, "a kernel launch", what, q[i]);
            }
    }
    const void *x[4] = { c->dv, c->er_slot ? (const void *)c->er_slot : c->er_d, nargs > 3 ? p3 : NULL,
                         nargs > 4 ? p4 : NULL };
    static const char *const xn[4] = { "its variable table", "the error record", "argument 4", "argument 5" };
    for (int i = 0; i < 4; i++)
        if (x[i] && !cx_in_ledger(c, x[i]))
            cx_ptr_refused(c, "a kernel launch", xn[i], x[i]);
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
    cx_kmark(c, 1, 0);
    int rc = c->dev->launch(c->dev, fn, grid, sync, nargs, args);
    cx_kmark(c, 0, 0);
    if (rc != 0)
        cx_dev_fail(c, "a kernel launch");
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
            cx_dfree(c, sp->p[r]);
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
            sp->p[r] = cx_dalloc_fixed(c, grid * 8); /* per block, not per element */
            sp->own[r] = 1;
            sp->nt = r + 1;
        }
    } else if (how == RUN_LIB) {
        for (int r = 0; r < nr; r++) {
            if (red) {
                size_t es = lcu_val_type(&c->types[s->res[r]]) == VT_FLOAT ? 8 : 4;
                sp->p[r] = cx_dalloc(c, (size_t)(n ? n : 1) * es);
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
            cx_lib_fail(c, how == RUN_RED ? "a reduction of block partials" : "a scan of block partials");
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
    int32_t *w = cx_dalloc(c, (size_t)(nd ? nd : 1) * 4);
    if (nd && cx_memset0_rc(c, w, (size_t)nd * 4) != 0)
        cx_dev_fail(c, "clearing a permute's claims");
    launch(c, claim, n, 4, w, NULL);
    launch(c, perm, n, 4, w, NULL);
    cx_dfree(c, w);
}

/* OUT = the exclusive scan of the N (> 0) counts IN (device); returns
 * their total. */
static int64_t scan_count(CudaExec *c, const int32_t *in, int64_t n, int32_t *out, const char *what)
{
    if (c->lib.scan(VS_IADD, in, n, out) != 0)
        cx_lib_fail(c, what);
    c->lib_calls++;
    /* the last scanned and the last count side by side, read in one copy */
    int32_t last[2];
    if (cx_d2d_rc(c, c->pair_d, out + n - 1, 4) != 0 || cx_d2d_rc(c, c->pair_d + 1, in + n - 1, 4) != 0)
        cx_dev_fail(c, "a copy on the device");
    cx_d2h(c, last, c->pair_d, sizeof last);
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
    int32_t *cnt = cx_dalloc_fixed(c, (size_t)grid * 4), *off = cx_dalloc_fixed(c, (size_t)grid * 4);
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
        cx_h2d(c, dc->d, &len1, 4);
        dc->off = cx_dalloc_fixed(c, sizeof off1); /* one segment: not charged, as on the host */
        cx_h2d(c, dc->off, &off1, sizeof off1);
        ns->n = count;
        ns->sane = 1;
        c->hv[nv].n = count;
        c->hv[nv].off = dc->off;
    }
    upload_table(c);
    if (n > 0)
        launch_grid(c, e[EP_FPACK], grid, 1, n, 4, off, NULL);
    cx_dfree(c, cnt);
    cx_dfree(c, off);
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
            cx_lib_fail(c, red ? "a reduction" : "a scan");
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
            cx_lib_fail(c, "counting a filter's segments");
        dc->off = m > 1 ? cx_dalloc(c, (size_t)m * sizeof(int64_t)) : cx_dalloc_fixed(c, sizeof(int64_t));
        int64_t total = 0;
        cx_check_errors(c);
        if (c->lib.seg_offsets(dc->d, m, dc->off, &total) != 0)
            cx_lib_fail(c, "the offsets of a filter's segments");
        c->lib_calls += 2;
        cx_note_sync_point(c); /* the total came back */
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
    int32_t *f = cx_dalloc(c, (size_t)(n ? n : 1) * 4), *p = cx_dalloc(c, (size_t)(n ? n : 1) * 4);
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
    cx_dfree(c, f);
    cx_dfree(c, p);
}

/* SEG_PERMUTE: results of the destination descriptor's length, from their
 * defaults or zero, then the permute's passes. */
static void run_seg_permute(CudaExec *c, Entry *e, const LcuSoac *s)
{
    int ssd = s->shape.var, dsd = s->dst_sd;
    int64_t nd = c->hv[dsd].n, n = c->hv[ssd].n;
    for (int r = 0; r < s->nres; r++) {
        Value *v = result(c, s->res[r], nd);
        size_t bytes = (size_t)nd * cx_esize(v);
        if (s->dflt[r] >= 0) {
            const vk_arr *d = &c->hv[s->dflt[r]];
            if (d->len != nd)
                kernel_fail(VKF_DFLTLEN, nd, d->len, 0);
            if (bytes && cx_d2d_rc(c, c->hv[s->res[r]].d, d->d, bytes) != 0)
                cx_dev_fail(c, "copying a default");
        } else if (bytes && cx_memset0_rc(c, c->hv[s->res[r]].d, bytes) != 0) {
            cx_dev_fail(c, "clearing a result");
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
            cx_check_errors(c);
            if (c->lib.rand(st->ring, st->k, n, c->hv[res].d) != 0)
                cx_lib_fail(c, "RAND");
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
            cx_lib_fail(c, "RANK");
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
            if (s->kind == LS_PERMUTE && cx_memset0_rc(c, c->hv[s->res[r]].d, (size_t)n * cx_esize(v)))
                cx_dev_fail(c, "clearing a result");
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
            cx_dfree(c, c->dimg);
        c->dimg = cx_dalloc_fixed(c, c->icap * sizeof *c->img);
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
    cx_check_errors((CudaExec *)x);
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
            cx_print_tally(f, "timed region", &c->t_region);
        struct Tally all = cx_tally(c);
        cx_print_tally(f, "whole run", &all);
        if (c->tier) {
            cuda_tier_report(c->tier, f);
            fprintf(f, "stats: model: ");
            if (c->regions)
                fprintf(f, "timed region %.6f s, ", cx_model_seconds(&c->t_region));
            fprintf(f, "whole run %.6f s (%.0f us a launch and a copy or clear on the device, of which %lld in the "
                       "timed region and %lld in the run, %.0f us a wait, %.0f GB/s host to device and back, %.0f GB/s "
                       "of device memory for %lld bytes the device tier's primitives and the generated kernels read and wrote)\n",
                    cx_model_seconds(&all), MODEL_LAUNCH_S * 1e6, (long long)c->t_region.dops, (long long)all.dops,
                    MODEL_WAIT_S * 1e6, MODEL_BUS_BPS / 1e9, MODEL_HBM_BPS / 1e9, (long long)all.dbytes);
            if (strcmp(c->dev->kind, "cuda") != 0) {
                /* what the model leaves out: the host's own work (the
                 * interpreter, the tier, the calls), on this machine */
                fprintf(f, "stats: model: the host's own work beside it (this machine's wall time less the emulated "
                           "device's kernels and copies): ");
                if (c->regions)
                    fprintf(f, "timed region %.6f s, ", c->t_region.wall - c->t_region.dsecs);
                fprintf(f, "whole run %.6f s\n", all.wall - c->t_made - all.dsecs);
            }
        }
        fprintf(f, "stats: cuda: where the time went: kernels %.6f s (%s: generated %.6f s in %lld launches, primitives "
                   "%.6f s in %lld calls); module loads and compiles %.6f s; allocations %.6f s (%lld); copies to the "
                   "device %.6f s; reads back, each a wait for the device, %.6f s\n",
                all.ksecs, c->dev->kernel_seconds ? "events around each" : "host-timed calls", cx_kernel_seconds(c, 0),
                (long long)c->launches, cx_kernel_seconds(c, 1), (long long)c->lib_calls, c->load_seconds,
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
            cx_dfree(c, c->dimg);
        if (c->er_d)
            cx_dfree(c, c->er_d);
        if (c->pair_d)
            cx_dfree(c, c->pair_d);
        if (c->wait_d)
            cx_dfree(c, c->wait_d);
    }
    free(c->preps);
    c->inner->free(c->inner);
    free(c->allocs);
    /* the device goes here: values freed after this drop only their records */
    cx_detach();
    if (c->dev)
        c->dev->close(c->dev);
    free(c);
}

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
    c->t_made = rt_seconds();
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
    /* a unit's parts (exec_cuda_build.c unit_parts): at most
     * CUDA_PART_BYTES of kernel text each for NVRTC on a GPU machine
     * (tuning.h has the measurement); the emulated device's C++ compiler
     * pays for the prelude again in every part and runs one at a time:
     * one part */
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
    cx_wrap_lib(c);
    /* debug: every pointer a launch or a primitive receives checked against
     * the ledger of this run's device allocations */
    c->check_ptrs = settings_count(SET_CUDA_CHECK_PTRS, 0) == 1;
    /* (only where the check must refuse it) */
    c->plant_host_ptr = c->check_ptrs && settings_count(SET_TEST_CUDA_PLANT_HOST_PTR, 0) == 1;
    if (!compile_only_arch) {
        c->er_d = cx_dalloc_fixed(c, 4 * sizeof *c->er_d);
        c->pair_d = cx_dalloc_fixed(c, 2 * sizeof *c->pair_d);
        if (dev->memset0(dev, c->er_d, 4 * sizeof *c->er_d) != 0)
            cx_dev_fail(c, "clearing the error record");
        cx_attach(c);
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

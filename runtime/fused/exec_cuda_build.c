/* runtime/fused/exec_cuda_build.c — the cuda executor's units
 * (exec_cuda_state.h): every kernel of every planned block generated as
 * CUDA (translate/cg_cuda.c) into one unit, split into parts, compiled
 * once (NVRTC, or host C++ on the emulated device) through the cache, and
 * loaded; each SOAC's entry points bound. Staged: a unit first compiled
 * fast, then again in full (refine). */
#include "runtime/fused/exec_cuda_state.h"
#include "runtime/core/clock.h"
#include "runtime/core/errors.h"
#include "runtime/core/settings.h"
#include "runtime/core/trace.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const ep_suffix[NEP] = { NULL,     NULL,     "red",    "scan3",  "sred1",  "sredw",
                                            "sredb",  "sscan1", "sscanw", "sscanb", "fcount", "fpack" };

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

/* Is a compile or load asked for the quick variant (FAST) to be one? */
static int stage_fast(const CudaExec *c, int fast)
{
    return c->opt == OPT_FAST ? 1 : c->opt == OPT_FULL ? 0 : fast;
}

int cuda_build(Executor *x, int nblocks, BlockPlan *const *plans, JitBuildStats *st, char *msg, size_t msglen)
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
int cuda_prepare(Executor *x, const Program *p, int nblocks, BlockPlan *const *plans, int fast, char *msg,
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
int cuda_refine(Executor *x, int nblocks, BlockPlan *const *plans, char *msg, size_t msglen)
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

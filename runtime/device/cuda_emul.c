/* runtime/device/cuda_emul.c — the emulated device (see cuda_dev.h): host
 * buffers for device memory, the generated CUDA compiled as host C++
 * through the kernel cache, launches run by runtime/device/emul_grid.c (every
 * thread of every block, as fibers at __syncthreads when the kernel has
 * barriers), and the primitives of runtime/device/emul_prims.c (or, for
 * tests, those of a library loaded by VINTERP_CUDA_EMULATE_PRIMS: the
 * library's own kernels built for the host, tests/kernels_host). */
#include "runtime/device/cuda_dev.h"
#include "runtime/core/settings.h"
#include "runtime/device/emul_grid.h"
#include "runtime/device/emul_prims.h"
#include "translate/codegen_abi.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* ---- the device ------------------------------------------------------------------ */

typedef struct {
    void *fn;
    EmuDims *dims;
    char name[64];      /* the entry point's name, for messages */
} EmFn;

typedef struct {
    void *h;
    EmuDims dims;
} EmMod;

typedef struct {
    CudaDev base;
    int shuffled;       /* VINTERP_CUDA_EMULATE_SHUFFLE: threads and blocks in a drawn order */
    long fault_at;      /* VINTERP_CUDA_EMULATE_FAULT: the launch that faults (0: none) */
    long nlaunch;
    int faulted;        /* sticky: every later call fails, as a GPU's after a fault */
    uint64_t shuffle;   /* the order generator's state */
    void *prims;        /* VINTERP_CUDA_EMULATE_PRIMS: the library of primitives loaded (NULL: emul_prims.c's) */
    JitOptions jo;
    JitStats js;
    EmMod **modules;
    int nmodules;
    EmFn **fns;
    int nfns;
    char err[320];
} EmulDev;

typedef void (*Fn3)(void *, void *, int64_t);
typedef void (*Fn4)(void *, void *, int64_t, void *);
typedef void (*Fn5)(void *, void *, int64_t, void *, void *);

/* A launch's entry point and arguments (as cuLaunchKernel takes them). */
typedef struct {
    void *fn;
    int nargs;
    void *const *a;
} Call;

static void call_entry(void *arg)
{
    const Call *c = arg;
    void *fn = c->fn;
    void *const *a = c->a;
    void *v = *(void *const *)a[0], *er = *(void *const *)a[1];
    int64_t cnt = *(const int64_t *)a[2];
    if (c->nargs == 3) {
        Fn3 f;
        memcpy(&f, &fn, sizeof f);
        f(v, er, cnt);
    } else if (c->nargs == 4) {
        Fn4 f;
        memcpy(&f, &fn, sizeof f);
        f(v, er, cnt, *(void *const *)a[3]);
    } else {
        Fn5 f;
        memcpy(&f, &fn, sizeof f);
        f(v, er, cnt, *(void *const *)a[3], *(void *const *)a[4]);
    }
}

/* A GPU's sticky fault (an illegal address, say): the launch itself
 * returns, every later call fails. */
static int sticky(EmulDev *e)
{
    if (!e->faulted)
        return 0;
    snprintf(e->err, sizeof e->err, "an illegal memory access was encountered (emulated: VINTERP_CUDA_EMULATE_FAULT)");
    return 1;
}

static int em_launch(CudaDev *d, void *fn, unsigned grid, int sync, int nargs, void **args)
{
    EmulDev *e = (EmulDev *)d;
    EmFn *ef = fn;
    if (sticky(e))
        return -1;
    if (++e->nlaunch == e->fault_at) {
        e->faulted = 1;
        return 0;
    }
    if (nargs < 3 || nargs > 5) {
        snprintf(e->err, sizeof e->err, "launch with %d arguments", nargs);
        return -1;
    }
    Call c = { ef->fn, nargs, args };
    EmuLaunch l = { grid, d->block, d->warp, sync, call_entry, &c, e->shuffled ? &e->shuffle : NULL };
    char why[200];
    if (emu_run_grid(ef->dims, &l, why, sizeof why) == 0)
        return 0;
    snprintf(e->err, sizeof e->err, "emulated kernel %s: %s", ef->name, why);
    return -1;
}

static void *em_alloc(CudaDev *d, size_t bytes)
{
    EmulDev *e = (EmulDev *)d;
    if (sticky(e))
        return NULL;
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        snprintf(e->err, sizeof e->err, "out of memory (host memory, for %zu bytes)", bytes);
    return p;
}

static void em_free(CudaDev *d, void *p)
{
    (void)d;
    free(p);
}

static int em_copy(CudaDev *d, void *dst, const void *src, size_t bytes)
{
    if (sticky((EmulDev *)d))
        return -1;
    if (bytes)
        memmove(dst, src, bytes);
    return 0;
}

static int em_copy_many(CudaDev *d, int n, void *const *dst, const void *const *src, const size_t *bytes)
{
    for (int i = 0; i < n; i++)
        if (em_copy(d, dst[i], src[i], bytes[i]) != 0)
            return -1;
    return 0;
}

static int em_memset0(CudaDev *d, void *dst, size_t bytes)
{
    if (sticky((EmulDev *)d))
        return -1;
    if (bytes)
        memset(dst, 0, bytes);
    return 0;
}

#define DIMSYM(field, sym)                                                           \
    do {                                                                             \
        void *s_ = dlsym(h, sym);                                                    \
        if (!s_) {                                                                   \
            snprintf(msg, msglen, "the emulated unit lacks %s", sym);               \
            dlclose(h);                                                              \
            free(m);                                                                 \
            return NULL;                                                             \
        }                                                                            \
        memcpy(&m->dims.field, &s_, sizeof s_);                                      \
    } while (0)

static void *em_load(CudaDev *d, const char *src, size_t len, char *msg, size_t msglen)
{
    EmulDev *e = (EmulDev *)d;
    char path[1200];
    void *h = jit_load(&e->jo, d->load_fast ? JIT_CXX_QUICK : JIT_CXX, src, len, &e->js, path, sizeof path, msg, msglen);
    if (!h)
        return NULL;
    snprintf(d->unit_path, sizeof d->unit_path, "%s", path);
    EmMod *m = calloc(1, sizeof *m);
    EmMod **ms = m ? realloc(e->modules, (size_t)(e->nmodules + 1) * sizeof *ms) : NULL;
    if (!ms) {
        dlclose(h);
        free(m);
        snprintf(msg, msglen, "out of host memory");
        return NULL;
    }
    e->modules = ms;
    m->h = h;
    DIMSYM(bidx, "vk_emu_bidx");
    DIMSYM(tidx, "vk_emu_tidx");
    DIMSYM(bdim, "vk_emu_bdim");
    DIMSYM(gdim, "vk_emu_gdim");
    DIMSYM(warp, "vk_emu_warp");
    DIMSYM(sync, "vk_emu_sync");
    DIMSYM(shmem, "vk_emu_shmem");
    const int *ub = (const int *)dlsym(h, "vk_unit_block");
    if (!ub || (unsigned)*ub < d->block) {
        snprintf(msg, msglen, "the emulated unit is written for blocks of %d threads, the device runs %u",
                 ub ? *ub : 0, d->block);
        dlclose(h);
        free(m);
        return NULL;
    }
    e->modules[e->nmodules++] = m;
    return m;
}

static int em_build(CudaDev *d, const char *src, size_t len, JitBuildStats *st, char *msg, size_t msglen)
{
    EmulDev *e = (EmulDev *)d;
    JitStats js;
    memset(&js, 0, sizeof js);
    int rc = jit_build(&e->jo, st->fast ? JIT_CXX_QUICK : JIT_CXX, src, len, &js, st->probe, NULL, 0, msg,
                       msglen);
    st->compiled += js.compiled;
    st->hits += js.hits;
    st->compile_seconds += js.compile_seconds;
    return rc;
}

static void *em_func(CudaDev *d, void *module, const char *name)
{
    EmulDev *e = (EmulDev *)d;
    EmMod *m = module;
    void *f = dlsym(m->h, name);
    if (!f)
        return NULL;
    EmFn *ef = malloc(sizeof *ef);
    EmFn **fs = ef ? realloc(e->fns, (size_t)(e->nfns + 1) * sizeof *fs) : NULL;
    if (!fs) {
        free(ef);
        return NULL;
    }
    e->fns = fs;
    ef->fn = f;
    ef->dims = &m->dims;
    snprintf(ef->name, sizeof ef->name, "%s", name);
    e->fns[e->nfns++] = ef;
    return ef;
}

static const char *em_error(CudaDev *d)
{
    return ((EmulDev *)d)->err;
}

static void em_report(CudaDev *d, FILE *f)
{
    EmulDev *e = (EmulDev *)d;
    fprintf(f, "stats: cuda: emulated device: %d units compiled, %d cache hits, %d entries rejected; compile %.6f s, "
               "load %.6f s; cache %s\n",
            e->js.compiled, e->js.hits, e->js.rejected, e->js.compile_seconds, e->js.load_seconds,
            e->js.dir[0] ? e->js.dir : "off");
}

static void em_close(CudaDev *d)
{
    EmulDev *e = (EmulDev *)d;
    for (int i = 0; i < e->nmodules; i++) {
        dlclose(e->modules[i]->h);
        free(e->modules[i]);
    }
    free(e->modules);
    for (int i = 0; i < e->nfns; i++)
        free(e->fns[i]);
    free(e->fns);
    emu_grid_free();
    if (e->prims)
        dlclose(e->prims);
    free(e);
}

/* The shape of the emulated device's launches. Threads per block:
 * $VINTERP_CUDA_EMULATE_BLOCK (a power of two up to 256), else 16, so that
 * the block- and warp-level code of the skeletons runs with several
 * threads, blocks and groups; warp groups $VINTERP_CUDA_EMULATE_WARP, else
 * a quarter of the block; blocks to fill the device
 * $VINTERP_CUDA_EMULATE_GRID, else 4. VINTERP_CUDA_EMULATE_SHAPE=real: a
 * GPU's shapes, blocks of 256 threads, warps of 32, 8 blocks (slower: for
 * samples). Blocks of 1 thread in builds with AddressSanitizer, which does
 * not follow the fibers' stacks. */
_Static_assert(VK_CUDA_BLOCK == 256, "VINTERP_CUDA_EMULATE_BLOCK's range in runtime/core/settings.h");

static void emul_shape(CudaDev *d)
{
    int real = settings_choice(SET_CUDA_EMULATE_SHAPE, 0) == 1; /* small|real */
#if defined(__SANITIZE_ADDRESS__)
    d->block = 1;
#else
    d->block = (unsigned)settings_count(SET_CUDA_EMULATE_BLOCK, real ? VK_CUDA_BLOCK : 16);
#endif
    unsigned w = (unsigned)settings_count(SET_CUDA_EMULATE_WARP, real ? 32 : d->block >= 4 ? d->block / 4 : 1);
    d->warp = w <= d->block ? w : d->block;
    d->max_grid = (unsigned)settings_count(SET_CUDA_EMULATE_GRID, real ? 8 : 4);
}

CudaDev *cuda_emul_open(const JitOptions *jo, char *why, size_t len)
{
    jit_init();
    if (!jit_have(JIT_CXX)) {
        snprintf(why, len, "the emulated device needs a C++ compiler ('%s' not found; set VINTERP_CXX)",
                 settings_text(SET_CXX) && *settings_text(SET_CXX) ? settings_text(SET_CXX) : "c++");
        return NULL;
    }
    EmulDev *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(why, len, "out of host memory");
        return NULL;
    }
    CudaDev *d = &e->base;
    e->jo = *jo;
    d->kind = "emulated";
    emul_shape(d);
    /* VINTERP_CUDA_EMULATE_SHUFFLE=SEED (not 0): blocks and threads run in
     * an order drawn from SEED */
    int64_t seed = settings_count(SET_CUDA_EMULATE_SHUFFLE, 0);
    if (seed != 0) {
        e->shuffled = 1;
        e->shuffle = (uint64_t)seed ^ 0x5eedULL;
    }
    /* VINTERP_CUDA_EMULATE_FAULT=N: the Nth launch faults (for tests of
     * the messages) */
    e->fault_at = (long)settings_count(SET_CUDA_EMULATE_FAULT, 0);
    /* VINTERP_CUDA_EMULATE_PRIMS=LIB: the primitives are LIB's, the
     * library's own kernels built for the host (tests/kernels_host) */
    const char *prims = settings_text(SET_CUDA_EMULATE_PRIMS);
    if (prims && *prims) {
        if (!(e->prims = dlopen(prims, RTLD_NOW | RTLD_LOCAL))) {
            snprintf(why, len, "VINTERP_CUDA_EMULATE_PRIMS: cannot load %s (%s)", prims, dlerror());
            free(e);
            return NULL;
        }
        if (vk_bind(e->prims, prims, &d->lib, why, len) < 0) {
            dlclose(e->prims);
            free(e);
            return NULL;
        }
    } else {
        emu_prims_bind(&d->lib);
    }
    snprintf(d->name, sizeof d->name, "emulated device (host C++, blocks of %u threads, warps of %u, %u blocks%s%s%s)",
             d->block, d->warp, d->max_grid, e->shuffled ? ", shuffled" : "",
             emu_grid_races() ? ", race detection" : "",
             e->prims ? "; the primitives: the library's kernels on the host" : "");
    snprintf(d->arch, sizeof d->arch, "host");
    d->alloc = em_alloc;
    d->free = em_free;
    d->h2d = em_copy;
    d->h2d_staged = em_copy;
    d->d2h = em_copy;
    d->d2h_many = em_copy_many;
    d->d2d = em_copy;
    d->memset0 = em_memset0;
    d->load = em_load;
    d->build = em_build;
    d->func = em_func;
    d->launch = em_launch;
    d->error = em_error;
    d->report = em_report;
    d->close = em_close;
    return d;
}

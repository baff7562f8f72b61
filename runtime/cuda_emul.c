/* runtime/cuda_emul.c — the emulated device (see cuda_dev.h): host
 * buffers for device memory, the generated CUDA compiled as host C++
 * through the kernel cache, launches that run every thread of every block
 * in turn (as fibers, switching at __syncthreads, when the kernel has
 * barriers), and host versions of the kernels.h primitives with
 * the reference's semantics (strictly left-to-right scans and reductions,
 * the rank of runtime/rank.c, the stream of runtime/rand.c). */
#include "runtime/cuda_dev.h"
#include "runtime/rand.h"
#include "runtime/rank.h"
#include "runtime/value.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

/* ---- the primitives ------------------------------------------------------------ */

#define FLOAT_BIG ((double)1.0e36f)

static int em_seg_offsets(const int32_t *len, int64_t m, int64_t *off, int64_t *n_host)
{
    int64_t acc = 0;
    for (int64_t k = 0; k < m; k++) {
        off[k] = acc;
        acc += len[k];
    }
    if (n_host)
        *n_host = acc;
    return 0;
}

/* Combine segment [s, s+l) of IN from the identity, strictly left to
 * right; SCAN writes the running value before each element. */
#define FOLD(T, ID, COMBINE)                                                  \
    do {                                                                      \
        const T *x = (const T *)in;                                           \
        T *o = (T *)out;                                                      \
        T acc = (ID);                                                         \
        for (int64_t i = 0; i < l; i++) {                                     \
            T v = x[s + i];                                                   \
            if (scan)                                                         \
                o[s + i] = acc;                                               \
            acc = (COMBINE);                                                  \
        }                                                                     \
        if (!scan)                                                            \
            o[at] = acc;                                                      \
    } while (0)

#define U32(v) ((uint32_t)(v))

static int fold(VkOp op, VkType ty, const void *in, int64_t s, int64_t l, void *out, int64_t at, int scan)
{
    if (ty == VK_FLOAT) {
        switch (op) {
        case VK_ADD: FOLD(double, 0.0, acc + v); return 0;
        case VK_MUL: FOLD(double, 1.0, acc * v); return 0;
        case VK_MAX: FOLD(double, -FLOAT_BIG, acc > v ? acc : v); return 0;
        case VK_MIN: FOLD(double, FLOAT_BIG, acc < v ? acc : v); return 0;
        default: return -1;
        }
    }
    if (ty == VK_INT) {
        switch (op) {
        case VK_ADD: FOLD(int32_t, 0, (int32_t)(U32(acc) + U32(v))); return 0;
        case VK_MUL: FOLD(int32_t, 1, (int32_t)(U32(acc) * U32(v))); return 0;
        case VK_MAX: FOLD(int32_t, INT32_MIN, acc > v ? acc : v); return 0;
        case VK_MIN: FOLD(int32_t, INT32_MAX, acc < v ? acc : v); return 0;
        case VK_AND: FOLD(int32_t, -1, acc & v); return 0;
        case VK_OR: FOLD(int32_t, 0, acc | v); return 0;
        case VK_XOR: FOLD(int32_t, 0, acc ^ v); return 0;
        }
        return -1;
    }
    switch (op) {
    case VK_AND: FOLD(int32_t, 1, acc && v); return 0;
    case VK_OR: FOLD(int32_t, 0, acc || v); return 0;
    case VK_XOR: FOLD(int32_t, 0, (acc != 0) != (v != 0)); return 0;
    default: return -1;
    }
}

static int em_reduce(VkOp op, VkType ty, const void *in, int64_t n, void *out)
{
    return fold(op, ty, in, 0, n > 0 ? n : 0, out, 0, 0);
}

static int em_scan(VkOp op, VkType ty, const void *in, int64_t n, void *out)
{
    return fold(op, ty, in, 0, n > 0 ? n : 0, out, 0, 1);
}

static int em_seg_reduce(VkOp op, VkType ty, const void *in, const int32_t *len, const int64_t *off, int64_t m,
                         int64_t n, void *out)
{
    (void)n;
    for (int64_t k = 0; k < m; k++)
        if (fold(op, ty, in, off[k], len[k] > 0 ? len[k] : 0, out, k, 0) != 0)
            return -1;
    return 0;
}

static int em_seg_scan(VkOp op, VkType ty, const void *in, const int32_t *len, const int64_t *off, int64_t m,
                       int64_t n, void *out)
{
    (void)n;
    for (int64_t k = 0; k < m; k++)
        if (fold(op, ty, in, off[k], len[k] > 0 ? len[k] : 0, out, 0, 1) != 0)
            return -1;
    return 0;
}

/* The reference's rank routine over borrowed buffers. */
static int em_seg_rank(int down, VkType ty, const void *keys, const int32_t *len, const int64_t *off, int64_t m,
                       int64_t n, int32_t *rank)
{
    (void)off;
    Value d, sd;
    memset(&d, 0, sizeof d);
    memset(&sd, 0, sizeof sd);
    d.rc = 1;
    d.type = ty == VK_FLOAT ? VT_FLOAT : VT_INT;
    d.len = n;
    d.data = (void *)keys;
    sd.rc = 1;
    sd.type = VT_SEGDES;
    sd.sane = 1;
    sd.len = m;
    sd.n = n;
    sd.data = (void *)len;
    rank_segments(&d, &sd, down, rank);
    free(sd.offs); /* the offsets rank_segments may have cached */
    return 0;
}

static int em_rand(const uint32_t ring[31], uint64_t k, int64_t n, int32_t *out)
{
    RandState st;
    memcpy(st.ring, ring, sizeof st.ring);
    st.k = k;
    rnd_fill(&st, out, n);
    return 0;
}

/* ---- launches: each block's threads in turn, as fibers at barriers ---------------- */

/* A unit's thread coordinates and barrier hook (the prelude defines them,
 * as extern "C" globals, in every unit compiled for the emulated device). */
typedef struct {
    unsigned *bidx, *tidx, *bdim, *gdim, *warp;
    void (**sync)(void);
} EmDims;

typedef struct {
    void *fn;
    EmDims *dims;
} EmFn;

typedef struct {
    void *h;
    EmDims dims;
} EmMod;

typedef struct {
    CudaDev base;
    JitOptions jo;
    JitStats js;
    EmMod **modules;
    int nmodules;
    EmFn **fns;
    int nfns;
    char err[256];
} EmulDev;

typedef void (*Fn3)(void *, void *, int64_t);
typedef void (*Fn4)(void *, void *, int64_t, void *);
typedef void (*Fn5)(void *, void *, int64_t, void *, void *);

static void call_entry(void *fn, int nargs, void *const *a)
{
    void *v = *(void *const *)a[0], *er = *(void *const *)a[1];
    int64_t cnt = *(const int64_t *)a[2];
    if (nargs == 3) {
        Fn3 f;
        memcpy(&f, &fn, sizeof f);
        f(v, er, cnt);
    } else if (nargs == 4) {
        Fn4 f;
        memcpy(&f, &fn, sizeof f);
        f(v, er, cnt, *(void *const *)a[3]);
    } else {
        Fn5 f;
        memcpy(&f, &fn, sizeof f);
        f(v, er, cnt, *(void *const *)a[3], *(void *const *)a[4]);
    }
}

/* The fibers of one block (one emulated device per process). A fiber runs
 * until it reaches __syncthreads (state F_BAR) or returns (F_DONE); the
 * scheduler resumes the waiting ones once all of them have arrived. Some
 * waiting while others have returned is a divergent barrier: a bug in the
 * generated code (undefined behaviour on a GPU), reported as a failed
 * launch. */
enum { F_READY, F_BAR, F_DONE };
#define FIBER_STACK (256 * 1024)

static struct {
    ucontext_t sched;
    ucontext_t *uc;
    char *stacks;
    int *state;
    unsigned n;
    unsigned cur;
    void *fn;
    int nargs;
    void *const *args;
    int misuse;         /* __syncthreads in a launch made without SYNC */
} fb;

static void fiber_main(void)
{
    call_entry(fb.fn, fb.nargs, fb.args);
    fb.state[fb.cur] = F_DONE;
}

static void fiber_sync(void)
{
    fb.state[fb.cur] = F_BAR;
    swapcontext(&fb.uc[fb.cur], &fb.sched);
}

static void no_sync(void) {}
static void bad_sync(void) { fb.misuse = 1; }

static int fibers_reserve(unsigned n)
{
    if (fb.n >= n)
        return 0;
    free(fb.uc);
    free(fb.stacks);
    free(fb.state);
    fb.uc = calloc(n, sizeof *fb.uc);
    fb.stacks = malloc((size_t)n * FIBER_STACK);
    fb.state = calloc(n, sizeof *fb.state);
    fb.n = fb.uc && fb.stacks && fb.state ? n : 0;
    return fb.n ? 0 : -1;
}

static void fibers_free(void)
{
    free(fb.uc);
    free(fb.stacks);
    free(fb.state);
    memset(&fb, 0, sizeof fb);
}

/* Fiber T, ready to start the kernel (its own function: getcontext may
 * return twice, which the caller's loop variables need not survive). */
static __attribute__((noinline)) int fiber_init(unsigned t)
{
    if (getcontext(&fb.uc[t]) != 0)
        return -1;
    fb.uc[t].uc_stack.ss_sp = fb.stacks + (size_t)t * FIBER_STACK;
    fb.uc[t].uc_stack.ss_size = FIBER_STACK;
    fb.uc[t].uc_link = &fb.sched;
    makecontext(&fb.uc[t], fiber_main, 0);
    fb.state[t] = F_READY;
    return 0;
}

/* One block of B threads with barriers; 0, or -1 on divergence. */
static int run_block_fibers(EmDims *dm, unsigned B)
{
    for (unsigned t = 0; t < B; t++)
        if (fiber_init(t) != 0)
            return -1;
    for (;;) {
        unsigned done = 0, bar = 0;
        for (unsigned t = 0; t < B; t++) {
            if (fb.state[t] == F_READY) {
                fb.cur = t;
                dm->tidx[0] = t;
                swapcontext(&fb.sched, &fb.uc[t]);
            }
            done += fb.state[t] == F_DONE;
            bar += fb.state[t] == F_BAR;
        }
        if (done == B)
            return 0;
        if (bar != B)
            return -1;
        for (unsigned t = 0; t < B; t++)
            fb.state[t] = F_READY;
    }
}

static int em_launch(CudaDev *d, void *fn, unsigned grid, int sync, int nargs, void **args)
{
    EmulDev *e = (EmulDev *)d;
    EmFn *ef = fn;
    EmDims *dm = ef->dims;
    unsigned B = d->block;
    if (nargs < 3 || nargs > 5) {
        snprintf(e->err, sizeof e->err, "launch with %d arguments", nargs);
        return -1;
    }
    if (grid < 1)
        grid = 1;
    int fibers = sync && B > 1;
    if (fibers && fibers_reserve(B) != 0) {
        snprintf(e->err, sizeof e->err, "out of host memory for %u fibers", B);
        return -1;
    }
    dm->gdim[0] = grid;
    dm->bdim[0] = B;
    dm->warp[0] = d->warp;
    dm->sync[0] = fibers ? fiber_sync : sync ? no_sync : bad_sync;
    fb.misuse = 0;
    fb.fn = ef->fn;
    fb.nargs = nargs;
    fb.args = args;
    for (unsigned b = 0; b < grid; b++) {
        dm->bidx[0] = b;
        if (fibers) {
            if (run_block_fibers(dm, B) != 0) {
                snprintf(e->err, sizeof e->err, "emulated block %u: threads diverged at __syncthreads", b);
                return -1;
            }
            continue;
        }
        for (unsigned t = 0; t < B; t++) {
            dm->tidx[0] = t;
            call_entry(ef->fn, nargs, args);
        }
    }
    if (fb.misuse) {
        snprintf(e->err, sizeof e->err, "a kernel launched without SYNC called __syncthreads");
        return -1;
    }
    return 0;
}

static void *em_alloc(CudaDev *d, size_t bytes)
{
    (void)d;
    return malloc(bytes ? bytes : 1);
}

static void em_free(CudaDev *d, void *p)
{
    (void)d;
    free(p);
}

static int em_copy(CudaDev *d, void *dst, const void *src, size_t bytes)
{
    (void)d;
    if (bytes)
        memmove(dst, src, bytes);
    return 0;
}

static int em_memset0(CudaDev *d, void *dst, size_t bytes)
{
    (void)d;
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
    void *h = jit_load(&e->jo, JIT_CXX, src, len, &e->js, path, sizeof path, msg, msglen);
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
    e->modules[e->nmodules++] = m;
    return m;
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
    fibers_free();
    free(e);
}

static const char *em_lib_error(void) { return "host primitive failed"; }

/* Threads per emulated block: $VINTERP_CUDA_EMULATE_BLOCK (a power of two
 * up to 256), else 16, so that the block- and warp-level code of the
 * skeletons runs with several threads, blocks and groups. 1 in builds
 * with AddressSanitizer, which does not follow the fibers' stacks. */
static unsigned emul_block(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#else
    const char *s = getenv("VINTERP_CUDA_EMULATE_BLOCK");
    if (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (!*end && v >= 1 && v <= 256 && (v & (v - 1)) == 0)
            return (unsigned)v;
    }
    return 16;
#endif
}

CudaDev *cuda_emul_open(const JitOptions *jo, char *why, size_t len)
{
    if (!jit_have(JIT_CXX)) {
        snprintf(why, len, "the emulated device needs a C++ compiler ('%s' not found; set VINTERP_CXX)",
                 getenv("VINTERP_CXX") && *getenv("VINTERP_CXX") ? getenv("VINTERP_CXX") : "c++");
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
    d->block = emul_block();
    d->warp = d->block >= 4 ? d->block / 4 : 1;
    d->max_grid = 4;
    snprintf(d->name, sizeof d->name, "emulated device (host C++, blocks of %u threads)", d->block);
    snprintf(d->arch, sizeof d->arch, "host");
    d->lib.seg_offsets = em_seg_offsets;
    d->lib.reduce = em_reduce;
    d->lib.scan = em_scan;
    d->lib.seg_reduce = em_seg_reduce;
    d->lib.seg_scan = em_seg_scan;
    d->lib.seg_rank = em_seg_rank;
    d->lib.rand = em_rand;
    d->lib.last_error = em_lib_error;
    d->alloc = em_alloc;
    d->free = em_free;
    d->h2d = em_copy;
    d->d2h = em_copy;
    d->d2d = em_copy;
    d->memset0 = em_memset0;
    d->load = em_load;
    d->func = em_func;
    d->launch = em_launch;
    d->error = em_error;
    d->report = em_report;
    d->close = em_close;
    return d;
}

/* runtime/cuda_emul.c — the emulated device (see cuda_dev.h): host
 * buffers for device memory, the generated CUDA compiled as host C++
 * through the kernel cache, launches as plain calls (one thread runs each
 * grid-stride loop), and host versions of the kernels.h primitives with
 * the reference's semantics (strictly left-to-right scans and reductions,
 * the rank of runtime/rank.c, the stream of runtime/rand.c). */
#include "runtime/cuda_dev.h"
#include "runtime/rand.h"
#include "runtime/rank.h"
#include "runtime/value.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

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

typedef struct {
    CudaDev base;
    JitOptions jo;
    JitStats js;
    void **modules;
    int nmodules;
    char err[256];
} EmulDev;

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

static void *em_load(CudaDev *d, const char *src, size_t len, char *msg, size_t msglen)
{
    EmulDev *e = (EmulDev *)d;
    char path[1200];
    void *h = jit_load(&e->jo, JIT_CXX, src, len, &e->js, path, sizeof path, msg, msglen);
    if (!h)
        return NULL;
    void **m = realloc(e->modules, (size_t)(e->nmodules + 1) * sizeof *m);
    if (!m) {
        dlclose(h);
        snprintf(msg, msglen, "out of host memory");
        return NULL;
    }
    e->modules = m;
    e->modules[e->nmodules++] = h;
    return h;
}

static void *em_func(CudaDev *d, void *module, const char *name)
{
    (void)d;
    return dlsym(module, name);
}

typedef void (*Fn3)(void *, void *, int64_t);
typedef void (*Fn4)(void *, void *, int64_t, void *);
typedef void (*Fn5)(void *, void *, int64_t, void *, void *);

static int em_launch(CudaDev *d, void *fn, int64_t n, int nargs, void **args)
{
    EmulDev *e = (EmulDev *)d;
    (void)n; /* the entry point's own loop covers n (args[2]) */
    void *v = *(void **)args[0], *er = *(void **)args[1];
    int64_t cnt = *(int64_t *)args[2];
    switch (nargs) {
    case 3: { Fn3 f; memcpy(&f, &fn, sizeof f); f(v, er, cnt); return 0; }
    case 4: { Fn4 f; memcpy(&f, &fn, sizeof f); f(v, er, cnt, *(void **)args[3]); return 0; }
    case 5: {
        Fn5 f;
        memcpy(&f, &fn, sizeof f);
        f(v, er, cnt, *(void **)args[3], *(void **)args[4]);
        return 0;
    }
    default:
        snprintf(e->err, sizeof e->err, "launch with %d arguments", nargs);
        return -1;
    }
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
    for (int i = 0; i < e->nmodules; i++)
        dlclose(e->modules[i]);
    free(e->modules);
    free(e);
}

static const char *em_lib_error(void) { return "host primitive failed"; }

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
    snprintf(d->name, sizeof d->name, "emulated device (host C++, one thread)");
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

/* runtime/device/cuda_real.c — the real device (see cuda_dev.h): the CUDA driver
 * API (libcuda.so.1) for modules and launches, NVRTC (libnvrtc) to compile
 * the generated CUDA to a cubin for the device's exact sm_XX, and
 * libvkernels.so (kernels/kernels.h: memory pool, copies, primitives). All
 * three are loaded with dlopen, so the binary runs where they are absent.
 *
 * libvkernels.so uses the CUDA runtime (linked statically into it), which
 * works in the device's primary context; the driver side retains that
 * same context, so device pointers pass freely between the two, and both
 * queue on the legacy default stream, in call order.
 *
 * Cubins are cached like the C units (runtime/jit/jit.h): DIR/KEY.cubin, KEY a
 * hash of the source, the architecture, the NVRTC version, the options,
 * the project and ABI versions. The unit defines vk_unit_key (a __device__
 * string); a cached cubin that does not load or holds another key is
 * recompiled, never trusted. */
#define _GNU_SOURCE
#include "runtime/device/cuda_dev.h"
#include "runtime/core/clock.h"
#include "runtime/core/settings.h"
#include "runtime/core/version.h"
#include "translate/codegen_abi.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef int nvrtcResult;
typedef void *nvrtcProgram;

#define CU_ATTR_MULTIPROCESSOR_COUNT 16
#define CU_ATTR_CC_MAJOR 75
#define CU_ATTR_CC_MINOR 76

typedef struct {
    void *h;
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(int *, int);
    CUresult (*DeviceGetName)(char *, int, int);
    CUresult (*DeviceTotalMem)(size_t *, int); /* optional: NULL when the driver lacks it */
    CUresult (*DeviceGetAttribute)(int *, int, int);
    CUresult (*DevicePrimaryCtxRetain)(void **, int);
    CUresult (*CtxSetCurrent)(void *);
    CUresult (*ModuleLoadData)(void **, const void *);
    CUresult (*ModuleUnload)(void *);
    CUresult (*ModuleGetFunction)(void **, void *, const char *);
    CUresult (*ModuleGetGlobal)(CUdeviceptr *, size_t *, void *, const char *);
    CUresult (*LaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                             void **, void **);
    CUresult (*GetErrorString)(CUresult, const char **);
    /* events, for the kernels' time (rd_mark); optional */
    CUresult (*EventCreate)(void **, unsigned);
    CUresult (*EventRecord)(void *, void *);
    CUresult (*EventSynchronize)(void *);
    CUresult (*EventElapsedTime)(float *, void *, void *);
    CUresult (*EventDestroy)(void *);
    CUresult (*EventQuery)(void *); /* optional: without it a full pool is waited for */
} Driver;

typedef struct {
    void *a, *b;
    int kind;
} EvPair;

typedef struct {
    void *h;
    nvrtcResult (*Version)(int *, int *);
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                                 const char *const *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    const char *(*GetErrorString)(nvrtcResult);
} Nvrtc;

typedef struct {
    void *h;
    int (*device_count)(void);
    int (*init)(int);
    const char *(*device_name)(void);
    const char *(*last_error)(void);
    void *(*alloc)(size_t);
    void (*free)(void *);
    int (*h2d)(void *, const void *, size_t);
    int (*h2d_staged)(void *, const void *, size_t);
    int (*d2h)(void *, const void *, size_t);
    int (*d2h_many)(int, void *const *, const void *const *, const size_t *);
    int (*d2d)(void *, const void *, size_t);
    int (*memset0)(void *, size_t);
    void (*pool_stats)(size_t *, size_t *);
} Kern;

typedef struct {
    CudaDev base;
    Driver cu;
    Nvrtc rtc;
    Kern vk;
    JitOptions jo;
    int compile_only;
    int sms;
    void **modules;
    int nmodules;
    int compiled, hits, rejected;
    double compile_seconds, load_seconds;
    double *unit_secs;      /* NVRTC's seconds per unit compiled (for -d stats) */
    size_t *unit_bytes;
    int nunit_secs, unit_secs_cap;
    int threads_max;        /* the most NVRTC compiles at once */
    /* the kernels' time: event pairs around launches and primitive calls
     * on the default stream (rd_mark), a ring of EVCAP pairs of which the
     * NEV from EVHEAD are recorded and not summed yet; summed when done
     * (ev_harvest) or when the time is read. Recorded only when the run
     * reports that time (the executor's time_kernels: exec_cuda_data.c
     * cx_kmark): each event is a driver call. */
    EvPair *ev;
    int evhead, nev, evcap, ev_open;
    double ev_secs[2];
    int64_t ev_pairs, ev_waits; /* pairs recorded; waits for a full ring (-d stats) */
    char cache[1024];
    char err[512];
} RealDev;

#define SYM(lib, field, name)                                                                            \
    do {                                                                                                 \
        void *s_ = dlsym((lib)->h, name);                                                                \
        if (!s_) {                                                                                       \
            snprintf(why, len, "%s lacks %s", libname, name);                                            \
            return -1;                                                                                   \
        }                                                                                                \
        memcpy(&(lib)->field, &s_, sizeof s_);                                                           \
    } while (0)

static void *open_first(const char *const *names, char *which, size_t wlen)
{
    for (int i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            snprintf(which, wlen, "%s", names[i]);
            return h;
        }
    }
    return NULL;
}

static int load_driver(Driver *d, char *why, size_t len)
{
    static const char *const names[] = { "libcuda.so.1", "libcuda.so", NULL };
    char libname[256];
    const char *test = settings_text(SET_TEST_CUDA_DRIVER); /* the host standing in for a GPU (tests) */
    const char *const tnames[] = { test, NULL };
    if (!(d->h = open_first(test && *test ? tnames : names, libname, sizeof libname))) {
        snprintf(why, len, "no CUDA driver (libcuda.so.1 not found)");
        return -1;
    }
    SYM(d, Init, "cuInit");
    SYM(d, DeviceGetCount, "cuDeviceGetCount");
    SYM(d, DeviceGet, "cuDeviceGet");
    SYM(d, DeviceGetName, "cuDeviceGetName");
    SYM(d, DeviceGetAttribute, "cuDeviceGetAttribute");
    {
        void *s = dlsym(d->h, "cuDeviceTotalMem_v2");
        memcpy(&d->DeviceTotalMem, &s, sizeof s);
    }
    SYM(d, DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    SYM(d, CtxSetCurrent, "cuCtxSetCurrent");
    SYM(d, ModuleLoadData, "cuModuleLoadData");
    SYM(d, ModuleUnload, "cuModuleUnload");
    SYM(d, ModuleGetFunction, "cuModuleGetFunction");
    SYM(d, ModuleGetGlobal, "cuModuleGetGlobal_v2");
    SYM(d, LaunchKernel, "cuLaunchKernel");
    SYM(d, GetErrorString, "cuGetErrorString");
    /* events: without them the kernels' time is not measured */
    static const char *const ev[6] = { "cuEventCreate",     "cuEventRecord",     "cuEventSynchronize",
                                       "cuEventElapsedTime", "cuEventDestroy_v2", "cuEventQuery" };
    void **slots[6] = { (void **)&d->EventCreate,      (void **)&d->EventRecord,  (void **)&d->EventSynchronize,
                        (void **)&d->EventElapsedTime, (void **)&d->EventDestroy, (void **)&d->EventQuery };
    for (int i = 0; i < 6; i++) {
        void *f = dlsym(d->h, ev[i]);
        memcpy(slots[i], &f, sizeof f);
    }
    return 0;
}

static int load_nvrtc(Nvrtc *r, char *why, size_t len)
{
    static const char *const names[] = { "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                          "/usr/local/cuda/lib64/libnvrtc.so", NULL };
    char libname[256];
    const char *env = settings_text(SET_NVRTC);
    if (env && *env) {
        snprintf(libname, sizeof libname, "%s", env);
        r->h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    } else {
        r->h = open_first(names, libname, sizeof libname);
    }
    if (!r->h) {
        snprintf(why, len, "no NVRTC (libnvrtc.so not found; set VINTERP_NVRTC to its path)");
        return -1;
    }
    SYM(r, Version, "nvrtcVersion");
    SYM(r, CreateProgram, "nvrtcCreateProgram");
    SYM(r, CompileProgram, "nvrtcCompileProgram");
    SYM(r, GetProgramLogSize, "nvrtcGetProgramLogSize");
    SYM(r, GetProgramLog, "nvrtcGetProgramLog");
    SYM(r, GetCUBINSize, "nvrtcGetCUBINSize");
    SYM(r, GetCUBIN, "nvrtcGetCUBIN");
    SYM(r, DestroyProgram, "nvrtcDestroyProgram");
    SYM(r, GetErrorString, "nvrtcGetErrorString");
    return 0;
}

/* libvkernels.so: $VINTERP_KERNELS_LIB, else beside the executable. */
static int load_kernels(Kern *k, char *why, size_t len)
{
    char libname[1200];
    const char *env = settings_text(SET_KERNELS_LIB);
    if (env && *env) {
        snprintf(libname, sizeof libname, "%s", env);
    } else {
        char exe[1024];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0) {
            snprintf(why, len, "cannot find the executable's directory for libvkernels.so");
            return -1;
        }
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        snprintf(libname, sizeof libname, "%s/libvkernels.so", exe);
    }
    if (!(k->h = dlopen(libname, RTLD_NOW | RTLD_LOCAL))) {
        snprintf(why, len, "no GPU primitives: %s does not load (build it with nvcc: make; or set "
                           "VINTERP_KERNELS_LIB)", libname);
        return -1;
    }
    SYM(k, device_count, "vk_device_count");
    SYM(k, init, "vk_init");
    SYM(k, device_name, "vk_device_name");
    SYM(k, last_error, "vk_last_error");
    SYM(k, alloc, "vk_alloc");
    SYM(k, free, "vk_free");
    SYM(k, h2d, "vk_memcpy_h2d");
    SYM(k, h2d_staged, "vk_memcpy_h2d_staged");
    SYM(k, d2h, "vk_memcpy_d2h");
    SYM(k, d2h_many, "vk_memcpy_d2h_many");
    SYM(k, d2d, "vk_memcpy_d2d");
    SYM(k, memset0, "vk_memset0");
    SYM(k, pool_stats, "vk_pool_stats");
    return 0;
}

/* ---- memory and launches ----------------------------------------------------- */

static void *rd_alloc(CudaDev *d, size_t bytes) { return ((RealDev *)d)->vk.alloc(bytes); }
static void rd_free(CudaDev *d, void *p) { ((RealDev *)d)->vk.free(p); }
static int rd_h2d(CudaDev *d, void *dst, const void *src, size_t n) { return ((RealDev *)d)->vk.h2d(dst, src, n); }
static int rd_d2h(CudaDev *d, void *dst, const void *src, size_t n) { return ((RealDev *)d)->vk.d2h(dst, src, n); }
static int rd_d2h_many(CudaDev *d, int n, void *const *dst, const void *const *src, const size_t *bytes)
{
    return ((RealDev *)d)->vk.d2h_many(n, dst, src, bytes);
}
static int rd_h2d_staged(CudaDev *d, void *dst, const void *src, size_t n)
{
    return ((RealDev *)d)->vk.h2d_staged(dst, src, n);
}
static int rd_d2d(CudaDev *d, void *dst, const void *src, size_t n) { return ((RealDev *)d)->vk.d2d(dst, src, n); }
static int rd_memset0(CudaDev *d, void *dst, size_t n) { return ((RealDev *)d)->vk.memset0(dst, n); }

/* The ring of event pairs grows from EV_FIRST pairs to at most
 * $VINTERP_CUDA_EVENTS_MAX (65536); past it a full ring is waited for.
 * The launches the host runs ahead of the device (the driver queues about
 * a thousand) fit well below. */
#define EV_FIRST 1024

/* The recorded pairs summed, from the oldest: every one (WAIT: the host
 * waits for the last), or those done (none waited for: cuEventQuery). */
static void ev_harvest(RealDev *r, int wait)
{
    if (wait && r->nev > 0)
        r->cu.EventSynchronize(r->ev[(r->evhead + r->nev - 1) % r->evcap].b);
    while (r->nev > 0) {
        EvPair *p = &r->ev[r->evhead];
        if (!wait && (!r->cu.EventQuery || r->cu.EventQuery(p->b) != 0))
            break;
        float ms = 0;
        if (r->cu.EventElapsedTime(&ms, p->a, p->b) == 0)
            r->ev_secs[p->kind] += 1e-3 * (double)ms;
        r->evhead = (r->evhead + 1) % r->evcap;
        r->nev--;
    }
}

/* The ring twice as large (its pairs in order at the front): 0, or -1
 * when it cannot grow. */
static int ev_grow(RealDev *r)
{
    int64_t most = settings_count(SET_CUDA_EVENTS_MAX, 65536);
    int cap = r->evcap ? 2 * r->evcap : EV_FIRST;
    if (cap > most)
        cap = (int)most;
    if (cap <= r->evcap)
        return -1;
    EvPair *n = calloc((size_t)cap, sizeof *n);
    if (!n)
        return -1;
    for (int i = 0; i < r->evcap; i++)
        n[i] = r->ev[(r->evhead + i) % r->evcap];
    for (int i = r->evcap; i < cap; i++)
        if (r->cu.EventCreate(&n[i].a, 0) != 0 || r->cu.EventCreate(&n[i].b, 0) != 0) {
            for (int j = r->evcap; j <= i; j++) {
                if (n[j].a)
                    r->cu.EventDestroy(n[j].a);
                if (n[j].b)
                    r->cu.EventDestroy(n[j].b);
            }
            free(n);
            return -1;
        }
    free(r->ev);
    r->ev = n;
    r->evhead = 0;
    r->evcap = cap;
    return 0;
}

static void rd_mark(CudaDev *d, int begin, int kind)
{
    RealDev *r = (RealDev *)d;
    if (begin) {
        if (r->evcap == 0 && ev_grow(r) != 0)
            return; /* no events: this span is not timed */
        if (r->nev == r->evcap)
            ev_harvest(r, 0);
        if (r->nev == r->evcap && ev_grow(r) != 0) {
            ev_harvest(r, 1);
            r->ev_waits++;
        }
        EvPair *p = &r->ev[(r->evhead + r->nev) % r->evcap];
        r->ev_open = r->cu.EventRecord(p->a, NULL) == 0;
        p->kind = kind;
    } else if (r->ev_open) {
        r->ev_open = 0;
        if (r->cu.EventRecord(r->ev[(r->evhead + r->nev) % r->evcap].b, NULL) == 0) {
            r->nev++;
            r->ev_pairs++;
        }
    }
}

static double rd_kernel_seconds(CudaDev *d, int kind)
{
    RealDev *r = (RealDev *)d;
    ev_harvest(r, 1);
    return r->ev_secs[kind & 1];
}

/* 1 when the driver has what the events need (the ring is made at the
 * first mark: a run that does not time its kernels creates none). */
static int ev_usable(const RealDev *r)
{
    return r->cu.EventCreate && r->cu.EventRecord && r->cu.EventSynchronize && r->cu.EventElapsedTime &&
           r->cu.EventDestroy;
}

static const char *rd_error(CudaDev *d)
{
    RealDev *r = (RealDev *)d;
    if (!r->err[0] && r->vk.last_error)
        return r->vk.last_error();
    return r->err;
}

static int cu_check(RealDev *r, CUresult rc, const char *what)
{
    if (rc == 0)
        return 0;
    const char *s = NULL;
    if (r->cu.GetErrorString)
        r->cu.GetErrorString(rc, &s);
    snprintf(r->err, sizeof r->err, "%s: %s (CUDA error %d)", what, s ? s : "unknown", rc);
    return -1;
}

static int rd_launch(CudaDev *d, void *fn, unsigned grid, int sync, int nargs, void **args)
{
    RealDev *r = (RealDev *)d;
    (void)nargs;
    (void)sync;
    return cu_check(r, r->cu.LaunchKernel(fn, grid ? grid : 1, 1, 1, d->block, 1, 1, 0, NULL, args, NULL),
                    "cuLaunchKernel");
}

static void *rd_func(CudaDev *d, void *module, const char *name)
{
    RealDev *r = (RealDev *)d;
    void *f = NULL;
    if (cu_check(r, r->cu.ModuleGetFunction(&f, module, name), name) != 0)
        return NULL;
    return f;
}

/* ---- NVRTC and the cubin cache --------------------------------------------------- */

static int write_all(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    *n = len;
    return buf;
}

/* Load CUBIN and check its key; the module, or NULL. */
static void *load_checked(RealDev *r, const void *cubin, const char *key)
{
    void *mod = NULL;
    r->err[0] = '\0';
    if (cu_check(r, r->cu.ModuleLoadData(&mod, cubin), "cuModuleLoadData") != 0)
        return NULL;
    CUdeviceptr p = 0;
    size_t sz = 0;
    char got[40] = "";
    if (r->cu.ModuleGetGlobal(&p, &sz, mod, "vk_unit_key") != 0 || sz != 33 ||
        r->vk.d2h(got, (const void *)(uintptr_t)p, 33) != 0 || strcmp(got, key) != 0) {
        snprintf(r->err, sizeof r->err, "the unit's key is not %s", key);
        r->cu.ModuleUnload(mod);
        return NULL;
    }
    int block = 0;
    if (r->cu.ModuleGetGlobal(&p, &sz, mod, "vk_unit_block") != 0 || sz != sizeof block ||
        r->vk.d2h(&block, (const void *)(uintptr_t)p, sizeof block) != 0 || (unsigned)block < r->base.block) {
        snprintf(r->err, sizeof r->err, "the unit is written for blocks of %d threads, the device launches %u", block,
                 r->base.block);
        r->cu.ModuleUnload(mod);
        return NULL;
    }
    return mod;
}

/* Keep MOD for unloading at the end; MOD, or NULL when out of memory. */
static void *keep_module(RealDev *r, void *mod, char *msg, size_t msglen)
{
    void **m = realloc(r->modules, (size_t)(r->nmodules + 1) * sizeof *m);
    if (!m) {
        r->cu.ModuleUnload(mod);
        snprintf(msg, msglen, "out of host memory");
        return NULL;
    }
    r->modules = m;
    r->modules[r->nmodules++] = mod;
    return mod;
}

static const char *const rtc_opts_fixed[] = { "--std=c++17", "--fmad=false", "-default-device" };

/* The option of a quick compile (CudaDev.load_fast, JitBuildStats.fast):
 * about a tenth of the CPU time, kernels 1.5-8x slower (H100, 2026-11-27:
 * tests/bench/GPU_SUMMARY.md). */
static const char *const rtc_opt_fast = "--Ofast-compile=max";

/* SRC's cache key: its text, the architecture, NVRTC's version and
 * options, vinterp's version and the ABI. */
static int unit_key(RealDev *r, const char *src, size_t len, int fast, char key[33], char *msg, size_t msglen)
{
    int maj = 0, min = 0;
    r->rtc.Version(&maj, &min);
    size_t klen = len + 512;
    char *kb = malloc(klen);
    if (!kb) {
        snprintf(msg, msglen, "out of host memory");
        return -1;
    }
    memcpy(kb, src, len);
    int extra = snprintf(kb + len, 512, "|--gpu-architecture=%s|nvrtc %d.%d|%s %s %s%s%s|%s|abi%d", r->base.arch, maj,
                         min, rtc_opts_fixed[0], rtc_opts_fixed[1], rtc_opts_fixed[2], fast ? " " : "",
                         fast ? rtc_opt_fast : "", VINTERP_VERSION, VK_ABI_VERSION);
    jit_hash_hex(kb, len + (size_t)extra, key);
    free(kb);
    return 0;
}

/* CPU seconds of the calling thread. */
static double thread_cpu(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0)
        return 0.0;
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* NVRTC: SRC (with KEY) to a cubin, *CUB (malloc'd) of *N bytes, the
 * compile's CPU seconds in *SECS (NVRTC runs on the calling thread: its
 * CPU time is the compile's cost, whatever else the machine does). Touches nothing of R but its NVRTC
 * functions and architecture: several threads may run it at once, each
 * on its own program. 0, or -1 with MSG. */
static int rtc_compile(const RealDev *r, const char *src, size_t len, const char *key, int fast, char **cub,
                       size_t *n, double *secs, char *msg, size_t msglen)
{
    char archopt[48];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", r->base.arch);
    size_t tlen = len + 128;
    char *text = malloc(tlen);
    if (!text) {
        snprintf(msg, msglen, "out of host memory");
        return -1;
    }
    memcpy(text, src, len);
    snprintf(text + len, 128, "\nextern \"C\" __device__ const char vk_unit_key[33] = \"%s\";\n", key);
    nvrtcProgram prog = NULL;
    double c0 = thread_cpu();
    nvrtcResult rc = r->rtc.CreateProgram(&prog, text, "vinterp_unit.cu", 0, NULL, NULL);
    free(text);
    if (rc != 0) {
        snprintf(msg, msglen, "nvrtcCreateProgram: %s", r->rtc.GetErrorString(rc));
        return -1;
    }
    const char *opts[5] = { archopt, rtc_opts_fixed[0], rtc_opts_fixed[1], rtc_opts_fixed[2], rtc_opt_fast };
    rc = r->rtc.CompileProgram(prog, fast ? 5 : 4, opts);
    *secs = thread_cpu() - c0;
    if (rc != 0) {
        size_t ls = 0;
        r->rtc.GetProgramLogSize(prog, &ls);
        char *log = malloc(ls + 1);
        if (log) {
            r->rtc.GetProgramLog(prog, log);
            log[ls] = '\0';
        }
        snprintf(msg, msglen, "NVRTC could not compile the generated CUDA for %s: %.400s", r->base.arch,
                 log ? log : "(no log)");
        free(log);
        r->rtc.DestroyProgram(&prog);
        return -1;
    }
    *n = 0;
    r->rtc.GetCUBINSize(prog, n);
    *cub = malloc(*n ? *n : 1);
    if (!*cub || r->rtc.GetCUBIN(prog, *cub) != 0) {
        free(*cub);
        *cub = NULL;
        r->rtc.DestroyProgram(&prog);
        snprintf(msg, msglen, "NVRTC gave no cubin");
        return -1;
    }
    r->rtc.DestroyProgram(&prog);
    return 0;
}

/* Keep the seconds of one NVRTC compile for -d stats (the slowest shown). */
static void note_unit_secs(RealDev *r, double secs, size_t bytes)
{
    if (r->nunit_secs == r->unit_secs_cap) {
        int cap = r->unit_secs_cap ? 2 * r->unit_secs_cap : 64;
        double *u = realloc(r->unit_secs, (size_t)cap * sizeof *u);
        size_t *b = realloc(r->unit_bytes, (size_t)cap * sizeof *b);
        if (u)
            r->unit_secs = u;
        if (b)
            r->unit_bytes = b;
        if (!u || !b)
            return;
        r->unit_secs_cap = cap;
    }
    r->unit_secs[r->nunit_secs] = secs;
    r->unit_bytes[r->nunit_secs++] = bytes;
}

/* Write CUB into the cache as PATH (by a temporary file and a rename: a
 * reader never sees half of one). */
static void cache_store(const char *path, const char *cub, size_t n, const char *tag)
{
    char tmp[1300];
    snprintf(tmp, sizeof tmp, "%s.%u.%s.tmp", path, (unsigned)getpid(), tag);
    if (write_all(tmp, cub, n) != 0 || rename(tmp, path) != 0)
        unlink(tmp); /* the cache is an optimisation: go on without it */
}

/* The source beside the cubin, for people reading --check reports. */
static void cache_source(const char *dir, const char *key, const char *src, size_t len, char *path, size_t plen)
{
    snprintf(path, plen, "%s/%s.cu", dir, key);
    if (access(path, R_OK) != 0) {
        char tmp[1300];
        snprintf(tmp, sizeof tmp, "%s.%u.tmp", path, (unsigned)getpid());
        if (write_all(tmp, src, len) != 0 || rename(tmp, path) != 0) {
            unlink(tmp);
            path[0] = '\0';
        }
    }
}

/* Find or compile SRC's cubin; LOAD: load it as a module (else only make
 * sure the cache holds it: the tier thread, which then touches nothing
 * but BST and the cache). */
static void *rd_unit(CudaDev *d, const char *src, size_t len, int load, JitBuildStats *bst, char *msg,
                     size_t msglen)
{
    RealDev *r = (RealDev *)d;
    char key[33];
    int fast = load ? d->load_fast : bst->fast;
    if (unit_key(r, src, len, fast, key, msg, msglen) < 0)
        return NULL;
    char dir[1024] = "", path[1200] = "";
    int cache = jit_dir(&r->jo, dir, sizeof dir);
    if (!load && cache != 0) {
        snprintf(msg, msglen, "internal error: a build without a cache");
        return NULL;
    }
    if (!load) {
        snprintf(path, sizeof path, "%s/%s.cubin", dir, key);
        if (access(path, R_OK) == 0) {
            bst->hits++;
            return r;
        }
        if (bst->probe) {
            snprintf(msg, msglen, "probe");
            return NULL;
        }
    } else if (cache == 0) {
        snprintf(r->cache, sizeof r->cache, "%s", dir);
        snprintf(path, sizeof path, "%s/%s.cubin", dir, key);
        cache_source(dir, key, src, len, d->unit_path, sizeof d->unit_path);
    }
    double t0 = rt_seconds();
    if (cache == 0 && !r->compile_only && access(path, R_OK) == 0) {
        size_t n = 0;
        char *cub = read_all(path, &n);
        void *mod = cub ? load_checked(r, cub, key) : NULL;
        free(cub);
        if (mod) {
            r->hits++;
            r->load_seconds += rt_seconds() - t0;
            return keep_module(r, mod, msg, msglen);
        }
        r->rejected++;
        unlink(path);
    }
    char *cub = NULL;
    size_t n = 0;
    double secs = 0.0;
    int rc = rtc_compile(r, src, len, key, fast, &cub, &n, &secs, msg, msglen);
    if (load) {
        r->compile_seconds += secs;
        note_unit_secs(r, secs, len);
    } else {
        bst->compile_seconds += secs;
    }
    if (rc != 0)
        return NULL;
    if (load)
        r->compiled++;
    else
        bst->compiled++;
    if (cache == 0)
        cache_store(path, cub, n, load ? "l" : "b");
    if (!load || r->compile_only) {
        free(cub);
        return r; /* a non-NULL dummy: nothing is loaded */
    }
    double l0 = rt_seconds();
    void *mod = load_checked(r, cub, key);
    r->load_seconds += rt_seconds() - l0;
    free(cub);
    if (!mod) {
        snprintf(msg, msglen, "the compiled cubin does not load: %s", r->err[0] ? r->err : "bad key");
        return NULL;
    }
    return keep_module(r, mod, msg, msglen);
}

static void *rd_load(CudaDev *d, const char *src, size_t len, char *msg, size_t msglen)
{
    return rd_unit(d, src, len, 1, NULL, msg, msglen);
}

static int rd_build(CudaDev *d, const char *src, size_t len, JitBuildStats *st, char *msg, size_t msglen)
{
    if (rd_unit(d, src, len, 0, st, msg, msglen))
        return 0;
    return st->probe && !strcmp(msg, "probe") ? 1 : -1;
}

/* ---- the parts of a unit, compiled in parallel ---- */

typedef struct {
    const char *src;
    size_t len;
    char key[33];
    int fast;           /* the quick-compiled variant */
    char path[1200];    /* the cubin's place in the cache ("" when none) */
    char *cub;
    size_t n;
    double secs;
    int rc;
    char msg[600];
} RtcJob;

typedef struct {
    const RealDev *r;
    RtcJob **jobs;
    int njobs;
    atomic_int next;
} RtcPool;

static void *rtc_worker(void *p)
{
    RtcPool *pool = p;
    for (int i; (i = atomic_fetch_add(&pool->next, 1)) < pool->njobs;) {
        RtcJob *j = pool->jobs[i];
        j->rc = rtc_compile(pool->r, j->src, j->len, j->key, j->fast, &j->cub, &j->n, &j->secs, j->msg, sizeof j->msg);
    }
    return NULL;
}

/* How many NVRTC compiles run at once: $VINTERP_NVRTC_THREADS, else the
 * online CPUs (at most 32). */
static int rtc_threads(void)
{
    if (settings_given(SET_NVRTC_THREADS))
        return (int)settings_count(SET_NVRTC_THREADS, 1);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 32 ? 32 : (int)n;
}

static int rd_load_parts(CudaDev *d, int n, const char *const *srcs, const size_t *lens, void **mods,
                         char (*paths)[1200], char *msg, size_t msglen)
{
    RealDev *r = (RealDev *)d;
    char dir[1024] = "";
    int cache = jit_dir(&r->jo, dir, sizeof dir);
    if (cache == 0)
        snprintf(r->cache, sizeof r->cache, "%s", dir);
    RtcJob *jobs = calloc((size_t)(n ? n : 1), sizeof *jobs);
    RtcJob **todo = calloc((size_t)(n ? n : 1), sizeof *todo);
    if (!jobs || !todo) {
        free(jobs);
        free(todo);
        snprintf(msg, msglen, "out of host memory");
        return -1;
    }
    int ntodo = 0, rc = 0;
    /* the cache first: its hits load at once, the misses are compiled */
    for (int i = 0; i < n && rc == 0; i++) {
        RtcJob *j = &jobs[i];
        j->src = srcs[i];
        j->len = lens[i];
        mods[i] = NULL;
        if (paths)
            paths[i][0] = '\0';
        j->fast = d->load_fast;
        if (unit_key(r, srcs[i], lens[i], j->fast, j->key, msg, msglen) < 0) {
            rc = -1;
            break;
        }
        if (cache == 0) {
            snprintf(j->path, sizeof j->path, "%s/%s.cubin", dir, j->key);
            if (paths)
                cache_source(dir, j->key, srcs[i], lens[i], paths[i], sizeof paths[i]);
        }
        if (cache == 0 && !r->compile_only && access(j->path, R_OK) == 0) {
            double t0 = rt_seconds();
            size_t nb = 0;
            char *cub = read_all(j->path, &nb);
            void *mod = cub ? load_checked(r, cub, j->key) : NULL;
            free(cub);
            if (mod) {
                r->hits++;
                r->load_seconds += rt_seconds() - t0;
                if (!(mods[i] = keep_module(r, mod, msg, msglen)))
                    rc = -1;
                continue;
            }
            r->rejected++;
            unlink(j->path);
        }
        todo[ntodo++] = j;
    }
    if (rc == 0 && ntodo > 0) {
        int nth = rtc_threads();
        if (nth > ntodo)
            nth = ntodo;
        RtcPool pool = { r, todo, ntodo, 0 };
        pthread_t th[32];
        int started = 0;
        for (int t = 1; t < nth && t < 32; t++)
            if (pthread_create(&th[started], NULL, rtc_worker, &pool) == 0)
                started++;
        rtc_worker(&pool); /* this thread too */
        for (int t = 0; t < started; t++)
            pthread_join(th[t], NULL);
        if (nth > r->threads_max)
            r->threads_max = nth;
    }
    /* in order: store, load, report the first failure */
    for (int t = 0; t < ntodo; t++) {
        RtcJob *j = todo[t];
        r->compile_seconds += j->secs;
        note_unit_secs(r, j->secs, j->len);
        if (rc == 0 && j->rc != 0) {
            snprintf(msg, msglen, "%s", j->msg);
            rc = -1;
        }
        if (j->rc == 0) {
            r->compiled++;
            if (cache == 0)
                cache_store(j->path, j->cub, j->n, "l");
        }
        if (rc == 0) {
            int i = (int)(j - jobs);
            if (r->compile_only) {
                mods[i] = r; /* a non-NULL dummy: nothing is loaded */
            } else {
                double l0 = rt_seconds();
                void *mod = load_checked(r, j->cub, j->key);
                r->load_seconds += rt_seconds() - l0;
                if (!mod) {
                    snprintf(msg, msglen, "the compiled cubin does not load: %s", r->err[0] ? r->err : "bad key");
                    rc = -1;
                } else if (!(mods[i] = keep_module(r, mod, msg, msglen))) {
                    rc = -1;
                }
            }
        }
        free(j->cub);
    }
    free(todo);
    free(jobs);
    return rc;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void rd_report(CudaDev *d, FILE *f)
{
    RealDev *r = (RealDev *)d;
    size_t used = 0, cached = 0;
    if (r->vk.pool_stats && !r->compile_only)
        r->vk.pool_stats(&used, &cached);
    fprintf(f, "stats: cuda: NVRTC units compiled %d, cubin cache hits %d, entries rejected %d; compile %.6f CPU s, "
               "load %.6f s; cache %s; device pool %zu bytes in use, %zu cached\n",
            r->compiled, r->hits, r->rejected, r->compile_seconds, r->load_seconds, r->cache[0] ? r->cache : "off",
            used, cached);
    if (r->evcap > 0)
        fprintf(f, "stats: cuda: kernels timed by %lld event pairs, %d at most waiting to be read, %lld waits for "
                   "them\n",
                (long long)r->ev_pairs, r->evcap, (long long)r->ev_waits);
    if (r->nunit_secs > 0) {
        /* NVRTC's seconds per unit compiled, the slowest first */
        double *s = malloc((size_t)r->nunit_secs * sizeof *s);
        size_t most = 0;
        for (int i = 0; i < r->nunit_secs; i++)
            most = r->unit_bytes[i] > most ? r->unit_bytes[i] : most;
        if (s) {
            memcpy(s, r->unit_secs, (size_t)r->nunit_secs * sizeof *s);
            qsort(s, (size_t)r->nunit_secs, sizeof *s, cmp_desc);
            fprintf(f, "stats: cuda: NVRTC per unit (%d units, up to %d at once, the largest %zu bytes): CPU "
                       "seconds, slowest first:", r->nunit_secs, r->threads_max > 0 ? r->threads_max : 1, most);
            for (int i = 0; i < r->nunit_secs && i < 24; i++)
                fprintf(f, " %.3f", s[i]);
            fprintf(f, "%s\n", r->nunit_secs > 24 ? " ..." : "");
            free(s);
        }
    }
}

static void rd_close(CudaDev *d)
{
    RealDev *r = (RealDev *)d;
    for (int i = 0; i < r->nmodules; i++)
        r->cu.ModuleUnload(r->modules[i]);
    free(r->modules);
    free(r->unit_secs);
    free(r->unit_bytes);
    for (int i = 0; r->ev && i < r->evcap && r->cu.EventDestroy; i++) {
        if (r->ev[i].a)
            r->cu.EventDestroy(r->ev[i].a);
        if (r->ev[i].b)
            r->cu.EventDestroy(r->ev[i].b);
    }
    free(r->ev);
    /* the libraries stay loaded: the CUDA runtime inside libvkernels.so
     * tears itself down at exit */
    free(r);
}

/* ---- opening ------------------------------------------------------------------------ */

static int open_device(RealDev *r, int dev, char *why, size_t len)
{
    if (load_driver(&r->cu, why, len) < 0)
        return -1;
    CUresult rc = r->cu.Init(0);
    if (rc != 0) {
        snprintf(why, len, "the CUDA driver does not initialise (error %d): no usable GPU", rc);
        return -1;
    }
    int count = 0;
    if (r->cu.DeviceGetCount(&count) != 0 || count == 0) {
        snprintf(why, len, "no CUDA device");
        return -1;
    }
    if (dev < 0 || dev >= count) {
        snprintf(why, len, "no CUDA device %d (%d present)", dev, count);
        return -1;
    }
    int h = 0, maj = 0, min = 0;
    if (r->cu.DeviceGet(&h, dev) != 0 || r->cu.DeviceGetAttribute(&maj, CU_ATTR_CC_MAJOR, h) != 0 ||
        r->cu.DeviceGetAttribute(&min, CU_ATTR_CC_MINOR, h) != 0) {
        snprintf(why, len, "cannot query CUDA device %d", dev);
        return -1;
    }
    r->cu.DeviceGetAttribute(&r->sms, CU_ATTR_MULTIPROCESSOR_COUNT, h);
    r->cu.DeviceGetName(r->base.name, (int)sizeof r->base.name, h);
    size_t total = 0;
    if (r->cu.DeviceTotalMem && r->cu.DeviceTotalMem(&total, h) == 0)
        r->base.mem_bytes = (int64_t)total;
    snprintf(r->base.arch, sizeof r->base.arch, "sm_%d%d", maj, min);
    if (load_nvrtc(&r->rtc, why, len) < 0 || load_kernels(&r->vk, why, len) < 0)
        return -1;
    if (r->vk.init(dev) != 0) {
        snprintf(why, len, "libvkernels.so: %s", r->vk.last_error());
        return -1;
    }
    void *ctx = NULL;
    if (r->cu.DevicePrimaryCtxRetain(&ctx, h) != 0 || r->cu.CtxSetCurrent(ctx) != 0) {
        snprintf(why, len, "cannot use the primary context of CUDA device %d", dev);
        return -1;
    }
    return 0;
}

static int bind_lib(RealDev *r, char *why, size_t len) { return vk_bind(r->vk.h, "libvkernels.so", &r->base.lib, why, len); }

/* NVRTC stays loaded: unloaded, the C++ runtime inside it leaves its
 * exception pool unreachable (LeakSanitizer reports it at the exit), and
 * a later open loads it again anyway. */
static void close_libs(RealDev *r)
{
    if (r->vk.h)
        dlclose(r->vk.h);
    if (r->cu.h)
        dlclose(r->cu.h);
}

int cuda_real_usable(int dev, char *why, size_t len)
{
    RealDev r;
    memset(&r, 0, sizeof r);
    /* Only the driver and a device are probed here (cheap); NVRTC and the
     * primitives are checked when the executor opens. */
    int ok = 0;
    /* No device node, no driver: skip the library search (every run of
     * the default backend on a machine without a GPU pays for it). */
    const char *test = settings_text(SET_TEST_CUDA_DRIVER);
    if (!(test && *test) && access("/dev/nvidiactl", F_OK) != 0 && access("/dev/dxg", F_OK) != 0) {
        snprintf(why, len, "no CUDA driver (no /dev/nvidiactl)");
        return 0;
    }
    if (load_driver(&r.cu, why, len) == 0) {
        int count = 0;
        if (r.cu.Init(0) != 0)
            snprintf(why, len, "the CUDA driver does not initialise: no usable GPU");
        else if (r.cu.DeviceGetCount(&count) != 0 || count == 0)
            snprintf(why, len, "no CUDA device");
        else if (dev < 0 || dev >= count)
            snprintf(why, len, "no CUDA device %d (%d present)", dev, count);
        else
            ok = 1;
    }
    if (ok) {
        char lwhy[600];
        RealDev t;
        memset(&t, 0, sizeof t);
        if (load_nvrtc(&t.rtc, lwhy, sizeof lwhy) < 0 || load_kernels(&t.vk, lwhy, sizeof lwhy) < 0) {
            snprintf(why, len, "%s", lwhy);
            ok = 0;
        }
        close_libs(&t);
    }
    /* A usable driver stays loaded: cuda_real_open's dlopen then finds it
     * initialised, where unloading it after cuInit would have it loaded
     * and initialised a second time. */
    if (r.cu.h && !ok)
        dlclose(r.cu.h);
    return ok;
}

CudaDev *cuda_real_open(int dev, const JitOptions *jo, const char *compile_only_arch, char *why, size_t len)
{
    RealDev *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(why, len, "out of host memory");
        return NULL;
    }
    r->jo = *jo;
    CudaDev *d = &r->base;
    d->kind = "cuda";
    if (compile_only_arch) {
        r->compile_only = 1;
        if (load_nvrtc(&r->rtc, why, len) < 0) {
            close_libs(r);
            free(r);
            return NULL;
        }
        snprintf(d->name, sizeof d->name, "none (compile only)");
        snprintf(d->arch, sizeof d->arch, "%s", compile_only_arch);
    } else if (open_device(r, dev, why, len) < 0 || bind_lib(r, why, len) < 0) {
        close_libs(r);
        free(r);
        return NULL;
    }
    /* 256 threads a block, 32 a warp; 32 blocks per multiprocessor fill
     * the device (the grid-stride loops take the rest). */
    d->block = VK_CUDA_BLOCK;
    d->warp = 32;
    d->max_grid = (unsigned)(r->sms > 0 ? r->sms : 80) * 32;
    d->alloc = rd_alloc;
    d->h2d_staged = rd_h2d_staged;
    d->free = rd_free;
    d->h2d = rd_h2d;
    d->d2h = rd_d2h;
    d->d2h_many = rd_d2h_many;
    d->d2d = rd_d2d;
    d->memset0 = rd_memset0;
    d->load = rd_load;
    d->load_parts = rd_load_parts;
    d->build = rd_build;
    d->func = rd_func;
    d->launch = rd_launch;
    if (!r->compile_only && ev_usable(r)) {
        d->mark = rd_mark;
        d->kernel_seconds = rd_kernel_seconds;
    }
    d->error = rd_error;
    d->report = rd_report;
    d->close = rd_close;
    return d;
}

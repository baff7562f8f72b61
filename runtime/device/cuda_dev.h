/* runtime/device/cuda_dev.h — the device under the cuda executor, behind one
 * table of functions, with two implementations:
 *
 *   real      (runtime/device/cuda_real.c) the CUDA driver API and NVRTC, loaded
 *             with dlopen, and the precompiled primitives of
 *             libvkernels.so (kernels/kernels.h), also loaded with dlopen;
 *   emulated  (runtime/device/cuda_emul.c) host memory standing in for device
 *             memory, the generated CUDA compiled as host C++ (the
 *             prelude maps the CUDA words to host code; each block's
 *             threads run in turn, as fibers that meet at __syncthreads),
 *             and host versions of the primitives.
 *
 * The emulated device runs the executor's whole protocol — separate
 * "device" buffers, uploads, downloads, launches, library calls — without
 * a GPU, so the tests check it on every machine. Device pointers are
 * opaque to the executor: it only passes them back to this table. */
#ifndef RUNTIME_CUDA_DEV_H
#define RUNTIME_CUDA_DEV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "kernels/kernels.h"
#include "runtime/jit/jit.h"

/* The primitives, with kernels.h's signatures. */
typedef struct {
    int (*seg_offsets)(const int32_t *len_d, int64_t m, int64_t *off_d, int64_t *n_host);
    int (*seg_shape)(const int32_t *len_d, int64_t m, int64_t *off_d, VkShape *rec_d);
    int (*reduce)(VsRop rop, const void *in_d, int64_t n, void *out_d);
    int (*scan)(VsRop rop, const void *in_d, int64_t n, void *out_d);
    int (*seg_reduce)(VsRop rop, const void *in_d, const int32_t *len_d, const int64_t *off_d,
                      int64_t m, int64_t n, int64_t longest, void *out_d);
    int (*seg_scan)(VsRop rop, const void *in_d, const int32_t *len_d, const int64_t *off_d,
                    int64_t m, int64_t n, int64_t longest, void *out_d);
    int (*seg_rank)(int down, VsElem type, const void *keys_d, const int32_t *len_d, const int64_t *off_d,
                    int64_t m, int64_t n, int32_t *rank_d);
    int (*rand)(const uint32_t ring[31], uint64_t k, int64_t n, int32_t *out_d);
    int (*elems_get)(size_t esize, const void *src_d, const int64_t *pos_d, int64_t m, void *dst_d);
    int (*elems_put)(size_t esize, void *dst_d, const int64_t *pos_d, int64_t m, const void *src_d);
    /* the device tier's instructions */
    int (*map)(int op, int ty, int fmask, int out_f, const VkArg *args, int nargs, int64_t n, void *out_d,
               unsigned long long *fault_d);
    int (*expr)(const VkExpr *e, int64_t n);
    int (*expr_reduce)(const VkExpr *e, int node, VsRop rop, int64_t n, void *out_d);
    int (*dist)(size_t esize, const VkArg *val, const int64_t *off_d, int64_t m, int64_t n, void *out_d);
    int (*index)(const VkArg *start, const VkArg *stride, const int64_t *off_d, int64_t m, int64_t n,
                 int32_t *out_d);
    int (*seg_positions)(const VkArg *idx, const int32_t *len_d, const int64_t *off_d, int64_t m, int64_t *pos_d,
                         unsigned long long *fault_d);
    int (*scatter)(size_t esize, const void *in_d, int64_t n_src, const int32_t *idx_d, const int32_t *flags_d,
                   const int32_t *slen_d, const int64_t *soff_d, int64_t sm, const int32_t *dlen_d,
                   const int64_t *doff_d, int64_t dm, void *out_d, int64_t n_dst, int mode, VkPermFault *fault_d);
    int (*scatter_many)(int nv, const size_t *esize, const void *const *in_d, void *const *out_d, int64_t n_src,
                        const int32_t *idx_d, const int32_t *slen_d, const int64_t *soff_d, int64_t sm,
                        const int32_t *dlen_d, const int64_t *doff_d, int64_t dm, int64_t n_dst, int mode,
                        VkPermFault *fault_d);
    int (*scatter_fill_many)(int nv, const size_t *esize, const VkArg *fill, const void *const *in_d,
                             void *const *out_d, int64_t n_src, const int32_t *idx_d, const int32_t *slen_d,
                             const int64_t *soff_d, int64_t sm, const int32_t *dlen_d, const int64_t *doff_d,
                             int64_t dm, int64_t n_dst, VkPermFault *fault_d);
    int (*scatter_fill)(size_t esize, const VkArg *fill, const void *in_d, int64_t n_src, const int32_t *idx_d,
                        const int32_t *flags_d, const int32_t *slen_d, const int64_t *soff_d, int64_t sm,
                        const int32_t *dlen_d, const int64_t *doff_d, int64_t dm, void *out_d, int64_t n_dst,
                        VkPermFault *fault_d);
    int (*gather)(size_t esize, const void *in_d, int64_t n_src, const int32_t *idx_d, const int32_t *flags_d,
                  const int32_t *slen_d, const int64_t *soff_d, int64_t sm, const int32_t *dlen_d,
                  const int64_t *doff_d, int64_t dm, void *out_d, int64_t n_dst, VkPermFault *fault_d);
    int (*select_flagged)(VsElem type, const void *in_d, const int32_t *flags_d, int64_t n, void *out_d,
                          int64_t *count_host);
    const char *(*last_error)(void);
} VkLib;

/* LIB's primitives from the library H (dlopen'ed: libvkernels.so, or its
 * host build for the emulated device; WHAT names it in messages); 0, or
 * -1 with the missing symbol in WHY (runtime/device/vk_bind.c). */
int vk_bind(void *h, const char *what, VkLib *lib, char *why, size_t len);

typedef struct CudaDev CudaDev;
struct CudaDev {
    const char *kind;           /* "cuda" or "emulated" */
    char name[256];             /* the device's name */
    char arch[16];              /* "sm_90"; "host" when emulated */
    int64_t mem_bytes;          /* the device's memory (0: unknown, the emulated device's host memory) */
    unsigned block;             /* threads per block of every launch (a power of two, <= 256) */
    unsigned warp;              /* the warp-per-segment group (a power of two dividing block) */
    unsigned max_grid;          /* the most blocks a launch needs to fill the device */
    char unit_path[1200];       /* the cached source of the last unit loaded ("" when none) */
    /* Set by the executor on the main thread before load or load_parts: 1
     * loads the quick-compiled variant of a unit (NVRTC --Ofast-compile=max,
     * the emulated device's C++ at -O0), a cache entry of its own; build
     * takes the same choice from its JitBuildStats' fast. */
    int load_fast;
    VkLib lib;
    /* memory (device pointers); alloc returns NULL on failure */
    void *(*alloc)(CudaDev *d, size_t bytes);
    void (*free)(CudaDev *d, void *p);
    int (*h2d)(CudaDev *d, void *dst, const void *src, size_t bytes);
    /* a small upload that does not wait; SRC may change once it returns */
    int (*h2d_staged)(CudaDev *d, void *dst, const void *src, size_t bytes);
    int (*d2h)(CudaDev *d, void *dst, const void *src, size_t bytes);   /* waits */
    /* N reads back with one wait (kernels.h vk_memcpy_d2h_many) */
    int (*d2h_many)(CudaDev *d, int n, void *const *dst, const void *const *src, const size_t *bytes);
    int (*d2d)(CudaDev *d, void *dst, const void *src, size_t bytes);
    int (*memset0)(CudaDev *d, void *dst, size_t bytes);
    /* Compile (through the cache) and load a unit of generated CUDA;
     * returns a module, or NULL with MSG. */
    void *(*load)(CudaDev *d, const char *src, size_t len, char *msg, size_t msglen);
    /* A unit in N parts (translate/cg_unit.h cg_unit_split), each compiled
     * (through the cache) and loaded as a module of its own: MODS[i], and
     * in PATHS[i] (may be NULL) its cached source or "". The real device
     * compiles the parts the cache lacks in parallel. NULL: the executor
     * loads them one by one with load. 0, or -1 with MSG. */
    int (*load_parts)(CudaDev *d, int n, const char *const *srcs, const size_t *lens, void **mods,
                      char (*paths)[1200], char *msg, size_t msglen);
    /* Compile a unit into the kernel cache without loading it, so that a
     * later load of the same text finds it (the tier thread: touches no
     * state load or launch use). 0, or -1 with MSG. */
    int (*build)(CudaDev *d, const char *src, size_t len, JitBuildStats *st, char *msg, size_t msglen);
    /* An entry point of a module, or NULL. */
    void *(*func)(CudaDev *d, void *module, const char *name);
    /* Launch FN on GRID blocks of `block` threads with NARGS arguments (3
     * to 5), each pointed to by ARGS[i] (as cuLaunchKernel takes them):
     * (vk_arr *V, vk_errp er, int64_t n[, void *p3[, void *p4]]). SYNC: the
     * kernel uses __syncthreads (the emulated device then runs each block's
     * threads as fibers that meet at the barriers). */
    int (*launch)(CudaDev *d, void *fn, unsigned grid, int sync, int nargs, void **args);
    /* The kernels' time (-d stats): MARK(d, 1, KIND) just before a launch
     * (KIND 0) or a primitive call (1), MARK(d, 0, KIND) just after it,
     * without a wait (events on the stream); KERNEL_SECONDS the sum of the
     * marked spans of KIND so far (it waits for them). NULL: the executor
     * times the calls on the host (the emulated device runs a launch
     * within its call). */
    void (*mark)(CudaDev *d, int begin, int kind);
    double (*kernel_seconds)(CudaDev *d, int kind);
    /* The last failure's message. */
    const char *(*error)(CudaDev *d);
    /* -d stats lines of its own (compilation, cache). */
    void (*report)(CudaDev *d, FILE *f);
    void (*close)(CudaDev *d);
};

/* Open device DEV (real), or NULL with the reason in WHY. With
 * COMPILE_ONLY_ARCH only NVRTC is needed: load compiles for that
 * architecture and returns a dummy module; nothing else may be called. */
CudaDev *cuda_real_open(int dev, const JitOptions *jo, const char *compile_only_arch, char *why, size_t len);
/* 1 when the driver, a device DEV, NVRTC and libvkernels.so are there. */
int cuda_real_usable(int dev, char *why, size_t len);

/* The emulated device (needs a C++ compiler: $VINTERP_CXX, else c++). */
CudaDev *cuda_emul_open(const JitOptions *jo, char *why, size_t len);

#endif

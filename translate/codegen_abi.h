/* translate/codegen_abi.h — the interface between generated kernel code
 * and the runtime that calls it, written once: the runtime compiles these
 * declarations, and the code generator pastes the very same text (the
 * stringified macros) at the top of every generated unit, so the two sides
 * cannot drift apart.
 *
 * vk_arr describes one plan variable. Arrays: d points at len elements
 * (int32_t for Int/Bool, double for Float). Segment descriptors: d points
 * at the m = len segment lengths (int32_t), n is the element count (never
 * negative), off the m exclusive offsets, segid NULL for a descriptor whose
 * lengths are all >= 0, else a table of n entries giving each element's
 * segment (-1: none), ulen L > 0 when every segment is L long (an
 * element's segment is then i / L), else 0.
 *
 * vk_ctx (host code only) is what a generated C kernel gets: the variable
 * table (indexed by plan variable) and the runtime's callbacks. alloc binds
 * variable VAR to a new array (a descriptor's lengths, for a descriptor
 * variable) of LEN elements, zeroed when ZERO, updates v[var] and returns
 * the data; seal finishes a descriptor whose lengths were written; lib runs
 * the library SOAC with the given index in the kernel; scratch returns
 * BYTES of host memory that the runtime frees after the kernel (also after
 * a fatal error); fail reports a run-time error (codes below) and does not
 * return. */
#ifndef TRANSLATE_CODEGEN_ABI_H
#define TRANSLATE_CODEGEN_ABI_H

#include <stdint.h>

#define VK_ABI_ARR(X) X(                                                     \
    typedef struct vk_arr {                                                  \
        void *d;                                                             \
        int64_t len;                                                         \
        int64_t n;                                                           \
        const int64_t *off;                                                  \
        const int32_t *segid;                                                \
        int64_t ulen;                                                        \
    } vk_arr;                                                                \
    enum vk_fail_code {                                                      \
        VKF_NONE = 0,                                                        \
        VKF_DIV0 = 1, VKF_MOD0 = 2, VKF_DIVOVF = 3, VKF_MODOVF = 4,          \
        VKF_RAND0 = 5, VKF_CHECKIDX = 6, VKF_SUB = 7, VKF_SEGOF = 8,         \
        VKF_NOSEG = 9, VKF_SEGSTART = 10, VKF_SEGLEN = 11, VKF_PERM = 12,    \
        VKF_DSTSEG = 13, VKF_DFLTLEN = 14                                    \
    };                                                                       \
)

#define VK_ABI_CTX(X) X(                                                     \
    typedef struct vk_ctx vk_ctx;                                            \
    struct vk_ctx {                                                          \
        vk_arr *v;                                                           \
        void *(*alloc)(vk_ctx *cx, int var, int64_t len, int zero);          \
        void (*seal)(vk_ctx *cx, int var);                                   \
        void (*lib)(vk_ctx *cx, int soac);                                   \
        void *(*scratch)(vk_ctx *cx, int64_t bytes);                         \
        void (*fail)(vk_ctx *cx, int code, int64_t a, int64_t b, int64_t c); \
        void *rt;                                                            \
    };                                                                       \
)

#define VK_ABI_EXPAND(...) __VA_ARGS__
#define VK_ABI_STRING(...) #__VA_ARGS__

VK_ABI_ARR(VK_ABI_EXPAND)
VK_ABI_CTX(VK_ABI_EXPAND)

/* A generated C kernel: one function per λcu kernel. */
typedef void (*vk_kernel_fn)(vk_ctx *cx);

/* CUDA: the threads of a block the generated code is written for (its
 * shared arrays), one constant for the code generator and the devices.
 * Every CUDA unit defines vk_unit_block = VK_CUDA_BLOCK; a device checks
 * at load that its blocks are no larger (the real device launches blocks
 * of exactly this size, the emulated one of 1 to 256 threads). */
#define VK_CUDA_BLOCK 256

/* Bumped whenever the generated code's conventions change (part of the
 * cache key). */
#define VK_ABI_VERSION 3

#endif

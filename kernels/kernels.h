/* kernels/kernels.h — the precompiled GPU primitives (libvkernels.so).
 *
 * A plain C API, includable from C11 and C++. Pointers named *_d are device
 * pointers; everything else lives on the host. Every int-returning function
 * returns 0 on success and -1 on failure, with vk_last_error() saying why
 * (a CUDA error, a bad argument, an out-of-range index).
 *
 * Execution model. All work is queued on the legacy default stream, in call
 * order, and is asynchronous unless noted: a function that must hand a
 * value back to the host (vk_select_flagged's count, the index checks of
 * vk_scatter / vk_gather without a fault record, vk_memcpy_d2h) waits for
 * the device. An error in an earlier asynchronous launch can surface in a
 * later call. The pool (vk_alloc) relies on this single ordered stream.
 *
 * Element types: VS_INT and VS_BOOL are int32_t (Bool stored 0/1; other
 * non-zero values read as true), VS_FLOAT is double.
 *
 * Segment descriptors: len_d[m] lengths (int32) and off_d[m] offsets (int64,
 * off[k] = len[0] + ... + len[k-1], the raw sum as runtime/core/value.c's
 * seg_offsets computes it; vk_seg_offsets builds it). A segment of length
 * <= 0 is empty. Non-empty segments must not overlap; a descriptor that
 * passed the runtime's range check and has a negative length always has
 * overlapping segments (or only empty ones), and there the results are
 * unspecified: use the host path for such descriptors.
 *
 * Scans and reductions follow vcode/SPEC.md §4.2/§4.3 (and runtime/interp/ops_scan.c):
 * exclusive scans from the identity, Int arithmetic wrapping, AND/OR/XOR
 * bitwise on Int and logical (0/1 results) on Bool, Float MAX/MIN with the
 * ±(double)1.0e36f identities. Int and Bool results, and Float MAX/MIN
 * results (NaN and -0.0 cases included: the fold `acc > x ? acc : x` is
 * evaluated exactly through an associative encoding), are bit-identical to
 * the sequential reference. Float ADD/MUL are combined in a fixed
 * (deterministic, run-to-run identical) tree order, so they can differ from
 * the strictly left-to-right sum in the last bits; vk_set_float_exact(1)
 * makes them strictly sequential per segment (one thread per segment: slow
 * for long segments, but bit-identical). */
#ifndef KERNELS_KERNELS_H
#define KERNELS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* VCODE's scalar semantics, on the device too under nvcc. */
#if defined(__CUDACC__) && !defined(VS_FN)
#define VS_FN static __host__ __device__ __forceinline__
#endif
#include "vcode/semantics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* element types: VsElem; reduction operators: VsRop (vcode/semantics.h) */

/* ---- Device and errors ------------------------------------------------ */

/* Number of CUDA devices; 0 when there is no device or no driver. */
int vk_device_count(void);
/* Select DEVICE and query it; optional (the first call of anything else
 * initialises device 0, or the current device). */
int vk_init(int device);
/* The device's name ("" before initialisation or without a device). */
const char *vk_device_name(void);
/* The message of the last failure in this thread ("" if none). */
const char *vk_last_error(void);
/* Wait for all queued work; reports asynchronous errors. */
int vk_sync(void);

/* ---- Memory ------------------------------------------------------------ */

/* A caching pool: sizes are rounded up to classes (256 bytes, then four
 * classes per power of two, so at most 25% slack); freed blocks are kept per
 * class and handed out again without cudaMalloc. When cudaMalloc fails the
 * cache is trimmed and the allocation retried. vk_alloc(0) returns a valid
 * (minimal) block; NULL means failure. vk_free(NULL) does nothing. */
void *vk_alloc(size_t bytes);
void vk_free(void *p);
/* Release every cached (free) block to the driver. */
void vk_pool_trim(void);
/* Bytes held by the pool: in use, and cached. Either pointer may be NULL. */
void vk_pool_stats(size_t *in_use, size_t *cached);
/* What the primitives have queued since the library loaded: kernels, and
 * clears and copies on the device (not vk_memset0's and vk_memcpy_d2d's,
 * which their caller counts); a CUB algorithm's by kernels/vk_count.h.
 * One call queues what kernels/vk_count.h says (test_kernels checks). */
void vk_queued(int64_t *kernels, int64_t *copies);

int vk_memcpy_h2d(void *dst_d, const void *src, size_t bytes);
/* A small upload that does not wait: SRC is copied into pinned staging
 * memory (a ring reclaimed at the next call that waits) and sent
 * asynchronously, in order with the launches; SRC may change as soon as
 * it returns. Over the staging size it waits, as vk_memcpy_h2d. */
int vk_memcpy_h2d_staged(void *dst_d, const void *src, size_t bytes);
int vk_memcpy_d2h(void *dst, const void *src_d, size_t bytes); /* waits */
/* N reads back in one wait: DST[i] gets BYTES[i] bytes from SRC_D[i], each
 * through pinned memory, sent in order with the launches, the stream
 * drained once (the device tier's read-ahead: runtime/fused/cuda_tier.c). */
int vk_memcpy_d2h_many(int n, void *const *dst, const void *const *src_d, const size_t *bytes);
int vk_memcpy_d2d(void *dst_d, const void *src_d, size_t bytes);
int vk_memset0(void *dst_d, size_t bytes);

/* ---- Options (process-wide) ------------------------------------------- */

/* 1: Float ADD/MUL scans and reductions strictly left to right (exact). */
void vk_set_float_exact(int on);

/* Chains of at most N nodes (vk_expr, vk_expr_reduce) are evaluated four
 * elements a thread at once (16 by default: vk_map.cu); 0: every chain
 * one element at a time (test_kernels --bandwidth times both). */
void vk_set_expr_four_nodes(int n);

/* Force a strategy for vk_seg_reduce / vk_seg_scan / vk_reduce / vk_scan
 * (for tests and tuning); VK_STRAT_AUTO (the default) picks by average
 * segment length, see kernels/vk_scan.cu. */
typedef enum { VK_STRAT_AUTO, VK_STRAT_THREAD, VK_STRAT_WARP, VK_STRAT_CHUNK } VkStrategy;
void vk_set_strategy(VkStrategy s);

/* ---- Segment descriptors ---------------------------------------------- */

/* off_d[k] = len[0] + ... + len[k-1] (int64, negative lengths included, as
 * the runtime computes offsets). If n_host is not NULL, *n_host = the sum
 * of all m lengths (waits). */
int vk_seg_offsets(const int32_t *len_d, int64_t m, int64_t *off_d, int64_t *n_host);
/* A descriptor's shape: its offsets into off_d (as vk_seg_offsets) and,
 * into *rec_d on the device, the sum of its m >= 1 lengths and the
 * shortest and longest; no wait (one launch up to VK_SHAPE_ONE_BLOCK
 * segments, else two: kernels/vk_count.h). */
typedef struct {
    long long n;
    int32_t lo, hi;
} VkShape;
int vk_seg_shape(const int32_t *len_d, int64_t m, int64_t *off_d, VkShape *rec_d);

/* segid_d[i] = the segment containing element i, for i < n (non-empty
 * segments tiling the data; elements before the first non-empty segment
 * get 0). */
int vk_seg_ids(const int32_t *len_d, const int64_t *off_d, int64_t m, int64_t n,
               int32_t *segid_d);

/* ---- Scans and reductions ----------------------------------------------
 * ROP: any operator of vcode/semantics.h (VS_IADD .. VS_BXOR), which names
 * the element type too (vs_rop_elem); anything else fails with -1. */

/* out_d[0] = the reduction of in_d[0 .. n) (the identity when n <= 0). */
int vk_reduce(VsRop rop, const void *in_d, int64_t n, void *out_d);
/* out_d[i] = exclusive scan (out_d may equal in_d). */
int vk_scan(VsRop rop, const void *in_d, int64_t n, void *out_d);
/* out_d[k] = reduction of segment k, k < m; N is the data length (the sum
 * of the non-negative lengths) and LONGEST the longest segment (-1:
 * unknown), which choose the strategy (kernels/seg_plan.h). */
int vk_seg_reduce(VsRop rop, const void *in_d, const int32_t *len_d, const int64_t *off_d, int64_t m, int64_t n,
                  int64_t longest, void *out_d);
/* Segmented exclusive scan over data of length n (out_d may equal in_d).
 * Positions in no non-empty segment are left unwritten. */
int vk_seg_scan(VsRop rop, const void *in_d, const int32_t *len_d, const int64_t *off_d, int64_t m, int64_t n,
                int64_t longest, void *out_d);

/* ---- Rank (vcode/SPEC.md §4.7, runtime/core/rank.c) ------------------------------
 * rank_d[i] = the 0-based place of element i when its segment is sorted
 * stably, ascending (down = 0) or descending (down != 0), ties keeping
 * their original order in both directions. TYPE is VS_INT (signed order) or
 * VS_FLOAT (numeric order, -0.0 before +0.0, NaNs by bit pattern at the
 * ends: the key of runtime/core/rank.c). len_d/off_d may be NULL with m == 1 for
 * one segment of n. n must be < 2^31. Uses CUB's radix sort (stable). */
int vk_seg_rank(int down, VsElem type, const void *keys_d, const int32_t *len_d,
                const int64_t *off_d, int64_t m, int64_t n, int32_t *rank_d);

/* ---- PACK -------------------------------------------------------------
 * out_d = the elements of in_d[0 .. n) whose flag is non-zero, in order;
 * *count_host = their number (waits; count_host may be NULL). For a
 * segmented PACK the new lengths are vk_seg_reduce(VS_IADD, flags)
 * (flags being 0/1). */
int vk_select_flagged(VsElem type, const void *in_d, const int32_t *flags_d, int64_t n,
                      void *out_d, int64_t *count_host);

/* ---- Permutes (vcode/SPEC.md §4.4, runtime/interp/ops_permute.c) --------------------
 * ESIZE is the element size, 4 or 8. Indices are relative to the segment
 * and checked: an index outside its segment, or a non-empty segment with no
 * partner segment, fails with -1 and the runtime's message, reporting the
 * first offending position (these calls wait for the device) — unless
 * FAULT_D is given: then the call does not wait, and its last kernel
 * writes the check's outcome into the record *FAULT_D (VkPermFault; ERR
 * all ones when every index was good), which the caller reads when it
 * next waits.
 *
 * Descriptors: both NULL (with sm/dm ignored) for the unsegmented form —
 * one source segment of n_src, one destination segment of n_dst — or both
 * given; segment k of the source pairs with segment k of the destination.
 *
 * vk_scatter: out[doff[k] + idx[i]] = in[i] for every source element i (of
 * segment k) whose flag is non-zero (flags_d NULL: all). idx and flags are
 * source-shaped (n_src). Only written positions change (DPERMUTE copies
 * the default into out_d first), unless MODE has VK_SCATTER_ZERO: then
 * every position no element wrote is 0, as PERMUTE and FPERMUTE leave it
 * (no clearing by the caller). On a collision the later source element
 * wins, as in the runtime; VK_SCATTER_UNIQUE in MODE (without ZERO)
 * promises no collisions (a plain single pass). Kernels queued:
 * kernels/vk_count.h. Collisions are settled by stamps the library keeps
 * between calls (8 bytes a destination element of its longest scatter up
 * to 2^24 elements, freed by vk_pool_trim; a longer one's for the call
 * alone). Not for two host threads at once (nor is the library's error
 * word).
 *
 * vk_gather: out[i] = in[soff[k] + idx[i]] for every destination element i
 * (of segment k); where flags_d is given and flags[i] == 0, out[i] = 0
 * (BFPERMUTE). idx and flags are destination-shaped (n_dst). */
/* A permute's check left on the device: ERR all ones when every index was
 * good, else the first offending position POS = ERR >> 1 and its kind
 * ERR & 1 (0: index J outside its segment of length LEN; 1: segment K has
 * no partner segment). */
typedef struct {
    unsigned long long err;
    long long j, k, len;
} VkPermFault;

enum { VK_SCATTER_UNIQUE = 1, VK_SCATTER_ZERO = 2 };
int vk_scatter(size_t esize, const void *in_d, int64_t n_src, const int32_t *idx_d,
               const int32_t *flags_d, const int32_t *slen_d, const int64_t *soff_d, int64_t sm,
               const int32_t *dlen_d, const int64_t *doff_d, int64_t dm, void *out_d,
               int64_t n_dst, int mode, VkPermFault *fault_d);
int vk_gather(size_t esize, const void *in_d, int64_t n_src, const int32_t *idx_d,
              const int32_t *flags_d, const int32_t *slen_d, const int64_t *soff_d, int64_t sm,
              const int32_t *dlen_d, const int64_t *doff_d, int64_t dm, void *out_d,
              int64_t n_dst, VkPermFault *fault_d);

/* ---- Scattered elements (an in-place REPLACE on a device-resident vector)
 * vk_elems_get: dst_d[k] = src_d[pos_d[k]]; vk_elems_put: dst_d[pos_d[k]] =
 * src_d[k], for k < m, elements of ESIZE (4 or 8) bytes; positions are
 * not checked (the runtime checked them). A position given twice to
 * vk_elems_put keeps one of its values (the runtime gives distinct ones). */
int vk_elems_get(size_t esize, const void *src_d, const int64_t *pos_d, int64_t m, void *dst_d);
int vk_elems_put(size_t esize, void *dst_d, const int64_t *pos_d, int64_t m, const void *src_d);

/* ---- RAND (vcode/SPEC.md §4.14) ---------------------------------------------
 * out_d[0 .. n) = the next n draws of the random() stream whose state is
 * (ring, k) (runtime/core/rand.h's RandState fields), bit-identical to rnd_fill,
 * computed in parallel with the jump-ahead of kernels/rand_jump.h. The
 * host state is not touched: advance it with vkr_jump(ring, &k, n). */
int vk_rand(const uint32_t ring[31], uint64_t k, int64_t n, int32_t *out_d);
/* (The RAND instruction's range step, draw % range with its zero check, is
 * vk_map's OP_MOD: runtime/fused/cuda_tier.c.) */

/* ---- The device tier's instructions (runtime/fused/cuda_tier.c) ------------
 * An argument: a vector (D, a device pointer) or, when D is NULL, one
 * value standing for every element (a lazy fill, a scalar): I for an Int
 * or Bool, F for a Float. */
typedef struct {
    const void *d;
    int32_t i;
    double f;
} VkArg;

/* An elementwise instruction (kernels/vk_elem.h): out_d[i] = OP over
 * element i of ARGS[0 .. nargs) (1 to 3), for i < n. OP is a vcode/program.h
 * opcode, TY the instruction's type operand as a VsElem,
 * FMASK has bit k set when ARGS[k] holds Floats, OUT_F when the result
 * does. FAULT_D (a device word the caller set to all ones; NULL when OP
 * cannot fail) receives the first failing element and its code
 * (vk_fault_pack); the call does not wait for it. */
int vk_map(int op, int ty, int fmask, int out_f, const VkArg *args, int nargs, int64_t n, void *out_d,
           unsigned long long *fault_d);
/* DIST: out_d[i] = VAL's element for the segment holding element i, over
 * the descriptor's offsets OFF_D (m segments tiling n elements). ESIZE
 * is 4 or 8 (VAL's F then used for a scalar). */
int vk_dist(size_t esize, const VkArg *val, const int64_t *off_d, int64_t m, int64_t n, void *out_d);
/* vk_scatter_many: vk_scatter of NV vectors (1 to VK_SCATTER_MANY) at
 * one index, without flags, over one pair of descriptors, in one MODE:
 * IN_D[v] (elements of ESIZE[v] bytes) into OUT_D[v] (N_DST elements
 * each), the index checked once into FAULT_D (as vk_scatter's). Where
 * vk_scatter would take one pass (kernels/vk_count.h
 * vk_scatter_one_pass), one kernel writes every vector's element as it
 * goes (PERMUTE of a tuple's fields at one index: NESL's sequences of
 * records); else one vk_scatter each. */
enum { VK_SCATTER_MANY = 8 };
int vk_scatter_many(int nv, const size_t *esize, const void *const *in_d, void *const *out_d, int64_t n_src,
                    const int32_t *idx_d, const int32_t *slen_d, const int64_t *soff_d, int64_t sm,
                    const int32_t *dlen_d, const int64_t *doff_d, int64_t dm, int64_t n_dst, int mode,
                    VkPermFault *fault_d);
/* vk_scatter_fill_many: vk_scatter_fill of NV vectors (1 to
 * VK_SCATTER_MANY) at one index, without flags, over one pair of
 * descriptors: out_d[v]'s N_DST elements FILL[v]'s value (I for an esize
 * of 4, F for 8), then IN_D[v] scattered over them (MODE 0), the index
 * checked once into FAULT_D. Up to VK_SCATTER_FILL_ONE source elements
 * one kernel (the fills over the grid, the scatters by its last block);
 * else the fills in one kernel, then vk_scatter_many. */
int vk_scatter_fill_many(int nv, const size_t *esize, const VkArg *fill, const void *const *in_d, void *const *out_d,
                         int64_t n_src, const int32_t *idx_d, const int32_t *slen_d, const int64_t *soff_d, int64_t sm,
                         const int32_t *dlen_d, const int64_t *doff_d, int64_t dm, int64_t n_dst,
                         VkPermFault *fault_d);
/* vk_scatter_fill: DPERMUTE into a lazy fill: out_d's N_DST elements
 * FILL's one value (I for an esize of 4, F for 8), then vk_scatter's
 * scatter over them (MODE 0: the later element wins a collision); the
 * check as vk_scatter's. Kernels queued: kernels/vk_count.h (up to
 * VK_SCATTER_FILL_ONE source elements one: the fill over the grid, the
 * scatter by its last block). */
int vk_scatter_fill(size_t esize, const VkArg *fill, const void *in_d, int64_t n_src, const int32_t *idx_d,
                    const int32_t *flags_d, const int32_t *slen_d, const int64_t *soff_d, int64_t sm,
                    const int32_t *dlen_d, const int64_t *doff_d, int64_t dm, void *out_d, int64_t n_dst,
                    VkPermFault *fault_d);
/* INDEX: out_d[i] = start + (i - off[s]) * stride of the segment s that
 * holds element i, in wrapping Int arithmetic. */
int vk_index(const VkArg *start, const VkArg *stride, const int64_t *off_d, int64_t m, int64_t n,
             int32_t *out_d);
/* A chain of elementwise instructions run as one kernel (the device
 * tier's deferred instructions, runtime/fused/cuda_chain.h): NODE[0 ..
 * nn) in order, each an instruction vk_map runs that cannot fail (not
 * an Int / or %), with TY as vk_map's, over NARGS (1 to 3) operands; an
 * operand A[j] >= 0 is node A[j]'s result (an earlier node), A[j] < 0 is
 * leaf -1 - A[j] of LEAF[0 .. nl) (arguments as vk_map's; bit j of LMASK
 * set when leaf j holds Floats; a leaf spread over segments, DIST's
 * operand, has LM[j] > 0 segments whose offsets are LOFF[j] (NULL for
 * one) and reads element s for every element of segment s). A node whose
 * OP is VK_EXPR_COPY is its one operand. OUT[0 .. no): out[k].d[i] = node
 * out[k].node's result at element i (Floats when F); an output whose D
 * is NULL is not written. An output with positions POS (a REPLACE's
 * scatter: n distinct positions on the device) writes element i at
 * D[POS[i]] instead; its storage must not be a leaf of E (another
 * element's leaf could be written before it is read). An element's intermediate results stay in
 * registers, every leaf is read before any output is written (an output
 * may write over a leaf), each leaf is read once and each output written
 * once.
 *
 * A node whose OP is VK_EXPR_GATHER (NARGS 2) is a BPERMUTE's element: A[0]
 * its index (an Int), A[1] a leaf (a vector, not spread) its source. Every
 * gather node of E has the same descriptors: GM segments on each side (GM
 * > 1: the source's lengths GLEN and offsets GSOFF, the destination's
 * offsets GDOFF; GM == 1: one segment, the source GNSRC long). The element
 * is the source's at the offset of the destination segment k that holds
 * it plus the index; an index outside [0, length of source segment k)
 * gives 0 and is reported into GFAULT (required when E has a gather
 * node): the run keeps in a working word (GWORD when given: the
 * library's own on a GPU; else GFAULT->j, set to all ones first) the
 * least (position << 32 | the index's 32 bits) of the bad elements (so a
 * chain with a gather runs over fewer than VK_EXPR_GATHER_MAX elements),
 * and leaves
 * GFAULT a permute's record (VkPermFault: ERR all ones when every index
 * was good, else the least bad position << 1, with its J, K and LEN), in
 * stream order, without a wait. A chain with a gather may have no output
 * (a run for its check alone). The leaf a gather reads must not be
 * storage an output of E writes.
 *
 * A node whose OP is VK_EXPR_INDEX (NARGS 2) is INDEX's element (an Int):
 * A[0] and A[1] leaves spread over INDEX's descriptor (LM >= 1, the same
 * for both; a leaf's VkArg may be one value for every segment), its start
 * and stride; the element is start + (its position in its segment) *
 * stride, in wrapping Int arithmetic (vk_index's). */
enum {
    VK_EXPR_NODES = 64,
    VK_EXPR_LEAVES = 24,
    VK_EXPR_OUTS = 16,
    VK_EXPR_INDEX = 253,
    VK_EXPR_GATHER = 254,
    VK_EXPR_COPY = 255
};
#define VK_EXPR_GATHER_MAX 0xffffffffLL
typedef struct {
    uint8_t op, ty, nargs, unused;
    int8_t a[3], unused2;
} VkExprNode;
typedef struct {
    void *d;
    const int64_t *pos; /* NULL, or element i goes to D[POS[i]] (above) */
    int32_t node, f;
} VkExprOut;
typedef struct {
    VkExprNode node[VK_EXPR_NODES];
    VkArg leaf[VK_EXPR_LEAVES];
    const int64_t *loff[VK_EXPR_LEAVES];
    int64_t lm[VK_EXPR_LEAVES];
    VkExprOut out[VK_EXPR_OUTS];
    int32_t nn, nl, lmask, no;
    VkPermFault *gfault;            /* NULL: no gather node */
    unsigned long long *gword;      /* NULL (the library's own working word on a GPU) */
    const int32_t *glen;
    const int64_t *gsoff, *gdoff;
    int64_t gm, gnsrc;
} VkExpr;
int vk_expr(const VkExpr *e, int64_t n);
/* The same, and the reduction ROP (one segment of N elements, as
 * vk_reduce) of node NODE's results into out_d[0]: the node's values are
 * not written anywhere (unless an output of E is that node). Int and Bool
 * results, and Float MAX/MIN, equal vk_reduce's; Float ADD/MUL combine in
 * a fixed tree order of their own (per-block chunks as the device's SMs
 * make them: the last bits may differ from vk_reduce's, within the
 * documented float bounds; under vk_set_float_exact, and for Float
 * MAX/MIN, the node's values go through a temporary and vk_reduce). */
int vk_expr_reduce(const VkExpr *e, int node, VsRop rop, int64_t n, void *out_d);
/* EXTRACT's and REPLACE's positions: pos_d[k] = off_d[k] + idx[k] for each
 * of the M segments whose lengths and offsets are LEN_D and OFF_D; an index
 * outside its segment writes position 0 and puts vk_fault_pack(k, 1) into
 * FAULT_D (a device word the caller set to all ones: the least such k
 * stays); the call does not wait for it. */
int vk_seg_positions(const VkArg *idx, const int32_t *len_d, const int64_t *off_d, int64_t m, int64_t *pos_d,
                     unsigned long long *fault_d);

#ifdef __cplusplus
}
#endif

#endif

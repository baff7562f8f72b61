/* kernels/vk_permute.cu — scatter and gather with checked segment-relative
 * indices (vcode/SPEC.md §4.4, runtime/interp/ops_permute.c), and PACK's select.
 *
 * One thread per element; the element's segment, when there are several,
 * is found by a binary search over the descriptor's offsets. Errors are
 * reported through one 64-bit word, atomicMin'ed with (position << 1 |
 * kind), so the reported error is the one at the smallest position: the
 * one the sequential runtime would stop at. The word is the library's
 * (vk_words), all ones between calls: the last block of the call's last
 * kernel turns it into the record and sets it back (vk_last_block), so a
 * check costs no clear and no launch of its own.
 *
 * Scatter collisions: the runtime writes in increasing source position, so
 * the last writer wins. Unless the caller promises unique destinations, a
 * first pass has every source element atomicMax a stamp per destination
 * position: this call's generation in the high 32 bits, its position + 1
 * in the low; the second pass writes only the winners and, asked to
 * (VK_SCATTER_ZERO), zeroes the positions no element claimed in this
 * generation. The stamps outlive the call, so they need no clearing: a
 * later generation is always larger (cleared once when they grow, and
 * when the generations wrap). Over 2^32 - 2 source elements, a wide
 * winner word per destination instead, cleared each call.
 *
 * Up to VK_SCATTER_ONE_PASS source elements (kernels/vk_count.h), one
 * kernel does both: every element stamps its destination and writes its
 * value at once; one that finds its destination already stamped in this
 * generation marks a collision, and then the kernel's last block (when
 * every block's stamps and writes are visible to it) writes every
 * destination again from its winner and, asked to, zeroes the positions
 * nobody claimed. Without a collision each written position had one
 * writer, so the one pass is the answer; ZERO is taken so only where
 * no position can be left unwritten without a collision or a bad index
 * (no flags, as many destination elements as source). NESL's permutes
 * are permutations: the last block's second pass is the rare case. */
#include "kernels/vk_internal.cuh"
#include "kernels/vk_elem.h" /* vk_seg_find */

#include <cub/block/block_scan.cuh>
#include <cub/device/device_select.cuh>

#include <limits.h>
#include <string.h>

namespace {

enum { E_INDEX = 0, E_PARTNER = 1 };

__device__ __forceinline__ void report(unsigned long long *err, int64_t pos, int kind)
{
    unsigned long long v = ((unsigned long long)pos << 1) | (unsigned long long)kind;
    if (v < *(volatile unsigned long long *)err) /* most bad elements lose at once: no atomic */
        atomicMin(err, v);
}

struct Side {
    const int32_t *len; /* NULL: unsegmented */
    const int64_t *off;
    int64_t m;
    int64_t n; /* data length (the unsegmented length) */
    __device__ __forceinline__ int64_t length(int64_t k) const
    {
        if (!len)
            return n;
        if (k >= m)
            return 0;
        int32_t l = len[k];
        return l > 0 ? l : 0;
    }
    __device__ __forceinline__ int64_t start(int64_t k) const { return len ? off[k] : 0; }
    /* The segment that holds element I: 0 with one segment, else found
     * over the offsets (vk_elem.h vk_seg_find, the chains' search). */
    __device__ __forceinline__ int64_t seg(int64_t i) const { return !len || m <= 1 ? 0 : vk_seg_find(off, m, i); }
};

/* Destination of source element i, or -1 (skipped, or bad: reported when
 * ERR is given). */
__device__ __forceinline__ int64_t scatter_dest(int64_t i, const int32_t *idx, const int32_t *flags,
                                                const Side &src, const Side &dst, unsigned long long *err)
{
    int64_t k = src.seg(i);
    if (src.len && k >= dst.m) {
        if (err)
            report(err, i, E_PARTNER);
        return -1;
    }
    if (flags && !flags[i])
        return -1;
    int64_t j = idx[i], dl = dst.length(k);
    if (j < 0 || j >= dl) {
        if (err)
            report(err, i, E_INDEX);
        return -1;
    }
    return dst.start(k) + j;
}

/* What a record says: the error word E and what its message needs
 * (POSITIONS: the side the reported position indexes, its segment found
 * there; CHECKED: the side whose length the index broke). */
__device__ __forceinline__ void fault_info(unsigned long long e, const int32_t *idx, const Side &positions,
                                           const Side &checked, VkPermFault *rec)
{
    rec->err = e;
    if (e == ULLONG_MAX)
        return;
    long long pos = (long long)(e >> 1);
    int64_t k = positions.seg(pos);
    rec->k = k;
    rec->j = idx[pos];
    rec->len = checked.len ? (k < checked.m ? (checked.len[k] > 0 ? checked.len[k] : 0) : 0) : checked.n;
}

/* The record REC made by the last block of a kernel from the error word
 * ERR, set back to all ones. Reached by every thread. */
__device__ __forceinline__ void record_now(unsigned long long *err, const int32_t *idx, const Side &positions,
                                           const Side &checked, VkPermFault *rec)
{
    unsigned long long e = *(volatile unsigned long long *)err;
    *err = ULLONG_MAX;
    fault_info(e, idx, positions, checked, rec);
}

__device__ __forceinline__ void record(unsigned long long *err, unsigned int *done, const int32_t *idx,
                                       const Side &positions, const Side &checked, VkPermFault *rec)
{
    if (vk_last_block(done))
        record_now(err, idx, positions, checked, rec);
}

/* What a one-pass scatter writes: one vector's element (OneVec), or the
 * same element of each of several vectors at one index (ManyVecs,
 * vk_scatter_many). PUT: source element I to destination position D;
 * CLEAR: position D zeroed. */
template <class U>
struct OneVec {
    const U *in;
    U *out;
    U fillv; /* (k_fill_scatter's) */
    __device__ __forceinline__ void put(int64_t d, int64_t i) const { out[d] = in[i]; }
    __device__ __forceinline__ void clear(int64_t d) const { out[d] = 0; }
    __device__ __forceinline__ void fill(int64_t d) const { out[d] = fillv; }
};

struct ManyVecs {
    const void *in[VK_SCATTER_MANY];
    void *out[VK_SCATTER_MANY];
    unsigned long long fillv[VK_SCATTER_MANY]; /* (k_fill_scatter's: the bits, low 32 for 4 bytes) */
    int nv;
    unsigned wide; /* bit v: vector v's elements are 8 bytes (else 4) */
    __device__ __forceinline__ void fill(int64_t d) const
    {
        for (int v = 0; v < nv; v++) {
            if ((wide >> v) & 1)
                ((unsigned long long *)out[v])[d] = fillv[v];
            else
                ((uint32_t *)out[v])[d] = (uint32_t)fillv[v];
        }
    }
    __device__ __forceinline__ void put(int64_t d, int64_t i) const
    {
        for (int v = 0; v < nv; v++) {
            if ((wide >> v) & 1)
                ((unsigned long long *)out[v])[d] = ((const unsigned long long *)in[v])[i];
            else
                ((uint32_t *)out[v])[d] = ((const uint32_t *)in[v])[i];
        }
    }
    __device__ __forceinline__ void clear(int64_t d) const
    {
        for (int v = 0; v < nv; v++) {
            if ((wide >> v) & 1)
                ((unsigned long long *)out[v])[d] = 0;
            else
                ((uint32_t *)out[v])[d] = 0;
        }
    }
};

/* One block (the last of a one-pass kernel) writes every source
 * element that won its destination (its stamp GEN | (i + 1)). */
template <class V>
__device__ __forceinline__ void block_write_winners(const V &vs, int64_t n, const int32_t *idx, const int32_t *flags,
                                                    const Side &src, const Side &dst, const unsigned long long *winner,
                                                    unsigned long long gen)
{
    const volatile unsigned long long *w = winner;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        int64_t d = scatter_dest(i, idx, flags, src, dst, nullptr);
        if (d >= 0 && w[d] == (gen | (unsigned long long)(i + 1)))
            vs.put(d, i);
    }
}

/* The claim pass: GEN | (i + 1) into the stamp of i's destination (GEN in
 * the high 32 bits), or i + 1 into a wide winner word (GEN 0). */
template <class W>
__global__ void k_scatter_claim(int64_t n, const int32_t *idx, const int32_t *flags, Side src, Side dst, W *winner,
                                unsigned long long gen, unsigned long long *err)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t d = scatter_dest(i, idx, flags, src, dst, err);
        if (d >= 0)
            atomicMax(&winner[d], (W)(gen | (unsigned long long)(i + 1)));
    }
}

/* The writing pass over max(N, N_DST) threads: the winners (or, without
 * a claim pass, every element, checked here); ZERO: a position of the
 * destination that no element of this generation claimed gets 0. */
template <class U, class W>
__global__ void k_scatter(const U *in, int64_t n, const int32_t *idx, const int32_t *flags, Side src, Side dst,
                          const W *winner, unsigned long long gen, int zero, int64_t n_dst, U *out,
                          unsigned long long *err, unsigned int *done, VkPermFault *rec)
{
    int64_t all = zero && n_dst > n ? n_dst : n;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < all;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (i < n) {
            int64_t d = scatter_dest(i, idx, flags, src, dst, winner ? nullptr : err);
            if (d >= 0 && (!winner || winner[d] == (W)(gen | (unsigned long long)(i + 1))))
                out[d] = in[i];
        }
        if (zero && i < n_dst && (unsigned long long)winner[i] >> 32 != gen >> 32)
            out[i] = 0;
    }
    record(err, done, idx, src, dst, rec);
}

/* The one-pass scatter (above) of what VS writes: COLLIDE is the
 * library's collision word, 0 between kernels (set back by the last
 * block). */
template <class V>
__global__ void k_scatter_one(V vs, int64_t n, const int32_t *idx, const int32_t *flags, Side src, Side dst,
                              unsigned long long *winner, unsigned long long gen, int zero, int64_t n_dst,
                              unsigned long long *err, unsigned int *done, unsigned int *collide, VkPermFault *rec)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t d = scatter_dest(i, idx, flags, src, dst, err);
        if (d < 0)
            continue;
        unsigned long long old = atomicMax(&winner[d], gen | (unsigned long long)(i + 1));
        if (old >> 32 == gen >> 32)
            atomicExch(collide, 1u);
        vs.put(d, i);
    }
    if (!vk_is_last_block(done))
        return;
    __shared__ unsigned int again;
    if (threadIdx.x == 0)
        again = atomicExch(collide, 0u);
    __syncthreads();
    if (again) { /* the winners written last; ZERO: the unclaimed cleared */
        block_write_winners(vs, n, idx, flags, src, dst, winner, gen);
        const volatile unsigned long long *w = winner;
        if (zero)
            for (int64_t i = threadIdx.x; i < n_dst; i += blockDim.x)
                if (w[i] >> 32 != gen >> 32)
                    vs.clear(i);
    }
    if (threadIdx.x == 0)
        record_now(err, idx, src, dst, rec);
}

/* vk_scatter_fill's one kernel (of what VS writes: one vector, or several
 * at one index): the fill value into every one of the N_DST destination
 * elements over the grid; then, every block's fill visible to it, the
 * last block scatters the N source elements: each claims its destination
 * (the stamps), then the winners write. */
template <class V>
__global__ void k_fill_scatter(V vs, int64_t n, const int32_t *idx, const int32_t *flags, Side src, Side dst,
                               unsigned long long *winner, unsigned long long gen, int64_t n_dst,
                               unsigned long long *err, unsigned int *done, VkPermFault *rec)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_dst; i += (int64_t)gridDim.x * blockDim.x)
        vs.fill(i);
    if (!vk_is_last_block(done))
        return;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        int64_t d = scatter_dest(i, idx, flags, src, dst, err);
        if (d >= 0)
            atomicMax(&winner[d], gen | (unsigned long long)(i + 1));
    }
    __syncthreads();
    block_write_winners(vs, n, idx, flags, src, dst, winner, gen);
    if (threadIdx.x == 0)
        record_now(err, idx, src, dst, rec);
}

template <class U>
__global__ void k_gather(const U *in, int64_t n, const int32_t *idx, const int32_t *flags, Side src, Side dst, U *out,
                         unsigned long long *err, unsigned int *done, VkPermFault *rec)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (flags && !flags[i]) {
            out[i] = 0;
            continue;
        }
        int64_t k = dst.seg(i);
        int64_t j = idx[i], sl = src.length(k);
        if (j < 0 || j >= sl) {
            report(err, i, dst.len && k >= src.m ? E_PARTNER : E_INDEX);
            continue;
        }
        out[i] = in[src.start(k) + j];
    }
    record(err, done, idx, dst, src, rec);
}

/* The scatter's stamps: at least N_DST of them into *ST, and this call's
 * generation (high 32 bits) in *GEN. Kept between calls up to
 * VK_STAMPS_KEPT destination elements (8 bytes each: the library's
 * scratch, freed by vk_pool_trim); a longer destination's are TMP's,
 * cleared, for this call alone. */
unsigned long long *stamp_d;
int64_t stamp_cap;
uint32_t stamp_gen;

int stamps(int64_t n_dst, unsigned long long *gen, unsigned long long **st, VkTemp &tmp)
{
    if (n_dst > VK_STAMPS_KEPT) {
        if (tmp.alloc((size_t)n_dst * 8) != 0)
            return -1;
        VK_CLEAR(cudaMemsetAsync(tmp.p, 0, (size_t)n_dst * 8, 0));
        *st = tmp.as<unsigned long long>();
        *gen = 1ull << 32;
        return 0;
    }
    if (n_dst > stamp_cap) {
        vk_free(stamp_d);
        stamp_d = nullptr;
        stamp_cap = 0;
        int64_t cap = n_dst < 4096 ? 4096 : n_dst;
        stamp_d = (unsigned long long *)vk_alloc((size_t)cap * sizeof *stamp_d);
        if (!stamp_d)
            return -1;
        VK_CLEAR(cudaMemsetAsync(stamp_d, 0, (size_t)cap * sizeof *stamp_d, 0));
        stamp_cap = cap;
        stamp_gen = 0;
    }
    if (++stamp_gen == 0) { /* the generations wrapped: every stamp is old again */
        VK_CLEAR(cudaMemsetAsync(stamp_d, 0, (size_t)stamp_cap * sizeof *stamp_d, 0));
        stamp_gen = 1;
    }
    *gen = (unsigned long long)stamp_gen << 32;
    *st = stamp_d;
    return 0;
}

} // namespace

/* The kept stamps freed (vk_pool_trim). */
void vk_permute_release(void)
{
    vk_free(stamp_d);
    stamp_d = nullptr;
    stamp_cap = 0;
    stamp_gen = 0;
}

namespace {

/* Nothing to check: the caller's record says so (no wait). */
int no_fault(VkPermFault *fault)
{
    if (fault)
        VK_CLEAR(cudaMemsetAsync(&fault->err, 0xff, sizeof fault->err, 0));
    return 0;
}

/* Where the check's outcome goes: the caller's record FAULT (no wait),
 * or without one a record of its own, in OWN, read back after the run;
 * and the library's error word and block count (*E, *DONE). NULL when
 * either cannot be had (the message set). */
VkPermFault *check_words(VkPermFault *fault, VkTemp &own, unsigned long long **e, unsigned int **done)
{
    if (vk_words(e, done) != 0)
        return nullptr;
    if (fault)
        return fault;
    if (own.alloc(sizeof(VkPermFault)) != 0)
        return nullptr;
    return own.as<VkPermFault>();
}

/* The outcome read back when the caller gave no record: 0, or -1 with the
 * runtime's message (PARTNER_SIDE names the descriptor a segment without
 * a partner belongs to). */
int read_check(const VkPermFault *fault, const VkPermFault *rec, const char *partner_side)
{
    if (fault)
        return 0;
    VkPermFault h;
    VK_CUDA(cudaMemcpy(&h, rec, sizeof h, cudaMemcpyDeviceToHost));
    if (h.err == ULLONG_MAX)
        return 0;
    if ((h.err & 1) == E_PARTNER)
        return vk_fail(VS_MSG_PERMUTE_PARTNER, h.k, partner_side);
    return vk_fail(VS_MSG_PERMUTE_INDEX, h.j, (long long)(h.err >> 1), h.len);
}

int setup(size_t esize, const int32_t *slen, const int64_t *soff, int64_t sm, const int32_t *dlen,
          const int64_t *doff, int64_t dm, int64_t n_src, int64_t n_dst, Side *src, Side *dst,
          const char *what)
{
    if (vk_ready() != 0)
        return -1;
    if (esize != 4 && esize != 8)
        return vk_fail("%s: element size %zu (must be 4 or 8)", what, esize);
    if (!slen != !dlen || (slen && (!soff || !doff)))
        return vk_fail("%s: give both segment descriptors or neither", what);
    if (n_src < 0 || n_dst < 0 || (slen && (sm < 0 || dm < 0)))
        return vk_fail("%s: negative length", what);
    if (slen && (sm > INT32_MAX || dm > INT32_MAX))
        return vk_fail("%s: too many segments", what);
    *src = Side{ slen, soff, slen ? sm : 1, n_src };
    *dst = Side{ dlen, doff, dlen ? dm : 1, n_dst };
    return 0;
}

template <class U>
int scatter_run(const U *in, int64_t n_src, const int32_t *idx_d, const int32_t *flags_d, const Side &src,
                const Side &dst, U *out, int64_t n_dst, int mode, unsigned long long *e, unsigned int *done,
                unsigned int *collide, VkPermFault *rec)
{
    int zero = (mode & VK_SCATTER_ZERO) != 0, claim = zero || !(mode & VK_SCATTER_UNIQUE);
    if (claim && vk_scatter_one_pass(n_src, n_dst, mode, flags_d != NULL)) {
        unsigned long long gen, *st;
        VkTemp unused;
        if (stamps(n_dst, &gen, &st, unused) != 0)
            return -1;
        k_scatter_one<OneVec<U>><<<vk_grid(n_src, 256), 256>>>(OneVec<U>{ in, out, 0 }, n_src, idx_d, flags_d, src,
                                                               dst, st, gen, zero, n_dst, e, done, collide, rec);
        VK_LAUNCHED();
        return 0;
    }
    int wide = n_src >= (int64_t)UINT32_MAX - 1;
    int64_t all = zero && n_dst > n_src ? n_dst : n_src;
    unsigned grid = vk_grid(all, 256);
    if (!claim) {
        k_scatter<U, unsigned long long><<<grid, 256>>>(in, n_src, idx_d, flags_d, src, dst, nullptr, 0, 0, n_dst,
                                                        out, e, done, rec);
        VK_LAUNCHED();
        return 0;
    }
    if (wide) { /* a winner word per destination, cleared; ZERO: the result cleared first */
        VkTemp win;
        if (win.alloc((size_t)(n_dst > 0 ? n_dst : 1) * 8) != 0)
            return -1;
        VK_CLEAR(cudaMemsetAsync(win.p, 0, (size_t)(n_dst > 0 ? n_dst : 1) * 8, 0));
        if (zero && n_dst > 0)
            VK_CLEAR(cudaMemsetAsync(out, 0, (size_t)n_dst * sizeof(U), 0));
        k_scatter_claim<unsigned long long><<<vk_grid(n_src, 256), 256>>>(n_src, idx_d, flags_d, src, dst,
                                                                          win.as<unsigned long long>(), 0, e);
        VK_LAUNCHED();
        k_scatter<U, unsigned long long><<<vk_grid(n_src, 256), 256>>>(in, n_src, idx_d, flags_d, src, dst,
                                                                       win.as<unsigned long long>(), 0, 0, n_dst,
                                                                       out, e, done, rec);
        VK_LAUNCHED();
        return 0;
    }
    unsigned long long gen, *st;
    VkTemp once;
    if (stamps(n_dst, &gen, &st, once) != 0)
        return -1;
    k_scatter_claim<unsigned long long><<<vk_grid(n_src, 256), 256>>>(n_src, idx_d, flags_d, src, dst, st, gen, e);
    VK_LAUNCHED();
    k_scatter<U, unsigned long long><<<grid, 256>>>(in, n_src, idx_d, flags_d, src, dst, st, gen, zero, n_dst, out,
                                                    e, done, rec);
    VK_LAUNCHED();
    return 0;
}

} // namespace

extern "C" int vk_scatter(size_t esize, const void *in_d, int64_t n_src, const int32_t *idx_d,
                          const int32_t *flags_d, const int32_t *slen_d, const int64_t *soff_d,
                          int64_t sm, const int32_t *dlen_d, const int64_t *doff_d, int64_t dm,
                          void *out_d, int64_t n_dst, int mode, VkPermFault *fault_d)
{
    Side src, dst;
    if (setup(esize, slen_d, soff_d, sm, dlen_d, doff_d, dm, n_src, n_dst, &src, &dst,
              "vk_scatter") != 0)
        return -1;
    if (n_src == 0 || src.m == 0) {
        if ((mode & VK_SCATTER_ZERO) && n_dst > 0) /* nothing claims a position */
            VK_CLEAR(cudaMemsetAsync(out_d, 0, (size_t)n_dst * esize, 0));
        return no_fault(fault_d);
    }
    unsigned long long *e;
    unsigned int *done, *collide;
    VkTemp own;
    VkPermFault *rec = check_words(fault_d, own, &e, &done);
    if (!rec || vk_collide_word(&collide) != 0)
        return -1;
    int rc = esize == 4 ? scatter_run((const uint32_t *)in_d, n_src, idx_d, flags_d, src, dst, (uint32_t *)out_d,
                                      n_dst, mode, e, done, collide, rec)
                        : scatter_run((const unsigned long long *)in_d, n_src, idx_d, flags_d, src, dst,
                                      (unsigned long long *)out_d, n_dst, mode, e, done, collide, rec);
    if (rc != 0) { /* the claim pass may have reported: the word set back for whoever goes on */
        (void)cudaMemsetAsync(e, 0xff, sizeof *e, 0);
        return rc;
    }
    return read_check(fault_d, rec, "destination");
}

namespace {

/* *VS: the NV vectors IN_D to OUT_D of sizes ESIZE (and their FILL
 * values, when not NULL), with the source's and the destination's sides
 * (*SRC, *DST) set up as for each of them; -1 when setup refuses one. */
int many_vecs(int nv, const size_t *esize, const VkArg *fill, const void *const *in_d, void *const *out_d,
              const int32_t *slen_d, const int64_t *soff_d, int64_t sm, const int32_t *dlen_d, const int64_t *doff_d,
              int64_t dm, int64_t n_src, int64_t n_dst, Side *src, Side *dst, ManyVecs *vs, const char *who)
{
    memset(vs, 0, sizeof *vs);
    vs->nv = nv;
    for (int v = 0; v < nv; v++) {
        if (setup(esize[v], slen_d, soff_d, sm, dlen_d, doff_d, dm, n_src, n_dst, src, dst, who) != 0)
            return -1;
        vs->in[v] = in_d[v];
        vs->out[v] = out_d[v];
        vs->wide |= (esize[v] == 8 ? 1u : 0u) << v;
        if (!fill)
            continue;
        if (esize[v] == 8)
            memcpy(&vs->fillv[v], &fill[v].f, sizeof vs->fillv[v]);
        else
            vs->fillv[v] = (uint32_t)fill[v].i;
    }
    return 0;
}

} // namespace

extern "C" int vk_scatter_many(int nv, const size_t *esize, const void *const *in_d, void *const *out_d,
                               int64_t n_src, const int32_t *idx_d, const int32_t *slen_d, const int64_t *soff_d,
                               int64_t sm, const int32_t *dlen_d, const int64_t *doff_d, int64_t dm, int64_t n_dst,
                               int mode, VkPermFault *fault_d)
{
    if (nv < 1 || nv > VK_SCATTER_MANY)
        return vk_fail("vk_scatter_many: %d vectors (1 to %d)", nv, VK_SCATTER_MANY);
    int claim = (mode & VK_SCATTER_ZERO) || !(mode & VK_SCATTER_UNIQUE);
    if (nv == 1 || !claim || !vk_scatter_one_pass(n_src, n_dst, mode, 0) || (slen_d && sm == 0)) {
        for (int v = 0; v < nv; v++) /* one scatter each (each writes the same record) */
            if (vk_scatter(esize[v], in_d[v], n_src, idx_d, nullptr, slen_d, soff_d, sm, dlen_d, doff_d, dm, out_d[v],
                           n_dst, mode, fault_d) != 0)
                return -1;
        return 0;
    }
    Side src, dst;
    ManyVecs vs;
    if (many_vecs(nv, esize, nullptr, in_d, out_d, slen_d, soff_d, sm, dlen_d, doff_d, dm, n_src, n_dst, &src, &dst,
                  &vs, "vk_scatter_many") != 0)
        return -1;
    unsigned long long *e, gen, *st;
    unsigned int *done, *collide;
    VkTemp own, unused;
    VkPermFault *rec = check_words(fault_d, own, &e, &done);
    if (!rec || vk_collide_word(&collide) != 0 || stamps(n_dst, &gen, &st, unused) != 0)
        return -1;
    k_scatter_one<ManyVecs><<<vk_grid(n_src, 256), 256>>>(vs, n_src, idx_d, nullptr, src, dst, st, gen,
                                                          (mode & VK_SCATTER_ZERO) != 0, n_dst, e, done, collide, rec);
    VK_LAUNCHED();
    return read_check(fault_d, rec, "destination");
}

namespace {

/* The fills and the scatter over them in one launch (k_fill_scatter) of
 * the vectors VS (OneVec or ManyVecs), the index checks into FAULT_D's
 * record (or read here). */
template <class V>
int fill_scatter_one(const V &vs, int64_t n_src, const int32_t *idx_d, const int32_t *flags_d, const Side &src,
                     const Side &dst, int64_t n_dst, VkPermFault *fault_d)
{
    unsigned long long *e, gen, *st;
    unsigned int *done;
    VkTemp own, unused;
    VkPermFault *rec = check_words(fault_d, own, &e, &done);
    if (!rec || stamps(n_dst, &gen, &st, unused) != 0)
        return -1;
    int64_t n = src.m == 0 ? 0 : n_src; /* no source segment: nothing scattered */
    k_fill_scatter<V><<<vk_grid(n_dst, 256), 256>>>(vs, n, idx_d, flags_d, src, dst, st, gen, n_dst, e, done, rec);
    VK_LAUNCHED();
    return read_check(fault_d, rec, "destination");
}

} // namespace

extern "C" int vk_scatter_fill(size_t esize, const VkArg *fill, const void *in_d, int64_t n_src,
                               const int32_t *idx_d, const int32_t *flags_d, const int32_t *slen_d,
                               const int64_t *soff_d, int64_t sm, const int32_t *dlen_d, const int64_t *doff_d,
                               int64_t dm, void *out_d, int64_t n_dst, VkPermFault *fault_d)
{
    Side src, dst;
    if (setup(esize, slen_d, soff_d, sm, dlen_d, doff_d, dm, n_src, n_dst, &src, &dst, "vk_scatter_fill") != 0)
        return -1;
    if (!vk_scatter_fill_one(n_src, n_dst)) { /* the fill, then the scatter */
        if (n_dst > 0 && vk_dist(esize, fill, nullptr, 1, n_dst, out_d) != 0)
            return -1;
        return vk_scatter(esize, in_d, n_src, idx_d, flags_d, slen_d, soff_d, sm, dlen_d, doff_d, dm, out_d, n_dst, 0,
                          fault_d);
    }
    if (esize == 4) {
        OneVec<uint32_t> vs{ (const uint32_t *)in_d, (uint32_t *)out_d, (uint32_t)fill->i };
        return fill_scatter_one(vs, n_src, idx_d, flags_d, src, dst, n_dst, fault_d);
    }
    unsigned long long bits;
    memcpy(&bits, &fill->f, sizeof bits);
    OneVec<unsigned long long> vs{ (const unsigned long long *)in_d, (unsigned long long *)out_d, bits };
    return fill_scatter_one(vs, n_src, idx_d, flags_d, src, dst, n_dst, fault_d);
}

namespace {

/* ManyVecs's fills: each output's N elements its fill value, one launch. */
__global__ void k_fill_many(ManyVecs vs, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        vs.fill(i);
}

} // namespace

extern "C" int vk_scatter_fill_many(int nv, const size_t *esize, const VkArg *fill, const void *const *in_d,
                                    void *const *out_d, int64_t n_src, const int32_t *idx_d, const int32_t *slen_d,
                                    const int64_t *soff_d, int64_t sm, const int32_t *dlen_d, const int64_t *doff_d,
                                    int64_t dm, int64_t n_dst, VkPermFault *fault_d)
{
    if (nv < 1 || nv > VK_SCATTER_MANY)
        return vk_fail("vk_scatter_fill_many: %d vectors (1 to %d)", nv, VK_SCATTER_MANY);
    if (nv == 1)
        return vk_scatter_fill(esize[0], fill, in_d[0], n_src, idx_d, nullptr, slen_d, soff_d, sm, dlen_d, doff_d, dm,
                               out_d[0], n_dst, fault_d);
    Side src, dst;
    ManyVecs vs;
    if (many_vecs(nv, esize, fill, in_d, out_d, slen_d, soff_d, sm, dlen_d, doff_d, dm, n_src, n_dst, &src, &dst, &vs,
                  "vk_scatter_fill_many") != 0)
        return -1;
    if (!vk_scatter_fill_one(n_src, n_dst)) { /* the fills in one launch, then the scatters at one index */
        if (n_dst > 0) {
            k_fill_many<<<vk_grid(n_dst, 256), 256>>>(vs, n_dst);
            VK_LAUNCHED();
        }
        return vk_scatter_many(nv, esize, in_d, out_d, n_src, idx_d, slen_d, soff_d, sm, dlen_d, doff_d, dm, n_dst, 0,
                               fault_d);
    }
    return fill_scatter_one(vs, n_src, idx_d, nullptr, src, dst, n_dst, fault_d);
}

extern "C" int vk_gather(size_t esize, const void *in_d, int64_t n_src, const int32_t *idx_d,
                         const int32_t *flags_d, const int32_t *slen_d, const int64_t *soff_d,
                         int64_t sm, const int32_t *dlen_d, const int64_t *doff_d, int64_t dm,
                         void *out_d, int64_t n_dst, VkPermFault *fault_d)
{
    Side src, dst;
    if (setup(esize, slen_d, soff_d, sm, dlen_d, doff_d, dm, n_src, n_dst, &src, &dst,
              "vk_gather") != 0)
        return -1;
    if (n_dst == 0 || dst.m == 0)
        return no_fault(fault_d);
    unsigned long long *e;
    unsigned int *done;
    VkTemp own;
    VkPermFault *rec = check_words(fault_d, own, &e, &done);
    if (!rec)
        return -1;
    unsigned grid = vk_grid(n_dst, 256);
    if (esize == 4)
        k_gather<uint32_t><<<grid, 256>>>((const uint32_t *)in_d, n_dst, idx_d, flags_d, src, dst,
                                          (uint32_t *)out_d, e, done, rec);
    else
        k_gather<unsigned long long><<<grid, 256>>>((const unsigned long long *)in_d, n_dst, idx_d, flags_d, src,
                                                    dst, (unsigned long long *)out_d, e, done, rec);
    VK_LAUNCHED();
    return read_check(fault_d, rec, "source");
}

/* ---- PACK ---- */

namespace {
constexpr int SEL_TB = 256, SEL_IPT = 8;

/* The kept elements before the tile, for BlockScan (its first warp calls
 * it; thread 0's C is the count at the end). */
struct KeptCarry {
    int c;
    __device__ __forceinline__ int operator()(int tile)
    {
        int old = c;
        c += tile;
        return old;
    }
};
struct AddInt {
    __device__ __forceinline__ int operator()(int a, int b) const { return a + b; }
};

/* PACK of up to VK_SELECT_ONE_BLOCK elements: one block over its tiles,
 * each element's place an exclusive sum of the flags before it. */
template <class U>
__global__ void __launch_bounds__(SEL_TB) k_select_block(const U *in, const int32_t *flags, int64_t n, U *out,
                                                         int64_t *count)
{
    typedef cub::BlockScan<int, SEL_TB> Scan;
    __shared__ typename Scan::TempStorage tmp;
    KeptCarry carry;
    carry.c = 0;
    for (int64_t t0 = 0; t0 < n; t0 += SEL_TB * SEL_IPT) {
        int x[SEL_IPT], e[SEL_IPT];
#pragma unroll
        for (int j = 0; j < SEL_IPT; j++) {
            int64_t i = t0 + (int64_t)threadIdx.x * SEL_IPT + j;
            x[j] = i < n && flags[i] != 0;
        }
        Scan(tmp).ExclusiveScan(x, e, AddInt(), carry);
        __syncthreads();
#pragma unroll
        for (int j = 0; j < SEL_IPT; j++)
            if (x[j])
                out[e[j]] = in[t0 + (int64_t)threadIdx.x * SEL_IPT + j];
    }
    if (threadIdx.x == 0)
        *count = carry.c;
}
} // namespace

template <class U>
static int select_flagged(const U *in, const int32_t *flags, int64_t n, U *out, int64_t *count)
{
    VkTemp cnt;
    if (cnt.alloc(sizeof(int64_t)) != 0)
        return -1;
    if (n <= VK_SELECT_ONE_BLOCK) {
        k_select_block<U><<<1, SEL_TB>>>(in, flags, n, out, cnt.as<int64_t>());
        VK_LAUNCHED();
        if (count)
            VK_CUDA(cudaMemcpy(count, cnt.p, sizeof(int64_t), cudaMemcpyDeviceToHost));
        return 0;
    }
    size_t bytes = 0;
    VK_CUDA(cub::DeviceSelect::Flagged(nullptr, bytes, in, flags, out, cnt.as<int64_t>(), n));
    VkTemp tmp;
    if (tmp.alloc(bytes) != 0)
        return -1;
    VkCount q = vk_count_select(n);
    VK_CUB(cub::DeviceSelect::Flagged(tmp.p, bytes, in, flags, out, cnt.as<int64_t>(), n), q.k, q.c);
    if (count)
        VK_CUDA(cudaMemcpy(count, cnt.p, sizeof(int64_t), cudaMemcpyDeviceToHost));
    return 0;
}

extern "C" int vk_select_flagged(VsElem type, const void *in_d, const int32_t *flags_d, int64_t n,
                                 void *out_d, int64_t *count_host)
{
    if (vk_ready() != 0)
        return -1;
    if (n <= 0) {
        if (count_host)
            *count_host = 0;
        return 0;
    }
    if (type == VS_FLOAT)
        return select_flagged((const unsigned long long *)in_d, flags_d, n,
                              (unsigned long long *)out_d, count_host);
    if (type == VS_INT || type == VS_BOOL)
        return select_flagged((const uint32_t *)in_d, flags_d, n, (uint32_t *)out_d, count_host);
    return vk_fail("vk_select_flagged: bad type %d", (int)type);
}

/* ---- Scattered elements ---- */

template <typename T>
__global__ void k_elems(T *dst, const T *src, const int64_t *pos, int64_t m, int put)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < m; k += (int64_t)blockDim.x * gridDim.x) {
        if (put)
            dst[pos[k]] = src[k];
        else
            dst[k] = src[pos[k]];
    }
}

static int elems(size_t esize, void *dst, const void *src, const int64_t *pos, int64_t m, int put, const char *who)
{
    if (vk_ready() != 0)
        return -1;
    if (esize != 4 && esize != 8)
        return vk_fail("%s: element size %zu", who, esize);
    if (m <= 0)
        return 0;
    unsigned grid = vk_grid(m, 256);
    if (esize == 4)
        k_elems<uint32_t><<<grid, 256>>>((uint32_t *)dst, (const uint32_t *)src, pos, m, put);
    else
        k_elems<unsigned long long><<<grid, 256>>>((unsigned long long *)dst, (const unsigned long long *)src, pos, m,
                                                   put);
    VK_LAUNCHED();
    return 0;
}

extern "C" int vk_elems_get(size_t esize, const void *src_d, const int64_t *pos_d, int64_t m, void *dst_d)
{
    return elems(esize, dst_d, src_d, pos_d, m, 0, "vk_elems_get");
}

extern "C" int vk_elems_put(size_t esize, void *dst_d, const int64_t *pos_d, int64_t m, const void *src_d)
{
    return elems(esize, dst_d, src_d, pos_d, m, 1, "vk_elems_put");
}

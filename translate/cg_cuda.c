/* translate/cg_cuda.c — the CUDA target's SOAC skeletons (see codegen.h for
 * the protocol the runtime drives them with).
 *
 * Element-wise entry points are grid-stride loops over the SOAC's
 * iteration space with the thunks inlined, one element per iteration, no
 * shared memory and no barriers: MAP and ONCE, the flags and the scatter
 * of a filter (P_flags, P_pack; the runtime scans the flags in between),
 * the two passes of the permutes (claim, then write: collisions resolve as
 * in the reference), and the element values of a reduction or scan for the
 * primitives (P_vals, the general path). The fused reductions and scans
 * combine inside the kernel: a block-level reduce over contiguous chunks
 * with the partials combined by a second pass (P_red), the matching
 * chunked block scan from scanned partials (P_scan3), and segmented
 * reductions with a group of 1, VK_WARP or blockDim.x threads per segment
 * (P_sred1/w/b) and segmented scans likewise (P_sscan1/w/b); FILTER, PARTITION and one-segment SEG_FILTER count per block, then scan each
 * tile's flags and scatter in one kernel (P_fcount, P_fpack). They combine
 * in shared memory with __syncthreads only (no
 * warp shuffles: the emulated device runs the same text). A failing check
 * records the first error in the error record and skips the element's
 * write, so a bad index never writes out of bounds. Element-wise segmented
 * SOACs find an element's segment by binary search on the descriptor's
 * offsets, helped by a per-thread hint; the per-segment skeletons know it. */
#include "translate/codegen.h"
#include "translate/codegen_abi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void head(CgBuf *b, const char *name, int j, const char *phase, const char *extra)
{
    cg_printf(b, "extern \"C\" __global__ void %s_s%d_%s(const vk_arr *VK_RESTRICT V, vk_errp er, int64_t n%s)\n{\n", name, j,
              phase, extra);
}

static void decl_hints(CgBuf *b, int hints)
{
    cg_printf(b, "    int64_t hint[%d] = {0};\n    (void)hint;\n", hints);
}

/* Result pointers o<k> = V[res[first + k]].d for K in [0, n). */
static void out_ptrs(CgBuf *b, const LcuSoac *s, const LcuVarType *types, int first, int n, int prefix)
{
    for (int r = 0; r < n; r++) {
        int v = s->res[first + r];
        const char *ct = cg_ctype(types[v].base);
        cg_printf(b, "    %s *o%d = (%s *)V[%d].d;\n", ct, prefix + r, ct, v);
    }
}

/* The SOAC being emitted has fast pulls (cg_emit_soac_fast_thunks: x[i]
 * read with no bounds check, so that the loads of V[k].d are the loop's
 * invariants) when FAST_LOADS.n > 0; calls made while FAST_ON go to them.
 * A loop takes them when its whole range of i lies below `lim`, the
 * shortest of the arrays they read (cg_emit_lim; "n" its start: NVRTC has
 * no INT64_MAX, and every range of i is within [0, n)). */
static _Thread_local CgIndexLoads fast_loads;
static _Thread_local int fast_on;

static void call(CgBuf *b, const char *name, int j, const char *role, const char *seg)
{
    int f = fast_on && !strcmp(role, "pull") && (fast_loads.roles & 1);
    cg_printf(b, "%s_s%d_%s%s(V, er, i, %s, hint", name, j, role, f ? "f" : "", seg);
}

/* 1 when the SOAC's pull has a fast variant. */
static int has_fast_pull(void) { return fast_loads.n > 0 && (fast_loads.roles & 1); }

/* A loop over i of SOAC J (LOOP emits it; its pulls go through call()).
 * When the pull has a fast variant: the bound check (cg_emit_lim, SV the
 * descriptor the pull reads at its segment, -1: none), then the loop with
 * the fast pulls where COND holds and the checked loop elsewhere;
 * otherwise the checked loop alone. */
typedef struct {
    const char *name;
    int j;
    const LcuSoac *s;
} LoopArgs;

static void checked_or_fast(CgBuf *b, int sv, const char *cond, void (*loop)(CgBuf *, const LoopArgs *),
                            const LoopArgs *a)
{
    int fast = has_fast_pull();
    if (fast) {
        cg_emit_lim(b, &fast_loads, sv, "    ", "n");
        cg_printf(b, "    if (%s) {\n", cond);
    }
    for (int f = fast; f >= 0; f--) {
        fast_on = f;
        loop(b, a);
        if (fast)
            cg_puts(b, f ? "    } else {\n" : "    }\n");
    }
    fast_on = 0;
}

static void out_args(CgBuf *b, int first, int n, const char *at)
{
    for (int r = 0; r < n; r++)
        cg_printf(b, ", &o%d[%s]", first + r, at);
}

/* The element's segment in descriptor SV (sane descriptors only: the
 * runtime runs the others on the host). */
static void seg_of(CgBuf *b, int sv)
{
    cg_printf(b, "        int64_t sg = vk_seg_of(er, &V[%d], %d, i, &sh);\n", sv, sv);
}

static void map_loop(CgBuf *b, const LoopArgs *a)
{
    cg_puts(b, "    VK_GRID_LOOP(i, n) {\n        ");
    call(b, a->name, a->j, "pull", "0");
    out_args(b, 0, a->s->nres, "i");
    cg_puts(b, ");\n    }\n");
}

static void emit_map(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints)
{
    head(b, name, j, "map", "");
    decl_hints(b, hints);
    out_ptrs(b, s, types, 0, s->nres, 0);
    LoopArgs a = { name, j, s };
    checked_or_fast(b, -1, "n <= lim", map_loop, &a);
    cg_puts(b, "}\n");
}

/* PERMUTE in two passes, so that a collision ends as the reference's
 * (the later source element wins) whatever order the threads run in:
 * P_claim(V, er, n, int32_t *w) checks each index and raises w[jx] to
 * i + 1 (w zeroed first); P_perm(V, er, n, const int32_t *w) writes
 * element i only where w[jx] == i + 1. */
static void emit_permute(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints,
                         int claim)
{
    head(b, name, j, claim ? "claim" : "perm", claim ? ", int32_t *w" : ", const int32_t *w");
    decl_hints(b, hints);
    if (!claim)
        out_ptrs(b, s, types, 0, s->nres, 0);
    cg_puts(b, "    VK_GRID_LOOP(i, n) {\n");
    if (s->pred) {
        cg_puts(b, "        int32_t f;\n        ");
        call(b, name, j, "pred", "0");
        cg_puts(b, ", &f);\n        if (!f) continue;\n");
    }
    cg_puts(b, "        int32_t jx;\n        ");
    call(b, name, j, "idx", "0");
    cg_puts(b, ", &jx);\n");
    cg_puts(b, "        if (jx < 0 || jx >= n) { VK_FAIL(er, VKF_PERM, i, jx, n); continue; }\n");
    if (claim) {
        cg_puts(b, "        VK_AMAX(&w[jx], (int32_t)(i + 1));\n    }\n}\n");
        return;
    }
    cg_puts(b, "        if (w[jx] != (int32_t)(i + 1)) continue;\n        ");
    call(b, name, j, "pull", "0");
    out_args(b, 0, s->nres, "jx");
    cg_puts(b, ");\n    }\n}\n");
}

static void vals_loop(CgBuf *b, const LoopArgs *a)
{
    int seg = a->s->kind == LS_SEG_REDUCE || a->s->kind == LS_SEG_SCAN;
    cg_puts(b, "    VK_GRID_LOOP(i, n) {\n");
    if (seg)
        seg_of(b, a->s->shape.var);
    cg_puts(b, "        ");
    call(b, a->name, a->j, "pull", seg ? "sg" : "0");
    out_args(b, 0, a->s->nres, "i");
    cg_puts(b, ");\n    }\n");
}

/* REDUCE, SCAN, SEG_REDUCE, SEG_SCAN: the element values into t[k]. */
static void emit_vals(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints)
{
    int seg = s->kind == LS_SEG_REDUCE || s->kind == LS_SEG_SCAN;
    head(b, name, j, "vals", ", void *const *t");
    decl_hints(b, hints);
    if (seg)
        cg_puts(b, "    int64_t sh = 0;\n");
    for (int r = 0; r < s->nres; r++) {
        const char *ct = cg_ctype(types[s->res[r]].base);
        cg_printf(b, "    %s *o%d = (%s *)t[%d];\n", ct, r, ct, r);
    }
    LoopArgs a = { name, j, s };
    checked_or_fast(b, s->shape.var, "n <= lim && segok", vals_loop, &a);
    cg_puts(b, "}\n");
}

/* ---- fused reductions and scans (block and group level, shared memory) ---- */

static const char *shmem(const LcuVarType *types, const LcuSoac *s, int r)
{
    return types[s->res[r]].base == VS_FLOAT ? "vk_shf" : "vk_shi";
}

static void decl_shared(CgBuf *b)
{
    cg_printf(b, "    VK_SHARED(double, vk_shf, %d, 0);\n    VK_SHARED(int32_t, vk_shi, %d, 1);\n", VK_CUDA_BLOCK,
              VK_CUDA_BLOCK);
    cg_puts(b, "    (void)vk_shf; (void)vk_shi;\n");
}

/* Accumulators a<r> from the identities, and element values x<r>. */
static void decl_accs(CgBuf *b, const LcuSoac *s, const LcuVarType *types, const char *ind)
{
    for (int r = 0; r < s->nres; r++) {
        cg_printf(b, "%s%s a%d = ", ind, cg_ctype(types[s->res[r]].base), r);
        cg_rop_identity(b, s->rops[r]);
        cg_printf(b, ", x%d;\n", r);
    }
}

/* Fold the pulled element into the accumulators. */
static void fold_elem(CgBuf *b, const char *name, int j, const LcuSoac *s, const char *seg, const char *ind)
{
    char acc[16], x[16];
    cg_printf(b, "%s", ind);
    call(b, name, j, "pull", seg);
    for (int r = 0; r < s->nres; r++)
        cg_printf(b, ", &x%d", r);
    cg_puts(b, ");\n");
    for (int r = 0; r < s->nres; r++) {
        snprintf(acc, sizeof acc, "a%d", r);
        snprintf(x, sizeof x, "x%d", r);
        cg_printf(b, "%s", ind);
        cg_rop_combine(b, s->rops[r], acc, x);
        cg_puts(b, "\n");
    }
}

/* Combine a<r> over each group of G consecutive threads (G a power of two
 * dividing blockDim.x; `lane` = threadIdx.x % G): afterwards every thread
 * of a group holds the group's value, combined in lane order. Every
 * thread of the block must get here (barriers). */
static int plant_race; /* cg_set_plant_race */

void cg_set_plant_race(int on) { plant_race = on; }

static void group_combine(CgBuf *b, const LcuSoac *s, const LcuVarType *types, const char *G, const char *ind)
{
    int race = plant_race;
    for (int r = 0; r < s->nres; r++) {
        const char *sh = shmem(types, s, r), *ct = cg_ctype(types[s->res[r]].base);
        cg_printf(b, "%s%s[threadIdx.x] = a%d;\n%s%s\n", ind, sh, r, ind, race ? "/* planted race */" : "__syncthreads();");
        cg_printf(b, "%sfor (unsigned st = (%s) / 2; st > 0; st >>= 1) {\n", ind, G);
        cg_printf(b, "%s    if (lane < st) {\n", ind);
        cg_printf(b, "%s        %s z = %s[threadIdx.x], y = %s[threadIdx.x + st];\n%s        ", ind, ct, sh, sh, ind);
        cg_rop_combine(b, s->rops[r], "z", "y");
        cg_printf(b, "\n%s        %s[threadIdx.x] = z;\n%s    }\n%s    __syncthreads();\n%s}\n", ind, sh, ind, ind,
                  ind);
        cg_printf(b, "%sa%d = %s[threadIdx.x - lane];\n%s__syncthreads();\n", ind, r, sh, ind);
    }
}

/* The block's chunk [lo, hi) of [0, n) (see codegen.h). */
static void chunk(CgBuf *b)
{
    cg_puts(b, "    int64_t B = blockDim.x, C = ((n + gridDim.x - 1) / gridDim.x + B - 1) / B * B;\n");
    cg_puts(b, "    int64_t lo = (int64_t)blockIdx.x * C, hi = lo + C < n ? lo + C : n;\n");
}

static void red_loop(CgBuf *b, const LoopArgs *a)
{
    cg_puts(b, "    for (int64_t i = lo + threadIdx.x; i < hi; i += B) {\n");
    fold_elem(b, a->name, a->j, a->s, "0", "        ");
    cg_puts(b, "    }\n");
}

/* P_red: the reduction of each block's chunk into t[r][blockIdx.x]. */
static void emit_red(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints)
{
    head(b, name, j, "red", ", void *const *t");
    decl_hints(b, hints);
    decl_shared(b);
    chunk(b);
    decl_accs(b, s, types, "    ");
    LoopArgs a = { name, j, s }; /* one segment, if any: the pulls' segment is 0 */
    checked_or_fast(b, s->shape.var, "hi <= lim && segok", red_loop, &a);
    cg_puts(b, "    unsigned lane = threadIdx.x;\n");
    group_combine(b, s, types, "blockDim.x", "    ");
    cg_puts(b, "    if (threadIdx.x == 0) {\n");
    for (int r = 0; r < s->nres; r++) {
        const char *ct = cg_ctype(types[s->res[r]].base);
        cg_printf(b, "        ((%s *)t[%d])[blockIdx.x] = a%d;\n", ct, r, r);
    }
    cg_puts(b, "    }\n}\n");
}

/* One tile of a scan over groups of G threads (G a power of two dividing
 * blockDim.x; `lane` = threadIdx.x % G, `gbase` = threadIdx.x - lane): the
 * tile's elements x<r> (the identity past the end) are scanned within each
 * group in shared memory (Hillis-Steele), element i (written when I_OK)
 * gets c<r> combined with the group's elements before it, and c<r> moves on
 * by the group's total. Every thread of the block must get here. */
static void tile_scan(CgBuf *b, const LcuSoac *s, const LcuVarType *types, const char *G, const char *i_ok,
                      const char *ind)
{
    for (int r = 0; r < s->nres; r++) {
        const char *sh = shmem(types, s, r), *ct = cg_ctype(types[s->res[r]].base);
        cg_printf(b, "%s{\n%s    %s[threadIdx.x] = x%d;\n%s    __syncthreads();\n", ind, ind, sh, r, ind);
        cg_printf(b, "%s    for (unsigned st = 1; st < (%s); st <<= 1) {\n%s        %s y = ", ind, G, ind, ct);
        cg_rop_identity(b, s->rops[r]);
        cg_printf(b, ";\n%s        if (lane >= st) y = %s[threadIdx.x - st];\n", ind, sh);
        cg_printf(b, "%s        __syncthreads();\n%s        if (lane >= st) {\n%s            %s z = %s[threadIdx.x];\n%s            ",
                  ind, ind, ind, ct, sh, ind);
        cg_rop_combine(b, s->rops[r], "y", "z");
        cg_printf(b, "\n%s            %s[threadIdx.x] = y;\n%s        }\n%s        __syncthreads();\n%s    }\n", ind, sh, ind,
                  ind, ind);
        cg_printf(b, "%s    %s w = c%d, e = ", ind, ct, r);
        cg_rop_identity(b, s->rops[r]);
        cg_printf(b, ", tot = %s[gbase + (%s) - 1];\n%s    if (lane > 0) e = %s[threadIdx.x - 1];\n%s    ", sh, G, ind, sh,
                  ind);
        cg_rop_combine(b, s->rops[r], "w", "e");
        cg_printf(b, "\n%s    if (%s) o%d[i] = w;\n%s    ", ind, i_ok, r, ind);
        char cr[16];
        snprintf(cr, sizeof cr, "c%d", r);
        cg_rop_combine(b, s->rops[r], cr, "tot");
        cg_printf(b, "\n%s    __syncthreads();\n%s}\n", ind, ind);
    }
}

/* The element values x<r> of element i (the identities unless I_OK). */
static void pull_or_identity(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types,
                             const char *seg, const char *i_ok, const char *ind)
{
    for (int r = 0; r < s->nres; r++) {
        cg_printf(b, "%s%s x%d = ", ind, cg_ctype(types[s->res[r]].base), r);
        cg_rop_identity(b, s->rops[r]);
        cg_puts(b, ";\n");
    }
    cg_printf(b, "%sif (%s) {\n%s    ", ind, i_ok, ind);
    call(b, name, j, "pull", seg);
    for (int r = 0; r < s->nres; r++)
        cg_printf(b, ", &x%d", r);
    cg_printf(b, ");\n%s}\n", ind);
}

/* P_scan3: each block scans its chunk from the carries t[r][blockIdx.x]. */
static void emit_scan3(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints)
{
    head(b, name, j, "scan3", ", void *const *t");
    decl_hints(b, hints);
    decl_shared(b);
    chunk(b);
    out_ptrs(b, s, types, 0, s->nres, 0);
    cg_puts(b, "    unsigned lane = threadIdx.x, gbase = 0;\n");
    for (int r = 0; r < s->nres; r++) {
        const char *ct = cg_ctype(types[s->res[r]].base);
        cg_printf(b, "    %s c%d = ((const %s *)t[%d])[blockIdx.x];\n", ct, r, ct, r);
    }
    cg_puts(b, "    for (int64_t base = lo; base < hi; base += B) {\n");
    cg_puts(b, "        int64_t i = base + threadIdx.x;\n");
    pull_or_identity(b, name, j, s, types, "0", "i < hi", "        ");
    tile_scan(b, s, types, "blockDim.x", "i < hi", "        ");
    cg_puts(b, "    }\n}\n");
}

/* The head of a group-per-segment body, NAME_s<J>_<BODY>(V, er, m, G), up
 * to the round loop's segment k (see emit_sred). */
static void group_rounds_open(CgBuf *b, const char *name, int j, const char *body, const LcuSoac *s,
                              const LcuVarType *types, int hints)
{
    cg_printf(b, "VK_FN void %s_s%d_%s(const vk_arr *VK_RESTRICT V, vk_errp er, int64_t m, unsigned G)\n{\n", name, j, body);
    decl_hints(b, hints);
    decl_shared(b);
    out_ptrs(b, s, types, 0, s->nres, 0);
    cg_printf(b, "    const vk_arr *sd = &V[%d];\n", s->shape.var);
    cg_puts(b, "    const int32_t *L = (const int32_t *)sd->d;\n");
    cg_puts(b, "    unsigned lane = threadIdx.x & (G - 1), gbase = threadIdx.x - lane;\n    (void)gbase;\n");
    cg_puts(b, "    int64_t gpb = blockDim.x / G;\n");
    cg_puts(b, "    for (int64_t base = (int64_t)blockIdx.x * gpb; base < m; base += (int64_t)gridDim.x * gpb) {\n");
    cg_puts(b, "        int64_t k = base + threadIdx.x / G;\n");
}

/* The entry point NAME_s<J>_<SUFFIX>(V, er, m) running BODY with groups of G. */
static void group_entry(CgBuf *b, const char *name, int j, const char *body, const char *suffix, const char *G)
{
    cg_printf(b, "extern \"C\" __global__ void %s_s%d_%s(const vk_arr *VK_RESTRICT V, vk_errp er, int64_t m)\n"
                 "{\n    %s_s%d_%s(V, er, m, %s);\n}\n", name, j, suffix, name, j, body, G);
}

/* P_sscanw, P_sscanb: SEG_SCAN with a group of G threads per segment, in
 * rounds every thread of a block takes together; a round walks its
 * segments tile by tile, as many tiles as the longest of the block's
 * segments needs. */
static void emit_sscan_group(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints)
{
    group_rounds_open(b, name, j, "sscan", s, types, hints);
    cg_puts(b, "        int64_t lo = 0, hi = 0;\n");
    cg_puts(b, "        if (k < m) {\n            lo = sd->off[k];\n            hi = lo + (L[k] > 0 ? L[k] : 0);\n        }\n");
    cg_puts(b, "        vk_shi[threadIdx.x] = (int32_t)((hi - lo + G - 1) / G);\n        __syncthreads();\n");
    cg_puts(b, "        for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {\n");
    cg_puts(b, "            if (threadIdx.x < st && vk_shi[threadIdx.x + st] > vk_shi[threadIdx.x])\n");
    cg_puts(b, "                vk_shi[threadIdx.x] = vk_shi[threadIdx.x + st];\n            __syncthreads();\n        }\n");
    cg_puts(b, "        int64_t T = vk_shi[0];\n        __syncthreads();\n");
    for (int r = 0; r < s->nres; r++) {
        cg_printf(b, "        %s c%d = ", cg_ctype(types[s->res[r]].base), r);
        cg_rop_identity(b, s->rops[r]);
        cg_puts(b, ";\n");
    }
    cg_puts(b, "        for (int64_t tl = 0; tl < T; tl++) {\n");
    cg_puts(b, "            int64_t i = lo + tl * G + lane;\n");
    pull_or_identity(b, name, j, s, types, "k", "i < hi", "            ");
    tile_scan(b, s, types, "G", "i < hi", "            ");
    cg_puts(b, "        }\n    }\n}\n");
    group_entry(b, name, j, "sscan", "sscanw", "VK_WARP");
    group_entry(b, name, j, "sscan", "sscanb", "blockDim.x");
}

/* P_sred<suffix>: groups of G threads per segment, rounds that every
 * thread of a block takes together (the barriers). */
static void emit_sred(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints,
                      int tree)
{
    group_rounds_open(b, name, j, "sred", s, types, hints);
    decl_accs(b, s, types, "        ");
    cg_puts(b, "        if (k < m) {\n");
    cg_puts(b, "            int64_t lo = sd->off[k], hi = lo + (L[k] > 0 ? L[k] : 0);\n");
    cg_puts(b, "            for (int64_t i = lo + lane; i < hi; i += G) {\n");
    fold_elem(b, name, j, s, "k", "                ");
    cg_puts(b, "            }\n        }\n");
    cg_puts(b, "        if (G > 1) {\n");
    group_combine(b, s, types, "G", "            ");
    cg_puts(b, "        }\n");
    cg_puts(b, "        if (k < m && lane == 0) {\n");
    for (int r = 0; r < s->nres; r++)
        cg_printf(b, "            o%d[k] = a%d;\n", r, r);
    cg_puts(b, "        }\n    }\n}\n");
    group_entry(b, name, j, "sred", "sred1", "1");
    if (tree) {
        group_entry(b, name, j, "sred", "sredw", "VK_WARP");
        group_entry(b, name, j, "sred", "sredb", "blockDim.x");
    }
}

/* P_sscan1: one thread per segment, sequential (exact for every operator). */
static void emit_sscan1(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints)
{
    head(b, name, j, "sscan1", "");
    decl_hints(b, hints);
    out_ptrs(b, s, types, 0, s->nres, 0);
    cg_printf(b, "    const vk_arr *sd = &V[%d];\n", s->shape.var);
    cg_puts(b, "    const int32_t *L = (const int32_t *)sd->d;\n");
    cg_puts(b, "    VK_GRID_LOOP(k, n) {\n");
    cg_puts(b, "        int64_t lo = sd->off[k], hi = lo + (L[k] > 0 ? L[k] : 0);\n");
    decl_accs(b, s, types, "        ");
    cg_puts(b, "        for (int64_t i = lo; i < hi; i++) {\n            ");
    call(b, name, j, "pull", "k");
    for (int r = 0; r < s->nres; r++)
        cg_printf(b, ", &x%d", r);
    cg_puts(b, ");\n");
    char acc[16], x[16];
    for (int r = 0; r < s->nres; r++) {
        cg_printf(b, "            o%d[i] = a%d;\n            ", r, r);
        snprintf(acc, sizeof acc, "a%d", r);
        snprintf(x, sizeof x, "x%d", r);
        cg_rop_combine(b, s->rops[r], acc, x);
        cg_puts(b, "\n");
    }
    cg_puts(b, "        }\n    }\n}\n");
}

/* Block-wide inclusive Hillis-Steele sum of the int32 `v` of each thread
 * into vk_shi (every thread of the block must get here). */
static void block_isum(CgBuf *b, const char *v, const char *ind)
{
    cg_printf(b, "%svk_shi[threadIdx.x] = %s;\n%s__syncthreads();\n", ind, v, ind);
    cg_printf(b, "%sfor (unsigned st = 1; st < blockDim.x; st <<= 1) {\n", ind);
    cg_printf(b, "%s    int32_t y = threadIdx.x >= st ? vk_shi[threadIdx.x - st] : 0;\n", ind);
    cg_printf(b, "%s    __syncthreads();\n%s    vk_shi[threadIdx.x] += y;\n%s    __syncthreads();\n%s}\n", ind, ind,
              ind, ind);
}

/* FILTER and PARTITION fused (flag, scan, scatter in the kernels):
 * P_fcount(V, er, n, int32_t *cnt): cnt[b] = the elements block b's chunk
 * keeps; the runtime scans cnt into off (exclusive) and reads the total;
 * P_fpack(V, er, n, const int32_t *off): block b walks its chunk tile by
 * tile, scans the tile's flags in shared memory and writes each kept
 * element at off[b] + the kept before it (PARTITION: each dropped one at
 * its index less the kept before it). Chunks as P_red's. SEG_FILTER too,
 * for a descriptor of one segment (seg = 0): the runtime makes the new
 * descriptor (one length, the count). */
static void emit_fused_filter(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types,
                              int hints)
{
    int part = s->kind == LS_PARTITION, ar = part ? s->nres / 2 : s->kind == LS_SEG_FILTER ? s->nres - 1 : s->nres;
    head(b, name, j, "fcount", ", int32_t *cnt");
    decl_hints(b, hints);
    decl_shared(b);
    chunk(b);
    cg_puts(b, "    int32_t a = 0;\n    for (int64_t i = lo + threadIdx.x; i < hi; i += B) {\n        int32_t x;\n        ");
    call(b, name, j, "pred", "0");
    cg_puts(b, ", &x);\n        a += x != 0;\n    }\n");
    block_isum(b, "a", "    ");
    cg_puts(b, "    if (threadIdx.x == 0) cnt[blockIdx.x] = vk_shi[blockDim.x - 1];\n}\n");

    head(b, name, j, "fpack", ", const int32_t *off");
    decl_hints(b, hints);
    decl_shared(b);
    chunk(b);
    out_ptrs(b, s, types, 0, ar, 0);
    if (part)
        out_ptrs(b, s, types, ar, ar, ar);
    cg_puts(b, "    int64_t carry = off[blockIdx.x];\n");
    cg_puts(b, "    for (int64_t base = lo; base < hi; base += B) {\n");
    cg_puts(b, "        int64_t i = base + threadIdx.x;\n        int32_t f = 0;\n");
    cg_puts(b, "        if (i < hi) {\n            ");
    call(b, name, j, "pred", "0");
    cg_puts(b, ", &f);\n            f = f != 0;\n        }\n");
    block_isum(b, "f", "        ");
    cg_puts(b, "        int64_t p = carry + (threadIdx.x > 0 ? vk_shi[threadIdx.x - 1] : 0);\n");
    cg_puts(b, "        carry += vk_shi[blockDim.x - 1];\n");
    cg_puts(b, "        if (i < hi && f) {\n            ");
    call(b, name, j, "pull", "0");
    out_args(b, 0, ar, "p");
    cg_puts(b, ");\n        }\n");
    if (part) {
        cg_puts(b, "        if (i < hi && !f) {\n            ");
        call(b, name, j, "pull", "0");
        out_args(b, ar, ar, "i - p");
        cg_puts(b, ");\n        }\n");
    }
    cg_puts(b, "        __syncthreads();\n    }\n}\n");
}

/* FILTER, PARTITION, SEG_FILTER: the flags, then the scatter. */
static void emit_filter(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints)
{
    int seg = s->kind == LS_SEG_FILTER, part = s->kind == LS_PARTITION;
    int ar = part ? s->nres / 2 : seg ? s->nres - 1 : s->nres;
    const char *sg = seg ? "sg" : "0";

    head(b, name, j, "flags", ", int32_t *f");
    decl_hints(b, hints);
    if (seg)
        cg_puts(b, "    int64_t sh = 0;\n");
    cg_puts(b, "    VK_GRID_LOOP(i, n) {\n");
    if (seg)
        seg_of(b, s->shape.var);
    cg_puts(b, "        int32_t x;\n        ");
    call(b, name, j, "pred", sg);
    cg_puts(b, ", &x);\n        f[i] = x != 0;\n    }\n}\n");

    head(b, name, j, "pack", ", const int32_t *f, const int32_t *p");
    decl_hints(b, hints);
    if (seg)
        cg_puts(b, "    int64_t sh = 0;\n");
    out_ptrs(b, s, types, 0, ar, 0);
    if (part)
        out_ptrs(b, s, types, ar, ar, ar);
    cg_puts(b, "    VK_GRID_LOOP(i, n) {\n");
    if (!part)
        cg_puts(b, "        if (!f[i]) continue;\n");
    if (seg)
        seg_of(b, s->shape.var);
    if (part) {
        cg_puts(b, "        if (f[i]) {\n            ");
        call(b, name, j, "pull", sg);
        out_args(b, 0, ar, "p[i]");
        cg_puts(b, ");\n        } else {\n            ");
        call(b, name, j, "pull", sg);
        out_args(b, ar, ar, "i - p[i]");
        cg_puts(b, ");\n        }\n");
    } else {
        cg_puts(b, "        ");
        call(b, name, j, "pull", sg);
        out_args(b, 0, ar, "p[i]");
        cg_puts(b, ");\n");
    }
    cg_puts(b, "    }\n}\n");
}

/* SEG_PERMUTE in the two passes of PERMUTE (emit_permute), W over the
 * destination's elements. */
static void emit_seg_permute(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types,
                             int hints, int claim)
{
    head(b, name, j, claim ? "claim" : "perm", claim ? ", int32_t *w" : ", const int32_t *w");
    decl_hints(b, hints);
    cg_puts(b, "    int64_t sh = 0;\n");
    if (!claim)
        out_ptrs(b, s, types, 0, s->nres, 0);
    cg_printf(b, "    const vk_arr *dsd = &V[%d];\n", s->dst_sd);
    cg_puts(b, "    const int32_t *DL = (const int32_t *)dsd->d;\n");
    cg_puts(b, "    VK_GRID_LOOP(i, n) {\n");
    seg_of(b, s->shape.var);
    if (s->pred) {
        cg_puts(b, "        int32_t f;\n        ");
        call(b, name, j, "pred", "sg");
        cg_puts(b, ", &f);\n        if (!f) continue;\n");
    }
    cg_puts(b, "        if (sg >= dsd->len) { VK_FAIL(er, VKF_DSTSEG, sg, 0, 0); continue; }\n");
    cg_puts(b, "        int64_t dl = DL[sg] > 0 ? DL[sg] : 0, d0 = dsd->off[sg];\n");
    cg_puts(b, "        int32_t jx;\n        ");
    call(b, name, j, "idx", "sg");
    cg_puts(b, ", &jx);\n");
    cg_puts(b, "        if (jx < 0 || jx >= dl) { VK_FAIL(er, VKF_PERM, i, jx, dl); continue; }\n");
    if (claim) {
        cg_puts(b, "        VK_AMAX(&w[d0 + jx], (int32_t)(i + 1));\n    }\n}\n");
        return;
    }
    cg_puts(b, "        if (w[d0 + jx] != (int32_t)(i + 1)) continue;\n        ");
    call(b, name, j, "pull", "sg");
    out_args(b, 0, s->nres, "d0 + jx");
    cg_puts(b, ");\n    }\n}\n");
}

int cg_cuda_has_entry(const LcuSoac *s, const char *p)
{
    LcuSoacKind k = s->kind;
    int redscan = k == LS_REDUCE || k == LS_SCAN || k == LS_SEG_REDUCE || k == LS_SEG_SCAN;
    int tree = redscan && cg_tree_safe(s);
#define IS(x) (strcmp(p, x) == 0)
    if (IS("map"))
        return k == LS_MAP || k == LS_ONCE;
    if (IS("claim") || IS("perm"))
        return k == LS_PERMUTE || k == LS_SEG_PERMUTE;
    if (IS("flags") || IS("pack") || IS("fcount") || IS("fpack"))
        return k == LS_FILTER || k == LS_PARTITION || k == LS_SEG_FILTER;
    if (IS("vals"))
        return redscan;
    if (IS("red"))
        return tree;
    if (IS("scan3"))
        return tree && (k == LS_SCAN || k == LS_SEG_SCAN);
    if (IS("sred1"))
        return k == LS_SEG_REDUCE;
    if (IS("sredw") || IS("sredb"))
        return k == LS_SEG_REDUCE && tree;
    if (IS("sscan1"))
        return k == LS_SEG_SCAN;
    if (IS("sscanw") || IS("sscanb"))
        return k == LS_SEG_SCAN && tree;
#undef IS
    return 0;
}

int cg_emit_kernel_cuda(CgBuf *b, const char *name, const LcuKernel *k, const LcuVarType *types, int nvars,
                        char *msg, size_t msglen, size_t *soac_end)
{
    (void)nvars;
    for (int j = 0; j < k->nsoacs; j++) {
        if (soac_end && j > 0)
            soac_end[j - 1] = b->n;
        const LcuSoac *s = k->soacs[j];
        if (s->kind == LS_LIB)
            continue; /* the runtime runs it */
        int seg = s->kind == LS_SEG_REDUCE || s->kind == LS_SEG_SCAN || s->kind == LS_SEG_PERMUTE ||
                  s->kind == LS_SEG_FILTER;
        int hints = 1;
        if (cg_emit_soac_thunks(b, CG_CUDA, name, j, s, types, seg ? s->shape.var : -1, 0, &hints) < 0) {
            snprintf(msg, msglen, "SOAC %d of kernel K%d: a thunk the generator cannot express", j, k->id);
            return -1;
        }
        /* fast pulls for the loops over i of a MAP and of a reduction or
         * scan's element values and grid-wide reduction (emit_map,
         * emit_vals, emit_red) */
        memset(&fast_loads, 0, sizeof fast_loads);
        if ((s->kind == LS_MAP || s->kind == LS_REDUCE || s->kind == LS_SCAN || s->kind == LS_SEG_REDUCE ||
             s->kind == LS_SEG_SCAN) &&
            cg_emit_soac_fast_thunks(b, name, j, s, types, seg ? s->shape.var : -1, 0, &fast_loads) < 0) {
            snprintf(msg, msglen, "SOAC %d of kernel K%d: a thunk the generator cannot express", j, k->id);
            return -1;
        }
        switch (s->kind) {
        case LS_MAP: case LS_ONCE: emit_map(b, name, j, s, types, hints); break;
        case LS_PERMUTE:
            emit_permute(b, name, j, s, types, hints, 1);
            emit_permute(b, name, j, s, types, hints, 0);
            break;
        case LS_REDUCE: case LS_SCAN: case LS_SEG_REDUCE: case LS_SEG_SCAN: {
            int tree = cg_tree_safe(s);
            emit_vals(b, name, j, s, types, hints);
            if (tree) {
                emit_red(b, name, j, s, types, hints);
                if (s->kind == LS_SCAN || s->kind == LS_SEG_SCAN)
                    emit_scan3(b, name, j, s, types, hints);
            }
            if (s->kind == LS_SEG_REDUCE)
                emit_sred(b, name, j, s, types, hints, tree);
            if (s->kind == LS_SEG_SCAN) {
                emit_sscan1(b, name, j, s, types, hints);
                if (tree)
                    emit_sscan_group(b, name, j, s, types, hints);
            }
            break;
        }
        case LS_FILTER: case LS_PARTITION: case LS_SEG_FILTER:
            emit_filter(b, name, j, s, types, hints);
            emit_fused_filter(b, name, j, s, types, hints);
            break;
        case LS_SEG_PERMUTE:
            emit_seg_permute(b, name, j, s, types, hints, 1);
            emit_seg_permute(b, name, j, s, types, hints, 0);
            break;
        default:
            snprintf(msg, msglen, "SOAC %d of kernel K%d: kind %d", j, k->id, (int)s->kind);
            return -1;
        }
    }
    if (soac_end && k->nsoacs > 0)
        soac_end[k->nsoacs - 1] = b->n;
    return 0;
}

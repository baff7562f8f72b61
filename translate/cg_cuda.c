/* translate/cg_cuda.c — the CUDA target's SOAC skeletons (see codegen.h for
 * the protocol the runtime drives them with).
 *
 * Every entry point is a grid-stride loop over the SOAC's iteration space
 * with the thunks inlined, one element per iteration, no shared memory and
 * no barriers: elementwise work (MAP, ONCE), the element values of a scan
 * or reduction (P_vals; the combining is the precompiled primitives'),
 * the flags and the scatter of a filter (P_flags, P_pack; the runtime
 * scans the flags in between), and the scatters of the permutes. A
 * failing check records the first error in the error record and skips the
 * element's write, so a bad index never writes out of bounds. Segmented
 * SOACs find an element's segment by binary search on the descriptor's
 * offsets, helped by a per-thread hint (consecutive elements of a thread
 * are a grid apart). */
#include "translate/codegen.h"

#include <stdio.h>
#include <stdlib.h>

static void head(CgBuf *b, const char *name, int j, const char *phase, const char *extra)
{
    cg_printf(b, "extern \"C\" __global__ void %s_s%d_%s(const vk_arr *V, vk_errp er, int64_t n%s)\n{\n", name, j,
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

static void call(CgBuf *b, const char *name, int j, const char *role, const char *seg)
{
    cg_printf(b, "%s_s%d_%s(V, er, i, %s, hint", name, j, role, seg);
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

static void emit_map(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints)
{
    head(b, name, j, "map", "");
    decl_hints(b, hints);
    out_ptrs(b, s, types, 0, s->nres, 0);
    cg_puts(b, "    VK_GRID_LOOP(i, n) {\n        ");
    call(b, name, j, "pull", "0");
    out_args(b, 0, s->nres, "i");
    cg_puts(b, ");\n    }\n}\n");
}

static void emit_permute(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints)
{
    head(b, name, j, "perm", "");
    decl_hints(b, hints);
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
    cg_puts(b, "        if (jx < 0 || jx >= n) { VK_FAIL(er, VKF_PERM, i, jx, n); continue; }\n        ");
    call(b, name, j, "pull", "0");
    out_args(b, 0, s->nres, "jx");
    cg_puts(b, ");\n    }\n}\n");
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
    cg_puts(b, "    VK_GRID_LOOP(i, n) {\n");
    if (seg)
        seg_of(b, s->shape.var);
    cg_puts(b, "        ");
    call(b, name, j, "pull", seg ? "sg" : "0");
    out_args(b, 0, s->nres, "i");
    cg_puts(b, ");\n    }\n}\n");
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

static void emit_seg_permute(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types,
                             int hints)
{
    head(b, name, j, "perm", "");
    decl_hints(b, hints);
    cg_puts(b, "    int64_t sh = 0;\n");
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
    cg_puts(b, "        if (jx < 0 || jx >= dl) { VK_FAIL(er, VKF_PERM, i, jx, dl); continue; }\n        ");
    call(b, name, j, "pull", "sg");
    out_args(b, 0, s->nres, "d0 + jx");
    cg_puts(b, ");\n    }\n}\n");
}

int cg_emit_kernel_cuda(CgBuf *b, const char *name, const LcuKernel *k, const LcuVarType *types, int nvars,
                        char *msg, size_t msglen)
{
    (void)nvars;
    for (int j = 0; j < k->nsoacs; j++) {
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
        switch (s->kind) {
        case LS_MAP: case LS_ONCE: emit_map(b, name, j, s, types, hints); break;
        case LS_PERMUTE: emit_permute(b, name, j, s, types, hints); break;
        case LS_REDUCE: case LS_SCAN: case LS_SEG_REDUCE: case LS_SEG_SCAN:
            emit_vals(b, name, j, s, types, hints);
            break;
        case LS_FILTER: case LS_PARTITION: case LS_SEG_FILTER: emit_filter(b, name, j, s, types, hints); break;
        case LS_SEG_PERMUTE: emit_seg_permute(b, name, j, s, types, hints); break;
        default:
            snprintf(msg, msglen, "SOAC %d of kernel K%d: kind %d", j, k->id, (int)s->kind);
            return -1;
        }
    }
    return 0;
}

/* translate/cg_c.c — the C target's SOAC skeletons (see codegen.h).
 *
 * A kernel becomes one host function that runs its SOACs in order. Each
 * skeleton is the loop of the reference evaluator (runtime/fused/lcu_eval.c)
 * with the thunks inlined: same order of evaluation, same left-to-right
 * reductions and scans, same increasing-order scatters, so the results are
 * bit-identical to the reference interpreter's. FILTER, PARTITION and
 * SEG_FILTER compute every predicate first and pull only the elements they
 * keep; PERMUTE and SEG_PERMUTE evaluate flag, index, then pull.
 *
 * MAP runs in parallel (OpenMP, when the unit is compiled with -fopenmp
 * and the space has at least 65536 elements): its elements are
 * independent and every result is written once, so the results do not
 * depend on the schedule. Only which element's error is reported first
 * can differ. So do the reductions whose results cannot depend on the
 * order (emit_seg_reduce, emit_reduce_chunks): segments, Int and Bool
 * operators, float sums whose terms are checked, and --float-reassoc's
 * chunks, whose grouping is fixed by vcode/semantics.h. Scans and
 * scatters stay sequential to keep float results and duplicate-index
 * writes exactly as the reference has them. */
#include "translate/codegen.h"
#include "translate/tuning.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Variable text: the iteration count of shape SH. */
static void shape_len(CgBuf *b, const LcuShape *sh, const LcuVarType *types)
{
    switch (sh->kind) {
    case LSH_LEN:
        cg_printf(b, "V[%d].%s", sh->var, types[sh->var].kind == LV_SEGDES ? "n" : "len");
        return;
    case LSH_SEG_N: cg_printf(b, "V[%d].n", sh->var); return;
    case LSH_SEG_M: cg_printf(b, "V[%d].len", sh->var); return;
    case LSH_ONE: cg_puts(b, "1"); return;
    }
    cg_puts(b, "0");
}

static void decl_outs(CgBuf *b, const LcuSoac *s, const LcuVarType *types, int first, int n, const char *len,
                      int zero, int prefix)
{
    for (int r = 0; r < n; r++) {
        int v = s->res[first + r];
        const char *ct = cg_ctype(types[v].base);
        cg_printf(b, "        %s *o%d = (%s *)cx->alloc(cx, %d, %s, %d);\n", ct, prefix + r, ct, v, len, zero);
    }
}

/* The argument list "&o0[AT], &o1[AT], ..." for results FIRST..FIRST+N. */
static void out_args(CgBuf *b, int first, int n, const char *at)
{
    for (int r = 0; r < n; r++)
        cg_printf(b, ", &o%d[%s]", first + r, at);
}

/* The variable table the pulls read: V, or in a MAP's loop each thread's
 * copy Vp (of TABLE_N entries), whose address does not escape: the
 * compiler then knows that the stores to the outputs leave it alone, and
 * keeps each input's pointer and length in registers. */
static _Thread_local const char *table = "V";
static _Thread_local int table_n;

static void private_table(CgBuf *b, const char *indent)
{
    if (strcmp(table, "Vp"))
        return;
    cg_printf(b, "%svk_arr Vp[%d];\n%sfor (int q = 0; q < %d; q++)\n%s    Vp[q] = V[q];\n", indent,
              table_n > 0 ? table_n : 1, indent, table_n, indent);
}

/* Calls made while FAST_ON go to the fast variants of the thunks that
 * have one (FAST_ROLES, as CgIndexLoads.roles): the skeleton has checked
 * that the loop's range of i lies within every array they read at i. */
static _Thread_local int fast_on, fast_roles;

/* The fast pull (LOADS from cg_emit_soac_fast_thunks) exists and calls
 * nothing a vectorised loop cannot (no check that may fail, no libm
 * function): a loop over its elements may be `omp simd`. */
static int fast_pull_vectorises(const CgIndexLoads *loads)
{
    return (fast_roles & 1) && !(loads->scalar & 1);
}

static void call(CgBuf *b, const char *name, int j, const char *role, const char *seg)
{
    int bit = !strcmp(role, "pull") ? 1 : !strcmp(role, "idx") ? 2 : 4;
    cg_printf(b, "%s_s%d_%s%s(%s, er, i, %s, hint", name, j, role, fast_on && (fast_roles & bit) ? "f" : "", table,
              seg);
}

/* A MAP whose pull asks seg_of(X, i) of its own index (DIST, INDEX,
 * BPERMUTE, ... fused): when X covers exactly the MAP's elements and has no
 * negative lengths, the loop walks X's segments and hands each element its
 * segment, in chunks of MAP_CHUNK elements (each found once by a search),
 * so that the chunks can run in parallel however the segments fall.
 * Otherwise the plain loop, with seg = -1: the pull finds the segment
 * itself, with the checks seg_of makes. */
/* MAP_CHUNK: translate/tuning.h */

static void emit_map_segwalk(CgBuf *b, const char *name, int j, const LcuSoac *s, int hints, int sv)
{
    cg_printf(b, "        const vk_arr *sd = &V[%d];\n", sv);
    cg_puts(b, "        if (n > 0 && sd->n == n && !sd->segid) {\n");
    cg_puts(b, "            const int32_t *L = (const int32_t *)sd->d;\n");
    cg_puts(b, "            const int64_t *O = sd->off;\n");
    cg_printf(b, "            int64_t nch = (n + %d - 1) / %d;\n", MAP_CHUNK, MAP_CHUNK);
    cg_printf(b, "#pragma omp parallel if (n >= %d)\n", MAP_PAR_MIN);
    cg_puts(b, "            {\n");
    cg_printf(b, "                int64_t hint[%d] = {0};\n", hints);
    private_table(b, "                ");
    cg_puts(b, "#pragma omp for schedule(static)\n");
    cg_puts(b, "                for (int64_t c = 0; c < nch; c++) {\n");
    cg_printf(b, "                    int64_t i = c * %d, end = n - i < %d ? n : i + %d, k0 = 0;\n", MAP_CHUNK,
              MAP_CHUNK, MAP_CHUNK);
    cg_printf(b, "                    int64_t k = vk_seg_of(er, sd, %d, i, &k0), e = O[k] + L[k];\n", sv);
    for (int f = fast_roles ? 1 : 0; f >= 0; f--) {
        fast_on = f;
        if (fast_roles)
            cg_puts(b, f ? "                    if (end <= lim && segok) {\n" : "                    } else {\n");
        cg_puts(b, "                    for (; i < end; i++) {\n");
        cg_puts(b, "                        while (i >= e) { k++; e = O[k] + L[k]; }\n                        ");
        call(b, name, j, "pull", "k");
        out_args(b, 0, s->nres, "i");
        cg_puts(b, ");\n                    }\n");
    }
    fast_on = 0;
    if (fast_roles)
        cg_puts(b, "                    }\n");
    cg_puts(b, "                }\n            }\n        } else {\n");
}

static void emit_map(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints,
                     int sv, int nvars, const CgIndexLoads *loads)
{
    cg_puts(b, "        int64_t n = ");
    shape_len(b, &s->shape, types);
    cg_puts(b, ";\n");
    decl_outs(b, s, types, 0, s->nres, "n", 0, 0);
    if (fast_roles)
        cg_emit_lim(b, loads, sv, "        ", "INT64_MAX");
    table = "Vp";
    table_n = nvars;
    if (sv >= 0)
        emit_map_segwalk(b, name, j, s, hints, sv);
    /* the plain loop passes seg = -1: no fast variant when it reads at seg */
    int keep_roles = fast_roles;
    if (loads->nseg)
        fast_roles = 0;
    for (int f = fast_roles ? 1 : 0; f >= 0; f--) {
        fast_on = f;
        if (fast_roles)
            cg_puts(b, f ? "        if (n <= lim) {\n" : "        } else {\n");
        cg_printf(b, "#pragma omp parallel if (n >= %d)\n", MAP_PAR_MIN);
        cg_puts(b, "        {\n");
        cg_printf(b, "            int64_t hint[%d] = {0};\n", hints);
        private_table(b, "            ");
        /* each element on its own (a donated argument is read only at
         * i, plan.c donor_of), so `simd` where the pull allows it (GCC's
         * -O2 vectorises no loop that needs an alias check, as the
         * outputs against the inputs) */
        cg_puts(b, f && fast_pull_vectorises(loads) ? "#pragma omp for simd schedule(static)\n"
                                                    : "#pragma omp for schedule(static)\n");
        cg_puts(b, "            for (int64_t i = 0; i < n; i++)\n                ");
        call(b, name, j, "pull", sv >= 0 ? "-1" : "0");
        out_args(b, 0, s->nres, "i");
        cg_puts(b, ");\n        }\n");
    }
    fast_on = 0;
    if (fast_roles)
        cg_puts(b, "        }\n");
    fast_roles = keep_roles;
    if (sv >= 0)
        cg_puts(b, "        }\n");
    table = "V";
}

static void emit_once(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints)
{
    (void)types;
    cg_printf(b, "        int64_t hint[%d] = {0}, i = 0;\n", hints);
    for (int r = 0; r < s->nres; r++)
        cg_printf(b, "        %s x%d;\n", cg_ctype(types[s->res[r]].base), r);
    cg_puts(b, "        ");
    call(b, name, j, "pull", "0");
    for (int r = 0; r < s->nres; r++)
        cg_printf(b, ", &x%d", r);
    cg_puts(b, ");\n");
    decl_outs(b, s, types, 0, s->nres, "1", 0, 0);
    for (int r = 0; r < s->nres; r++)
        cg_printf(b, "        o%d[0] = x%d;\n", r, r);
}

static void emit_permute(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints)
{
    cg_puts(b, "        int64_t n = ");
    shape_len(b, &s->shape, types);
    cg_puts(b, ";\n");
    decl_outs(b, s, types, 0, s->nres, "n", 1, 0);
    cg_printf(b, "        int64_t hint[%d] = {0};\n", hints);
    cg_puts(b, "        for (int64_t i = 0; i < n; i++) {\n");
    if (s->pred) {
        cg_puts(b, "            int32_t f;\n            ");
        call(b, name, j, "pred", "0");
        cg_puts(b, ", &f);\n            if (!f) continue;\n");
    }
    cg_puts(b, "            int32_t jx;\n            ");
    call(b, name, j, "idx", "0");
    cg_puts(b, ", &jx);\n");
    cg_puts(b, "            if (jx < 0 || jx >= n) cx->fail(cx, VKF_PERM, i, jx, n);\n            ");
    call(b, name, j, "pull", "0");
    out_args(b, 0, s->nres, "jx");
    cg_puts(b, ");\n        }\n");
}

static int rop_float(VsRop r) { return r == VS_FADD || r == VS_FMUL || r == VS_FMAX || r == VS_FMIN; }

/* Does result R of reduction S fold by chunks: an Int or Bool operator
 * (associative: the same result in any grouping), or a float + or * of a
 * chunked reduction (vcode/semantics.h VS_CHUNK)? */
static int rop_by_chunks(const LcuSoac *s, int r)
{
    return !rop_float(s->rops[r]) || (s->chunked && vs_rop_chunks(s->rops[r]));
}

/* IN A<r> = A<r> op X<r>: result R's combine, its accumulator named by
 * the letter A, its operand by X. */
static void combine_line(CgBuf *b, const LcuSoac *s, int r, char a, char x, const char *in)
{
    char acc[16], v[16];
    snprintf(acc, sizeof acc, "%c%d", a, r);
    snprintf(v, sizeof v, "%c%d", x, r);
    cg_puts(b, in);
    cg_rop_combine(b, s->rops[r], acc, v);
    cg_puts(b, "\n");
}

/* The chunks' folds of an ordered (chunked) reduction, kept in the table
 * pt (chunk c of result r at pt[r * nch + c], 8 bytes apart), combined in
 * order into a<r>; IN: the loop's indentation. */
static void emit_table_fold(CgBuf *b, const LcuSoac *s, const LcuVarType *types, const char *in)
{
    char acc[16], part[64];
    cg_printf(b, "%sfor (int64_t c = 0; c < nch; c++) {\n", in);
    for (int r = 0; r < s->nres; r++) {
        snprintf(acc, sizeof acc, "a%d", r);
        snprintf(part, sizeof part, "((%s *)(pt + (size_t)%d * nch * 8))[c]", cg_ctype(types[s->res[r]].base), r);
        cg_printf(b, "%s    ", in);
        cg_rop_combine(b, s->rops[r], acc, part);
        cg_puts(b, "\n");
    }
    cg_printf(b, "%s}\n", in);
}

/* Int and Bool reductions fold chunks of RED_CHUNK elements in parallel
 * (translate/tuning.h). */

/* A REDUCE by chunks: when every result folds by chunks, the chunks are
 * folded in parallel (OpenMP) into a table of partial results, which are
 * then combined in order from the identity; otherwise (a float MAX or MIN
 * beside a chunked +) sequentially, the chunked results through a partial
 * per chunk, the others straight into the accumulator. */
static void emit_reduce_chunks(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types,
                               int hints, const CgIndexLoads *loads, int nvars)
{
    int nr = s->nres, par = 1;
    for (int r = 0; r < nr; r++)
        par &= rop_by_chunks(s, r);
    int ch = s->chunked ? VS_CHUNK : RED_CHUNK;
    /* chunked: the chunks' folds into a table, combined in order; else
     * (Int, Bool) each thread's into its own partial, in any order */
    int ordered = par && s->chunked;
    cg_puts(b, "        int64_t n = ");
    shape_len(b, &s->shape, types);
    cg_puts(b, ";\n");
    for (int r = 0; r < nr; r++) {
        cg_printf(b, "        %s a%d = ", cg_ctype(types[s->res[r]].base), r);
        cg_rop_identity(b, s->rops[r]);
        cg_puts(b, ";\n");
    }
    if (fast_roles)
        cg_emit_lim(b, loads, -1, "        ", "INT64_MAX");
    cg_printf(b, "        int64_t nch = (n + %d - 1) / %d;\n", ch, ch);
    if (par) {
        /* ordered: chunk c of result r at pt[r * nch + c] */
        if (ordered)
            cg_printf(b, "        char *pt = (char *)cx->scratch(cx, (nch ? nch : 1) * %d * 8);\n", nr);
        cg_printf(b, "#pragma omp parallel if (n >= %d && nch > 1)\n", MAP_PAR_MIN);
        cg_puts(b, "        {\n");
        table = "Vp";
        table_n = nvars;
        private_table(b, "            ");
        for (int r = 0; r < nr && !ordered; r++) {
            cg_printf(b, "            %s t%d = ", cg_ctype(types[s->res[r]].base), r);
            cg_rop_identity(b, s->rops[r]);
            cg_puts(b, ";\n");
        }
        cg_puts(b, ordered ? "#pragma omp for schedule(static)\n" : "#pragma omp for schedule(static) nowait\n");
    } else {
        cg_puts(b, "        {\n");
    }
    cg_printf(b, "            int64_t hint[%d] = {0};\n", hints);
    cg_puts(b, "            for (int64_t c = 0; c < nch; c++) {\n");
    cg_printf(b, "                int64_t c0 = c * %d, c1 = n - c0 < %d ? n : c0 + %d;\n", ch, ch, ch);
    for (int r = 0; r < nr; r++) {
        const char *ct = cg_ctype(types[s->res[r]].base);
        cg_printf(b, "                %s x%d", ct, r);
        if (rop_by_chunks(s, r)) {
            cg_printf(b, ", q%d = ", r);
            cg_rop_identity(b, s->rops[r]);
        }
        cg_puts(b, ";\n");
    }
    for (int f = fast_roles ? 1 : 0; f >= 0; f--) {
        fast_on = f;
        if (fast_roles)
            cg_puts(b, f ? "                if (c1 <= lim) {\n" : "                } else {\n");
        cg_puts(b, "                for (int64_t i = c0; i < c1; i++) {\n                    ");
        call(b, name, j, "pull", "0");
        for (int r = 0; r < nr; r++)
            cg_printf(b, ", &x%d", r);
        cg_puts(b, ");\n");
        for (int r = 0; r < nr; r++)
            combine_line(b, s, r, rop_by_chunks(s, r) ? 'q' : 'a', 'x', "                    ");
        cg_puts(b, "                }\n");
    }
    fast_on = 0;
    if (fast_roles)
        cg_puts(b, "                }\n");
    for (int r = 0; r < nr; r++) {
        if (ordered) {
            cg_printf(b, "                ((%s *)(pt + (size_t)%d * nch * 8))[c] = q%d;\n",
                      cg_ctype(types[s->res[r]].base), r, r);
        } else if (rop_by_chunks(s, r)) {
            combine_line(b, s, r, par ? 't' : 'a', 'q', "                ");
        }
    }
    cg_puts(b, "            }\n");
    if (par && !ordered) {
        cg_puts(b, "#pragma omp critical\n            {\n");
        for (int r = 0; r < nr; r++)
            combine_line(b, s, r, 'a', 't', "                ");
        cg_puts(b, "            }\n");
    }
    cg_puts(b, "        }\n");
    table = "V";
    if (ordered)
        emit_table_fold(b, s, types, "        ");
    decl_outs(b, s, types, 0, nr, "1", 0, 0);
    for (int r = 0; r < nr; r++)
        cg_printf(b, "        o%d[0] = a%d;\n", r, r);
}

static void emit_reduce_scan(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types,
                             int hints, const CgIndexLoads *loads, int nvars)
{
    int scan = s->kind == LS_SCAN, nr = s->nres;
    if (!scan) {
        int any = 0;
        for (int r = 0; r < nr; r++)
            any |= rop_by_chunks(s, r);
        if (any) {
            emit_reduce_chunks(b, name, j, s, types, hints, loads, nvars);
            return;
        }
    }
    cg_puts(b, "        int64_t n = ");
    shape_len(b, &s->shape, types);
    cg_puts(b, ";\n");
    if (scan)
        decl_outs(b, s, types, 0, nr, "n", 0, 0);
    cg_printf(b, "        int64_t hint[%d] = {0};\n", hints);
    for (int r = 0; r < nr; r++) {
        cg_printf(b, "        %s a%d = ", cg_ctype(types[s->res[r]].base), r);
        cg_rop_identity(b, s->rops[r]);
        cg_printf(b, ", x%d;\n", r);
    }
    if (fast_roles)
        cg_emit_lim(b, loads, -1, "        ", "INT64_MAX");
    for (int f = fast_roles ? 1 : 0; f >= 0; f--) {
        fast_on = f;
        if (fast_roles)
            cg_puts(b, f ? "        if (n <= lim) {\n" : "        } else {\n");
        cg_puts(b, "        for (int64_t i = 0; i < n; i++) {\n            ");
        call(b, name, j, "pull", "0");
        for (int r = 0; r < nr; r++)
            cg_printf(b, ", &x%d", r);
        cg_puts(b, ");\n");
        char acc[16], x[16];
        for (int r = 0; r < nr; r++) {
            if (scan)
                cg_printf(b, "            o%d[i] = a%d;\n", r, r);
            snprintf(acc, sizeof acc, "a%d", r);
            snprintf(x, sizeof x, "x%d", r);
            cg_puts(b, "            ");
            cg_rop_combine(b, s->rops[r], acc, x);
            cg_puts(b, "\n");
        }
        cg_puts(b, "        }\n");
    }
    fast_on = 0;
    if (fast_roles)
        cg_puts(b, "        }\n");
    if (!scan) {
        decl_outs(b, s, types, 0, nr, "1", 0, 0);
        for (int r = 0; r < nr; r++)
            cg_printf(b, "        o%d[0] = a%d;\n", r, r);
    }
}

static void emit_filter(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints,
                        const CgIndexLoads *loads)
{
    int part = s->kind == LS_PARTITION;
    int ar = part ? s->nres / 2 : s->nres;
    cg_puts(b, "        int64_t n = ");
    shape_len(b, &s->shape, types);
    cg_puts(b, ";\n");
    cg_printf(b, "        int64_t hint[%d] = {0}, kept = 0, wk = 0, wd = 0;\n", hints);
    cg_puts(b, "        uint8_t *keep = (uint8_t *)cx->scratch(cx, n);\n");
    if (fast_roles)
        cg_emit_lim(b, loads, -1, "        ", "INT64_MAX");
    for (int f = fast_roles ? 1 : 0; f >= 0; f--) {
        fast_on = f;
        if (fast_roles)
            cg_puts(b, f ? "        if (n <= lim) {\n" : "        } else {\n");
        cg_puts(b, "        for (int64_t i = 0; i < n; i++) {\n            int32_t f;\n            ");
        call(b, name, j, "pred", "0");
        cg_puts(b, ", &f);\n            keep[i] = f != 0;\n            kept += keep[i];\n        }\n");
    }
    fast_on = 0;
    if (fast_roles)
        cg_puts(b, "        }\n");

    decl_outs(b, s, types, 0, ar, "kept", 0, 0);
    if (part)
        decl_outs(b, s, types, ar, ar, "n - kept", 0, ar);
    for (int f = fast_roles ? 1 : 0; f >= 0; f--) {
        fast_on = f;
        if (fast_roles)
            cg_puts(b, f ? "        if (n <= lim) {\n" : "        } else {\n");
        cg_puts(b, "        for (int64_t i = 0; i < n; i++) {\n");
        cg_puts(b, "            if (keep[i]) {\n                ");
        call(b, name, j, "pull", "0");
        out_args(b, 0, ar, "wk");
        cg_puts(b, ");\n                wk++;\n            }");
        if (part) {
            cg_puts(b, " else {\n                ");
            call(b, name, j, "pull", "0");
            out_args(b, ar, ar, "wd");
            cg_puts(b, ");\n                wd++;\n            }");
        }
        cg_puts(b, "\n        }\n");
    }
    fast_on = 0;
    if (fast_roles)
        cg_puts(b, "        }\n");
    cg_puts(b, "        (void)wd;\n");
}

/* The loop over the segments of descriptor SV and their elements; `seg`
 * is the element's segment as seg_of would give it. */
static void seg_loop_open(CgBuf *b, int sv)
{
    cg_printf(b, "        const vk_arr *sd = &V[%d];\n", sv);
    cg_puts(b, "        const int32_t *L = (const int32_t *)sd->d;\n");
    cg_puts(b, "        for (int64_t k = 0; k < sd->len; k++) {\n");
    cg_puts(b, "            int64_t lo = sd->off[k], hi = lo + (L[k] > 0 ? L[k] : 0);\n");
}

/* a = a op q for the results BY marks; RESET: then q = the identity. */
static void emit_fold_q(CgBuf *b, const LcuSoac *s, const int *by, const char *indent, int reset)
{
    for (int r = 0; r < s->nres; r++) {
        if (!by[r])
            continue;
        combine_line(b, s, r, 'a', 'q', indent);
        if (reset) {
            cg_printf(b, "%sq%d = ", indent, r);
            cg_rop_identity(b, s->rops[r]);
            cg_puts(b, ";\n");
        }
    }
}

/* The body of a segment's fold over [LO, HI) (text) into a<r>, the
 * chunked results of BY through q<r> and the counter cn (declared by the
 * caller); FAST: the condition for the fast pulls, or NULL; SEG: the
 * element's segment in the fast loop. */
static void emit_seg_fold(CgBuf *b, const char *name, int j, const LcuSoac *s, const int *by, int chunked,
                          const char *fast, const char *seg, const char *in)
{
    char in8[64];
    snprintf(in8, sizeof in8, "%s        ", in);
    for (int f = fast ? 1 : 0; f >= 0; f--) {
        fast_on = f;
        if (fast)
            cg_printf(b, f ? "%sif (%s) {\n" : "%s} else {\n", in, fast);
        cg_printf(b, "%s    for (int64_t i = lo; i < hi; i++) {\n", in);
        if (f)
            cg_printf(b, "%s        int64_t sg = %s;\n%s        ", in, seg, in);
        else
            cg_printf(b, "%s        int64_t sg = sd->segid ? sd->segid[i] : %s;\n%s        ", in, seg, in);
        call(b, name, j, "pull", "sg");
        for (int r = 0; r < s->nres; r++)
            cg_printf(b, ", &x%d", r);
        cg_puts(b, ");\n");
        for (int r = 0; r < s->nres; r++)
            combine_line(b, s, r, by[r] ? 'q' : 'a', 'x', in8);
        if (chunked) {
            char in2[64];
            snprintf(in2, sizeof in2, "%s            ", in);
            cg_printf(b, "%s        if (++cn == %d) {\n", in, VS_CHUNK);
            emit_fold_q(b, s, by, in2, 1);
            cg_printf(b, "%s            cn = 0;\n%s        }\n", in, in);
        }
        cg_printf(b, "%s    }\n", in);
    }
    fast_on = 0;
    if (fast)
        cg_printf(b, "%s}\n", in);
}

/* One element I (text) of a chunk: pulled into <v>r, combined into <a>r;
 * LANE >= 0: a float sum's term noted in fa<LANE> and fe<LANE>
 * (vs_fsum_exact_note). */
static void emit_fold_step(CgBuf *b, const char *name, int j, const LcuSoac *s, int lane, int fast, const char *i,
                           char v, char a, const char *in)
{
    char in4[64];
    snprintf(in4, sizeof in4, "%s    ", in);
    cg_printf(b, "%s{\n%s    int64_t i = %s, sg = %s;\n%s    ", in, in, i, fast ? "0" : "sd->segid ? sd->segid[i] : 0",
              in);
    call(b, name, j, "pull", "sg");
    for (int r = 0; r < s->nres; r++)
        cg_printf(b, ", &%c%d", v, r);
    cg_puts(b, ");\n");
    for (int r = 0; r < s->nres; r++) {
        combine_line(b, s, r, a, v, in4);
        if (lane >= 0 && s->rops[r] == VS_FADD)
            cg_printf(b, "%svs_fsum_exact_note(%c%d, &fa%d, &fe%d);\n", in4, v, r, lane, lane);
    }
    cg_printf(b, "%s}\n", in);
}

/* A chunk [LO, HI) of a reduction whose results may be combined in any
 * order (Int, Bool): its two halves folded side by side (two chains of
 * dependent combines, not one), into q<r> and p<r>, then p<r> into q<r>. */
static void emit_fold_halves(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types,
                             const char *fast, const char *in)
{
    int nr = s->nres;
    char in2[64];
    snprintf(in2, sizeof in2, "%s        ", in);
    for (int r = 0; r < nr; r++) {
        cg_printf(b, "%s%s p%d = ", in, cg_ctype(types[s->res[r]].base), r);
        cg_rop_identity(b, s->rops[r]);
        cg_printf(b, ", y%d;\n", r);
    }
    cg_printf(b, "%sint64_t h = (hi - lo) / 2, mid = lo + h;\n", in);
    for (int f = fast ? 1 : 0; f >= 0; f--) {
        fast_on = f;
        if (fast)
            cg_printf(b, f ? "%sif (%s) {\n" : "%s} else {\n", in, fast);
        cg_printf(b, "%s    for (int64_t t = 0; t < h; t++) {\n", in);
        emit_fold_step(b, name, j, s, -1, f, "lo + t", 'x', 'q', in2);
        emit_fold_step(b, name, j, s, -1, f, "mid + t", 'y', 'p', in2);
        cg_printf(b, "%s    }\n%s    if (mid + h < hi)\n", in, in);
        emit_fold_step(b, name, j, s, -1, f, "mid + h", 'x', 'q', in2);
    }
    fast_on = 0;
    if (fast)
        cg_printf(b, "%s}\n", in);
    for (int r = 0; r < nr; r++)
        combine_line(b, s, r, 'q', 'p', in);
}

/* A chunk [LO, HI) of a reduction with a float sum whose terms are checked
 * (the others Int or Bool): four consecutive elements at a time into four
 * lanes q, u, w, z (four chains of dependent additions), each lane's terms
 * noted in its own fa/fe (vs_fsum_exact_note: additions, no branch), then
 * the lanes combined. The order does not matter once every term passes;
 * the caller tests fa and fe. SIMD (every result a float sum, and a fast
 * pull that calls nothing a vectorised loop cannot): the fast branch is
 * one `omp simd` loop instead, its sums reductions, which the compiler
 * vectorises, in any order of the terms (so their sums are exact or
 * fail the check all the same; the lanes above do not vectorise). */
static void emit_fold_lanes(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types,
                            const char *fast, int simd, const char *in)
{
    static const char lanes[4] = { 'q', 'u', 'w', 'z' };
    static const char *const at[4] = { "i4", "i4 + 1", "i4 + 2", "i4 + 3" };
    int nr = s->nres;
    char in2[64];
    snprintf(in2, sizeof in2, "%s        ", in);
    for (int r = 0; r < nr; r++) {
        cg_printf(b, "%s%s ", in, cg_ctype(types[s->res[r]].base));
        for (int l = 1; l < 4; l++) {
            cg_printf(b, "%c%d = ", lanes[l], r);
            cg_rop_identity(b, s->rops[r]);
            cg_puts(b, l < 3 ? ", " : ";\n");
        }
    }
    cg_printf(b, "%sdouble fa0 = 0.0, fa1 = 0.0, fa2 = 0.0, fa3 = 0.0, fe0 = 0.0, fe1 = 0.0, fe2 = 0.0, fe3 = 0.0;\n",
              in);
    cg_printf(b, "%sint64_t i4 = lo;\n", in);
    for (int f = fast ? 1 : 0; f >= 0; f--) {
        fast_on = f;
        if (fast)
            cg_printf(b, f ? "%sif (%s) {\n" : "%s} else {\n", in, fast);
        if (f && simd) {
            cg_printf(b, "#pragma omp simd reduction(+:fa0, fe0");
            for (int r = 0; r < nr; r++)
                cg_printf(b, ", q%d", r);
            cg_puts(b, ") private(");
            for (int r = 0; r < nr; r++)
                cg_printf(b, "%sx%d", r ? ", " : "", r);
            cg_printf(b, ")\n%s    for (int64_t is = lo; is < hi; is++)\n", in);
            emit_fold_step(b, name, j, s, 0, f, "is", 'x', 'q', in2);
            cg_printf(b, "%s    i4 = hi;\n", in);
            continue;
        }
        cg_printf(b, "%s    for (; i4 + 4 <= hi; i4 += 4) {\n", in);
        for (int l = 0; l < 4; l++)
            emit_fold_step(b, name, j, s, l, f, at[l], 'x', lanes[l], in2);
        cg_printf(b, "%s    }\n%s    for (; i4 < hi; i4++)\n", in, in);
        emit_fold_step(b, name, j, s, 0, f, "i4", 'x', 'q', in2);
    }
    fast_on = 0;
    if (fast)
        cg_printf(b, "%s}\n", in);
    for (int r = 0; r < nr; r++) {
        combine_line(b, s, r, 'q', 'u', in);
        combine_line(b, s, r, 'w', 'z', in);
        combine_line(b, s, r, 'q', 'w', in);
    }
}

/* SEG_REDUCE. The segments are folded in parallel, each left to right
 * (OpenMP over the segments: the results do not depend on the schedule),
 * a chunked reduction's float + and * by chunks (vcode/semantics.h
 * VS_CHUNK). One long segment of a reduction whose every result folds by
 * chunks (rop_by_chunks) has its chunks folded in parallel instead, into
 * a table of partial results combined in order from the identity. */
static void emit_seg_reduce(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types,
                            int hints, const CgIndexLoads *loads, int nvars)
{
    int nr = s->nres, sv = s->shape.var, par1 = 1, chunked = 0;
    int by[LCU_MAXRES], all[LCU_MAXRES];
    int spec = 0; /* float sums folded in parallel when their terms allow it */
    for (int r = 0; r < nr; r++) {
        chunked |= by[r] = s->chunked && vs_rop_chunks(s->rops[r]);
        if (!rop_by_chunks(s, r) && s->rops[r] == VS_FADD)
            spec = 1;
        else
            par1 &= rop_by_chunks(s, r);
        all[r] = 1;
    }
    int ch = s->chunked ? VS_CHUNK : RED_CHUNK;
    char len[32];
    snprintf(len, sizeof len, "V[%d].len", sv);
    decl_outs(b, s, types, 0, nr, len, 0, 0);
    if (fast_roles)
        cg_emit_lim(b, loads, sv, "        ", "INT64_MAX");
    cg_printf(b, "        const vk_arr *sd = &V[%d];\n", sv);
    cg_puts(b, "        const int32_t *L = (const int32_t *)sd->d;\n");
    cg_puts(b, "        int64_t m = sd->len;\n");
    table = "Vp";
    table_n = nvars;
    if (par1) {
        /* one long segment: chunks in parallel; spec: float sums whose
         * terms are checked (vs_fsum_exact_note), else the fold below.
         * Chunked (--float-reassoc): the chunks' folds into a table
         * (kernel scratch), combined in order; otherwise each thread's
         * chunks into a partial of its own, combined in any order (the
         * results do not depend on it) without scratch. */
        int ordered = s->chunked;
        const char *fast = fast_roles ? "!sd->segid && lo >= 0 && hi <= lim && segok" : NULL;
        /* the checked sums vectorised (emit_fold_lanes) */
        int simd = spec && fast_pull_vectorises(loads);
        for (int r = 0; r < nr; r++)
            simd &= s->rops[r] == VS_FADD;
        cg_puts(b, "        int done = 0;\n");
        /* a checked float sum pays from two threads */
        cg_printf(b, "        if (m == 1 && L[0] > %d%s) {\n", ch, spec ? " && VK_THREADS() > 1" : "");
        cg_puts(b, "            int64_t s0 = sd->off[0], n1 = L[0];\n");
        cg_printf(b, "            int64_t nch = (n1 + %d - 1) / %d;\n", ch, ch);
        for (int r = 0; r < nr; r++) {
            cg_printf(b, "            %s a%d = ", cg_ctype(types[s->res[r]].base), r);
            cg_rop_identity(b, s->rops[r]);
            cg_puts(b, ";\n");
        }
        if (ordered)
            cg_printf(b, "            char *pt = (char *)cx->scratch(cx, nch * %d * 8);\n", nr);
        if (spec)
            cg_puts(b, "            double flim = vs_fsum_exact_lim(nch);\n            int failed = 0;\n");
        cg_printf(b, "#pragma omp parallel if (n1 >= %d)\n", MAP_PAR_MIN);
        cg_puts(b, "            {\n");
        cg_printf(b, "                int64_t hint[%d] = {0};\n", hints);
        private_table(b, "                ");
        if (!ordered) {
            for (int r = 0; r < nr; r++) {
                cg_printf(b, "                %s t%d = ", cg_ctype(types[s->res[r]].base), r);
                cg_rop_identity(b, s->rops[r]);
                cg_puts(b, ";\n");
            }
        }
        cg_puts(b, ordered ? "#pragma omp for schedule(static)\n" : "#pragma omp for schedule(static) nowait\n");
        cg_puts(b, "                for (int64_t c = 0; c < nch; c++) {\n");
        if (spec) /* the first chunk that fails stops the others */
            cg_puts(b, "                    int stop;\n#pragma omp atomic read\n                    stop = failed;\n"
                       "                    if (stop)\n                        continue;\n");
        cg_printf(b, "                    int64_t lo = s0 + c * %d, hi = n1 - c * %d < %d ? s0 + n1 : lo + %d;\n", ch,
                  ch, ch, ch);
        for (int r = 0; r < nr; r++) {
            cg_printf(b, "                    %s q%d = ", cg_ctype(types[s->res[r]].base), r);
            cg_rop_identity(b, s->rops[r]);
            cg_printf(b, ", x%d;\n", r);
        }
        if (ordered)
            emit_seg_fold(b, name, j, s, all, 0, fast, "0", "                    ");
        else if (spec)
            emit_fold_lanes(b, name, j, s, types, fast, simd, "                    ");
        else
            emit_fold_halves(b, name, j, s, types, fast, "                    ");
        for (int r = 0; r < nr; r++) {
            if (ordered)
                cg_printf(b, "                    ((%s *)(pt + (size_t)%d * nch * 8))[c] = q%d;\n",
                          cg_ctype(types[s->res[r]].base), r, r);
            else
                combine_line(b, s, r, 't', 'q', "                    ");
        }
        if (spec)
            cg_puts(b, "                    if (!vs_fsum_exact_ok((fa0 + fa1) + (fa2 + fa3), (fe0 + fe1) + (fe2 + fe3), flim)) {\n"
                       "#pragma omp atomic write\n                        failed = 1;\n                    }\n");
        cg_puts(b, "                }\n");
        if (!ordered) {
            cg_puts(b, "#pragma omp critical\n                {\n");
            for (int r = 0; r < nr; r++)
                combine_line(b, s, r, 'a', 't', "                    ");
            cg_puts(b, "                }\n");
        }
        cg_puts(b, "            }\n");
        if (ordered)
            emit_table_fold(b, s, types, "            ");
        if (spec) {
            /* a guard only: a NaN term already fails its chunk's check */
            cg_puts(b, "            done = !failed");
            for (int r = 0; r < nr; r++)
                if (s->rops[r] == VS_FADD)
                    cg_printf(b, " && a%d == a%d", r, r);
            cg_puts(b, ";\n");
        } else {
            cg_puts(b, "            done = 1;\n");
        }
        cg_puts(b, "            if (done) {\n");
        for (int r = 0; r < nr; r++)
            cg_printf(b, "                o%d[0] = a%d;\n", r, r);
        cg_puts(b, "            }\n        }\n        if (!done) {\n");
    }
    cg_printf(b, "#pragma omp parallel if (m > 1 && sd->n >= %d)\n", MAP_PAR_MIN);
    cg_puts(b, "        {\n");
    cg_printf(b, "            int64_t hint[%d] = {0};\n", hints);
    private_table(b, "            ");
    cg_puts(b, "#pragma omp for schedule(dynamic, 64)\n");
    cg_puts(b, "            for (int64_t k = 0; k < m; k++) {\n");
    cg_puts(b, "                int64_t lo = sd->off[k], hi = lo + (L[k] > 0 ? L[k] : 0);\n");
    for (int r = 0; r < nr; r++) {
        cg_printf(b, "                %s a%d = ", cg_ctype(types[s->res[r]].base), r);
        cg_rop_identity(b, s->rops[r]);
        cg_printf(b, ", x%d", r);
        if (by[r]) {
            cg_printf(b, ", q%d = ", r);
            cg_rop_identity(b, s->rops[r]);
        }
        cg_puts(b, ";\n");
    }
    if (chunked)
        cg_puts(b, "                int64_t cn = 0;\n");
    emit_seg_fold(b, name, j, s, by, chunked, fast_roles ? "!sd->segid && lo >= 0 && hi <= lim && segok" : NULL, "k",
                  "                ");
    if (chunked) {
        cg_puts(b, "                if (cn) {\n");
        emit_fold_q(b, s, by, "                    ", 0);
        cg_puts(b, "                }\n");
    }
    for (int r = 0; r < nr; r++)
        cg_printf(b, "                o%d[k] = a%d;\n", r, r);
    cg_puts(b, "            }\n        }\n");
    if (par1)
        cg_puts(b, "        }\n");
    table = "V";
}

/* SEG_SCAN: each segment left to right. */
static void emit_seg_scan(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types, int hints,
                          const CgIndexLoads *loads)
{
    int nr = s->nres, sv = s->shape.var;
    char len[32];
    snprintf(len, sizeof len, "V[%d].n", sv);
    decl_outs(b, s, types, 0, nr, len, 0, 0);
    cg_printf(b, "        int64_t hint[%d] = {0};\n", hints);
    for (int r = 0; r < nr; r++)
        cg_printf(b, "        %s a%d, x%d;\n", cg_ctype(types[s->res[r]].base), r, r);
    if (fast_roles)
        cg_emit_lim(b, loads, sv, "        ", "INT64_MAX");
    seg_loop_open(b, sv);
    for (int r = 0; r < nr; r++) {
        cg_printf(b, "            a%d = ", r);
        cg_rop_identity(b, s->rops[r]);
        cg_puts(b, ";\n");
    }
    /* fast: a descriptor without a segid table (every element's segment
     * is k) and the segment within every array read at i */
    for (int f = fast_roles ? 1 : 0; f >= 0; f--) {
        fast_on = f;
        if (fast_roles)
            cg_puts(b, f ? "            if (!sd->segid && lo >= 0 && hi <= lim && segok) {\n" : "            } else {\n");
        cg_puts(b, "            for (int64_t i = lo; i < hi; i++) {\n");
        cg_puts(b, f ? "                int64_t sg = k;\n                "
                     : "                int64_t sg = sd->segid ? sd->segid[i] : k;\n                ");
        call(b, name, j, "pull", "sg");
        for (int r = 0; r < nr; r++)
            cg_printf(b, ", &x%d", r);
        cg_puts(b, ");\n");
        char acc[16], x[16];
        for (int r = 0; r < nr; r++) {
            cg_printf(b, "                o%d[i] = a%d;\n", r, r);
            snprintf(acc, sizeof acc, "a%d", r);
            snprintf(x, sizeof x, "x%d", r);
            cg_puts(b, "                ");
            cg_rop_combine(b, s->rops[r], acc, x);
            cg_puts(b, "\n");
        }
        cg_puts(b, "            }\n");
    }
    fast_on = 0;
    if (fast_roles)
        cg_puts(b, "            }\n");
    cg_puts(b, "        }\n");
}

static void emit_seg_permute(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types,
                             int hints)
{
    int sv = s->shape.var, dv = s->dst_sd;
    cg_printf(b, "        const vk_arr *dsd = &V[%d];\n", dv);
    cg_puts(b, "        int64_t dn = dsd->n;\n");
    for (int r = 0; r < s->nres; r++) {
        int v = s->res[r];
        const char *ct = cg_ctype(types[v].base);
        int d = s->dflt[r];
        cg_printf(b, "        %s *o%d = (%s *)cx->alloc(cx, %d, dn, %d);\n", ct, r, ct, v, d < 0);
        if (d >= 0) {
            cg_printf(b, "        if (V[%d].len != dn) cx->fail(cx, VKF_DFLTLEN, dn, V[%d].len, 0);\n", d, d);
            cg_printf(b, "        if (dn) memcpy(o%d, V[%d].d, (size_t)dn * sizeof *o%d);\n", r, d, r);
        }
    }
    cg_printf(b, "        int64_t hint[%d] = {0};\n", hints);
    cg_puts(b, "        const int32_t *DL = (const int32_t *)dsd->d;\n");
    seg_loop_open(b, sv);
    cg_puts(b, "            if (hi <= lo) continue;\n");
    cg_puts(b, "            if (k >= dsd->len) cx->fail(cx, VKF_DSTSEG, k, 0, 0);\n");
    cg_puts(b, "            int64_t dl = DL[k] > 0 ? DL[k] : 0, d0 = dsd->off[k];\n");
    cg_puts(b, "            for (int64_t i = lo; i < hi; i++) {\n");
    cg_puts(b, "                int64_t sg = sd->segid ? sd->segid[i] : k;\n");
    if (s->pred) {
        cg_puts(b, "                int32_t f;\n                ");
        call(b, name, j, "pred", "sg");
        cg_puts(b, ", &f);\n                if (!f) continue;\n");
    }
    cg_puts(b, "                int32_t jx;\n                ");
    call(b, name, j, "idx", "sg");
    cg_puts(b, ", &jx);\n");
    cg_puts(b, "                if (jx < 0 || jx >= dl) cx->fail(cx, VKF_PERM, i, jx, dl);\n                ");
    call(b, name, j, "pull", "sg");
    out_args(b, 0, s->nres, "d0 + jx");
    cg_puts(b, ");\n            }\n        }\n");
}

static void emit_seg_filter(CgBuf *b, const char *name, int j, const LcuSoac *s, const LcuVarType *types,
                            int hints)
{
    int ar = s->nres - 1, sdv = s->res[ar], sv = s->shape.var;
    cg_printf(b, "        int64_t hint[%d] = {0}, total = 0, w = 0;\n", hints);
    cg_printf(b, "        uint8_t *keep = (uint8_t *)cx->scratch(cx, V[%d].n);\n", sv);
    cg_printf(b, "        int32_t *NL = (int32_t *)cx->alloc(cx, %d, V[%d].len, 0);\n", sdv, sv);
    seg_loop_open(b, sv);
    cg_puts(b, "            int32_t cnt = 0;\n");
    cg_puts(b, "            for (int64_t i = lo; i < hi; i++) {\n");
    cg_puts(b, "                int64_t sg = sd->segid ? sd->segid[i] : k;\n                int32_t f;\n                ");
    call(b, name, j, "pred", "sg");
    cg_puts(b, ", &f);\n                keep[i] = f != 0;\n                cnt += keep[i];\n            }\n");
    cg_puts(b, "            NL[k] = cnt;\n            total += cnt;\n        }\n");
    cg_printf(b, "        cx->seal(cx, %d);\n", sdv);
    decl_outs(b, s, types, 0, ar, "total", 0, 0);
    cg_puts(b, "        for (int64_t k = 0; k < sd->len; k++) {\n");
    cg_puts(b, "            int64_t lo = sd->off[k], hi = lo + (L[k] > 0 ? L[k] : 0);\n");
    cg_puts(b, "            for (int64_t i = lo; i < hi; i++)\n");
    cg_puts(b, "                if (keep[i]) {\n");
    cg_puts(b, "                    int64_t sg = sd->segid ? sd->segid[i] : k;\n                    ");
    call(b, name, j, "pull", "sg");
    out_args(b, 0, ar, "w");
    cg_puts(b, ");\n                    w++;\n                }\n        }\n");
}

/* The skeletons whose loops know their range of i: those get fast
 * thunk variants (cg_emit_soac_fast_thunks). */
static int fast_kind(LcuSoacKind k)
{
    return k == LS_MAP || k == LS_REDUCE || k == LS_SCAN || k == LS_FILTER || k == LS_PARTITION ||
           k == LS_SEG_REDUCE || k == LS_SEG_SCAN;
}

int cg_emit_kernel_c(CgBuf *b, const char *name, const LcuKernel *k, const LcuVarType *types, int nvars, char *msg,
                     size_t msglen)
{
    (void)nvars;
    int *hints = calloc((size_t)(k->nsoacs ? k->nsoacs : 1), sizeof *hints);
    int *mapseg = calloc((size_t)(k->nsoacs ? k->nsoacs : 1), sizeof *mapseg);
    CgIndexLoads *loads = calloc((size_t)(k->nsoacs ? k->nsoacs : 1), sizeof *loads);
    if (!hints || !mapseg || !loads) {
        free(hints);
        free(mapseg);
        free(loads);
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    for (int j = 0; j < k->nsoacs; j++) {
        const LcuSoac *s = k->soacs[j];
        if (s->kind == LS_LIB)
            continue;
        int segvar = (s->kind == LS_SEG_REDUCE || s->kind == LS_SEG_SCAN || s->kind == LS_SEG_PERMUTE ||
                      s->kind == LS_SEG_FILTER)
                         ? s->shape.var
                         : -1;
        if (s->kind == LS_MAP)
            segvar = mapseg[j] = cg_map_segvar(s, types);
        if (cg_emit_soac_thunks(b, CG_C, name, j, s, types, segvar, s->kind == LS_MAP, &hints[j]) < 0 ||
            (fast_kind(s->kind) &&
             cg_emit_soac_fast_thunks(b, name, j, s, types, segvar, s->kind == LS_MAP, &loads[j]) < 0)) {
            snprintf(msg, msglen, "SOAC %d of kernel K%d: a thunk the generator cannot express", j, k->id);
            free(hints);
            free(mapseg);
            free(loads);
            return -1;
        }
    }
    cg_printf(b, "void %s(vk_ctx *cx)\n{\n    vk_arr *V = cx->v;\n    vk_errp er = cx;\n    (void)V; (void)er;\n",
              name);
    for (int j = 0; j < k->nsoacs; j++) {
        const LcuSoac *s = k->soacs[j];
        cg_printf(b, "    { /* %s */\n", lcu_soac_name(s->kind));
        fast_roles = loads[j].roles;
        switch (s->kind) {
        case LS_MAP: emit_map(b, name, j, s, types, hints[j], mapseg[j], nvars, &loads[j]); break;
        case LS_ONCE: emit_once(b, name, j, s, types, hints[j]); break;
        case LS_PERMUTE: emit_permute(b, name, j, s, types, hints[j]); break;
        case LS_REDUCE: case LS_SCAN: emit_reduce_scan(b, name, j, s, types, hints[j], &loads[j], nvars); break;
        case LS_FILTER: case LS_PARTITION: emit_filter(b, name, j, s, types, hints[j], &loads[j]); break;
        case LS_SEG_REDUCE: emit_seg_reduce(b, name, j, s, types, hints[j], &loads[j], nvars); break;
        case LS_SEG_SCAN: emit_seg_scan(b, name, j, s, types, hints[j], &loads[j]); break;
        case LS_SEG_PERMUTE: emit_seg_permute(b, name, j, s, types, hints[j]); break;
        case LS_SEG_FILTER: emit_seg_filter(b, name, j, s, types, hints[j]); break;
        case LS_LIB: cg_printf(b, "        cx->lib(cx, %d);\n", j); break;
        default:
            snprintf(msg, msglen, "SOAC kind %d", (int)s->kind);
            fast_roles = 0;
            free(hints);
            free(mapseg);
            free(loads);
            return -1;
        }
        fast_roles = 0;
        cg_puts(b, "    }\n");
    }
    cg_puts(b, "}\n");
    free(hints);
    free(mapseg);
    free(loads);
    return 0;
}

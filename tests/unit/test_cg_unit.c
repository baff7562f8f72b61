/* tests/unit/test_cg_unit.c — canonical renumbering and deduplication of
 * generated kernels (translate/cg_unit.c) and lcu_kernel_renumber, on
 * kernels whose right answer is written down here. */
#include "check.h"
#include "translate/cg_unit.h"
#include "translate/codegen.h"
#include "translate/lcu.h"

#include <stdlib.h>
#include <string.h>

#define NV 32

/* let xr = MAP { i => xa[i] + xb[i] } (#xa);  let xs = REDUCE + { i => xr[i] } (#xr) */
static LcuKernel *map_reduce(int id, int xa, int xb, int xr, int xs)
{
    LcuKernel *k = lcu_kernel_new(id);
    LcuSoac *m = lcu_soac_new(LS_MAP);
    m->nres = 1;
    m->res[0] = xr;
    m->pull = lcu_thunk(lcu_prim2(LP_ADD, VS_INT, lcu_sub(xa, VS_INT, lcu_index()), lcu_sub(xb, VS_INT, lcu_index())),
                        1);
    m->shape.kind = LSH_LEN;
    m->shape.var = xa;
    lcu_kernel_add(k, m);
    LcuSoac *r = lcu_soac_new(LS_REDUCE);
    r->nres = 1;
    r->res[0] = xs;
    r->rops[0] = VS_IADD;
    r->pull = lcu_thunk(lcu_sub(xr, VS_INT, lcu_index()), 1);
    r->shape.kind = LSH_LEN;
    r->shape.var = xr;
    lcu_kernel_add(k, r);
    unsigned char need[NV] = { 0 };
    need[xs] = 1;
    lcu_kernel_finish(k, need, NV);
    return k;
}

static int text_count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* A MAP over the elements of x0 (a descriptor) pulling
 * x1[seg_of(x0, i)] + x2[seg_of(x3, i)] + x1[seg_of(x0, i)] + x2[seg_of(x3, x4[i])]. */
static LcuKernel *map_seg_of(void)
{
    LcuKernel *k = lcu_kernel_new(9);
    LcuSoac *m = lcu_soac_new(LS_MAP);
    m->nres = 1;
    m->res[0] = 5;
    LcuExpr *a = lcu_sub(1, VS_INT, lcu_seg(LE_SEG_OF, 0, lcu_index()));
    LcuExpr *b = lcu_sub(2, VS_INT, lcu_seg(LE_SEG_OF, 3, lcu_index()));
    LcuExpr *c = lcu_sub(1, VS_INT, lcu_seg(LE_SEG_OF, 0, lcu_index()));
    LcuExpr *d = lcu_sub(2, VS_INT, lcu_seg(LE_SEG_OF, 3, lcu_sub(4, VS_INT, lcu_index())));
    m->pull = lcu_thunk(lcu_prim2(LP_ADD, VS_INT, lcu_prim2(LP_ADD, VS_INT, a, b), lcu_prim2(LP_ADD, VS_INT, c, d)),
                        1);
    m->shape.kind = LSH_SEG_N;
    m->shape.var = 0;
    lcu_kernel_add(k, m);
    unsigned char need[NV] = { 0 };
    need[5] = 1;
    lcu_kernel_finish(k, need, NV);
    return k;
}

/* The C MAP skeleton walks the segments of the descriptor its pull asks
 * seg_of(X, i) of most often, and falls back to seg = -1; the CUDA target
 * keeps the per-element search. */
static void test_map_segwalk(LcuVarType *types)
{
    char msg[300];
    LcuKernel *k = map_seg_of();
    CHECK(cg_map_segvar(k->soacs[0], types) == 0);
    LcuKernel *r = map_reduce(8, 1, 2, 6, 7);
    CHECK(cg_map_segvar(r->soacs[0], types) == -1 && cg_map_segvar(r->soacs[1], types) == -1);
    CgBuf b = { 0 };
    CHECK(cg_emit_kernel(&b, CG_C, "vk_t", k, types, NV, msg, sizeof msg) == 0);
    const char *t = b.s ? b.s : "";
    CHECK(text_count(t, "if (n > 0 && sd->n == n && !sd->segid) {") == 1);
    CHECK(text_count(t, "(seg >= 0 ? (int32_t)seg : vk_seg_of(er, &V[0], 0, ((int32_t)i), &hint[0]))") == 2);
    /* x2[seg_of(x3, i)] is searched in both variants of the pull */
    CHECK(text_count(t, "vk_seg_of(er, &V[3], 3, ((int32_t)i)") == 2 && text_count(t, "(seg >= 0") == 2);
    /* the loops read each thread's private copy of the table (Vp) */
    CHECK(text_count(t, "vk_t_s0_pull(Vp, er, i, k, hint, &o0[i])") == 1);
    CHECK(text_count(t, "vk_t_s0_pull(Vp, er, i, -1, hint, &o0[i])") == 1);
    CHECK(text_count(t, "Vp[q] = V[q];") == 2);
    cg_buf_free(&b);
    CgBuf g = { 0 };
    CHECK(cg_emit_kernel(&g, CG_CUDA, "vk_t", k, types, NV, msg, sizeof msg) == 0);
    /* (twice in the pull, twice in its fast variant, which reads x4[i]
     * unchecked) */
    CHECK(g.s && text_count(g.s, "seg >= 0") == 0 && text_count(g.s, "vk_seg_of(er, &V[0]") == 4);
    cg_buf_free(&g);
    lcu_kernel_free(k);
    lcu_kernel_free(r);
}

/* Fast variants: a loop whose range of i lies within the arrays its
 * thunks read at i (and whose `seg` is i's segment, within the arrays read
 * there) calls a variant that reads them without checks. */
static void test_fast_loads(LcuVarType *types)
{
    char msg[300];
    LcuKernel *r = map_reduce(8, 1, 2, 6, 7);
    CgBuf b = { 0 };
    CHECK(cg_emit_kernel(&b, CG_C, "vk_t", r, types, NV, msg, sizeof msg) == 0);
    const char *t = b.s ? b.s : "";
    /* MAP: x1[i] + x2[i], unchecked in the fast variant, checked in the other */
    CHECK(text_count(t, "VK_FN void vk_t_s0_pullf(") == 1 && text_count(t, "VK_FN void vk_t_s0_pull(") == 1);
    CHECK(text_count(t, "((const int32_t *)V[1].d)[i]") == 1 && text_count(t, "((const int32_t *)V[2].d)[i]") == 1);
    CHECK(text_count(t, "vk_ldi(er, &V[1], i)") == 1 && text_count(t, "vk_ldi(er, &V[2], i)") == 1);
    CHECK(text_count(t, "if (V[1].len < lim) lim = V[1].len;") == 1 && text_count(t, "if (V[2].len < lim)") == 1);
    CHECK(text_count(t, "if (n <= lim) {") == 1); /* the MAP */
    CHECK(text_count(t, "if (c1 <= lim) {") == 1); /* each chunk of the REDUCE */
    CHECK(text_count(t, "vk_t_s0_pullf(Vp, er, i, 0, hint, &o0[i])") == 1);
    CHECK(text_count(t, "vk_t_s0_pull(Vp, er, i, 0, hint, &o0[i])") == 1);
    /* the fast MAP loop calls nothing a vector loop cannot: omp simd;
     * the checked one stays scalar */
    CHECK(text_count(t, "#pragma omp for simd schedule(static)\n            for (int64_t i = 0; i < n; i++)\n"
                        "                vk_t_s0_pullf(") == 1);
    CHECK(text_count(t, "#pragma omp for schedule(static)\n            for (int64_t i = 0; i < n; i++)\n"
                        "                vk_t_s0_pull(") == 1);
    /* REDUCE over x6[i] (Int: by chunks in parallel, each thread's copy Vp) */
    CHECK(text_count(t, "if (V[6].len < lim) lim = V[6].len;") == 1);
    CHECK(text_count(t, "vk_t_s1_pullf(Vp, er, i, 0, hint, &x0)") == 1 &&
          text_count(t, "vk_t_s1_pull(Vp, er, i, 0") == 1);
    CHECK(text_count(t, "int64_t nch = (n + 4096 - 1) / 4096;") == 1);
    cg_buf_free(&b);

    /* a fast MAP pull with an Int division (a check that may fail: VK_FAIL)
     * keeps the scalar loop */
    LcuKernel *dv = map_reduce(8, 1, 2, 6, 7);
    LcuExpr *sum = dv->soacs[0]->pull->body;
    dv->soacs[0]->pull->body = lcu_prim2(LP_DIV, VS_INT, sum, lcu_sub(3, VS_INT, lcu_index()));
    CHECK(cg_emit_kernel(&b, CG_C, "vk_t", dv, types, NV, msg, sizeof msg) == 0);
    t = b.s ? b.s : "";
    CHECK(text_count(t, "vk_idiv(er, ") == 2 && text_count(t, "omp for simd") == 0);
    cg_buf_free(&b);
    lcu_kernel_free(dv);

    /* The seg_of MAP: x1[seg_of(x0, i)] fast (x0 is the walked descriptor),
     * x2[seg_of(x3, i)] searched; only the segment walk uses the fast
     * variant (the plain loop passes seg = -1) */
    LcuKernel *k = map_seg_of();
    CHECK(cg_emit_kernel(&b, CG_C, "vk_t", k, types, NV, msg, sizeof msg) == 0);
    t = b.s ? b.s : "";
    CHECK(text_count(t, "((const int32_t *)V[1].d)[seg]") == 2);
    CHECK(text_count(t, "if (V[1].len < V[0].len) segok = 0;") == 1);
    CHECK(text_count(t, "if (end <= lim && segok) {") == 1);
    CHECK(text_count(t, "vk_t_s0_pullf(Vp, er, i, k, hint") == 1);
    CHECK(text_count(t, "vk_t_s0_pullf(Vp, er, i, -1") == 0 && text_count(t, "vk_t_s0_pull(Vp, er, i, -1") == 1);
    cg_buf_free(&b);

    /* The CUDA text: the MAP's grid loop, the REDUCE's element values and
     * its grid-wide block partials each take the fast pull when their range
     * of i lies within the arrays read at i (loads of V[k].d with no check:
     * the loop's invariants) */
    CHECK(cg_emit_kernel(&b, CG_CUDA, "vk_t", r, types, NV, msg, sizeof msg) == 0);
    t = b.s ? b.s : "";
    CHECK(text_count(t, "VK_FN void vk_t_s0_pullf(") == 1 && text_count(t, "VK_FN void vk_t_s1_pullf(") == 1);
    CHECK(text_count(t, "((const int32_t *)V[1].d)[i]") == 1 && text_count(t, "((const int32_t *)V[6].d)[i]") == 1);
    CHECK(text_count(t, "if (n <= lim) {") == 1);             /* the MAP */
    CHECK(text_count(t, "if (n <= lim && segok) {") == 1);    /* the REDUCE's values */
    CHECK(text_count(t, "if (hi <= lim && segok) {") == 1);   /* the REDUCE's block partials */
    CHECK(text_count(t, "vk_t_s0_pullf(V, er, i, 0, hint, &o0[i])") == 1);
    CHECK(text_count(t, "vk_t_s0_pull(V, er, i, 0, hint, &o0[i])") == 1);
    CHECK(text_count(t, "vk_t_s1_pullf(V, er, i, 0, hint, &x0)") == 1);
    CHECK(text_count(t, "vk_t_s1_pull(V, er, i, 0, hint, &x0)") >= 1);
    CHECK(text_count(t, "if (V[6].len < lim) lim = V[6].len;") == 2);
    cg_buf_free(&b);
    /* the seg_of MAP reads x4 at i: its fast pull reads x4[i] unchecked
     * and still searches every segment (the CUDA grid loop passes seg = 0) */
    CHECK(cg_emit_kernel(&b, CG_CUDA, "vk_t", k, types, NV, msg, sizeof msg) == 0);
    t = b.s ? b.s : "";
    CHECK(text_count(t, "((const int32_t *)V[4].d)[i]") == 1 && text_count(t, "if (V[4].len < lim) lim = V[4].len;") == 1);
    CHECK(text_count(t, "((const int32_t *)V[1].d)[seg]") == 0);
    cg_buf_free(&b);

    /* A thunk that reads nothing at i has no fast variant */
    LcuKernel *c = lcu_kernel_new(3);
    LcuSoac *m = lcu_soac_new(LS_MAP);
    m->nres = 1;
    m->res[0] = 5;
    m->pull = lcu_thunk(lcu_sub(4, VS_INT, lcu_int(0)), 1);
    m->shape.kind = LSH_LEN;
    m->shape.var = 1;
    lcu_kernel_add(c, m);
    unsigned char need[NV] = { 0 };
    need[5] = 1;
    lcu_kernel_finish(c, need, NV);
    CHECK(cg_emit_kernel(&b, CG_C, "vk_t", c, types, NV, msg, sizeof msg) == 0);
    CHECK(b.s && text_count(b.s, "pullf") == 0 && text_count(b.s, "lim") == 0);
    cg_buf_free(&b);
    lcu_kernel_free(c);
    lcu_kernel_free(k);
    lcu_kernel_free(r);
}

/* cg_unit_omit_seen: the hashes a first unit emitted are "seen" by a
 * second one, which numbers those kernels but leaves their text out. */
static uint64_t seen_hashes[16];
static int nseen;

static int seen_in_list(void *ctx, uint64_t h)
{
    (void)ctx;
    for (int i = 0; i < nseen; i++)
        if (seen_hashes[i] == h)
            return 1;
    return 0;
}

static void test_omit_seen(LcuVarType *types)
{
    char msg[300];
    LcuKernel *ka = map_reduce(1, 7, 3, 12, 20), *kb = map_reduce(2, 4, 9, 5, 6);
    kb->soacs[1]->rops[0] = VS_IMAX;
    CgUnit *first = cg_unit_new(CG_C);
    CgKernelCode c1, c2, c3;
    CHECK(cg_unit_add(first, ka, types, NV, &c1, msg, sizeof msg) == 0);
    const uint64_t *h;
    CHECK(cg_unit_emitted(first, &h) == 1);
    nseen = 1;
    seen_hashes[0] = h[0];
    CgUnit *second = cg_unit_new(CG_C);
    cg_unit_omit_seen(second, seen_in_list, NULL);
    CHECK(cg_unit_add(second, ka, types, NV, &c2, msg, sizeof msg) == 0);
    CHECK(cg_unit_add(second, kb, types, NV, &c3, msg, sizeof msg) == 0);
    /* both numbered, only the new one emitted */
    CHECK(c2.unique == 0 && c3.unique == 1 && cg_unit_distinct(second) == 2);
    CHECK(cg_unit_emitted(second, &h) == 1 && h[0] != seen_hashes[0]);
    size_t len;
    const char *text = cg_unit_text(second, &len);
    CHECK(text_count(text, "vk_u0") == 0 && text_count(text, "vk_u1") > 0);
    cg_kernel_code_free(&c1);
    cg_kernel_code_free(&c2);
    cg_kernel_code_free(&c3);
    cg_unit_free(first);
    cg_unit_free(second);
    lcu_kernel_free(ka);
    lcu_kernel_free(kb);
}

/* A CUDA unit in parts (cg_unit_split): the pieces are the SOACs of each
 * kernel in order; every part is the prelude and whole pieces; a part of
 * one piece holds exactly that SOAC's entry points; the parts together
 * are the unit's text. */
static void test_parts(LcuVarType *types)
{
    char msg[300];
    LcuKernel *ka = map_reduce(1, 7, 3, 12, 20), *kb = map_reduce(2, 4, 9, 5, 6);
    kb->soacs[1]->rops[0] = VS_IMAX; /* another kernel */
    CgUnit *u = cg_unit_new(CG_CUDA);
    CgKernelCode c1, c2;
    CHECK(cg_unit_add(u, ka, types, NV, &c1, msg, sizeof msg) == 0);
    CHECK(cg_unit_add(u, kb, types, NV, &c2, msg, sizeof msg) == 0);
    CHECK(cg_unit_pieces(u) == 4);
    int soac = -1;
    CHECK(cg_unit_piece(u, 0, &soac) == 0 && soac == 0 && cg_unit_piece(u, 1, &soac) == 0 && soac == 1);
    CHECK(cg_unit_piece(u, 2, &soac) == 1 && soac == 0 && cg_unit_piece(u, 3, &soac) == 1 && soac == 1);
    CHECK(cg_unit_piece(u, 4, &soac) == -1);
    size_t ulen = 0, plen = 0;
    const char *text = cg_unit_text(u, &ulen);
    /* one piece a part */
    int first[8];
    CHECK(cg_unit_split(u, 1, first, 8) == 4 && first[0] == 0 && first[1] == 1 && first[2] == 2 && first[3] == 3);
    char *p0 = cg_unit_part_text(u, 0, 0, &plen); /* the prelude alone */
    size_t prelude = plen;
    CHECK(p0 && strncmp(p0, text, prelude) == 0 && text_count(p0, "vk_u0_s") == 0);
    size_t sum = prelude;
    for (int p = 0; p < 4; p++) {
        char *t = cg_unit_part_text(u, p, p + 1, &plen);
        char want[48];
        snprintf(want, sizeof want, "vk_u%d_s%d_", p / 2, p % 2);
        char other[48];
        snprintf(other, sizeof other, "vk_u%d_s%d_", p / 2, 1 - p % 2);
        CHECK(t && strncmp(t, text, prelude) == 0 && text_count(t, want) > 0 && text_count(t, other) == 0 &&
              text_count(t, p < 2 ? "vk_u1" : "vk_u0") == 0);
        sum += plen - prelude;
        free(t);
    }
    CHECK(sum == ulen);
    /* everything in one part, and a cap of parts that gives the rest to the last */
    CHECK(cg_unit_split(u, ulen, first, 8) == 1 && first[0] == 0);
    CHECK(cg_unit_split(u, 1, first, 2) == 2 && first[0] == 0 && first[1] == 1);
    char *all = cg_unit_part_text(u, 0, 4, &plen);
    CHECK(all && plen == ulen && memcmp(all, text, ulen) == 0);
    free(all);
    free(p0);
    cg_kernel_code_free(&c1);
    cg_kernel_code_free(&c2);
    cg_unit_free(u);
    lcu_kernel_free(ka);
    lcu_kernel_free(kb);
}

/* let x2 = SEG_REDUCE { i => x1[i] } (ROP) x0, x0 a descriptor and x1, x2
 * of BASE; CHUNKED as --float-reassoc marks it. */
static LcuKernel *seg_reduce(VsRop rop, VsElem base, int chunked)
{
    LcuKernel *k = lcu_kernel_new(3);
    LcuSoac *r = lcu_soac_new(LS_SEG_REDUCE);
    r->nres = 1;
    r->res[0] = 2;
    r->rops[0] = rop;
    r->chunked = chunked;
    r->pull = lcu_thunk(lcu_sub(1, base, lcu_index()), 1);
    r->shape.kind = LSH_SEG_N;
    r->shape.var = 0;
    lcu_kernel_add(k, r);
    unsigned char need[NV] = { 0 };
    need[2] = 1;
    lcu_kernel_finish(k, need, NV);
    return k;
}

/* The C reduction skeletons: segments in parallel, each left to right;
 * one long segment by chunks in parallel for Int (any order gives the
 * same), float sums only behind the check of their terms (falling back to
 * the fold), chunked float sums by chunks of VS_CHUNK, float MAX never. */
static void test_reduce_skeletons(const LcuVarType *types0)
{
    LcuVarType types[NV];
    memcpy(types, types0, sizeof types);
    types[0].kind = LV_SEGDES;
    char msg[300];
    struct {
        VsRop rop;
        VsElem base;
        int chunked;
        int par1, spec, chunk64k, counter;
    } t[] = {
        { VS_IADD, VS_INT, 0, 1, 0, 0, 0 },   { VS_FADD, VS_FLOAT, 0, 1, 1, 0, 0 },
        { VS_FADD, VS_FLOAT, 1, 1, 0, 1, 1 }, { VS_FMUL, VS_FLOAT, 0, 0, 0, 0, 0 },
        { VS_FMAX, VS_FLOAT, 0, 0, 0, 0, 0 }, { VS_BXOR, VS_BOOL, 0, 1, 0, 0, 0 },
    };
    for (size_t c = 0; c < sizeof t / sizeof t[0]; c++) {
        int failed_before = check_failed;
        types[1].base = types[2].base = t[c].base;
        LcuKernel *k = seg_reduce(t[c].rop, t[c].base, t[c].chunked);
        CgBuf b = { 0 };
        CHECK(cg_emit_kernel(&b, CG_C, "vk_r", k, types, NV, msg, sizeof msg) == 0);
        const char *x = b.s ? b.s : "";
        CHECK(text_count(x, "#pragma omp for schedule(dynamic, 64)") == 1);
        CHECK(text_count(x, "if (m == 1 && L[0] > ") == t[c].par1);
        CHECK(text_count(x, "if (!done) {") == t[c].par1);
        /* a checked float sum: four lanes, its terms noted with max
         * instructions (vs_fsum_exact_note), the first failing chunk
         * stopping the others, from two threads */
        CHECK((text_count(x, "vs_fsum_exact_note(") > 0) == t[c].spec);
        /* x1[i] needs no check once the range is: its fast branch is
         * one vectorised (omp simd) loop, the checked branch the lanes */
        CHECK(text_count(x, "for (; i4 + 4 <= hi; i4 += 4) {") == (t[c].spec ? 1 : 0));
        CHECK(text_count(x, "#pragma omp simd reduction(+:fa0, fe0, q0) private(x0)") == t[c].spec);
        CHECK(text_count(x, "#pragma omp atomic write") == t[c].spec);
        CHECK(text_count(x, "done = !failed && a0 == a0;") == t[c].spec);
        CHECK(text_count(x, "&& VK_THREADS() > 1) {") == t[c].spec);
        CHECK(text_count(x, "int64_t nch = (n1 + 65536 - 1) / 65536;") == t[c].chunk64k);
        CHECK(text_count(x, "if (++cn == 65536) {") == (t[c].counter ? 2 : 0));
        /* a table of the chunks' folds (charged kernel scratch) only where
         * their order matters (chunked); else a partial per thread */
        CHECK(text_count(x, "cx->scratch(") == (t[c].chunked ? 1 : 0));
        CHECK(text_count(x, "#pragma omp critical") == (t[c].par1 && !t[c].chunked));
        /* two halves side by side, unless chunks must fold left to right
         * or the sum is checked (lanes) */
        CHECK((text_count(x, "int64_t h = (hi - lo) / 2") > 0) == (t[c].par1 && !t[c].chunked && !t[c].spec));
        if (check_failed != failed_before)
            fprintf(stderr, "case %zu:\n%s\n", c, x);
        cg_buf_free(&b);
        lcu_kernel_free(k);
    }
}

/* A checked float sum whose fast pull still calls what a vectorised loop
 * cannot (exp, a libm function): both branches keep the four lanes, each
 * lane noting its own terms, no omp simd. */
static void test_checked_sum_scalar_pull(const LcuVarType *types0)
{
    LcuVarType types[NV];
    memcpy(types, types0, sizeof types);
    types[0].kind = LV_SEGDES;
    types[1].base = types[2].base = VS_FLOAT;
    char msg[300];
    LcuKernel *k = seg_reduce(VS_FADD, VS_FLOAT, 0);
    LcuExpr *body = k->soacs[0]->pull->body;
    k->soacs[0]->pull->body = lcu_prim1(LP_EXP, VS_FLOAT, body);
    CgBuf b = { 0 };
    CHECK(cg_emit_kernel(&b, CG_C, "vk_r", k, types, NV, msg, sizeof msg) == 0);
    const char *x = b.s ? b.s : "";
    CHECK(text_count(x, "for (; i4 + 4 <= hi; i4 += 4) {") == 2);
    CHECK(text_count(x, "omp simd") == 0);
    for (int l = 0; l < 4; l++) {
        char note[64];
        snprintf(note, sizeof note, "vs_fsum_exact_note(x0, &fa%d, &fe%d);", l, l);
        CHECK(text_count(x, note) == (l == 0 ? 4 : 2));
    }
    CHECK(text_count(x, "vs_fsum_exact_ok((fa0 + fa1) + (fa2 + fa3), (fe0 + fe1) + (fe2 + fe3), flim)") == 1);
    CHECK(text_count(x, "double flim = vs_fsum_exact_lim(nch);") == 1);
    cg_buf_free(&b);
    lcu_kernel_free(k);
}

int main(void)
{
    LcuVarType types[NV];
    for (int v = 0; v < NV; v++) {
        types[v].kind = LV_ARRAY;
        types[v].base = VS_INT;
    }
    char msg[300];
    test_reduce_skeletons(types);
    test_checked_sum_scalar_pull(types);
    test_parts(types);

    /* lcu_kernel_renumber: every variable renamed, using lists recomputed. */
    LcuKernel *k1 = map_reduce(1, 7, 3, 12, 20);
    int to[NV];
    for (int v = 0; v < NV; v++)
        to[v] = -1;
    to[3] = 1;
    to[7] = 0;
    to[12] = 2;
    to[20] = 3;
    LcuKernel *r1 = lcu_kernel_renumber(k1, to);
    CHECK(r1->nsoacs == 2);
    CHECK(r1->soacs[0]->res[0] == 2 && r1->soacs[0]->shape.var == 0);
    CHECK(r1->soacs[1]->res[0] == 3 && r1->soacs[1]->shape.var == 2);
    CHECK(r1->soacs[0]->pull->nusing == 2 && r1->soacs[0]->pull->using[0] == 0 &&
          r1->soacs[0]->pull->using[1] == 1);
    CHECK(r1->nparams == 2 && r1->nrets == 1 && r1->rets[0] == 3);
    CHECK(r1->soacs[0]->dst_sd == -1 && r1->soacs[0]->dflt[0] == -1);
    CHECK(lcu_validate_kernel(r1, types, NV, msg, sizeof msg) == 0);
    lcu_kernel_free(r1);

    /* Same structure over other variables: one distinct kernel. */
    for (int t = 0; t < 2; t++) {
        CgUnit *u = cg_unit_new(t == 0 ? CG_C : CG_CUDA);
        LcuKernel *k2 = map_reduce(2, 4, 9, 5, 6);  /* same shape, other numbers */
        LcuKernel *k3 = map_reduce(3, 9, 4, 5, 6);  /* operands swapped: xa is 9 */
        CgKernelCode c1, c2, c3;
        int rc1 = cg_unit_add(u, k1, types, NV, &c1, msg, sizeof msg);
        int rc2 = cg_unit_add(u, k2, types, NV, &c2, msg, sizeof msg);
        int rc3 = cg_unit_add(u, k3, types, NV, &c3, msg, sizeof msg);
        if (t == 1 && rc1 != 0) {
            /* the CUDA skeletons are not there: nothing more to check */
            printf("test_cg_unit: CUDA target: %s (skipped)\n", msg);
        } else {
            CHECK(rc1 == 0 && rc2 == 0 && rc3 == 0);
            /* Parameters are sorted, so locals 0 and 1 are the smaller and
             * the larger input. k1 adds x7 + x3 over #x7 (locals 1 + 0 over
             * #1), k2 adds x4 + x9 over #x4 (0 + 1 over #0): other code;
             * k3 adds x9 + x4 over #x9: k1's code over other variables. */
            CHECK(c1.unique == 0 && c2.unique == 1 && c3.unique == 0);
            CHECK(cg_unit_distinct(u) == 2);
            CHECK(c1.nlocal == 4 && c1.map[0] == 3 && c1.map[1] == 7 && c1.map[2] == 12 && c1.map[3] == 20);
            CHECK(c2.nlocal == 4 && c2.map[0] == 4 && c2.map[1] == 9 && c2.map[2] == 5 && c2.map[3] == 6);
            CHECK(c3.map[0] == 4 && c3.map[1] == 9);
            size_t len = 0;
            const char *text = cg_unit_text(u, &len);
            CHECK(len == strlen(text));
            CHECK(text_count(text, "vk_u0") > 0 && text_count(text, "vk_u1") > 0 && text_count(text, "vk_u2") == 0);
            CHECK(text_count(text, "vk_canonical") == 0);
            /* A different kernel: a second function. */
            LcuKernel *k4 = map_reduce(4, 1, 2, 3, 4);
            k4->soacs[1]->rops[0] = VS_IMAX;
            CgKernelCode c4;
            CHECK(cg_unit_add(u, k4, types, NV, &c4, msg, sizeof msg) == 0);
            /* The operator is in the text (CUDA: the fused block reduce
             * combines in the kernel) */
            CHECK(c4.unique == 2 && cg_unit_distinct(u) == 3);
            text = cg_unit_text(u, &len);
            CHECK(text_count(text, "vk_u2") > 0);
            CHECK(c4.canon->soacs[1]->rops[0] == VS_IMAX);
            if (t == 1) {
                /* REDUCE: the general path (values for the primitive) and
                 * the fused block reduce with its barriers; no scan pass,
                 * no per-segment entry points */
                CHECK(text_count(text, "vk_u0_s1_vals(") == 1 && text_count(text, "vk_u0_s1_red(") == 1);
                CHECK(text_count(text, "_scan3(") == 0 && text_count(text, "_sred") == 0);
                CHECK(text_count(text, "__syncthreads()") > 0 && text_count(text, "VK_SHARED(int32_t, vk_shi, 256, 1)") > 0);
                CHECK(text_count(text, "a0 = vs_rop_icombine(2, a0, x0);") > 0); /* VS_IMAX */
            }
            cg_kernel_code_free(&c4);
            lcu_kernel_free(k4);
            /* Float inputs change the text. */
            LcuVarType ft[NV];
            memcpy(ft, types, sizeof ft);
            ft[4].base = VS_FLOAT;
            ft[9].base = VS_FLOAT;
            ft[5].base = VS_FLOAT;
            ft[6].base = VS_FLOAT;
            LcuKernel *k5 = map_reduce(5, 4, 9, 5, 6);
            k5->soacs[0]->pull->body->type = VS_FLOAT;
            k5->soacs[0]->pull->body->kids[0]->type = VS_FLOAT;
            k5->soacs[0]->pull->body->kids[1]->type = VS_FLOAT;
            k5->soacs[1]->pull->body->type = VS_FLOAT;
            k5->soacs[1]->rops[0] = VS_FADD;
            CgKernelCode c5;
            CHECK(cg_unit_add(u, k5, ft, NV, &c5, msg, sizeof msg) == 0);
            CHECK(c5.unique == 3 && c5.ltypes[0].base == VS_FLOAT);
            cg_kernel_code_free(&c5);
            /* Float MAX: combined in order only, so no fused block reduce */
            LcuKernel *k6 = map_reduce(6, 4, 9, 5, 6);
            k6->soacs[0]->pull->body->type = VS_FLOAT;
            k6->soacs[0]->pull->body->kids[0]->type = VS_FLOAT;
            k6->soacs[0]->pull->body->kids[1]->type = VS_FLOAT;
            k6->soacs[1]->pull->body->type = VS_FLOAT;
            k6->soacs[1]->rops[0] = VS_FMAX;
            CHECK(!cg_tree_safe(k6->soacs[1]) && cg_tree_safe(k5->soacs[1]));
            CgKernelCode c6;
            CHECK(cg_unit_add(u, k6, ft, NV, &c6, msg, sizeof msg) == 0);
            if (t == 1) {
                text = cg_unit_text(u, &len);
                CHECK(text_count(text, "vk_u3_s1_red(") == 1 && text_count(text, "vk_u4_s1_vals(") == 1);
                CHECK(text_count(text, "vk_u4_s1_red(") == 0);
            }
            cg_kernel_code_free(&c6);
            lcu_kernel_free(k6);
            lcu_kernel_free(k5);
        }
        cg_kernel_code_free(&c1);
        cg_kernel_code_free(&c2);
        cg_kernel_code_free(&c3);
        lcu_kernel_free(k2);
        lcu_kernel_free(k3);
        cg_unit_free(u);
    }
    lcu_kernel_free(k1);
    types[0].kind = LV_SEGDES;
    types[3].kind = LV_SEGDES;
    test_map_segwalk(types);
    test_omit_seen(types);
    test_fast_loads(types);
    return check_report("test_cg_unit");
}

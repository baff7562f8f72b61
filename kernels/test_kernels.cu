// kernels/test_kernels.cu — GPU unit tests of the primitives of
// kernels/kernels.h against host computations written here, on random and
// edge-case inputs. Ends with "N passed, N failed"; exit status 1 on a
// failure. Without a CUDA device it says so and passes with 0 tests.
//
// Float ADD and MUL results are compared bit for bit in float-exact mode
// (vk_set_float_exact) and otherwise within the bound --check allows a
// tree order (runtime/fused/bound_rules.h); MAX, MIN, Int and Bool results
// bit for bit. A failure names the mode.
//
// Built as host C++ with -DVK_TEST_EMULATED (build/tests/unit/
// test_kernels_emul, run by `make test`), the same tests run against the
// emulated device's primitives (runtime/device/emul_prims.c, which the
// cuda executor uses without a GPU): the scans, reductions, ranks and the
// RAND stream; what only libvkernels.so has (PACK's select, the permutes,
// RAND's range step, the pool, the strategies) is left out there.
//
// Built as host C++ with -DVK_TEST_HOST (build/tests/unit/
// test_kernels_host, run by `make test`), the GPU tests run against this
// library's own kernels on the host (tests/kernels_host: every GPU thread
// a fiber), at sizes up to 20011 (the shapes, not the sizes, matter).
//
// --plant-oob: a kernel that writes past the end of its allocation, for
// tests/bench/gpu_checklist.sh to see compute-sanitizer report it.
#ifdef VK_TEST_EMULATED
#define vk_device_count tk_device_count
#define vk_init tk_init
#define vk_device_name tk_device_name
#define vk_last_error tk_last_error
#define vk_alloc tk_alloc
#define vk_free tk_free
#define vk_memcpy_h2d tk_memcpy_h2d
#define vk_memcpy_d2h tk_memcpy_d2h
#define vk_memset0 tk_memset0
#define vk_set_float_exact tk_set_float_exact
#define vk_set_strategy tk_set_strategy
#define vk_reduce tk_reduce
#define vk_scan tk_scan
#define vk_seg_reduce tk_seg_reduce
#define vk_seg_scan tk_seg_scan
#define vk_seg_rank tk_seg_rank
#define vk_rand tk_rand
#define vk_map tk_map
#define vk_expr tk_expr
#define vk_expr_reduce tk_expr_reduce
#define vk_dist tk_dist
#define vk_index tk_index
#define vk_seg_positions tk_seg_positions
#define vk_seg_shape tk_seg_shape
#define vk_scatter tk_scatter
#define vk_scatter_many tk_scatter_many
#define vk_scatter_fill tk_scatter_fill
#define vk_scatter_fill_many tk_scatter_fill_many
#define vk_gather tk_gather
#endif
#include "kernels/kernels.h"
#include "kernels/vk_count.h"
#include "kernels/vk_elem.h" /* the opcodes (VK_OP_*) only: the expected values are computed here */
#include "runtime/fused/bound_rules.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>
#include <algorithm>
#include <type_traits>

static int passed, failed;

#ifdef VK_TEST_EMULATED
extern "C" {
#include "runtime/device/emul_prims.h"
}
// kernels.h's API over the emulated device's primitives: host memory
// stands in for device memory; scans and reductions are strictly left to
// right (float-exact in every mode), so the strategies change nothing.
static VkLib emu;
extern "C" {
int tk_device_count(void) { return 1; }
int tk_init(int) { emu_prims_bind(&emu); return 0; }
const char *tk_device_name(void) { return "the emulated device's primitives (runtime/device/emul_prims.c)"; }
const char *tk_last_error(void) { return emu.last_error ? emu.last_error() : ""; }
void *tk_alloc(size_t bytes) { return malloc(bytes ? bytes : 1); }
void tk_free(void *p) { free(p); }
int tk_memcpy_h2d(void *d, const void *h, size_t bytes) { memcpy(d, h, bytes); return 0; }
int tk_memcpy_d2h(void *h, const void *d, size_t bytes) { memcpy(h, d, bytes); return 0; }
int tk_memset0(void *d, size_t bytes) { memset(d, 0, bytes); return 0; }
void tk_set_float_exact(int) {}
void tk_set_strategy(VkStrategy) {}
int tk_reduce(VsRop r, const void *in, int64_t n, void *out) { return emu.reduce(r, in, n, out); }
int tk_scan(VsRop r, const void *in, int64_t n, void *out) { return emu.scan(r, in, n, out); }
int tk_seg_reduce(VsRop r, const void *in, const int32_t *len, const int64_t *off, int64_t m, int64_t n,
                  int64_t longest, void *out)
{
    return emu.seg_reduce(r, in, len, off, m, n, longest, out);
}
int tk_seg_scan(VsRop r, const void *in, const int32_t *len, const int64_t *off, int64_t m, int64_t n,
                int64_t longest, void *out)
{
    return emu.seg_scan(r, in, len, off, m, n, longest, out);
}
int tk_seg_rank(int down, VsElem t, const void *keys, const int32_t *len, const int64_t *off, int64_t m, int64_t n,
                int32_t *rank)
{
    return emu.seg_rank(down, t, keys, len, off, m, n, rank);
}
int tk_rand(const uint32_t ring[31], uint64_t k, int64_t n, int32_t *out) { return emu.rand(ring, k, n, out); }
int tk_map(int op, int ty, int fmask, int out_f, const VkArg *args, int nargs, int64_t n, void *out,
           unsigned long long *fault)
{
    return emu.map(op, ty, fmask, out_f, args, nargs, n, out, fault);
}
int tk_expr(const VkExpr *e, int64_t n) { return emu.expr(e, n); }
int tk_expr_reduce(const VkExpr *e, int node, VsRop rop, int64_t n, void *out)
{
    return emu.expr_reduce(e, node, rop, n, out);
}
int tk_dist(size_t esize, const VkArg *val, const int64_t *off, int64_t m, int64_t n, void *out)
{
    return emu.dist(esize, val, off, m, n, out);
}
int tk_index(const VkArg *start, const VkArg *stride, const int64_t *off, int64_t m, int64_t n, int32_t *out)
{
    return emu.index(start, stride, off, m, n, out);
}
int tk_seg_shape(const int32_t *len, int64_t m, int64_t *off, VkShape *rec) { return emu.seg_shape(len, m, off, rec); }
int tk_scatter(size_t es, const void *in, int64_t ns, const int32_t *idx, const int32_t *fl, const int32_t *sl,
               const int64_t *so, int64_t sm, const int32_t *dl, const int64_t *dof, int64_t dm, void *out, int64_t nd,
               int mode, VkPermFault *rec)
{
    return emu.scatter(es, in, ns, idx, fl, sl, so, sm, dl, dof, dm, out, nd, mode, rec);
}
int tk_scatter_many(int nv, const size_t *es, const void *const *in, void *const *out, int64_t ns, const int32_t *idx,
                    const int32_t *sl, const int64_t *so, int64_t sm, const int32_t *dl, const int64_t *dof, int64_t dm,
                    int64_t nd, int mode, VkPermFault *rec)
{
    return emu.scatter_many(nv, es, in, out, ns, idx, sl, so, sm, dl, dof, dm, nd, mode, rec);
}
int tk_scatter_fill_many(int nv, const size_t *es, const VkArg *fill, const void *const *in, void *const *out,
                         int64_t ns, const int32_t *idx, const int32_t *sl, const int64_t *so, int64_t sm,
                         const int32_t *dl, const int64_t *dof, int64_t dm, int64_t nd, VkPermFault *rec)
{
    return emu.scatter_fill_many(nv, es, fill, in, out, ns, idx, sl, so, sm, dl, dof, dm, nd, rec);
}
int tk_scatter_fill(size_t es, const VkArg *fill, const void *in, int64_t ns, const int32_t *idx, const int32_t *fl,
                    const int32_t *sl, const int64_t *so, int64_t sm, const int32_t *dl, const int64_t *dof, int64_t dm,
                    void *out, int64_t nd, VkPermFault *rec)
{
    return emu.scatter_fill(es, fill, in, ns, idx, fl, sl, so, sm, dl, dof, dm, out, nd, rec);
}
int tk_gather(size_t es, const void *in, int64_t ns, const int32_t *idx, const int32_t *fl, const int32_t *sl,
              const int64_t *so, int64_t sm, const int32_t *dl, const int64_t *dof, int64_t dm, void *out, int64_t nd,
              VkPermFault *rec)
{
    return emu.gather(es, in, ns, idx, fl, sl, so, sm, dl, dof, dm, out, nd, rec);
}
int tk_seg_positions(const VkArg *idx, const int32_t *len, const int64_t *off, int64_t m, int64_t *pos,
                     unsigned long long *fault)
{
    return emu.seg_positions(idx, len, off, m, pos, fault);
}
}
#endif

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (cond) {                                                             \
            passed++;                                                           \
        } else {                                                                \
            failed++;                                                           \
            fprintf(stderr, "FAIL: %s:%d: %s: ", __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
        }                                                                       \
    } while (0)

// ---- a deterministic source of test data -------------------------------------

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint32_t rnd32()
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

// ---- device buffers ------------------------------------------------------------

template <class T> static T *up(const std::vector<T> &h)
{
    T *d = (T *)vk_alloc(h.size() * sizeof(T));
    if (!h.empty())
        vk_memcpy_h2d(d, h.data(), h.size() * sizeof(T));
    return d;
}

template <class T> static std::vector<T> down(const T *d, size_t n)
{
    std::vector<T> h(n);
    if (n)
        vk_memcpy_d2h(h.data(), d, n * sizeof(T));
    return h;
}

// ---- host references -------------------------------------------------------------

static const double FLOAT_BIG = (double)1.0e36f;

// The expected values are written out here, apart from vcode/semantics.h.
template <class T> static T identity(VsRop op)
{
    if constexpr (std::is_floating_point<T>::value) {
        switch (op) {
        case VS_FMUL: return (T)1;
        case VS_FMAX: return (T)-FLOAT_BIG;
        case VS_FMIN: return (T)FLOAT_BIG;
        default: return (T)0;
        }
    } else {
        switch (op) {
        case VS_IMUL: return (T)1;
        case VS_IMAX: return (T)INT32_MIN;
        case VS_IMIN: return (T)INT32_MAX;
        case VS_IAND: return (T)-1;
        case VS_BAND: return (T)1;
        default: return (T)0;
        }
    }
}

static int32_t combine_i(VsRop op, int32_t a, int32_t v)
{
    switch (op) {
    case VS_BAND: return a && v;
    case VS_BOR: return a || v;
    case VS_BXOR: return (a != 0) != (v != 0);
    case VS_IADD: return (int32_t)((uint32_t)a + (uint32_t)v);
    case VS_IMUL: return (int32_t)((uint32_t)a * (uint32_t)v);
    case VS_IMAX: return a > v ? a : v;
    case VS_IMIN: return a < v ? a : v;
    case VS_IAND: return a & v;
    case VS_IOR: return a | v;
    default: return a ^ v;
    }
}

static double combine_f(VsRop op, double a, double v)
{
    switch (op) {
    case VS_FADD: return a + v;
    case VS_FMUL: return a * v;
    case VS_FMAX: return a > v ? a : v;
    default: return a < v ? a : v;
    }
}

static bool same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

// Float results of OP over K terms (their sum of magnitudes SUM_ABS, their
// product of magnitudes PROD_ABS) against the left-to-right value WANT.
// Bit for bit where kernels/kernels.h promises it: MAX and MIN always,
// ADD and MUL in float-exact mode (EXACT). Otherwise (a tree order) within
// the bound --check allows (rule 1 of runtime/fused/check_bound.h; a
// product whose partial products may leave [2^-1000, 2^1000] is not
// bounded). *BOUND gets the allowed difference (0: the same bits).
static bool float_ok(VsRop op, bool exact, double got, double want, int64_t k, double sum_abs, double prod_abs,
                     double *bound)
{
    *bound = 0.0;
    if (op == VS_FMAX || op == VS_FMIN || exact)
        return same_bits(got, want);
    if (std::isnan(got) || std::isnan(want))
        return std::isnan(got) && std::isnan(want);
    if (op == VS_FADD)
        *bound = cb_sum_bound(k, sum_abs, 0.0);
    else if (prod_abs < 0x1p-1000 || prod_abs > 0x1p1000)
        *bound = INFINITY;
    else
        *bound = cb_prod_bound(k, prod_abs, 0.0);
    return got == want || std::fabs(got - want) <= *bound;
}

static const char *float_mode(VsRop op, bool exact)
{
    if (op == VS_FMAX || op == VS_FMIN)
        return "bit-identical by contract";
    return exact ? "float-exact mode: bit-identical by contract" : "tree order: within the --check bound";
}

static const char *op_name(VsRop op)
{
    static const char *n[] = { "Int ADD", "Int MUL", "Int MAX", "Int MIN", "Int AND", "Int OR", "Int XOR",
                               "Float ADD", "Float MUL", "Float MAX", "Float MIN", "Bool AND", "Bool OR", "Bool XOR" };
    return (unsigned)op < sizeof n / sizeof n[0] ? n[op] : "?";
}

// Segments: lengths (some empty) summing to n.
static std::vector<int32_t> segments(int64_t n, int64_t avg)
{
    std::vector<int32_t> L;
    int64_t left = n;
    while (left > 0) {
        int64_t l = (int64_t)(rnd32() % (uint32_t)(2 * avg + 1));
        if (rnd32() % 8 == 0)
            l = 0;
        if (l > left)
            l = left;
        L.push_back((int32_t)l);
        left -= l;
    }
    return L;
}

static std::vector<int64_t> offsets(const std::vector<int32_t> &L)
{
    std::vector<int64_t> o(L.size());
    int64_t acc = 0;
    for (size_t k = 0; k < L.size(); k++) {
        o[k] = acc;
        acc += L[k];
    }
    return o;
}

// ---- scans and reductions --------------------------------------------------------

static void test_int_ops(VsElem ty, int64_t n, const std::vector<int32_t> &L)
{
    static const VsRop ints[] = { VS_IADD, VS_IMUL, VS_IMAX, VS_IMIN, VS_IAND, VS_IOR, VS_IXOR };
    static const VsRop bools[] = { VS_BAND, VS_BOR, VS_BXOR };
    std::vector<VsRop> all = ty == VS_BOOL ? std::vector<VsRop>(bools, bools + 3) : std::vector<VsRop>(ints, ints + 7);
    std::vector<int32_t> x(n);
    for (auto &v : x)
        v = ty == VS_BOOL ? (int32_t)(rnd32() % 2) : (int32_t)(rnd32() % 2001) - 1000;
    std::vector<int64_t> off = offsets(L);
    int64_t m = (int64_t)L.size();
    int32_t *xd = up(x), *ld = up(L);
    int64_t *od = up(off);
    int32_t *out = (int32_t *)vk_alloc((size_t)(n + 1) * 4), *red = (int32_t *)vk_alloc((size_t)(m + 1) * 4);
    for (VsRop op : all) {
        // unsegmented
        int32_t acc = identity<int32_t>(op);
        std::vector<int32_t> scan(n);
        for (int64_t i = 0; i < n; i++) {
            scan[i] = acc;
            acc = combine_i(op, acc, x[i]);
        }
        CHECK(vk_reduce(op, xd, n, red) == 0, "%s", vk_last_error());
        CHECK(down(red, 1)[0] == acc, "reduce %s n=%lld", op_name(op), (long long)n);
        CHECK(vk_scan(op, xd, n, out) == 0, "%s", vk_last_error());
        CHECK(down(out, n) == scan, "scan %s n=%lld", op_name(op), (long long)n);
        // segmented
        std::vector<int32_t> sred(m), sscan(n);
        for (int64_t k = 0; k < m; k++) {
            int32_t a = identity<int32_t>(op);
            for (int64_t i = off[k]; i < off[k] + L[k]; i++) {
                sscan[i] = a;
                a = combine_i(op, a, x[i]);
            }
            sred[k] = a;
        }
        int64_t lg = 0;
        for (int64_t k = 0; k < m; k++)
            lg = L[k] > lg ? L[k] : lg;
        for (int st = VK_STRAT_AUTO; st <= VK_STRAT_CHUNK; st++) {
            vk_set_strategy((VkStrategy)st);
            CHECK(vk_seg_reduce(op, xd, ld, od, m, n, lg, red) == 0, "%s", vk_last_error());
            CHECK(down(red, m) == sred, "seg_reduce %s m=%lld strategy %d", op_name(op), (long long)m, st);
            CHECK(vk_seg_scan(op, xd, ld, od, m, n, st == VK_STRAT_AUTO ? -1 : lg, out) == 0, "%s",
                  vk_last_error());
            CHECK(down(out, n) == sscan, "seg_scan %s m=%lld strategy %d", op_name(op), (long long)m, st);
        }
        vk_set_strategy(VK_STRAT_AUTO);
    }
    vk_free(xd);
    vk_free(ld);
    vk_free(od);
    vk_free(out);
    vk_free(red);
}

// The left-to-right reference of a float scan or reduction: per output
// (each position for a scan, each segment for a reduction) the value, and
// the terms it folds (their number, sum and product of magnitudes).
struct FRef {
    std::vector<double> val, sum_abs, prod_abs;
    std::vector<int64_t> k;
    void add(double v, int64_t kk, double sa, double pa)
    {
        val.push_back(v);
        k.push_back(kk);
        sum_abs.push_back(sa);
        prod_abs.push_back(pa);
    }
};

static FRef float_ref(VsRop op, const std::vector<double> &x, const std::vector<int64_t> &off,
                      const std::vector<int32_t> &L, bool scan)
{
    FRef r;
    for (size_t s = 0; s < L.size(); s++) {
        double a = identity<double>(op), sa = 0.0, pa = 1.0;
        int64_t k = 0;
        for (int64_t i = off[s]; i < off[s] + L[s]; i++) {
            if (scan)
                r.add(a, k, sa, pa);
            a = combine_f(op, a, x[i]);
            sa += std::fabs(x[i]);
            pa *= std::fabs(x[i]);
            k++;
        }
        if (!scan)
            r.add(a, k, sa, pa);
    }
    return r;
}

// The first output of G that the reference R does not allow, or -1; a
// failure message names the operation, the mode and the numbers.
static int64_t float_first_bad(VsRop op, bool exact, const std::vector<double> &g, const FRef &r, char *why, size_t len)
{
    for (size_t i = 0; i < g.size() && i < r.val.size(); i++) {
        double b;
        if (!float_ok(op, exact, g[i], r.val[i], r.k[i], r.sum_abs[i], r.prod_abs[i], &b)) {
            snprintf(why, len, "at %zu (%lld terms): %.17g, the left-to-right value %.17g, difference %.3g, allowed %.3g (%s)",
                     i, (long long)r.k[i], g[i], r.val[i], std::fabs(g[i] - r.val[i]), b, float_mode(op, exact));
            return (int64_t)i;
        }
    }
    if (g.size() != r.val.size()) {
        snprintf(why, len, "%zu results, %zu wanted", g.size(), r.val.size());
        return 0;
    }
    return -1;
}

static void test_float_ops(int64_t n, const std::vector<int32_t> &L, int exact)
{
    static const VsRop all[] = { VS_FADD, VS_FMUL, VS_FMAX, VS_FMIN };
    vk_set_float_exact(exact);
    std::vector<double> x(n);
    for (auto &v : x)
        v = ((double)(rnd32() % 2000001) - 1000000.0) / 999983.0;
    if (n > 3) {
        x[1] = -0.0;
        x[2] = 0.0;
    }
    std::vector<int64_t> off = offsets(L);
    int64_t m = (int64_t)L.size();
    double *xd = up(x), *out = (double *)vk_alloc((size_t)(n + 1) * 8), *red = (double *)vk_alloc((size_t)(m + 1) * 8);
    int32_t *ld = up(L);
    int64_t *od = up(off);
    const std::vector<int32_t> whole(1, (int32_t)n);
    const std::vector<int64_t> zero(1, 0);
    const char *mode = exact ? "float-exact mode" : "tree order";
    char why[400];
    for (VsRop op : all) {
        // unsegmented: one segment of all N
        CHECK(vk_reduce(op, xd, n, red) == 0, "%s", vk_last_error());
        FRef r = float_ref(op, x, zero, whole, false);
        CHECK(float_first_bad(op, exact, down(red, 1), r, why, sizeof why) < 0, "float reduce %s n=%lld, %s: %s",
              op_name(op), (long long)n, mode, why);
        CHECK(vk_scan(op, xd, n, out) == 0, "%s", vk_last_error());
        r = float_ref(op, x, zero, whole, true);
        CHECK(float_first_bad(op, exact, down(out, n), r, why, sizeof why) < 0, "float scan %s n=%lld, %s: %s",
              op_name(op), (long long)n, mode, why);
        // segmented
        CHECK(vk_seg_reduce(op, xd, ld, od, m, n, -1, red) == 0, "%s", vk_last_error());
        r = float_ref(op, x, off, L, false);
        CHECK(float_first_bad(op, exact, down(red, m), r, why, sizeof why) < 0,
              "float seg_reduce %s n=%lld m=%lld, %s: %s", op_name(op), (long long)n, (long long)m, mode, why);
        CHECK(vk_seg_scan(op, xd, ld, od, m, n, -1, out) == 0, "%s", vk_last_error());
        r = float_ref(op, x, off, L, true);
        CHECK(float_first_bad(op, exact, down(out, n), r, why, sizeof why) < 0,
              "float seg_scan %s n=%lld m=%lld, %s: %s", op_name(op), (long long)n, (long long)m, mode, why);
    }
    vk_set_float_exact(0);
    vk_free(xd);
    vk_free(out);
    vk_free(red);
    vk_free(ld);
    vk_free(od);
}

// ---- rank ---------------------------------------------------------------------------

// The order key of runtime/core/rank.c: -0.0 before +0.0, NaNs by bit pattern at the ends.
static uint64_t fkey(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return (u >> 63) ? ~u : (u | 0x8000000000000000ULL);
}

static void test_rank(int down_, VsElem ty, int64_t n, const std::vector<int32_t> &L)
{
    std::vector<int32_t> xi(n);
    std::vector<double> xf(n);
    for (int64_t i = 0; i < n; i++) {
        xi[i] = (int32_t)(rnd32() % 50) - 25;  // many ties
        xf[i] = (double)xi[i] / 4.0;
    }
    if (n > 4) {
        xf[0] = -0.0;
        xf[1] = 0.0;
        xf[2] = std::nan("");
        xf[3] = -std::nan("");
    }
    std::vector<int64_t> off = offsets(L);
    int64_t m = (int64_t)L.size();
    std::vector<int32_t> want(n);
    for (int64_t k = 0; k < m; k++) {
        std::vector<int64_t> idx;
        for (int64_t i = off[k]; i < off[k] + L[k]; i++)
            idx.push_back(i);
        std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
            if (ty == VS_INT)
                return down_ ? xi[a] > xi[b] : xi[a] < xi[b];
            return down_ ? fkey(xf[a]) > fkey(xf[b]) : fkey(xf[a]) < fkey(xf[b]);
        });
        for (size_t p = 0; p < idx.size(); p++)
            want[idx[p]] = (int32_t)p;
    }
    void *kd = ty == VS_INT ? (void *)up(xi) : (void *)up(xf);
    int32_t *ld = up(L), *rd = (int32_t *)vk_alloc((size_t)(n + 1) * 4);
    int64_t *od = up(off);
    CHECK(vk_seg_rank(down_, ty, kd, ld, od, m, n, rd) == 0, "%s", vk_last_error());
    CHECK(down(rd, n) == want, "rank %s %s n=%lld m=%lld", down_ ? "down" : "up", ty == VS_INT ? "int" : "float",
          (long long)n, (long long)m);
    vk_free(kd);
    vk_free(ld);
    vk_free(rd);
    vk_free(od);
}

// ---- PACK and the permutes ---------------------------------------------------------------

#ifndef VK_TEST_EMULATED
static void test_select(int64_t n)
{
    std::vector<double> x(n);
    std::vector<int32_t> f(n);
    std::vector<double> want;
    for (int64_t i = 0; i < n; i++) {
        x[i] = (double)i * 0.5;
        f[i] = rnd32() % 3 == 0;
        if (f[i])
            want.push_back(x[i]);
    }
    double *xd = up(x), *od = (double *)vk_alloc((size_t)(n + 1) * 8);
    int32_t *fd = up(f);
    int64_t count = -1;
    CHECK(vk_select_flagged(VS_FLOAT, xd, fd, n, od, &count) == 0, "%s", vk_last_error());
    CHECK(count == (int64_t)want.size(), "select count %lld vs %zu", (long long)count, want.size());
    if (count == (int64_t)want.size())
        CHECK(down(od, (size_t)count) == want, "select n=%lld", (long long)n);
    vk_free(xd);
    vk_free(od);
    vk_free(fd);
}

static void test_permutes(int64_t n)
{
    std::vector<int32_t> perm(n), x(n);
    for (int64_t i = 0; i < n; i++) {
        perm[i] = (int32_t)i;
        x[i] = (int32_t)(i * 7 + 1);
    }
    for (int64_t i = n - 1; i > 0; i--)
        std::swap(perm[i], perm[rnd32() % (uint32_t)(i + 1)]);
    std::vector<int32_t> scat(n), gath(n);
    for (int64_t i = 0; i < n; i++) {
        scat[perm[i]] = x[i];
        gath[i] = x[perm[i]];
    }
    int32_t *xd = up(x), *pd = up(perm), *od = (int32_t *)vk_alloc((size_t)(n + 1) * 4);
    vk_memset0(od, (size_t)n * 4);
    CHECK(vk_scatter(4, xd, n, pd, NULL, NULL, NULL, 0, NULL, NULL, 0, od, n, 1, NULL) == 0, "%s", vk_last_error());
    CHECK(down(od, n) == scat, "scatter n=%lld", (long long)n);
    CHECK(vk_gather(4, xd, n, pd, NULL, NULL, NULL, 0, NULL, NULL, 0, od, n, NULL) == 0, "%s", vk_last_error());
    CHECK(down(od, n) == gath, "gather n=%lld", (long long)n);
    if (n > 0) {
        std::vector<int32_t> bad = perm;
        bad[n / 2] = (int32_t)n;  // out of range
        int32_t *bd = up(bad);
        CHECK(vk_scatter(4, xd, n, bd, NULL, NULL, NULL, 0, NULL, NULL, 0, od, n, 1, NULL) != 0,
              "scatter accepted an index out of range");
        // the same check left on the device, in a record read afterwards
        VkPermFault none = { ~0ull, 0, 0, 0 }, got;
        VkPermFault *rd = (VkPermFault *)vk_alloc(sizeof(VkPermFault));
        for (int g = 0; g < 2; g++) {
            vk_memcpy_h2d(rd, &none, sizeof none);
            int rc = g ? vk_gather(4, xd, n, bd, NULL, NULL, NULL, 0, NULL, NULL, 0, od, n, rd)
                       : vk_scatter(4, xd, n, bd, NULL, NULL, NULL, 0, NULL, NULL, 0, od, n, 1, rd);
            vk_memcpy_d2h(&got, rd, sizeof got);
            CHECK(rc == 0 && got.err == ((unsigned long long)(n / 2) << 1) && got.j == n && got.len == n,
                  "%s with a record, n=%lld: rc %d, err %llx, j %lld, len %lld", g ? "gather" : "scatter",
                  (long long)n, rc, got.err, got.j, got.len);
            // the record is written whatever it held: the bad call's is there
            rc = g ? vk_gather(4, xd, n, pd, NULL, NULL, NULL, 0, NULL, NULL, 0, od, n, rd)
                   : vk_scatter(4, xd, n, pd, NULL, NULL, NULL, 0, NULL, NULL, 0, od, n, 1, rd);
            vk_memcpy_d2h(&got, rd, sizeof got);
            CHECK(rc == 0 && got.err == ~0ull, "%s with a record, every index good, n=%lld: err %llx",
                  g ? "gather" : "scatter", (long long)n, got.err);
        }
        vk_free(rd);
        vk_free(bd);
    }
    vk_free(xd);
    vk_free(pd);
    vk_free(od);
}

#endif

// ---- RAND ----------------------------------------------------------------------------

// glibc random() TYPE_3: vcode/semantics.h's, as the reference draws it.
static void host_seed(uint32_t ring[31], uint64_t *k, uint32_t seed) { vs_random_seed(ring, k, seed); }
static int32_t host_next(uint32_t ring[31], uint64_t *k) { return vs_random_next(ring, k); }

static void test_rand()
{
    static const int64_t offs[] = { 0, 1, 31, 34, 1000007 };
    static const int64_t lens[] = { 1, 5, 1000, 100003 };
    uint32_t ring0[31];
    uint64_t k0;
    host_seed(ring0, &k0, 7);
    for (int64_t off : offs) {
        uint32_t ring[31];
        uint64_t k = k0;
        memcpy(ring, ring0, sizeof ring);
        for (int64_t i = 0; i < off; i++)
            host_next(ring, &k);
        for (int64_t n : lens) {
            uint32_t r2[31];
            uint64_t k2 = k;
            memcpy(r2, ring, sizeof r2);
            std::vector<int32_t> want(n);
            for (int64_t i = 0; i < n; i++)
                want[i] = host_next(r2, &k2);
            int32_t *od = (int32_t *)vk_alloc((size_t)n * 4);
            CHECK(vk_rand(ring, k, n, od) == 0, "%s", vk_last_error());
            CHECK(down(od, n) == want, "rand offset %lld n=%lld", (long long)off, (long long)n);
            vk_free(od);
        }
    }
}

#ifndef VK_TEST_EMULATED
static void test_pool()
{
    void *a = vk_alloc(1000);
    vk_free(a);
    void *b = vk_alloc(1000);
    CHECK(a == b, "the pool did not reuse a freed block");
    vk_free(b);
    void *z = vk_alloc(0);
    CHECK(z != NULL, "vk_alloc(0)");
    vk_free(z);
    size_t used = 1, cached = 0;
    vk_pool_stats(&used, &cached);
    CHECK(used == 0 && cached > 0, "pool stats: %zu in use, %zu cached", used, cached);
    vk_pool_trim();
    vk_pool_stats(&used, &cached);
    CHECK(cached == 0, "trim left %zu cached", cached);
}

/* vk_memcpy_d2h_many: each piece where it belongs, one of no bytes among
 * them, after an upload still in flight (staged), and again larger. */
static void test_d2h_many()
{
    for (int scale = 1; scale <= 1000; scale *= 1000) {
        std::vector<int32_t> a(3 * scale), b(5 * scale + 1);
        std::vector<double> c(7 * scale);
        for (size_t i = 0; i < a.size(); i++)
            a[i] = (int32_t)rnd32();
        for (size_t i = 0; i < b.size(); i++)
            b[i] = (int32_t)rnd32();
        for (size_t i = 0; i < c.size(); i++)
            c[i] = (double)rnd32() / 7.0;
        int32_t *ad = up(a), *bd = (int32_t *)vk_alloc(b.size() * 4);
        double *cd = up(c);
        vk_memcpy_h2d_staged(bd, b.data(), b.size() * 4);
        std::vector<int32_t> a2(a.size()), b2(b.size());
        std::vector<double> c2(c.size());
        int32_t none = 7;
        void *dst[4] = { a2.data(), &none, b2.data(), c2.data() };
        const void *src[4] = { ad, bd, bd, cd };
        size_t bytes[4] = { a.size() * 4, 0, b.size() * 4, c.size() * 8 };
        CHECK(vk_memcpy_d2h_many(4, dst, src, bytes) == 0, "d2h_many: %s", vk_last_error());
        CHECK(a2 == a && b2 == b && c2 == c && none == 7, "d2h_many at scale %d: a piece went astray", scale);
        vk_free(ad);
        vk_free(bd);
        vk_free(cd);
    }
}

/* The milliseconds of RUN (a launch), the median of 9 after a warm-up,
 * timed with events. */
template <class F> static double median_ms(F run)
{
    cudaEvent_t t0, t1;
    cudaEventCreate(&t0);
    cudaEventCreate(&t1);
    std::vector<double> ms;
    for (int r = 0; r < 10; r++) {
        cudaEventRecord(t0, 0);
        run();
        cudaEventRecord(t1, 0);
        cudaEventSynchronize(t1);
        float m = 0;
        cudaEventElapsedTime(&m, t0, t1);
        if (r > 0)
            ms.push_back((double)m);
    }
    std::sort(ms.begin(), ms.end());
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    return ms[ms.size() / 2];
}

/* The device's copy bandwidth, the yardstick of the bandwidth targets:
 * device-to-device copies of 1 GiB, bytes read plus written, the median of
 * 9 after a warm-up (median_ms). */
static int bandwidth()
{
    const size_t bytes = (size_t)1 << 30;
    void *a = vk_alloc(bytes), *b = vk_alloc(bytes);
    if (!a || !b || vk_memset0(a, bytes) != 0) {
        printf("bandwidth: %s\n", vk_last_error());
        return 1;
    }
    double ms = median_ms([&] { vk_memcpy_d2d(b, a, bytes); });
    printf("device: %s\ncopy bandwidth: %.1f GB/s (device to device, bytes read + written, median of 9)\n",
           vk_device_name(), 2.0 * (double)bytes / (ms * 1e-3) / 1e9);
    vk_free(a);
    vk_free(b);
    return 0;
}
#endif

#ifndef VK_TEST_EMULATED
// A kernel that writes one element past the end of a 64-element
// allocation (cudaMalloc'd, not from the pool, whose blocks are rounded up):
// compute-sanitizer's memcheck must report it; without it the write may go
// unseen.
__global__ static void planted_oob_write(int32_t *p, int n) { p[n + (int)threadIdx.x] = 1; }

static int plant_oob()
{
    int32_t *p = NULL;
    if (cudaMalloc((void **)&p, 64 * sizeof(int32_t)) != cudaSuccess) {
        printf("plant-oob: cudaMalloc failed\n");
        return 1;
    }
    planted_oob_write<<<1, 1>>>(p, 64);
    cudaError_t e = cudaDeviceSynchronize();
    printf("plant-oob: wrote element 64 of a 64-element allocation (%s)\n", cudaGetErrorString(e));
    cudaFree(p);
    return 0;
}
#endif

// ---- the device tier's instructions: vk_map, vk_dist, vk_index -------------------
// Expected values from plain C++ here, written apart from kernels/vk_elem.h.

static VkArg vec_arg(const void *d)
{
    VkArg a;
    memset(&a, 0, sizeof a);
    a.d = d;
    return a;
}

static int32_t wrap(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }

/* One Int (or Bool) instruction over X, Y (Y unused by the unary ones). */
static int64_t int_expect(int op, VsElem ty, int32_t x, int32_t y)
{
    switch (op) {
    case VK_OP_ADD: return wrap((int64_t)x + y);
    case VK_OP_SUB: return wrap((int64_t)x - y);
    case VK_OP_MUL: return wrap((int64_t)x * y);
    case VK_OP_DIV: return x / y;
    case VK_OP_MOD: return x % y;
    case VK_OP_LT: return x < y;
    case VK_OP_LE: return x <= y;
    case VK_OP_GT: return x > y;
    case VK_OP_GE: return x >= y;
    case VK_OP_EQ: return x == y;
    case VK_OP_NE: return x != y;
    case VK_OP_LSHIFT: return wrap((int64_t)((uint32_t)x << (y & 31)));
    case VK_OP_RSHIFT: return x >> (y & 31);
    case VK_OP_AND: return ty == VS_BOOL ? (x && y) : (x & y);
    case VK_OP_OR: return ty == VS_BOOL ? (x || y) : (x | y);
    case VK_OP_XOR: return x ^ y;
    case VK_OP_NOT: return ty == VS_BOOL ? !x : ~x;
    case VK_OP_I_TO_B: return x != 0;
    case VK_OP_B_TO_I: return x;
    default: return -999;
    }
}

static void test_map_int(int64_t n)
{
    std::vector<int32_t> x(n), y(n), bx(n), by(n);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (int32_t)rnd32();
        y[i] = (int32_t)(rnd32() % 2 ? rnd32() : rnd32() % 64);
        if (y[i] == 0 || (y[i] == -1 && x[i] == INT32_MIN))
            y[i] = 3;
        bx[i] = rnd32() % 2;
        by[i] = rnd32() % 2;
    }
    int32_t *xd = up(x), *yd = up(y), *bxd = up(bx), *byd = up(by);
    int32_t *od = (int32_t *)vk_alloc((size_t)(n ? n : 1) * 4);
    static const int ops[] = { VK_OP_ADD, VK_OP_SUB, VK_OP_MUL, VK_OP_DIV, VK_OP_MOD, VK_OP_LT, VK_OP_LE,
                               VK_OP_GT, VK_OP_GE, VK_OP_EQ, VK_OP_NE, VK_OP_LSHIFT, VK_OP_RSHIFT, VK_OP_AND,
                               VK_OP_OR, VK_OP_XOR, VK_OP_NOT, VK_OP_I_TO_B };
    for (int op : ops)
        for (int scalar = 0; scalar < 2; scalar++) {
            VkArg a[2] = { vec_arg(xd), vec_arg(yd) };
            int32_t s = 5;
            if (scalar) { /* the second argument one value (a lazy fill) */
                a[1] = vec_arg(NULL);
                a[1].i = s;
            }
            int unary = op == VK_OP_NOT || op == VK_OP_I_TO_B;
            int rc = vk_map(op, VS_INT, 0, 0, a, unary ? 1 : 2, n, od, NULL);
            std::vector<int32_t> o = down(od, (size_t)n);
            int64_t bad = -1;
            for (int64_t i = 0; i < n && bad < 0; i++)
                if (o[i] != int_expect(op, VS_INT, x[i], scalar ? s : y[i]))
                    bad = i;
            CHECK(rc == 0 && bad < 0, "vk_map Int op %d, n %lld, scalar %d: element %lld", op, (long long)n, scalar,
                  (long long)bad);
        }
    static const int bops[] = { VK_OP_AND, VK_OP_OR, VK_OP_XOR, VK_OP_NOT, VK_OP_B_TO_I };
    for (int op : bops) {
        VkArg a[2] = { vec_arg(bxd), vec_arg(byd) };
        int rc = vk_map(op, VS_BOOL, 0, 0, a, op == VK_OP_NOT || op == VK_OP_B_TO_I ? 1 : 2, n, od, NULL);
        std::vector<int32_t> o = down(od, (size_t)n);
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (o[i] != int_expect(op, VS_BOOL, bx[i], by[i]))
                bad = i;
        CHECK(rc == 0 && bad < 0, "vk_map Bool op %d, n %lld: element %lld", op, (long long)n, (long long)bad);
    }
    /* SELECT: flags, then two Int vectors */
    {
        VkArg a[3] = { vec_arg(bxd), vec_arg(xd), vec_arg(yd) };
        int rc = vk_map(VK_OP_SELECT, VS_INT, 0, 0, a, 3, n, od, NULL);
        std::vector<int32_t> o = down(od, (size_t)n);
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (o[i] != (bx[i] ? x[i] : y[i]))
                bad = i;
        CHECK(rc == 0 && bad < 0, "vk_map SELECT Int, n %lld: element %lld", (long long)n, (long long)bad);
    }
    /* faults: the first failing element and its code, the others written */
    if (n >= 10) {
        std::vector<int32_t> z = y;
        z[n / 2] = 0;
        z[n - 1] = 0;
        z[3] = -1;
        std::vector<int32_t> w = x;
        w[3] = INT32_MIN;
        int32_t *zd = up(z), *wd = up(w);
        unsigned long long none = ~0ull, *fd = (unsigned long long *)vk_alloc(8);
        for (int op : { VK_OP_DIV, VK_OP_MOD }) {
            for (int ovf = 0; ovf < 2; ovf++) {
                vk_memcpy_h2d(fd, &none, 8);
                VkArg a[2] = { vec_arg(ovf ? wd : xd), vec_arg(zd) };
                int rc = vk_map(op, VS_INT, 0, 0, a, 2, n, od, fd);
                unsigned long long f = down(fd, 1)[0];
                int code = ovf ? (op == VK_OP_DIV ? VS_DIVOVF : VS_MODOVF) : (op == VK_OP_DIV ? VS_DIV0 : VS_MOD0);
                int64_t at = ovf ? 3 : n / 2;
                CHECK(rc == 0 && f == (((unsigned long long)at << 3) | (unsigned)code),
                      "vk_map op %d fault record %llx, want element %lld code %d", op, f, (long long)at, code);
            }
        }
        vk_free(zd);
        vk_free(wd);
        vk_free(fd);
    }
    vk_free(xd);
    vk_free(yd);
    vk_free(bxd);
    vk_free(byd);
    vk_free(od);
}

static void test_map_float(int64_t n)
{
    std::vector<double> x(n), y(n);
    std::vector<int32_t> fl(n), ix(n);
    for (int64_t i = 0; i < n; i++) {
        x[i] = ((double)(int32_t)rnd32()) / 65536.0;
        y[i] = ((double)(int32_t)rnd32()) / 1048576.0 + 0.5;
        fl[i] = rnd32() % 2;
        ix[i] = (int32_t)rnd32();
    }
    if (n > 2) {
        y[1] = x[1]; /* equal, for the comparisons */
        x[2] = 2.5;  /* ROUND's half */
    }
    double *xd = up(x), *yd = up(y);
    int32_t *fld = up(fl), *ixd = up(ix);
    double *od = (double *)vk_alloc((size_t)(n ? n : 1) * 8);
    int32_t *oi = (int32_t *)vk_alloc((size_t)(n ? n : 1) * 4);
    struct C { int op, nargs, out_f; };
    static const C cs[] = { { VK_OP_ADD, 2, 1 }, { VK_OP_SUB, 2, 1 }, { VK_OP_MUL, 2, 1 }, { VK_OP_DIV, 2, 1 },
                            { VK_OP_LT, 2, 0 },  { VK_OP_GE, 2, 0 },  { VK_OP_EQ, 2, 0 },  { VK_OP_NE, 2, 0 },
                            { VK_OP_FLOOR, 1, 0 }, { VK_OP_CEIL, 1, 0 }, { VK_OP_TRUNC, 1, 0 }, { VK_OP_ROUND, 1, 0 },
                            { VK_OP_SQRT, 1, 1 }, { VK_OP_EXP, 1, 1 }, { VK_OP_SIN, 1, 1 }, { VK_OP_ATAN, 1, 1 } };
    for (const C &c : cs) {
        VkArg a[2] = { vec_arg(c.op == VK_OP_SQRT ? yd : xd), vec_arg(yd) };
        if (c.op == VK_OP_EXP || c.op == VK_OP_SIN)
            a[0] = vec_arg(yd);
        int rc = vk_map(c.op, VS_FLOAT, c.nargs == 2 ? 3 : 1, c.out_f, a, c.nargs, n, c.out_f ? (void *)od : (void *)oi,
                        NULL);
        std::vector<double> o = down(od, (size_t)n);
        std::vector<int32_t> q = down(oi, (size_t)n);
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++) {
            double p = (c.op == VK_OP_SQRT || c.op == VK_OP_EXP || c.op == VK_OP_SIN) ? y[i] : x[i], r = y[i];
            double e = 0;
            int64_t k = 0;
            switch (c.op) {
            case VK_OP_ADD: e = p + r; break;
            case VK_OP_SUB: e = p - r; break;
            case VK_OP_MUL: e = p * r; break;
            case VK_OP_DIV: e = p / r; break;
            case VK_OP_LT: k = p < r; break;
            case VK_OP_GE: k = p >= r; break;
            case VK_OP_EQ: k = p == r; break;
            case VK_OP_NE: k = p != r; break;
            case VK_OP_FLOOR: k = (int32_t)std::floor(p); break;
            case VK_OP_CEIL: k = (int32_t)std::ceil(p); break;
            case VK_OP_TRUNC: k = (int32_t)p; break;
            case VK_OP_ROUND: k = (int32_t)(p + 0.5); break;
            case VK_OP_SQRT: e = std::sqrt(p); break;
            case VK_OP_EXP: e = std::exp(p); break;
            case VK_OP_SIN: e = std::sin(p); break;
            case VK_OP_ATAN: e = std::atan(p); break;
            }
            /* CUDA's libm: within 3 ulp of the host's (runtime/fused/README.md),
             * an ulp of E's binade; the rest exact */
            int libm = c.op == VK_OP_EXP || c.op == VK_OP_SIN || c.op == VK_OP_ATAN;
            double ulp = std::nextafter(std::fabs(e), INFINITY) - std::fabs(e);
            int same = std::isnan(e) ? std::isnan(o[i]) : (o[i] == e || (libm && std::fabs(o[i] - e) <= 3 * ulp));
            if (c.out_f ? !same : q[i] != k)
                bad = i;
        }
        CHECK(rc == 0 && bad < 0, "vk_map Float op %d, n %lld: element %lld", c.op, (long long)n, (long long)bad);
    }
    { /* I_TO_F; SELECT over Floats with a scalar second argument */
        VkArg a[3] = { vec_arg(ixd), vec_arg(NULL), vec_arg(yd) };
        int rc = vk_map(VK_OP_I_TO_F, VS_INT, 0, 1, a, 1, n, od, NULL);
        std::vector<double> o = down(od, (size_t)n);
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (o[i] != (double)ix[i])
                bad = i;
        CHECK(rc == 0 && bad < 0, "vk_map I_TO_F, n %lld: element %lld", (long long)n, (long long)bad);
        a[0] = vec_arg(fld);
        a[1].f = -7.25;
        rc = vk_map(VK_OP_SELECT, VS_FLOAT, 6, 1, a, 3, n, od, NULL);
        o = down(od, (size_t)n);
        bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (o[i] != (fl[i] ? -7.25 : y[i]))
                bad = i;
        CHECK(rc == 0 && bad < 0, "vk_map SELECT Float, n %lld: element %lld", (long long)n, (long long)bad);
    }
    vk_free(xd);
    vk_free(yd);
    vk_free(fld);
    vk_free(ixd);
    vk_free(od);
    vk_free(oi);
}

/* A chain of elementwise instructions (vk_expr): s = (i * x + 0.5 < x) ?
 * i * x + 0.5 : x over Ints i and Floats x, written to OD, its Bool to
 * OI, and i * x + 0.5 written over x itself (every leaf read before an
 * output is written), with a fourth output not written (D NULL). */
static VkExprNode node(int op, int ty, int nargs, int a0, int a1 = 0, int a2 = 0)
{
    VkExprNode nd;
    memset(&nd, 0, sizeof nd);
    nd.op = (uint8_t)op;
    nd.ty = (uint8_t)ty;
    nd.nargs = (uint8_t)nargs;
    nd.a[0] = (int8_t)a0;
    nd.a[1] = (int8_t)a1;
    nd.a[2] = (int8_t)a2;
    return nd;
}

#ifndef VK_TEST_EMULATED
/* The device tier's chains beside the copy bandwidth (--bandwidth): a dot
 * product (vk_expr_reduce of x * y over 2^27 Floats each: 2 GiB read)
 * and an elementwise chain (z = x * y + x: 2 GiB read, 1 GiB written). */
static int expr_bandwidth()
{
    const int64_t n = (int64_t)1 << 27;
    const size_t bytes = (size_t)n * 8;
    double *x = (double *)vk_alloc(bytes), *y = (double *)vk_alloc(bytes), *z = (double *)vk_alloc(bytes);
    double *s = (double *)vk_alloc(8);
    if (!x || !y || !z || !s || vk_memset0(x, bytes) != 0 || vk_memset0(y, bytes) != 0) {
        printf("expr bandwidth: %s\n", vk_last_error());
        return 1;
    }
    VkExpr e;
    memset(&e, 0, sizeof e);
    e.leaf[0] = vec_arg(x);
    e.leaf[1] = vec_arg(y);
    e.nl = 2;
    e.lmask = 3;
    e.node[0] = node(VK_OP_MUL, VS_FLOAT, 2, -1, -2);
    e.nn = 1;
    e.out[0].d = NULL, e.out[0].node = 0, e.out[0].f = 1; /* the products written nowhere */
    e.no = 1;
    VkExpr m = e;
    m.node[1] = node(VK_OP_ADD, VS_FLOAT, 2, 0, -1);
    m.nn = 2;
    m.out[0].d = z, m.out[0].node = 1, m.out[0].f = 1;
    m.no = 1;
    int rc = 0;
    for (int four : { 1, 0 }) { /* four elements a thread (the default), then one */
        vk_set_expr_four_nodes(four ? 16 : 0);
        double dot = median_ms([&] { rc |= vk_expr_reduce(&e, 0, VS_FADD, n, s); });
        double map = median_ms([&] { rc |= vk_expr(&m, n); });
        if (rc != 0) {
            printf("expr bandwidth: %s\n", vk_last_error());
            return 1;
        }
        printf("vk_expr_reduce, a dot product of 2^27 Floats, %s: %.3f ms, %.1f GB/s read (median of 9)\n",
               four ? "four elements a thread" : "one element a thread", dot, 2.0 * (double)bytes / (dot * 1e-3) / 1e9);
        printf("vk_expr, z = x * y + x over 2^27 Floats, %s: %.3f ms, %.1f GB/s read + written (median of 9)\n",
               four ? "four elements a thread" : "one element a thread", map, 3.0 * (double)bytes / (map * 1e-3) / 1e9);
    }
    vk_set_expr_four_nodes(16);
    vk_free(x);
    vk_free(y);
    vk_free(z);
    vk_free(s);
    return 0;
}

/* What the model prices at 5 us a launch and 10 us a wait (--bandwidth),
 * on the host's clock, each the median of 5 rounds: a chain's launch
 * (vk_expr, its VkExpr of about 1.6 KB a kernel parameter) and a plain
 * map's (vk_map) over 1024 Floats, 2000 back to back with one wait at the
 * end; and a wait, an 8-byte read back (vk_memcpy_d2h) after one such
 * launch each time (the device tier's short work: a launch, then the host
 * reads a value). */
static int launch_costs()
{
    const int64_t n = 1024;
    const int calls = 2000;
    double *x = (double *)vk_alloc((size_t)n * 8), *z = (double *)vk_alloc((size_t)n * 8);
    if (!x || !z || vk_memset0(x, (size_t)n * 8) != 0) {
        printf("launch costs: %s\n", vk_last_error());
        return 1;
    }
    VkExpr m;
    memset(&m, 0, sizeof m);
    m.leaf[0] = vec_arg(x);
    m.nl = 1;
    m.lmask = 1;
    m.node[0] = node(VK_OP_ADD, VS_FLOAT, 2, -1, -1);
    m.nn = 1;
    m.out[0].d = z, m.out[0].node = 0, m.out[0].f = 1;
    m.no = 1;
    VkArg args[2] = { vec_arg(x), vec_arg(x) };
    int rc = 0;
    auto us_per = [&](int kind) {
        std::vector<double> us;
        for (int r = 0; r < 6; r++) {
            rc |= vk_sync();
            auto t0 = std::chrono::steady_clock::now();
            for (int k = 0; k < calls; k++) {
                if (kind == 0)
                    rc |= vk_expr(&m, n);
                else
                    rc |= vk_map(VK_OP_ADD, VS_FLOAT, 3, 1, args, 2, n, z, NULL);
                if (kind == 2) {
                    double v;
                    rc |= vk_memcpy_d2h(&v, z, sizeof v);
                }
            }
            rc |= vk_sync();
            double dt = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
            if (r > 0)
                us.push_back(dt / calls);
        }
        std::sort(us.begin(), us.end());
        return us[us.size() / 2];
    };
    double chain = us_per(0), map = us_per(1), wait = us_per(2);
    if (rc != 0) {
        printf("launch costs: %s\n", vk_last_error());
        return 1;
    }
    printf("launch costs (host clock, %d calls over 1024 Floats, median of 5): a chain (vk_expr) %.2f us, a map "
           "(vk_map) %.2f us, a map then an 8-byte read back (a wait) %.2f us\n",
           calls, chain, map, wait);
    vk_free(x);
    vk_free(z);
    return 0;
}
#endif

/* Chains about the length the kernels evaluate four elements at a time
 * (vk_set_expr_four_nodes, 16): x + 0.5 + 0.5 ... (NODES nodes) over Floats
 * x, written out and summed (vk_expr, vk_expr_reduce), against the same
 * on the host (exact in any order: multiples of 2^-16 below 2^15). */
static void test_expr_long(int64_t n, int nodes)
{
    std::vector<double> x(n), want(n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = (double)(int32_t)rnd32() / 65536.0;
        want[i] = x[i];
        for (int k = 1; k < nodes; k++)
            want[i] += 0.5;
    }
    double *xd = up(x), *od = (double *)vk_alloc((size_t)(n ? n : 1) * 8), *sd = (double *)vk_alloc(8);
    VkExpr e;
    memset(&e, 0, sizeof e);
    e.leaf[0] = vec_arg(xd);
    e.leaf[1] = vec_arg(NULL);
    e.leaf[1].f = 0.5;
    e.nl = 2;
    e.lmask = 3;
    e.node[0] = node(VK_EXPR_COPY, VS_FLOAT, 1, -1);
    for (int k = 1; k < nodes; k++)
        e.node[k] = node(VK_OP_ADD, VS_FLOAT, 2, k - 1, -2);
    e.nn = nodes;
    e.out[0].d = od, e.out[0].node = nodes - 1, e.out[0].f = 1;
    e.no = 1;
    int rc = vk_expr(&e, n);
    CHECK(rc == 0 && down(od, (size_t)n) == want, "vk_expr, a chain of %d nodes, n %lld", nodes, (long long)n);
    /* the sum in the reduction's own order: exact in any (47 bits at most) */
    rc = vk_expr_reduce(&e, nodes - 1, VS_FADD, n, sd);
    for (int64_t i = 0; i < n; i++)
        sum += want[i];
    CHECK(rc == 0 && down(sd, 1)[0] == sum, "vk_expr_reduce Float +, a chain of %d nodes, n %lld", nodes,
          (long long)n);
    vk_free(xd);
    vk_free(od);
    vk_free(sd);
}

static void test_expr(int64_t n)
{
    std::vector<double> x(n);
    std::vector<int32_t> ix(n);
    for (int64_t i = 0; i < n; i++) {
        x[i] = ((double)(int32_t)rnd32()) / 65536.0;
        ix[i] = (int32_t)(rnd32() % 2001) - 1000;
    }
    double *xd = up(x), *od = (double *)vk_alloc((size_t)(n ? n : 1) * 8);
    int32_t *ixd = up(ix), *oi = (int32_t *)vk_alloc((size_t)(n ? n : 1) * 4);
    VkExpr e;
    memset(&e, 0, sizeof e);
    e.leaf[0] = vec_arg(ixd);
    e.leaf[1] = vec_arg(xd);
    e.leaf[2] = vec_arg(NULL);
    e.leaf[2].f = 0.5;
    e.nl = 3;
    e.lmask = 2 | 4;
    e.node[0] = node(VK_OP_I_TO_F, VS_INT, 1, -1);
    e.node[1] = node(VK_OP_MUL, VS_FLOAT, 2, 0, -2);
    e.node[2] = node(VK_OP_ADD, VS_FLOAT, 2, 1, -3);
    e.node[3] = node(VK_OP_LT, VS_FLOAT, 2, 2, -2);
    e.node[4] = node(VK_OP_SELECT, VS_FLOAT, 3, 3, 2, -2);
    e.nn = 5;
    e.out[0].d = od, e.out[0].node = 4, e.out[0].f = 1;
    e.out[1].d = oi, e.out[1].node = 3, e.out[1].f = 0;
    e.out[2].d = xd, e.out[2].node = 2, e.out[2].f = 1;
    e.out[3].d = NULL, e.out[3].node = 1, e.out[3].f = 1;
    e.no = 4;
    int rc = vk_expr(&e, n);
    std::vector<double> o = down(od, (size_t)n), nx = down(xd, (size_t)n);
    std::vector<int32_t> b = down(oi, (size_t)n);
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++) {
        double t = (double)ix[i] * x[i];
        double u = t + 0.5;
        int lt = u < x[i];
        if (o[i] != (lt ? u : x[i]) || b[i] != lt || nx[i] != u)
            bad = i;
    }
    CHECK(rc == 0 && bad < 0, "vk_expr, n %lld: element %lld", (long long)n, (long long)bad);
    /* with a reduction of a node: Int + of i * 3 (wrapping), Float MAX of
     * the Floats s, Bool OR of the comparison; the outputs written too,
     * but the reduced node's only when an output names it */
    {
        VkExpr r = e;
        r.leaf[1] = vec_arg(xd); /* x as rewritten above: t + 0.5 */
        r.leaf[2].f = 0.5;
        r.node[5] = node(VK_OP_MUL, VS_INT, 2, -1, -4);
        r.leaf[3] = vec_arg(NULL);
        r.leaf[3].i = 3;
        r.nl = 4;
        r.nn = 6;
        r.out[2].d = NULL; /* x not written over again */
        int32_t *sum = (int32_t *)vk_alloc(4), *any = (int32_t *)vk_alloc(4);
        double *mx = (double *)vk_alloc(8);
        int rc1 = vk_expr_reduce(&r, 5, VS_IADD, n, sum);
        int rc2 = vk_expr_reduce(&r, 4, VS_FMAX, n, mx);
        int rc3 = vk_expr_reduce(&r, 3, VS_BOR, n, any);
        uint32_t esum = 0;
        double emx = -(double)1.0e36f;
        int32_t eany = 0;
        for (int64_t i = 0; i < n; i++) {
            esum += (uint32_t)ix[i] * 3u;
            double u = (double)ix[i] * nx[i] + 0.5;
            int lt = u < nx[i];
            double sv = lt ? u : nx[i];
            emx = emx > sv ? emx : sv;
            eany |= lt;
        }
        std::vector<double> o2 = down(od, (size_t)n);
        int64_t bad2 = -1;
        for (int64_t i = 0; i < n && bad2 < 0; i++) {
            double u = (double)ix[i] * nx[i] + 0.5;
            if (o2[i] != (u < nx[i] ? u : nx[i]))
                bad2 = i;
        }
        CHECK(rc1 == 0 && down(sum, 1)[0] == (int32_t)esum, "vk_expr_reduce Int +, n %lld", (long long)n);
        CHECK(rc2 == 0 && down(mx, 1)[0] == emx, "vk_expr_reduce Float MAX, n %lld", (long long)n);
        CHECK(rc3 == 0 && down(any, 1)[0] == eany, "vk_expr_reduce Bool OR, n %lld", (long long)n);
        CHECK(bad2 < 0, "vk_expr_reduce writes the chain's outputs, n %lld: element %lld", (long long)n,
              (long long)bad2);
        vk_free(sum);
        vk_free(any);
        vk_free(mx);
    }
    /* a leaf spread over segments (DIST's): three values over segments
     * starting at 0, 2 and 5, copied out (VK_EXPR_COPY) */
    if (n >= 5) {
        std::vector<double> vals = { 1.5, -2.0, 7.25 };
        std::vector<int64_t> off = { 0, 2, 5 };
        double *vd = up(vals);
        int64_t *offd = up(off);
        VkExpr sp;
        memset(&sp, 0, sizeof sp);
        sp.leaf[0] = vec_arg(vd);
        sp.lm[0] = 3;
        sp.loff[0] = offd;
        sp.lmask = 1;
        sp.nl = 1;
        sp.node[0] = node(VK_EXPR_COPY, VS_FLOAT, 1, -1);
        sp.nn = 1;
        sp.out[0].d = od, sp.out[0].node = 0, sp.out[0].f = 1;
        sp.no = 1;
        int rcs = vk_expr(&sp, n);
        std::vector<double> o3 = down(od, (size_t)n);
        int64_t bad3 = -1;
        for (int64_t i = 0; i < n && bad3 < 0; i++)
            if (o3[i] != vals[i < 2 ? 0 : i < 5 ? 1 : 2])
                bad3 = i;
        CHECK(rcs == 0 && bad3 < 0, "vk_expr, a leaf spread over segments, n %lld: element %lld", (long long)n,
              (long long)bad3);
        vk_free(vd);
        vk_free(offd);
    }
    /* an output at positions (a REPLACE's scatter, kernels.h): x * 2 of
     * element i written at od[n - 1 - i] and, unpositioned, to oi as Ints
     * (I_TO_F's reverse not needed: the Int node); the rest of od kept */
    if (n >= 1) {
        std::vector<double> x0 = down(xd, (size_t)n), before(n);
        for (int64_t i = 0; i < n; i++)
            before[i] = -1.0 - (double)i;
        double *bd = up(before);
        std::vector<int64_t> pos(n);
        for (int64_t i = 0; i < n; i++)
            pos[i] = n - 1 - i;
        int64_t *posd = up(pos);
        VkExpr p;
        memset(&p, 0, sizeof p);
        p.leaf[0] = vec_arg(xd);
        p.leaf[1] = vec_arg(NULL);
        p.leaf[1].f = 2.0;
        p.nl = 2;
        p.lmask = 1 | 2;
        p.node[0] = node(VK_OP_MUL, VS_FLOAT, 2, -1, -2);
        p.node[1] = node(VK_OP_LT, VS_FLOAT, 2, 0, -1);
        p.nn = 2;
        p.out[0].d = bd, p.out[0].pos = posd, p.out[0].node = 0, p.out[0].f = 1;
        p.out[1].d = oi, p.out[1].node = 1, p.out[1].f = 0;
        p.no = 2;
        int rcp = vk_expr(&p, n);
        std::vector<double> ob = down(bd, (size_t)n);
        std::vector<int32_t> olt = down(oi, (size_t)n);
        int64_t badp = -1;
        for (int64_t i = 0; i < n && badp < 0; i++)
            if (ob[n - 1 - i] != x0[i] * 2.0 || olt[i] != (x0[i] * 2.0 < x0[i]))
                badp = i;
        CHECK(rcp == 0 && badp < 0, "vk_expr, an output at positions, n %lld: element %lld", (long long)n,
              (long long)badp);
        vk_free(bd);
        vk_free(posd);
    }
    /* gathers (VK_EXPR_GATHER): one segment and three; a bad index's
     * record; with a reduction; a run with no output, for the check */
    if (n >= 6) {
        std::vector<double> src = down(xd, (size_t)n);
        std::vector<int32_t> rev(n), seg(n);
        std::vector<int32_t> L = { 2, 3, (int32_t)(n - 5) };
        std::vector<int64_t> off = { 0, 2, 5 };
        for (int64_t i = 0; i < n; i++) {
            rev[i] = (int32_t)(n - 1 - i);
            int64_t k = i < 2 ? 0 : i < 5 ? 1 : 2;
            seg[i] = (int32_t)(off[k] + L[k] - 1 - i); /* reversed within the segment */
        }
        int32_t *revd = up(rev), *segd = up(seg), *Ld = up(L);
        int64_t *offd = up(off);
        VkPermFault *rd = (VkPermFault *)vk_alloc(sizeof(VkPermFault)), got;
        VkExpr g;
        memset(&g, 0, sizeof g);
        g.leaf[0] = vec_arg(revd);
        g.leaf[1] = vec_arg(xd);
        g.leaf[2] = vec_arg(NULL);
        g.leaf[2].f = 2.0;
        g.nl = 3;
        g.lmask = 2 | 4;
        g.node[0] = node(VK_EXPR_GATHER, VS_FLOAT, 2, -1, -2);
        g.node[1] = node(VK_OP_MUL, VS_FLOAT, 2, 0, -3);
        g.nn = 2;
        g.out[0].d = od, g.out[0].node = 1, g.out[0].f = 1;
        g.no = 1;
        g.gfault = rd;
        g.gm = 1;
        g.gnsrc = n;
        int rcg = vk_expr(&g, n);
        vk_memcpy_d2h(&got, rd, sizeof got);
        std::vector<double> og = down(od, (size_t)n);
        int64_t badg = -1;
        for (int64_t i = 0; i < n && badg < 0; i++)
            if (og[i] != 2.0 * src[n - 1 - i])
                badg = i;
        CHECK(rcg == 0 && badg < 0 && got.err == ~0ull, "vk_expr, a gather times 2, n %lld: element %lld, err %llx",
              (long long)n, (long long)badg, got.err);
        /* three segments, each reversed; then index 3 at element 2 (segment 1, of 3) and -1 at element n - 1 */
        g.leaf[0] = vec_arg(segd);
        g.gm = 3;
        g.glen = Ld;
        g.gsoff = g.gdoff = offd;
        rcg = vk_expr(&g, n);
        vk_memcpy_d2h(&got, rd, sizeof got);
        og = down(od, (size_t)n);
        badg = -1;
        for (int64_t i = 0; i < n && badg < 0; i++)
            if (og[i] != 2.0 * src[seg[i] + (i < 2 ? 0 : i < 5 ? 2 : 5)])
                badg = i;
        CHECK(rcg == 0 && badg < 0 && got.err == ~0ull, "vk_expr, a gather over 3 segments, n %lld: element %lld",
              (long long)n, (long long)badg);
        std::vector<int32_t> bad = seg;
        bad[2] = 3;
        bad[n - 1] = -1;
        int32_t *badd = up(bad);
        g.leaf[0] = vec_arg(badd);
        rcg = vk_expr(&g, n);
        vk_memcpy_d2h(&got, rd, sizeof got);
        og = down(od, (size_t)n);
        CHECK(rcg == 0 && got.err == (2ull << 1) && got.j == 3 && got.k == 1 && got.len == 3 && og[2] == 0.0 &&
                  og[n - 1] == 0.0 && og[3] == 2.0 * src[3],
              "vk_expr, bad gather indices, n %lld: err %llx j %lld k %lld len %lld", (long long)n, got.err, got.j,
              got.k, got.len);
        /* no output: the check alone (the last element's -1 now the first bad one) */
        bad[2] = seg[2];
        vk_free(badd);
        badd = up(bad);
        g.leaf[0] = vec_arg(badd);
        g.no = 0;
        rcg = vk_expr(&g, n);
        vk_memcpy_d2h(&got, rd, sizeof got);
        CHECK(rcg == 0 && got.err == ((unsigned long long)(n - 1) << 1) && got.j == -1 && got.k == 2 &&
                  got.len == n - 5,
              "vk_expr, a gather's check with no output, n %lld: err %llx j %lld k %lld len %lld", (long long)n,
              got.err, got.j, got.k, got.len);
        /* reduced: Int + of the Ints gathered in reverse is their sum */
        VkExpr gr;
        memset(&gr, 0, sizeof gr);
        gr.leaf[0] = vec_arg(revd);
        gr.leaf[1] = vec_arg(ixd);
        gr.nl = 2;
        gr.node[0] = node(VK_EXPR_GATHER, VS_INT, 2, -1, -2);
        gr.nn = 1;
        gr.gfault = rd;
        gr.gm = 1;
        gr.gnsrc = n;
        int32_t *sum = (int32_t *)vk_alloc(4);
        int rcr = vk_expr_reduce(&gr, 0, VS_IADD, n, sum);
        vk_memcpy_d2h(&got, rd, sizeof got);
        uint32_t esum = 0;
        for (int64_t i = 0; i < n; i++)
            esum += (uint32_t)ix[i];
        CHECK(rcr == 0 && down(sum, 1)[0] == (int32_t)esum && got.err == ~0ull,
              "vk_expr_reduce of a gather, n %lld", (long long)n);
        /* refused: a gather without its record, or reading a scalar leaf */
        VkExpr w2 = g;
        w2.gfault = NULL;
        CHECK(vk_expr(&w2, n) != 0, "vk_expr refuses a gather without a record (n %lld)", (long long)n);
        w2 = g;
        w2.node[0] = node(VK_EXPR_GATHER, VS_FLOAT, 2, -1, -3);
        CHECK(vk_expr(&w2, n) != 0, "vk_expr refuses a gather from a scalar (n %lld)", (long long)n);
        vk_free(sum);
        vk_free(badd);
        vk_free(rd);
        vk_free(revd);
        vk_free(segd);
        vk_free(Ld);
        vk_free(offd);
    }
    /* refused: a node reading a later one; an Int / (it may fail) */
    VkExpr w = e;
    w.node[1].a[0] = 3;
    CHECK(vk_expr(&w, n) != 0, "vk_expr refuses a node that reads a later node (n %lld)", (long long)n);
    w = e;
    w.node[1] = node(VK_OP_DIV, VS_INT, 2, -1, -1);
    CHECK(vk_expr(&w, n) != 0, "vk_expr refuses Int / (n %lld)", (long long)n);
    vk_free(xd);
    vk_free(od);
    vk_free(ixd);
    vk_free(oi);
}

/* vk_seg_shape: the offsets, the sum, the shortest and the longest of L
 * (negative lengths too: the offsets and the sum as the runtime's). */
static void test_seg_shape(const std::vector<int32_t> &L)
{
    int64_t m = (int64_t)L.size();
    if (m == 0)
        return;
    int32_t *Ld = up(L);
    int64_t *offd = (int64_t *)vk_alloc((size_t)m * 8);
    VkShape *recd = (VkShape *)vk_alloc(sizeof(VkShape)), rec;
    int rc = vk_seg_shape(Ld, m, offd, recd);
    vk_memcpy_d2h(&rec, recd, sizeof rec);
    std::vector<int64_t> off = down(offd, (size_t)m);
    int64_t acc = 0, bad = -1;
    int32_t lo = L[0], hi = L[0];
    for (int64_t k = 0; k < m; k++) {
        if (off[k] != acc && bad < 0)
            bad = k;
        acc += L[k];
        lo = std::min(lo, L[k]);
        hi = std::max(hi, L[k]);
    }
    CHECK(rc == 0 && bad < 0 && rec.n == acc && rec.lo == lo && rec.hi == hi,
          "vk_seg_shape, %lld segments: offset %lld, sum %lld (%lld), shortest %d (%d), longest %d (%d)", (long long)m,
          (long long)bad, rec.n, (long long)acc, rec.lo, lo, rec.hi, hi);
    vk_free(Ld);
    vk_free(offd);
    vk_free(recd);
}

/* A bad index planted in IDX (N > 0 elements over the segments L at
 * offsets OFF): the first of the last non-empty segment set to that
 * segment's length. Its position, its segment in *SEG; -1 when an index
 * before it is bad already (a record names the first bad one). */
static int64_t plant_bad_index(std::vector<int32_t> &idx, const std::vector<int32_t> &L,
                               const std::vector<int64_t> &off, int64_t *seg)
{
    int64_t m = (int64_t)L.size(), k = m - 1;
    while (L[k] == 0)
        k--;
    int64_t at = off[k], first = -1;
    idx[at] = L[k];
    for (int64_t kk = 0; kk < m && first < 0; kk++)
        for (int64_t i = off[kk]; i < off[kk] + L[kk] && first < 0; i++)
            if (idx[i] < 0 || idx[i] >= L[kk])
                first = i;
    *seg = k;
    return first == at ? at : -1;
}

/* Three vectors (Int, Float, Int) of N random elements, up on the device,
 * with room there for three results and a permute record: the operands of
 * the scatters of several vectors at one index. */
struct Three {
    int64_t n;
    std::vector<int32_t> a, c;
    std::vector<double> b;
    int32_t *ad, *cd, *oa, *oc;
    double *bd, *ob;
    VkPermFault *rd;
    const size_t es[3] = { 4, 8, 4 };
    const void *in[3];
    void *out[3];
    explicit Three(int64_t n_) : n(n_), a(n_), c(n_), b(n_)
    {
        for (int64_t i = 0; i < n; i++) {
            a[i] = (int32_t)rnd32();
            b[i] = (double)(int32_t)rnd32() + 0.5;
            c[i] = -(int32_t)(rnd32() % 1000);
        }
        ad = up(a);
        cd = up(c);
        bd = up(b);
        oa = (int32_t *)vk_alloc((size_t)(n ? n : 1) * 4);
        oc = (int32_t *)vk_alloc((size_t)(n ? n : 1) * 4);
        ob = (double *)vk_alloc((size_t)(n ? n : 1) * 8);
        rd = (VkPermFault *)vk_alloc(sizeof(VkPermFault));
        in[0] = ad, in[1] = bd, in[2] = cd;
        out[0] = oa, out[1] = ob, out[2] = oc;
    }
    ~Three()
    {
        for (void *p : { (void *)ad, (void *)cd, (void *)bd, (void *)oa, (void *)oc, (void *)ob, (void *)rd })
            vk_free(p);
    }
    Three(const Three &) = delete;
    Three &operator=(const Three &) = delete;
    /* the record set to "no fault" before a run, and read after it */
    void clear_record()
    {
        VkPermFault none = { ~0ull, 0, 0, 0 };
        vk_memcpy_h2d(rd, &none, sizeof none);
    }
    VkPermFault record()
    {
        VkPermFault got;
        vk_memcpy_d2h(&got, rd, sizeof got);
        return got;
    }
    /* the results equal WA, WB, WC */
    bool results(const std::vector<int32_t> &wa, const std::vector<double> &wb, const std::vector<int32_t> &wc)
    {
        return down(oa, (size_t)n) == wa && down(ob, (size_t)n) == wb && down(oc, (size_t)n) == wc;
    }
    /* A bad index planted in IDX (plant_bad_index), RUN (the call, given
     * the indices on the device) with it: one record must name it, WHAT
     * the call in the message. */
    template <class F>
    void check_bad_index(std::vector<int32_t> &idx, const std::vector<int32_t> &L, const std::vector<int64_t> &off,
                         const char *what, F run)
    {
        int64_t k, at = plant_bad_index(idx, L, off, &k);
        int32_t *bad = up(idx);
        clear_record();
        int rc = run(bad);
        VkPermFault got = record();
        CHECK(rc == 0 && at >= 0 && got.err == ((unsigned long long)at << 1) && got.j == L[k] && got.k == k &&
                  got.len == L[k],
              "%s, a bad index at %lld (segment %lld): err %llx j %lld k %lld len %lld", what, (long long)at,
              (long long)k, got.err, got.j, got.k, got.len);
        vk_free(bad);
    }
    /* W's element at each I's destination set to source element I, as a
     * scatter in order does */
    void scatter_into(const std::vector<int32_t> &idx, const std::vector<int32_t> &L, const std::vector<int64_t> &off,
                      std::vector<int32_t> &wa, std::vector<double> &wb, std::vector<int32_t> &wc) const
    {
        for (size_t k = 0; k < L.size(); k++)
            for (int64_t i = off[k]; i < off[k] + L[k]; i++) {
                wa[off[k] + idx[i]] = a[i];
                wb[off[k] + idx[i]] = b[i];
                wc[off[k] + idx[i]] = c[i];
            }
    }
};

/* Segmented permutes over the segments L (empty ones among them): a
 * scatter with collisions and flags that zeroes what it does not write
 * (VK_SCATTER_ZERO, twice into one buffer: the second call's unwritten
 * positions are 0 again), one with claims over a default, a gather; each
 * against the runtime's sequential rule; a bad index's record (position,
 * J, K, LEN) and a good call after it clean. */
static void test_seg_permutes(int64_t n, const std::vector<int32_t> &L)
{
    int64_t m = (int64_t)L.size();
    if (m == 0)
        return;
    std::vector<int64_t> off = offsets(L);
    std::vector<int32_t> x(n), fl(n), dflt(n);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (int32_t)rnd32();
        fl[i] = rnd32() % 4 != 0;
        dflt[i] = (int32_t)rnd32();
    }
    int32_t *xd = up(x), *fd = up(fl), *ld = up(L);
    int64_t *od = up(off);
    int32_t *out = (int32_t *)vk_alloc((size_t)(n ? n : 1) * 4);
    VkPermFault none = { ~0ull, 0, 0, 0 }, got;
    VkPermFault *rd = (VkPermFault *)vk_alloc(sizeof(VkPermFault));
    for (int round = 0; round < 2; round++) {
        std::vector<int32_t> idx(n), want(n, 0);
        for (int64_t k = 0; k < m; k++) /* indices within the segment, colliding (a quarter of its length) */
            for (int64_t i = off[k]; i < off[k] + L[k]; i++)
                idx[i] = (int32_t)(rnd32() % (uint32_t)(L[k] / 4 + 1));
        for (int64_t k = 0; k < m; k++)
            for (int64_t i = off[k]; i < off[k] + L[k]; i++)
                if (fl[i])
                    want[off[k] + idx[i]] = x[i];
        int32_t *id = up(idx);
        int rc = vk_scatter(4, xd, n, id, fd, ld, od, m, ld, od, m, out, n, VK_SCATTER_ZERO, NULL);
        CHECK(rc == 0 && down(out, (size_t)n) == want, "scatter with collisions, zeroing, round %d, n=%lld m=%lld: %s",
              round, (long long)n, (long long)m, rc ? vk_last_error() : "a wrong result");
        /* claims over a default (DPERMUTE's form): BASE with the flagged
         * elements scattered over it in order */
        auto over = [&](std::vector<int32_t> w) {
            for (int64_t i = 0; i < n; i++)
                if (fl[i]) {
                    int64_t k = std::upper_bound(off.begin(), off.end(), (int64_t)i) - off.begin() - 1;
                    while (k > 0 && L[k] == 0)
                        k--;
                    w[off[k] + idx[i]] = x[i];
                }
            return w;
        };
        std::vector<int32_t> wd = over(dflt);
        vk_memcpy_h2d(out, dflt.data(), (size_t)n * 4);
        rc = vk_scatter(4, xd, n, id, fd, ld, od, m, ld, od, m, out, n, 0, NULL);
        CHECK(rc == 0 && down(out, (size_t)n) == wd, "scatter with collisions over a default, n=%lld m=%lld: %s",
              (long long)n, (long long)m, rc ? vk_last_error() : "a wrong result");
        /* ... over a fill (DPERMUTE into a lazy fill: vk_scatter_fill), the
         * stale contents of OUT written over */
        std::vector<int32_t> wf = over(std::vector<int32_t>(n, -77));
        VkArg fill;
        memset(&fill, 0, sizeof fill);
        fill.i = -77;
        vk_memcpy_h2d(out, dflt.data(), (size_t)n * 4);
        rc = vk_scatter_fill(4, &fill, xd, n, id, fd, ld, od, m, ld, od, m, out, n, NULL);
        CHECK(rc == 0 && down(out, (size_t)n) == wf, "scatter with collisions over a fill, n=%lld m=%lld: %s",
              (long long)n, (long long)m, rc ? vk_last_error() : "a wrong result");
        /* without flags (PERMUTE's and DPERMUTE's form): every element
         * claims, the later one winning; zeroing, the positions nobody
         * claimed 0 (up to VK_SCATTER_ONE_PASS elements one kernel, whose
         * last block writes the winners again) */
        std::vector<int32_t> wz(n, 0), wn = dflt;
        for (int64_t k = 0; k < m; k++)
            for (int64_t i = off[k]; i < off[k] + L[k]; i++)
                wz[off[k] + idx[i]] = wn[off[k] + idx[i]] = x[i];
        rc = vk_scatter(4, xd, n, id, NULL, ld, od, m, ld, od, m, out, n, VK_SCATTER_ZERO, NULL);
        CHECK(rc == 0 && down(out, (size_t)n) == wz, "scatter with collisions, no flags, zeroing, n=%lld m=%lld: %s",
              (long long)n, (long long)m, rc ? vk_last_error() : "a wrong result");
        vk_memcpy_h2d(out, dflt.data(), (size_t)n * 4);
        rc = vk_scatter(4, xd, n, id, NULL, ld, od, m, ld, od, m, out, n, 0, NULL);
        CHECK(rc == 0 && down(out, (size_t)n) == wn,
              "scatter with collisions, no flags, over a default, n=%lld m=%lld: %s", (long long)n, (long long)m,
              rc ? vk_last_error() : "a wrong result");
        /* the gather of the same indices */
        std::vector<int32_t> wg(n);
        for (int64_t k = 0; k < m; k++)
            for (int64_t i = off[k]; i < off[k] + L[k]; i++)
                wg[i] = x[off[k] + idx[i]];
        rc = vk_gather(4, xd, n, id, NULL, ld, od, m, ld, od, m, out, n, NULL);
        CHECK(rc == 0 && down(out, (size_t)n) == wg, "segmented gather, n=%lld m=%lld: %s", (long long)n,
              (long long)m, rc ? vk_last_error() : "a wrong result");
        if (round == 1 && n > 0) { /* a bad index in the last non-empty segment, first of it */
            int64_t k, at = plant_bad_index(idx, L, off, &k);
            int32_t *bd = up(idx);
            for (int g = 0; g < 2; g++) {
                vk_memcpy_h2d(rd, &none, sizeof none);
                rc = g ? vk_gather(4, xd, n, bd, NULL, ld, od, m, ld, od, m, out, n, rd)
                       : vk_scatter(4, xd, n, bd, fl[at] ? fd : NULL, ld, od, m, ld, od, m, out, n, VK_SCATTER_ZERO, rd);
                vk_memcpy_d2h(&got, rd, sizeof got);
                CHECK(rc == 0 && at >= 0 && got.err == ((unsigned long long)at << 1) && got.j == L[k] &&
                          got.k == k && got.len == L[k],
                      "segmented %s, a bad index at %lld (segment %lld of %d): err %llx j %lld k %lld len %lld",
                      g ? "gather" : "scatter", (long long)at, (long long)k, L[k], got.err, got.j, got.k, got.len);
                rc = g ? vk_gather(4, xd, n, id, NULL, ld, od, m, ld, od, m, out, n, rd)
                       : vk_scatter(4, xd, n, id, fd, ld, od, m, ld, od, m, out, n, VK_SCATTER_ZERO, rd);
                vk_memcpy_d2h(&got, rd, sizeof got);
                CHECK(rc == 0 && got.err == ~0ull, "segmented %s after a bad one: clean, err %llx",
                      g ? "gather" : "scatter", got.err);
            }
            vk_free(bd);
        }
        vk_free(id);
    }
    { /* a permutation of each segment (NESL's permute), zeroing: every position written once */
        std::vector<int32_t> idx(n), want(n, 0);
        for (int64_t k = 0; k < m; k++) {
            for (int64_t i = 0; i < L[k]; i++)
                idx[off[k] + i] = (int32_t)i;
            for (int64_t i = L[k] - 1; i > 0; i--)
                std::swap(idx[off[k] + i], idx[off[k] + (int64_t)(rnd32() % (uint32_t)(i + 1))]);
            for (int64_t i = off[k]; i < off[k] + L[k]; i++)
                want[off[k] + idx[i]] = x[i];
        }
        int32_t *id = up(idx);
        vk_memcpy_h2d(out, dflt.data(), (size_t)n * 4); /* stale values where nothing would write */
        vk_memcpy_h2d(rd, &none, sizeof none);
        int rc = vk_scatter(4, xd, n, id, NULL, ld, od, m, ld, od, m, out, n, VK_SCATTER_ZERO, rd);
        vk_memcpy_d2h(&got, rd, sizeof got);
        CHECK(rc == 0 && got.err == ~0ull && down(out, (size_t)n) == want,
              "segmented permutation, n=%lld m=%lld: rc %d, err %llx%s", (long long)n, (long long)m, rc, got.err,
              rc == 0 && down(out, (size_t)n) != want ? ", a wrong result" : "");
        vk_free(id);
    }
    vk_free(rd);
    vk_free(out);
    vk_free(xd);
    vk_free(fd);
    vk_free(ld);
    vk_free(od);
}

/* vk_scatter_many of three vectors (Int, Float, Int) at one index over
 * the segments L: a permutation of each segment, then colliding indices
 * (zeroing, and over a default), then a bad index; each vector against
 * the runtime's rule, one record for all. */
static void test_scatter_many(int64_t n, const std::vector<int32_t> &L)
{
    int64_t m = (int64_t)L.size();
    if (m == 0)
        return;
    std::vector<int64_t> off = offsets(L);
    Three t(n);
    std::vector<int32_t> dflt(n, 7);
    int32_t *ld = up(L);
    int64_t *od = up(off);
    for (int round = 0; round < 3; round++) { /* a permutation; colliding; colliding over a default */
        std::vector<int32_t> idx(n);
        for (int64_t k = 0; k < m; k++) {
            for (int64_t i = 0; i < L[k]; i++)
                idx[off[k] + i] = round ? (int32_t)(rnd32() % (uint32_t)(L[k] / 4 + 1)) : (int32_t)i;
            if (!round)
                for (int64_t i = L[k] - 1; i > 0; i--)
                    std::swap(idx[off[k] + i], idx[off[k] + (int64_t)(rnd32() % (uint32_t)(i + 1))]);
        }
        int mode = round == 2 ? 0 : VK_SCATTER_ZERO;
        std::vector<int32_t> wa(n, 0), wc(n, 0);
        std::vector<double> wb(n, 0.0);
        if (round == 2) {
            wa = wc = dflt;
            wb.assign(n, 7.0);
            vk_memcpy_h2d(t.oa, dflt.data(), (size_t)n * 4);
            vk_memcpy_h2d(t.oc, dflt.data(), (size_t)n * 4);
            vk_memcpy_h2d(t.ob, wb.data(), (size_t)n * 8);
        } else { /* stale values where nothing should be left */
            vk_memcpy_h2d(t.oa, t.a.data(), (size_t)n * 4);
            vk_memcpy_h2d(t.oc, t.a.data(), (size_t)n * 4);
        }
        t.scatter_into(idx, L, off, wa, wb, wc);
        int32_t *id = up(idx);
        t.clear_record();
        int rc = vk_scatter_many(3, t.es, t.in, t.out, n, id, ld, od, m, ld, od, m, n, mode, t.rd);
        VkPermFault got = t.record();
        CHECK(rc == 0 && got.err == ~0ull && t.results(wa, wb, wc),
              "scatter of three at one index, round %d, n=%lld m=%lld: rc %d err %llx%s", round, (long long)n,
              (long long)m, rc, got.err, rc ? vk_last_error() : "");
        if (round == 1 && n > 0) /* a bad index in the last non-empty segment, first of it */
            t.check_bad_index(idx, L, off, "scatter of three", [&](int32_t *bad) {
                return vk_scatter_many(3, t.es, t.in, t.out, n, bad, ld, od, m, ld, od, m, n, VK_SCATTER_ZERO, t.rd);
            });
        vk_free(id);
    }
    vk_free(ld);
    vk_free(od);
}

/* vk_scatter_fill_many of three vectors (Int, Float, Int; fills -7, 2.5,
 * 9) at colliding indices over the segments L, then with a bad index:
 * each vector against the runtime's rule (the fill, then the scatter in
 * order), one record for all. */
static void test_scatter_fill_many(int64_t n, const std::vector<int32_t> &L)
{
    int64_t m = (int64_t)L.size();
    if (m == 0)
        return;
    std::vector<int64_t> off = offsets(L);
    Three t(n);
    std::vector<int32_t> idx(n);
    for (int64_t k = 0; k < m; k++)
        for (int64_t i = off[k]; i < off[k] + L[k]; i++)
            idx[i] = (int32_t)(rnd32() % (uint32_t)(L[k] / 4 + 1));
    int32_t *ld = up(L), *id = up(idx);
    int64_t *od = up(off);
    VkArg fill[3];
    memset(fill, 0, sizeof fill);
    fill[0].i = -7;
    fill[1].f = 2.5;
    fill[2].i = 9;
    std::vector<int32_t> wa(n, -7), wc(n, 9);
    std::vector<double> wb(n, 2.5);
    t.scatter_into(idx, L, off, wa, wb, wc);
    vk_memcpy_h2d(t.oa, t.a.data(), (size_t)n * 4); /* stale values under the fills */
    vk_memcpy_h2d(t.oc, t.a.data(), (size_t)n * 4);
    t.clear_record();
    int rc = vk_scatter_fill_many(3, t.es, fill, t.in, t.out, n, id, ld, od, m, ld, od, m, n, t.rd);
    VkPermFault got = t.record();
    CHECK(rc == 0 && got.err == ~0ull && t.results(wa, wb, wc),
          "scatter of three over fills at one index, n=%lld m=%lld: rc %d err %llx%s", (long long)n, (long long)m, rc,
          got.err, rc ? vk_last_error() : "");
    if (n > 0) /* a bad index in the last non-empty segment, first of it */
        t.check_bad_index(idx, L, off, "scatter of three over fills", [&](int32_t *bad) {
            return vk_scatter_fill_many(3, t.es, fill, t.in, t.out, n, bad, ld, od, m, ld, od, m, n, t.rd);
        });
    vk_free(ld);
    vk_free(od);
    vk_free(id);
}

/* vk_scatter_fill of Floats: NS source elements (a few, colliding, one
 * out of range when BAD) over a fill of 2.5 of ND elements, one segment;
 * the result against the runtime's rule, the bad one's record. */
static void test_scatter_fill(int64_t ns, int64_t nd, int bad)
{
    std::vector<double> x(ns ? ns : 1), want(nd, 2.5);
    std::vector<int32_t> idx(ns ? ns : 1);
    int64_t first = -1;
    for (int64_t i = 0; i < ns; i++) {
        x[i] = (double)i + 0.25;
        idx[i] = nd ? (int32_t)(rnd32() % (uint32_t)(nd < 8 ? nd : nd / 8)) : 0;
        if (bad && i == ns / 2)
            idx[i] = (int32_t)nd;
        if (idx[i] >= 0 && idx[i] < nd)
            want[idx[i]] = x[i];
        else if (first < 0)
            first = i;
    }
    double *xd = up(x), *out = (double *)vk_alloc((size_t)(nd ? nd : 1) * 8);
    int32_t *id = up(idx);
    VkPermFault none = { ~0ull, 0, 0, 0 }, got;
    VkPermFault *rd = (VkPermFault *)vk_alloc(sizeof(VkPermFault));
    vk_memcpy_h2d(rd, &none, sizeof none);
    VkArg fill;
    memset(&fill, 0, sizeof fill);
    fill.f = 2.5;
    int rc = vk_scatter_fill(8, &fill, xd, ns, id, NULL, NULL, NULL, 0, NULL, NULL, 0, out, nd, rd);
    vk_memcpy_d2h(&got, rd, sizeof got);
    if (first < 0)
        CHECK(rc == 0 && got.err == ~0ull && down(out, (size_t)nd) == want, "Float scatter over a fill, %lld into %lld: %s",
              (long long)ns, (long long)nd, rc ? vk_last_error() : "a wrong result or a record");
    else
        CHECK(rc == 0 && got.err == ((unsigned long long)first << 1) && got.j == nd && got.len == nd,
              "Float scatter over a fill, a bad index at %lld of %lld: err %llx j %lld len %lld", (long long)first,
              (long long)ns, got.err, got.j, got.len);
    vk_free(rd);
    vk_free(id);
    vk_free(out);
    vk_free(xd);
}

#ifndef VK_TEST_EMULATED
/* What each primitive queues, by the library's own tally (vk_queued),
 * against kernels/vk_count.h, the model's counts: N elements in the
 * segments L. */
#define COUNTED(what, want, call)                                                                                 \
    do {                                                                                                           \
        int64_t k0_, c0_, k1_, c1_;                                                                               \
        vk_queued(&k0_, &c0_);                                                                                     \
        int rc_ = (call);                                                                                          \
        vk_queued(&k1_, &c1_);                                                                                     \
        VkCount w_ = (want);                                                                                       \
        CHECK(rc_ == 0 && k1_ - k0_ == w_.k && c1_ - c0_ == w_.c,                                                  \
              "%s (n=%lld, m=%lld): %lld kernels and %lld clears queued, vk_count.h says %lld and %lld (rc %d %s)", \
              what, (long long)n, (long long)m, (long long)(k1_ - k0_), (long long)(c1_ - c0_), (long long)w_.k,   \
              (long long)w_.c, rc_, rc_ ? vk_last_error() : "");                                                   \
    } while (0)

static void test_counts(int64_t n, const std::vector<int32_t> &L)
{
    int64_t m = (int64_t)L.size();
    if (m == 0)
        return;
    std::vector<int64_t> off = offsets(L);
    int64_t longest = 0;
    for (int32_t l : L)
        longest = l > longest ? l : longest;
    std::vector<int32_t> xi(n), idx(n), fl(n);
    std::vector<double> xf(n);
    for (int64_t k = 0; k < m; k++)
        for (int64_t i = off[k]; i < off[k] + L[k]; i++) {
            xi[i] = (int32_t)(rnd32() % 1000);
            xf[i] = (double)xi[i];
            idx[i] = (int32_t)(rnd32() % (uint32_t)L[k]);
            fl[i] = rnd32() % 2;
        }
    int32_t *xid = up(xi), *idd = up(idx), *fld = up(fl), *ld = up(L);
    double *xfd = up(xf);
    int64_t *od = (int64_t *)vk_alloc((size_t)m * 8), *pos = (int64_t *)vk_alloc((size_t)m * 8);
    int32_t *oi = (int32_t *)vk_alloc((size_t)(n ? n : 1) * 4), *mi = (int32_t *)vk_alloc((size_t)m * 4);
    double *of = (double *)vk_alloc((size_t)(n ? n : 1) * 8);
    VkShape *sh = (VkShape *)vk_alloc(sizeof(VkShape));
    VkPermFault *rec = (VkPermFault *)vk_alloc(sizeof(VkPermFault));
    unsigned long long *fw = (unsigned long long *)vk_alloc(8);
    int64_t total = 0, cnt = 0;
    COUNTED("seg_offsets", vk_count_seg_offsets(m, 1), vk_seg_offsets(ld, m, od, &total));
    COUNTED("seg_shape", vk_count_seg_shape(m), vk_seg_shape(ld, m, od, sh));
    COUNTED("reduce", vk_count_reduce(n), vk_reduce(VS_IADD, xid, n, oi));
    COUNTED("float reduce", vk_count_reduce(n), vk_reduce(VS_FADD, xfd, n, of));
    COUNTED("scan", vk_count_scan(n), vk_scan(VS_IADD, xid, n, oi));
    COUNTED("seg_reduce", vk_count_fold(n, m, longest, 1, 0), vk_seg_reduce(VS_IMAX, xid, ld, od, m, n, longest, mi));
    COUNTED("seg_scan", vk_count_fold(n, m, longest, 1, 1), vk_seg_scan(VS_IADD, xid, ld, od, m, n, longest, oi));
    COUNTED("select", vk_count_select(n), vk_select_flagged(VS_INT, xid, fld, n, oi, &cnt));
    if (n < 1000000) {
        COUNTED("seg_rank", vk_count_seg_rank(n, m, 1, 0), vk_seg_rank(0, VS_INT, xid, ld, od, m, n, oi));
        COUNTED("float seg_rank", vk_count_seg_rank(n, m, 1, 1), vk_seg_rank(1, VS_FLOAT, xfd, ld, od, m, n, oi));
        COUNTED("rank", vk_count_seg_rank(n, 1, 0, 0), vk_seg_rank(0, VS_INT, xid, NULL, NULL, 1, n, oi));
    }
    /* the stamps grown and the error word made first (clears not in the counts) */
    CHECK(vk_scatter(4, xid, n, idd, NULL, ld, od, m, ld, od, m, oi, n, 0, rec) == 0, "%s", vk_last_error());
    for (int mode = 0; mode < 4; mode++) {
        COUNTED("segmented scatter", vk_count_scatter(n, m, 1, n, mode, 1, 1),
                vk_scatter(4, xid, n, idd, fld, ld, od, m, ld, od, m, oi, n, mode, rec));
        COUNTED("scatter", vk_count_scatter(n, 1, 0, n, mode, 0, 0),
                vk_scatter(8, xfd, n, idd, NULL, NULL, NULL, 0, NULL, NULL, 0, of, n, mode, NULL));
    }
    VkArg fill;
    memset(&fill, 0, sizeof fill);
    COUNTED("segmented scatter over a fill", vk_count_scatter_fill(n, m, 1, n, 1, 1),
            vk_scatter_fill(4, &fill, xid, n, idd, fld, ld, od, m, ld, od, m, oi, n, rec));
    COUNTED("scatter of a few over a fill", vk_count_scatter_fill(n < 1000 ? n : 1000, 1, 0, n, 0, 0),
            vk_scatter_fill(8, &fill, xfd, n < 1000 ? n : 1000, idd, NULL, NULL, NULL, 0, NULL, NULL, 0, of, n, NULL));
    {
        const size_t es2[2] = { 4, 8 };
        const void *in2[2] = { xid, xfd };
        void *out2[2] = { oi, of };
        for (int mode = 0; mode < 4; mode++)
            COUNTED("segmented scatter of two at one index", vk_count_scatter_many(2, n, m, 1, n, mode, 1),
                    vk_scatter_many(2, es2, in2, out2, n, idd, ld, od, m, ld, od, m, n, mode, rec));
        VkArg fills[2];
        memset(fills, 0, sizeof fills);
        COUNTED("segmented scatter of two over fills at one index", vk_count_scatter_fill_many(2, n, m, 1, n, 1),
                vk_scatter_fill_many(2, es2, fills, in2, out2, n, idd, ld, od, m, ld, od, m, n, rec));
        COUNTED("scatter of two over fills, a few", vk_count_scatter_fill_many(2, n < 900 ? n : 900, 1, 0, n, 0),
                vk_scatter_fill_many(2, es2, fills, in2, out2, n < 900 ? n : 900, idd, NULL, NULL, 0, NULL, NULL, 0, n,
                                     NULL));
        COUNTED("scatter of one", vk_count_scatter_many(1, n, 1, 0, n, VK_SCATTER_ZERO, 0),
                vk_scatter_many(1, es2, in2, out2, n, idd, NULL, NULL, 0, NULL, NULL, 0, n, VK_SCATTER_ZERO, NULL));
    }
    COUNTED("segmented gather", vk_count_gather(n, m, 1, 1),
            vk_gather(4, xid, n, idd, NULL, ld, od, m, ld, od, m, oi, n, rec));
    COUNTED("gather", vk_count_gather(n, 1, 0, 0), vk_gather(8, xfd, n, idd, fld, NULL, NULL, 0, NULL, NULL, 0, of, n, NULL));
    VkArg a = vec_arg(xid), one = vec_arg(NULL);
    one.i = 1;
    VkArg two[2] = { a, one };
    COUNTED("map", vk_count_one(n), vk_map(VK_OP_ADD, 0, 0, 0, two, 2, n, oi, NULL));
    COUNTED("dist", vk_count_one(n), vk_dist(4, &one, od, m, n, oi));
    COUNTED("index", vk_count_one(n), vk_index(&one, &one, od, m, n, oi));
    VkArg z = vec_arg(NULL);
    vk_memset0(fw, 8);
    COUNTED("seg_positions", vk_count_one(m), vk_seg_positions(&z, ld, od, m, pos, fw));
    COUNTED("elems_get", vk_count_one(m), vk_elems_get(4, xid, pos, m, mi));
    COUNTED("elems_put", vk_count_one(m), vk_elems_put(4, oi, pos, m, mi));
    vk_free(xid); vk_free(idd); vk_free(fld); vk_free(ld); vk_free(xfd); vk_free(od); vk_free(pos);
    vk_free(oi); vk_free(mi); vk_free(of); vk_free(sh); vk_free(rec); vk_free(fw);
}
#endif

static void test_dist_index(int64_t n, const std::vector<int32_t> &L)
{
    int64_t m = (int64_t)L.size();
    if (m == 0)
        return;
    std::vector<int64_t> off = offsets(L);
    std::vector<int32_t> vi(m), st(m);
    std::vector<double> vf(m);
    for (int64_t k = 0; k < m; k++) {
        vi[k] = (int32_t)rnd32();
        st[k] = (int32_t)rnd32() % 1000;
        vf[k] = (double)(int32_t)rnd32() / 3.0;
    }
    int64_t *offd = up(off);
    int32_t *vid = up(vi), *std_ = up(st);
    double *vfd = up(vf);
    int32_t *oi = (int32_t *)vk_alloc((size_t)(n ? n : 1) * 4);
    double *of = (double *)vk_alloc((size_t)(n ? n : 1) * 8);
    VkArg a = vec_arg(vid), b = vec_arg(vfd), s = vec_arg(std_);
    int rc = vk_dist(4, &a, offd, m, n, oi) | vk_dist(8, &b, offd, m, n, of);
    std::vector<int32_t> gi = down(oi, (size_t)n);
    std::vector<double> gf = down(of, (size_t)n);
    int64_t bad = -1;
    for (int64_t k = 0, i = 0; k < m && bad < 0; k++)
        for (int32_t j = 0; j < L[k]; j++, i++)
            if (gi[i] != vi[k] || gf[i] != vf[k])
                bad = i;
    CHECK(rc == 0 && bad < 0, "vk_dist, n %lld, %lld segments: element %lld", (long long)n, (long long)m,
          (long long)bad);
    rc = vk_index(&a, &s, offd, m, n, oi);
    gi = down(oi, (size_t)n);
    bad = -1;
    for (int64_t k = 0, i = 0; k < m && bad < 0; k++)
        for (int32_t j = 0; j < L[k]; j++, i++)
            if (gi[i] != wrap((int64_t)vi[k] + (int64_t)j * st[k]))
                bad = i;
    CHECK(rc == 0 && bad < 0, "vk_index, n %lld, %lld segments: element %lld", (long long)n, (long long)m,
          (long long)bad);
    /* one segment, scalar arguments */
    VkArg c = vec_arg(NULL), d = vec_arg(NULL);
    c.i = -5;
    d.i = 3;
    rc = vk_index(&c, &d, NULL, 1, n, oi);
    gi = down(oi, (size_t)n);
    bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++)
        if (gi[i] != wrap(-5 + 3 * i))
            bad = i;
    CHECK(rc == 0 && bad < 0, "vk_index, one segment of %lld: element %lld", (long long)n, (long long)bad);
    vk_free(offd);
    vk_free(vid);
    vk_free(std_);
    vk_free(vfd);
    vk_free(oi);
    vk_free(of);
}

/* EXTRACT's and REPLACE's positions: every index good, then one planted
 * outside its segment (the least bad segment in the fault record, its
 * position 0). An empty segment holds no index. */
static void test_positions(const std::vector<int32_t> &L)
{
    int64_t m = (int64_t)L.size();
    if (m == 0)
        return;
    std::vector<int64_t> off = offsets(L);
    std::vector<int32_t> ix(m);
    int64_t first_empty = -1;
    for (int64_t k = 0; k < m; k++) {
        ix[k] = L[k] > 0 ? (int32_t)(rnd32() % (uint32_t)L[k]) : 0;
        if (L[k] <= 0 && first_empty < 0)
            first_empty = k;
    }
    int32_t *Ld = up(L);
    int64_t *offd = up(off);
    int64_t *pd = (int64_t *)vk_alloc((size_t)m * 8);
    unsigned long long *fd = (unsigned long long *)vk_alloc(8), none = VK_NO_FAULT, f = 0;
    for (int planted = 0; planted < 2; planted++) {
        int64_t k0 = m / 2;
        if (planted)
            ix[k0] = L[k0] > 0 ? L[k0] : -1;
        int32_t *ixd = up(ix);
        VkArg a = vec_arg(ixd);
        vk_memcpy_h2d(fd, &none, 8);
        int rc = vk_seg_positions(&a, Ld, offd, m, pd, fd);
        std::vector<int64_t> got = down(pd, (size_t)m);
        vk_memcpy_d2h(&f, fd, 8);
        int64_t want = planted ? (first_empty >= 0 && first_empty < k0 ? first_empty : k0) : first_empty;
        int64_t bad = -1;
        for (int64_t k = 0; k < m && bad < 0; k++) {
            bool out = L[k] <= 0 || ix[k] < 0 || ix[k] >= L[k];
            if (got[k] != (out ? 0 : off[k] + ix[k]))
                bad = k;
        }
        CHECK(rc == 0 && bad < 0, "vk_seg_positions, %lld segments, planted %d: position %lld", (long long)m, planted,
              (long long)bad);
        CHECK(f == (want < 0 ? VK_NO_FAULT : vk_fault_pack(want, 1)),
              "vk_seg_positions, %lld segments, planted %d: fault record %llx, want segment %lld", (long long)m,
              planted, f, (long long)want);
        vk_free(ixd);
    }
    vk_free(Ld);
    vk_free(offd);
    vk_free(pd);
    vk_free(fd);
}

int main(int argc, char **argv)
{
#ifndef VK_TEST_EMULATED
    if (argc > 1 && strcmp(argv[1], "--bandwidth") == 0)
        return vk_device_count() > 0 && vk_init(0) == 0 ? bandwidth() | expr_bandwidth() | launch_costs() : 1;
    if (argc > 1 && strcmp(argv[1], "--plant-oob") == 0)
        return vk_device_count() > 0 && vk_init(0) == 0 ? plant_oob() : 1;
#else
    (void)argc;
    (void)argv;
#endif
    if (vk_device_count() == 0) {
        printf("no CUDA device: GPU tests skipped\n");
        printf("test_kernels: 0 passed, 0 failed\n");
        return 0;
    }
    if (vk_init(0) != 0) {
        printf("vk_init: %s\n", vk_last_error());
        printf("test_kernels: 0 passed, 1 failed\n");
        return 1;
    }
    printf("device: %s\n", vk_device_name());
#ifndef VK_TEST_EMULATED
    test_pool();
    test_d2h_many();
#endif
#if defined(VK_TEST_HOST) && defined(__SANITIZE_ADDRESS__)
    static const int64_t sizes[] = { 0, 1, 1000 }; /* every thread a fiber, every access checked */
#elif defined(VK_TEST_HOST)
    static const int64_t sizes[] = { 0, 1, 1000, 20011 }; /* every thread a fiber: the shapes, not the sizes */
#elif !defined(VK_TEST_EMULATED)
    static const int64_t sizes[] = { 0, 1, 1000, 100003, 3000000 };
#else
    static const int64_t sizes[] = { 0, 1, 1000, 100003 }; /* host loops: the shapes, not the sizes, matter */
#endif
    static const int64_t avgs[] = { 1, 4, 40, 5000 };
    for (int64_t n : sizes)
        for (int64_t avg : avgs) {
#ifdef VK_TEST_HOST
            if (n > 1000 && avg < 40) /* thousands of segments: 1000 elements have the shape */
                continue;
#endif
            std::vector<int32_t> L = segments(n, avg);
            test_int_ops(VS_INT, n, L);
            test_int_ops(VS_BOOL, n, L);
            test_float_ops(n, L, 0);
            test_float_ops(n, L, 1);
            test_dist_index(n, L);
            test_seg_permutes(n, L);
            test_scatter_many(n, L);
            test_scatter_fill_many(n, L);
            if (avg == 1) {
                test_scatter_fill(n < 1000 ? n : 1000, n, 0);
                test_scatter_fill(n < 1000 ? n : 1000, n, 1);
            }
#ifndef VK_TEST_EMULATED
            test_counts(n, L);
#endif
            test_seg_shape(L);
            test_positions(L);
            if (n < 1000000) {
                test_rank(0, VS_INT, n, L);
                test_rank(1, VS_INT, n, L);
                test_rank(0, VS_FLOAT, n, L);
                test_rank(1, VS_FLOAT, n, L);
            }
        }
#ifndef VK_TEST_EMULATED
    for (int64_t n : sizes) {
        test_select(n);
        test_permutes(n);
    }
    /* about VK_SELECT_ONE_BLOCK: one block's tiles up to it, DeviceSelect past it */
    for (int64_t n : { (int64_t)5000, (int64_t)VK_SELECT_ONE_BLOCK, (int64_t)VK_SELECT_ONE_BLOCK + 1 })
        test_select(n);
#endif
    for (int64_t n : sizes) {
        test_map_int(n);
        test_map_float(n);
        test_expr(n);
        test_expr_long(n, 20);
        test_expr_long(n, 16);
    }
#if defined(VK_TEST_HOST) && !defined(__SANITIZE_ADDRESS__)
    /* the host's grid (2 SMs, 32 blocks of 256) evaluates chains four
     * elements a thread at once only past 4 * 8192 elements; then every
     * chain one at a time (vk_set_expr_four_nodes(0)) */
    test_expr(70001);
    test_expr_long(70001, 20);
    vk_set_expr_four_nodes(0);
    test_expr(70001);
    test_expr_long(70001, 16);
    vk_set_expr_four_nodes(16);
#endif
    /* unsegmented scans about VK_SCAN_ONE_BLOCK (one block, one chunk, up
     * to it; chunked past it), every operator and type */
    for (int64_t n : { (int64_t)1500, (int64_t)5000, (int64_t)VK_SCAN_ONE_BLOCK, (int64_t)VK_SCAN_ONE_BLOCK + 1 }) {
        std::vector<int32_t> one(1, (int32_t)n);
        test_int_ops(VS_INT, n, one);
        test_int_ops(VS_BOOL, n, one);
        test_float_ops(n, one, 0);
    }
    /* descriptors about VK_SHAPE_ONE_BLOCK segments (one block's tiles up to it, DeviceScan past it) */
    for (int64_t m : { (int64_t)3000, (int64_t)VK_SHAPE_ONE_BLOCK, (int64_t)VK_SHAPE_ONE_BLOCK + 1 }) {
        std::vector<int32_t> L((size_t)m);
        for (auto &l : L)
            l = (int32_t)(rnd32() % 9);
        test_seg_shape(L);
    }
    test_seg_shape({ 5, -3, 0, 7 }); /* negative lengths (a descriptor MAKE_SEGDES refuses later) */
    test_seg_shape({ -1 });
    test_rand();
    printf("test_kernels: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

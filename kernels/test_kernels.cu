// kernels/test_kernels.cu — GPU unit tests of the primitives of
// kernels/kernels.h against host computations written here, on random and
// edge-case inputs. Ends with "N passed, N failed"; exit status 1 on a
// failure. Without a CUDA device it says so and passes with 0 tests.
#include "kernels/kernels.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>

static int passed, failed;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (cond) {                                                             \
            passed++;                                                           \
        } else {                                                                \
            failed++;                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
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

template <class T> static T identity(VkOp op, VsElem ty)
{
    switch (op) {
    case VK_ADD: case VK_OR: case VK_XOR: return (T)0;
    case VK_MUL: return (T)1;
    case VK_MAX: return ty == VS_FLOAT ? (T)-FLOAT_BIG : (T)INT32_MIN;
    case VK_MIN: return ty == VS_FLOAT ? (T)FLOAT_BIG : (T)INT32_MAX;
    case VK_AND: return ty == VS_BOOL ? (T)1 : (T)-1;
    }
    return (T)0;
}

static int32_t combine_i(VkOp op, VsElem ty, int32_t a, int32_t v)
{
    if (ty == VS_BOOL) {
        switch (op) {
        case VK_AND: return a && v;
        case VK_OR: return a || v;
        default: return (a != 0) != (v != 0);
        }
    }
    switch (op) {
    case VK_ADD: return (int32_t)((uint32_t)a + (uint32_t)v);
    case VK_MUL: return (int32_t)((uint32_t)a * (uint32_t)v);
    case VK_MAX: return a > v ? a : v;
    case VK_MIN: return a < v ? a : v;
    case VK_AND: return a & v;
    case VK_OR: return a | v;
    default: return a ^ v;
    }
}

static double combine_f(VkOp op, double a, double v)
{
    switch (op) {
    case VK_ADD: return a + v;
    case VK_MUL: return a * v;
    case VK_MAX: return a > v ? a : v;
    default: return a < v ? a : v;
    }
}

static bool close_enough(double a, double b, double rel)
{
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b);
    if (a == b)
        return true;
    return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b));
}

static const char *op_name(VkOp op)
{
    static const char *n[] = { "ADD", "MUL", "MAX", "MIN", "AND", "OR", "XOR" };
    return n[op];
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
    static const VkOp all[] = { VK_ADD, VK_MUL, VK_MAX, VK_MIN, VK_AND, VK_OR, VK_XOR };
    std::vector<int32_t> x(n);
    for (auto &v : x)
        v = ty == VS_BOOL ? (int32_t)(rnd32() % 2) : (int32_t)(rnd32() % 2001) - 1000;
    std::vector<int64_t> off = offsets(L);
    int64_t m = (int64_t)L.size();
    int32_t *xd = up(x), *ld = up(L);
    int64_t *od = up(off);
    int32_t *out = (int32_t *)vk_alloc((size_t)(n + 1) * 4), *red = (int32_t *)vk_alloc((size_t)(m + 1) * 4);
    for (VkOp op : all) {
        if (ty == VS_BOOL && (op == VK_ADD || op == VK_MUL || op == VK_MAX || op == VK_MIN))
            continue;
        // unsegmented
        int32_t acc = identity<int32_t>(op, ty);
        std::vector<int32_t> scan(n);
        for (int64_t i = 0; i < n; i++) {
            scan[i] = acc;
            acc = combine_i(op, ty, acc, x[i]);
        }
        CHECK(vk_reduce(op, ty, xd, n, red) == 0, "%s", vk_last_error());
        CHECK(down(red, 1)[0] == acc, "reduce %s n=%lld", op_name(op), (long long)n);
        CHECK(vk_scan(op, ty, xd, n, out) == 0, "%s", vk_last_error());
        CHECK(down(out, n) == scan, "scan %s n=%lld", op_name(op), (long long)n);
        // segmented
        std::vector<int32_t> sred(m), sscan(n);
        for (int64_t k = 0; k < m; k++) {
            int32_t a = identity<int32_t>(op, ty);
            for (int64_t i = off[k]; i < off[k] + L[k]; i++) {
                sscan[i] = a;
                a = combine_i(op, ty, a, x[i]);
            }
            sred[k] = a;
        }
        int64_t lg = 0;
        for (int64_t k = 0; k < m; k++)
            lg = L[k] > lg ? L[k] : lg;
        for (int st = VK_STRAT_AUTO; st <= VK_STRAT_CHUNK; st++) {
            vk_set_strategy((VkStrategy)st);
            CHECK(vk_seg_reduce(op, ty, xd, ld, od, m, n, lg, red) == 0, "%s", vk_last_error());
            CHECK(down(red, m) == sred, "seg_reduce %s m=%lld strategy %d", op_name(op), (long long)m, st);
            CHECK(vk_seg_scan(op, ty, xd, ld, od, m, n, st == VK_STRAT_AUTO ? -1 : lg, out) == 0, "%s",
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

static void test_float_ops(int64_t n, const std::vector<int32_t> &L, int exact)
{
    static const VkOp all[] = { VK_ADD, VK_MUL, VK_MAX, VK_MIN };
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
    double rel = exact ? 0.0 : 1e-12;
    for (VkOp op : all) {
        bool assoc_exact = op == VK_MAX || op == VK_MIN;
        double r = assoc_exact ? 0.0 : rel;
        double acc = identity<double>(op, VS_FLOAT);
        std::vector<double> scan(n);
        for (int64_t i = 0; i < n; i++) {
            scan[i] = acc;
            acc = combine_f(op, acc, x[i]);
        }
        CHECK(vk_reduce(op, VS_FLOAT, xd, n, red) == 0, "%s", vk_last_error());
        double got = down(red, 1)[0];
        CHECK(close_enough(got, acc, r), "float reduce %s n=%lld: %.17g vs %.17g", op_name(op), (long long)n, got, acc);
        CHECK(vk_scan(op, VS_FLOAT, xd, n, out) == 0, "%s", vk_last_error());
        std::vector<double> g = down(out, n);
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (!close_enough(g[i], scan[i], r))
                bad = i;
        CHECK(bad < 0, "float scan %s n=%lld at %lld", op_name(op), (long long)n, (long long)bad);
        std::vector<double> sred(m), sscan(n);
        for (int64_t k = 0; k < m; k++) {
            double a = identity<double>(op, VS_FLOAT);
            for (int64_t i = off[k]; i < off[k] + L[k]; i++) {
                sscan[i] = a;
                a = combine_f(op, a, x[i]);
            }
            sred[k] = a;
        }
        CHECK(vk_seg_reduce(op, VS_FLOAT, xd, ld, od, m, n, -1, red) == 0, "%s", vk_last_error());
        g = down(red, m);
        bad = -1;
        for (int64_t k = 0; k < m && bad < 0; k++)
            if (!close_enough(g[k], sred[k], r))
                bad = k;
        CHECK(bad < 0, "float seg_reduce %s at %lld", op_name(op), (long long)bad);
        CHECK(vk_seg_scan(op, VS_FLOAT, xd, ld, od, m, n, -1, out) == 0, "%s", vk_last_error());
        g = down(out, n);
        bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (!close_enough(g[i], sscan[i], r))
                bad = i;
        CHECK(bad < 0, "float seg_scan %s at %lld", op_name(op), (long long)bad);
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
    CHECK(vk_scatter(4, xd, n, pd, NULL, NULL, NULL, 0, NULL, NULL, 0, od, n, 1) == 0, "%s", vk_last_error());
    CHECK(down(od, n) == scat, "scatter n=%lld", (long long)n);
    CHECK(vk_gather(4, xd, n, pd, NULL, NULL, NULL, 0, NULL, NULL, 0, od, n) == 0, "%s", vk_last_error());
    CHECK(down(od, n) == gath, "gather n=%lld", (long long)n);
    if (n > 0) {
        std::vector<int32_t> bad = perm;
        bad[n / 2] = (int32_t)n;  // out of range
        int32_t *bd = up(bad);
        CHECK(vk_scatter(4, xd, n, bd, NULL, NULL, NULL, 0, NULL, NULL, 0, od, n, 1) != 0,
              "scatter accepted an index out of range");
        vk_free(bd);
    }
    vk_free(xd);
    vk_free(pd);
    vk_free(od);
}

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
            std::vector<int32_t> want(n), bound(n), wantmod(n);
            for (int64_t i = 0; i < n; i++) {
                want[i] = host_next(r2, &k2);
                bound[i] = (int32_t)(rnd32() % 1000) + 1;
                wantmod[i] = want[i] % bound[i];
            }
            int32_t *od = (int32_t *)vk_alloc((size_t)n * 4), *bd = up(bound);
            CHECK(vk_rand(ring, k, n, od) == 0, "%s", vk_last_error());
            CHECK(down(od, n) == want, "rand offset %lld n=%lld", (long long)off, (long long)n);
            CHECK(vk_rand_mod(ring, k, n, bd, od) == 0, "%s", vk_last_error());
            CHECK(down(od, n) == wantmod, "rand_mod offset %lld n=%lld", (long long)off, (long long)n);
            vk_free(od);
            vk_free(bd);
        }
    }
}

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

/* The device's copy bandwidth, the yardstick of the bandwidth targets:
 * device-to-device copies of 1 GiB, bytes read plus written, the median of
 * 9 after a warm-up, timed with events. */
static int bandwidth()
{
    const size_t bytes = (size_t)1 << 30;
    void *a = vk_alloc(bytes), *b = vk_alloc(bytes);
    if (!a || !b || vk_memset0(a, bytes) != 0) {
        printf("bandwidth: %s\n", vk_last_error());
        return 1;
    }
    cudaEvent_t t0, t1;
    cudaEventCreate(&t0);
    cudaEventCreate(&t1);
    std::vector<double> gbs;
    for (int r = 0; r < 10; r++) {
        cudaEventRecord(t0, 0);
        vk_memcpy_d2d(b, a, bytes);
        cudaEventRecord(t1, 0);
        cudaEventSynchronize(t1);
        float ms = 0;
        cudaEventElapsedTime(&ms, t0, t1);
        if (r > 0)
            gbs.push_back(2.0 * (double)bytes / (ms * 1e-3) / 1e9);
    }
    std::sort(gbs.begin(), gbs.end());
    printf("device: %s\ncopy bandwidth: %.1f GB/s (device to device, bytes read + written, median of %zu)\n",
           vk_device_name(), gbs[gbs.size() / 2], gbs.size());
    vk_free(a);
    vk_free(b);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--bandwidth") == 0)
        return vk_device_count() > 0 && vk_init(0) == 0 ? bandwidth() : 1;
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
    test_pool();
    static const int64_t sizes[] = { 0, 1, 1000, 100003, 3000000 };
    static const int64_t avgs[] = { 1, 4, 40, 5000 };
    for (int64_t n : sizes)
        for (int64_t avg : avgs) {
            std::vector<int32_t> L = segments(n, avg);
            test_int_ops(VS_INT, n, L);
            test_int_ops(VS_BOOL, n, L);
            test_float_ops(n, L, 0);
            test_float_ops(n, L, 1);
            if (n < 1000000) {
                test_rank(0, VS_INT, n, L);
                test_rank(1, VS_INT, n, L);
                test_rank(0, VS_FLOAT, n, L);
                test_rank(1, VS_FLOAT, n, L);
            }
        }
    for (int64_t n : sizes) {
        test_select(n);
        test_permutes(n);
    }
    test_rand();
    printf("test_kernels: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

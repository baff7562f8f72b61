/* tests/unit/test_fsum_exact.c — the test that lets a float sum run in
 * parallel (vcode/semantics.h vs_fsum_exact_note / _ok / _lim): runs of
 * terms whose answer is known, and the promise itself: where every run
 * passes, sums in other orders and groupings give the left-to-right
 * fold's bits. */
#include "check.h"
#include "vcode/semantics.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* One run of N terms, noted in four lanes as the backends do. */
static int run_ok(const double *x, int n, int64_t runs)
{
    double a[4] = { 0 }, e[4] = { 0 };
    for (int i = 0; i < n; i++)
        vs_fsum_exact_note(x[i], &a[i % 4], &e[i % 4]);
    return vs_fsum_exact_ok((a[0] + a[1]) + (a[2] + a[3]), (e[0] + e[1]) + (e[2] + e[3]), vs_fsum_exact_lim(runs));
}

static void test_runs(void)
{
    double ints[] = { 1, -2, 3, 40000, -0.0, 0, 7, -123456789 };
    CHECK(run_ok(ints, 8, 1));
    CHECK(run_ok(ints, 8, 1000));
    double half[] = { 1, 2, 0.5, 3 };
    CHECK(!run_ok(half, 4, 1));
    double tiny[] = { 1, 2, 3, 4.9406564584124654e-324 }; /* the smallest subnormal */
    CHECK(!run_ok(tiny, 4, 1));
    double nearint[] = { 1, 2, 3, 4503599627370495.5 };  /* 2^52 - 0.5 */
    CHECK(!run_ok(nearint, 4, 1));
    double nan_[] = { 1, NAN, 3, 4 };
    CHECK(!run_ok(nan_, 4, 1));
    double inf_[] = { 1, 2, -INFINITY, 4 };
    CHECK(!run_ok(inf_, 4, 1));
    /* a large integer: exact as a term, but over the magnitude bound */
    double big[] = { 1, 1152921504606846976.0 /* 2^60 */, -1152921504606846976.0, 2 };
    CHECK(!run_ok(big, 4, 1));
    /* the bound: 2^52 / runs, strictly below */
    double edge[] = { 1048576.0 /* 2^20 */ };
    CHECK(run_ok(edge, 1, 4294967295LL));            /* lim = 2^52 / (2^32 - 1) > 2^20 */
    CHECK(!run_ok(edge, 1, 4294967296LL));           /* lim = 2^20: not below it */
    CHECK(!run_ok(edge, 1, 8589934592LL));
    /* a run summing past the bound through many small terms */
    static double many[4096];
    for (int i = 0; i < 4096; i++)
        many[i] = i % 2 ? -1099511627776.0 : 1099511627776.0; /* +-2^40: sum 0, magnitudes 2^52 */
    CHECK(!run_ok(many, 4096, 1));
    CHECK(run_ok(many, 2048, 1));
}

/* Where every run passes, the order cannot matter: the left-to-right fold
 * equals sums by chunks, in reverse, and by pairs, bit for bit. */
static void test_orders(void)
{
    enum { N = 10000, CH = 512 };
    static double x[N];
    int passed = 0, failed = 0;
    srand(7);
    for (int trial = 0; trial < 20; trial++) {
        double scale = ldexp(1.0, 10 + 2 * trial); /* terms up to 2^48 */
        for (int i = 0; i < N; i++)
            x[i] = floor(((double)rand() / RAND_MAX - 0.5) * scale);
        int64_t runs = (N + CH - 1) / CH;
        int pass = 1;
        for (int c = 0; c < runs; c++)
            pass &= run_ok(x + c * CH, N - c * CH < CH ? N - c * CH : CH, runs);
        double fold = 0.0, rev = 0.0, chunks = 0.0, pairs = 0.0;
        for (int i = 0; i < N; i++)
            fold += x[i];
        for (int i = N - 1; i >= 0; i--)
            rev += x[i];
        for (int c = 0; c < runs; c++) {
            double s = 0.0;
            for (int i = c * CH; i < N && i < (c + 1) * CH; i++)
                s += x[i];
            chunks += s;
        }
        for (int i = 0; i < N; i += 2)
            pairs += x[i] + x[i + 1];
        passed += pass;
        failed += !pass;
        if (pass) {
            CHECK(fold == rev && fold == chunks && fold == pairs);
        } else {
            /* every term is an integer: a run failed by its magnitudes */
            long double most = 0;
            for (int c = 0; c < runs; c++) {
                long double m = 0;
                for (int i = c * CH; i < N && i < (c + 1) * CH; i++)
                    m += fabsl((long double)x[i]);
                most = m > most ? m : most;
            }
            CHECK(most >= (long double)vs_fsum_exact_lim(runs));
        }
    }
    CHECK(passed >= 10 && failed >= 3); /* both sides seen */
}

int main(void)
{
    test_runs();
    test_orders();
    return check_report("fsum_exact");
}

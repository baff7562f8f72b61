/* runtime/fused/bound_rules.h — rule 1 of check_bound.h on scalars: how far a
 * float sum or product of n terms, combined in any tree order, may lie
 * from the left-to-right one. Header-only, C and C++, so that the kernel
 * tests (kernels/test_kernels.cu) compare the primitives' float scans and
 * reductions by the same bounds as --check. */
#ifndef RUNTIME_FUSED_BOUND_RULES_H
#define RUNTIME_FUSED_BOUND_RULES_H

#include <math.h>
#include <stdint.h>

#define CB_U 0x1p-53        /* the unit roundoff */
#define CB_ETA 0x1p-1074    /* the smallest subnormal */

/* gamma(k) = k u / (1 - k u); +inf once k u >= 1/2. */
static inline double cb_gamma(int64_t k)
{
    if (k <= 0)
        return 0.0;
    double ku = (double)k * CB_U;
    return ku >= 0.5 ? INFINITY : ku / (1.0 - ku);
}

/* A bound as computed, made safe: NaN -> +inf, never negative. */
static inline double cb_fin(double e)
{
    if (isnan(e))
        return INFINITY;
    return e < 0 ? 0.0 : e;
}

/* The sum of N terms, SUM_ABS = sum|x|, SUM_ERR = sum E_i. */
static inline double cb_sum_bound(int64_t n, double sum_abs, double sum_err)
{
    if (n <= 2 && sum_err == 0.0)
        return 0.0;
    double g = cb_gamma(n - 1);
    return cb_fin((g * (2.0 * sum_abs + sum_err) + sum_err) * (1.0 + cb_gamma(n + 2)));
}

/* The product of N terms, P = prod|x|, D its input part. */
static inline double cb_prod_bound(int64_t n, double p, double d)
{
    if (n <= 2 && d == 0.0)
        return 0.0;
    double g = cb_gamma(n - 1);
    return cb_fin((g * (2.0 * p + d) + d) * (1.0 + cb_gamma(n + 2)) + 4.0 * (double)n * CB_ETA);
}

#endif

/* Memory-bandwidth floor for the timed regions of dotp_* and muladd_*.
 *
 *   floor dotp|muladd N [THREADS [REPS]]
 *
 * Times a plain OpenMP loop (THREADS threads, default 2; static schedule)
 * over arrays of the benchmark's size and element types, once as a
 * discarded warm-up and then REPS times (default 5), and prints the median:
 *
 *   dotp:   s = sum x[i]*y[i] over two arrays of N doubles
 *           (the timed region of dotp_50m: `* FLOAT` then `+_REDUCE FLOAT`);
 *           bytes moved = 2 * N * 8.
 *   muladd: r[i] = a[i]*b[i] + c[i] over N VCODE INTs (C int, 32 bits;
 *           the timed region of muladd_50m: `* INT` then `+ INT`, the result a
 *           new vector); bytes moved = 4 * N * 4 (three arrays read, one
 *           written; the write-allocate read of r is not counted).
 *
 * The main line uses arrays that were allocated and touched (in parallel,
 * with the same static schedule) before timing: that is the floor.  muladd
 * also prints a second line, "muladd-fresh", where r is malloc'ed afresh
 * for every repetition, so its page faults fall inside the timed loop, as
 * they can for an interpreter that allocates the result vector.
 *
 * Output, one line per measurement (bench.py reads `seconds=`):
 *   floor KIND n=N threads=T bytes=B seconds=S GB/s=G reps=R check=C
 * Compile: cc -O2 -fopenmp floor.c -o floor
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "floor: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

static void report(const char *kind, long n, int threads, double bytes, double *t,
                   int reps, double check)
{
    double s = median(t, reps);
    printf("floor %s n=%ld threads=%d bytes=%.0f seconds=%.6f GB/s=%.2f reps=%d check=%.17g\n",
           kind, n, threads, bytes, s, bytes / s / 1e9, reps, check);
}

static double dotp(long n, int threads, int reps)
{
    double *x = xmalloc(n * sizeof *x), *y = xmalloc(n * sizeof *y);
    double t[64], s = 0;
    long i;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (i = 0; i < n; i++) {          /* first touch by the thread that reads it */
        x[i] = (double)(i % 100);
        y[i] = (double)((i * 7) % 100);
    }
    for (int r = -1; r < reps; r++) {  /* r = -1: warm-up */
        double t0 = omp_get_wtime();
        s = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+:s)
        for (i = 0; i < n; i++)
            s += x[i] * y[i];
        double dt = omp_get_wtime() - t0;
        if (r >= 0)
            t[r] = dt;
    }
    report("dotp", n, threads, 2.0 * n * sizeof(double), t, reps, s);
    free(x);
    free(y);
    return s;
}

static void muladd_loop(int *restrict r, const int *restrict a, const int *restrict b,
                        const int *restrict c, long n, int threads)
{
    long i;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (i = 0; i < n; i++)
        r[i] = a[i] * b[i] + c[i];
}

static void muladd(long n, int threads, int reps)
{
    int *a = xmalloc(n * sizeof *a), *b = xmalloc(n * sizeof *b);
    int *c = xmalloc(n * sizeof *c), *r = xmalloc(n * sizeof *r);
    double t[64];
    long i, sum;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (i = 0; i < n; i++) {
        a[i] = (int)(i % 100);
        b[i] = (int)((i * 7) % 100);
        c[i] = (int)((i * 13) % 100);
        r[i] = 0;
    }
    for (int k = -1; k < reps; k++) {
        double t0 = omp_get_wtime();
        muladd_loop(r, a, b, c, n, threads);
        double dt = omp_get_wtime() - t0;
        if (k >= 0)
            t[k] = dt;
    }
    sum = 0;
    for (i = 0; i < n; i += 4099)
        sum += r[i];
    report("muladd", n, threads, 4.0 * n * sizeof(int), t, reps, (double)sum);

    /* the same with a result array allocated (and page-faulted) inside the timing */
    free(r);
    for (int k = -1; k < reps; k++) {
        double t0 = omp_get_wtime();
        int *fresh = xmalloc(n * sizeof *fresh);
        muladd_loop(fresh, a, b, c, n, threads);
        double dt = omp_get_wtime() - t0;
        sum = 0;
        for (i = 0; i < n; i += 4099)
            sum += fresh[i];
        free(fresh);
        if (k >= 0)
            t[k] = dt;
    }
    report("muladd-fresh", n, threads, 4.0 * n * sizeof(int), t, reps, (double)sum);
    free(a);
    free(b);
    free(c);
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: floor dotp|muladd N [THREADS [REPS]]\n");
        return 2;
    }
    long n = atol(argv[2]);
    int threads = argc > 3 ? atoi(argv[3]) : 2;
    int reps = argc > 4 ? atoi(argv[4]) : 5;
    if (n < 1 || threads < 1 || reps < 1 || reps > 64) {
        fprintf(stderr, "floor: need N >= 1, THREADS >= 1, 1 <= REPS <= 64\n");
        return 2;
    }
    if (!strcmp(argv[1], "dotp"))
        dotp(n, threads, reps);
    else if (!strcmp(argv[1], "muladd"))
        muladd(n, threads, reps);
    else {
        fprintf(stderr, "floor: unknown kind %s (dotp or muladd)\n", argv[1]);
        return 2;
    }
    return 0;
}

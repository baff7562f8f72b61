/* tests/unit/test_cuda_emul.c — the emulated device (runtime/device/cuda_emul.c):
 * launches run every thread of every block, kernels with barriers run as
 * fibers that meet at __syncthreads (a block reduction in shared memory
 * gives the right sums), a barrier that only some threads reach is
 * reported as a failed launch, and so is a barrier in a kernel launched
 * without SYNC. The kernels are written here, on the generated units'
 * prelude (translate/codegen.c). */
#include "check.h"
#include "runtime/core/settings.h"
#include "runtime/device/cuda_dev.h"
#include "runtime/device/emul_grid.h"
#include "translate/codegen.h"

#include <stdlib.h>
#include <string.h>

static const char kernels[] =
    /* out[i] = 2 i over a grid-stride loop */
    "extern \"C\" __global__ void k_twice(const vk_arr *V, vk_errp er, int64_t n, void *out)\n"
    "{\n"
    "    (void)V; (void)er;\n"
    "    VK_GRID_LOOP(i, n) ((int64_t *)out)[i] = 2 * i;\n"
    "}\n"
    /* part[b] = the sum of i over block b's grid-stride elements, by a
     * tree in shared memory */
    "extern \"C\" __global__ void k_blocksum(const vk_arr *V, vk_errp er, int64_t n, void *part)\n"
    "{\n"
    "    (void)V; (void)er;\n"
    "    VK_SHARED(int64_t, sh, 256, 0);\n"
    "    int64_t a = 0;\n"
    "    VK_GRID_LOOP(i, n) a += i;\n"
    "    sh[threadIdx.x] = a;\n"
    "    __syncthreads();\n"
    "    for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {\n"
    "        if (threadIdx.x < st) sh[threadIdx.x] += sh[threadIdx.x + st];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (threadIdx.x == 0) ((int64_t *)part)[blockIdx.x] = sh[0];\n"
    "}\n"
    /* out[0] = the thread's index: the last thread to run wins (a race) */
    "extern \"C\" __global__ void k_last(const vk_arr *V, vk_errp er, int64_t n, void *out)\n"
    "{\n"
    "    (void)V; (void)er; (void)n;\n"
    "    ((int64_t *)out)[0] = threadIdx.x;\n"
    "}\n"
    /* out[t] = block: the same element from every block (a race) */
    "extern \"C\" __global__ void k_blocks(const vk_arr *V, vk_errp er, int64_t n, void *out)\n"
    "{\n"
    "    (void)V; (void)er; (void)n;\n"
    "    ((int64_t *)out)[threadIdx.x] = blockIdx.x;\n"
    "}\n"
    /* a neighbour's shared element read without a barrier (a race), or
     * with one (not a race); each block writes its own part of out */
    "extern \"C\" __global__ void k_neighbour(const vk_arr *V, vk_errp er, int64_t n, void *out)\n"
    "{\n"
    "    (void)V; (void)er;\n"
    "    VK_SHARED(int64_t, sh, 256, 1);\n"
    "    sh[threadIdx.x] = threadIdx.x;\n"
    "    if (n) __syncthreads();\n"
    "    ((int64_t *)out)[blockIdx.x * blockDim.x + threadIdx.x] = sh[(threadIdx.x + 1) % blockDim.x];\n"
    "}\n"
    /* the largest thread index by an atomic maximum (not a race) */
    "extern \"C\" __global__ void k_amax(const vk_arr *V, vk_errp er, int64_t n, void *out)\n"
    "{\n"
    "    (void)V; (void)er; (void)n;\n"
    "    VK_AMAX((int32_t *)out, (int32_t)(blockIdx.x * blockDim.x + threadIdx.x));\n"
    "}\n"
    /* out[t] = a shared element before anything wrote it */
    "extern \"C\" __global__ void k_unset(const vk_arr *V, vk_errp er, int64_t n, void *out)\n"
    "{\n"
    "    (void)V; (void)er; (void)n;\n"
    "    VK_SHARED(int64_t, sh, 256, 0);\n"
    "    if (blockIdx.x == 0) ((int64_t *)out)[threadIdx.x] = sh[threadIdx.x];\n"
    "}\n"
    /* thread 0 leaves before the barrier the others wait at */
    "extern \"C\" __global__ void k_diverge(const vk_arr *V, vk_errp er, int64_t n, void *out)\n"
    "{\n"
    "    (void)V; (void)er; (void)n; (void)out;\n"
    "    if (threadIdx.x == 0) return;\n"
    "    __syncthreads();\n"
    "}\n";

/* Under ThreadSanitizer (make tsan) the planted races' reports are
 * expected: they do not change the exit status. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "exitcode=0"; }

static int launch4(CudaDev *d, void *fn, unsigned grid, int sync, int64_t n, void *p)
{
    void *V = NULL, *er = NULL;
    void *args[4] = { &V, &er, &n, &p };
    return d->launch(d, fn, grid, sync, 4, args);
}

int main(void)
{
    if (!jit_have(JIT_CXX)) {
        printf("test_cuda_emul: no C++ compiler, nothing to test\n");
        return check_report("test_cuda_emul");
    }
    JitOptions jo = { .cache_dir = NULL, .no_cache = 1 };
    char dir[] = "/tmp/test_cuda_emul.XXXXXX";
    if (emu_grid_races() && mkdtemp(dir)) {
        /* a race's report reads the unit's lines from its file, which a
         * run without a cache has removed */
        jo.cache_dir = dir;
        jo.no_cache = 0;
    }
    char why[512];
    CudaDev *d = cuda_emul_open(&jo, why, sizeof why);
    CHECK(d != NULL);
    if (!d) {
        fprintf(stderr, "%s\n", why);
        return check_report("test_cuda_emul");
    }
    CgBuf b = { 0 };
    cg_emit_prelude(&b, CG_CUDA);
    cg_puts(&b, kernels);
    char msg[2048];
    void *mod = d->load(d, b.s, b.n, msg, sizeof msg);
    cg_buf_free(&b);
    CHECK(mod != NULL);
    if (!mod) {
        fprintf(stderr, "%s\n", msg);
        d->close(d);
        return check_report("test_cuda_emul");
    }
    void *twice = d->func(d, mod, "k_twice"), *bsum = d->func(d, mod, "k_blocksum"),
         *div = d->func(d, mod, "k_diverge");
    CHECK(twice && bsum && div);
    CHECK(d->func(d, mod, "no_such_kernel") == NULL);
    CHECK(d->block >= 1 && d->block <= 256 && (d->block & (d->block - 1)) == 0);
    CHECK(d->warp >= 1 && d->block % d->warp == 0);

    /* every element of a grid-stride loop, more elements than threads */
    enum { N = 1000 };
    int64_t *out = calloc(N, sizeof *out);
    CHECK(launch4(d, twice, 3, 0, N, out) == 0);
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= out[i] == 2 * i;
    CHECK(ok);

    /* block sums with barriers: each block's grid-stride share of 0..N-1 */
    unsigned grid = 3;
    int64_t part[3] = { -1, -1, -1 }, want[3] = { 0, 0, 0 };
    int64_t stride = (int64_t)grid * d->block;
    for (int64_t i = 0; i < N; i++)
        want[(i % stride) / d->block] += i;
    CHECK(launch4(d, bsum, grid, 1, N, part) == 0);
    CHECK(part[0] == want[0] && part[1] == want[1] && part[2] == want[2]);
    CHECK(part[0] + part[1] + part[2] == (int64_t)N * (N - 1) / 2);

    if (d->block > 1) {
        /* a barrier some threads never reach */
        CHECK(launch4(d, div, 1, 1, N, out) != 0);
        CHECK(strstr(d->error(d), "__syncthreads") != NULL);
        /* a barrier in a launch made without SYNC */
        CHECK(launch4(d, bsum, grid, 0, N, part) != 0);
        CHECK(strstr(d->error(d), "SYNC") != NULL);
        /* and the device still works afterwards */
        memset(part, 0, sizeof part);
        CHECK(launch4(d, bsum, grid, 1, N, part) == 0);
        CHECK(part[0] == want[0] && part[1] == want[1] && part[2] == want[2]);
    } else {
        printf("test_cuda_emul: blocks of one thread (sanitizer build): barrier checks skipped\n");
    }

    /* shared memory starts as a GPU's might: not zero (all ones here) */
    void *unset = d->func(d, mod, "k_unset");
    memset(out, 0, N * sizeof *out);
    CHECK(launch4(d, unset, 2, 0, 0, out) == 0);
    ok = 1;
    for (unsigned t = 0; t < d->block; t++)
        ok &= out[t] == -1;
    CHECK(ok);

    /* without race detection the races run; with it each is reported as
     * a failed launch naming the kernel, and the race-free ones run */
    void *last = d->func(d, mod, "k_last"), *blocks = d->func(d, mod, "k_blocks"),
         *neigh = d->func(d, mod, "k_neighbour"), *amax = d->func(d, mod, "k_amax");
    CHECK(last && blocks && neigh && amax);
    int32_t mx = -1;
    CHECK(launch4(d, amax, 3, 0, 0, &mx) == 0);
    CHECK(mx == (int32_t)(3 * d->block - 1));
    CHECK(launch4(d, neigh, 3, 1, 1, out) == 0);
    CHECK(out[0] == (d->block > 1) && out[3 * d->block - 1] == 0);
    if (emu_grid_races()) {
        printf("test_cuda_emul: race detection: three planted races (ThreadSanitizer's reports follow)\n");
        fflush(stdout);
        if (d->block > 1) {
            CHECK(launch4(d, last, 1, 0, 0, out) != 0);
            CHECK(strstr(d->error(d), "data race") && strstr(d->error(d), "k_last"));
            CHECK(launch4(d, neigh, 2, 1, 0, out) != 0);
            CHECK(strstr(d->error(d), "data race") && strstr(d->error(d), "k_neighbour"));
        }
        CHECK(launch4(d, blocks, 2, 0, 0, out) != 0);
        CHECK(strstr(d->error(d), "data race") && strstr(d->error(d), "k_blocks"));
        /* and race-free launches still pass */
        CHECK(launch4(d, twice, 3, 0, N, out) == 0);
        CHECK(launch4(d, bsum, grid, 1, N, part) == 0);
        CHECK(part[0] == want[0] && part[1] == want[1] && part[2] == want[2]);
    } else {
        CHECK(launch4(d, last, 1, 0, 0, out) == 0);
        CHECK(out[0] == (int64_t)d->block - 1); /* in order: the last thread's */
    }
    d->close(d);

    /* a shuffled device: the same sums, and the last writer is not always
     * the last thread */
    setenv("VINTERP_CUDA_EMULATE_SHUFFLE", "12345", 1);
    CHECK(settings_load(stderr) == 0); /* (the settings are read once, at start-up) */
    d = cuda_emul_open(&jo, why, sizeof why);
    CHECK(d != NULL);
    if (d) {
        CHECK(strstr(d->name, "shuffled") != NULL);
        mod = NULL;
        b = (CgBuf){ 0 };
        cg_emit_prelude(&b, CG_CUDA);
        cg_puts(&b, kernels);
        mod = d->load(d, b.s, b.n, msg, sizeof msg);
        cg_buf_free(&b);
        CHECK(mod != NULL);
        bsum = mod ? d->func(d, mod, "k_blocksum") : NULL;
        last = mod ? d->func(d, mod, "k_last") : NULL;
        if (bsum && last) {
            memset(part, 0, sizeof part);
            CHECK(launch4(d, bsum, grid, 1, N, part) == 0);
            CHECK(part[0] == want[0] && part[1] == want[1] && part[2] == want[2]);
            if (d->block > 1 && !emu_grid_races()) {
                int other = 0;
                for (int k = 0; k < 8; k++) {
                    CHECK(launch4(d, last, 1, 0, 0, out) == 0);
                    other |= out[0] != (int64_t)d->block - 1;
                }
                CHECK(other);
            }
        }
        d->close(d);
    }
    unsetenv("VINTERP_CUDA_EMULATE_SHUFFLE");
    CHECK(settings_load(stderr) == 0);
    free(out);
    if (jo.cache_dir) {
        char cmd[64];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        CHECK(system(cmd) == 0);
    }
    return check_report("test_cuda_emul");
}

/* tests/unit/test_cuda_emul.c — the emulated device (runtime/device/cuda_emul.c):
 * launches run every thread of every block, kernels with barriers run as
 * fibers that meet at __syncthreads (a block reduction in shared memory
 * gives the right sums), a barrier that only some threads reach is
 * reported as a failed launch, and so is a barrier in a kernel launched
 * without SYNC. The kernels are written here, on the generated units'
 * prelude (translate/codegen.c). */
#include "check.h"
#include "runtime/device/cuda_dev.h"
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
    "    __shared__ int64_t sh[256];\n"
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
    /* thread 0 leaves before the barrier the others wait at */
    "extern \"C\" __global__ void k_diverge(const vk_arr *V, vk_errp er, int64_t n, void *out)\n"
    "{\n"
    "    (void)V; (void)er; (void)n; (void)out;\n"
    "    if (threadIdx.x == 0) return;\n"
    "    __syncthreads();\n"
    "}\n";

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
    free(out);
    d->close(d);
    return check_report("test_cuda_emul");
}

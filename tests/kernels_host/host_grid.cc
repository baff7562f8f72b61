/* tests/kernels_host/host_grid.cc — the host's stand-in for a CUDA device
 * (cuda_host.h): grids run block after block, a block's threads as fibers
 * meeting at block and warp barriers, and the runtime calls kernels/ makes.
 *
 * The blocks of every grid, and a block's ready threads (between
 * barriers), run in an order drawn from a seed (1, or VKH_ORDER=shuffle:
 * SEED), so that a kernel that leans on an order CUDA does not promise
 * (thread 0 first, block 0 first) gives other answers; VKH_ORDER=plain runs
 * them in order. */
#include "tests/kernels_host/cuda_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include <unordered_set>

/* A fiber switch: on x86-64 the callee-saved registers and the stack
 * pointer (a few instructions; AddressSanitizer told of each switch);
 * elsewhere, and under ThreadSanitizer, ucontext's swapcontext (a system
 * call each). */
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define FAST_SWITCH 1
extern "C" void vkh_switch(void **save_sp, void *to_sp);
__asm__(".text\n"
        ".globl vkh_switch\n"
        ".type vkh_switch,@function\n"
        "vkh_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size vkh_switch,.-vkh_switch\n"
        ".section .note.GNU-stack,\"\",@progbits\n"
        ".text\n");
#else
#define FAST_SWITCH 0
#endif
#if FAST_SWITCH && defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define ASAN_FIBERS 1
#else
#define ASAN_FIBERS 0
#endif

uint3 threadIdx, blockIdx, blockDim, gridDim;


namespace {

enum State { READY, AT_BLOCK, AT_WARP, DONE };
/* A fiber's stack; the odd 1088 bytes keep the stacks' tops (the fibers'
 * hot words) off one cache set, which a power of two would put them in. */
#if defined(__SANITIZE_ADDRESS__)
const size_t STACK = 256 * 1024 + 1088;
#else
const size_t STACK = 64 * 1024 + 1088;
#endif
const size_t SCRATCH = 64 * 1024; /* the block's collectives' scratch */
const size_t WSCRATCH = 32 * 32;  /* a warp's: 32 lanes of up to 32 bytes */

struct Grid {
#if FAST_SWITCH
    void *sched;
    std::vector<void *> sp;
#else
    ucontext_t sched;
    std::vector<ucontext_t> uc;
#endif
    char *stacks = nullptr; /* cap stacks (not a vector: a fiber's old frames are not copied when it grows) */
    std::vector<int> state;
    std::vector<unsigned> queue;   /* the ready threads, from head on */
    std::vector<unsigned> at_warp; /* lanes of each warp at a warp barrier */
    unsigned head = 0, at_block = 0, done = 0;
    std::vector<unsigned char> scratch, wscratch;
#if ASAN_FIBERS
    const void *main_bottom = nullptr;
    size_t main_size = 0;
#endif
    unsigned cap = 0, cur = 0;
    void (*body)(void *) = nullptr;
    void *arg = nullptr;
    cudaError_t pending = cudaSuccess;
    char why[256] = "";
    uint64_t seed = 0;
    int shuffle = -1; /* -1: not read yet */
} g;

uint64_t next_rand()
{
    uint64_t z = (g.seed += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void make_order(std::vector<unsigned> &o, unsigned n)
{
    o.resize(n);
    for (unsigned i = 0; i < n; i++)
        o[i] = i;
    if (!g.shuffle)
        return;
    for (unsigned i = n; i > 1; i--)
        std::swap(o[i - 1], o[next_rand() % i]);
}

/* From the running fiber to the scheduler (for good when EXITING), and
 * back. */
void to_sched(bool exiting = false)
{
    (void)exiting;
#if FAST_SWITCH
#if ASAN_FIBERS
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(exiting ? nullptr : &fake, g.main_bottom, g.main_size);
#endif
    vkh_switch(&g.sp[g.cur], g.sched);
#if ASAN_FIBERS
    __sanitizer_finish_switch_fiber(fake, &g.main_bottom, &g.main_size);
#endif
#else
    swapcontext(&g.uc[g.cur], &g.sched);
#endif
}

void to_fiber(unsigned t)
{
#if FAST_SWITCH
#if ASAN_FIBERS
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, &g.stacks[(size_t)t * STACK], STACK);
#endif
    vkh_switch(&g.sched, g.sp[t]);
#if ASAN_FIBERS
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
#else
    swapcontext(&g.sched, &g.uc[t]);
#endif
}

void fiber_main()
{
#if ASAN_FIBERS
    __sanitizer_finish_switch_fiber(nullptr, &g.main_bottom, &g.main_size);
#endif
    g.body(g.arg);
    g.state[g.cur] = DONE;
#if FAST_SWITCH
    to_sched(true); /* never resumed */
    abort();
#endif
    /* ucontext: uc_link returns to the scheduler */
}

/* Fiber T ready to start the kernel on its stack. */
void fiber_init(unsigned t)
{
    char *base = &g.stacks[(size_t)t * STACK];
#if ASAN_FIBERS
    ASAN_UNPOISON_MEMORY_REGION(base, STACK); /* the frames a returned fiber left poisoned */
#endif
#if FAST_SWITCH
    uintptr_t top = ((uintptr_t)(base + STACK)) & ~(uintptr_t)15;
    void **p = (void **)top;
    *--p = nullptr;            /* fiber_main's return address: none */
    *--p = (void *)fiber_main; /* vkh_switch returns into it */
    for (int r = 0; r < 6; r++)
        *--p = nullptr;        /* rbp rbx r12 r13 r14 r15 */
    g.sp[t] = p;
#else
    getcontext(&g.uc[t]);
    g.uc[t].uc_stack.ss_sp = base;
    g.uc[t].uc_stack.ss_size = STACK;
    g.uc[t].uc_link = &g.sched;
    makecontext(&g.uc[t], fiber_main, 0);
#endif
    g.state[t] = READY;
}

void wait_as(int s)
{
    g.state[g.cur] = s;
    to_sched();
}

void fail(const char *fmt, unsigned a, unsigned b)
{
    if (g.pending == cudaSuccess) {
        snprintf(g.why, sizeof g.why, fmt, a, b);
        fprintf(stderr, "host grid: %s\n", g.why);
        g.pending = cudaErrorLaunchFailure;
    }
}

/* The next ready thread: the first, or (shuffled) any. */
unsigned next_ready()
{
    if (g.shuffle) {
        size_t k = g.head + next_rand() % (g.queue.size() - g.head);
        std::swap(g.queue[g.head], g.queue[k]);
    }
    return g.queue[g.head++];
}

void make_ready(unsigned t)
{
    g.state[t] = READY;
    g.queue.push_back(t);
}

/* One block of B threads, each run until it waits or returns; a barrier
 * lets its threads go on when the last of them arrives (the whole block,
 * or the 32 lanes of a warp). False when threads wait at a barrier that
 * the others never reach. */
bool run_block(unsigned B)
{
    g.queue.clear();
    g.head = g.at_block = g.done = 0;
    g.at_warp.assign((B + 31) / 32, 0);
    for (unsigned t = 0; t < B; t++) {
        fiber_init(t);
        g.queue.push_back(t);
    }
    while (g.head < g.queue.size()) {
        unsigned t = next_ready();
        g.cur = t;
        threadIdx.x = t;
        to_fiber(t);
        if (g.state[t] == DONE) {
            g.done++;
        } else if (g.state[t] == AT_BLOCK) {
            if (++g.at_block == B) { /* every thread waits here: none is queued */
                g.at_block = 0;
                g.queue.clear();
                g.head = 0;
                for (unsigned u = 0; u < B; u++)
                    make_ready(u);
            }
        } else if (++g.at_warp[t / 32] == 32) {
            g.at_warp[t / 32] = 0;
            for (unsigned u = t / 32 * 32; u < t / 32 * 32 + 32; u++)
                make_ready(u);
        }
        if (g.head > 4096 && g.head * 2 > g.queue.size()) { /* drop the run part */
            g.queue.erase(g.queue.begin(), g.queue.begin() + g.head);
            g.head = 0;
        }
    }
    if (g.done == B)
        return true;
    fail("block %u: threads wait at a barrier that others never reach (%u returned)", blockIdx.x, g.done);
    return false;
}

} // namespace

void vkh_run(void (*body)(void *), void *arg, unsigned grid, unsigned block)
{
    if (block == 0 || block > 1024) {
        fail("a launch of %u blocks of %u threads", grid, block);
        return;
    }
    if (grid == 0) {
        fail("a launch of %u blocks of %u threads", grid, block);
        return;
    }
    if (g.shuffle < 0) { /* shuffled from seed 1 unless VKH_ORDER says */
        const char *e = getenv("VKH_ORDER");
        g.shuffle = !(e && strcmp(e, "plain") == 0);
        g.seed = e && strncmp(e, "shuffle:", 8) == 0 ? strtoull(e + 8, nullptr, 10) : 1;
    }
    if (g.cap < block) {
#if FAST_SWITCH
        g.sp.resize(block);
#else
        g.uc.resize(block);
#endif
        free(g.stacks);
        g.stacks = (char *)malloc((size_t)block * STACK);
        if (!g.stacks) {
            fprintf(stderr, "host grid: out of memory for %u fibers' stacks\n", block);
            abort();
        }
        g.state.resize(block);
        g.cap = block;
    }
    g.scratch.resize(SCRATCH);
    g.wscratch.resize((block + 31) / 32 * WSCRATCH);
    g.body = body;
    g.arg = arg;
    gridDim.x = grid, gridDim.y = gridDim.z = 1;
    blockDim.x = block, blockDim.y = blockDim.z = 1;
    threadIdx.y = threadIdx.z = blockIdx.y = blockIdx.z = 0;
    std::vector<unsigned> blocks;
    make_order(blocks, grid);
    for (unsigned k = 0; k < grid; k++) {
        blockIdx.x = blocks[k];
        /* shared memory starts as a GPU's may: not zero */
        memset(g.scratch.data(), 0xa5, g.scratch.size());
        if (!run_block(block))
            return;
    }
}

void __syncthreads(void) { wait_as(AT_BLOCK); }

void vkh_syncwarp(void)
{
    if (blockDim.x % 32 != 0) {
        fail("a warp collective in a block of %u threads (not whole warps, %u)", blockDim.x, blockDim.x % 32);
        return;
    }
    wait_as(AT_WARP);
}

void *vkh_block_scratch(size_t bytes)
{
    if (bytes > SCRATCH) {
        fprintf(stderr, "host grid: a collective's %zu bytes of scratch (at most %zu)\n", bytes, SCRATCH);
        abort();
    }
    return g.scratch.data();
}

void *vkh_warp_scratch(size_t bytes)
{
    if (bytes > WSCRATCH) {
        fprintf(stderr, "host grid: a warp collective's %zu bytes of scratch (at most %zu)\n", bytes, WSCRATCH);
        abort();
    }
    return g.wscratch.data() + (threadIdx.x / 32) * WSCRATCH;
}

/* ---- the runtime ---- */

cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 1;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int device)
{
    (void)device;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "the library's kernels on the host (tests/kernels_host)");
    p->multiProcessorCount = 2;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorLaunchFailure; }
cudaError_t cudaGetDevice(int *device)
{
    *device = 0;
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) { return g.pending; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return g.pending; }

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = g.pending;
    g.pending = cudaSuccess;
    return e;
}

const char *cudaGetErrorName(cudaError_t e)
{
    return e == cudaSuccess ? "cudaSuccess" : e == cudaErrorMemoryAllocation ? "cudaErrorMemoryAllocation"
                                                                             : "cudaErrorLaunchFailure";
}

const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : g.why[0] ? g.why : "error"; }

/* Device memory: what is still allocated when the library is unloaded
 * (or the process ends) is freed then, as a CUDA context's memory goes
 * with it. */
struct Live {
    std::unordered_set<void *> blocks;
    ~Live()
    {
        for (void *p : blocks)
            free(p);
        free(g.stacks);
        g.stacks = nullptr;
    }
} live;

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    *p = malloc(bytes ? bytes : 1); /* exactly as long: a sanitizer sees a kernel read past it */
    if (!*p)
        return cudaErrorMemoryAllocation;
    live.blocks.insert(*p);
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t bytes) { return cudaMalloc(p, bytes); }
cudaError_t cudaFree(void *p)
{
    if (p && live.blocks.erase(p) == 0)
        return cudaErrorLaunchFailure; /* not this device's */
    free(p);
    return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p) { return cudaFree(p); }

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind)
{
    if (bytes)
        memmove(dst, src, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind k, cudaStream_t)
{
    return cudaMemcpy(dst, src, bytes, k);
}
cudaError_t cudaMemset(void *p, int v, size_t bytes)
{
    if (bytes)
        memset(p, v, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t) { return cudaMemset(p, v, bytes); }

struct VkhEvent {
    int unused;
};
cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    *e = new VkhEvent();
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t)
{
    *ms = 0;
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    delete e;
    return cudaSuccess;
}

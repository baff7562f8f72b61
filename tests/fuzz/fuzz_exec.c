/* tests/fuzz/fuzz_exec.c — libFuzzer target for whole-program execution.
 *
 * Each input is a VCODE program (mutated from the seeds in seeds_exec/). It
 * is parsed, linked and checked as bin/vinterp does; when the front end
 * accepts it, it runs with small limits:
 *
 *     -m 2^20 units, --max-steps=200000, --max-depth=10000, --no-spawn,
 *     and FOPEN refused (InterpOptions.no_files)
 *
 * and the final stack is printed to /dev/null. An input that starts with
 * the comment "{-c}" runs with -c (classic argument checking, static
 * checker findings not fatal) — reproduce it with `bin/vinterp -c`.
 *
 * Fatal errors. The runtime ends a run through rt_exit_status (fatal
 * errors, and EXIT); the harness installs a hook there that siglongjmps
 * back here. The abandoned run is then cleaned up: interp_free (the value
 * stack, constants, open files), vc_free, and val_reclaim_all for the
 * values the failing instruction held in local variables (the library is
 * built with -DVINTERP_VALUE_REGISTRY, which keeps a list of live values).
 * Other host memory such a run held (the interpreter's call stack, a
 * scratch buffer) still leaks — a few KiB per fatal run — so this target
 * runs with -detect_leaks=0 (and ASAN_OPTIONS=detect_leaks=0). Leaks on
 * the normal path are still caught: after a run that ends without a fatal
 * error (or with EXIT), interp_free must leave no live value, else the
 * harness aborts.
 *
 * Process state. stdin and stdout are /dev/null for the whole process
 * (READ sees end of file; the stack dump and FWRITE to fd 1 vanish); the
 * program's WRITE and error messages go to stderr (`make fuzz-smoke` uses
 * -close_fd_mask=2). After each run fds 0-2 are restored, in case the
 * program closed them with FCLOSE, and the RAND stream is reseeded with
 * its start-up seed so that each input runs the same way every time.
 *
 * Files. FOPEN fails with "file access is disabled" unless the environment
 * variable VINTERP_FUZZ_FILES=1 is set; then the harness first changes to
 * a fresh scratch directory (mkdtemp under $TMPDIR or /tmp), so relative
 * names land there — but absolute names are honoured, so only do that in a
 * sandbox, and give libFuzzer absolute paths for its corpus and
 * -artifact_prefix. */
#define _GNU_SOURCE
#include "runtime/core/errors.h"
#include "runtime/interp/interp.h"
#include "runtime/core/print.h"
#include "runtime/core/rand.h"
#include "runtime/core/value.h"
#include "vcode/program.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef VINTERP_VALUE_REGISTRY
#error "build the library and this harness with -DVINTERP_VALUE_REGISTRY"
#endif

#define FUZZ_MEM_UNITS  (INT64_C(1) << 20)
#define FUZZ_MAX_STEPS  200000
#define FUZZ_MAX_DEPTH  10000

static sigjmp_buf run_jmp;
static volatile int in_run;
static volatile int run_status;
static int allow_files;
static int saved_fd[3] = { -1, -1, -1 };
static FILE *devnull;

/* Static so that they keep their values across the siglongjmp. */
static Program prog;
static Interp it;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fatal_hook(int status)
{
    if (!in_run) {
        fprintf(stderr, "fuzz_exec: rt_exit_status(%d) outside a run\n", status);
        abort();
    }
    run_status = status;
    siglongjmp(run_jmp, 1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *files = getenv("VINTERP_FUZZ_FILES");
    allow_files = files && strcmp(files, "1") == 0;
    if (allow_files) {
        const char *tmp = getenv("TMPDIR");
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/vinterp-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir) || chdir(dir) != 0) {
            perror("fuzz_exec: scratch directory");
            exit(1);
        }
        fprintf(stderr, "fuzz_exec: FOPEN allowed, working in %s\n", dir);
    }
    int nul = open("/dev/null", O_RDWR);
    if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0) {
        perror("fuzz_exec: /dev/null");
        exit(1);
    }
    close(nul);
    devnull = fopen("/dev/null", "w");
    if (!devnull) {
        perror("fuzz_exec: /dev/null");
        exit(1);
    }
    rt_set_fatal_hook(fatal_hook);
    return 0;
}

/* fds 0-2 as they were at the first input (after libFuzzer's own
 * -close_fd_mask handling, which happens after LLVMFuzzerInitialize). */
static void save_fds(void)
{
    if (saved_fd[0] >= 0)
        return;
    for (int i = 0; i < 3; i++) {
        saved_fd[i] = fcntl(i, F_DUPFD_CLOEXEC, 10);
        if (saved_fd[i] < 0) {
            perror("fuzz_exec: dup");
            abort();
        }
    }
}

static void restore_fds(void)
{
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < 3; i++)
        if (dup2(saved_fd[i], i) < 0)
            abort();
    clearerr(stdin);
    clearerr(stdout);
    clearerr(stderr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    save_fds();
    VcError err;
    InterpOptions opt;
    memset(&opt, 0, sizeof opt);
    opt.check = size >= 4 && memcmp(data, "{-c}", 4) == 0;
    opt.max_steps = FUZZ_MAX_STEPS;
    opt.max_depth = FUZZ_MAX_DEPTH;
    opt.no_spawn = 1;
    opt.no_files = !allow_files;

    if (vc_parse_string("fuzz.vcode", (const char *)data, size, &prog, &err) < 0 ||
        vc_link(&prog, &err) < 0 ||
        (vc_check(&prog, &err) < 0 && !opt.check)) {
        vc_free(&prog);
        return 0;
    }

    mem_set_limit(FUZZ_MEM_UNITS);
    rnd_seed(rnd_global(), 0);
    memset(&it, 0, sizeof it);
    run_status = -1;
    if (sigsetjmp(run_jmp, 0) == 0) {
        in_run = 1;
        interp_init(&it, &prog, &opt);
        interp_run(&it);
        in_run = 0;
        for (int64_t i = 0; i < it.sp; i++)
            print_value(devnull, it.stk[i]);
        run_status = 0;
    } else {
        in_run = 0;
    }
    int fatal = run_status != 0;

    if (it.consts) {
        interp_free(&it);
    } else {
        /* interp_init failed before the constant table existed. */
        free(it.stk);
    }
    vc_free(&prog);
    restore_fds();

    if (!fatal && (val_live_count() != 0 || mem_used() != 0)) {
        fprintf(stderr, "fuzz_exec: leak: %lld values (%lld units of vector memory) still live after the run\n",
                (long long)val_live_count(), (long long)mem_used());
        abort();
    }
    val_reclaim_all();
    return 0;
}

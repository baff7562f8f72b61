/* runtime/main.c — the vinterp command line (vcode/SPEC.md §7). */
#define _GNU_SOURCE
#include "runtime/fused/backend.h"
#include "runtime/fused/exec_cpu.h"
#include "runtime/fused/exec_cuda.h"
#include "runtime/jit/jit.h"
#include "runtime/core/errors.h"
#include "runtime/interp/interp.h"
#include "runtime/core/print.h"
#include "runtime/interp/profile.h"
#include "runtime/fused/tier.h"
#include "runtime/fused/tier_prep.h"
#include "runtime/core/value.h"
#include "translate/inline.h"
#include "vcode/printer.h"
#include "vcode/program.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/core/version.h"

static int64_t mem_units = 1000000;
/* -m's largest value: 2^60 units of 8 bytes, every byte count an int64_t. */
#define MEM_UNITS_MAX (INT64_C(1) << 60)

static void usage(void)
{
    fprintf(stderr,
            "vinterp [-cgt] [-m <num>] [-l <file>] [-<num>] [-d <debug-switch>] file-name\n"
            "\t -c \t\t check arguments\n"
            "\t -d abort\t dump core on internal error\n"
            "\t -d lex\t\t lex trace\n"
            "\t -d link\t link trace\n"
            "\t -d program\t dump program parse\n"
            "\t -d runtime\t trace call stack\n"
            "\t -d command\t trace commands executed\n"
            "\t -d stack\t trace vector stack\n"
            "\t -d values\t trace vector stack values\n"
            "\t -d heap\t trace heap usage (* = free, # = scratch)\n"
            "\t -g\t\t notify on memory compaction\n"
            "\t -l <file>\t name of an optional library that implements fused operations\n"
            "\t -m <num>\t vector stack size in number of doubles (default %lld)\n"
            "\t -t\t\t time program execution\n",
            (long long)mem_units);
}

static void help(void)
{
    usage();
    fprintf(stderr,
            "Options of this interpreter beyond the classic ones:\n"
            "\t --backend=NAME\t execution backend: auto (the default: cuda when a GPU is usable,\n"
            "\t\t\t else cpu when a C compiler is, else ref), ref (the reference\n"
            "\t\t\t interpreter), lcu (fused block plans run by the λcu evaluator),\n"
            "\t\t\t cpu (fused kernels compiled to C), cuda (fused kernels on the GPU);\n"
            "\t\t\t $VINTERP_BACKEND sets the default\n"
            "\t --check\t run the reference beside the backend and compare every block\n"
            "\t --check-rel=R\t a relative allowance for floats under --check beyond\n"
            "\t\t\t their error bounds (default 0)\n"
            "\t --cache-dir=DIR  compiled-kernel cache (default $VINTERP_CACHE_DIR,\n"
            "\t\t\t else $XDG_CACHE_HOME/vinterp, else ~/.cache/vinterp)\n"
            "\t --no-cache\t compile kernels without the cache (also VINTERP_NO_CACHE=1)\n"
            "\t --cuda-check[=ARCH]  generate the CUDA of every block and compile it with\n"
            "\t\t\t NVRTC for ARCH (default sm_90), without running; no GPU needed\n"
            "\t --fusion=on|off\t fuse kernels in block plans (default on)\n"
            "\t --float-reassoc\t float + and * reductions of more than 65536 elements\n"
            "\t\t\t fold by chunks, on several threads: faster, last digits differ\n"
            "\t\t\t from the classic's (also VINTERP_FLOAT_REASSOC=1)\n"
            "\t -d fusion\t print each block's kernels, ILP and fused kernels when translated\n"
            "\t -d stats\t print translation and execution figures at exit\n"
            "\t --max-steps=N\t stop with an error after N instructions (0 = no limit)\n"
            "\t --max-depth=N\t limit the call depth (default 10000000)\n"
            "\t --no-spawn\t refuse SPAWN (for untrusted programs)\n"
            "\t --no-files\t FOPEN fails (for untrusted programs)\n"
            "\t --progress\t show progress on stderr when it is a terminal\n"
            "\t --profile[=text|json]  calls, inclusive and exclusive time per VCODE\n"
            "\t\t\t function, on stderr at the end of the run\n"
            "\t --help, --version\n");
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void report(const char *file, const VcError *err)
{
    if (err->classic)
        fprintf(stderr, "%s\n", err->msg);
    else if (err->line > 0)
        fprintf(stderr, "vinterp: %s:%d: %s\n", file, err->line, err->msg);
    else
        fprintf(stderr, "vinterp: %s\n", err->msg);
}

enum { LO_HELP = 1000, LO_VERSION, LO_BACKEND, LO_MAX_STEPS, LO_MAX_DEPTH, LO_NO_SPAWN, LO_PROFILE, LO_PROGRESS,
       LO_FUSION, LO_NO_FILES, LO_CHECK, LO_CHECK_REL, LO_CACHE_DIR, LO_NO_CACHE, LO_CUDA_CHECK, LO_TIER,
       LO_TIER_WORK, LO_TIER_MIN_LEN, LO_FLOAT_REASSOC };

/* A count option's value: digits only, and in range. */
static int parse_count(const char *opt, const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || s[strspn(s, "0123456789")]) {
        fprintf(stderr, "vinterp: %s takes a count >= 0, not '%s'\n", opt, s);
        return -1;
    }
    if (errno == ERANGE) {
        fprintf(stderr, "vinterp: %s: '%s' is too large\n", opt, s);
        return -1;
    }
    *out = v;
    return 0;
}

typedef enum { BK_AUTO = 0, BK_REF, BK_LCU, BK_CPU, BK_CUDA } BackendKind;

static int parse_backend(const char *s, BackendKind *k)
{
    static const struct { const char *name; BackendKind k; } t[] = {
        { "auto", BK_AUTO }, { "ref", BK_REF }, { "lcu", BK_LCU }, { "cpu", BK_CPU }, { "cuda", BK_CUDA },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(s, t[i].name)) {
            *k = t[i].k;
            return 0;
        }
    fprintf(stderr, "vinterp: unknown backend '%s' (available: auto, ref, lcu, cpu, cuda)\n", s);
    return -1;
}

int main(int argc, char **argv)
{
    /* first: the parser's big arrays then come from the heap the vectors
     * reuse, not from mappings that are returned (bh_16k peak RSS -1 MB) */
    mem_init();
    InterpOptions opt;
    memset(&opt, 0, sizeof opt);
    opt.max_depth = 10000000;
    int dump_program = 0;
    int cuda_device = 0;
    const char *cuda_check_arch = NULL; /* --cuda-check: compile only */
    BackendKind bk = BK_AUTO;
    int bk_given = 0; /* --backend on the command line (not the environment's default) */
    const char *envb = getenv("VINTERP_BACKEND");
    if (envb && *envb && parse_backend(envb, &bk) < 0)
        return 1;
    JitOptions jopt;
    memset(&jopt, 0, sizeof jopt);
    BackendOptions bopt;
    memset(&bopt, 0, sizeof bopt);
    bopt.fusion = 1;
    bopt.check_rel = 0.0;
    ProfileMode profile = PROF_OFF;
    /* --tier and its thresholds: the command line's, applied over the
     * backend's defaults and the environment once the backend is known. */
    const char *tier_mode = NULL;
    int64_t tier_work = -1, tier_min_len = -1;
    int tier_trace = 0;
    static const struct option longopts[] = {
        { "help", no_argument, NULL, LO_HELP },
        { "version", no_argument, NULL, LO_VERSION },
        { "backend", required_argument, NULL, LO_BACKEND },
        { "max-steps", required_argument, NULL, LO_MAX_STEPS },
        { "max-depth", required_argument, NULL, LO_MAX_DEPTH },
        { "no-spawn", no_argument, NULL, LO_NO_SPAWN },
        { "profile", optional_argument, NULL, LO_PROFILE },
        { "progress", no_argument, NULL, LO_PROGRESS },
        { "fusion", required_argument, NULL, LO_FUSION },
        { "no-files", no_argument, NULL, LO_NO_FILES },
        { "check", no_argument, NULL, LO_CHECK },
        { "check-rel", required_argument, NULL, LO_CHECK_REL },
        { "cache-dir", required_argument, NULL, LO_CACHE_DIR },
        { "no-cache", no_argument, NULL, LO_NO_CACHE },
        { "cuda-check", optional_argument, NULL, LO_CUDA_CHECK },
        { "tier", required_argument, NULL, LO_TIER },
        { "tier-work", required_argument, NULL, LO_TIER_WORK },
        { "tier-min-len", required_argument, NULL, LO_TIER_MIN_LEN },
        { "float-reassoc", no_argument, NULL, LO_FLOAT_REASSOC },
        { NULL, 0, NULL, 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "cd:gm:r:tl:0123456789", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': opt.check = 1; break;
        case 't': opt.time = 1; break;
        case 'g': break;
        case 'l': break; /* accepted; FUSED is rejected when it is used */
        case 'm': {
            int64_t units;
            if (parse_count("-m", optarg, &units) < 0)
                return 1;
            if (units > MEM_UNITS_MAX) {
                fprintf(stderr, "vinterp: -m takes at most %lld units of 8 bytes, not '%s'\n",
                        (long long)MEM_UNITS_MAX, optarg);
                return 1;
            }
            mem_units = units;
            break;
        }
        case 'd':
            if (!strcmp(optarg, "program")) dump_program = 1;
            else if (!strcmp(optarg, "command")) opt.trace_command = 1;
            else if (!strcmp(optarg, "stack")) opt.trace_stack = 1;
            else if (!strcmp(optarg, "values")) opt.trace_values = 1;
            else if (!strcmp(optarg, "runtime")) opt.trace_runtime = 1;
            else if (!strcmp(optarg, "lex")) vc_trace.lex_trace = stdout;
            else if (!strcmp(optarg, "link")) vc_trace.link_trace = 1;
            else if (!strcmp(optarg, "heap")) opt.trace_heap = 1;
            else if (!strcmp(optarg, "abort")) rt_set_abort(1);
            else if (!strcmp(optarg, "fusion")) bopt.trace = stderr;
            else if (!strcmp(optarg, "stats")) bopt.stats = 1;
            else if (!strcmp(optarg, "tier")) tier_trace = 1;
            else {
                fprintf(stderr, "vinterp: -d: unknown debug switch '%s'\n", optarg);
                usage();
                return 1;
            }
            break;
        case LO_HELP: help(); return 0;
        case LO_VERSION:
            printf("vinterp %s (backends: auto, ref, lcu, cpu, cuda)\n", VINTERP_VERSION);
            return 0;
        case LO_BACKEND:
            if (parse_backend(optarg, &bk) < 0)
                return 1;
            bk_given = 1;
            break;
        case LO_CHECK: bopt.check = 1; break;
        case LO_CHECK_REL: {
            char *end;
            bopt.check_rel = strtod(optarg, &end);
            if (*end || !(bopt.check_rel >= 0)) {
                fprintf(stderr, "vinterp: --check-rel takes a tolerance >= 0, not '%s'\n", optarg);
                return 1;
            }
            break;
        }
        case LO_CACHE_DIR: jopt.cache_dir = optarg; break;
        case LO_NO_CACHE: jopt.no_cache = 1; break;
        case LO_CUDA_CHECK: cuda_check_arch = optarg ? optarg : "sm_90"; break;
        case LO_TIER: {
            TierMode m;
            if (tier_parse_mode(optarg, &m) < 0) {
                fprintf(stderr, "vinterp: --tier takes background, sync, eager or off, not '%s'\n", optarg);
                return 1;
            }
            tier_mode = optarg;
            break;
        }
        case LO_TIER_WORK:
            if (parse_count("--tier-work", optarg, &tier_work) < 0)
                return 1;
            break;
        case LO_TIER_MIN_LEN:
            if (parse_count("--tier-min-len", optarg, &tier_min_len) < 0)
                return 1;
            break;
        case LO_FUSION:
            if (!strcmp(optarg, "on"))
                bopt.fusion = 1;
            else if (!strcmp(optarg, "off"))
                bopt.fusion = 0;
            else {
                fprintf(stderr, "vinterp: --fusion takes on or off, not '%s'\n", optarg);
                return 1;
            }
            break;
        case LO_MAX_STEPS:
            if (parse_count("--max-steps", optarg, &opt.max_steps) < 0)
                return 1;
            break;
        case LO_MAX_DEPTH:
            if (parse_count("--max-depth", optarg, &opt.max_depth) < 0)
                return 1;
            break;
        case LO_NO_SPAWN: opt.no_spawn = 1; break;
        case LO_FLOAT_REASSOC: opt.float_reassoc = 1; break;
        case LO_PROGRESS: opt.progress = 1; break;
        case LO_NO_FILES: opt.no_files = 1; break;
        case LO_PROFILE:
            if (!optarg || !strcmp(optarg, "text"))
                profile = PROF_TEXT;
            else if (!strcmp(optarg, "json"))
                profile = PROF_JSON;
            else {
                fprintf(stderr, "vinterp: --profile takes text or json, not '%s'\n", optarg);
                return 1;
            }
            break;
        case '0': case '1': case '2': case '3': case '4':
        case '5': case '6': case '7': case '8': case '9':
            cuda_device = c - '0';
            break; /* GPU selection (--backend=cuda / auto) */
        default: /* includes -r */
            usage();
            return 1;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "vinterp: Please supply file name.\n");
        usage();
        return 1;
    }
    const char *file = argv[optind];
    static char outbuf[1 << 16];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);

    Program prog;
    VcError err;
    if (vc_parse_file(file, &prog, &err) < 0 || vc_link(&prog, &err) < 0) {
        report(file, &err);
        vc_free(&prog);
        return 1;
    }
    /* Under -c the run-time checks report with the classic messages, so
     * the static checker's findings are not fatal then, and its warnings
     * (IF on an Int, IF arms of different depths) are not printed. */
    if (opt.check)
        prog.warn = NULL;
    if (vc_check(&prog, &err) < 0 && !opt.check) {
        report(file, &err);
        vc_free(&prog);
        return 1;
    }
    if (dump_program) {
        vc_print_program(stderr, &prog);
        fflush(stderr);
    }
    vc_check_forget(&prog);
    mem_set_limit((int64_t)mem_units);
    /* The fused backend runs the inlined program, block by block. */
    Program inl;
    Program *run = &prog;
    Backend *backend = NULL;
    memset(&inl, 0, sizeof inl);
    /* Which backend: auto takes cuda when a device is usable, else cpu when
     * a C compiler is, else the reference interpreter. */
    char why[600] = "";
    /* The instruction traces describe the reference's one instruction at a
     * time run of the program as written, and -c checks each instruction's
     * arguments as it runs: without --backend on the command line (auto,
     * or $VINTERP_BACKEND's default) they run the reference. */
    int traced = opt.check || opt.trace_command || opt.trace_stack || opt.trace_values || opt.trace_runtime ||
                 opt.trace_heap;
    if (traced && !bk_given && !cuda_check_arch)
        bk = BK_REF;
    if (cuda_check_arch)
        bk = BK_CUDA;
    else if (bk == BK_CUDA || bk == BK_AUTO) {
        int have = cuda_usable(cuda_device, why, sizeof why);
        if (bk == BK_CUDA && !have) {
            fprintf(stderr, "vinterp: --backend=cuda: %s\n", why);
            vc_free(&prog);
            return 1;
        }
        if (bk == BK_AUTO)
            bk = have ? BK_CUDA : jit_have_compiler() ? BK_CPU : BK_REF;
    }
    if (bk == BK_CPU && !jit_have_compiler()) {
        fprintf(stderr, "vinterp: --backend=cpu: no C compiler ('%s' is not on PATH; set VINTERP_CC)\n",
                getenv("VINTERP_CC") && *getenv("VINTERP_CC") ? getenv("VINTERP_CC") : "cc");
        vc_free(&prog);
        return 1;
    }
    if (bk == BK_REF && bopt.check) {
        fprintf(stderr, "vinterp: --check compares a fused backend with the reference; the backend is ref\n");
        vc_free(&prog);
        return 1;
    }
    /* Lazy fills (runtime/core/value.h): off under --check, which compares
     * every value a block makes element by element, and by VINTERP_LAZY=0
     * (the tests run programs both ways). */
    if (bopt.check || (getenv("VINTERP_LAZY") && strcmp(getenv("VINTERP_LAZY"), "0") == 0))
        val_lazy_on = 0;
    if (getenv("VINTERP_LAZY_MIN")) {
        int64_t m = 0;
        if (parse_count("VINTERP_LAZY_MIN", getenv("VINTERP_LAZY_MIN"), &m) < 0 || m < 1) {
            if (m < 1)
                fprintf(stderr, "vinterp: VINTERP_LAZY_MIN takes a length of at least 1\n");
            vc_free(&prog);
            return 1;
        }
        val_lazy_min = m;
    }
    /* --float-reassoc, or $VINTERP_FLOAT_REASSOC=1 (0: off) */
    const char *fr = getenv("VINTERP_FLOAT_REASSOC");
    if (fr && strcmp(fr, "0") && strcmp(fr, "1")) {
        fprintf(stderr, "vinterp: VINTERP_FLOAT_REASSOC takes 0 or 1, not '%s'\n", fr);
        vc_free(&prog);
        return 1;
    }
    if (fr && !strcmp(fr, "1"))
        opt.float_reassoc = 1;
    bopt.float_reassoc = opt.float_reassoc;
    if (bopt.check && cb_perturb_parse(getenv("VINTERP_CHECK_PERTURB"), &bopt.perturb) < 0) {
        fprintf(stderr, "vinterp: VINTERP_CHECK_PERTURB takes fsum:D, ulps:N or int:N, not '%s'\n",
                getenv("VINTERP_CHECK_PERTURB"));
        vc_free(&prog);
        return 1;
    }
    if (bk != BK_REF && opt.check && !cuda_check_arch) {
        fprintf(stderr, "vinterp: -c checks arguments instruction by instruction on the reference "
                        "interpreter; use it with --backend=ref or auto\n");
        vc_free(&prog);
        return 1;
    }
    int fused = bk != BK_REF;
    if (fused) {
        if (tier_defaults(&bopt.tier, bk == BK_CUDA ? "cuda" : bk == BK_CPU ? "cpu" : "lcu") < 0) {
            vc_free(&prog);
            return 1;
        }
        if (tier_mode)
            tier_parse_mode(tier_mode, &bopt.tier.mode);
        if (tier_work >= 0)
            bopt.tier.work = tier_work;
        if (tier_min_len >= 0)
            bopt.tier.min_len = tier_min_len;
        if (tier_trace)
            bopt.tier.trace = stderr;
        if (cuda_check_arch)
            bopt.tier.mode = TIER_EAGER; /* compile everything, run nothing */
        /* Tiers build in the background into the cache, then load from it:
         * under --no-cache that cache is the run's own. */
        const char *nc = getenv("VINTERP_NO_CACHE");
        if (bk != BK_LCU && bopt.tier.mode != TIER_EAGER && (jopt.no_cache || (nc && *nc && strcmp(nc, "0")))) {
            if (jit_private_dir(&jopt, why, sizeof why) < 0) {
                fprintf(stderr, "vinterp: %s\n", why);
                vc_free(&prog);
                return 1;
            }
        }
        /* where the tiers keep a program's hot blocks for its next run */
        static char hot_dir[1100];
        if (bk != BK_LCU && bopt.tier.mode != TIER_EAGER && jit_dir(&jopt, hot_dir, sizeof hot_dir) == 0)
            bopt.cache_dir = hot_dir;
    }
    /* Tiers in the background: the interpreter starts on the program as
     * written, the worker inlines it and makes the backend meanwhile. */
    int bg = fused && bk != BK_LCU && bopt.tier.mode == TIER_BACKGROUND && !cuda_check_arch;
    Executor *bgx = NULL;
    if (bg) {
        bgx = bk == BK_CPU ? exec_cpu_new(&jopt) : exec_cuda_new(cuda_device, &jopt, NULL, 1, why, sizeof why);
        if (!bgx) {
            fprintf(stderr, "vinterp: --backend=cuda: %s\n", why);
            vc_free(&prog);
            return 1;
        }
    } else if (fused) {
        InlineStats ist;
        inline_program(&prog, &inl, NULL, &ist);
        VcError ierr;
        memset(&ierr, 0, sizeof ierr);
        if (vc_check(&inl, &ierr) < 0 && !opt.check) {
            report(file, &ierr);
            vc_free(&inl);
            vc_free(&prog);
            return 1;
        }
        vc_check_forget(&inl);
        run = &inl;
        if (bopt.trace || bopt.stats)
            fprintf(stderr, "inline: %d calls inlined, %d kept, %d recursive functions, %d -> %d instructions\n",
                    ist.calls_inlined, ist.calls_kept, ist.recursive_funcs, ist.code_before, ist.code_after);
        Executor *x = bk == BK_LCU ? exec_lcu_new() : bk == BK_CPU ? exec_cpu_new(&jopt) : exec_cuda_new(cuda_device, &jopt, cuda_check_arch, bopt.tier.mode != TIER_EAGER, why, sizeof why);
        if (!x) {
            fprintf(stderr, "vinterp: --backend=cuda: %s\n", why);
            vc_free(&inl);
            vc_free(&prog);
            return 1;
        }
        backend = backend_new(run, &bopt, x, why, sizeof why);
        if (!backend) {
            fprintf(stderr, "vinterp: --backend=%s: %s\n", bk == BK_CPU ? "cpu" : bk == BK_CUDA ? "cuda" : "lcu", why);
            vc_free(&inl);
            vc_free(&prog);
            return 1;
        }
        if (cuda_check_arch) { /* compiled, nothing to run */
            if (bopt.stats)
                backend_report(backend, stderr);
            backend_free(backend);
            vc_free(&inl);
            vc_free(&prog);
            return 0;
        }
    }
    Interp it;
    interp_init(&it, run, &opt);
    it.run_block = backend ? backend_block_hook : NULL;
    it.block_ctx = backend;
    if (backend && profile != PROF_OFF)
        backend_profile_on(backend);
    it.block_at = backend ? backend_block_map(backend) : NULL;
    TierPrep *prep = NULL;
    if (bg) {
        bopt.profiling = profile != PROF_OFF;
        prep = tier_prep_start(&prog, &bopt, bgx, &it); /* NULL: no thread, the reference alone */
        tier_prep_wait_ready(prep);
    }
    prof_start(run, profile);
    double t0 = wall();
    interp_run(&it);
    double t1 = wall();
    if (backend)
        backend_end_run(backend);
    if (opt.time)
        fprintf(stderr, "elapsed time = %f seconds\n", t1 - t0);
    prof_report(stderr);
    if (backend && profile != PROF_OFF)
        backend_profile_report(backend, stderr, profile == PROF_JSON);
    if (prep && profile != PROF_OFF)
        tier_prep_profile_report(prep, stderr, profile == PROF_JSON);
    fflush(stderr);
    for (int64_t i = 0; i < it.sp; i++) {
        val_for_host(it.stk[i]);
        print_value(stdout, it.stk[i]);
    }
    fflush(stdout);
    /* The answer is out. The worker stops: a compile in progress is
     * abandoned (its unit's next compile, in a later run, is unpaced:
     * jit.c's KEY.abandoned). VINTERP_TIER_GRACE_MS lets it finish first. */
    tier_prep_end(prep, 1e-3 * (double)bopt.tier.grace_ms);
    if (bopt.stats)
    {
        fprintf(stderr, "stats: lazy fills: %lld made, %lld of them written out later\n",
                (long long)val_lazy_made, (long long)val_lazy_written);
        fprintf(stderr, "stats: interpreted float sums in parallel (every term an integer, their magnitudes summing below 2^53): %lld, "
                "%lld tried that fell back to left to right\n",
                (long long)interp_fsum_parallel, (long long)interp_fsum_fellback);
    }
    if (backend && bopt.stats)
        backend_report(backend, stderr);
    if (prep && bopt.stats)
        tier_prep_report(prep, stderr);
    if (tier_workers_stuck()) {
        /* A worker is still inside a compiler library: freeing what it
         * reads, or exit()'s teardown, would pull it from under it. */
        fflush(NULL);
        _exit(0);
    }
    interp_free(&it);
    backend_free(backend);
    tier_prep_free(prep);
    if (fused)
        vc_free(&inl);
    vc_free(&prog);
    return 0;
}

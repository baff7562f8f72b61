/* runtime/main.c — the vinterp command line (vcode/SPEC.md §7). */
#define _GNU_SOURCE
#include "runtime/fused/backend.h"
#include "runtime/fused/exec_cpu.h"
#include "runtime/fused/exec_cuda.h"
#include "runtime/fused/cuda_tier.h"
#include "runtime/core/trace.h"
#include "runtime/jit/jit.h"
#include "runtime/core/errors.h"
#include "runtime/interp/interp.h"
#include "runtime/core/print.h"
#include "runtime/core/settings.h"
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

/* The classic's usage text (vcode/SPEC.md §7), the first part of --help. */
static void usage(FILE *f)
{
    fprintf(f,
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

enum { LO_HELP = 1000, LO_VERSION, LO_BACKEND, LO_MAX_STEPS, LO_MAX_DEPTH, LO_NO_SPAWN, LO_PROFILE, LO_PROGRESS,
       LO_FUSION, LO_NO_FILES, LO_CHECK, LO_CHECK_REL, LO_CACHE_DIR, LO_NO_CACHE, LO_CUDA_CHECK, LO_TIER,
       LO_TIER_WORK, LO_TIER_MIN_LEN, LO_FLOAT_REASSOC, LO_SETTINGS };

/* The options beyond the classic ones: getopt's table and --help's text. */
static const struct {
    const char *name;
    int has_arg, id;
    const char *arg, *doc;
} long_options[] = {
    { "backend", required_argument, LO_BACKEND, "=NAME",
      "execution backend: auto (the default: cuda when a GPU is usable, else cpu when a C compiler is, "
      "else ref), ref (the reference interpreter), lcu (fused block plans run by the λcu evaluator), cpu "
      "(fused kernels compiled to C), cuda (fused kernels on the GPU)" },
    { "check", no_argument, LO_CHECK, "", "run the reference beside the backend and compare every block" },
    { "check-rel", required_argument, LO_CHECK_REL, "=R",
      "a relative allowance for floats under --check beyond their error bounds (default 0)" },
    { "cache-dir", required_argument, LO_CACHE_DIR, "=DIR", "the compiled-kernel cache" },
    { "no-cache", no_argument, LO_NO_CACHE, "", "compile kernels without the cache" },
    { "cuda-check", optional_argument, LO_CUDA_CHECK, "[=ARCH]",
      "generate the CUDA of every block and compile it with NVRTC for ARCH (default sm_90), without running; "
      "no GPU needed" },
    { "fusion", required_argument, LO_FUSION, "=on|off", "fuse kernels in block plans (default on)" },
    { "float-reassoc", no_argument, LO_FLOAT_REASSOC, "",
      "float + and * reductions of more than 65536 elements fold by chunks, on several threads: faster, last "
      "digits differ from the classic's" },
    { "tier", required_argument, LO_TIER, "=background|sync|eager|off",
      "when blocks are translated: as they get hot, on a worker (background, the default) or at once (sync); "
      "all before the run (eager); never (off)" },
    { "tier-work", required_argument, LO_TIER_WORK, "=N", "interpreter work (elements) before a block is promoted" },
    { "tier-min-len", required_argument, LO_TIER_MIN_LEN, "=N", "shortest run a promoted block takes fused" },
    { "max-steps", required_argument, LO_MAX_STEPS, "=N", "stop with an error after N instructions (0: no limit)" },
    { "max-depth", required_argument, LO_MAX_DEPTH, "=N", "limit the call depth (default 10000000)" },
    { "no-spawn", no_argument, LO_NO_SPAWN, "", "refuse SPAWN (for untrusted programs)" },
    { "no-files", no_argument, LO_NO_FILES, "", "FOPEN fails (for untrusted programs)" },
    { "progress", no_argument, LO_PROGRESS, "", "show progress on stderr when it is a terminal" },
    { "profile", optional_argument, LO_PROFILE, "[=text|json]",
      "calls, inclusive and exclusive time per VCODE function, on stderr at the end of the run" },
    { "settings", no_argument, LO_SETTINGS, "", "every environment variable, as a Markdown table" },
    { "help", no_argument, LO_HELP, "", "this text, on stdout" },
    { "version", no_argument, LO_VERSION, "", "the version and the backends" },
};
#define N_LONG_OPTIONS (int)(sizeof long_options / sizeof long_options[0])

/* The -d words: the classic's, then ours (set_debug's order). */
static const char *const debug_words[] = { "abort", "lex",   "link",   "program", "runtime", "command", "stack",
                                           "values", "heap", "fusion", "stats",   "tier" };

/* TEXT wrapped at 100 columns, each line after INDENT spaces. */
static void print_wrapped(FILE *f, const char *text, int indent)
{
    const char *p = text;
    while (*p) {
        int n = (int)strlen(p);
        if (n > 100 - indent) {
            n = 100 - indent;
            while (n > 0 && p[n] != ' ')
                n--;
            if (n == 0)
                n = (int)strcspn(p, " ");
        }
        fprintf(f, "%*s%.*s\n", indent, "", n, p);
        p += n;
        while (*p == ' ')
            p++;
    }
}

static void help(FILE *f)
{
    usage(f);
    fprintf(f, "Options of this interpreter beyond the classic ones:\n");
    for (int i = 0; i < N_LONG_OPTIONS; i++) {
        fprintf(f, "  --%s%s\n", long_options[i].name, long_options[i].arg);
        print_wrapped(f, long_options[i].doc, 6);
    }
    fprintf(f, "  -d fusion\n      each block's kernels, ILP and fused kernels when translated\n"
               "  -d stats\n      translation and execution figures at exit\n"
               "  -d tier\n      each block's promotion, translation and installation as it happens\n"
               "  -d trace=FILE\n      a Chrome trace (Perfetto, chrome://tracing) of launches, copies, waits, "
               "allocations,\n      compiles, the device tier's instructions and fused block runs\n");
    settings_print(f, 0);
    fprintf(f, "Every setting, test ones included: vinterp --settings (runtime/SETTINGS.md)\n");
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

/* A count option's value: digits only, at least LO. */
static int parse_count(const char *opt, const char *s, int64_t lo, int64_t *out)
{
    int r = settings_parse_count(s, lo, INT64_MAX, out);
    if (r == -1)
        fprintf(stderr, "vinterp: %s: '%s' is not a count of at least %lld\n", opt, s, (long long)lo);
    else if (r == -2)
        fprintf(stderr, "vinterp: %s: '%s' is too large\n", opt, s);
    return r < 0 ? -1 : 0;
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
    fprintf(stderr, "vinterp: --backend: '%s' is not one of auto, ref, lcu, cpu or cuda\n", s);
    return -1;
}

/* Everything the command line and the environment decided. */
typedef struct {
    InterpOptions opt;
    JitOptions jopt;
    BackendOptions bopt;
    ProfileMode profile;
    BackendKind bk;
    int bk_given; /* --backend on the command line (not the environment's default) */
    int dump_program, cuda_device, tier_trace;
    const char *cuda_check_arch; /* --cuda-check: compile only */
    /* --tier and its thresholds: the command line's, applied over the
     * backend's defaults and the environment once the backend is known */
    const char *tier_mode;
    int64_t tier_work, tier_min_len;
    const char *file;
} Cli;

/* -d WORD (the classic's words, then ours). 0, or -1 (reported). */
static int set_debug(Cli *cl, const char *w)
{
    if (strncmp(w, "trace=", 6) == 0) { /* a Chrome trace (runtime/core/trace.h) */
        if (!w[6] || trace_open(w + 6) != 0) {
            fprintf(stderr, "vinterp: -d trace=FILE: cannot write '%s': %s\n", w + 6, w[6] ? strerror(errno) : "no file named");
            return -1;
        }
        return 0;
    }
    int k = 0;
    while (k < (int)(sizeof debug_words / sizeof debug_words[0]) && strcmp(w, debug_words[k]))
        k++;
    switch (k) {
    case 0: rt_set_abort(1); break;
    case 1: vc_trace.lex_trace = stdout; break;
    case 2: vc_trace.link_trace = 1; break;
    case 3: cl->dump_program = 1; break;
    case 4: cl->opt.trace_runtime = 1; break;
    case 5: cl->opt.trace_command = 1; break;
    case 6: cl->opt.trace_stack = 1; break;
    case 7: cl->opt.trace_values = 1; break;
    case 8: cl->opt.trace_heap = 1; break;
    case 9: cl->bopt.trace = stderr; break;
    case 10: cl->bopt.stats = 1; break;
    case 11: cl->tier_trace = 1; break;
    default:
        fprintf(stderr, "vinterp: -d: '%s' is not one of", w);
        for (int i = 0; i < (int)(sizeof debug_words / sizeof debug_words[0]); i++)
            fprintf(stderr, " %s", debug_words[i]);
        fprintf(stderr, " trace=FILE\n");
        return -1;
    }
    return 0;
}

/* getopt's C (':' a value missing, '?' an unknown option) for ARG, the
 * word it read last, in one line. */
static void bad_option(int c, const char *arg)
{
    if (c == ':' && optopt > 0 && optopt < 256)
        fprintf(stderr, "vinterp: -%c needs a value\n", optopt);
    else if (c == ':')
        fprintf(stderr, "vinterp: %s needs a value\n", arg);
    else if (optopt > 0 && optopt < 256)
        fprintf(stderr, "vinterp: unknown option -%c (vinterp --help lists them)\n", optopt);
    else
        fprintf(stderr, "vinterp: unknown option %s (vinterp --help lists them)\n", arg);
}

/* Read the environment and the command line into CL. 0: go on; 1: done
 * (--help, --version, --settings); -1: an error, reported. */
static int parse_args(int argc, char **argv, Cli *cl)
{
    memset(cl, 0, sizeof *cl);
    cl->opt.max_depth = 10000000;
    cl->bopt.fusion = 1;
    cl->profile = PROF_OFF;
    cl->tier_work = cl->tier_min_len = -1;
    if (settings_load(stderr) < 0)
        return -1;
    cl->bk = (BackendKind)settings_choice(SET_BACKEND, BK_AUTO); /* auto|ref|lcu|cpu|cuda: BackendKind's order */
    struct option longopts[N_LONG_OPTIONS + 1];
    memset(longopts, 0, sizeof longopts);
    for (int i = 0; i < N_LONG_OPTIONS; i++) {
        longopts[i].name = long_options[i].name;
        longopts[i].has_arg = long_options[i].has_arg;
        longopts[i].val = long_options[i].id;
    }
    opterr = 0; /* our messages, in our voice */
    int c;
    while ((c = getopt_long(argc, argv, ":cd:gm:r:tl:0123456789", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': cl->opt.check = 1; break;
        case 't': cl->opt.time = 1; break;
        case 'g': break;
        case 'l': /* accepted; FUSED is rejected when it is used */
            if (access(optarg, R_OK) != 0) {
                fprintf(stderr, "vinterp: -l: '%s': %s\n", optarg, strerror(errno));
                return -1;
            }
            break;
        case 'm': {
            int64_t units;
            if (parse_count("-m", optarg, 0, &units) < 0)
                return -1;
            if (units > MEM_UNITS_MAX) {
                fprintf(stderr, "vinterp: -m: '%s' is more than %lld units of 8 bytes\n", optarg,
                        (long long)MEM_UNITS_MAX);
                return -1;
            }
            mem_units = units;
            break;
        }
        case 'd':
            if (set_debug(cl, optarg) < 0)
                return -1;
            break;
        case LO_HELP: help(stdout); return 1;
        case LO_SETTINGS: settings_print_markdown(stdout); return 1;
        case LO_VERSION:
            printf("vinterp %s (backends: auto, ref, lcu, cpu, cuda)\n", VINTERP_VERSION);
            return 1;
        case LO_BACKEND:
            if (parse_backend(optarg, &cl->bk) < 0)
                return -1;
            cl->bk_given = 1;
            break;
        case LO_CHECK: cl->bopt.check = 1; break;
        case LO_CHECK_REL: {
            char *end;
            cl->bopt.check_rel = strtod(optarg, &end);
            if (*end || !(cl->bopt.check_rel >= 0)) {
                fprintf(stderr, "vinterp: --check-rel: '%s' is not a tolerance of at least 0\n", optarg);
                return -1;
            }
            break;
        }
        case LO_CACHE_DIR:
            if (!*optarg) {
                fprintf(stderr, "vinterp: --cache-dir: '' is not a directory name\n");
                return -1;
            }
            cl->jopt.cache_dir = optarg;
            break;
        case LO_NO_CACHE: cl->jopt.no_cache = 1; break;
        case LO_CUDA_CHECK: cl->cuda_check_arch = optarg ? optarg : "sm_90"; break;
        case LO_TIER: {
            TierMode m;
            if (tier_parse_mode(optarg, &m) < 0) {
                fprintf(stderr, "vinterp: --tier: '%s' is not one of background, sync, eager or off\n", optarg);
                return -1;
            }
            cl->tier_mode = optarg;
            break;
        }
        case LO_TIER_WORK:
            if (parse_count("--tier-work", optarg, 0, &cl->tier_work) < 0)
                return -1;
            break;
        case LO_TIER_MIN_LEN:
            if (parse_count("--tier-min-len", optarg, 0, &cl->tier_min_len) < 0)
                return -1;
            break;
        case LO_FUSION:
            if (!strcmp(optarg, "on"))
                cl->bopt.fusion = 1;
            else if (!strcmp(optarg, "off"))
                cl->bopt.fusion = 0;
            else {
                fprintf(stderr, "vinterp: --fusion: '%s' is not on or off\n", optarg);
                return -1;
            }
            break;
        case LO_MAX_STEPS:
            if (parse_count("--max-steps", optarg, 0, &cl->opt.max_steps) < 0)
                return -1;
            break;
        case LO_MAX_DEPTH:
            if (parse_count("--max-depth", optarg, 1, &cl->opt.max_depth) < 0)
                return -1;
            break;
        case LO_NO_SPAWN: cl->opt.no_spawn = 1; break;
        case LO_FLOAT_REASSOC: cl->opt.float_reassoc = 1; break;
        case LO_PROGRESS: cl->opt.progress = 1; break;
        case LO_NO_FILES: cl->opt.no_files = 1; break;
        case LO_PROFILE:
            if (!optarg || !strcmp(optarg, "text"))
                cl->profile = PROF_TEXT;
            else if (!strcmp(optarg, "json"))
                cl->profile = PROF_JSON;
            else {
                fprintf(stderr, "vinterp: --profile: '%s' is not text or json\n", optarg);
                return -1;
            }
            break;
        case '0': case '1': case '2': case '3': case '4':
        case '5': case '6': case '7': case '8': case '9':
            cl->cuda_device = c - '0';
            break; /* GPU selection (--backend=cuda / auto) */
        case 'r':
            fprintf(stderr, "vinterp: -r: not supported (the classic accepts it only to print its usage)\n");
            return -1;
        default: /* ':' a value missing, '?' an unknown option */
            bad_option(c, argv[optind - 1]);
            return -1;
        }
    }
    if (optind != argc - 1) {
        if (optind == argc)
            fprintf(stderr, "vinterp: Please supply file name. (vinterp --help lists the options)\n");
        else
            fprintf(stderr, "vinterp: Please supply one file name, not %d ('%s', '%s'%s)\n", argc - optind,
                    argv[optind], argv[optind + 1], argc - optind > 2 ? ", ..." : "");
        return -1;
    }
    cl->file = argv[optind];
    return 0;
}

/* The run: what main makes, freed on one path (run_free). */
typedef struct {
    Program prog, inl;
    int have_prog, have_inl;
    Program *run;      /* the program the interpreter runs: prog or inl */
    Backend *backend;  /* a fused backend made before the run */
    TierPrep *prep;    /* or the tiers' preparation, in the background */
    Executor *bgx;     /* its executor, until it starts */
    int fused, bg;
    double t_start, parse_s, run_s; /* -d stats' summary */
    char why[600];
} Run;

static void run_free(Run *r)
{
    backend_free(r->backend);
    tier_prep_free(r->prep);
    if (r->have_inl)
        vc_free(&r->inl);
    if (r->have_prog)
        vc_free(&r->prog);
}

/* Parse, link and check CL's file into R->prog. 0 or -1 (reported). */
static int load_program(Cli *cl, Run *r)
{
    double t0 = wall();
    VcError err;
    r->have_prog = 1;
    if (vc_parse_file(cl->file, &r->prog, &err) < 0 || vc_link(&r->prog, &err) < 0) {
        report(cl->file, &err);
        return -1;
    }
    /* Under -c the run-time checks report with the classic messages, so
     * the static checker's findings are not fatal then, and its warnings
     * (IF on an Int, IF arms of different depths) are not printed. */
    if (cl->opt.check)
        r->prog.warn = NULL;
    if (vc_check(&r->prog, &err) < 0 && !cl->opt.check) {
        report(cl->file, &err);
        return -1;
    }
    if (cl->dump_program) {
        vc_print_program(stderr, &r->prog);
        fflush(stderr);
    }
    vc_check_forget(&r->prog);
    mem_set_limit((int64_t)mem_units);
    r->run = &r->prog;
    r->parse_s = wall() - t0;
    return 0;
}

/* Which backend: auto takes cuda when a device is usable, else cpu when a
 * C compiler is, else the reference interpreter; and the settings that go
 * with it. 0 or -1 (reported). */
static int choose_backend(Cli *cl, Run *r)
{
    /* The instruction traces describe the reference's one instruction at a
     * time run of the program as written, and -c checks each instruction's
     * arguments as it runs: without --backend on the command line (auto,
     * or $VINTERP_BACKEND's default) they run the reference. */
    const InterpOptions *o = &cl->opt;
    int traced = o->check || o->trace_command || o->trace_stack || o->trace_values || o->trace_runtime || o->trace_heap;
    if (traced && !cl->bk_given && !cl->cuda_check_arch)
        cl->bk = BK_REF;
    if (cl->cuda_check_arch)
        cl->bk = BK_CUDA;
    else if (cl->bk == BK_CUDA || cl->bk == BK_AUTO) {
        int have = cuda_usable(cl->cuda_device, r->why, sizeof r->why);
        if (cl->bk == BK_CUDA && !have) {
            fprintf(stderr, "vinterp: --backend=cuda: %s\n", r->why);
            return -1;
        }
        if (cl->bk == BK_AUTO)
            cl->bk = have ? BK_CUDA : jit_have_compiler() ? BK_CPU : BK_REF;
    }
    if (cl->bk == BK_CPU && !jit_have_compiler()) {
        fprintf(stderr, "vinterp: --backend=cpu: no C compiler ('%s' is not on PATH; set VINTERP_CC)\n",
                settings_text(SET_CC) && *settings_text(SET_CC) ? settings_text(SET_CC) : "cc");
        return -1;
    }
    if (cl->bk == BK_REF && cl->bopt.check) {
        fprintf(stderr, "vinterp: --check compares a fused backend with the reference; the backend is ref\n");
        return -1;
    }
    /* Lazy fills (runtime/core/value.h): off under --check, which compares
     * every value a block makes element by element, and by VINTERP_LAZY=0
     * (the tests run programs both ways). */
    if (cl->bopt.check || settings_count(SET_LAZY, 1) == 0)
        val_lazy_on = 0;
    val_lazy_min = settings_count(SET_LAZY_MIN, val_lazy_min);
    /* --float-reassoc, or $VINTERP_FLOAT_REASSOC=1 */
    if (settings_count(SET_FLOAT_REASSOC, 0) == 1)
        cl->opt.float_reassoc = 1;
    cl->bopt.float_reassoc = cl->opt.float_reassoc;
    if (cl->bopt.check && cb_perturb_parse(settings_text(SET_CHECK_PERTURB), &cl->bopt.perturb) < 0) {
        fprintf(stderr, "vinterp: VINTERP_CHECK_PERTURB: '%s' is not fsum:D, ulps:N or int:N\n",
                settings_text(SET_CHECK_PERTURB));
        return -1;
    }
    if (cl->bk != BK_REF && cl->opt.check && !cl->cuda_check_arch) {
        fprintf(stderr, "vinterp: -c checks arguments instruction by instruction on the reference "
                        "interpreter; use it with --backend=ref or auto\n");
        return -1;
    }
    r->fused = cl->bk != BK_REF;
    return 0;
}

/* The tier options of a fused backend: its defaults, the environment's,
 * the command line's. 0 or -1 (reported). */
static int set_tiers(Cli *cl, Run *r)
{
    BackendOptions *b = &cl->bopt;
    tier_defaults(&b->tier, cl->bk == BK_CUDA ? "cuda" : cl->bk == BK_CPU ? "cpu" : "lcu");
    if (cl->tier_mode)
        tier_parse_mode(cl->tier_mode, &b->tier.mode);
    if (cl->tier_work >= 0)
        b->tier.work = cl->tier_work;
    if (cl->tier_min_len >= 0)
        b->tier.min_len = cl->tier_min_len;
    if (cl->tier_trace)
        b->tier.trace = stderr;
    if (cl->cuda_check_arch)
        b->tier.mode = TIER_EAGER; /* compile everything, run nothing */
    /* Tiers build in the background into the cache, then load from it:
     * under --no-cache that cache is the run's own. */
    int tiered_cache = cl->bk != BK_LCU && b->tier.mode != TIER_EAGER;
    if (tiered_cache && (cl->jopt.no_cache || settings_count(SET_NO_CACHE, 0) == 1) &&
        jit_private_dir(&cl->jopt, r->why, sizeof r->why) < 0) {
        fprintf(stderr, "vinterp: %s\n", r->why);
        return -1;
    }
    if (cl->jopt.private_dir)
        b->tier.after = TIER_AFTER_OFF; /* the run's own cache goes with it */
    /* where the tiers keep a program's hot blocks for its next run */
    static char hot_dir[1100];
    if (tiered_cache && jit_dir(&cl->jopt, hot_dir, sizeof hot_dir) == 0)
        b->cache_dir = hot_dir;
    return 0;
}

/* Make the fused backend: in the background (the tiers' worker inlines the
 * program and makes it while the interpreter starts on the program as
 * written), or here, on the inlined program. 0, 1 when there is nothing
 * to run (--cuda-check), or -1 (reported). */
static int set_up_fused(Cli *cl, Run *r)
{
    if (set_tiers(cl, r) < 0)
        return -1;
    BackendOptions *b = &cl->bopt;
    r->bg = cl->bk != BK_LCU && b->tier.mode == TIER_BACKGROUND && !cl->cuda_check_arch;
    if (r->bg) {
        r->bgx = cl->bk == BK_CPU ? exec_cpu_new(&cl->jopt)
                                  : exec_cuda_new(cl->cuda_device, &cl->jopt, NULL, 1, r->why, sizeof r->why);
        if (!r->bgx) {
            fprintf(stderr, "vinterp: --backend=cuda: %s\n", r->why);
            return -1;
        }
        return 0;
    }
    InlineStats ist;
    inline_program(&r->prog, &r->inl, NULL, &ist);
    r->have_inl = 1;
    VcError ierr;
    memset(&ierr, 0, sizeof ierr);
    if (vc_check(&r->inl, &ierr) < 0 && !cl->opt.check) {
        report(cl->file, &ierr);
        return -1;
    }
    vc_check_forget(&r->inl);
    r->run = &r->inl;
    if (b->trace || b->stats)
        fprintf(stderr, "inline: %d calls inlined, %d kept, %d recursive functions, %d -> %d instructions\n",
                ist.calls_inlined, ist.calls_kept, ist.recursive_funcs, ist.code_before, ist.code_after);
    Executor *x = cl->bk == BK_LCU ? exec_lcu_new()
                  : cl->bk == BK_CPU
                      ? exec_cpu_new(&cl->jopt)
                      : exec_cuda_new(cl->cuda_device, &cl->jopt, cl->cuda_check_arch, b->tier.mode != TIER_EAGER,
                                      r->why, sizeof r->why);
    if (!x) {
        fprintf(stderr, "vinterp: --backend=cuda: %s\n", r->why);
        return -1;
    }
    r->backend = backend_new(r->run, b, x, r->why, sizeof r->why);
    if (!r->backend) {
        fprintf(stderr, "vinterp: --backend=%s: %s\n", cl->bk == BK_CPU ? "cpu" : cl->bk == BK_CUDA ? "cuda" : "lcu",
                r->why);
        return -1;
    }
    if (cl->cuda_check_arch) { /* compiled, nothing to run */
        if (b->stats)
            backend_report(r->backend, stderr);
        return 1;
    }
    return 0;
}

/* -d stats' first line: where the time went, for a user. */
static void print_summary(const Cli *cl, const Run *r)
{
    BackendTimes t;
    double worker = 0.0;
    int have = 0;
    if (r->backend) {
        backend_times(r->backend, &t);
        have = 1;
    } else if (r->prep)
        have = tier_prep_times(r->prep, &t, &worker) == 0;
    fprintf(stderr, "stats: summary: %.3f s in all: parse and check %.3f s; the run %.3f s", wall() - r->t_start,
            r->parse_s, r->run_s);
    if (!have) {
        fprintf(stderr, ", all of it in the reference interpreter (%s)\n",
                !r->fused ? "--backend=ref" : "no fused code was ready");
        return;
    }
    fprintf(stderr, ", of which fused code %.3f s", t.fused_s);
    if (cl->bk == BK_CUDA)
        fprintf(stderr, " and moving data to and from the device %.3f s", t.transfer_s);
    if (r->bg)
        fprintf(stderr, "; translation %.3f s and compiles %.3f s on the tiers' worker (busy %.3f s beside the run)\n",
                t.translate_s, t.compile_s, worker);
    else
        fprintf(stderr, "; translation %.3f s and compiles %.3f s before the blocks' first runs\n", t.translate_s,
                t.compile_s);
}

/* Run the program, print the stack, report. */
static void run_program(Cli *cl, Run *r)
{
    Interp it;
    interp_init(&it, r->run, &cl->opt);
    if (cl->bk == BK_CUDA && cuda_tier_current()) {
        it.dev_op = cuda_tier_op;
        it.dev_ops = cuda_tier_ops();
        it.dev_settle = cuda_tier_settle;
        it.dev_ctx = cuda_tier_current();
    }
    it.run_block = r->backend ? backend_block_hook : NULL;
    it.block_ctx = r->backend;
    if (r->backend && cl->profile != PROF_OFF)
        backend_profile_on(r->backend);
    it.block_at = r->backend ? backend_block_map(r->backend) : NULL;
    if (r->bg) {
        cl->bopt.profiling = cl->profile != PROF_OFF;
        r->prep = tier_prep_start(&r->prog, &cl->bopt, r->bgx, &it); /* NULL: no thread, the reference alone */
        r->bgx = NULL;
        tier_prep_wait_ready(r->prep);
    }
    prof_start(r->run, cl->profile);
    double t0 = wall();
    interp_run(&it);
    double t1 = wall();
    r->run_s = t1 - t0;
    if (r->backend)
        backend_end_run(r->backend);
    if (cl->opt.time)
        fprintf(stderr, "elapsed time = %f seconds\n", t1 - t0);
    prof_report(stderr);
    if (r->backend && cl->profile != PROF_OFF)
        backend_profile_report(r->backend, stderr, cl->profile == PROF_JSON);
    if (r->prep && cl->profile != PROF_OFF)
        tier_prep_profile_report(r->prep, stderr, cl->profile == PROF_JSON);
    fflush(stderr);
    for (int64_t i = 0; i < it.sp; i++) {
        val_for_host(it.stk[i]);
        print_value(stdout, it.stk[i]);
    }
    fflush(stdout);
    /* The answer is out. The worker stops: a compile in progress is
     * abandoned (its unit's next compile, in a later run, is unpaced:
     * jit.c's KEY.abandoned). VINTERP_TIER_GRACE_MS lets it finish first. */
    tier_prep_end(r->prep, 1e-3 * (double)cl->bopt.tier.grace_ms);
    if (cl->bopt.stats)
        print_summary(cl, r);
    if (cl->bopt.stats) {
        fprintf(stderr, "stats: lazy fills: %lld made, %lld of them written out later\n", (long long)val_lazy_made,
                (long long)val_lazy_written);
        fprintf(stderr, "stats: device results: %lld made with no host storage, %lld of them given it later\n",
                (long long)val_remote_made, (long long)val_remote_hosted);
        fprintf(stderr,
                "stats: interpreted float sums in parallel (every term an integer, their magnitudes summing below "
                "2^53): %lld, %lld tried that fell back to left to right\n",
                (long long)interp_fsum_parallel, (long long)interp_fsum_fellback);
    }
    if (r->backend && cl->bopt.stats)
        backend_report(r->backend, stderr);
    if (r->prep && cl->bopt.stats)
        tier_prep_report(r->prep, stderr);
    if (tier_workers_stuck()) {
        /* A worker is still inside a compiler library: freeing what it
         * reads, or exit()'s teardown, would pull it from under it. */
        fflush(NULL);
        _exit(0);
    }
    interp_free(&it);
}

int main(int argc, char **argv)
{
    /* first: the parser's big arrays then come from the heap the vectors
     * reuse, not from mappings that are returned (bh_16k peak RSS -1 MB) */
    mem_init();
    Cli cl;
    int rc = parse_args(argc, argv, &cl);
    if (rc != 0)
        return rc < 0 ? 1 : 0;
    static char outbuf[1 << 16];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
    Run r;
    memset(&r, 0, sizeof r);
    r.t_start = wall();
    rc = load_program(&cl, &r);
    if (rc == 0)
        rc = choose_backend(&cl, &r);
    if (rc == 0 && r.fused)
        rc = set_up_fused(&cl, &r);
    if (rc == 0)
        run_program(&cl, &r);
    if (r.bgx)
        r.bgx->free(r.bgx);
    run_free(&r);
    return rc < 0 ? 1 : 0;
}

/* runtime/main.c — the vinterp command line (VCODE.md §7). */
#define _GNU_SOURCE
#include "runtime/backend.h"
#include "runtime/errors.h"
#include "runtime/interp.h"
#include "runtime/print.h"
#include "runtime/profile.h"
#include "runtime/value.h"
#include "translate/inline.h"
#include "vcode/printer.h"
#include "vcode/program.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VINTERP_VERSION "0.1.0"

static unsigned long mem_units = 1000000;

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
            "\t -m <num>\t vector stack size in number of doubles (default %lu)\n"
            "\t -t\t\t time program execution\n",
            mem_units);
}

static void help(void)
{
    usage();
    fprintf(stderr,
            "Options of this interpreter beyond the classic ones:\n"
            "\t --backend=NAME\t execution backend: ref (the reference interpreter), lcu (fused\n"
            "\t\t\t block plans run by the λcu evaluator)\n"
            "\t --fusion=on|off\t fuse kernels in block plans (default on)\n"
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
       LO_FUSION, LO_NO_FILES };

int main(int argc, char **argv)
{
    InterpOptions opt;
    memset(&opt, 0, sizeof opt);
    opt.max_depth = 10000000;
    int dump_program = 0;
    int use_lcu = 0;
    BackendOptions bopt;
    memset(&bopt, 0, sizeof bopt);
    bopt.fusion = 1;
    bopt.ilp_timeout = 0.1;
    ProfileMode profile = PROF_OFF;
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
            char *end;
            if (!optarg[0] || optarg[0] == '-' || (strtoul(optarg, &end, 10), *end)) {
                usage();
                return 1;
            }
            mem_units = strtoul(optarg, NULL, 10);
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
            else {
                usage();
                return 1;
            }
            break;
        case LO_HELP: help(); return 0;
        case LO_VERSION: printf("vinterp %s (backends: ref, lcu)\n", VINTERP_VERSION); return 0;
        case LO_BACKEND:
            if (!strcmp(optarg, "ref"))
                use_lcu = 0;
            else if (!strcmp(optarg, "lcu"))
                use_lcu = 1;
            else {
                fprintf(stderr, "vinterp: unknown backend '%s' (available: ref, lcu)\n", optarg);
                return 1;
            }
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
        case LO_MAX_STEPS: opt.max_steps = strtoll(optarg, NULL, 10); break;
        case LO_MAX_DEPTH: opt.max_depth = strtoll(optarg, NULL, 10); break;
        case LO_NO_SPAWN: opt.no_spawn = 1; break;
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
            break; /* GPU selection of the CUDA build: accepted, no effect yet */
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
     * the static checker's findings are not fatal then. */
    if (vc_check(&prog, &err) < 0 && !opt.check) {
        report(file, &err);
        vc_free(&prog);
        return 1;
    }
    if (dump_program) {
        vc_print_program(stderr, &prog);
        fflush(stderr);
    }
    mem_set_limit((int64_t)mem_units);
    /* The fused backend runs the inlined program, block by block. */
    Program inl;
    Program *run = &prog;
    Backend *backend = NULL;
    memset(&inl, 0, sizeof inl);
    if (use_lcu) {
        InlineStats ist;
        inline_program(&prog, &inl, NULL, &ist);
        VcError ierr;
        if (vc_check(&inl, &ierr) < 0 && !opt.check) {
            report(file, &ierr);
            return 1;
        }
        run = &inl;
        backend = backend_lcu_new(run, &bopt);
        if (bopt.trace || bopt.stats)
            fprintf(stderr, "inline: %d calls inlined, %d kept, %d recursive functions, %d -> %d instructions\n",
                    ist.calls_inlined, ist.calls_kept, ist.recursive_funcs, ist.code_before, ist.code_after);
    }
    Interp it;
    interp_init(&it, run, &opt);
    it.backend = backend;
    if (backend && profile != PROF_OFF)
        backend_profile_on(backend);
    it.block_at = backend ? backend_block_map(backend) : NULL;
    prof_start(run, profile);
    double t0 = wall();
    interp_run(&it);
    double t1 = wall();
    if (opt.time)
        fprintf(stderr, "elapsed time = %f seconds\n", t1 - t0);
    prof_report(stderr);
    if (backend && profile != PROF_OFF)
        backend_profile_report(backend, stderr, profile == PROF_JSON);
    fflush(stderr);
    for (int64_t i = 0; i < it.sp; i++)
        print_value(stdout, it.stk[i]);
    fflush(stdout);
    if (backend && bopt.stats)
        backend_report(backend, stderr);
    interp_free(&it);
    backend_free(backend);
    mem_release_cache();
    if (use_lcu)
        vc_free(&inl);
    vc_free(&prog);
    return 0;
}

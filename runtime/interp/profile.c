/* runtime/interp/profile.c — see profile.h. Each call records its start time; the
 * return adds the elapsed time to the function's inclusive total and
 * subtracts it from the caller's exclusive total. Recursive calls count
 * each activation; inclusive time counts only the outermost activation of
 * a function so that recursion does not count the same time twice. */
#include "runtime/interp/profile.h"
#include "runtime/core/clock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int64_t calls;
    double incl, excl;
    int64_t active;     /* activations on the call stack */
} FuncProfile;

typedef struct {
    int func;
    double start;
    double child;       /* time spent in callees of this activation */
} Frame;

static const Program *prog;
static ProfileMode mode;
static FuncProfile *funcs;
static Frame *frames;
static int64_t nframes, capframes;
static double t_begin;

void prof_start(const Program *p, ProfileMode m)
{
    prog = p;
    mode = m;
    if (m == PROF_OFF)
        return;
    funcs = calloc((size_t)(p->nfuncs ? p->nfuncs : 1), sizeof *funcs);
    capframes = 1024;
    frames = malloc((size_t)capframes * sizeof *frames);
    if (!funcs || !frames) {
        fprintf(stderr, "vinterp: out of memory for the profiler\n");
        mode = PROF_OFF;
        return;
    }
    t_begin = rt_seconds();
}

int prof_enabled(void) { return mode != PROF_OFF; }

void prof_enter(int func)
{
    if (nframes == capframes) {
        capframes *= 2;
        Frame *f = realloc(frames, (size_t)capframes * sizeof *f);
        if (!f) {
            fprintf(stderr, "vinterp: out of memory for the profiler\n");
            exit(1);
        }
        frames = f;
    }
    Frame *fr = &frames[nframes++];
    fr->func = func;
    fr->start = rt_seconds();
    fr->child = 0.0;
    funcs[func].calls++;
    funcs[func].active++;
}

void prof_leave(void)
{
    if (nframes == 0)
        return;
    Frame *fr = &frames[--nframes];
    double dt = rt_seconds() - fr->start;
    FuncProfile *fp = &funcs[fr->func];
    fp->excl += dt - fr->child;
    if (--fp->active == 0)
        fp->incl += dt;
    if (nframes > 0)
        frames[nframes - 1].child += dt;
}

static int by_excl(const void *a, const void *b)
{
    const FuncProfile *x = &funcs[*(const int *)a], *y = &funcs[*(const int *)b];
    if (x->excl != y->excl)
        return x->excl < y->excl ? 1 : -1;
    return *(const int *)a - *(const int *)b;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

void prof_report(FILE *f)
{
    if (mode == PROF_OFF)
        return;
    while (nframes > 0)
        prof_leave();
    double total = rt_seconds() - t_begin;
    int *order = malloc((size_t)(prog->nfuncs ? prog->nfuncs : 1) * sizeof *order);
    int n = 0;
    for (int i = 0; i < prog->nfuncs; i++)
        if (funcs[i].calls)
            order[n++] = i;
    qsort(order, (size_t)n, sizeof *order, by_excl);
    if (mode == PROF_JSON) {
        fprintf(f, "{\"total_seconds\": %.9f, \"functions\": [", total);
        for (int k = 0; k < n; k++) {
            const FuncProfile *fp = &funcs[order[k]];
            fprintf(f, "%s\n  {\"name\": ", k ? "," : "");
            json_string(f, prog->funcs[order[k]].name);
            fprintf(f, ", \"line\": %d, \"calls\": %lld, \"inclusive_seconds\": %.9f, "
                       "\"exclusive_seconds\": %.9f}",
                    prog->funcs[order[k]].line, (long long)fp->calls, fp->incl, fp->excl);
        }
        fprintf(f, "\n]}\n");
    } else {
        fprintf(f, "profile: %.6f s in all, %d functions called; by exclusive time\n", total, n);
        fprintf(f, "%-32s %12s %12s %7s %12s %7s\n", "function", "calls", "incl s", "incl%", "excl s", "excl%");
        for (int k = 0; k < n; k++) {
            const FuncProfile *fp = &funcs[order[k]];
            double pi = total > 0 ? 100.0 * fp->incl / total : 0.0;
            double pe = total > 0 ? 100.0 * fp->excl / total : 0.0;
            fprintf(f, "%-32.32s %12lld %12.6f %6.1f%% %12.6f %6.1f%%\n", prog->funcs[order[k]].name,
                    (long long)fp->calls, fp->incl, pi, fp->excl, pe);
        }
    }
    fflush(f);
    free(order);
    free(funcs);
    free(frames);
    funcs = NULL;
    frames = NULL;
    mode = PROF_OFF;
}

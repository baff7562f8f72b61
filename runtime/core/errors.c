/* runtime/core/errors.c — fatal run-time errors with the VCODE location. */
#include "runtime/core/errors.h"
#include "vcode/optable.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const Program *cur_prog;
static const Instr *cur_instr;
static int abort_on_fatal;
static RtFatalHook fatal_hook;
static RtReplayHook replay_hook;
static void *replay_arg;
static atomic_int replay_taken;
static _Thread_local int in_replay;

void rt_set_where(const Program *p, const Instr *ins)
{
    cur_prog = p;
    cur_instr = ins;
}

void rt_set_abort(int on) { abort_on_fatal = on; }

void rt_set_fatal_hook(RtFatalHook hook) { fatal_hook = hook; }

static int (*exit_guard)(void);
static void (*pending_check)(void);
static pthread_t pending_thread; /* the thread that set it: the one that owns the device */

void rt_set_pending_check(void (*hook)(void))
{
    pending_check = hook;
    pending_thread = pthread_self();
}

void rt_settle_pending(void)
{
    if (pending_check && !in_replay && pthread_equal(pthread_self(), pending_thread))
        pending_check();
}

void rt_set_exit_guard(int (*guard)(void)) { exit_guard = guard; }

void rt_set_replay(RtReplayHook hook, void *arg)
{
    replay_hook = hook;
    replay_arg = arg;
    in_replay = 0;
    atomic_store(&replay_taken, 0);
}

/* Before a fatal message: let the block's replay produce the reference's. */
static void replay_first(void)
{
    if (!replay_hook || in_replay)
        return;
    if (atomic_exchange(&replay_taken, 1) == 0) {
        const Program *p = cur_prog;
        const Instr *ins = cur_instr;
        in_replay = 1;
        replay_hook(replay_arg);
        in_replay = 0; /* the reference found nothing: report our own */
        cur_prog = p;
        cur_instr = ins;
        return;
    }
    for (;;)
        pause(); /* another thread is replaying; it ends the process */
}

void rt_exit_status(int status)
{
    fflush(stderr);
    if (fatal_hook) {
        RtFatalHook h = fatal_hook;
        h(status);
        /* A hook that returns: end the process as without one. */
    }
    if (status != 0 && abort_on_fatal) {
        fprintf(stderr, "vinterp: dumping core\n");
        abort();
    }
    /* stdout may hold part of a dump; a fatal error must not let it out. */
    if (status != 0)
        _Exit(status);
    if (exit_guard && exit_guard()) {
        fflush(NULL);
        _Exit(0);
    }
    exit(status);
}

/* The fatal error that started a replay, printed if the replay itself
 * fails on the device (rt_fatal_device). */
static char first_msg[4096];
static const Program *first_prog;
static const Instr *first_instr;

static void print_where(const Program *p, const Instr *ins)
{
    if (ins && p)
        fprintf(stderr, "vinterp: %s:%d: %s: ", p->filename, ins->line, vc_ops[ins->op].name);
    else if (p)
        fprintf(stderr, "vinterp: %s: ", p->filename);
    else
        fprintf(stderr, "vinterp: ");
}

static __attribute__((noreturn, format(printf, 2, 0))) void fatal_v(int device, const char *fmt, va_list ap)
{
    char msg[4096];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (pending_check && !in_replay && pthread_equal(pthread_self(), pending_thread)) {
        /* an earlier error may wait on the device */
        void (*h)(void) = pending_check;
        const Program *p = cur_prog;
        const Instr *ins = cur_instr;
        pending_check = NULL;
        h();
        pending_check = h;
        rt_set_where(p, ins);
    }
    if (device && in_replay && first_msg[0]) {
        /* the device failed under the replay (reading the block's inputs
         * back): the first error is the one to report */
        print_where(first_prog, first_instr);
        fprintf(stderr, "%s\nvinterp: (the block's replay on the reference could not run: %s)\n", first_msg, msg);
        rt_exit_status(1);
    }
    if (!in_replay) {
        snprintf(first_msg, sizeof first_msg, "%s", msg);
        first_prog = cur_prog;
        first_instr = cur_instr;
    }
    replay_first();
    print_where(cur_prog, cur_instr);
    fprintf(stderr, "%s\n", msg);
    rt_exit_status(1);
}

void rt_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fatal_v(0, fmt, ap);
}

void rt_fatal_device(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fatal_v(1, fmt, ap);
}

static void *alloc_check(void *p)
{
    if (!p)
        rt_fatal("out of host memory");
    return p;
}

void *rt_xmalloc(size_t n) { return alloc_check(malloc(n ? n : 1)); }

void *rt_xcalloc(size_t n, size_t size) { return alloc_check(calloc(n ? n : 1, size ? size : 1)); }

void *rt_xrealloc(void *p, size_t n) { return alloc_check(realloc(p, n ? n : 1)); }

char *rt_xstrdup(const char *s) { return alloc_check(strdup(s)); }

void rt_fatal_raw(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    rt_exit_status(1);
}

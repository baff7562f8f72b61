/* runtime/core/errors.c — fatal run-time errors with the VCODE location. */
#include "runtime/core/errors.h"
#include "vcode/optable.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>

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
    exit(status);
}

void rt_fatal(const char *fmt, ...)
{
    va_list ap;
    replay_first();
    va_start(ap, fmt);
    if (cur_instr && cur_prog)
        fprintf(stderr, "vinterp: %s:%d: %s: ", cur_prog->filename, cur_instr->line,
                vc_ops[cur_instr->op].name);
    else if (cur_prog)
        fprintf(stderr, "vinterp: %s: ", cur_prog->filename);
    else
        fprintf(stderr, "vinterp: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    rt_exit_status(1);
}

void rt_fatal_raw(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    rt_exit_status(1);
}

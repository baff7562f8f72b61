/* runtime/core/errors.h — fatal run-time errors.
 *
 * Every fatal error is one line on stderr,
 *     vinterp: FILE:LINE: OP: reason
 * naming the instruction being executed (rt_where), then exit status 1.
 * Nothing is printed on stdout afterwards. */
#ifndef RUNTIME_ERRORS_H
#define RUNTIME_ERRORS_H

#include "vcode/program.h"

#include <stddef.h>

/* The instruction now executing; the interpreter sets it. */
void rt_set_where(const Program *p, const Instr *ins);

/* With -d abort, fatal errors call abort() after "vinterp: dumping core". */
void rt_set_abort(int on);

/* Fatal error at the current instruction. */
__attribute__((noreturn, format(printf, 1, 2)))
void rt_fatal(const char *fmt, ...);

/* Fatal error of a device (the cuda executor's copies, allocations and
 * launches): as rt_fatal, but when it happens while a fused block is being
 * replayed on the reference after an earlier fatal error (the replay
 * reads the block's inputs back from the device, which an earlier fault
 * can leave unusable), the earlier error is reported, then this one. */
__attribute__((noreturn, format(printf, 1, 2)))
void rt_fatal_device(const char *fmt, ...);

/* Fatal error printed exactly as given (classic messages that carry their
 * own "vinterp: line N:" prefix); exit status 1. */
__attribute__((noreturn, format(printf, 1, 2)))
void rt_fatal_raw(const char *fmt, ...);

/* Host allocation that cannot fail: out of memory is rt_fatal("out of
 * host memory") at the current instruction. A size of 0 asks for 1 byte
 * (never NULL). vcode/xalloc.h is the same for code that runs before any
 * instruction (parsing, translation), with no line to name. */
void *rt_xmalloc(size_t n);
void *rt_xcalloc(size_t n, size_t size);
void *rt_xrealloc(void *p, size_t n);
char *rt_xstrdup(const char *s);

/* A check left pending on a device (the device tier's permutes, read when
 * the host next waits): before a fatal error is printed, HOOK() is
 * called once (on the thread that set it, which owns the device); it is
 * itself fatal, at the instruction whose check failed, when that earlier
 * error is there. NULL removes it. */
void rt_set_pending_check(void (*hook)(void));
/* Run that hook now (on its thread; not within a replay). */
void rt_settle_pending(void);

/* End the run with STATUS: 0 for EXIT (stdout flushed, exit(0)), nonzero
 * for a fatal error (stderr flushed, _Exit(status): nothing more reaches
 * stdout). With a fatal hook set, the hook is called instead. */
void rt_exit_status(int status) __attribute__((noreturn));

/* Embedding (the fuzz harnesses): when HOOK is set, rt_exit_status(status)
 * calls HOOK(status) instead of ending the process, after flushing stderr
 * (and without the -d abort core dump). HOOK must not return (it longjmps
 * back to the embedder); if it does, the process exits as without a hook.
 * The interpreter state of the abandoned run is not released: the
 * embedder frees what it can reach (interp_free, vc_free), and the vectors
 * held by the instruction that failed are leaked. NULL removes the hook. */
typedef void (*RtFatalHook)(int status);
void rt_set_fatal_hook(RtFatalHook hook);

/* Before a normal exit (rt_exit_status(0)): GUARD() returns 1 when exit()
 * would tear down what another thread may still be using (the tier
 * worker inside a compiler library it cannot leave); the process then
 * ends with _Exit(0) after flushing its streams, running no exit
 * handlers. NULL removes the guard. */
void rt_set_exit_guard(int (*guard)(void));

/* Exact messages from the fused backends. A backend running a block sets
 * a replay hook for the length of the block: the first fatal error raised
 * while it is set (on any thread) calls HOOK(ARG) once before printing
 * anything. The hook reruns the block on the reference interpreter from
 * the block's inputs, so the error that ends the run is the reference's
 * own message and line; if the rerun finds no error the hook returns and
 * the backend's message is printed. Other threads that fail while the
 * replay runs wait for it to end the process. NULL removes the hook. */
typedef void (*RtReplayHook)(void *arg);
void rt_set_replay(RtReplayHook hook, void *arg);

#endif

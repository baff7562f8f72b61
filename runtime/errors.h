/* runtime/errors.h — fatal run-time errors.
 *
 * Every fatal error is one line on stderr,
 *     vinterp: FILE:LINE: OP: reason
 * naming the instruction being executed (rt_where), then exit status 1.
 * Nothing is printed on stdout afterwards. */
#ifndef RUNTIME_ERRORS_H
#define RUNTIME_ERRORS_H

#include "vcode/program.h"

/* The instruction now executing; the interpreter sets it. */
void rt_set_where(const Program *p, const Instr *ins);
const Instr *rt_current(void);

/* With -d abort, fatal errors call abort() after "vinterp: dumping core". */
void rt_set_abort(int on);

/* Fatal error at the current instruction. */
__attribute__((noreturn, format(printf, 1, 2)))
void rt_fatal(const char *fmt, ...);

/* Fatal error printed exactly as given (classic messages that carry their
 * own "vinterp: line N:" prefix); exit status 1. */
__attribute__((noreturn, format(printf, 1, 2)))
void rt_fatal_raw(const char *fmt, ...);

/* Hook run before exit on a fatal error (e.g. flush nothing to stdout). */
void rt_exit_status(int status) __attribute__((noreturn));

#endif

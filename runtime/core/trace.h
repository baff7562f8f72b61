/* runtime/core/trace.h — `-d trace=FILE`: a Chrome trace of the run (the
 * JSON array format that Perfetto and chrome://tracing read): one complete
 * event ("ph": "X") per span — launches, primitive calls, copies each
 * way (a copy back is a wait), allocations, compiles and module loads,
 * the device tier's instructions, fused block runs — with its start and
 * duration in microseconds from the start of the run, its thread (1: the
 * program, 2 and up: the tiers' worker and others) and its bytes where it
 * moves any. Spans are timed on the host: on a GPU a launch returns before
 * its kernel ends, so the waits show where the host stood still.
 *
 * Events are kept in memory (at most TRACE_MAX_EVENTS; later ones are
 * counted, not kept) and written at exit. Thread-safe. */
#ifndef RUNTIME_CORE_TRACE_H
#define RUNTIME_CORE_TRACE_H

#include <stdint.h>

enum { TRACE_MAX_EVENTS = 1 << 21 };

/* 1 while a trace is being kept (the hooks' test: cheap). */
extern _Atomic int trace_on;

/* Start keeping a trace for PATH (opened now, so that a bad path is an
 * error at start-up); 0, or -1 with errno set. The file is written by
 * trace_close, which is registered with atexit. */
int trace_open(const char *path);
/* Microseconds since trace_open (0 when no trace is kept). */
double trace_now(void);
/* A span of category CAT named NAME (copied; at most 63 bytes kept) from
 * T0 to T1 (trace_now's microseconds); BYTES < 0: none. */
void trace_span(const char *cat, const char *name, double t0, double t1, int64_t bytes);
/* Write the file and stop (idempotent). */
void trace_close(void);

#endif

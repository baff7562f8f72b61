/* runtime/interp/profile.h — --profile: calls, inclusive and exclusive wall time
 * per VCODE function, reported on stderr at the end of a run (as a table,
 * or as JSON for tools). */
#ifndef RUNTIME_PROFILE_H
#define RUNTIME_PROFILE_H

#include <stdio.h>
#include "vcode/program.h"

typedef enum { PROF_OFF = 0, PROF_TEXT, PROF_JSON } ProfileMode;

void prof_start(const Program *p, ProfileMode mode);
int prof_enabled(void);
void prof_enter(int func);      /* a CALL (and the entry function at start) */
void prof_leave(void);          /* its RET */
/* Close open frames (EXIT, or the entry's RET) and print the report. */
void prof_report(FILE *f);

#endif

/* runtime/interp/argcheck.h — argument checks before a vector instruction runs:
 * stack depth, argument types and the length rules of vcode/optable.h.
 *
 * They always run (a wrong program must fail cleanly, never read outside a
 * vector). Under -c the failures are reported with the classic messages
 * (vcode/SPEC.md §3.6) and "vinterp: aborting: failed argument check.";
 * otherwise the first failure is a fatal error in the project's format. */
#ifndef RUNTIME_ARGCHECK_H
#define RUNTIME_ARGCHECK_H

#include "runtime/interp/interp.h"

void argcheck(Interp *it, const Instr *ins);

#endif

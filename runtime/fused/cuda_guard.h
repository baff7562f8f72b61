/* runtime/fused/cuda_guard.h — IFs whose THEN branch is NESL's runtime
 * error exit ("RUNTIME ERROR: Index out of bounds ...": the message
 * written to stderr, then EXIT), recognized in the program's code, so
 * that the device tier may take the ELSE branch before the condition is
 * read (cuda_tier.c: the condition read with the next wait, among the
 * pending checks) and write the message and exit as the branch would when
 * the condition turns out true.
 *
 * The branch recognized: any number of POPs (of values the IF's caller
 * left: they only go), then exactly
 *     CONST INT k / MAKE_SEGDES / CONST CHAR "message" / CALL f /
 *     POP 1 0 / CONST INT c / EXIT
 * where f is NESL's print_string, exactly
 *     POP 1 1 / WRITE CHAR / POP 2 0 / CONST BOOL b / RET
 * (or that body in the CALL's place, the call inlined).
 * Its effect is then fixed: the message's characters written to stderr
 * (WRITE CHAR) and exit status 0 (EXIT), whatever the stack holds. */
#ifndef RUNTIME_FUSED_CUDA_GUARD_H
#define RUNTIME_FUSED_CUDA_GUARD_H

#include "vcode/program.h"

typedef struct GuardCache GuardCache;

/* A cache of the answers for one program's instructions (dropped and made
 * again when the program changes). */
GuardCache *guard_cache_new(void);
void guard_cache_free(GuardCache *g);
/* 1 when the instruction at PC of P is such an IF: *MSG the constant
 * (P->consts index) holding the message, *DEPTH the stack entries its POPs
 * need below the condition. */
int guard_exit_if(GuardCache *g, const Program *p, int pc, int *msg, int *depth);

#endif

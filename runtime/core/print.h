/* runtime/core/print.h — the text form of values (vcode/SPEC.md §4.15, §5.1). */
#ifndef RUNTIME_PRINT_H
#define RUNTIME_PRINT_H

#include <stdio.h>
#include "runtime/core/value.h"

/* One line: "( 1 2 )", "( T F )", "( 1.50000000000000e+00 )", "[ 3 0 2 ]",
 * or "pair(T1,T2) " for a pair; ends with a newline. Returns 0, or -1 when
 * the stream reported an error. */
int print_value(FILE *f, const Value *v);
/* The elements as raw characters (WRITE CHAR / FWRITE CHAR). */
int print_chars(FILE *f, const Value *v);
/* "LEN(Type) " or "pair(T1,T2) " — the -d stack entry form. */
void print_shape(FILE *f, const Value *v);

#endif

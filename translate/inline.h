/* translate/inline.h — inlining of non-recursive calls.
 *
 * NESL output is dominated by tiny functions (DIST_5, RAND_6, ZIP-OVER_8);
 * basic blocks only become large enough to fuse once they are inlined.
 * VCODE has no frames or locals, so inlining a call is textual: the callee's
 * instructions, without its RET, replace the CALL. Functions on a call-graph
 * cycle (recursion) stay calls. */
#ifndef TRANSLATE_INLINE_H
#define TRANSLATE_INLINE_H

#include "vcode/program.h"

typedef struct {
    int max_callee;     /* inline a callee only if its (inlined) body has at most
                           this many instructions (default 400) */
    int max_function;   /* stop inlining into a function once its body would
                           exceed this many instructions (default 20000) */
} InlineOptions;

typedef struct {
    int calls_inlined;
    int calls_kept;     /* recursive, or over a limit */
    int recursive_funcs;
    int code_before, code_after;
} InlineStats;

void inline_default_options(InlineOptions *o);
/* Build DST (a new program, same functions and entry, bodies inlined) from
 * SRC, which must be linked. DST is then checked with vc_check by the
 * caller. Returns 0. */
int inline_program(const Program *src, Program *dst, const InlineOptions *opt, InlineStats *st);

#endif

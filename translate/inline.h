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
    long max_growth;    /* the whole program grows by at most
                           max(instructions before, max_growth) instructions
                           (default 200000): a chain of small functions each
                           calling the next would otherwise grow quadratically */
    const _Atomic int *cancel; /* when set and nonzero, give up (returns -1, DST empty) */
} InlineOptions;

typedef struct {
    int calls_inlined;
    int calls_kept;     /* recursive, or over a limit */
    int calls_over_budget; /* of those, kept because of max_growth */
    int recursive_funcs;
    int code_before, code_after;
} InlineStats;

void inline_default_options(InlineOptions *o);
/* Build DST (a new program, same functions and entry, bodies inlined) from
 * SRC, which must be linked. DST is then checked with vc_check by the
 * caller. Time and DST's size are linear in SRC's size. Returns 0. */
int inline_program(const Program *src, Program *dst, const InlineOptions *opt, InlineStats *st);
/* The same, and PCMAP[i] (SRC->ncode entries) the index in DST where SRC's
 * instruction i's effect begins: itself, or the inlined body of a CALL.
 * Inlining is textual, so running SRC from i and DST from PCMAP[i] on the
 * same stack do the same (tier switches use it; -1: no such point). */
int inline_program_map(const Program *src, Program *dst, const InlineOptions *opt, InlineStats *st, int *pcmap);

#endif

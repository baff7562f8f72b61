/* translate/cg_unit.h — one compilation unit of generated kernels for a
 * whole program, without repeats.
 *
 * A program has thousands of blocks, and most of their kernels are the
 * same code over different plan variables. Each kernel is first
 * renumbered canonically (its variables become locals 0, 1, ... in order of
 * first mention: parameters, then results), then generated; identical text
 * is emitted once, as function vk_u<N> (C: `void vk_u<N>(vk_ctx *)`, CUDA:
 * the entry points vk_u<N>_s<j>_<phase>). The caller runs the canonical
 * kernel with a variable table indexed by local, MAP giving each local's
 * plan variable. On the largest corpus program this cuts the unit from
 * 10054 kernels (10.4 MB of C) to 1236. */
#ifndef TRANSLATE_CG_UNIT_H
#define TRANSLATE_CG_UNIT_H

#include <stdint.h>
#include "translate/codegen.h"
#include "translate/plan.h"

typedef struct {
    int unique;             /* N of vk_u<N>, or -1 when not generated */
    LcuKernel *canon;       /* the kernel over locals 0..nlocal-1 */
    int nlocal;
    int *map;               /* local -> plan variable */
    LcuVarType *ltypes;     /* the locals' types */
} CgKernelCode;

typedef struct CgUnit CgUnit;

CgUnit *cg_unit_new(CgTarget t);
/* Add kernel K of a plan with variable types TYPES[0..nvars): fills KC
 * (always: canon/map/ltypes; unique = -1 with MSG when the generator
 * cannot express it). Returns 0 or -1. */
int cg_unit_add(CgUnit *u, const LcuKernel *k, const LcuVarType *types, int nvars, CgKernelCode *kc, char *msg,
                size_t msglen);
/* Compile checks across many programs (vinterp --cuda-check under
 * tests/cuda_check.sh): a distinct kernel whose text SEEN reports as
 * compiled already (by its 64-bit hash) is numbered but not emitted. */
void cg_unit_omit_seen(CgUnit *u, int (*seen)(void *ctx, uint64_t hash), void *ctx);
/* The hashes of the distinct kernels emitted; their number. */
int cg_unit_emitted(const CgUnit *u, const uint64_t **hashes);
/* The text so far (prelude and every distinct kernel). */
const char *cg_unit_text(const CgUnit *u, size_t *len);
int cg_unit_distinct(const CgUnit *u);
/* The emitted text is a sequence of pieces: each SOAC of each emitted
 * kernel (CUDA: its thunks and entry points need only the prelude; C: a
 * kernel is one piece, its first SOAC's, the others empty), in order. The
 * number of pieces; piece I's unique kernel (and in *SOAC its SOAC). */
int cg_unit_pieces(const CgUnit *u);
int cg_unit_piece(const CgUnit *u, int i, int *soac);
/* The unit in parts, each the prelude and consecutive pieces of at most
 * MAX_BYTES of text together (a larger piece is a part alone): the number
 * of parts (0 when nothing was emitted; at most MAX_PARTS, the last one
 * then taking the rest); part p holds the pieces from FIRST[p] to
 * FIRST[p + 1] (the last: to the end). Each part compiles on its own
 * (NVRTC's time grows faster than a unit's size: parts compile in
 * parallel, and a long one holds up no other). */
int cg_unit_split(const CgUnit *u, size_t max_bytes, int *first, int max_parts);
/* The text of pieces FROM .. TO-1 with the prelude (malloc'd,
 * NUL-terminated; *LEN its length), or NULL. A CUDA part with a piece of
 * more than CG_BIG_PIECE bytes starts with "#define VK_BIG_PART 1": its
 * segment helpers are then called rather than inlined (NVRTC's time on a
 * large MAP of bh.5000: 40 s inlined, 11 s called). */
#define CG_BIG_PIECE 8192
char *cg_unit_part_text(const CgUnit *u, int from, int to, size_t *len);
void cg_unit_free(CgUnit *u);

/* What an executor builds from block plans. cg_plans_code: for each block
 * k with PLANS[k], CODE[k] and NSTEPS[k] get one CgKernelCode per plan step
 * (unique -1: in no unit yet); 0, -1 out of memory, -2 when a block
 * already has its code (prepared twice). cg_plans_unit: the unit (target
 * T) of every kernel step of PLANS, each step's code in CODE[k][s] (CODE
 * NULL: the text only), skipping the kernels SEEN says are compiled
 * already (SEEN may be NULL); counts the kernels generated and those left
 * to the evaluator. NULL when out of memory. */
int cg_plans_code(int nblocks, BlockPlan *const *plans, CgKernelCode **code, int *nsteps);
CgUnit *cg_plans_unit(CgTarget t, int nblocks, BlockPlan *const *plans, CgKernelCode **code,
                      int (*seen)(void *ctx, uint64_t hash), void *ctx, int *generated, int *not_generated);
void cg_kernel_code_free(CgKernelCode *kc);
/* The function (C) or entry-point prefix (CUDA) name of unique N. */
void cg_unique_name(char *buf, size_t len, int unique);

#endif

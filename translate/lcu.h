/* translate/lcu.h — the λcu intermediate representation (Reppy & Wingerter,
 * "λcu — An Intermediate Representation for Compiling Nested Data
 * Parallelism"; Nessie thesis §4–6), as this project uses it.
 *
 * Three levels:
 *   - a block plan (translate/plan.h) is the CPU level: host steps and
 *     kernel runs in order;
 *   - a kernel (LcuKernel) is a list of `let xs = SOAC args` bindings and a
 *     return list;
 *   - a thunk { i => e using ys } computes one element (or a tuple of
 *     elements) from an index, reading the captured arrays ys.
 *
 * Every kernel-level value is an array (VCODE has no scalars: a scalar is a
 * length-1 vector) or a segment descriptor. Variables are small integers
 * naming values of one block plan ("x12"); a plan's variable table gives
 * their types. Thunk-local scalars are separate small integers ("t3").
 *
 * Ownership: expressions, thunks, SOACs and kernels are heap nodes owned by
 * their parent; lcu_*_free releases a whole tree. */
#ifndef TRANSLATE_LCU_H
#define TRANSLATE_LCU_H

#include <stdint.h>
#include <stdio.h>

#include "translate/lcu_primlist.h"
#include "vcode/semantics.h"

/* ---- types ------------------------------------------------------------ */

/* element types: VsElem (vcode/semantics.h) */
typedef enum { LV_ARRAY = 0, LV_SEGDES } LcuVarKind;

typedef struct {
    LcuVarKind kind;
    VsElem base;       /* LV_ARRAY only */
} LcuVarType;

/* ---- GPU-level expressions (thunk bodies) ------------------------------ */

#define LCU_PRIM_ENUM(name, ...) LP_##name,
typedef enum {
    LCU_PRIMS(LCU_PRIM_ENUM)
    LP_COUNT
} LcuPrim;

typedef enum {
    LE_INT,             /* literal: ival */
    LE_FLOAT,           /* literal: fval */
    LE_BOOL,            /* literal: ival 0/1 */
    LE_INDEX,           /* the thunk's index parameter i */
    LE_LOCAL,           /* a let-bound scalar: local */
    LE_SUB,             /* var[kids[0]]: element of a captured array */
    LE_LEN,             /* #var: length of a captured array, or n of a segdes */
    LE_PRIM,            /* prim(kids...) with 1 or 2 operands */
    LE_IF,              /* if kids[0] then kids[1] else kids[2] */
    LE_LET,             /* let local = kids[0] in kids[1] */
    LE_TUPLE,           /* (kids...), only as the result of a thunk body */
    LE_SEG_OF,          /* seg_of(var, kids[0]): segment holding element i of segdes var */
    LE_SEG_START,       /* seg_start(var, kids[0]): offset of segment s */
    LE_SEG_LEN,         /* seg_len(var, kids[0]): length of segment s */
    LE_SEG_COUNT        /* seg_count(var): m of segdes var */
} LcuExprKind;

typedef struct LcuExpr LcuExpr;
struct LcuExpr {
    LcuExprKind kind;
    VsElem type;       /* scalar type of the value (set by the builder) */
    LcuPrim prim;       /* LE_PRIM */
    int32_t ival;       /* LE_INT, LE_BOOL */
    double fval;        /* LE_FLOAT */
    int var;            /* LE_SUB, LE_LEN, LE_SEG_*: the captured plan variable */
    int local;          /* LE_LOCAL, LE_LET */
    int nkids;
    LcuExpr **kids;
};

/* A thunk { i => body using ys }. The body yields `arity` scalars (a tuple
 * when arity > 1). `using` lists every plan variable the body reads. */
typedef struct {
    LcuExpr *body;
    int arity;
    int nusing;
    int *using;
} LcuThunk;

/* ---- SOACs and kernels ------------------------------------------------- */

typedef enum {
    LS_MAP,             /* MAP pull (shape)                                 -> arrays of len(shape) */
    LS_PERMUTE,         /* PERMUTE pull idx (shape)                         -> arrays of len(shape) */
    LS_REDUCE,          /* REDUCE pull rops (shape)                         -> length-1 arrays */
    LS_SCAN,            /* SCAN pull rops (shape), exclusive                -> arrays */
    LS_FILTER,          /* FILTER pull pred (shape)                         -> arrays, unknown length */
    LS_PARTITION,       /* PARTITION pull pred (shape)                      -> kept arrays, then dropped arrays */
    LS_ONCE,            /* ONCE pull                                        -> length-1 arrays */
    LS_SEG_REDUCE,      /* SEG_REDUCE pull rops sd                          -> arrays of m(sd) */
    LS_SEG_SCAN,        /* SEG_SCAN pull rops sd, exclusive per segment     -> arrays of n(sd) */
    LS_SEG_PERMUTE,     /* SEG_PERMUTE pull idx [flag] ssd dsd [dflt]       -> arrays of n(dsd) */
    LS_SEG_FILTER,      /* SEG_FILTER pull pred sd                          -> arrays, then the new segdes */
    LS_LIB,             /* a library kernel (no thunks): lib, args          -> results */
    LS_COUNT
} LcuSoacKind;

/* Reduction operators (thesis Fig. 6): VCODE's, enum vs_rop of
 * vcode/semantics.h (VsRop), which defines their identities and combines. */

/* Library kernels: what fusion never merges. */
typedef enum {
    LL_RANK_UP,         /* args: data sd         -> int ranks */
    LL_RANK_DOWN,
    LL_RAND_STREAM,     /* args: lim (for its length) -> raw random() draws, advancing the global stream */
    LL_COUNT
} LcuLib;

/* The iteration space of a SOAC. */
typedef enum {
    LSH_LEN,            /* #var: the length of array var */
    LSH_SEG_N,          /* n of segdes var (SEG_* SOACs iterate elements) */
    LSH_SEG_M,          /* m of segdes var (one iteration per segment) */
    LSH_ONE             /* a single iteration (ONCE) */
} LcuShapeKind;

typedef struct {
    LcuShapeKind kind;
    int var;
} LcuShape;

#define LCU_MAXRES 64

typedef struct {
    LcuSoacKind kind;
    int nres;
    int res[LCU_MAXRES];        /* the plan variables it binds, in order */
    LcuThunk *pull;             /* element values (arity = nres, or nres-1 for SEG_FILTER: its last result is the segdes;
                                   PARTITION: arity = nres/2) */
    LcuThunk *idx;              /* PERMUTE / SEG_PERMUTE: destination index (segment-relative for SEG_) */
    LcuThunk *pred;             /* FILTER / PARTITION / SEG_FILTER: keep? ; SEG_PERMUTE: optional flag */
    VsRop rops[LCU_MAXRES];    /* REDUCE / SCAN / SEG_REDUCE / SEG_SCAN, one per result */
    int chunked;                /* REDUCE / SEG_REDUCE: its float + and * rops fold by chunks
                                   (vcode/semantics.h VS_CHUNK; --float-reassoc) */
    LcuShape shape;             /* iteration space; SEG_*: LSH_SEG_N of the (source) segdes */
    int dst_sd;                 /* SEG_PERMUTE: destination segdes var */
    int dflt[LCU_MAXRES];       /* SEG_PERMUTE: default array var per result, or -1 (zero fill) */
    LcuLib lib;                 /* LS_LIB */
    int nargs;                  /* LS_LIB arguments */
    int args[8];
} LcuSoac;

typedef struct {
    int id;                     /* plan-wide kernel number, for printing ("K3") */
    int nsoacs;
    LcuSoac **soacs;            /* in execution order */
    int nparams;                /* plan variables read from outside the kernel */
    int *params;
    int nrets;                  /* plan variables it returns (the others are internal) */
    int *rets;
} LcuKernel;

/* ---- construction ------------------------------------------------------ */

LcuExpr *lcu_int(int32_t v);
LcuExpr *lcu_float(double v);
LcuExpr *lcu_bool(int v);
LcuExpr *lcu_index(void);                       /* i (type VS_INT) */
LcuExpr *lcu_local(int local, VsElem type);
LcuExpr *lcu_sub(int var, VsElem elem, LcuExpr *at);
LcuExpr *lcu_len(int var);
LcuExpr *lcu_prim1(LcuPrim p, VsElem type, LcuExpr *a);
LcuExpr *lcu_prim2(LcuPrim p, VsElem type, LcuExpr *a, LcuExpr *b);
LcuExpr *lcu_if(LcuExpr *c, LcuExpr *t, LcuExpr *e);
LcuExpr *lcu_let(int local, LcuExpr *value, LcuExpr *body);
LcuExpr *lcu_tuple(int n, LcuExpr **items);     /* takes the items */
LcuExpr *lcu_seg(LcuExprKind k, int sd, LcuExpr *arg); /* LE_SEG_OF/START/LEN; arg NULL for LE_SEG_COUNT */
LcuExpr *lcu_expr_copy(const LcuExpr *e);
void lcu_expr_free(LcuExpr *e);

/* A thunk over BODY with arity ARITY; `using` is computed from the body. */
LcuThunk *lcu_thunk(LcuExpr *body, int arity);
void lcu_thunk_recompute_using(LcuThunk *t);
LcuThunk *lcu_thunk_copy(const LcuThunk *t);
void lcu_thunk_free(LcuThunk *t);

LcuSoac *lcu_soac_new(LcuSoacKind kind);
void lcu_soac_free(LcuSoac *s);
LcuKernel *lcu_kernel_new(int id);
void lcu_kernel_add(LcuKernel *k, LcuSoac *s);   /* appends; takes ownership */
/* Recompute params (read, not bound inside) and, given which variables are
 * needed outside (need[var] != 0), rets. */
void lcu_kernel_finish(LcuKernel *k, const unsigned char *need, int nvars);
/* Can E fail, as a VCODE instruction does (vcode/semantics.h's fault
 * codes): an Int / or %, RANDMOD's range, CHECKIDX's bounds? (The loads
 * and segment helpers check their own bounds too, but only against what
 * the plan sized; a VCODE error always comes through one of these.) */
int lcu_expr_may_fail(const LcuExpr *e);
/* Can S fail: a thunk that can, a permute's index (out of its
 * destination), or a library kernel (EXTRACT, REPLACE, RAND, DIST and
 * INDEX lengths, ...)? Such a SOAC is never removed for an unused result:
 * its failure must be seen where the reference sees it (translate/rewrite.c). */
int lcu_soac_may_fail(const LcuSoac *s);
void lcu_kernel_free(LcuKernel *k);
/* A copy of K with every variable v renamed TO[v] (TO covers every
 * variable K mentions; negative "unset" entries stay). Thunks' `using`
 * lists are recomputed. */
LcuKernel *lcu_kernel_renumber(const LcuKernel *k, const int *to);

/* ---- names and printing ------------------------------------------------ */

const char *lcu_soac_name(LcuSoacKind k);
const char *lcu_rop_name(VsRop r);
const char *lcu_prim_name(LcuPrim p);
const char *lcu_lib_name(LcuLib l);
const char *lcu_base_name(VsElem b);
VsElem lcu_rop_base(VsRop r);
/* The result type of prim P applied to operands of type T (comparisons and
 * I_TO_B give bool, conversions their target, arithmetic and logic T). */
VsElem lcu_prim_result(LcuPrim p, VsElem t);

/* Print in the style of the λcu paper, e.g.
 *   kernel K2 (x3, x4) -> (x7) {
 *     let x7 = MAP { i => x3[i] / x4[seg_of(x1, i)] using x1, x3, x4 } (#x3)
 *     return (x7)
 *   }
 * TYPES (may be NULL) gives the variable types for the header. */
void lcu_print_kernel(FILE *f, const LcuKernel *k, const LcuVarType *types);
void lcu_print_soac(FILE *f, const LcuSoac *s);
void lcu_print_expr(FILE *f, const LcuExpr *e);

/* ---- validation --------------------------------------------------------- */

/* Checks a kernel: expression types, every variable a thunk reads is in its
 * `using` list and is a kernel parameter or bound earlier in the kernel,
 * subscripts only of arrays, segment helpers only of segdes, thunk arities
 * match the SOAC's results, rops match result types, shapes name
 * variables of the right kind. Returns 0, or -1 with a message in MSG. */
int lcu_validate_kernel(const LcuKernel *k, const LcuVarType *types, int nvars, char *msg, size_t msglen);

#endif

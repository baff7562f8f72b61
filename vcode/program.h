/* vcode/program.h — the in-memory form of a VCODE program.
 *
 * The parser fills a Program; the linker resolves CALL targets and the
 * entry point; the checker annotates every instruction with the abstract
 * stack it runs on. Everything downstream (the interpreter, the λcu
 * translator) reads only this structure. */
#ifndef VCODE_PROGRAM_H
#define VCODE_PROGRAM_H

#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

/* Element types named in the program text. CHAR only appears as an operand
 * (CONST CHAR, READ/WRITE/FREAD/FWRITE CHAR); at run time it is INT. */
#include "vcode/ops.h"

typedef enum {
    TY_NONE = 0,
    TY_INT,
    TY_BOOL,
    TY_FLOAT,
    TY_SEGDES,
    TY_CHAR
} VcType;

#define VC_OP_ENUM(name, ...) OP_##name,
typedef enum {
    VC_OPS(VC_OP_ENUM)
    OP_COUNT
} Opcode;

/* What a CONST instruction pushes. Scalars are rebuilt on each execution;
 * vectors, strings and SEGDES constants are built once (VcConst). */
typedef enum { CK_SCALAR, CK_VECTOR } ConstKind;

typedef struct {
    VcType type;        /* TY_INT, TY_BOOL, TY_FLOAT, TY_SEGDES (CHAR → TY_INT) */
    int64_t len;        /* elements (segments for SEGDES) */
    int32_t *ints;      /* INT/BOOL elements, SEGDES lengths */
    double *floats;     /* FLOAT elements */
    int is_string;      /* written as CONST CHAR "..." */
    int line;
} VcConst;

typedef struct {
    Opcode op;
    VcType type;        /* the type operand, TY_NONE when the op has none */
    int line;           /* source line of the instruction's last token */
    int cline;          /* the same, counted as the classic interpreter counts
                           (for its message formats and -d traces) */
    int a, b;           /* COPY/POP/CPOP i j; FUSED n */
    int target;         /* IF: index after ELSE (or ENDIF); ELSE: index of ENDIF;
                           CALL: callee function index (after linking) */
    char *name;         /* CALL: callee name as written */
    ConstKind ckind;    /* CONST only */
    int32_t ival;       /* CONST scalar INT/BOOL value */
    double fval;        /* CONST scalar FLOAT value */
    int cidx;           /* CONST vector: index into Program.consts */
} Instr;

/* Static checker results (vcode/checker.h). An abstract slot type is one of
 * the concrete AT_* kinds, AT_ANY when the program does not determine it, or
 * AT_INPUT(j): "whatever the caller had at depth j on entry". */
typedef int16_t AbsType;
enum { AT_INT = 1, AT_BOOL, AT_FLOAT, AT_SEGDES, AT_PAIR, AT_ANY, AT_INPUT0 = 64 };
#define AT_INPUT(j) ((AbsType)(AT_INPUT0 + (j)))
#define AT_IS_INPUT(t) ((t) >= AT_INPUT0)

typedef struct {
    int reached;        /* 0: the checker found no path to this instruction */
    int determined;     /* 1: depth and slots below are known */
    int depth;          /* stack depth before it, relative to the function's entry
                           (negative: the instruction reaches into its inputs) */
    int nslots;         /* entries in slots[] */
    AbsType *slots;     /* abstract stack before it, bottom → top; slots[0] is the
                           deepest entry the function touches */
} InstrState;

typedef struct {
    int known;          /* summary computed (some path returns) */
    int undetermined;   /* returns, but with a stack the program does not determine */
    int nin;            /* caller slots the function consumes */
    int nout;           /* slots it leaves in their place */
    AbsType *out;       /* their types, bottom → top (AT_INPUT(j) = passthrough) */
} FuncSummary;

typedef struct {
    char *name;
    int start;          /* index of the first instruction */
    int end;            /* index one past its RET */
    int line;           /* line of FUNC */
    int cline;          /* classic count of the same */
    int live;           /* 0 when a later definition of the same name replaced it */
    FuncSummary sum;
} Func;

typedef struct {
    char *filename;
    Instr *code;
    int ncode, capcode;
    Func *funcs;
    int nfuncs, capfuncs;
    VcConst *consts;
    int nconsts, capconsts;
    int entry;          /* index into funcs of the entry function */
    InstrState *state;  /* per instruction, filled by vc_check (NULL before) */
    const _Atomic int *cancel; /* when set and nonzero, vc_check gives up (a tier worker told to stop) */
    AbsType *slot_pool; /* storage behind state[].slots */
    FILE *warn;         /* where the parser and vc_check print the project's own
                           warnings (a function name of 50+ characters, IF on an
                           Int, IF arms that leave different depths): stderr after
                           vc_parse_*; NULL: none. Programs made from this one (the
                           inliner's) start with NULL, so each warning is printed
                           once, for the program as written. */
} Program;

/* Errors from the front end: a message, the line, and a status. */
typedef struct {
    int line;
    int classic;        /* msg is the complete classic text, printed as is */
    char msg[4096];
} VcError;

/* Front-end traces (-d lex, -d link). */
typedef struct {
    void *lex_trace;    /* FILE*: echo tokens here, or NULL */
    int link_trace;
} VcTrace;
extern VcTrace vc_trace;

/* Parse FILE into *p (zeroed by the call, then p->warn = stderr). Returns 0,
 * or -1 with *err set. Warnings (unexpected characters, redefinitions, long
 * function names) go to stderr as they are found. */
int vc_parse_file(const char *path, Program *p, VcError *err);
int vc_parse_string(const char *name, const char *text, size_t len, Program *p, VcError *err);

/* Resolve CALL targets and the entry point. Returns 0, or -1 with *err set. */
int vc_link(Program *p, VcError *err);

/* Static stack checker: fills p->state and each function's summary (always,
 * even when it finds errors). Returns 0, or -1 with *err describing the
 * first definite error in file order. In functions reachable from the entry,
 * what is legal but suspect (IF on an Int, IF arms that leave different
 * stack depths) is reported on p->warn when set, one line each, in file
 * order, up to the first definite error. */
int vc_check(Program *p, VcError *err);
/* Free the per-instruction states vc_check left in p->state (the function
 * summaries stay): nothing reads them once the program runs, and on a
 * large program they are a megabyte of the run's peak memory. */
void vc_check_forget(Program *p);

void vc_free(Program *p);

/* The lowest and highest source line of instructions [START, END) of P
 * (an inlined program's blocks mix the lines of several functions: the
 * first instruction's line is not always the lowest). */
void vc_line_range(const Program *p, int start, int end, int *lo, int *hi);

#endif

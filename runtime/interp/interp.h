/* runtime/interp/interp.h — the value stack and the interpreter loop. */
#ifndef RUNTIME_INTERP_H
#define RUNTIME_INTERP_H

#include <stdatomic.h>
#include <stdio.h>
#include "vcode/program.h"
#include "runtime/core/value.h"

typedef struct {
    int check;          /* -c: classic argument checking */
    int float_reassoc;  /* --float-reassoc: float + and * reductions fold by chunks
                           (vcode/semantics.h VS_CHUNK) */
    int time;           /* -t */
    int trace_command;  /* -d command */
    int trace_stack;    /* -d stack */
    int trace_values;   /* -d values */
    int trace_runtime;  /* -d runtime */
    int trace_heap;     /* -d heap */
    int no_spawn;       /* --no-spawn */
    int no_files;       /* FOPEN fails ("file access is disabled"): embedding, fuzzing */
    int progress;       /* --progress: a status line on stderr (terminals only) */
    int64_t max_steps;  /* 0 = unlimited */
    int64_t max_depth;  /* call depth limit */
} InterpOptions;

struct Interp;
/* A second tier over the interpreter (the fused backends, which sit above
 * it): FN(CTX, IT, PC) runs the block that starts at PC and returns the pc
 * after it, or -1 when the interpreter is to run the block itself. */
typedef int (*InterpBlockFn)(void *ctx, struct Interp *it, int pc);

/* A device tier under the interpreter (the cuda backend's,
 * runtime/fused/cuda_tier.h): FN(CTX, IT, INS, 0) is 1 when it runs
 * instruction INS itself, whose operands then stay where they are;
 * FN(CTX, IT, INS, 1) runs it, after the interpreter's argument checks.
 * An IF it takes pops its condition, and the interpreter goes on in the
 * ELSE branch (the tier checks the condition later: cuda_guard.h). */
typedef int (*InterpDevFn)(void *ctx, struct Interp *it, const Instr *ins, int run);
/* The device tier's checks left pending (InterpDevFn's instructions that
 * did not wait for theirs): SETTLE(CTX) reads them, fatal at the failing
 * instruction. The interpreter calls it before I/O and EXIT and at the
 * end of the run, so that nothing is written after an error. */
typedef void (*InterpSettleFn)(void *ctx);

/* Tiers: the program to go on with (the inlined program, with its
 * backend), published by the tier worker while the original runs. PCMAP
 * maps each pc of the running program to the same point of PROG (-1: no
 * such point). The interpreter switches at its next CALL or RET: the pc
 * and every return address are mapped, so every frame goes on in PROG. */
typedef struct {
    const Program *prog;
    InterpBlockFn run_block;
    void *block_ctx;
    const int *block_at;
    const int *pcmap;
    int taken;          /* set by the interpreter: 1 switched, -1 refused (a pc without a map) */
} InterpSwitch;

typedef struct Interp {
    const Program *prog;
    InterpBlockFn run_block;    /* NULL: every instruction interpreted (ref) */
    void *block_ctx;            /* run_block's */
    const int *block_at;        /* with run_block: block index per pc, or -1 */
    InterpOptions opt;
    Value **stk;        /* value stack, bottom at index 0 */
    int64_t sp;         /* number of entries */
    int64_t cap;
    Value **consts;     /* one Value per Program.consts entry */
    int32_t *rstack;    /* the call stack while interp_run runs */
    InterpSwitch *_Atomic pending;      /* see InterpSwitch */
    InterpDevFn dev_op;         /* NULL: no device tier */
    const uint8_t *dev_ops;     /* with dev_op: per opcode, 1 when the hook wants to see it (NULL: all) */
    InterpSettleFn dev_settle;  /* with dev_op, or NULL */
    void *dev_ctx;
} Interp;

/* Stack access for op implementations. The interpreter has already checked
 * that the stack holds the op's arguments. */
static inline Value *vs_at(Interp *it, int64_t depth) { return it->stk[it->sp - 1 - depth]; }
static inline Value *vs_pop(Interp *it) { return it->stk[--it->sp]; }
void vs_push(Interp *it, Value *v);        /* takes the reference */
/* Fatal unless the stack holds at least K entries. */
void vs_need(Interp *it, int64_t k);

void interp_init(Interp *it, const Program *p, const InterpOptions *opt);
/* Runs the entry function. Returns 0 on normal end (stack left for the
 * caller to print); EXIT ends the process directly with status 0. */
int interp_run(Interp *it);
void interp_free(Interp *it);
/* Float +_REDUCEs of one long segment summed in parallel because every
 * term allowed it (vcode/semantics.h vs_fsum_exact_note), and those tried
 * that fell back to the left-to-right fold (-d stats). */
extern int64_t interp_fsum_parallel, interp_fsum_fellback;
/* Execute instructions [start, end) of one basic block (data instructions
 * only: COPY/POP/CPOP, CONST, vector instructions) on the stack, as the
 * interpreter loop would. The backends' --check uses it. */
/* Bring the host copies of INS's stack operands up to date (device layer). */
void interp_host_operands(Interp *it, const Instr *ins);
void interp_exec_range(Interp *it, int start, int end);
/* The same as the program's first tier runs a block: the device tier
 * (dev_op), when there is one, takes the instructions it claims. */
void interp_exec_tier(Interp *it, int start, int end);
/* A hook called at START_TIMER (START 1) and at STOP_TIMER (0), each
 * time before the clock is read, so that an executor can finish the work
 * it has queued or deferred (the work before the region then outside it,
 * the region's inside it) and count what the program's timed region did
 * (-d stats). NULL: none. */
void interp_set_timer_hook(void (*hook)(int start));

#endif

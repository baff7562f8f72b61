/* runtime/interp/interp.c — the interpreter loop: stack instructions, control,
 * constants, timers, SRAND, and dispatch to the op implementations. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/interp/interp.h"
#include "runtime/core/clock.h"
#include "runtime/interp/argcheck.h"
#include "runtime/core/errors.h"
#include "runtime/interp/ops.h"
#include "runtime/interp/ops_io.h"
#include "runtime/core/print.h"
#include "runtime/interp/profile.h"
#include "runtime/core/rand.h"
#include "vcode/optable.h"
#include "vcode/printer.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The value stack's entries are not vector memory (-m does not count
 * them); this bounds them instead. NESL output stays below 200 entries. */
#define MAX_STACK (INT64_C(1) << 24)

static void grow(Interp *it, int64_t need)
{
    if (need <= it->cap)
        return;
    if (need > MAX_STACK)
        rt_fatal("value stack overflow: %lld entries", (long long)need);
    int64_t cap = it->cap ? it->cap : 256;
    while (cap < need)
        cap *= 2;
    Value **s = realloc(it->stk, (size_t)cap * sizeof *s);
    if (!s)
        rt_fatal("out of host memory for the value stack (%lld entries)", (long long)need);
    it->stk = s;
    it->cap = cap;
}

void vs_push(Interp *it, Value *v)
{
    if (it->sp == it->cap)
        grow(it, it->sp + 1);
    it->stk[it->sp++] = v;
}

void vs_need(Interp *it, int64_t k)
{
    if (it->sp < k)
        rt_fatal("stack underflow: needs %lld value%s, the stack holds %lld", (long long)k,
                 k == 1 ? "" : "s", (long long)it->sp);
}

void interp_init(Interp *it, const Program *p, const InterpOptions *opt)
{
    memset(it, 0, sizeof *it);
    it->prog = p;
    it->opt = *opt;
    rt_set_where(p, NULL);
    it->consts = rt_xcalloc((size_t)(p->nconsts ? p->nconsts : 1), sizeof *it->consts);
    /* Vector, string and SEGDES constants are built once, in file order. */
    for (int i = 0; i < p->nconsts; i++) {
        const VcConst *c = &p->consts[i];
        Value *v;
        if (c->type == TY_SEGDES) {
            v = seg_new(c->len);
            if (c->len)
                memcpy(v->data, c->ints, (size_t)c->len * 4);
            seg_finish(v);
        } else {
            v = val_new(ops_val_type(c->type), c->len);
            if (c->len)
                memcpy(v->data, c->type == TY_FLOAT ? (void *)c->floats : (void *)c->ints,
                       (size_t)c->len * val_esize(ops_val_type(c->type)));
        }
        it->consts[i] = v;
    }
    grow(it, 256);
    io_init();
}

void interp_free(Interp *it)
{
    for (int64_t i = 0; i < it->sp; i++)
        val_release(it->stk[i]);
    free(it->stk);
    for (int i = 0; i < it->prog->nconsts; i++)
        if (it->consts[i])
            val_release(it->consts[i]);
    free(it->consts);
    free(it->rstack);
    io_shutdown();
    memset(it, 0, sizeof *it);
}

/* COPY/POP/CPOP operand check. */
static void stack_operands(Interp *it, const Instr *ins)
{
    int i = ins->a, j = ins->b;
    const char *name = vc_ops[ins->op].name;
    if (it->opt.check) {
        if (ins->op == OP_POP && (i < 0 || j < 0))
            rt_fatal_raw("vinterp: line %d: negative argument: POP %d %d", ins->cline, i, j);
        if ((int64_t)i + j > it->sp)
            rt_fatal_raw("vinterp: line %d: can't do a %s %d %d; only %lld items on the stack.",
                         ins->cline, name, i, j, (long long)it->sp);
    }
    if (i < 0 || j < 0)
        rt_fatal("negative operand (%d %d)", i, j);
    if (i == 0)
        return; /* no effect (the classic checks the depth under -c only) */
    if ((int64_t)i + j > it->sp)
        rt_fatal("stack underflow: %s %d %d needs %lld entries, the stack holds %lld", name, i, j,
                 (long long)i + j, (long long)it->sp);
}

/* STOP_TIMER's value: seconds and nanoseconds subtracted separately, as
 * the classic does (a double of epoch seconds keeps only 2^-22 s). */
static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_REALTIME, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec);
}

static void trace_before(Interp *it, int pc)
{
    const Instr *ins = &it->prog->code[pc];
    if (it->opt.trace_stack || it->opt.trace_values) {
        for (int64_t i = 0; i < it->sp && it->opt.trace_values; i++)
            val_for_host(it->stk[i]);
        for (int64_t i = 0; i < it->sp; i++)
            print_shape(stderr, it->stk[i]);
        if (it->opt.trace_values) {
            fputc('\t', stderr);
            for (int64_t i = 0; i < it->sp; i++)
                print_value(stderr, it->stk[i]);
            if (it->sp == 0)
                fputc('\n', stderr);
        } else {
            fputc('\n', stderr);
        }
    }
    if (it->opt.trace_heap)
        /* There is no block heap to list (memory is malloc'ed per vector):
         * show the live total against the -m limit instead. */
        fprintf(stderr, "memory:  %lld of %lld units in use  \n", (long long)mem_used(), (long long)mem_limit());
    if (it->opt.trace_command)
        vc_print_instr(stderr, it->prog, pc, ins->cline);
}

/* --progress: every 2^20 instructions, at most once a second, rewrite a
 * status line on stderr. Only when stderr is a terminal: never in files,
 * pipes or under the NESL front end. */
static void progress_tick(int64_t steps, int64_t depth, double *last)
{
    double t = rt_seconds();
    if (t - *last < 1.0)
        return;
    *last = t;
    fprintf(stderr, "\rvinterp: %lld instructions, call depth %lld, %lld vector units live   ",
            (long long)steps, (long long)depth, (long long)mem_used());
    fflush(stderr);
}

static void trace_runtime(const char *what, int64_t count, int64_t pc)
{
    fprintf(stderr, "%s: \t stack_count = %lld, %s = %lld\n", what, (long long)count,
            what[1] == 'u' ? "saved_pc" : "new_pc", (long long)pc);
}

/* S[k] = S[k + I] for k < J, in increasing k (the ranges may overlap).
 * NESL's stack moves are a few entries: two at a time, in a form gcc does
 * not turn back into a memmove call (the call cost more than the move). */
static inline void shift_down(Value **s, int64_t i, int64_t j)
{
    int64_t k = 0;
    for (; k + 2 <= j; k += 2) {
        Value *a = s[k + i], *b = s[k + 1 + i];
        s[k] = a;
        s[k + 1] = b;
    }
    if (k < j)
        s[k] = s[k + i];
}

/* The instructions that move or compute data (the ones a basic block is
 * made of): COPY/POP/CPOP, CONST and the vector instructions. */
static void exec_data_op(Interp *it, const Instr *ins)
{
    switch (ins->op) {
    case OP_COPY: {
        stack_operands(it, ins);
        int64_t i = ins->a, base = it->sp - ins->b - i;
        if (it->sp + i > it->cap)
            grow(it, it->sp + i);
        for (int64_t k = 0; k < i; k++)
            it->stk[it->sp++] = val_ref(it->stk[base + k]);
        break;
    }
    case OP_POP: {
        stack_operands(it, ins);
        if (ins->a == 0) /* moves nothing, however deep J reaches (the classic's no-op) */
            break;
        int64_t i = ins->a, j = ins->b, base = it->sp - j - i;
        Value **s = it->stk + base;
        for (int64_t k = 0; k < i; k++)
            val_release(s[k]);
        shift_down(s, i, j);
        it->sp -= i;
        break;
    }
    case OP_CPOP: {
        /* rotate: the I entries at depth J go to the top */
        stack_operands(it, ins);
        if (ins->a == 0) /* as POP 0 J */
            break;
        int64_t i = ins->a, j = ins->b, base = it->sp - j - i;
        Value **s = it->stk + base;
        if (i == 1) {
            Value *t = s[0];
            shift_down(s, 1, j);
            s[j] = t;
        } else if (i <= 8 && j > 0) {
            /* fixed counts: no library call, no rep movs */
            Value *t[8] = { 0 };
            for (int64_t k = 0; k < 8; k++)
                if (k < i)
                    t[k] = s[k];
            shift_down(s, i, j);
            for (int64_t k = 0; k < 8; k++)
                if (k < i)
                    s[j + k] = t[k];
        } else if (i > 0 && j > 0) {
            Value *tmp[64];
            Value **t = i <= 64 ? tmp : malloc((size_t)i * sizeof *t);
            if (!t)
                rt_fatal("out of host memory");
            memcpy(t, s, (size_t)i * sizeof *t);
            shift_down(s, i, j);
            memcpy(s + j, t, (size_t)i * sizeof *t);
            if (t != tmp)
                free(t);
        }
        break;
    }
    case OP_CONST:
        vs_push(it, ops_const_value(it, ins));
        break;
    default:
        argcheck(it, ins);
        switch (ins->op) {
        case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MOD:
        case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE:
        case OP_RSHIFT: case OP_AND: case OP_OR: case OP_XOR:
            op_binary(it, ins);
            break;
        case OP_SELECT:
            op_select(it, ins);
            break;
        case OP_RAND:
            op_rand(it, ins);
            break;
        case OP_PLUS_SCAN: case OP_MUL_SCAN: case OP_MAX_SCAN: case OP_MIN_SCAN:
        case OP_AND_SCAN: case OP_OR_SCAN: case OP_XOR_SCAN:
            op_scan(it, ins);
            break;
        case OP_PLUS_REDUCE: case OP_MUL_REDUCE: case OP_MAX_REDUCE: case OP_MIN_REDUCE:
        case OP_AND_REDUCE: case OP_OR_REDUCE: case OP_XOR_REDUCE:
            op_reduce(it, ins);
            break;
        case OP_PERMUTE: op_permute(it, ins); break;
        case OP_DPERMUTE: op_dpermute(it, ins); break;
        case OP_FPERMUTE: op_fpermute(it, ins); break;
        case OP_BPERMUTE: op_bpermute(it, ins); break;
        case OP_BFPERMUTE: op_bfpermute(it, ins); break;
        case OP_DFPERMUTE: op_dfpermute(it, ins); break;
        case OP_EXTRACT: op_extract(it, ins); break;
        case OP_REPLACE: op_replace(it, ins); break;
        case OP_DIST: op_dist(it, ins); break;
        case OP_INDEX: op_index(it, ins); break;
        case OP_RANK_UP: case OP_RANK_DOWN: op_rank(it, ins); break;
        case OP_PACK:
            grow(it, it->sp + 1);
            op_pack(it, ins);
            break;
        case OP_LENGTH: op_length(it, ins); break;
        case OP_MAKE_SEGDES: op_make_segdes(it, ins); break;
        case OP_LENGTHS: op_lengths(it, ins); break;
        default:
            if (vc_op_is_sem(ins->op))
                op_binary(it, ins);
            else
                op_unary(it, ins);
            break;
        }
    }
}

/* With a device layer on, the operands of an instruction the interpreter
 * runs itself must have valid host copies (values a device executor left
 * on the device are brought back here, and only here); with lazy fills
 * alive (value.h), they are made here for every instruction but the
 * elementwise ones, which read them as scalars. */
void interp_host_operands(Interp *it, const Instr *ins)
{
    int64_t k;
    switch (ins->op) {
    case OP_COPY: case OP_POP: case OP_CPOP: case OP_CONST: case OP_PAIR: case OP_UNPAIR:
    case OP_CALL: case OP_RET: case OP_ELSE: case OP_ENDIF: case OP_EXIT:
    case OP_START_TIMER: case OP_STOP_TIMER:
    case OP_LENGTH: /* the length is on the host; the data is not read */
        return;
    case OP_IF: /* the condition only */
        k = 1;
        break;
    /* I/O reads the operands VCODE.md gives it, no more (the op table
     * does not list them): WRITE's one, not the vectors below it */
    case OP_READ:
        return;
    case OP_WRITE: case OP_FCLOSE: case OP_FREAD:
        k = 1;
        break;
    case OP_FOPEN: case OP_FWRITE:
        k = 2;
        break;
    case OP_FREAD_CHAR:
        k = 3;
        break;
    case OP_SPAWN:
        k = 4;
        break;
    default: {
        static int8_t nargs[OP_COUNT]; /* the op table's argument counts + 1; 0: not looked up yet */
        int8_t *na = &nargs[ins->op];
        if (!*na)
            *na = (int8_t)(1 + (vc_ops[ins->op].args ? (int)strlen(vc_ops[ins->op].args) : 8));
        k = *na - 1;
    }
    }
    if (k > it->sp)
        k = it->sp;
    if (val_lazy_live && ops_lazy_aware(ins->op)) {
        for (int64_t j = 1; j <= k; j++)
            val_for_host_keep_lazy(it->stk[it->sp - j]);
        return;
    }
    for (int64_t j = 1; j <= k; j++)
        val_for_host(it->stk[it->sp - j]);
}

/* Go on in the program the tier worker published (InterpSwitch): the pc
 * and the return addresses mapped. 1 when switched. */
static int take_switch(Interp *it, int *pc, int32_t *rstack, int64_t rsp)
{
    InterpSwitch *sw = atomic_exchange_explicit(&it->pending, NULL, memory_order_acq_rel);
    if (!sw)
        return 0;
    int ok = sw->pcmap[*pc] >= 0;
    for (int64_t r = 0; r < rsp && ok; r++)
        ok = rstack[r] < 0 || sw->pcmap[rstack[r]] >= 0;
    if (!ok) {
        sw->taken = -1;
        return 0;
    }
    *pc = sw->pcmap[*pc];
    for (int64_t r = 0; r < rsp; r++)
        if (rstack[r] >= 0)
            rstack[r] = sw->pcmap[rstack[r]];
    it->prog = sw->prog;
    it->run_block = sw->run_block;
    it->block_ctx = sw->block_ctx;
    it->block_at = sw->block_at;
    sw->taken = 1;
    return 1;
}

static void (*timer_hook)(int start);

void interp_set_timer_hook(void (*hook)(int start)) { timer_hook = hook; }

int interp_run(Interp *it)
{
    const Program *p = it->prog;
    const Instr *code = p->code;
    int64_t rcap = 1024, rsp = 0;
    int switchable = atomic_load(&it->pending) != NULL || it->run_block == NULL;
    int32_t *rstack = rt_xmalloc((size_t)rcap * sizeof *rstack);
    it->rstack = rstack; /* so that interp_free releases it after a fatal error's longjmp */
    int pc = p->funcs[p->entry].start;
    int tracing = it->opt.trace_command || it->opt.trace_stack || it->opt.trace_values || it->opt.trace_heap;
    int64_t steps = 0, max_steps = it->opt.max_steps;
    int progress = it->opt.progress && isatty(2);
    int counting = max_steps > 0 || progress;
    double progress_last = rt_seconds();
    struct timespec timer_start = { 0, 0 };
    rstack[rsp++] = -1;
    if (it->opt.trace_runtime)
        trace_runtime("push", rsp, -1);
    int profiling = prof_enabled();
    if (profiling)
        prof_enter(p->entry);
    const int *block_at = it->block_at;
    for (;;) {
        if (block_at && block_at[pc] >= 0) {
            int next = it->run_block(it->block_ctx, it, pc);
            if (next >= 0) {
                pc = next;
                continue;
            }
        }
        const Instr *ins = &code[pc];
        rt_set_where(p, ins);
        int on_dev = it->dev_op && (!it->dev_ops || it->dev_ops[ins->op]) && it->dev_op(it->dev_ctx, it, ins, 0);
        if (!on_dev && (val_device_on || val_lazy_live))
            interp_host_operands(it, ins);
        if (tracing)
            trace_before(it, pc);
        if (counting) {
            ++steps;
            if (max_steps && steps > max_steps)
                rt_fatal("instruction limit (--max-steps=%lld) reached", (long long)max_steps);
            if (progress && (steps & 0xfffff) == 0)
                progress_tick(steps, rsp, &progress_last);
        }
        switch (ins->op) {
        case OP_COPY: case OP_POP: case OP_CPOP: case OP_CONST:
            if (on_dev) /* a long vector constant placed on the device */
                it->dev_op(it->dev_ctx, it, ins, 1);
            else
                exec_data_op(it, ins);
            pc++;
            break;
        case OP_PAIR: {
            vs_need(it, 2);
            Value *b = vs_pop(it), *a = vs_pop(it);
            vs_push(it, val_pair(a, b));
            pc++;
            break;
        }
        case OP_UNPAIR: {
            vs_need(it, 1);
            Value *v = vs_at(it, 0);
            if (v->type != VT_PAIR) {
                if (it->opt.check)
                    rt_fatal_raw("vinterp: line %d: attempting to UNPAIR an non-pair (%s)", ins->cline,
                                 val_type_name((ValType)v->type));
                rt_fatal("attempting to UNPAIR a non-pair (%s)", val_type_name((ValType)v->type));
            }
            it->sp--;
            Value *a = val_ref(v->fst), *b = val_ref(v->snd);
            val_release(v);
            vs_push(it, a);
            vs_push(it, b);
            pc++;
            break;
        }
        case OP_CALL:
            if (switchable && atomic_load_explicit(&it->pending, memory_order_relaxed) &&
                take_switch(it, &pc, rstack, rsp)) {
                p = it->prog;
                code = p->code;
                block_at = it->block_at;
                switchable = 0;
                continue;
            }
            if (rsp == rcap) {
                if (it->opt.max_depth && rsp >= it->opt.max_depth)
                    rt_fatal("call depth limit (%lld) exceeded: runaway recursion?",
                             (long long)it->opt.max_depth);
                int64_t ncap = rcap * 2;
                if (it->opt.max_depth && ncap > it->opt.max_depth + 1)
                    ncap = it->opt.max_depth + 1;
                int32_t *r = realloc(rstack, (size_t)ncap * sizeof *r);
                if (!r)
                    rt_fatal("out of host memory for the call stack");
                rstack = r;
                it->rstack = r;
                rcap = ncap;
            }
            rstack[rsp++] = pc + 1;
            if (it->opt.trace_runtime)
                trace_runtime("push", rsp, pc + 1);
            if (profiling)
                prof_enter(ins->target);
            pc = p->funcs[ins->target].start;
            break;
        case OP_RET:
            if (switchable && atomic_load_explicit(&it->pending, memory_order_relaxed) &&
                take_switch(it, &pc, rstack, rsp)) {
                p = it->prog;
                code = p->code;
                block_at = it->block_at;
                switchable = 0;
                continue;
            }
            pc = rstack[--rsp];
            if (it->opt.trace_runtime)
                trace_runtime("pop", rsp, pc);
            if (profiling)
                prof_leave();
            if (pc < 0) {
                if (it->dev_settle)
                    it->dev_settle(it->dev_ctx);
                if (progress)
                    fprintf(stderr, "\r%60s\r", "");
                free(rstack);
                it->rstack = NULL;
                rt_set_where(p, NULL);
                return 0;
            }
            break;
        case OP_IF: {
            if (on_dev) { /* the device tier took it ahead of its condition: the ELSE branch */
                it->dev_op(it->dev_ctx, it, ins, 1);
                pc = ins->target;
                break;
            }
            if (it->opt.check) {
                if (it->sp < 1 || it->stk[it->sp - 1]->type != VT_BOOL || it->stk[it->sp - 1]->len != 1)
                    rt_fatal_raw("vinterp: line %d: IF: top of stack not bool scalar.", ins->cline);
            }
            vs_need(it, 1);
            Value *c = vs_pop(it);
            if ((c->type != VT_BOOL && c->type != VT_INT && c->type != VT_FLOAT && c->type != VT_SEGDES) ||
                c->len < 1)
                rt_fatal("the condition must be a non-empty Bool vector, not %s of length %lld",
                         val_type_name((ValType)c->type), (long long)c->len);
            /* the classic: the first 4 bytes of the vector (of a Float,
             * the low half of its first element's bits) */
            int32_t flag;
            memcpy(&flag, c->data, sizeof flag);
            int t = flag != 0;
            val_release(c);
            pc = t ? pc + 1 : ins->target;
            break;
        }
        case OP_ELSE:
            pc = ins->target;
            break;
        case OP_ENDIF:
            pc++;
            break;
        case OP_EXIT:
            if (it->dev_settle)
                it->dev_settle(it->dev_ctx);
            prof_report(stderr);
            fflush(stdout);
            fflush(stderr);
            rt_exit_status(0);
        case OP_START_TIMER:
            if (timer_hook)
                timer_hook(1);
            clock_gettime(CLOCK_REALTIME, &timer_start);
            pc++;
            break;
        case OP_STOP_TIMER: {
            Value *v = val_new(VT_FLOAT, 1);
            if (timer_hook)
                timer_hook(0);
            VF(v)[0] = seconds_since(&timer_start);
            vs_push(it, v);
            pc++;
            break;
        }
        case OP_SRAND: {
            argcheck(it, ins);
            Value *s = vs_pop(it);
            if (s->len < 1)
                rt_fatal("the seed is an empty vector");
            uint32_t seed = (uint32_t)VI(s)[0];
            val_release(s);
            rnd_seed(rnd_global(), seed);
            Value *r = val_new(VT_BOOL, 1);
            VI(r)[0] = 1;
            vs_push(it, r);
            pc++;
            break;
        }
        case OP_READ: case OP_WRITE: case OP_FOPEN: case OP_FCLOSE:
        case OP_FREAD: case OP_FREAD_CHAR: case OP_FWRITE: case OP_SPAWN:
            if (it->dev_settle)
                it->dev_settle(it->dev_ctx);
            io_exec(it, ins);
            pc++;
            break;
        case OP_FUSED:
            rt_fatal("fused-operation libraries (-l) are not supported (FUSED %d)", ins->a);
        default:
            if (on_dev) {
                argcheck(it, ins);
                it->dev_op(it->dev_ctx, it, ins, 1);
            } else {
                exec_data_op(it, ins);
            }
            pc++;
            break;
        }
    }
}

void interp_exec_tier(Interp *it, int start, int end)
{
    if (!it->dev_op) {
        interp_exec_range(it, start, end);
        return;
    }
    const Program *p = it->prog;
    for (int pc = start; pc < end; pc++) {
        const Instr *ins = &p->code[pc];
        rt_set_where(p, ins);
        if ((!it->dev_ops || it->dev_ops[ins->op]) && it->dev_op(it->dev_ctx, it, ins, 0)) {
            argcheck(it, ins);
            it->dev_op(it->dev_ctx, it, ins, 1);
            continue;
        }
        if (val_device_on || val_lazy_live)
            interp_host_operands(it, ins);
        exec_data_op(it, ins);
    }
}

void interp_exec_range(Interp *it, int start, int end)
{
    const Program *p = it->prog;
    for (int pc = start; pc < end; pc++) {
        const Instr *ins = &p->code[pc];
        rt_set_where(p, ins);
        if (val_device_on || val_lazy_live)
            interp_host_operands(it, ins);
        exec_data_op(it, ins);
    }
}

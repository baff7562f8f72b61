/* runtime/backend_lcu.c — the lcu backend: block plans executed with the
 * λcu reference evaluator. Translation happens on a block's first
 * execution and is cached; a block whose plan cannot be built, or whose
 * inputs do not match what the plan assumed (types, length classes), is
 * interpreted instruction by instruction instead. */
#include "runtime/backend.h"
#include "runtime/errors.h"
#include "translate/lcu_eval.h"
#include "translate/plan.h"
#include "vcode/optable.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int state;          /* 0 not translated, 1 planned, 2 interpret */
    BlockPlan plan;
    int64_t runs, fallbacks;
    int64_t *launches;  /* --profile: per plan step */
    double *seconds;
} BlockEntry;

struct Backend {
    const Program *prog;
    BackendOptions opt;
    int nblocks;
    Block *blocks;
    BlockEntry *entries;
    int *block_at;
    Value **env;        /* scratch, sized for the largest plan */
    int64_t *classval;
    int envcap, classcap;
    int profiling;
    /* totals */
    int64_t launches, host_steps;
    double translate_seconds, ilp_seconds;
};

Backend *backend_lcu_new(const Program *p, const BackendOptions *o)
{
    Backend *b = calloc(1, sizeof *b);
    if (!b)
        rt_fatal("out of host memory");
    b->prog = p;
    b->opt = *o;
    b->nblocks = dfg_blocks(p, &b->blocks);
    b->entries = calloc((size_t)b->nblocks + 1, sizeof *b->entries);
    b->block_at = malloc((size_t)(p->ncode ? p->ncode : 1) * sizeof *b->block_at);
    if (!b->entries || !b->block_at)
        rt_fatal("out of host memory");
    for (int i = 0; i < p->ncode; i++)
        b->block_at[i] = -1;
    for (int k = 0; k < b->nblocks; k++) {
        if (b->blocks[k].nvector > 0)
            b->block_at[b->blocks[k].start] = k;
        else
            b->entries[k].state = 2;
    }
    return b;
}

const int *backend_block_map(const Backend *b) { return b->block_at; }

static ValType vt_of(const LcuVarType *t)
{
    if (t->kind == LV_SEGDES)
        return VT_SEGDES;
    return t->base == LB_FLOAT ? VT_FLOAT : t->base == LB_BOOL ? VT_BOOL : VT_INT;
}

/* Record the length quantities of variable V; 0 if consistent with the
 * classes seen so far. */
static int note_shape(Backend *b, BlockPlan *bp, int v, const Value *val)
{
    int q = shape_find(&bp->shapes, SQ_LEN(v));
    if (b->classval[q] < 0)
        b->classval[q] = val->len;
    else if (b->classval[q] != val->len)
        return -1;
    if (val->type == VT_SEGDES) {
        int qn = shape_find(&bp->shapes, SQ_N(v));
        if (b->classval[qn] < 0)
            b->classval[qn] = val->n;
        else if (b->classval[qn] != val->n)
            return -1;
    }
    return 0;
}

static void host_step(Backend *b, Interp *it, BlockPlan *bp, const DfgNode *nd)
{
    Value **env = b->env;
    const Instr *ins = &b->prog->code[nd->instr];
    Value *r = NULL;
    switch (nd->op) {
    case OP_CONST:
        if (ins->ckind == CK_VECTOR) {
            r = val_ref(it->consts[ins->cidx]);
        } else {
            r = val_new(ins->type == TY_FLOAT ? VT_FLOAT : ins->type == TY_BOOL ? VT_BOOL : VT_INT, 1);
            if (ins->type == TY_FLOAT)
                VF(r)[0] = ins->fval;
            else
                VI(r)[0] = ins->ival;
        }
        break;
    case OP_LENGTH: {
        Value *v = env[nd->args[0]];
        if (v->type == VT_SEGDES || v->type == VT_PAIR)
            rt_fatal("applying LENGTH to a %s", val_type_name((ValType)v->type));
        r = val_new(VT_INT, 1);
        VI(r)[0] = (int32_t)v->len;
        break;
    }
    case OP_LENGTHS: {
        Value *v = env[nd->args[0]];
        if (v->type != VT_SEGDES)
            rt_fatal("applying LENGTHS to a non-segment descriptor");
        r = val_new(VT_INT, v->len);
        if (v->len)
            memcpy(r->data, v->data, (size_t)v->len * 4);
        break;
    }
    case OP_MAKE_SEGDES: {
        Value *v = env[nd->args[0]];
        if (v->type != VT_INT)
            rt_fatal("argument 1 is %s, expected Int", val_type_name((ValType)v->type));
        r = seg_new(v->len);
        if (v->len)
            memcpy(r->data, v->data, (size_t)v->len * 4);
        seg_finish(r);
        break;
    }
    default:
        rt_fatal("internal error: %s is not a host step", vc_ops[nd->op].name);
    }
    (void)bp;
    if (env[nd->res[0]])
        val_release(env[nd->res[0]]);
    env[nd->res[0]] = r;
    b->host_steps++;
}

int backend_run_block(Backend *b, Interp *it, int pc)
{
    int k = b->block_at[pc];
    BlockEntry *e = &b->entries[k];
    if (e->state == 2)
        return -1;
    if (e->state == 0) {
        PlanOptions po;
        memset(&po, 0, sizeof po);
        po.fusion = b->opt.fusion;
        po.fuse.timeout_s = b->opt.ilp_timeout;
        po.fuse.max_nodes = 60;
        po.trace = b->opt.trace;
        char msg[400];
        if (plan_build(b->prog, &b->blocks[k], &po, &e->plan, msg, sizeof msg) < 0) {
            if (b->opt.trace)
                fprintf(b->opt.trace, "== block at line %d not planned: %s\n", b->prog->code[pc].line, msg);
            e->state = 2;
            return -1;
        }
        b->translate_seconds += e->plan.translate_seconds;
        b->ilp_seconds += e->plan.fr.seconds;
        e->state = 1;
    }
    BlockPlan *bp = &e->plan;
    Dfg *g = &bp->dfg;
    if (it->sp < g->nin) {
        e->fallbacks++;
        return -1; /* the interpreter reports the underflow */
    }
    if (b->envcap < bp->nvars) {
        free(b->env);
        b->envcap = bp->nvars * 2;
        b->env = calloc((size_t)b->envcap, sizeof *b->env);
    }
    if (b->classcap < bp->shapes.nq) {
        free(b->classval);
        b->classcap = bp->shapes.nq * 2;
        b->classval = malloc((size_t)b->classcap * sizeof *b->classval);
    }
    if (!b->env || !b->classval)
        rt_fatal("out of host memory");
    for (int q = 0; q < bp->shapes.nq; q++)
        b->classval[q] = -1;
    b->classval[shape_find(&bp->shapes, bp->shapes.one)] = 1;
    /* Inputs: the types the plan assumed, and consistent lengths. */
    for (int j = 0; j < g->nin; j++) {
        Value *v = it->stk[it->sp - 1 - j];
        if (v->type == VT_PAIR) {
            if (bp->typed[j]) {
                e->fallbacks++;
                return -1;
            }
            continue;
        }
        if ((bp->typed[j] && v->type != vt_of(&bp->types[j])) || note_shape(b, bp, j, v) < 0) {
            e->fallbacks++;
            return -1;
        }
    }
    Value **env = b->env;
    for (int j = 0; j < g->nin; j++)
        env[j] = val_ref(it->stk[it->sp - 1 - j]);
    for (int s = 0; s < bp->nsteps; s++) {
        PlanStep *ps = &bp->steps[s];
        rt_set_where(b->prog, &b->prog->code[g->nodes[ps->node].instr]);
        if (ps->kind == STEP_HOST) {
            host_step(b, it, bp, &g->nodes[ps->node]);
            const DfgNode *nd = &g->nodes[ps->node];
            if (note_shape(b, bp, nd->res[0], env[nd->res[0]]) < 0)
                rt_fatal("length mismatch in the block at lines %d-%d", b->prog->code[bp->blk.start].line,
                         b->prog->code[bp->blk.end - 1].line);
        } else if (b->profiling) {
            if (!e->launches) {
                e->launches = calloc((size_t)bp->nsteps, sizeof *e->launches);
                e->seconds = calloc((size_t)bp->nsteps, sizeof *e->seconds);
                if (!e->launches || !e->seconds)
                    rt_fatal("out of host memory");
            }
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            lcu_eval_kernel(ps->k, env, bp->types, bp->nvars);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            e->launches[s]++;
            e->seconds[s] += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
            b->launches++;
        } else {
            lcu_eval_kernel(ps->k, env, bp->types, bp->nvars);
            b->launches++;
        }
        if (ps->kind == STEP_KERNEL) {
            for (int r = 0; r < ps->k->nrets; r++) {
                int v = ps->k->rets[r];
                if (env[v] && note_shape(b, bp, v, env[v]) < 0)
                    rt_fatal("length mismatch in the block at lines %d-%d", b->prog->code[bp->blk.start].line,
                             b->prog->code[bp->blk.end - 1].line);
            }
        }
        for (int r = 0; r < ps->nrelease; r++) {
            int v = ps->release[r];
            if (v >= g->nin && env[v]) {
                val_release(env[v]);
                env[v] = NULL;
            }
        }
    }
    /* Replace the inputs by the outputs. */
    for (int j = 0; j < g->nin; j++)
        val_release(it->stk[--it->sp]);
    for (int i = 0; i < g->nout; i++) {
        Value *v = env[g->out[i]];
        if (!v)
            rt_fatal("internal error: block output x%d was not computed", g->out[i]);
        vs_push(it, val_ref(v));
    }
    for (int v = 0; v < bp->nvars; v++)
        if (env[v]) {
            val_release(env[v]);
            env[v] = NULL;
        }
    e->runs++;
    return bp->blk.end;
}

void backend_report(const Backend *b, FILE *f)
{
    int planned = 0, kb = 0, ka = 0, ab = 0, aa = 0, fellback = 0;
    int big_vars = 0, big_cons = 0;
    double big_time = 0.0, max_time = 0.0;
    int64_t fallbacks = 0;
    for (int k = 0; k < b->nblocks; k++) {
        const BlockEntry *e = &b->entries[k];
        fallbacks += e->fallbacks;
        if (e->state != 1)
            continue;
        planned++;
        kb += e->plan.kernels_unfused;
        ka += e->plan.kernels_fused;
        ab += e->plan.arrays_unfused;
        aa += e->plan.arrays_fused;
        const FuseResult *fr = &e->plan.fr;
        fellback += e->plan.fused && fr->fell_back;
        if (fr->nvars > big_vars) {
            big_vars = fr->nvars;
            big_cons = fr->nconstraints;
            big_time = fr->seconds;
        }
        if (fr->seconds > max_time)
            max_time = fr->seconds;
    }
    fprintf(f, "stats: blocks translated %d of %d; kernels %d unfused, %d fused; arrays materialised %d unfused, "
               "%d fused\n",
            planned, b->nblocks, kb, ka, ab, aa);
    fprintf(f, "stats: kernel launches %lld, host steps %lld, fallbacks to the interpreter %lld\n",
            (long long)b->launches, (long long)b->host_steps, (long long)fallbacks);
    fprintf(f, "stats: translation %.6f s, of which ILP %.6f s; largest ILP %d variables, %d constraints, "
               "solved in %.6f s; slowest ILP %.6f s; %d blocks fell back to the greedy schedule\n",
            b->translate_seconds, b->ilp_seconds, big_vars, big_cons, big_time, max_time, fellback);
}

void backend_profile_on(Backend *b) { b->profiling = 1; }

typedef struct {
    int block, step;
    double seconds;
} KernelRow;

static int by_seconds(const void *x, const void *y)
{
    const KernelRow *a = x, *b = y;
    return (a->seconds < b->seconds) - (a->seconds > b->seconds);
}

void backend_profile_report(const Backend *b, FILE *f, int json)
{
    int n = 0;
    for (int k = 0; k < b->nblocks; k++)
        if (b->entries[k].launches)
            n += b->entries[k].plan.nsteps;
    KernelRow *rows = calloc((size_t)(n ? n : 1), sizeof *rows);
    if (!rows)
        return;
    int m = 0;
    for (int k = 0; k < b->nblocks; k++) {
        const BlockEntry *e = &b->entries[k];
        if (!e->launches)
            continue;
        for (int s = 0; s < e->plan.nsteps; s++)
            if (e->launches[s]) {
                rows[m].block = k;
                rows[m].step = s;
                rows[m].seconds = e->seconds[s];
                m++;
            }
    }
    qsort(rows, (size_t)m, sizeof *rows, by_seconds);
    if (json)
        fprintf(f, "{\"kernels\": [");
    else
        fprintf(f, "profile: %d fused kernels run; by time\n%-36s %6s %12s %12s\n", m, "kernel (function, first line)",
                "soacs", "launches", "seconds");
    for (int i = 0; i < m; i++) {
        const BlockEntry *e = &b->entries[rows[i].block];
        const PlanStep *ps = &e->plan.steps[rows[i].step];
        const Instr *in = &b->prog->code[e->plan.dfg.nodes[ps->node].instr];
        const char *fn = b->prog->funcs[e->plan.blk.func].name;
        if (json)
            fprintf(f, "%s\n  {\"function\": \"%s\", \"kernel\": %d, \"line\": %d, \"soacs\": %d, "
                       "\"launches\": %lld, \"seconds\": %.9f}",
                    i ? "," : "", fn, ps->k->id, in->line, ps->k->nsoacs, (long long)e->launches[rows[i].step],
                    rows[i].seconds);
        else
            fprintf(f, "%-24.24s K%-4d l%-5d %6d %12lld %12.6f\n", fn, ps->k->id, in->line, ps->k->nsoacs,
                    (long long)e->launches[rows[i].step], rows[i].seconds);
    }
    if (json)
        fprintf(f, "\n]}\n");
    free(rows);
}

void backend_free(Backend *b)
{
    if (!b)
        return;
    for (int k = 0; k < b->nblocks; k++) {
        free(b->entries[k].launches);
        free(b->entries[k].seconds);
    }
    for (int k = 0; k < b->nblocks; k++)
        if (b->entries[k].state == 1)
            plan_free(&b->entries[k].plan);
    free(b->entries);
    free(b->blocks);
    free(b->block_at);
    free(b->env);
    free(b->classval);
    free(b);
}

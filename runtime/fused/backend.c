/* runtime/fused/backend.c — the block-plan driver shared by the fused backends:
 * translation (on a block's first execution, or of every block up front
 * for an eager executor), input checks, host steps, length-class checks,
 * releases, the executor's kernels, error replay and -m reruns. A block
 * whose plan cannot be built, or whose inputs do not match what the plan
 * assumed (types, length classes), is interpreted instruction by
 * instruction instead. The tiers' policy is in backend_tier.c, --check in
 * backend_check.c, the figures of -d stats and --profile in
 * backend_report.c (backend_impl.h: the state they share). */
#include "runtime/fused/backend_impl.h"
#include "runtime/fused/tier_after.h"
#include "runtime/fused/tuning.h"
#include "runtime/core/trace.h"
#include "runtime/fused/check_bound.h"
#include "runtime/core/clock.h"
#include "runtime/core/errors.h"
#include "runtime/core/rand.h"
#include "runtime/fused/lcu_eval.h"
#include "runtime/interp/ops.h"
#include "runtime/fused/replace_step.h"
#include "runtime/fused/tier_hot.h"
#include "runtime/fused/tier_verdict.h"
#include "translate/plan.h"
#include "vcode/optable.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Plan block K into its entry: 0, or -1 (not plannable). Touches only the
 * entry: the worker runs it too. */
int plan_block(Backend *b, int k)
{
    BlockEntry *e = &b->entries[k];
    PlanOptions po;
    memset(&po, 0, sizeof po);
    po.fusion = b->opt.fusion;
    po.float_reassoc = b->opt.float_reassoc;
    po.fuse.max_nodes = 60;
    po.trace = b->opt.trace;
    char msg[400];
    if (plan_build(b->prog, &b->blocks[k], &po, &e->plan, msg, sizeof msg) < 0) {
        if (b->opt.trace)
            fprintf(b->opt.trace, "== block at line %d not planned: %s\n", b->prog->code[b->blocks[k].start].line,
                    msg);
        snprintf(e->why, sizeof e->why, "not planned: %.140s", msg);
        return -1;
    }
    e->planned = 1;
    e->translate_s = e->plan.translate_seconds;
    return 0;
}

/* Translate block K (state PROFILE -> FUSED, or INTERP when it cannot be
 * planned). */
void translate_block(Backend *b, int k)
{
    BlockEntry *e = &b->entries[k];
    atomic_store(&e->state, plan_block(b, k) == 0 ? BS_FUSED : BS_INTERP);
}

Backend *backend_new(const Program *p, const BackendOptions *o, Executor *x, char *msg, size_t msglen)
{
    Backend *b = rt_xcalloc(1, sizeof *b);
    b->prog = p;
    b->opt = *o;
    if (o->check)
        b->perturb = o->perturb;
    b->x = x;
    x->no_donations = o->check;
    x->time_kernels = o->stats || o->profiling;
    b->nblocks = dfg_blocks(p, &b->blocks);
    b->entries = calloc((size_t)b->nblocks + 1, sizeof *b->entries);
    b->block_at = malloc((size_t)(p->ncode ? p->ncode : 1) * sizeof *b->block_at);
    if (!b->entries || !b->block_at)
        rt_fatal("out of host memory");
    for (int i = 0; i < p->ncode; i++)
        b->block_at[i] = -1;
    for (int k = 0; k < b->nblocks; k++) {
        b->entries[k].nin = -1;
        b->entries[k].promoted_t = b->entries[k].ready_t = b->entries[k].installed_t = -1.0;
        b->entries[k].refined_t = -1.0;
        b->entries[k].warm = -1;
        if (b->blocks[k].nvector > 0)
            b->block_at[b->blocks[k].start] = k;
        else
            atomic_store(&b->entries[k].state, BS_INTERP);
    }
    b->t_start = rt_seconds();
    b->profiling = o->profiling;
    b->tiered = x->build != NULL && o->tier.mode != TIER_EAGER;
    if (b->tiered) {
        b->program_id = tier_program_id(p);
        char hp[1200];
        if (o->cache_dir && tier_hot_path(o->cache_dir, b->program_id, hp, sizeof hp) == 0) {
            b->hot_path = rt_xstrdup(hp);
            tier_hot_read(hp, &b->hot_prior);
        }
        uint64_t config = tier_config_id(x->name, o->float_reassoc);
        if (o->cache_dir && tier_slow_path(o->cache_dir, b->program_id, config, hp, sizeof hp) == 0) {
            b->slow_path = rt_xstrdup(hp);
            tier_hot_read(hp, &b->slow_prior);
        }
        if (o->cache_dir && tier_warm_path(o->cache_dir, b->program_id, config, hp, sizeof hp) == 0) {
            b->warm_path = rt_xstrdup(hp);
            tier_hot_read(hp, &b->warm_prior);
        }
        b->bg_plans = calloc((size_t)b->nblocks + 1, sizeof *b->bg_plans);
        b->fg_plans = calloc((size_t)b->nblocks + 1, sizeof *b->fg_plans);
        if (!b->bg_plans || !b->fg_plans)
            rt_fatal("out of host memory");
    } else if (x->eager) {
        BlockPlan **plans = rt_xcalloc((size_t)b->nblocks + 1, sizeof *plans);
        for (int k = 0; k < b->nblocks; k++) {
            if (atomic_load(&b->entries[k].state) == BS_PROFILE)
                translate_block(b, k);
            plans[k] = atomic_load(&b->entries[k].state) == BS_FUSED ? &b->entries[k].plan : NULL;
        }
        int rc = x->prepare(x, p, b->nblocks, plans, 0, msg, msglen);
        free(plans);
        if (rc < 0) {
            backend_free(b);
            return NULL;
        }
    }
    return b;
}

const int *backend_block_map(const Backend *b) { return b->block_at; }

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

static int released_by(const PlanStep *ps, int v)
{
    for (int r = 0; r < ps->nrelease; r++)
        if (ps->release[r] == v)
            return 1;
    return 0;
}

/* May host step S overwrite the value of plan variable V in place? Only
 * when every reference to it is the block's: stack slots of the block's
 * inputs (dropped when the block ends) and plan variables that are dead
 * once step S has read them — as the reference interpreter, running the
 * block's instructions one by one, would hold it only once by then. Not
 * under --check, which reruns the block from its inputs. */
static int owned_dead(const Backend *b, const BlockPlan *bp, int s, int v)
{
    Value *x = b->env[v];
    if (b->opt.check || !x || x->type == VT_PAIR || x->type == VT_SEGDES)
        return 0;
    const Interp *it = b->rp_it;
    int nin = bp->dfg.nin, refs = 0;
    for (int u = 0; u < bp->nvars; u++) {
        if (b->env[u] != x)
            continue;
        int dead = released_by(&bp->steps[s], u);
        for (int t = 0; t < s && !dead && u < nin; t++)
            dead = released_by(&bp->steps[t], u);
        if (!dead)
            return 0;
        refs += 1 + (u < nin && it->stk[it->sp - 1 - u] == x);
    }
    int own = x->rc == refs + undo_log_refs(&b->undo, x);
    if (own && x->held) /* held for an earlier block's replay: its checks read first */
        val_settle_held();
    return own;
}

/* Is plan variable V's value one of the block's inputs? (Those are not
 * overwritten but through the undo log: a replay reruns the block from
 * them.) */
static int holds_input(const Backend *b, const BlockPlan *bp, int v)
{
    for (int u = 0; u < bp->dfg.nin; u++)
        if (b->env[u] == b->env[v])
            return 1;
    return 0;
}

/* Are the arrays that step S's MAP reads at its own index all at least as
 * long as its shape? (Then its loop cannot stop half way: PlanStep
 * input_donor.) */
static int reads_in_range(const Backend *b, const PlanStep *ps)
{
    const LcuSoac *map = ps->k->soacs[0];
    const Value *sh = b->env[map->shape.var];
    if (!sh)
        return 0;
    for (int u = 0; u < map->pull->nusing; u++) {
        const Value *x = b->env[map->pull->using[u]];
        if (!x || x->type == VT_PAIR || x->type == VT_SEGDES || x->len < sh->len)
            return 0;
    }
    return 1;
}

/* Offer kernel step S's results the storage of the arguments it reads last
 * and that nothing else holds (PlanStep.donor; as the reference writes an
 * operation's result over an argument it holds alone). A block input only
 * where nothing can fail from then on (PlanStep.input_donor): a replay
 * reruns the block from its inputs. Returns how many. */
static int offer_donors(Backend *b, const BlockPlan *bp, int s, int *inputs)
{
    const PlanStep *ps = &bp->steps[s];
    *inputs = 0;
    if (!ps->donor)
        return 0;
    int n = 0;
    for (int r = 0; r < ps->k->nrets; r++) {
        int p = ps->donor[r], v = ps->k->rets[r];
        if (p < 0 || b->env[v] || !owned_dead(b, bp, s, p) ||
            (holds_input(b, bp, p) && !(ps->input_donor && reads_in_range(b, ps))))
            continue;
        *inputs += holds_input(b, bp, p);
        b->env[v] = val_donate(b->env[p]);
        n++;
    }
    b->donated += n;
    return n;
}

/* After the step: which offers were taken; an offer not taken is
 * withdrawn (the executor released or replaced the slot's reference). */
static void settle_donors(Backend *b, const BlockPlan *bp, int s)
{
    const PlanStep *ps = &bp->steps[s];
    for (int r = 0; r < ps->k->nrets; r++) {
        int p = ps->donor[r], v = ps->k->rets[r];
        if (p < 0 || !b->env[p])
            continue;
        if (b->env[v] == b->env[p]) {
            b->written_in_place++;
            if (holds_input(b, bp, p))
                b->input_overwritten = 1;
        }
        b->env[p]->donated = 0;
    }
}

static void host_step(Backend *b, Interp *it, BlockPlan *bp, int s, const DfgNode *nd)
{
    Value **env = b->env;
    const Instr *ins = &b->prog->code[nd->instr];
    Value *r = NULL;
    /* a descriptor made or read where its operand lives (the cuda
     * executor's device tier), or on the host */
    if ((nd->op == OP_MAKE_SEGDES || nd->op == OP_LENGTHS) && b->x->meta_step && env[nd->args[0]] &&
        (r = b->x->meta_step(b->x, nd->op, env[nd->args[0]])) != NULL) {
        if (env[nd->res[0]])
            val_release(env[nd->res[0]]);
        env[nd->res[0]] = r;
        b->host_steps++;
        return;
    }
    /* The operands' host copies (LENGTH reads none; REPLACE's data vector
     * is replace_step's business: it may stay on the device) */
    for (int a = nd->op == OP_REPLACE; a < nd->nargs && nd->op != OP_LENGTH; a++)
        if (env[nd->args[a]])
            val_for_host(env[nd->args[a]]);
    switch (nd->op) {
    case OP_CONST:
        r = ops_const_value(it, ins);
        break;
    case OP_LENGTH: {
        Value *v = env[nd->args[0]];
        if (v->type == VT_SEGDES || v->type == VT_PAIR)
            rt_fatal("applying LENGTH to a %s", val_type_name((ValType)v->type));
        r = ops_length_of(v);
        break;
    }
    case OP_LENGTHS: {
        Value *v = env[nd->args[0]];
        if (v->type != VT_SEGDES)
            rt_fatal("applying LENGTHS to a non-segment descriptor");
        r = ops_lengths_of(v);
        break;
    }
    case OP_MAKE_SEGDES: {
        Value *v = env[nd->args[0]];
        if (v->type != VT_INT)
            rt_fatal("argument 1 is %s, expected Int", val_type_name((ValType)v->type));
        /* lengths held only here are retagged in place, as the reference does */
        r = seg_of_lengths(v, owned_dead(b, bp, s, nd->args[0]) && !holds_input(b, bp, nd->args[0]));
        break;
    }
    case OP_REPLACE: { /* data idx vals sd */
        Value *data = env[nd->args[0]];
        int inplace = owned_dead(b, bp, s, nd->args[0]);
        if (inplace)
            b->replace_inplace++;
        else
            b->replace_copied++;
        r = replace_step(data, env[nd->args[1]], env[nd->args[2]], env[nd->args[3]], inplace, &b->undo);
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

/* ---- --check ------------------------------------------------------------- */

/* A fatal error inside a fused block: rerun the block on the reference
 * interpreter from its inputs (still on the stack) and the RAND state it
 * started with, so that the reference reports the error in its own words
 * at its own line. Returns only if the reference finds no error. */
static void drop_new_offsets(Backend *b, const Interp *it, int nin, Value *const *outs, int nout);

/* The dead inputs bind_inputs stopped counting count again (the block
 * ends, or the reference runs it from its inputs). */
static void dead_charge(Backend *b)
{
    mem_replay_at(mem_used() + b->rp_dead_units);
    b->rp_dead_units = 0;
}

static void replay_block(void *arg)
{
    Backend *b = arg;
    /* -m as the user gave it (the block ran with headroom), and the
     * segment offsets the block cached gone, as in the reference */
    mem_set_headroom(0);
    drop_new_offsets(b, b->rp_it, b->rp_nin, NULL, 0);
    /* What the block charged is dead: it stops counting against -m (it is
     * not freed, another thread may still be reading it). */
    if (mem_used() > b->rp_used)
        mem_uncharge(mem_used() - b->rp_used);
    dead_charge(b);
    undo_log_rollback(&b->undo);
    *rnd_global() = b->rp_rand;
    for (int j = 1; j <= b->rp_nin && j <= b->rp_it->sp; j++)
        val_for_host(b->rp_it->stk[b->rp_it->sp - j]);
    interp_exec_range(b->rp_it, b->rp_start, b->rp_end);
}

/* The block run now ending passed -m at its peak: undo it (its values
 * released, in-place REPLACEs rolled back, RAND as it was) and run the
 * block on the reference from its inputs, still on the stack. */
/* Forget the segment offsets the fused run cached on descriptors that
 * had none when it started (its inputs among b->offs_new, and the
 * descriptors it made, in OUTS[0..NOUT)): the reference would not have
 * computed them, and cached they count against -m for as long as the
 * descriptor lives (bn_qs: 8 units over the reference's smallest -m).
 * Computing them again later costs a pass over the lengths. */
static void drop_new_offsets(Backend *b, const Interp *it, int nin, Value *const *outs, int nout)
{
    for (int i = 0; i < b->noffs_new; i++)
        seg_drop_offsets(b->offs_new[i]);
    for (int i = 0; i < nout; i++) {
        Value *v = outs[i];
        if (!v || v->type != VT_SEGDES || !v->offs)
            continue;
        int input = 0; /* an input that had them at the start keeps them */
        for (int j = 0; j < nin && j < it->sp && !input; j++)
            input = it->stk[it->sp - 1 - j] == v;
        if (!input)
            seg_drop_offsets(v);
    }
    b->noffs_new = 0;
}

/* Note the block run's input descriptors that have no offsets cached. */
static void note_offsets(Backend *b, const Interp *it, int nin)
{
    b->noffs_new = 0;
    for (int j = 0; j < nin && j < it->sp; j++) {
        Value *v = it->stk[it->sp - 1 - j];
        if (v->type != VT_SEGDES || v->offs || v->len <= 1)
            continue;
        if (b->noffs_new == b->offs_cap) {
            int cap = b->offs_cap ? 2 * b->offs_cap : 16;
            Value **o = realloc(b->offs_new, (size_t)cap * sizeof *o);
            if (!o)
                return; /* (then they stay cached: counted as now) */
            b->offs_new = o;
            b->offs_cap = cap;
        }
        b->offs_new[b->noffs_new++] = v;
    }
}

static _Noreturn void length_mismatch(const Backend *b, const BlockPlan *bp)
{
    int lo, hi;
    vc_line_range(b->prog, bp->blk.start, bp->blk.end, &lo, &hi);
    rt_fatal("length mismatch in the block at lines %d-%d", lo, hi);
}

/* Run on the reference, block BP's instructions might have charged this
 * many units against -m at most, beyond what was in use when it started
 * (mem_used then, b->rp_used): every result (the classes' lengths as the
 * fused run found them), twice over (the result and a temporary of its
 * size inside the instruction), a descriptor's with its offsets, every
 * input descriptor's offsets, and the dead inputs bind_inputs let go
 * (the reference pops them later). A PACK's result whose length the run
 * did not see is bounded by its data's; another unseen length: -1 (no
 * bound). The fused run itself may hold less at its peak than the
 * reference would (it materialises fewer vectors), so a run within -m
 * is not yet one the reference would have finished (backend_run_block). */
static int64_t ref_charge_bound(const Backend *b, BlockPlan *bp)
{
    const Dfg *g = &bp->dfg;
    int64_t units = b->rp_dead_units;
    for (int v = 0; v < g->nin; v++) {
        int64_t m = g->types[v] == DT_SEGDES ? b->classval[shape_find(&bp->shapes, SQ_LEN(v))] : 0;
        units += m > 1 ? m : 0;
    }
    for (int k = 0; k < g->nnodes; k++) {
        const DfgNode *nd = &g->nodes[k];
        for (int r = 0; r < nd->nres; r++) {
            int v = nd->res[r];
            int64_t len = b->classval[shape_find(&bp->shapes, SQ_LEN(v))];
            if (len < 0 && nd->op == OP_PACK && nd->nargs > 0)
                len = b->classval[shape_find(&bp->shapes, SQ_LEN(nd->args[0]))];
            if (len < 0)
                return -1;
            DfgType t = g->types[v];
            ValType vt = t == DT_FLOAT ? VT_FLOAT : t == DT_SEGDES ? VT_SEGDES : t == DT_BOOL ? VT_BOOL : VT_INT;
            units += 2 * val_units(vt, len) + (t == DT_SEGDES ? len : 0);
        }
    }
    return units;
}

static void rerun_on_reference(Backend *b, Interp *it, const BlockPlan *bp, RandState rand_before)
{
    drop_new_offsets(b, it, bp->dfg.nin, NULL, 0);
    for (int v = 0; v < bp->nvars; v++)
        if (b->env[v]) {
            val_release(b->env[v]);
            b->env[v] = NULL;
        }
    undo_log_rollback(&b->undo);
    undo_log_clear(&b->undo);
    *rnd_global() = rand_before;
    dead_charge(b);
    for (int j = 1; j <= bp->dfg.nin && j <= it->sp; j++)
        val_for_host(it->stk[it->sp - j]);
    b->mem_reruns++;
    interp_exec_range(it, bp->blk.start, bp->blk.end);
}

/* The tiers' dispatch rule for block K's run (tiered backends): a short
 * run, or one with a lazy fill among its inputs, is interpreted (-1); the
 * 3rd and 6th run after the install, then every 8th (the 11th, 19th,
 * ...), is interpreted here, timed: tier_judge's sample of the other tier;
 * so is the first when earlier runs of the program lack such samples
 * (sample_first). Returns the pc after the block when it ran it, -1, or 0
 * (run it fused); *LEN: its longest input. */
static int tier_dispatch(Backend *b, Interp *it, int k, int nin, int64_t *len)
{
    BlockEntry *e = &b->entries[k];
    if (e->quick)
        tier_refine_check(b, k);
    *len = largest_input(it, nin);
    if (*len < b->opt.tier.min_len) {
        e->short_runs++;
        return -1;
    }
    if (lazy_input(b, it, nin)) {
        e->lazy_runs++;
        return -1;
    }
    int64_t si = e->since_install++;
    if ((si == 2 || si == 5 || si % 8 == 2 || (si == 0 && e->sample_first)) && !it->opt.max_steps &&
        !it->opt.progress) {
        double t_run = rt_seconds();
        int64_t w = *len * b->blocks[k].nvector;
        interp_exec_tier(it, b->blocks[k].start, b->blocks[k].end);
        double dt = rt_seconds() - t_run;
        e->entries++;
        e->elements += *len;
        e->big_runs++;
        e->work += w;
        e->interp_secs += dt;
        e->interp_work += w;
        e->interp_timed++;
        e->late_n++;
        e->late_secs += dt;
        e->late_work += w;
        return b->blocks[k].end;
    }
    return 0;
}

/* Bind the inputs of block K's plan into b->env: the types the plan
 * assumed and consistent lengths, else -1 (the block is interpreted). */
static int bind_inputs(Backend *b, Interp *it, BlockEntry *e, BlockPlan *bp)
{
    Dfg *g = &bp->dfg;
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
        if ((bp->typed[j] && v->type != lcu_val_type(&bp->types[j])) || note_shape(b, bp, j, v) < 0) {
            e->fallbacks++;
            return -1;
        }
    }
    Value **env = b->env;
    for (int j = 0; j < g->nin; j++) {
        env[j] = val_ref(it->stk[it->sp - 1 - j]);
        if (val_lazy_live && !b->x->takes_lazy && (env[j]->lazy || env[j]->type == VT_PAIR))
            val_unlazy(env[j]); /* a fill not made yet (value.h): the kernels read data */
    }
    /* Inputs the block only pops stop counting against -m now, as the
     * reference would pop them (they stay in their stack slots, charged
     * again when the block ends and the outputs replace them, or when it
     * is run again on the reference, which holds them until it pops them:
     * dead_charge). Not under --check, which reruns the block from its
     * inputs. */
    b->rp_dead_units = 0;
    b->ndead_j = 0;
    for (int d = 0; d < bp->ndead_in && !b->opt.check; d++) {
        int j = bp->dead_in[d];
        Value *gone = it->stk[it->sp - 1 - j];
        if (gone->rc != 2 || gone->type == VT_PAIR || !gone->units)
            continue;
        if (b->ndead_j == b->dead_cap) {
            int cap = b->dead_cap ? 2 * b->dead_cap : 16, *nj = realloc(b->dead_j, (size_t)cap * sizeof *nj);
            if (!nj)
                rt_fatal("out of host memory");
            b->dead_j = nj;
            b->dead_cap = cap;
        }
        b->dead_j[b->ndead_j++] = j;
        b->rp_dead_units += gone->units;
        mem_uncharge(gone->units);
        val_release(env[j]);
        env[j] = NULL;
    }
    return 0;
}

/* Run the steps of block K's plan over ENV: host steps, the executor's
 * kernels, the length checks, the releases. */
static void run_steps(Backend *b, Interp *it, int k, BlockEntry *e, BlockPlan *bp, Value **env)
{
    Dfg *g = &bp->dfg;
    for (int s = 0; s < bp->nsteps; s++) {
        PlanStep *ps = &bp->steps[s];
        rt_set_where(b->prog, &b->prog->code[g->nodes[ps->node].instr]);
        double t0 = rt_seconds();
        if (ps->kind == STEP_HOST) {
            const DfgNode *nd = &g->nodes[ps->node];
            /* REPLACE may write over an input: the failures so far are
             * read first. The others write nothing old; what they read of
             * the kernels' results comes back through a read that reads
             * the failures first, and an error of their own reads them
             * before it is reported (a replay, the pending checks). */
            if (b->x->check_errors && nd->op == OP_REPLACE)
                b->x->check_errors(b->x);
            host_step(b, it, bp, s, nd);
            if (b->x->host_step_ran)
                b->x->host_step_ran(b->x);
            b->host_seconds += rt_seconds() - t0;
            if (note_shape(b, bp, nd->res[0], env[nd->res[0]]) < 0)
                length_mismatch(b, bp);
        } else {
            /* an input's storage offered: the failures so far read before
             * and after (a replay needs the inputs as they were) */
            int ni, nd = offer_donors(b, bp, s, &ni);
            if (ni && b->x->check_errors)
                b->x->check_errors(b->x);
            b->x->run_kernel(b->x, k, bp, s, env);
            if (ni && b->x->check_errors) /* before its results take the donated storage */
                b->x->check_errors(b->x);
            if (nd)
                settle_donors(b, bp, s);
            if (b->perturb.kind) /* a wrong kernel, to test --check */
                cb_perturb_kernel(&b->perturb, ps->k, env);
            double dt = rt_seconds() - t0;
            e->launches[s]++;
            e->seconds[s] += dt;
            b->kernel_seconds += dt;
            b->launches++;
            for (int r = 0; r < ps->k->nrets; r++) {
                int v = ps->k->rets[r];
                if (env[v] && note_shape(b, bp, v, env[v]) < 0)
                    length_mismatch(b, bp);
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
}

/* The block's outputs replace its inputs on the stack (--check keeps the
 * inputs to run the reference over them, and checks); ENV is emptied. */
static void push_outputs(Backend *b, Interp *it, int k, BlockPlan *bp, Value **env, const RandState *rand_before)
{
    Dfg *g = &bp->dfg;
    /* Replace the inputs by the outputs; --check keeps the inputs to run
     * the reference over them. */
    Value *saved[64], **ins = saved;
    if (b->opt.check) {
        if (g->nin > 64 && !(ins = malloc((size_t)g->nin * sizeof *ins)))
            rt_fatal("out of host memory");
        for (int j = 0; j < g->nin; j++)
            ins[j] = it->stk[it->sp - g->nin + j];
        it->sp -= g->nin;
    } else {
        for (int j = 0; j < g->nin; j++)
            val_release(it->stk[--it->sp]);
    }
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
    if (b->opt.check) {
        check_block(b, it, k, ins, rand_before);
        if (ins != saved)
            free(ins);
    }
}

/* ---- failures read after the block's end (Executor.defer_errors) ---------------- */

/* A block run's inputs, held (value.h val_hold) to replay it should its
 * kernels have failed. */
typedef struct {
    ErrReplay base;
    Backend *b;
    Interp *it;
    int start, end, nin;
    RandState rand;     /* RAND's state at the block's start */
    int64_t used;       /* -m's units in use at the block's start */
    Value *in[];        /* the stack's top NIN at the end of the run, bottom first */
} HeldRun;

static void held_replay(ErrReplay *er)
{
    HeldRun *r = (HeldRun *)er;
    Interp *it = r->it;
    mem_set_headroom(0);
    mem_replay_at(r->used);
    *rnd_global() = r->rand;
    for (int j = 0; j < r->nin; j++)
        vs_push(it, val_ref(r->in[j]));
    for (int j = 1; j <= r->nin; j++)
        val_for_host(it->stk[it->sp - j]);
    interp_exec_range(it, r->start, r->end);
}

static void held_drop(ErrReplay *er)
{
    HeldRun *r = (HeldRun *)er;
    for (int j = 0; j < r->nin; j++)
        val_unhold(r->in[j]);
    free(r);
}

static void held_replay_hook(void *arg) { held_replay(arg); }

/* Whether the block's inputs (the top NIN of the stack) can be held: no
 * pair among them. */
static int holdable(const Interp *it, int nin)
{
    for (int j = 1; j <= nin; j++)
        if (it->stk[it->sp - j]->type == VT_PAIR)
            return 0;
    return 1;
}

/* The block's inputs, before its outputs replace them. */
static HeldRun *hold_inputs(Backend *b, Interp *it, const BlockPlan *bp, const RandState *rand)
{
    int nin = bp->dfg.nin;
    HeldRun *r = malloc(sizeof *r + (size_t)nin * sizeof r->in[0]);
    if (!r)
        rt_fatal("out of host memory");
    r->base.replay = held_replay;
    r->base.drop = held_drop;
    r->base.prog = b->prog;
    r->base.where = &b->prog->code[bp->blk.start];
    r->b = b;
    r->it = it;
    r->start = bp->blk.start;
    r->end = bp->blk.end;
    r->nin = nin;
    r->rand = *rand;
    r->used = b->rp_used;
    for (int j = 0; j < nin; j++) {
        r->in[j] = it->stk[it->sp - nin + j];
        val_hold(r->in[j]);
    }
    /* an input the block only pops is held as an empty vector of its type
     * (not counted in R->used either): a replay only pops it, and a large
     * one held would leave less room for the runs whose checks wait */
    for (int d = 0; d < b->ndead_j; d++) {
        Value **slot = &r->in[nin - 1 - b->dead_j[d]], *gone = *slot;
        val_unhold(gone);
        *slot = gone->type == VT_SEGDES ? seg_new(0) : val_new((ValType)gone->type, 0);
        val_hold(*slot);
        val_release(*slot); /* held alone, as the stack's inputs are once the outputs replace them */
    }
    return r;
}

/* After the outputs replaced the inputs: leave the record to a later wait
 * with R; or, with more than DEFER_HOLD_BYTES kept for replays that -m no
 * longer counts, read every pending check now (R the replay of this
 * block's) and let go of what the clean ones held. */
static void defer_or_check(Backend *b, HeldRun *r)
{
    int over = val_ghost_bytes() > DEFER_HOLD_BYTES;
    if (!over && b->x->defer_errors(b->x, &r->base)) {
        b->deferred_runs++;
        return;
    }
    rt_set_replay(held_replay_hook, r);
    if (b->x->check_errors)
        b->x->check_errors(b->x);
    rt_set_replay(NULL, NULL);
    held_drop(&r->base);
    if (over) {
        b->deferred_refused++;
        val_settle_held();
        if (b->x->drain_deferred)
            b->x->drain_deferred(b->x);
    }
}

int backend_run_block(Backend *b, Interp *it, int pc)
{
    if (b->x->drain_deferred)
        b->x->drain_deferred(b->x); /* what earlier runs held for replays that were not needed */
    int k = b->block_at[pc];
    BlockEntry *e = &b->entries[k];
    int st = atomic_load_explicit(&e->state, memory_order_acquire);
    if (st == BS_INTERP)
        return -1;
    if (b->tiered) {
        if (st != BS_FUSED) {
            int r = tier_entry(b, it, k, st);
            if (r != -2)
                return r;
        }
    } else if (st == BS_PROFILE) {
        translate_block(b, k);
        if (atomic_load(&e->state) == BS_INTERP)
            return -1;
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
    /* The dispatch rule: a short run is interpreted. */
    int64_t len = 0;
    double t_run = rt_seconds();
    if (b->tiered) {
        int r = tier_dispatch(b, it, k, g->nin, &len);
        if (r != 0)
            return r;
        t_run = rt_seconds();
    }
    if (b->x->flush)
        b->x->flush(b->x);
    if (bind_inputs(b, it, e, bp) < 0)
        return -1;
    Value **env = b->env;
    if (!e->launches) {
        e->launches = calloc((size_t)bp->nsteps + 1, sizeof *e->launches);
        e->seconds = calloc((size_t)bp->nsteps + 1, sizeof *e->seconds);
        if (!e->launches || !e->seconds)
            rt_fatal("out of host memory");
    }
    RandState rand_before = *rnd_global();
    b->rp_it = it;
    b->rp_used = mem_used();
    b->rp_nin = g->nin;
    b->rp_start = bp->blk.start;
    b->rp_end = bp->blk.end;
    b->rp_rand = rand_before;
    rt_set_replay(replay_block, b);
    /* -m as the reference meets it: the fused run may hold more at its
     * peak than the reference (its schedule is not the instructions'
     * order), so it runs with headroom (its host vectors up to twice -m:
     * a hard bound still) and, when its peak passed -m, is rolled back and
     * run again on the reference (which then fails, or not, where the
     * reference does); so is a run within -m whose reference run might
     * not have been (it materialised fewer vectors than the reference
     * would: ref_charge_bound). Not under --check, which runs the
     * reference anyway. */
    int64_t limit = mem_limit();
    int raised = !b->opt.check && limit < INT64_MAX / 4;
    b->input_overwritten = 0;
    if (raised) {
        mem_set_headroom(limit);
        mem_peak_reset();
    }
    if (!b->opt.check)
        note_offsets(b, it, g->nin);
    if (b->x->block_begin)
        b->x->block_begin(b->x, k, bp, env);
    run_steps(b, it, k, e, bp, env);
    /* The kernels' failures: read now, or with the host's next wait when
     * the block's inputs are intact for a replay (nothing written over
     * them, no rerun for -m) and the executor can leave them. */
    int64_t bound = raised && mem_peak() <= limit ? ref_charge_bound(b, bp) : 0;
    int within = raised && mem_peak() <= limit && (bound < 0 || b->rp_used + bound > limit);
    int over = raised && (mem_peak() > limit || within);
    int defer = !b->opt.check && b->x->defer_errors && !b->input_overwritten && b->undo.n == 0 && !over &&
                holdable(it, g->nin);
    if (!defer && b->x->check_errors)
        b->x->check_errors(b->x);
    if (b->x->block_end)
        b->x->block_end(b->x);
    rt_set_replay(NULL, NULL);
    if (raised) {
        mem_set_headroom(0);
        if (over) {
            if (!b->input_overwritten) {
                b->mem_bound_reruns += within;
                rerun_on_reference(b, it, bp, rand_before);
                return b->blocks[k].end;
            }
            b->mem_kept++; /* an input's storage is gone: the fused results stand */
        }
    }
    undo_log_clear(&b->undo);
    HeldRun *held = defer ? hold_inputs(b, it, bp, &rand_before) : NULL;
    if (!b->opt.check) {
        Value *outs[64];
        for (int i = 0; i < g->nout; i += 64) {
            int n = g->nout - i < 64 ? g->nout - i : 64;
            for (int q = 0; q < n; q++)
                outs[q] = env[g->out[i + q]];
            drop_new_offsets(b, it, g->nin, outs, n);
        }
        if (!g->nout)
            drop_new_offsets(b, it, g->nin, NULL, 0);
    }
    dead_charge(b); /* the outputs replace them now */
    push_outputs(b, it, k, bp, env, &rand_before);
    if (held)
        defer_or_check(b, held);
    if (trace_on) {
        char name[64];
        int lo, hi;
        vc_line_range(b->prog, bp->blk.start, bp->blk.end, &lo, &hi);
        snprintf(name, sizeof name, "fused block, lines %d-%d", lo, hi);
        trace_span("fused block", name, trace_now() - (rt_seconds() - t_run) * 1e6, trace_now(), -1);
    }
    if (b->tiered) {
        e->entries++;
        e->elements += len;
        e->big_runs++;
        e->work += len * b->blocks[k].nvector;
        tier_judge(b, k, len * b->blocks[k].nvector, rt_seconds() - t_run);
    }
    e->runs++;
    return bp->blk.end;
}

void backend_use_worker(Backend *b, TierWorker *w)
{
    b->worker = w;
    b->shared_worker = 1;
}

void backend_tier_job(Backend *b, int k) { tier_job(b, k); }

int backend_block_hook(void *ctx, Interp *it, int pc) { return backend_run_block(ctx, it, pc); }

void backend_worker_stopped(Backend *b, int dropped)
{
    b->worker = NULL;
    b->abandoned += dropped;
}

void backend_end_run(Backend *b)
{
    if (!b->worker || b->shared_worker)
        return;
    int r = tier_worker_stop(b->worker);
    b->worker = NULL;
    if (r < 0)
        b->worker_stuck = 1;
    else
        b->abandoned += r;
}

void backend_free(Backend *b)
{
    if (!b)
        return;
    backend_end_run(b);
    if (b->x && b->x->drain_deferred)
        b->x->drain_deferred(b->x);
    if (b->worker_stuck)
        return; /* the worker still reads the backend: left to the exit */
    if (b->tiered)
        tier_save_speeds(b);
    if (b->hot_path)
        tier_hot_write(b->hot_path, &b->hot_prior, &b->hot_new);
    if (b->slow_path)
        tier_hot_write(b->slow_path, &b->slow_prior, &b->slow_new);
    if (b->warm_path) {
        /* the blocks whose units are in the cache now: compiled or found */
        for (int k = 0; k < b->nblocks; k++) {
            int st = atomic_load(&b->entries[k].state);
            if ((st == BS_READY || st == BS_FUSED) &&
                tier_hot_add(&b->warm_new, tier_block_hash(b->prog, &b->blocks[k])) < 0)
                break;
        }
        tier_warm_write(b->warm_path, &b->warm_prior, &b->warm_new, &b->warm_gone);
    }
    /* the output is out: what was hot and has no code yet is compiled for
     * the next run (tier_after.h) */
    if (tier_after_count(b) > 0)
        tier_after_run(b->opt.tier.after, b->opt.tier.idle, b->opt.tier.after_gate, tier_after_compile, b);
    tier_hot_free(&b->warm_prior);
    tier_hot_free(&b->warm_new);
    tier_hot_free(&b->warm_gone);
    free(b->warm_path);
    tier_hot_free(&b->hot_prior);
    tier_hot_free(&b->hot_new);
    tier_hot_free(&b->slow_prior);
    tier_hot_free(&b->slow_new);
    free(b->hot_path);
    free(b->slow_path);
    for (int k = 0; k < b->nblocks; k++) {
        free(b->entries[k].launches);
        free(b->entries[k].seconds);
        free(b->entries[k].vpath);
    }
    for (int k = 0; k < b->nblocks; k++)
        if (b->entries[k].planned)
            plan_free(&b->entries[k].plan);
    free(b->bg_plans);
    free(b->fg_plans);
    free(b->entries);
    free(b->blocks);
    free(b->block_at);
    free(b->env);
    free(b->offs_new);
    free(b->dead_j);
    free(b->classval);
    undo_log_free(&b->undo);
    if (b->x)
        b->x->free(b->x);
    free(b);
}

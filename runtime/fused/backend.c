/* runtime/fused/backend.c — the block-plan driver shared by the fused backends:
 * translation (on a block's first execution, or of every block up front
 * for an eager executor), input checks, host steps, length-class checks,
 * releases, the executor's kernels, --check against the reference, and
 * the figures of -d stats and --profile. A block whose plan cannot be
 * built, or whose inputs do not match what the plan assumed (types, length
 * classes), is interpreted instruction by instruction instead. */
#include "runtime/fused/backend.h"
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

/* Block states. Tiered: PROFILE -> QUEUED (the worker translates and
 * builds) -> READY (the main thread loads it at the next entry) -> FUSED,
 * or INTERP for good (not plannable, failed, demoted). Untiered:
 * PROFILE means "not translated yet". */
enum { BS_PROFILE = 0, BS_FUSED = 1, BS_INTERP = 2, BS_QUEUED = 3, BS_READY = 4, BS_FAILED = 5 };

typedef struct {
    atomic_int state;   /* BS_*; the worker writes QUEUED -> READY|FAILED */
    int planned;        /* plan holds a plan (to free) */
    BlockPlan plan;
    int64_t runs, fallbacks;
    int64_t *launches;  /* --profile: per plan step */
    double *seconds;
    /* the tier profile (main thread) */
    int nin;            /* stack inputs; -1 not known yet */
    int demoted;
    int remembered;     /* hot in its only run so far: kept for the next run (tier_first_run) */
    int warm;           /* its unit in the cache by earlier runs (tier_warm): -1 not looked up yet */
    int64_t entries, big_runs, work, elements;
    int64_t interp_work, fused_work, fused_timed, short_runs, interp_timed;
    int64_t lazy_runs;          /* runs interpreted for a lazy fill among the inputs */
    double interp_secs, fused_secs;
    /* after the install: every 8th run is interpreted, timed (late_*) */
    int64_t since_install, late_n, late_work;
    double late_secs;
    TierSpeeds prior;   /* earlier runs' (tier_verdict.h) */
    char *vpath;        /* where they are kept; NULL: nowhere */
    /* The first fused run of this program run (not counted by tier_judge),
     * counted at the end when it was the only one: a block that runs once
     * a program run is judged across runs. sample_first: earlier runs have
     * fused samples of it but too few interpreted ones, so its first run
     * after the install is interpreted, timed. */
    double first_secs;
    int64_t first_work;
    int sample_first;
    int64_t promoted_entry;     /* entries when promoted */
    double promoted_t, ready_t, installed_t;  /* seconds since the start; < 0: never */
    /* the worker's figures (read after READY/FAILED) */
    double translate_s, compile_s;
    int compiled, hits;
    char why[160];      /* why it failed */
} BlockEntry;

struct Backend {
    const Program *prog;
    BackendOptions opt;
    Executor *x;
    int nblocks;
    Block *blocks;
    BlockEntry *entries;
    int *block_at;
    Value **env;        /* scratch, sized for the largest plan */
    int64_t *classval;
    int envcap, classcap;
    int profiling;
    /* totals */
    int64_t launches, host_steps, checked;
    /* --check: block outputs compared bit for bit, within a bound, not
     * compared (unverifiable), and elements of compared outputs that were
     * free to differ (check_bound.h) */
    int64_t check_exact, check_bounded, check_unverifiable, check_free;
    CbPerturb perturb;  /* opt.perturb under --check, else none */
    /* the block now running, for rt_set_replay */
    Interp *rp_it;
    int64_t rp_used;
    int rp_nin;
    int rp_start, rp_end;
    RandState rp_rand;
    UndoLog undo;       /* in-place REPLACEs of the block now running */
    /* tiers */
    int tiered;         /* blocks promoted one by one (cpu, cuda unless --tier=eager) */
    TierWorker *worker;
    BlockPlan **bg_plans, **fg_plans;   /* one-block plan lists: the worker's, the main thread's */
    double t_start;
    int64_t promotions, installs, demotions, failures, abandoned;
    int64_t probe_hits, probe_misses; /* main-thread cache probes at promotion */
    uint64_t program_id;                /* tier_program_id: the speeds kept per program */
    HotSet hot_prior, hot_new; /* blocks hot in earlier runs, in this one (tier_hot.h) */
    char *hot_path;     /* NULL: no cache to keep them in */
    HotSet slow_prior, slow_new; /* blocks found slower fused in earlier runs, in this one */
    char *slow_path;    /* NULL: no cache to keep them in */
    HotSet warm_prior, warm_new, warm_gone; /* blocks with units in the cache: earlier runs, this one, found not */
    char *warm_path;    /* NULL: no cache to keep them in */
    int64_t slow_skipped;   /* promotions left interpreted untranslated: slow_prior */
    int worker_stuck;   /* the worker did not stop in time */
    int shared_worker;  /* the worker is tier_prep's: it stops it */
    double interp_secs, tr_secs;        /* timed interpreted runs; translations on the main thread */
    int64_t interp_work, tr_instrs;
    int64_t replace_inplace, replace_copied;
    int64_t donated, written_in_place;  /* results offered an argument's storage, and those that took it */
    int input_overwritten;              /* this block run wrote a result over an input's storage */
    /* the block run's input descriptors without their offsets cached at
     * its start (value.h seg_offsets, charged against -m while cached) */
    Value **offs_new;
    int noffs_new, offs_cap;
    int64_t mem_reruns, mem_kept;       /* block runs past -m at their peak: rerun on the reference; kept */
    double kernel_seconds, host_seconds;
};

/* Plan block K into its entry: 0, or -1 (not plannable). Touches only the
 * entry: the worker runs it too. */
static int plan_block(Backend *b, int k)
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
static void translate_block(Backend *b, int k)
{
    BlockEntry *e = &b->entries[k];
    atomic_store(&e->state, plan_block(b, k) == 0 ? BS_FUSED : BS_INTERP);
}

Backend *backend_new(const Program *p, const BackendOptions *o, Executor *x, char *msg, size_t msglen)
{
    Backend *b = calloc(1, sizeof *b);
    if (!b)
        rt_fatal("out of host memory");
    b->prog = p;
    b->opt = *o;
    if (o->check)
        b->perturb = o->perturb;
    b->x = x;
    x->no_donations = o->check;
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
            b->hot_path = strdup(hp);
            if (!b->hot_path)
                rt_fatal("out of host memory");
            tier_hot_read(hp, &b->hot_prior);
        }
        uint64_t config = tier_config_id(x->name, o->float_reassoc);
        if (o->cache_dir && tier_slow_path(o->cache_dir, b->program_id, config, hp, sizeof hp) == 0) {
            b->slow_path = strdup(hp);
            if (!b->slow_path)
                rt_fatal("out of host memory");
            tier_hot_read(hp, &b->slow_prior);
        }
        if (o->cache_dir && tier_warm_path(o->cache_dir, b->program_id, config, hp, sizeof hp) == 0) {
            b->warm_path = strdup(hp);
            if (!b->warm_path)
                rt_fatal("out of host memory");
            tier_hot_read(hp, &b->warm_prior);
        }
        b->bg_plans = calloc((size_t)b->nblocks + 1, sizeof *b->bg_plans);
        b->fg_plans = calloc((size_t)b->nblocks + 1, sizeof *b->fg_plans);
        if (!b->bg_plans || !b->fg_plans)
            rt_fatal("out of host memory");
    } else if (x->eager) {
        BlockPlan **plans = calloc((size_t)b->nblocks + 1, sizeof *plans);
        if (!plans)
            rt_fatal("out of host memory");
        for (int k = 0; k < b->nblocks; k++) {
            if (atomic_load(&b->entries[k].state) == BS_PROFILE)
                translate_block(b, k);
            plans[k] = atomic_load(&b->entries[k].state) == BS_FUSED ? &b->entries[k].plan : NULL;
        }
        int rc = x->prepare(x, p, b->nblocks, plans, msg, msglen);
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
    return x->rc == refs + undo_log_refs(&b->undo, x);
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
static int offer_donors(Backend *b, const BlockPlan *bp, int s)
{
    const PlanStep *ps = &bp->steps[s];
    if (!ps->donor)
        return 0;
    int n = 0;
    for (int r = 0; r < ps->k->nrets; r++) {
        int p = ps->donor[r], v = ps->k->rets[r];
        if (p < 0 || b->env[v] || !owned_dead(b, bp, s, p) ||
            (holds_input(b, bp, p) && !(ps->input_donor && reads_in_range(b, ps))))
            continue;
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

static void describe(FILE *f, const Value *v, int64_t i)
{
    if (v->type == VT_PAIR) {
        fputs("a pair", f);
        return;
    }
    fprintf(f, "%s of length %lld", val_type_name((ValType)v->type), (long long)v->len);
    if (i >= 0 && i < v->len) {
        if (v->type == VT_FLOAT)
            fprintf(f, ", element %lld = %.17g", (long long)i, VF(v)[i]);
        else
            fprintf(f, ", element %lld = %d", (long long)i, VI(v)[i]);
    }
}

/* The block's outputs are on the stack (the backend's); INS holds its
 * inputs (bottom to top, owned). Run the reference over the inputs from
 * the same random state and compare; the first difference ends the run. */
static void check_block(Backend *b, Interp *it, int k, Value **ins, const RandState *rand_before)
{
    BlockEntry *e = &b->entries[k];
    BlockPlan *bp = &e->plan;
    const Dfg *g = &bp->dfg;
    int nout = g->nout;
    Value **outs = malloc((size_t)(nout ? nout : 1) * sizeof *outs);
    if (!outs)
        rt_fatal("out of host memory");
    for (int i = nout - 1; i >= 0; i--) {
        outs[i] = vs_pop(it);
        val_for_host(outs[i]);
    }
    for (int j = 0; j < g->nin; j++)
        val_for_host(ins[j]);
    RandState rand_after = *rnd_global();
    *rnd_global() = *rand_before;
    for (int j = 0; j < g->nin; j++)
        vs_push(it, ins[j]);
    /* The reference, one instruction at a time, with the error bound of
     * every value (check_bound.h): what the backend may differ by. */
    CbOptions co = { b->x->libm_ulps };
    CbRun *cr = cb_run_block(it, bp->blk.start, bp->blk.end, &co);
    const Program *p = b->prog;
    int bad = -1;
    int64_t at = -1;
    double bound_at = 0.0;
    for (int i = 0; i < nout && bad < 0; i++) {
        const CbBound *cb = cb_bound_at(cr, nout - 1 - i);
        if (cb && cb->unverifiable) {
            b->check_unverifiable++;
            continue;
        }
        at = cb_first_difference(outs[i], it->stk[it->sp - nout + i], cb, b->opt.check_rel, &bound_at);
        if (at >= 0)
            bad = i;
        else if (cb)
            b->check_bounded++, b->check_free += cb_free_elements(cb);
        else
            b->check_exact++;
    }
    cb_run_free(cr);
    int rand_bad = memcmp(&rand_after, rnd_global(), sizeof rand_after) != 0;
    if (bad >= 0 || rand_bad) {
        FILE *f = stderr;
        fflush(stdout);
        int lo, hi;
        vc_line_range(p, bp->blk.start, bp->blk.end, &lo, &hi);
        fprintf(f, "vinterp: --check: the %s backend and the reference differ in the block at lines %d-%d "
                   "(function %s)\n",
                b->x->name, lo, hi, p->funcs[bp->blk.func].name);
        if (bad >= 0) {
            fprintf(f, "  output %d (stack depth %d): %s gives ", bad, nout - 1 - bad, b->x->name);
            describe(f, outs[bad], at);
            fputs("; the reference gives ", f);
            describe(f, it->stk[it->sp - nout + bad], at);
            const Value *o = outs[bad];
            if (o->type == it->stk[it->sp - nout + bad]->type && o->len == it->stk[it->sp - nout + bad]->len) {
                if (o->type != VT_FLOAT)
                    fputs("; it must be exact there", f);
                else if (bound_at > 0.0)
                    fprintf(f, "; the bound there is %.2g", bound_at);
                else
                    fputs("; the bound there is 0 (exact)", f);
                if (o->type == VT_FLOAT && b->opt.check_rel > 0.0)
                    fprintf(f, ", plus --check-rel=%g relative", b->opt.check_rel);
            }
            fputs("\n", f);
        } else {
            fprintf(f, "  the random number stream advanced differently\n");
        }
        fprintf(f, "  fused kernels of the block:\n");
        for (int s = 0; s < bp->nsteps; s++) {
            if (bp->steps[s].kind != STEP_KERNEL)
                continue;
            lcu_print_kernel(f, bp->steps[s].k, bp->types);
            char buf[1024];
            const char *w = b->x->where ? b->x->where(b->x, k, s, buf, sizeof buf) : NULL;
            if (w)
                fprintf(f, "  generated code: %s\n", w);
        }
        for (int i = 0; i < nout; i++)
            val_release(outs[i]);
        free(outs);
        rt_exit_status(1);
    }
    /* Keep the backend's values (equal within the bounds). */
    for (int i = 0; i < nout; i++)
        val_release(vs_pop(it));
    for (int i = 0; i < nout; i++)
        vs_push(it, outs[i]);
    free(outs);
    *rnd_global() = rand_after;
    b->checked++;
}

/* A fatal error inside a fused block: rerun the block on the reference
 * interpreter from its inputs (still on the stack) and the RAND state it
 * started with, so that the reference reports the error in its own words
 * at its own line. Returns only if the reference finds no error. */
static void drop_new_offsets(Backend *b, const Interp *it, int nin, Value *const *outs, int nout);

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
    undo_log_rollback(&b->undo);
    *rnd_global() = b->rp_rand;
    for (int j = 1; j <= b->rp_nin && j <= b->rp_it->sp; j++)
        val_for_host(b->rp_it->stk[b->rp_it->sp - j]);
    interp_exec_range(b->rp_it, b->rp_start, b->rp_end);
}

/* ---- tiers ---------------------------------------------------------------- */

/* The worker's job: plan block K and build its code into the cache. */
static void tier_job(void *arg, int k)
{
    Backend *b = arg;
    BlockEntry *e = &b->entries[k];
    if (tier_worker_stopping(b->worker))
        return;
    if (!e->planned && plan_block(b, k) < 0) {
        atomic_store_explicit(&e->state, BS_FAILED, memory_order_release);
        return;
    }
    if (tier_worker_stopping(b->worker))
        return;
    JitBuildStats st;
    memset(&st, 0, sizeof st);
    b->bg_plans[k] = &e->plan;
    char msg[400] = "";
    int rc = b->x->build(b->x, b->nblocks, b->bg_plans, &st, msg, sizeof msg);
    b->bg_plans[k] = NULL;
    e->compile_s = st.compile_seconds;
    e->compiled = st.compiled;
    e->hits = st.hits;
    if (rc != 0)
    {
        if (tier_worker_stopping(b->worker))
            snprintf(e->why, sizeof e->why, "abandoned at the end of the run");
        else
            snprintf(e->why, sizeof e->why, "build failed: %.130s", msg);
    }
    e->ready_t = rt_seconds() - b->t_start;
    atomic_store_explicit(&e->state, rc == 0 ? BS_READY : BS_FAILED, memory_order_release);
    if (b->opt.tier.test_hold)
        tier_test_hold_forever();
}

static void tier_trace(const Backend *b, int k, const char *what)
{
    const BlockEntry *e = &b->entries[k];
    const Block *bl = &b->blocks[k];
    int lo, hi;
    vc_line_range(b->prog, bl->start, bl->end, &lo, &hi);
    fprintf(b->opt.tier.trace, "tier: %.6f s: block %d (lines %d-%d, %s): %s after %lld entries, work %lld%s%s\n",
            rt_seconds() - b->t_start, k, lo, hi, b->prog->funcs[bl->func].name, what, (long long)e->entries,
            (long long)e->work, e->why[0] ? "; " : "", e->why);
}

/* Block K was found slower fused (this run or earlier ones): later runs
 * of the program leave it interpreted without translating it
 * (tier_slow_path). */
static void tier_remember_slow(Backend *b, int k)
{
    if (b->slow_path && tier_hot_add(&b->slow_new, tier_block_hash(b->prog, &b->blocks[k])) < 0)
        rt_fatal("out of host memory");
}

/* Load block K's code (on the main thread): READY -> FUSED, or INTERP. */
static void tier_install(Backend *b, int k)
{
    BlockEntry *e = &b->entries[k];
    if (e->planned) { /* what translation costs, for tier_promote's estimate */
        b->tr_secs += e->translate_s;
        b->tr_instrs += b->blocks[k].nvector;
    }
    char msg[400] = "";
    b->fg_plans[k] = &e->plan;
    int rc = b->x->prepare(b->x, b->prog, b->nblocks, b->fg_plans, msg, sizeof msg);
    b->fg_plans[k] = NULL;
    e->installed_t = rt_seconds() - b->t_start;
    if (rc != 0) {
        snprintf(e->why, sizeof e->why, "load failed: %.140s", msg);
        b->failures++;
        atomic_store(&e->state, BS_INTERP);
        if (b->opt.tier.trace)
            tier_trace(b, k, "stays interpreted");
        return;
    }
    b->installs++;
    char unit[1200], vpath[1300];
    if (b->x->unit_file && b->x->unit_file(b->x, k, unit, sizeof unit) &&
        tier_verdict_path(unit, b->program_id, vpath, sizeof vpath) == 0 && (e->vpath = strdup(vpath)) != NULL &&
        tier_verdict_read(vpath, &e->prior) && tier_verdict_slower(&e->prior) == 1) {
        /* earlier runs of the program found its fused runs the slower */
        e->demoted = 1;
        b->demotions++;
        tier_remember_slow(b, k);
        snprintf(e->why, sizeof e->why, "its fused runs were the slower in earlier runs");
        atomic_store(&e->state, BS_INTERP);
        if (b->opt.tier.trace)
            tier_trace(b, k, "demoted");
        return;
    }
    e->sample_first = e->prior.fused_n >= 2 && e->prior.late_n < 2;
    atomic_store(&e->state, BS_FUSED);
    if (b->opt.tier.trace)
        tier_trace(b, k, "fused code installed");
}

/* This run's speeds of block K added to the earlier runs'. */
static TierSpeeds tier_speeds(const BlockEntry *e)
{
    TierSpeeds t = e->prior;
    t.late_n += e->late_n;
    t.late_secs += e->late_secs;
    t.late_work += e->late_work;
    t.fused_n += e->fused_timed;
    t.fused_secs += e->fused_secs;
    t.fused_work += e->fused_work;
    if (e->runs == 1 && e->fused_timed == 0 && e->first_work > 0) {
        /* its only fused run this time: page faults on fresh vectors and
         * all, they are what that block costs fused in every run (a MAP
         * whose result the interpreter writes over an argument) */
        t.fused_n++;
        t.fused_secs += e->first_secs;
        t.fused_work += e->first_work;
    }
    return t;
}

/* At the end: every block's speeds, earlier runs' included, kept beside
 * its unit for the next run. */
static void tier_save_speeds(Backend *b)
{
    for (int k = 0; k < b->nblocks; k++) {
        BlockEntry *e = &b->entries[k];
        if (e->vpath && (e->late_n || e->fused_timed || (e->runs == 1 && e->first_work > 0))) {
            TierSpeeds t = tier_speeds(e);
            tier_verdict_write(e->vpath, &t);
        }
    }
}

/* Is block K's code already in the kernel cache? (Its plan is built.) */
static int tier_cached(Backend *b, int k)
{
    BlockEntry *e = &b->entries[k];
    JitBuildStats st;
    memset(&st, 0, sizeof st);
    st.probe = 1;
    char msg[400];
    b->fg_plans[k] = &e->plan;
    int rc = b->x->build(b->x, b->nblocks, b->fg_plans, &st, msg, sizeof msg);
    b->fg_plans[k] = NULL;
    return rc == 0;
}

/* Probe the kernel cache for block K, whose run now has W work, when
 * translating it here is predicted to cost under 2% of interpreting this
 * run, and the cache has not proved cold for this program (3 misses, no
 * hit). On a hit its code is installed for this very run: a block that
 * runs once over long vectors gets its fused code whenever the cache has
 * it. 1: a hit (installed, or demoted by earlier runs' verdicts); 0: a
 * miss or not probed; -1: not plannable (it stays interpreted). */
static int tier_probe(Backend *b, int k, int64_t w, int force)
{
    BlockEntry *e = &b->entries[k];
    double interp_rate = b->interp_work > 0 ? b->interp_secs / (double)b->interp_work : 1e-9;
    /* no vector instruction here runs under 0.2 ns an element: a lower
     * measured rate is a block of lazy fills (value.h), whose DISTs and
     * arithmetic cost nothing per element (dotp_50m: 4 us for 150M
     * element-instructions), not a guide to the others */
    if (interp_rate < 2e-10)
        interp_rate = 2e-10;
    double tr_rate = b->tr_instrs > 0 ? b->tr_secs / (double)b->tr_instrs : 5e-5;
    int cold = b->probe_misses >= 3 && b->probe_hits == 0;
    if (!force && (cold || (double)b->blocks[k].nvector * tr_rate > 0.02 * (double)w * interp_rate))
        return 0;
    if (!e->planned && plan_block(b, k) < 0) {
        b->failures++;
        atomic_store(&e->state, BS_INTERP);
        if (b->opt.tier.trace)
            tier_trace(b, k, "stays interpreted");
        return -1;
    }
    int hit = tier_cached(b, k);
    b->probe_hits += hit;
    b->probe_misses += !hit;
    if (!hit) {
        if (force && tier_hot_add(&b->warm_gone, tier_block_hash(b->prog, &b->blocks[k])) < 0)
            rt_fatal("out of host memory");
        return 0;
    }
    e->hits = 1;
    e->ready_t = rt_seconds() - b->t_start;
    if (b->opt.tier.trace)
        tier_trace(b, k, "promoted, its code in the cache");
    tier_install(b, k);
    return 1;
}

static void tier_mark_promoted(Backend *b, int k)
{
    BlockEntry *e = &b->entries[k];
    e->promoted_entry = e->entries;
    e->promoted_t = rt_seconds() - b->t_start;
    b->promotions++;
}

/* Did an earlier run find block K's unit in the cache, or put it there?
 * (Looked up once per block.) */
static int tier_warm(Backend *b, int k)
{
    BlockEntry *e = &b->entries[k];
    if (e->warm < 0)
        e->warm = b->warm_prior.n && tier_hot_has(&b->warm_prior, tier_block_hash(b->prog, &b->blocks[k]));
    return e->warm;
}

/* Block K's code was hot in its only run so far: the program's next run
 * probes the cache for it at its first run. */
static void tier_remember_hot(Backend *b, int k)
{
    if (b->hot_path && tier_hot_add(&b->hot_new, tier_block_hash(b->prog, &b->blocks[k])) < 0)
        rt_fatal("out of host memory");
}

/* Block K's first run with W work past the threshold, when it has not
 * been seen to recur and no earlier run of the program found it hot:
 * fused code pays only in later runs of the block, and a block that runs
 * once gets none before its run ends. So nothing is done now, not even a
 * probe of the cache (translating on the main thread leaves small
 * allocations between the program's vectors, which then cannot merge:
 * quickhull_5m needed 60 MB more); the block is remembered as hot for the
 * program's next run (tier_hot.h), which probes the cache for it and
 * compiles it in the background on a miss. A block that runs again is
 * promoted. */
static void tier_first_run(Backend *b, int k, int64_t w)
{
    (void)w;
    BlockEntry *e = &b->entries[k];
    e->remembered = 1;
    if (b->opt.tier.mode != TIER_BACKGROUND)
        return;
    tier_remember_hot(b, k);
    if (b->opt.tier.trace)
        tier_trace(b, k, "hot, ran once: remembered for the next run");
}

/* Promote block K, whose run now has W work. The worker translates and
 * compiles it while the interpreter goes on; under --tier=sync it is
 * compiled here, at once. Code already in the kernel cache is used at
 * once (tier_probe). */
static void tier_promote(Backend *b, int k, int64_t w)
{
    BlockEntry *e = &b->entries[k];
    if (b->slow_prior.n && tier_hot_has(&b->slow_prior, tier_block_hash(b->prog, &b->blocks[k]))) {
        b->slow_skipped++;
        snprintf(e->why, sizeof e->why, "its fused runs were the slower in earlier runs: not translated");
        atomic_store(&e->state, BS_INTERP);
        if (b->opt.tier.trace)
            tier_trace(b, k, "left interpreted: slower fused in earlier runs");
        return;
    }
    tier_mark_promoted(b, k);
    if (e->big_runs == 1)
        tier_remember_hot(b, k); /* a later run probes the cache for it at its first run */
    if (b->opt.tier.mode == TIER_BACKGROUND && tier_probe(b, k, w, tier_warm(b, k)) != 0)
        return;
    if (b->opt.tier.mode == TIER_SYNC) {
        atomic_store(&e->state, BS_QUEUED);
        tier_job(b, k);
        if (atomic_load(&e->state) == BS_READY)
            tier_install(b, k);
        else {
            b->failures++;
            atomic_store(&e->state, BS_INTERP);
            if (b->opt.tier.trace)
                tier_trace(b, k, "stays interpreted");
        }
        return;
    }
    TierWorkerConfig wc = tier_worker_config(&b->opt.tier, 0);
    if (!b->worker && !(b->worker = tier_worker_start(tier_job, b, &wc))) {
        atomic_store(&e->state, BS_INTERP); /* no thread: stay in the interpreter */
        return;
    }
    if (b->opt.tier.trace)
        tier_trace(b, k, "promoted");
    atomic_store(&e->state, BS_QUEUED);
    tier_worker_push(b->worker, k);
}

/* The number of stack inputs of block K, from its dataflow graph; -1 when
 * the block cannot be expressed as one (it is then always interpreted). */
static int block_inputs(const Backend *b, int k)
{
    Dfg g;
    memset(&g, 0, sizeof g);
    if (dfg_build(b->prog, &b->blocks[k], &g) < 0)
        return -1;
    int nin = g.nin;
    dfg_free(&g);
    return nin;
}

/* The largest element count among the block's NIN inputs on the stack. */
static int64_t largest_input(const Interp *it, int nin)
{
    int64_t m = 0;
    for (int j = 0; j < nin && j < it->sp; j++) {
        const Value *v = it->stk[it->sp - 1 - j];
        int64_t n = v->type == VT_SEGDES ? (v->n > v->len ? v->n : v->len) : v->type == VT_PAIR ? 0 : v->len;
        if (n > m)
            m = n;
    }
    return m;
}

/* 1 when one of the top NIN entries is a lazy fill (runtime/core/value.h).
 * The tiers run such a block in the interpreter, which reads the fill as a
 * scalar: fused code would first write it out (a DIST of 8M floats: 64 MB),
 * and for that block that costs more than fusion saves (black_scholes_8m,
 * whose constants are such fills: fused blocks 2.2x slower than the
 * interpreter). Forced compilation (--tier=eager) still runs them fused.
 * An executor that takes lazy fills (the cuda one) runs them fused. */
static int lazy_input(const Backend *b, const Interp *it, int nin)
{
    if (!val_lazy_live || b->x->takes_lazy)
        return 0;
    for (int j = 0; j < nin && j < it->sp; j++)
        if (it->stk[it->sp - 1 - j]->lazy)
            return 1;
    return 0;
}

/* A tiered block's entry in any state but FUSED: profile it, promote it,
 * install its code. Returns the pc after the block when it ran here, -1
 * when the interpreter runs it, -2 when it is to run fused now. */
static int tier_entry(Backend *b, Interp *it, int k, int st)
{
    BlockEntry *e = &b->entries[k];
    if (st == BS_READY) {
        tier_install(b, k);
        if (atomic_load(&e->state) == BS_FUSED)
            return -2;
        return -1;
    }
    if (st == BS_FAILED) {
        b->failures++;
        atomic_store(&e->state, BS_INTERP);
        if (b->opt.tier.trace)
            tier_trace(b, k, "stays interpreted");
        return -1;
    }
    if (e->nin < 0 && (e->nin = block_inputs(b, k)) < 0) {
        atomic_store(&e->state, BS_INTERP);
        return -1;
    }
    e->entries++;
    int64_t len = largest_input(it, e->nin);
    e->elements += len;
    if (len < b->opt.tier.min_len) {
        e->short_runs++;
        return -1;
    }
    if (lazy_input(b, it, e->nin)) { /* not work fused code would do */
        e->lazy_runs++;
        return -1;
    }
    int64_t w = len * b->blocks[k].nvector;
    e->big_runs++;
    e->work += w;
    /* a block whose unit earlier runs put in the cache: promoted at its
     * first long run, whatever its work (it was hot then) */
    if (st == BS_PROFILE && b->opt.tier.mode != TIER_OFF && (e->work >= b->opt.tier.work || tier_warm(b, k))) {
        if (e->big_runs >= 2 || b->opt.tier.mode == TIER_SYNC || b->opt.tier.work == 0 ||
            (b->hot_prior.n && tier_hot_has(&b->hot_prior, tier_block_hash(b->prog, &b->blocks[k]))) ||
            tier_warm(b, k))
            tier_promote(b, k, w);
        else if (!e->remembered)
            tier_first_run(b, k, w);
        if (atomic_load(&e->state) == BS_FUSED)
            return -2;
    }
    if (it->opt.max_steps || it->opt.progress)
        return -1; /* the interpreter loop counts the instructions */
    /* Interpreted here, timed: the fused code must beat this. */
    double t0 = rt_seconds();
    interp_exec_range(it, b->blocks[k].start, b->blocks[k].end);
    double dt = rt_seconds() - t0;
    e->interp_secs += dt;
    e->interp_work += w;
    e->interp_timed++;
    b->interp_secs += dt;
    b->interp_work += w;
    return b->blocks[k].end;
}

/* After a fused run of W work in DT seconds: back to the interpreter for
 * good when the fused runs are the slower per unit of work. The fused
 * runs are compared with the interpreted runs sampled after the install,
 * every 8th run of the block (see backend_run_block), so that both sides
 * cover the same phases of the program: the cost of a block's run is not
 * proportional to its work measure in every phase (batcher_1m: stages of
 * one size but other segment counts), and a block's first runs pay for
 * page faults on fresh vectors, so the interpreted runs before the
 * promotion misjudged it (they kept a 2x slower fused block in use). The
 * first fused run is not counted. Checked from the 5th timed fused run
 * on, once two interpreted runs are sampled, or sooner with the speeds
 * of earlier runs of the program (tier_verdict.h). */
static void tier_judge(Backend *b, int k, int64_t w, double dt)
{
    BlockEntry *e = &b->entries[k];
    if (e->runs == 0) {
        e->first_secs = dt;
        e->first_work = w;
        return;
    }
    e->fused_work += w;
    e->fused_secs += dt;
    e->fused_timed++;
    /* this run alone from its 5th fused run, or with the earlier runs'
     * speeds once they are enough together */
    TierSpeeds t = tier_speeds(e);
    int slower = e->fused_timed >= 5 || e->prior.late_n || e->prior.fused_n ? tier_verdict_slower(&t) : -1;
    if (slower == 1) {
        e->demoted = 1;
        b->demotions++;
        tier_remember_slow(b, k);
        atomic_store(&e->state, BS_INTERP);
        if (b->opt.tier.trace)
            tier_trace(b, k, "demoted: its fused runs are slower than the interpreter's");
    }
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
    for (int j = 1; j <= bp->dfg.nin && j <= it->sp; j++)
        val_for_host(it->stk[it->sp - j]);
    b->mem_reruns++;
    interp_exec_range(it, bp->blk.start, bp->blk.end);
}

int backend_run_block(Backend *b, Interp *it, int pc)
{
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
    double t_run = 0.0;
    if (b->tiered) {
        len = largest_input(it, g->nin);
        if (len < b->opt.tier.min_len) {
            e->short_runs++;
            return -1;
        }
        if (lazy_input(b, it, g->nin)) {
            e->lazy_runs++;
            return -1;
        }
        t_run = rt_seconds();
        /* The 3rd and 6th run after the install, then every 8th (the
         * 11th, 19th, ...), is interpreted, timed: tier_judge's sample of
         * the other tier; so is the first when earlier runs of the
         * program lack such samples (sample_first). */
        int64_t si = e->since_install++;
        if ((si == 2 || si == 5 || si % 8 == 2 || (si == 0 && e->sample_first)) && !it->opt.max_steps &&
            !it->opt.progress) {
            int64_t w = len * b->blocks[k].nvector;
            interp_exec_range(it, b->blocks[k].start, b->blocks[k].end);
            double dt = rt_seconds() - t_run;
            e->entries++;
            e->elements += len;
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
    }
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
    /* Inputs the block only pops go now, as the reference would pop them
     * (an empty vector of their type keeps their stack slot for a replay,
     * which only pops it too). Not under --check, which reruns the block
     * from its inputs. */
    for (int d = 0; d < bp->ndead_in && !b->opt.check; d++) {
        int j = bp->dead_in[d];
        Value **slot = &it->stk[it->sp - 1 - j], *gone = *slot;
        if (gone->rc != 2 || gone->type == VT_PAIR || !gone->units)
            continue;
        *slot = gone->type == VT_SEGDES ? seg_new(0) : val_new((ValType)gone->type, 0);
        val_release(gone);
        val_release(env[j]);
        env[j] = NULL;
    }
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
     * reference does). Not under --check, which runs the reference anyway. */
    int64_t limit = mem_limit();
    int raised = !b->opt.check && limit < INT64_MAX / 4;
    if (raised) {
        mem_set_headroom(limit);
        mem_peak_reset();
        b->input_overwritten = 0;
    }
    if (!b->opt.check)
        note_offsets(b, it, g->nin);
    if (b->x->block_begin)
        b->x->block_begin(b->x, k, bp, env);
    for (int s = 0; s < bp->nsteps; s++) {
        PlanStep *ps = &bp->steps[s];
        rt_set_where(b->prog, &b->prog->code[g->nodes[ps->node].instr]);
        double t0 = rt_seconds();
        if (ps->kind == STEP_HOST) {
            const DfgNode *nd = &g->nodes[ps->node];
            if (b->x->check_errors)
                b->x->check_errors(b->x);
            host_step(b, it, bp, s, nd);
            b->host_seconds += rt_seconds() - t0;
            if (note_shape(b, bp, nd->res[0], env[nd->res[0]]) < 0)
                length_mismatch(b, bp);
        } else {
            int nd = offer_donors(b, bp, s);
            if (nd && b->x->check_errors)
                b->x->check_errors(b->x);
            b->x->run_kernel(b->x, k, bp, s, env);
            if (nd && b->x->check_errors) /* before its results take the donated storage */
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
    if (b->x->check_errors)
        b->x->check_errors(b->x);
    if (b->x->block_end)
        b->x->block_end(b->x);
    rt_set_replay(NULL, NULL);
    if (raised) {
        mem_set_headroom(0);
        if (mem_peak() > limit) {
            if (!b->input_overwritten) {
                rerun_on_reference(b, it, bp, rand_before);
                return b->blocks[k].end;
            }
            b->mem_kept++; /* an input's storage is gone: the fused results stand */
        }
    }
    undo_log_clear(&b->undo);
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
        check_block(b, it, k, ins, &rand_before);
        if (ins != saved)
            free(ins);
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

/* A plan that is there to read (not one the worker may still write). */
static int plan_readable(const Backend *b, const BlockEntry *e)
{
    int st = atomic_load(&e->state);
    return e->planned && !(b->worker_stuck && st == BS_QUEUED);
}

static void tier_report(const Backend *b, FILE *f)
{
    const TierOptions *t = &b->opt.tier;
    int64_t queued = 0, fused = 0, never = 0, abandoned = b->abandoned;
    double compile = 0.0;
    for (int k = 0; k < b->nblocks; k++) {
        const BlockEntry *e = &b->entries[k];
        int st = atomic_load(&e->state);
        int killed = st == BS_FAILED && !strcmp(e->why, "abandoned at the end of the run");
        queued += st == BS_QUEUED || st == BS_READY || killed;
        abandoned += killed;
        fused += st == BS_FUSED;
        never += e->promoted_t < 0 && e->entries > 0;
        if (plan_readable(b, e))
            compile += e->compile_s;
    }
    fprintf(f, "stats: tiers (%s; promote at work %lld, runs under %lld elements interpreted): %lld promoted, "
               "%lld installed, %lld demoted, %lld failed, %lld not ready by the end (%lld abandoned), %lld blocks "
               "run only interpreted (%lld of them hot, untranslated: slower fused in earlier runs); background "
               "compile %.6f s\n",
            tier_mode_name(t->mode), (long long)t->work, (long long)t->min_len, (long long)b->promotions,
            (long long)b->installs, (long long)b->demotions, (long long)b->failures, (long long)queued,
            (long long)abandoned, (long long)never, (long long)b->slow_skipped, compile);
    (void)fused;
    /* Per block: the promoted ones, then the busiest of the others. */
    int top[8], ntop = 0;
    for (int k = 0; k < b->nblocks; k++) {
        const BlockEntry *e = &b->entries[k];
        if (e->promoted_t >= 0 || !e->entries)
            continue;
        int at = ntop < 8 ? ntop++ : 8;
        while (at > 0 && b->entries[top[at - 1]].elements < e->elements) {
            if (at < 8)
                top[at] = top[at - 1];
            at--;
        }
        if (at < 8)
            top[at] = k;
    }
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? ntop : b->nblocks;
        for (int i = 0; i < n; i++) {
            int k = pass ? top[i] : i;
            const BlockEntry *e = &b->entries[k];
            if (!pass && e->promoted_t < 0)
                continue;
            int st = atomic_load(&e->state);
            const char *tier = st == BS_FUSED ? "fused" : e->demoted ? "demoted" : st == BS_QUEUED ? "compiling"
                               : st == BS_READY ? "ready, unused" : "interpreted";
            int lo, hi;
            vc_line_range(b->prog, b->blocks[k].start, b->blocks[k].end, &lo, &hi);
            fprintf(f, "stats: tier: block %d (lines %d-%d, %s): %s; %lld entries (%lld short", k, lo, hi,
                    b->prog->funcs[b->blocks[k].func].name, tier, (long long)e->entries, (long long)e->short_runs);
            if (e->lazy_runs)
                fprintf(f, ", %lld with a lazy fill", (long long)e->lazy_runs);
            fprintf(f, "), %lld elements, %lld fused runs", (long long)e->elements, (long long)e->runs);
            if (e->promoted_t >= 0) {
                fprintf(f, "; promoted at entry %lld (%.6f s)", (long long)e->promoted_entry, e->promoted_t);
                if (plan_readable(b, e) && (st != BS_QUEUED))
                    fprintf(f, ", translated in %.6f s, compiled in %.6f s (%d compiled, %d cache hits)",
                            e->translate_s, e->compile_s, e->compiled, e->hits);
                if (e->installed_t >= 0)
                    fprintf(f, ", in use from %.6f s", e->installed_t);
                else
                    fprintf(f, ", code not ready in time");
            }
            if (e->late_work && e->fused_work)
                fprintf(f, "; ns per element-instruction: interpreted %.3f (%lld runs sampled after the install), "
                           "fused %.3f",
                        1e9 * e->late_secs / (double)e->late_work, (long long)e->late_n,
                        1e9 * e->fused_secs / (double)e->fused_work);
            if (e->interp_timed || e->fused_timed)
                fprintf(f, "; seconds: interpreted %.6f (%lld timed runs), fused %.6f (%lld timed runs)",
                        e->interp_secs, (long long)e->interp_timed, e->fused_secs, (long long)e->fused_timed);
            if (e->why[0])
                fprintf(f, "; %s", e->why);
            fputc('\n', f);
        }
    }
}

void backend_times(const Backend *b, BackendTimes *t)
{
    memset(t, 0, sizeof *t);
    t->fused_s = b->kernel_seconds + b->host_seconds;
    for (int k = 0; k < b->nblocks; k++) {
        const BlockEntry *e = &b->entries[k];
        t->compile_s += e->compile_s;
        if (plan_readable(b, e))
            t->translate_s += e->plan.translate_seconds;
    }
    if (b->x->times) {
        double c = 0.0, m = 0.0;
        b->x->times(b->x, &c, &m);
        t->compile_s += c;
        t->transfer_s += m;
    }
}

void backend_report(const Backend *b, FILE *f)
{
    int planned = 0, kb = 0, ka = 0, ab = 0, aa = 0, fellback = 0;
    int big_vars = 0, big_cons = 0;
    double big_time = 0.0, max_time = 0.0, translate = 0.0, ilp = 0.0;
    int64_t fallbacks = 0;
    for (int k = 0; k < b->nblocks; k++) {
        const BlockEntry *e = &b->entries[k];
        fallbacks += e->fallbacks;
        if (!plan_readable(b, e))
            continue;
        translate += e->plan.translate_seconds;
        ilp += e->plan.fr.seconds;
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
    fprintf(f, "stats: kernel results written over an argument: %lld of %lld offered\n",
            (long long)b->written_in_place, (long long)b->donated);
    fprintf(f, "stats: block runs past -m at their peak: %lld run again on the reference, %lld kept (an input's "
               "storage written over)\n",
            (long long)b->mem_reruns, (long long)b->mem_kept);
    fprintf(f, "stats: REPLACE host steps: %lld in place, %lld copied\n", (long long)b->replace_inplace,
            (long long)b->replace_copied);
    fprintf(f, "stats: translation %.6f s, of which ILP %.6f s; largest ILP %d variables, %d constraints, "
               "solved in %.6f s; slowest ILP %.6f s; %d blocks fell back to the greedy schedule\n",
            translate, ilp, big_vars, big_cons, big_time, max_time, fellback);
    fprintf(f, "stats: executor %s: time in kernels %.6f s, in host steps %.6f s\n", b->x->name, b->kernel_seconds,
            b->host_seconds);
    if (b->opt.check) {
        fprintf(f, "stats: --check: %lld block runs compared with the reference, no difference\n",
                (long long)b->checked);
        fprintf(f, "stats: --check: block outputs: %lld bit for bit, %lld within error bounds (%lld elements "
                   "free to differ), %lld not verifiable\n",
                (long long)b->check_exact, (long long)b->check_bounded, (long long)b->check_free,
                (long long)b->check_unverifiable);
    }
    if (b->tiered)
        tier_report(b, f);
    if (b->x->report)
        b->x->report(b->x, f);
    /* The busiest kernels. */
    int top[5] = { -1, -1, -1, -1, -1 }, tops[5] = { 0, 0, 0, 0, 0 };
    for (int k = 0; k < b->nblocks; k++) {
        const BlockEntry *e = &b->entries[k];
        if (!e->launches)
            continue;
        for (int s = 0; s < e->plan.nsteps; s++) {
            if (!e->launches[s])
                continue;
            for (int t = 0; t < 5; t++) {
                if (top[t] < 0 || e->launches[s] > b->entries[top[t]].launches[tops[t]]) {
                    for (int u = 4; u > t; u--) {
                        top[u] = top[u - 1];
                        tops[u] = tops[u - 1];
                    }
                    top[t] = k;
                    tops[t] = s;
                    break;
                }
            }
        }
    }
    for (int t = 0; t < 5 && top[t] >= 0; t++) {
        const BlockEntry *e = &b->entries[top[t]];
        const PlanStep *ps = &e->plan.steps[tops[t]];
        fprintf(f, "stats: kernel K%d of the block at line %d (%s): %lld launches, %.6f s\n", ps->k->id,
                b->prog->code[e->plan.blk.start].line, b->prog->funcs[e->plan.blk.func].name,
                (long long)e->launches[tops[t]], e->seconds[tops[t]]);
    }
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
    else if (m == 0)
        fprintf(f, "profile: no fused kernel ran (every block interpreted)\n");
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
    backend_end_run(b);
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
    free(b->classval);
    undo_log_free(&b->undo);
    if (b->x)
        b->x->free(b->x);
    free(b);
}

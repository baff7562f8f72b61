/* runtime/fused/exec_cpu.c — the cpu executor: every kernel of every planned
 * block is generated as C (translate/cg_c.c) into one unit per program,
 * compiled once through the cache (runtime/jit/jit.c), loaded with dlopen and
 * called through the ABI of translate/codegen_abi.h. A kernel the
 * generator cannot express runs in the λcu evaluator instead (counted in
 * -d stats); library SOACs (RANK, the RAND stream) are evaluated here on
 * the generated code's request.
 *
 * Per call the executor fills the variable table for the kernel's
 * parameters (descriptors: offsets, a segment table for descriptors with
 * negative lengths, checked to fit their data as the evaluator checks
 * them), runs the function, then releases the internal variables the
 * kernel does not return. Host memory a kernel asks for (the keep flags
 * of a filter) and segment tables are freed after the call, or at the next
 * call when a fatal error left through the embedder's hook. */
#include "runtime/fused/exec_cpu.h"
#include "runtime/core/clock.h"
#include "runtime/fused/kernel_fail.h"
#include "runtime/core/errors.h"
#include "translate/cg_unit.h"
#include "translate/codegen.h"
#include "translate/codegen_abi.h"
#include "runtime/fused/lcu_eval.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    Executor base;
    JitOptions jo;
    JitStats js;
    void **handles;             /* the loaded units */
    char **paths;               /* per unit: its cached source ("" when not cached) */
    int nhandles, units;
    int *unit_of;               /* per block: its unit */
    char srcpath[1200];
    int nblocks;
    vk_kernel_fn **fns;         /* per block, per plan step; NULL: evaluator */
    CgKernelCode **code;        /* per block, per plan step */
    int *nsteps;                /* per block */
    int kernels_generated, kernels_not_generated, kernels_distinct;
    size_t unit_bytes;
    double generate_seconds;
    int64_t evaluator_launches;
    /* the call in progress */
    vk_ctx cx;
    vk_arr *v;
    int vcap;
    Value **env;                /* the plan's variables */
    const int *map;             /* local -> plan variable */
    Value **lenv;               /* the locals' values, for library SOACs */
    int lenvcap;
    const LcuVarType *types;    /* of the locals */
    const LcuKernel *k;         /* the canonical kernel */
    int nvars;                  /* locals */
    void **scratch;
    int nscratch, scratchcap;
    int64_t scratch_units;      /* charged for them (-m) */
} CpuExec;

/* Scratch memory of a kernel call (segment tables, the generated code's
 * temporaries): charged against -m while the call holds it. */
static void *scratch_alloc(CpuExec *c, int64_t bytes, const char *what)
{
    if (c->nscratch == c->scratchcap) {
        int cap = c->scratchcap ? 2 * c->scratchcap : 16;
        void **s = rt_xrealloc(c->scratch, (size_t)cap * sizeof *s);
        c->scratch = s;
        c->scratchcap = cap;
    }
    void *p = mem_alloc_charged(bytes, what);
    c->scratch_units += mem_bytes_units(bytes < 1 ? 1 : bytes);
    c->scratch[c->nscratch++] = p;
    return p;
}

static void free_scratch(CpuExec *c)
{
    for (int i = 0; i < c->nscratch; i++)
        free(c->scratch[i]);
    c->nscratch = 0;
    mem_uncharge(c->scratch_units);
    c->scratch_units = 0;
}

/* ---- callbacks of the generated code --------------------------------------- */

static void fill_array(vk_arr *a, Value *v)
{
    a->d = v->data;
    a->len = v->len;
    a->n = 0;
    a->off = NULL;
    a->segid = NULL;
    a->ulen = 0;
}

/* A descriptor's entry: offsets, n >= 0, and for one with negative lengths
 * the element -> segment table (the later segment wins, as the reference's
 * writes do). */
static void fill_segdes(CpuExec *c, vk_arr *a, Value *sd, int var)
{
    if (!sd->sane && seg_check_ranges(sd) != 0)
        rt_fatal("segment descriptor x%d with negative lengths does not fit its data", var);
    a->d = sd->data;
    a->len = sd->len;
    a->n = sd->n > 0 ? sd->n : 0;
    a->off = sd->len ? seg_offsets(sd) : NULL;
    a->segid = NULL;
    a->ulen = seg_uniform_len(sd);
    if (!sd->sane) {
        int64_t n = a->n, m = sd->len;
        int32_t *t = scratch_alloc(c, n * (int64_t)sizeof *t, "the element -> segment table");
        const int32_t *L = VI(sd);
        for (int64_t j = 0; j < n; j++)
            t[j] = -1;
        for (int64_t k = 0; k < m; k++)
            for (int64_t j = a->off[k]; j < a->off[k] + L[k]; j++)
                if (j >= 0 && j < n)
                    t[j] = (int32_t)k;
        a->segid = t;
    }
}

static void *cb_alloc(vk_ctx *cx, int var, int64_t len, int zero)
{
    CpuExec *c = cx->rt;
    if (var < 0 || var >= c->nvars)
        rt_fatal("cpu: internal error: generated code allocates x%d", var);
    const LcuVarType *t = &c->types[var];
    Value **slot = &c->env[c->map[var]];
    /* storage offered in the slot (val_donate) is the argument the
     * elementwise loop reads: never zeroed first */
    Value *v = t->kind == LV_SEGDES || zero ? NULL : val_take_donation(*slot, lcu_val_type(t), len);
    if (v)
        val_drop_device(v);
    else if (t->kind == LV_SEGDES)
        v = seg_new(len);
    else
        v = zero ? val_new_zero(lcu_val_type(t), len) : val_new(lcu_val_type(t), len);
    if (*slot)
        val_release(*slot);
    *slot = v;
    fill_array(&c->v[var], v);
    return v->data;
}

static void cb_seal(vk_ctx *cx, int var)
{
    CpuExec *c = cx->rt;
    Value *sd = c->env[c->map[var]];
    seg_finish(sd);
    fill_segdes(c, &c->v[var], sd, var);
}

static void cb_lib(vk_ctx *cx, int soac)
{
    CpuExec *c = cx->rt;
    const LcuSoac *s = c->k->soacs[soac];
    if (c->lenvcap < c->nvars) {
        free(c->lenv);
        c->lenvcap = c->nvars * 2;
        c->lenv = rt_xmalloc((size_t)c->lenvcap * sizeof *c->lenv);
    }
    for (int l = 0; l < c->nvars; l++)
        c->lenv[l] = c->env[c->map[l]];
    lcu_eval_soac(s, c->lenv, c->types, c->nvars);
    for (int r = 0; r < s->nres; r++) {
        int v = s->res[r];
        c->env[c->map[v]] = c->lenv[v];
        if (c->types[v].kind == LV_SEGDES)
            fill_segdes(c, &c->v[v], c->lenv[v], v);
        else
            fill_array(&c->v[v], c->lenv[v]);
    }
}

static void *cb_scratch(vk_ctx *cx, int64_t bytes)
{
    CpuExec *c = cx->rt;
    return scratch_alloc(c, bytes, "kernel scratch");
}

static void cb_fail(vk_ctx *cx, int code, int64_t a, int64_t b, int64_t d)
{
    (void)cx;
    kernel_fail(code, a, b, d);
}

/* ---- the executor ---------------------------------------------------------------- */

static void cpu_run(Executor *x, int block, const BlockPlan *bp, int step, Value **env)
{
    CpuExec *c = (CpuExec *)x;
    vk_kernel_fn fn = block < c->nblocks && c->fns[block] ? c->fns[block][step] : NULL;
    if (!fn) {
        lcu_eval_kernel(bp->steps[step].k, env, bp->types, bp->nvars);
        c->evaluator_launches++;
        return;
    }
    const CgKernelCode *kc = &c->code[block][step];
    const LcuKernel *k = kc->canon;
    free_scratch(c); /* left by a call that a fatal error abandoned */
    if (c->vcap < kc->nlocal) {
        free(c->v);
        c->vcap = kc->nlocal * 2;
        c->v = rt_xcalloc((size_t)c->vcap, sizeof *c->v);
    }
    c->env = env;
    c->map = kc->map;
    c->types = kc->ltypes;
    c->k = k;
    c->nvars = kc->nlocal;
    for (int p = 0; p < k->nparams; p++) {
        int var = k->params[p];
        Value *val = env[kc->map[var]];
        if (!val)
            rt_fatal("cpu: kernel K%d: parameter x%d is not bound", bp->steps[step].k->id, kc->map[var]);
        if (val->type == VT_SEGDES)
            fill_segdes(c, &c->v[var], val, kc->map[var]);
        else if (val->type == VT_PAIR)
            rt_fatal("cpu: kernel K%d: parameter x%d is a pair", bp->steps[step].k->id, kc->map[var]);
        else
            fill_array(&c->v[var], val);
    }
    c->cx.v = c->v;
    fn(&c->cx);
    lcu_release_internal(k, kc->map, env);
    free_scratch(c);
}

/* The unit of the kernels of PLANS (cg_plans_unit). */
static CgUnit *make_unit(int nblocks, BlockPlan *const *plans, CgKernelCode **code, int *generated, int *not_generated)
{
    CgUnit *u = cg_plans_unit(CG_C, nblocks, plans, code, NULL, NULL, generated, not_generated);
    if (!u)
        rt_fatal("out of host memory");
    return u;
}

/* Compile the unit of PLANS into the cache (the tier thread). */
static int cpu_build(Executor *x, int nblocks, BlockPlan *const *plans, JitBuildStats *st, char *msg, size_t msglen)
{
    CpuExec *c = (CpuExec *)x;
    int gen = 0, notgen = 0;
    CgUnit *u = make_unit(nblocks, plans, NULL, &gen, &notgen);
    size_t len = 0;
    const char *text = cg_unit_text(u, &len);
    JitStats js;
    memset(&js, 0, sizeof js);
    st->unit[0] = '\0';
    int rc = gen > 0 ? jit_build(&c->jo, JIT_C, text, len, &js, st->probe, st->unit, sizeof st->unit, msg, msglen) : 0;
    cg_unit_free(u);
    st->compiled += js.compiled;
    st->hits += js.hits;
    st->compile_seconds += js.compile_seconds;
    return rc;
}

/* Generate, compile (or find) and load one unit for the blocks of PLANS;
 * called once for every block (eager) or once per promoted block (tiers). */
static int cpu_prepare(Executor *x, const Program *p, int nblocks, BlockPlan *const *plans, int fast, char *msg,
                       size_t msglen)
{
    (void)fast; /* not staged: one compile of each unit */
    (void)p;
    CpuExec *c = (CpuExec *)x;
    double t0 = rt_seconds();
    if (!c->fns) {
        c->nblocks = nblocks;
        c->fns = calloc((size_t)nblocks + 1, sizeof *c->fns);
        c->code = calloc((size_t)nblocks + 1, sizeof *c->code);
        c->nsteps = calloc((size_t)nblocks + 1, sizeof *c->nsteps);
        c->unit_of = calloc((size_t)nblocks + 1, sizeof *c->unit_of);
        if (!c->fns || !c->code || !c->nsteps || !c->unit_of)
            rt_fatal("out of host memory");
    }
    int coded = cg_plans_code(nblocks, plans, c->code, c->nsteps);
    if (coded == -2)
        rt_fatal("cpu: internal error: a block prepared twice");
    if (coded < 0)
        rt_fatal("out of host memory");
    CgUnit *u = make_unit(nblocks, plans, c->code, &c->kernels_generated, &c->kernels_not_generated);
    size_t len = 0;
    const char *text = cg_unit_text(u, &len);
    c->unit_bytes += len;
    int nd = cg_unit_distinct(u);
    c->kernels_distinct += nd;
    c->units++;
    c->generate_seconds += rt_seconds() - t0;
    int rc = 0;
    void *handle = NULL;
    if (nd > 0) {
        handle = jit_load_c(&c->jo, text, len, &c->js, c->srcpath, sizeof c->srcpath, msg, msglen);
        if (!handle)
            rc = -1;
        else {
            void **hs = realloc(c->handles, (size_t)(c->nhandles + 1) * sizeof *hs);
            char **ps = hs ? realloc(c->paths, (size_t)(c->nhandles + 1) * sizeof *ps) : NULL;
            if (hs)
                c->handles = hs;
            if (!ps || !(ps[c->nhandles] = strdup(c->srcpath)))
                rt_fatal("out of host memory");
            c->paths = ps;
            c->handles[c->nhandles++] = handle;
        }
    }
    cg_unit_free(u);
    /* The distinct functions, each looked up once. */
    vk_kernel_fn *byid = rt_xcalloc((size_t)nd + 1, sizeof *byid);
    char name[32];
    for (int i = 0; i < nd && rc == 0; i++) {
        cg_unique_name(name, sizeof name, i);
        void *sym = dlsym(handle, name);
        if (!sym) {
            snprintf(msg, msglen, "generated unit lacks %s", name);
            rc = -1;
            break;
        }
        memcpy(&byid[i], &sym, sizeof sym);
    }
    for (int k = 0; k < nblocks && rc == 0; k++) {
        if (!plans[k] || !c->code[k])
            continue;
        c->fns[k] = calloc((size_t)c->nsteps[k] + 1, sizeof **c->fns);
        c->unit_of[k] = nd > 0 ? c->nhandles - 1 : -1; /* no kernels: no unit */
        if (!c->fns[k])
            rt_fatal("out of host memory");
        for (int s = 0; s < c->nsteps[k]; s++)
            if (c->code[k][s].unique >= 0)
                c->fns[k][s] = byid[c->code[k][s].unique];
    }
    free(byid);
    return rc;
}

static const char *cpu_where(Executor *x, int block, int step, char *buf, size_t len)
{
    CpuExec *c = (CpuExec *)x;
    if (block >= c->nblocks || !c->fns[block] || !c->fns[block][step])
        return NULL;
    char name[32];
    cg_unique_name(name, sizeof name, c->code[block][step].unique);
    const char *path = c->paths[c->unit_of[block]];
    snprintf(buf, len, "%s, function %s", path[0] ? path : "(not cached: --no-cache)", name);
    return buf;
}

static const char *cpu_unit_file(Executor *x, int block, char *buf, size_t len)
{
    CpuExec *c = (CpuExec *)x;
    if (block >= c->nblocks || !c->fns || !c->fns[block] || c->unit_of[block] < 0)
        return NULL;
    const char *path = c->paths[c->unit_of[block]];
    if (!path[0])
        return NULL;
    snprintf(buf, len, "%s", path);
    return buf;
}

static int by_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The cache keys of the units loaded, sorted (the file names of their
 * sources): the same program must give the same keys whatever the load. */
static void report_keys(FILE *f, const char *who, char **paths, int n)
{
    char **k = malloc((size_t)(n ? n : 1) * sizeof *k);
    if (!k)
        return;
    int m = 0;
    for (int i = 0; i < n; i++) {
        const char *slash = strrchr(paths[i], '/');
        if (slash)
            k[m++] = (char *)slash + 1;
    }
    qsort(k, (size_t)m, sizeof *k, by_str);
    fprintf(f, "stats: %s: unit keys:", who);
    for (int i = 0; i < m; i++)
        fprintf(f, " %.32s", k[i]);
    fputc('\n', f);
    free(k);
}

void exec_report_keys(FILE *f, const char *who, char **paths, int n) { report_keys(f, who, paths, n); }

static void cpu_times(Executor *x, double *compile_s, double *transfer_s)
{
    CpuExec *c = (CpuExec *)x;
    *compile_s = c->js.compile_seconds + c->js.load_seconds;
    *transfer_s = 0.0;
}

static void cpu_report(Executor *x, FILE *f)
{
    CpuExec *c = (CpuExec *)x;
    fprintf(f, "stats: cpu: %d kernels generated, %d distinct (%d left to the evaluator, %lld evaluator launches), "
               "%d units of %zu bytes in all generated in %.6f s\n",
            c->kernels_generated, c->kernels_distinct, c->kernels_not_generated, (long long)c->evaluator_launches,
            c->units, c->unit_bytes, c->generate_seconds);
    fprintf(f, "stats: cpu: kernel cache: %d units compiled, %d cache hits, %d entries rejected; compile %.6f s, "
               "load %.6f s; cache %s\n",
            c->js.compiled, c->js.hits, c->js.rejected, c->js.compile_seconds, c->js.load_seconds,
            c->js.dir[0] ? c->js.dir : "off");
    report_keys(f, "cpu", c->paths, c->nhandles);
}

static void cpu_free(Executor *x)
{
    CpuExec *c = (CpuExec *)x;
    free_scratch(c);
    free(c->scratch);
    for (int k = 0; k < c->nblocks; k++) {
        free(c->fns ? c->fns[k] : NULL);
        for (int s = 0; c->code && c->code[k] && s < c->nsteps[k]; s++)
            cg_kernel_code_free(&c->code[k][s]);
        free(c->code ? c->code[k] : NULL);
    }
    free(c->fns);
    free(c->code);
    free(c->nsteps);
    free(c->lenv);
    free(c->v);
    for (int i = 0; i < c->nhandles; i++) {
        dlclose(c->handles[i]);
        free(c->paths[i]);
    }
    free(c->handles);
    free(c->paths);
    free(c->unit_of);
    free(c);
}

Executor *exec_cpu_new(const JitOptions *o)
{
    CpuExec *c = rt_xcalloc(1, sizeof *c);
    c->base.name = "cpu";
    c->base.eager = 1;
    c->base.prepare = cpu_prepare;
    c->base.build = cpu_build;
    c->base.run_kernel = cpu_run;
    c->base.where = cpu_where;
    c->base.unit_file = cpu_unit_file;
    c->base.report = cpu_report;
    c->base.times = cpu_times;
    c->base.free = cpu_free;
    c->jo = *o;
    jit_init();
    c->cx.alloc = cb_alloc;
    c->cx.seal = cb_seal;
    c->cx.lib = cb_lib;
    c->cx.scratch = cb_scratch;
    c->cx.fail = cb_fail;
    c->cx.rt = c;
    return &c->base;
}

/* runtime/exec_cpu.c — the cpu executor: every kernel of every planned
 * block is generated as C (translate/cg_c.c) into one unit per program,
 * compiled once through the cache (runtime/jit.c), loaded with dlopen and
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
#include "runtime/exec_cpu.h"
#include "runtime/errors.h"
#include "translate/codegen.h"
#include "translate/codegen_abi.h"
#include "translate/lcu_eval.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    Executor base;
    JitOptions jo;
    JitStats js;
    void *handle;
    char srcpath[1200];
    int nblocks;
    vk_kernel_fn **fns;         /* per block, per plan step; NULL: evaluator */
    int kernels_generated, kernels_not_generated;
    size_t unit_bytes;
    double generate_seconds;
    int64_t evaluator_launches;
    /* the call in progress */
    vk_ctx cx;
    vk_arr *v;
    int vcap;
    Value **env;
    const LcuVarType *types;
    const LcuKernel *k;
    int nvars;
    void **scratch;
    int nscratch, scratchcap;
} CpuExec;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static ValType vt_of(const LcuVarType *t)
{
    if (t->kind == LV_SEGDES)
        return VT_SEGDES;
    return t->base == LB_FLOAT ? VT_FLOAT : t->base == LB_BOOL ? VT_BOOL : VT_INT;
}

static void *keep_scratch(CpuExec *c, void *p)
{
    if (c->nscratch == c->scratchcap) {
        int cap = c->scratchcap ? 2 * c->scratchcap : 16;
        void **s = realloc(c->scratch, (size_t)cap * sizeof *s);
        if (!s) {
            free(p);
            rt_fatal("out of host memory");
        }
        c->scratch = s;
        c->scratchcap = cap;
    }
    c->scratch[c->nscratch++] = p;
    return p;
}

static void free_scratch(CpuExec *c)
{
    for (int i = 0; i < c->nscratch; i++)
        free(c->scratch[i]);
    c->nscratch = 0;
}

/* ---- callbacks of the generated code --------------------------------------- */

static void fill_array(vk_arr *a, Value *v)
{
    a->d = v->data;
    a->len = v->len;
    a->n = 0;
    a->off = NULL;
    a->segid = NULL;
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
    if (!sd->sane) {
        int64_t n = a->n, m = sd->len;
        int32_t *t = keep_scratch(c, malloc((size_t)(n ? n : 1) * sizeof *t));
        if (!t)
            rt_fatal("out of host memory for the segments of x%d", var);
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
    Value *v;
    if (t->kind == LV_SEGDES)
        v = seg_new(len);
    else
        v = zero ? val_new_zero(vt_of(t), len) : val_new(vt_of(t), len);
    if (c->env[var])
        val_release(c->env[var]);
    c->env[var] = v;
    fill_array(&c->v[var], v);
    return v->data;
}

static void cb_seal(vk_ctx *cx, int var)
{
    CpuExec *c = cx->rt;
    Value *sd = c->env[var];
    seg_finish(sd);
    fill_segdes(c, &c->v[var], sd, var);
}

static void cb_lib(vk_ctx *cx, int soac)
{
    CpuExec *c = cx->rt;
    const LcuSoac *s = c->k->soacs[soac];
    lcu_eval_soac(s, c->env, c->types, c->nvars);
    for (int r = 0; r < s->nres; r++) {
        int v = s->res[r];
        if (c->types[v].kind == LV_SEGDES)
            fill_segdes(c, &c->v[v], c->env[v], v);
        else
            fill_array(&c->v[v], c->env[v]);
    }
}

static void *cb_scratch(vk_ctx *cx, int64_t bytes)
{
    CpuExec *c = cx->rt;
    void *p = malloc((size_t)(bytes > 0 ? bytes : 1));
    if (!p)
        rt_fatal("out of host memory for %lld bytes of kernel scratch", (long long)bytes);
    return keep_scratch(c, p);
}

static void cb_fail(vk_ctx *cx, int code, int64_t a, int64_t b, int64_t d)
{
    (void)cx;
    switch (code) {
    case VKF_DIV0: rt_fatal("integer division by zero (element %lld)", (long long)a);
    case VKF_DIVOVF: rt_fatal("integer overflow: -2147483648 / -1 (element %lld)", (long long)a);
    case VKF_MOD0: rt_fatal("integer remainder by zero (element %lld)", (long long)a);
    case VKF_MODOVF: rt_fatal("integer overflow: -2147483648 %% -1 (element %lld)", (long long)a);
    case VKF_RAND0: rt_fatal("range 0 at element %lld (RAND needs a non-zero range)", (long long)a);
    case VKF_CHECKIDX: rt_fatal("index %lld is outside its segment of length %lld", (long long)a, (long long)b);
    case VKF_SUB: rt_fatal("index %lld outside an array of length %lld", (long long)a, (long long)b);
    case VKF_SEGOF:
        rt_fatal("seg_of: element %lld outside descriptor x%lld of %lld elements", (long long)a, (long long)b,
                 (long long)d);
    case VKF_NOSEG: rt_fatal("seg_of: element %lld of x%lld lies in no segment", (long long)a, (long long)b);
    case VKF_SEGSTART:
    case VKF_SEGLEN:
        rt_fatal("%s: segment %lld outside descriptor x%lld of %lld segments",
                 code == VKF_SEGSTART ? "seg_start" : "seg_len", (long long)a, (long long)b, (long long)d);
    case VKF_PERM:
        rt_fatal("index %lld at position %lld is outside its segment of length %lld", (long long)b, (long long)a,
                 (long long)d);
    case VKF_DSTSEG:
        rt_fatal("segment %lld of the destination descriptor has no matching segment", (long long)a);
    case VKF_DFLTLEN:
        rt_fatal("destination descriptor covers %lld elements, default has %lld", (long long)a, (long long)b);
    default: rt_fatal("cpu: generated code failed with code %d", code);
    }
}

/* ---- the executor ---------------------------------------------------------------- */

static void cpu_run(Executor *x, int block, const BlockPlan *bp, int step, Value **env)
{
    CpuExec *c = (CpuExec *)x;
    const LcuKernel *k = bp->steps[step].k;
    vk_kernel_fn fn = block < c->nblocks && c->fns[block] ? c->fns[block][step] : NULL;
    if (!fn) {
        lcu_eval_kernel(k, env, bp->types, bp->nvars);
        c->evaluator_launches++;
        return;
    }
    free_scratch(c); /* left by a call that a fatal error abandoned */
    if (c->vcap < bp->nvars) {
        free(c->v);
        c->vcap = bp->nvars * 2;
        c->v = calloc((size_t)c->vcap, sizeof *c->v);
        if (!c->v)
            rt_fatal("out of host memory");
    }
    c->env = env;
    c->types = bp->types;
    c->k = k;
    c->nvars = bp->nvars;
    for (int p = 0; p < k->nparams; p++) {
        int var = k->params[p];
        Value *val = env[var];
        if (!val)
            rt_fatal("cpu: kernel K%d: parameter x%d is not bound", k->id, var);
        if (val->type == VT_SEGDES)
            fill_segdes(c, &c->v[var], val, var);
        else if (val->type == VT_PAIR)
            rt_fatal("cpu: kernel K%d: parameter x%d is a pair", k->id, var);
        else
            fill_array(&c->v[var], val);
    }
    c->cx.v = c->v;
    fn(&c->cx);
    /* Internal variables: bound here, not returned. */
    for (int i = 0; i < k->nsoacs; i++) {
        const LcuSoac *s = k->soacs[i];
        for (int r = 0; r < s->nres; r++) {
            int v = s->res[r], ret = 0;
            for (int j = 0; j < k->nrets && !ret; j++)
                ret = k->rets[j] == v;
            if (!ret && env[v]) {
                val_release(env[v]);
                env[v] = NULL;
            }
        }
    }
    free_scratch(c);
}

static void kernel_name(char *buf, size_t len, int block, int step)
{
    snprintf(buf, len, "vk_b%d_s%d", block, step);
}

static int cpu_prepare(Executor *x, const Program *p, int nblocks, BlockPlan *const *plans, char *msg, size_t msglen)
{
    (void)p;
    CpuExec *c = (CpuExec *)x;
    double t0 = now();
    c->nblocks = nblocks;
    c->fns = calloc((size_t)nblocks + 1, sizeof *c->fns);
    unsigned char **ok = calloc((size_t)nblocks + 1, sizeof *ok);
    if (!c->fns || !ok)
        rt_fatal("out of host memory");
    CgBuf b = { NULL, 0, 0 };
    cg_emit_prelude(&b, CG_C);
    char name[64], why[300];
    for (int k = 0; k < nblocks; k++) {
        const BlockPlan *bp = plans[k];
        if (!bp)
            continue;
        ok[k] = calloc((size_t)bp->nsteps + 1, 1);
        if (!ok[k])
            rt_fatal("out of host memory");
        for (int s = 0; s < bp->nsteps; s++) {
            if (bp->steps[s].kind != STEP_KERNEL)
                continue;
            kernel_name(name, sizeof name, k, s);
            if (cg_emit_kernel(&b, CG_C, name, bp->steps[s].k, bp->types, bp->nvars, why, sizeof why) == 0) {
                ok[k][s] = 1;
                c->kernels_generated++;
            } else {
                c->kernels_not_generated++;
            }
        }
    }
    c->unit_bytes = b.n;
    c->generate_seconds = now() - t0;
    int rc = 0;
    if (c->kernels_generated > 0) {
        c->handle = jit_load_c(&c->jo, b.s, b.n, &c->js, c->srcpath, sizeof c->srcpath, msg, msglen);
        if (!c->handle)
            rc = -1;
    }
    for (int k = 0; k < nblocks && rc == 0; k++) {
        if (!ok[k])
            continue;
        c->fns[k] = calloc((size_t)plans[k]->nsteps + 1, sizeof **c->fns);
        if (!c->fns[k])
            rt_fatal("out of host memory");
        for (int s = 0; s < plans[k]->nsteps; s++) {
            if (!ok[k][s])
                continue;
            kernel_name(name, sizeof name, k, s);
            void *sym = dlsym(c->handle, name);
            if (!sym) {
                snprintf(msg, msglen, "generated unit lacks %s", name);
                rc = -1;
                break;
            }
            memcpy(&c->fns[k][s], &sym, sizeof sym);
        }
    }
    for (int k = 0; k < nblocks; k++)
        free(ok[k]);
    free(ok);
    cg_buf_free(&b);
    return rc;
}

static const char *cpu_where(Executor *x, int block, int step, char *buf, size_t len)
{
    CpuExec *c = (CpuExec *)x;
    if (block >= c->nblocks || !c->fns[block] || !c->fns[block][step])
        return NULL;
    char name[64];
    kernel_name(name, sizeof name, block, step);
    snprintf(buf, len, "%s, function %s", c->srcpath[0] ? c->srcpath : "(not cached: --no-cache)", name);
    return buf;
}

static void cpu_report(Executor *x, FILE *f)
{
    CpuExec *c = (CpuExec *)x;
    fprintf(f, "stats: cpu: %d kernels generated (%d left to the evaluator, %lld evaluator launches), unit of "
               "%zu bytes generated in %.6f s\n",
            c->kernels_generated, c->kernels_not_generated, (long long)c->evaluator_launches, c->unit_bytes,
            c->generate_seconds);
    fprintf(f, "stats: cpu: kernel cache: %d units compiled, %d cache hits, %d entries rejected; compile %.6f s, "
               "load %.6f s; cache %s\n",
            c->js.compiled, c->js.hits, c->js.rejected, c->js.compile_seconds, c->js.load_seconds,
            c->js.dir[0] ? c->js.dir : "off");
}

static void cpu_free(Executor *x)
{
    CpuExec *c = (CpuExec *)x;
    free_scratch(c);
    free(c->scratch);
    for (int k = 0; k < c->nblocks; k++)
        free(c->fns ? c->fns[k] : NULL);
    free(c->fns);
    free(c->v);
    if (c->handle)
        dlclose(c->handle);
    free(c);
}

Executor *exec_cpu_new(const JitOptions *o)
{
    CpuExec *c = calloc(1, sizeof *c);
    if (!c)
        rt_fatal("out of host memory");
    c->base.name = "cpu";
    c->base.eager = 1;
    c->base.prepare = cpu_prepare;
    c->base.run_kernel = cpu_run;
    c->base.where = cpu_where;
    c->base.report = cpu_report;
    c->base.free = cpu_free;
    c->jo = *o;
    c->cx.alloc = cb_alloc;
    c->cx.seal = cb_seal;
    c->cx.lib = cb_lib;
    c->cx.scratch = cb_scratch;
    c->cx.fail = cb_fail;
    c->cx.rt = c;
    return &c->base;
}

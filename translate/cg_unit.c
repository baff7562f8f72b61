/* translate/cg_unit.c — a unit of generated kernels without repeats (see
 * cg_unit.h). */
#include "translate/cg_unit.h"
#include "vcode/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLACEHOLDER "vk_canonical"

typedef struct {
    uint64_t hash;
    char *text;             /* generated under PLACEHOLDER */
    int id;
} Entry;

struct CgUnit {
    CgTarget target;
    CgBuf text;
    Entry *tab;             /* open addressing, cap a power of two */
    int cap, n;
    int (*seen)(void *ctx, uint64_t hash);     /* cg_unit_omit_seen */
    void *seen_ctx;
    uint64_t *emitted;      /* hashes of the kernels in text */
    int nemitted, emitcap;
    /* the emitted text in pieces, a kernel's SOACs each (CUDA; C: the
     * whole kernel in its first SOAC's piece): where each ends in text, of
     * which unique kernel and SOAC it is */
    size_t *piece_end;
    int *piece_unique, *piece_soac;
    int npieces, piececap;
    size_t prelude;         /* the prelude's length */
};

void cg_unit_omit_seen(CgUnit *u, int (*seen)(void *ctx, uint64_t hash), void *ctx)
{
    u->seen = seen;
    u->seen_ctx = ctx;
}

int cg_unit_emitted(const CgUnit *u, const uint64_t **hashes)
{
    *hashes = u->emitted;
    return u->nemitted;
}

static uint64_t hash_text(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return h;
}

CgUnit *cg_unit_new(CgTarget t)
{
    CgUnit *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    u->target = t;
    u->cap = 256;
    u->tab = calloc((size_t)u->cap, sizeof *u->tab);
    if (!u->tab) {
        free(u);
        return NULL;
    }
    cg_emit_prelude(&u->text, t);
    u->prelude = u->text.n;
    return u;
}

void cg_unique_name(char *buf, size_t len, int unique)
{
    snprintf(buf, len, "vk_u%d", unique);
}

static void grow(CgUnit *u)
{
    int ncap = u->cap * 2;
    Entry *nt = calloc((size_t)ncap, sizeof *nt);
    if (!nt) {
        fprintf(stderr, "vinterp: out of host memory\n");
        exit(1);
    }
    for (int i = 0; i < u->cap; i++) {
        if (!u->tab[i].text)
            continue;
        int j = (int)(u->tab[i].hash & (uint64_t)(ncap - 1));
        while (nt[j].text)
            j = (j + 1) & (ncap - 1);
        nt[j] = u->tab[i];
    }
    free(u->tab);
    u->tab = nt;
    u->cap = ncap;
}

/* Locals: parameters in order, then every variable the SOACs bind or
 * read, in order of first mention. */
static int add_local(int v, int *to, int *map, int *n)
{
    if (v < 0)
        return 0;
    if (to[v] < 0) {
        to[v] = *n;
        map[(*n)++] = v;
    }
    return 0;
}

static void expr_vars(const LcuExpr *e, int *to, int *map, int *n)
{
    if (!e)
        return;
    switch (e->kind) {
    case LE_SUB: case LE_LEN: case LE_SEG_OF: case LE_SEG_START: case LE_SEG_LEN: case LE_SEG_COUNT:
        add_local(e->var, to, map, n);
        break;
    default:
        break;
    }
    for (int i = 0; i < e->nkids; i++)
        expr_vars(e->kids[i], to, map, n);
}

int cg_unit_add(CgUnit *u, const LcuKernel *k, const LcuVarType *types, int nvars, CgKernelCode *kc, char *msg,
                size_t msglen)
{
    memset(kc, 0, sizeof *kc);
    kc->unique = -1;
    int *to = vc_xmalloc((size_t)nvars * sizeof *to);
    int *map = vc_xmalloc((size_t)nvars * sizeof *map);
    for (int v = 0; v < nvars; v++)
        to[v] = -1;
    int n = 0;
    for (int i = 0; i < k->nparams; i++)
        add_local(k->params[i], to, map, &n);
    for (int j = 0; j < k->nsoacs; j++) {
        const LcuSoac *s = k->soacs[j];
        const LcuThunk *th[3] = { s->pull, s->idx, s->pred };
        for (int t = 0; t < 3; t++)
            if (th[t])
                expr_vars(th[t]->body, to, map, &n);
        if (s->shape.kind != LSH_ONE)
            add_local(s->shape.var, to, map, &n);
        add_local(s->dst_sd, to, map, &n);
        for (int r = 0; r < s->nres && r < LCU_MAXRES; r++) {
            add_local(s->res[r], to, map, &n);
            add_local(s->dflt[r], to, map, &n);
        }
        for (int a = 0; a < s->nargs && a < 8; a++)
            add_local(s->args[a], to, map, &n);
    }
    for (int i = 0; i < k->nrets; i++)
        add_local(k->rets[i], to, map, &n);
    kc->canon = lcu_kernel_renumber(k, to);
    kc->nlocal = n;
    kc->map = map;
    kc->ltypes = vc_xmalloc((size_t)(n ? n : 1) * sizeof *kc->ltypes);
    for (int l = 0; l < n; l++)
        kc->ltypes[l] = types[map[l]];
    free(to);

    CgBuf b = { NULL, 0, 0 };
    if (cg_emit_kernel(&b, u->target, PLACEHOLDER, kc->canon, kc->ltypes, n, msg, msglen) != 0) {
        cg_buf_free(&b);
        return -1;
    }
    if (!b.s)
        cg_puts(&b, ""); /* a kernel with no code of its own (CUDA: library SOACs only) */
    uint64_t h = hash_text(b.s, b.n);
    int j = (int)(h & (uint64_t)(u->cap - 1));
    while (u->tab[j].text) {
        if (u->tab[j].hash == h && strcmp(u->tab[j].text, b.s) == 0) {
            kc->unique = u->tab[j].id;
            cg_buf_free(&b);
            return 0;
        }
        j = (j + 1) & (u->cap - 1);
    }
    u->tab[j].hash = h;
    u->tab[j].text = b.s; /* keeps the buffer */
    u->tab[j].id = u->n;
    kc->unique = u->n++;
    if (2 * u->n > u->cap)
        grow(u);
    if (u->seen && u->seen(u->seen_ctx, h))
        return 0;
    char name[32];
    cg_unique_name(name, sizeof name, kc->unique);
    CgBuf named = { NULL, 0, 0 };
    int ns = kc->canon->nsoacs;
    size_t *ends = vc_xmalloc((size_t)(ns + 1) * sizeof *ends);
    if (cg_emit_kernel_ends(&named, u->target, name, kc->canon, kc->ltypes, n, msg, msglen, ends) != 0) {
        cg_buf_free(&named);
        free(ends);
        kc->unique = -1;
        return -1;
    }
    size_t start = u->text.n;
    if (named.s)
        cg_puts(&u->text, named.s);
    else
        for (int j = 0; j < ns; j++)
            ends[j] = 0;
    cg_buf_free(&named);
    if (u->nemitted == u->emitcap) {
        u->emitcap = u->emitcap ? 2 * u->emitcap : 64;
        uint64_t *e = realloc(u->emitted, (size_t)u->emitcap * sizeof *e);
        if (!e) {
            fprintf(stderr, "vinterp: out of host memory\n");
            exit(1);
        }
        u->emitted = e;
    }
    u->emitted[u->nemitted++] = h;
    for (int j = 0; j < ns; j++) {
        if (u->npieces == u->piececap) {
            u->piececap = u->piececap ? 2 * u->piececap : 256;
            size_t *pe = realloc(u->piece_end, (size_t)u->piececap * sizeof *pe);
            if (pe)
                u->piece_end = pe;
            int *pu = realloc(u->piece_unique, (size_t)u->piececap * sizeof *pu);
            if (pu)
                u->piece_unique = pu;
            int *ps = realloc(u->piece_soac, (size_t)u->piececap * sizeof *ps);
            if (ps)
                u->piece_soac = ps;
            if (!pe || !pu || !ps) {
                fprintf(stderr, "vinterp: out of host memory\n");
                exit(1);
            }
        }
        u->piece_end[u->npieces] = start + ends[j];
        u->piece_unique[u->npieces] = kc->unique;
        u->piece_soac[u->npieces++] = j;
    }
    free(ends);
    return 0;
}

const char *cg_unit_text(const CgUnit *u, size_t *len)
{
    *len = u->text.n;
    return u->text.s;
}

int cg_unit_distinct(const CgUnit *u) { return u->n; }

int cg_unit_pieces(const CgUnit *u) { return u->npieces; }

int cg_unit_split(const CgUnit *u, size_t max_bytes, int *first, int max_parts)
{
    int n = 0;
    size_t start = u->prelude;
    for (int i = 0; i < u->npieces; i++) {
        /* a new part when this piece would take the current one past
         * MAX_BYTES (a part has at least one piece) */
        if (i == 0 || (u->piece_end[i] - start > max_bytes && n < max_parts)) {
            if (n < max_parts)
                first[n++] = i;
            start = i ? u->piece_end[i - 1] : u->prelude;
        }
    }
    return n;
}

char *cg_unit_part_text(const CgUnit *u, int from, int to, size_t *len)
{
    size_t a = from > 0 ? u->piece_end[from - 1] : u->prelude;
    size_t b = to > 0 ? u->piece_end[to - 1] : u->prelude;
    if (b < a)
        b = a;
    /* a part with a large piece: its segment helpers called, not inlined
     * (codegen.c VK_SEG_FN) */
    static const char big[] = "#define VK_BIG_PART 1\n";
    size_t hb = 0;
    for (int i = from; i < to && u->target == CG_CUDA; i++) {
        size_t s0 = i > 0 ? u->piece_end[i - 1] : u->prelude;
        if (u->piece_end[i] - s0 > CG_BIG_PIECE) {
            hb = sizeof big - 1;
            break;
        }
    }
    char *t = malloc(hb + u->prelude + (b - a) + 1);
    if (!t)
        return NULL;
    memcpy(t, big, hb);
    memcpy(t + hb, u->text.s, u->prelude);
    memcpy(t + hb + u->prelude, u->text.s + a, b - a);
    *len = hb + u->prelude + (b - a);
    t[*len] = '\0';
    return t;
}

int cg_unit_piece(const CgUnit *u, int i, int *soac)
{
    if (i < 0 || i >= u->npieces)
        return -1;
    if (soac)
        *soac = u->piece_soac[i];
    return u->piece_unique[i];
}

void cg_unit_free(CgUnit *u)
{
    if (!u)
        return;
    for (int i = 0; i < u->cap; i++)
        free(u->tab[i].text);
    free(u->tab);
    free(u->emitted);
    free(u->piece_end);
    free(u->piece_unique);
    free(u->piece_soac);
    cg_buf_free(&u->text);
    free(u);
}

void cg_kernel_code_free(CgKernelCode *kc)
{
    if (!kc)
        return;
    lcu_kernel_free(kc->canon);
    free(kc->map);
    free(kc->ltypes);
    memset(kc, 0, sizeof *kc);
    kc->unique = -1;
}

/* ---- units of block plans ---------------------------------------------------- */

int cg_plans_code(int nblocks, BlockPlan *const *plans, CgKernelCode **code, int *nsteps)
{
    for (int k = 0; k < nblocks; k++) {
        const BlockPlan *bp = plans[k];
        if (!bp)
            continue;
        if (code[k])
            return -2;
        nsteps[k] = bp->nsteps;
        code[k] = calloc((size_t)bp->nsteps + 1, sizeof **code);
        if (!code[k])
            return -1;
        for (int s = 0; s < bp->nsteps; s++)
            code[k][s].unique = -1;
    }
    return 0;
}

CgUnit *cg_plans_unit(CgTarget t, int nblocks, BlockPlan *const *plans, CgKernelCode **code,
                      int (*seen)(void *ctx, uint64_t hash), void *ctx, int *generated, int *not_generated)
{
    CgUnit *u = cg_unit_new(t);
    if (!u)
        return NULL;
    if (seen)
        cg_unit_omit_seen(u, seen, ctx);
    char why[300];
    for (int k = 0; k < nblocks; k++) {
        const BlockPlan *bp = plans[k];
        if (!bp)
            continue;
        for (int s = 0; s < bp->nsteps; s++) {
            if (bp->steps[s].kind != STEP_KERNEL)
                continue;
            CgKernelCode tmp, *kc = code ? &code[k][s] : &tmp;
            kc->unique = -1;
            if (cg_unit_add(u, bp->steps[s].k, bp->types, bp->nvars, kc, why, sizeof why) == 0)
                ++*generated;
            else
                ++*not_generated;
            if (!code)
                cg_kernel_code_free(kc);
        }
    }
    return u;
}

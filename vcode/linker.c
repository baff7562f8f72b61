/* vcode/linker.c — resolve CALL targets and the entry point (vcode/SPEC.md §2.5).
 * A later definition of a name wins for every call. */
#include "vcode/program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

typedef struct {
    int *slot;          /* function index or -1 */
    size_t mask;
} NameTable;

static int *lookup(NameTable *t, Program *p, const char *name)
{
    size_t i = (size_t)hash_name(name) & t->mask;
    while (t->slot[i] >= 0 && strcmp(p->funcs[t->slot[i]].name, name) != 0)
        i = (i + 1) & t->mask;
    return &t->slot[i];
}

int vc_link(Program *p, VcError *err)
{
    size_t cap = 16;
    while (cap < (size_t)p->nfuncs * 2 + 2)
        cap *= 2;
    NameTable t = { malloc(cap * sizeof(int)), cap - 1 };
    if (!t.slot) {
        snprintf(err->msg, sizeof err->msg, "out of memory while linking");
        return -1;
    }
    for (size_t i = 0; i < cap; i++)
        t.slot[i] = -1;
    for (int f = 0; f < p->nfuncs; f++) {
        int *s = lookup(&t, p, p->funcs[f].name);
        if (*s >= 0) {
            fprintf(stderr, "vinterp: line %d: warning: label %s being redefined.\n",
                    p->funcs[f].cline, p->funcs[f].name);
            p->funcs[*s].live = 0;
        }
        *s = f;
    }
    int rc = 0;
    if (vc_trace.link_trace)
        for (int i = p->ncode - 1; i >= 0; i--)
            if (p->code[i].op == OP_CALL)
                fprintf(stderr, "vinterp: linker: linking %s\n", p->code[i].name);
    /* As the classic: every unresolved call, last first, by instruction
     * index, then "Parse failure" (vcode/SPEC.md §2.5). */
    size_t used = 0;
    for (int i = p->ncode - 1; i >= 0; i--) {
        Instr *in = &p->code[i];
        if (in->op != OP_CALL)
            continue;
        int f = *lookup(&t, p, in->name);
        if (f < 0) {
            if (used + 200 < sizeof err->msg)
                used += (size_t)snprintf(err->msg + used, sizeof err->msg - used,
                                         "vinterp: line %d: unresolved identifier %.100s\n", i, in->name);
            err->line = in->line;
            err->classic = 1;
            rc = -1;
        }
        in->target = f;
    }
    if (rc < 0 && used + 20 < sizeof err->msg)
        snprintf(err->msg + used, sizeof err->msg - used, "Parse failure");
    if (rc == 0) {
        int e = *lookup(&t, p, "MAIN");
        if (e < 0)
            e = *lookup(&t, p, p->funcs[0].name);
        p->entry = e;
    }
    free(t.slot);
    return rc;
}

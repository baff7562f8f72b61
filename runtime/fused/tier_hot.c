/* runtime/fused/tier_hot.c — sets of blocks kept per program for its next
 * runs: hot blocks that ran once, and blocks found slower fused (see
 * tier_hot.h). */
#include "runtime/fused/tier_hot.h"
#include "runtime/core/settings.h"
#include "runtime/core/version.h"
#include "runtime/fused/tier_verdict.h"

#include <sys/stat.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tier_hot_path(const char *dir, uint64_t program, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/%016llx.hot", dir, (unsigned long long)program);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int tier_slow_path(const char *dir, uint64_t program, uint64_t config, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/%016llx.%016llx.slow", dir, (unsigned long long)program,
                     (unsigned long long)config);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int tier_warm_path(const char *dir, uint64_t program, uint64_t config, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/%016llx.%016llx.warm", dir, (unsigned long long)program,
                     (unsigned long long)config);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

uint64_t tier_config_id(const char *executor, int float_reassoc)
{
    uint64_t h = TIER_FNV_SEED;
    const char *parts[] = { VINTERP_VERSION, executor ? executor : "", settings_text(SET_CC), settings_text(SET_CFLAGS),
                            settings_text(SET_CXX), settings_text(SET_CXXFLAGS) };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        const char *s = parts[i] ? parts[i] : "";
        h = tier_fnv(h, s, strlen(s) + 1);
    }
    h = tier_fnv(h, &float_reassoc, sizeof float_reassoc);
    struct stat st;
    if (stat("/proc/self/exe", &st) == 0) {
        int64_t f[3] = { (int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec };
        h = tier_fnv(h, f, sizeof f);
    }
    return h;
}

uint64_t tier_block_hash(const Program *p, const Block *b)
{
    uint64_t h = TIER_FNV_SEED;
    for (int i = b->start; i < b->end; i++) {
        const Instr *in = &p->code[i];
        int64_t f[5] = { in->op, in->type, in->a, in->b, in->ival };
        h = tier_fnv(h, f, sizeof f);
        h = tier_fnv(h, &in->fval, sizeof in->fval);
    }
    return h;
}

static int find(const HotSet *s, uint64_t h)
{
    int lo = 0, hi = s->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (s->h[mid] < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int tier_hot_has(const HotSet *s, uint64_t h)
{
    int i = find(s, h);
    return i < s->n && s->h[i] == h;
}

int tier_hot_add(HotSet *s, uint64_t h)
{
    int i = find(s, h);
    if (i < s->n && s->h[i] == h)
        return 0;
    if (s->n == s->cap) {
        int ncap = s->cap ? 2 * s->cap : 16;
        uint64_t *nh = realloc(s->h, (size_t)ncap * sizeof *nh);
        if (!nh)
            return -1;
        s->h = nh;
        s->cap = ncap;
    }
    memmove(s->h + i + 1, s->h + i, (size_t)(s->n - i) * sizeof *s->h);
    s->h[i] = h;
    s->n++;
    return 0;
}

void tier_hot_read(const char *path, HotSet *s)
{
    s->n = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    int version = 0, n = 0, ok = fscanf(f, "vinterp-hot %d %d", &version, &n) == 2 && version == 2 && n >= 0;
    for (int i = 0; ok && i < n; i++) {
        uint64_t h;
        ok = fscanf(f, "%" SCNx64, &h) == 1 && tier_hot_add(s, h) == 0;
    }
    if (ok) {
        int c;
        while ((c = fgetc(f)) == ' ' || c == '\n')
            ;
        ok = c == EOF;
    }
    fclose(f);
    if (!ok)
        s->n = 0;
}

typedef struct {
    const HotSet *a, *b;
} HotPair;

static int write_hot(FILE *f, const void *arg)
{
    const HotPair *p = arg;
    HotSet all = { NULL, 0, 0 };
    int ok = 1;
    for (int i = 0; ok && i < p->a->n; i++)
        ok = tier_hot_add(&all, p->a->h[i]) == 0;
    for (int i = 0; ok && i < p->b->n; i++)
        ok = tier_hot_add(&all, p->b->h[i]) == 0;
    ok = ok && fprintf(f, "vinterp-hot 2 %d\n", all.n) > 0;
    for (int i = 0; ok && i < all.n; i++)
        ok = fprintf(f, "%016" PRIx64 "\n", all.h[i]) > 0;
    tier_hot_free(&all);
    return ok ? 0 : -1;
}

int tier_hot_write(const char *path, const HotSet *prior, const HotSet *fresh)
{
    int news = 0;
    for (int i = 0; i < fresh->n && !news; i++)
        news = !tier_hot_has(prior, fresh->h[i]);
    if (!news)
        return 0;
    HotPair p = { prior, fresh };
    return tier_file_replace(path, write_hot, &p) == 0 ? 1 : -1;
}

int tier_warm_write(const char *path, const HotSet *prior, const HotSet *fresh, const HotSet *gone)
{
    HotSet keep = { NULL, 0, 0 };
    int changed = 0;
    for (int i = 0; i < prior->n; i++) {
        if (tier_hot_has(gone, prior->h[i]))
            changed = 1;
        else if (tier_hot_add(&keep, prior->h[i]) < 0) {
            tier_hot_free(&keep);
            return -1;
        }
    }
    for (int i = 0; i < fresh->n && !changed; i++)
        changed = !tier_hot_has(prior, fresh->h[i]);
    if (!changed) {
        tier_hot_free(&keep);
        return 0;
    }
    HotPair p = { &keep, fresh };
    int rc = tier_file_replace(path, write_hot, &p) == 0 ? 1 : -1;
    tier_hot_free(&keep);
    return rc;
}

void tier_hot_free(HotSet *s)
{
    free(s->h);
    s->h = NULL;
    s->n = s->cap = 0;
}

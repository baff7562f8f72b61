/* runtime/fused/tier_verdict.c — a block's speeds in both tiers, kept beside its
 * cached unit (see tier_verdict.h). */
#include "runtime/fused/tier_verdict.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int tier_verdict_path(const char *unit_file, uint64_t program, char *out, size_t len)
{
    const char *slash = strrchr(unit_file, '/');
    const char *dot = strrchr(unit_file, '.');
    int stem = (int)(dot && (!slash || dot > slash) ? (size_t)(dot - unit_file) : strlen(unit_file));
    int n = snprintf(out, len, "%.*s.%016llx.tier", stem, unit_file, (unsigned long long)program);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

uint64_t tier_fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

uint64_t tier_program_id(const Program *p)
{
    uint64_t h = TIER_FNV_SEED;
    for (int i = 0; i < p->ncode; i++) {
        const Instr *in = &p->code[i];
        int64_t f[9] = { in->op, in->type, in->line, in->a, in->b, in->target, in->ckind, in->ival, in->cidx };
        h = tier_fnv(h, f, sizeof f);
        h = tier_fnv(h, &in->fval, sizeof in->fval);
    }
    for (int c = 0; c < p->nconsts; c++) {
        const VcConst *k = &p->consts[c];
        h = tier_fnv(h, &k->len, sizeof k->len);
        if (k->ints && k->len > 0)
            h = tier_fnv(h, k->ints, (size_t)k->len * sizeof *k->ints);
        if (k->floats && k->len > 0)
            h = tier_fnv(h, k->floats, (size_t)k->len * sizeof *k->floats);
    }
    return h;
}

int tier_verdict_read(const char *path, TierSpeeds *s)
{
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    long long ln, lw, fn, fw;
    double ls, fs;
    int version = 0;
    int n = fscanf(f, "vinterp-tier %d %lld %lf %lld %lld %lf %lld", &version, &ln, &ls, &lw, &fn, &fs, &fw);
    fclose(f);
    if (n != 7 || version != 1 || ln < 0 || lw < 0 || fn < 0 || fw < 0 || !(ls >= 0) || !(fs >= 0))
        return 0;
    s->late_n = ln;
    s->late_secs = ls;
    s->late_work = lw;
    s->fused_n = fn;
    s->fused_secs = fs;
    s->fused_work = fw;
    return 1;
}

int tier_file_replace(const char *path, int (*write)(FILE *f, const void *arg), const void *arg)
{
    char tmp[1400];
    if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp)
        return -1;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int ok = write(f, arg) == 0;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static int write_speeds(FILE *f, const void *arg)
{
    const TierSpeeds *s = arg;
    return fprintf(f, "vinterp-tier 1 %lld %.9g %lld %lld %.9g %lld\n", (long long)s->late_n, s->late_secs,
                   (long long)s->late_work, (long long)s->fused_n, s->fused_secs, (long long)s->fused_work) > 0
               ? 0 : -1;
}

int tier_verdict_write(const char *path, const TierSpeeds *s) { return tier_file_replace(path, write_speeds, s); }

int tier_verdict_slower(const TierSpeeds *s)
{
    if (s->late_n < 2 || s->fused_n < 4 || s->late_work <= 0 || s->fused_work <= 0)
        return -1;
    return s->fused_secs / (double)s->fused_work > s->late_secs / (double)s->late_work;
}

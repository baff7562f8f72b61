/* runtime/tier_verdict.c — a block's speeds in both tiers, kept beside its
 * cached unit (see tier_verdict.h). */
#include "runtime/tier_verdict.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int tier_verdict_path(const char *unit_file, char *out, size_t len)
{
    const char *slash = strrchr(unit_file, '/');
    const char *dot = strrchr(unit_file, '.');
    size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - unit_file) : strlen(unit_file);
    if (stem + sizeof ".tier" > len)
        return -1;
    memcpy(out, unit_file, stem);
    memcpy(out + stem, ".tier", sizeof ".tier");
    return 0;
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

int tier_verdict_write(const char *path, const TierSpeeds *s)
{
    char tmp[1400];
    if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp)
        return -1;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int ok = fprintf(f, "vinterp-tier 1 %lld %.9g %lld %lld %.9g %lld\n", (long long)s->late_n, s->late_secs,
                     (long long)s->late_work, (long long)s->fused_n, s->fused_secs, (long long)s->fused_work) > 0;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

int tier_verdict_slower(const TierSpeeds *s)
{
    if (s->late_n < 2 || s->fused_n < 4 || s->late_work <= 0 || s->fused_work <= 0)
        return -1;
    return s->fused_secs / (double)s->fused_work > s->late_secs / (double)s->late_work;
}

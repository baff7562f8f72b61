/* runtime/fused/tier_hot.c — hot blocks that ran once, kept per program for its
 * next run (see tier_hot.h). */
#include "runtime/fused/tier_hot.h"
#include "runtime/fused/tier_verdict.h"

#include <stdio.h>
#include <stdlib.h>

int tier_hot_path(const char *dir, uint64_t program, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/%016llx.hot", dir, (unsigned long long)program);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int tier_hot_read(const char *path, int nblocks, unsigned char *hot)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int version = 0, n = 0, set = 0;
    if (fscanf(f, "vinterp-hot %d %d", &version, &n) != 2 || version != 1 || n != nblocks) {
        fclose(f);
        return 0;
    }
    unsigned char *seen = calloc((size_t)nblocks + 1, 1);
    int k, ok = seen != NULL;
    while (ok && fscanf(f, "%d", &k) == 1) {
        if (k < 0 || k >= nblocks)
            ok = 0;
        else if (!seen[k]) {
            seen[k] = 1;
            set++;
        }
    }
    ok &= feof(f) != 0;
    fclose(f);
    if (ok)
        for (k = 0; k < nblocks; k++)
            if (seen[k])
                hot[k] |= HOT_PRIOR;
    free(seen);
    return ok ? set : 0;
}

typedef struct {
    int nblocks;
    const unsigned char *hot;
} HotList;

static int write_hot(FILE *f, const void *arg)
{
    const HotList *h = arg;
    if (fprintf(f, "vinterp-hot 1 %d\n", h->nblocks) < 0)
        return -1;
    for (int k = 0; k < h->nblocks; k++)
        if (h->hot[k] && fprintf(f, "%d\n", k) < 0)
            return -1;
    return 0;
}

int tier_hot_write(const char *path, int nblocks, const unsigned char *hot)
{
    int fresh = 0;
    for (int k = 0; k < nblocks; k++)
        fresh |= hot[k] == HOT_NEW;
    if (!fresh)
        return 0;
    HotList h = { nblocks, hot };
    return tier_file_replace(path, write_hot, &h) == 0 ? 1 : -1;
}

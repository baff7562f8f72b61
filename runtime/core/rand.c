/* runtime/core/rand.c — glibc-compatible random() (see rand.h). */
#include "runtime/core/rand.h"

void rnd_seed(RandState *st, uint32_t seed) { vs_random_seed(st->ring, &st->k, seed); }

void rnd_fill(RandState *st, int32_t *out, int64_t n)
{
    /* Work on a linear copy of the ring so the inner loop has no modulo. */
    uint32_t buf[31 + 1024];
    uint64_t k = st->k;
    for (int j = 0; j < 31; j++)
        buf[j] = st->ring[(k + (uint64_t)j) % 31]; /* buf[j] = r[k-31+j] */
    int64_t done = 0;
    while (done < n) {
        int64_t chunk = n - done < 1024 ? n - done : 1024;
        for (int64_t i = 0; i < chunk; i++) {
            uint32_t v = buf[i] + buf[i + 28];
            buf[i + 31] = v;
            out[done + i] = (int32_t)(v >> 1);
        }
        done += chunk;
        for (int j = 0; j < 31; j++)
            buf[j] = buf[chunk + j];
    }
    k += (uint64_t)n;
    for (int j = 0; j < 31; j++)
        st->ring[(k + (uint64_t)j) % 31] = buf[j];
    st->k = k;
}

static RandState global_state;
static int global_ready;

RandState *rnd_global(void)
{
    if (!global_ready) {
        rnd_seed(&global_state, 0);
        global_ready = 1;
    }
    return &global_state;
}

/* tests/unit/test_vheap.c — the heap of big vectors (runtime/core/vheap.h):
 * blocks never overlap and keep their contents through any order of
 * allocations, frees and resizes; freed neighbours merge, so that freeing
 * everything gives the whole range back; a freed stretch is reused first
 * fit by address; and vectors made through value.c land there and move
 * there when READ grows them past the threshold. */
#include "check.h"
#include "runtime/core/value.h"
#include "runtime/core/vheap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t seed = 12345;
static uint32_t rnd(void)
{
    seed = seed * 1103515245u + 12345u;
    return seed >> 8;
}

#define NB 40

typedef struct {
    unsigned char *p;
    size_t n;
    unsigned char tag;
} Live;

/* Blocks are vheap_min bytes and more: only sampled bytes (61 and the
 * last) are written and checked, so that the test touches a few pages. */
static void stamp(unsigned char *p, size_t n, unsigned char tag)
{
    size_t step = n / 61 + 1;
    for (size_t i = 0; i < n; i += step)
        p[i] = tag;
    p[n - 1] = tag;
}

/* Every live block still holds its tag at every sampled byte. */
static int intact(const Live *l)
{
    if (!l->p)
        return 1;
    size_t step = l->n / 61 + 1;
    for (size_t i = 0; i < l->n; i += step)
        if (l->p[i] != l->tag)
            return 0;
    return l->p[l->n - 1] == l->tag;
}

static void test_random_churn(void)
{
    Live live[NB] = { { 0 } };
    int bad = 0, owned = 1;
    for (int round = 0; round < 4000; round++) {
        int k = (int)(rnd() % NB);
        if (live[k].p && rnd() % 3 == 0) { /* resize */
            size_t n = vheap_min + rnd() % (4 * vheap_min);
            unsigned char *q = vheap_resize(live[k].p, n);
            if (!q) {
                bad++;
                continue;
            }
            size_t keep = n < live[k].n ? n : live[k].n, step = live[k].n / 61 + 1;
            for (size_t i = 0; i < keep; i += step) /* the old samples that are kept */
                bad += q[i] != live[k].tag;
            owned &= vheap_owns(q);
            stamp(q, n, live[k].tag);
            live[k].p = q;
            live[k].n = n;
        } else if (live[k].p) {
            bad += !intact(&live[k]);
            vheap_free(live[k].p);
            live[k].p = NULL;
        } else {
            size_t n = vheap_min + rnd() % (4 * vheap_min);
            live[k].p = vheap_alloc(n);
            if (!live[k].p) {
                bad++;
                continue;
            }
            owned &= vheap_owns(live[k].p) && ((uintptr_t)live[k].p & 63) == 0;
            live[k].n = n;
            live[k].tag = (unsigned char)(1 + rnd() % 250);
            stamp(live[k].p, n, live[k].tag);
        }
        if (round % 97 == 0)
            for (int j = 0; j < NB; j++)
                bad += !intact(&live[j]);
    }
    CHECK(bad == 0);
    CHECK(owned);
    for (int j = 0; j < NB; j++)
        if (live[j].p) {
            CHECK(intact(&live[j]));
            vheap_free(live[j].p);
        }
    /* every neighbour merged: nothing is left below the top */
    CHECK(vheap_extent() == 0);
}

static void test_first_fit_and_merge(void)
{
    size_t n = 2 * vheap_min;
    void *a = vheap_alloc(n), *b = vheap_alloc(n), *c = vheap_alloc(n);
    CHECK(a && b && c && (char *)a < (char *)b && (char *)b < (char *)c);
    vheap_free(a);
    vheap_free(b); /* merged with a's stretch */
    void *d = vheap_alloc(3 * vheap_min); /* fits in a + b, at a's address */
    CHECK(d == a);
    void *e = vheap_alloc(vheap_min); /* in the rest of a + b */
    CHECK((char *)e > (char *)d && (char *)e < (char *)c);
    CHECK(vheap_alloc(vheap_min - 1) == NULL); /* small blocks are the caller's */
    vheap_free(c);
    vheap_free(d);
    vheap_free(e);
    CHECK(vheap_extent() == 0);
    /* the last block grows in place into the top */
    void *f = vheap_alloc(n);
    ((unsigned char *)f)[n - 1] = 7;
    void *g = vheap_resize(f, 3 * n);
    CHECK(g == f && ((unsigned char *)g)[n - 1] == 7);
    vheap_free(g);
    CHECK(vheap_extent() == 0);
}

static void test_values(void)
{
    mem_init();
    mem_set_limit(INT64_C(1) << 40);
    Value *v = val_new(VT_FLOAT, (int64_t)(2 * vheap_min / 8));
    CHECK(vheap_owns(v));
    Value *s = val_new(VT_INT, 10);
    CHECK(!vheap_owns(s));
    /* READ's growth: a small vector that grows past the threshold moves
     * into the vector heap, its elements kept */
    Value *r = val_new(VT_INT, 1000);
    for (int i = 0; i < 1000; i++)
        VI(r)[i] = i;
    r = val_resize(r, (int64_t)(vheap_min / 4 * 3));
    CHECK(vheap_owns(r) && VI(r)[999] == 999 && VI(r)[0] == 0);
    val_release(v);
    val_release(s);
    val_release(r);
    CHECK(mem_used() == 0);
    CHECK(vheap_extent() == 0);
}

int main(void)
{
    vheap_min = (size_t)1 << 20; /* blocks of a few MiB */
    void *probe = vheap_alloc(vheap_min);
    if (!probe) {
        /* a sanitizer build keeps vectors on the C heap: nothing to test */
        CHECK(!vheap_owns(&seed));
        return check_report("vheap");
    }
    vheap_free(probe);
    test_first_fit_and_merge();
    test_random_churn();
    test_values();
    return check_report("vheap");
}

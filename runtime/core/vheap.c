/* runtime/core/vheap.c — the heap of big vectors (see vheap.h): a reserved
 * range, blocks placed first fit by address, freed stretches merged with
 * their free neighbours and kept on one list sorted by address. */
#define _GNU_SOURCE
#include "runtime/core/vheap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define RESERVE ((size_t)1 << 40)      /* address space only: pages are committed as written */
#define ALIGN ((size_t)64)
#define HEADER ALIGN                   /* a block's size, kept in front of it */
#define PAGE ((size_t)4096)

size_t vheap_min = VHEAP_MIN;

static char *base;                     /* NULL: not reserved yet; MAP_FAILED: unavailable */
static size_t top;                     /* past the highest block placed */
static size_t populated;               /* below it every page has been faulted in */

/* Free stretches below top, sorted by offset, none adjacent to another. */
typedef struct {
    size_t off, size;
} Stretch;
static Stretch *frees;
static size_t nfree, capfree;

/* Under AddressSanitizer every vector stays on the C heap, where its
 * bounds are watched. */
#if defined(__SANITIZE_ADDRESS__)
#define VHEAP_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VHEAP_OFF 1
#endif
#endif
#ifndef VHEAP_OFF
#define VHEAP_OFF 0
#endif

static int reserve(void)
{
    if (VHEAP_OFF)
        return 0;
    if (!base) {
        void *p = mmap(NULL, RESERVE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        base = p == MAP_FAILED ? MAP_FAILED : p;
    }
    return base != MAP_FAILED;
}

int mem_fault_in(void *p, size_t n)
{
    static int unsupported;
    if (unsupported || n == 0)
        return -1;
#ifdef MADV_POPULATE_WRITE
    if (madvise(p, n, MADV_POPULATE_WRITE) == 0)
        return 0;
#endif
    unsupported = 1;
    return -1;
}

/* Fault in the pages below END not faulted in yet. */
static void populate(size_t end)
{
    if (end <= populated)
        return;
    size_t e = (end + PAGE - 1) & ~(PAGE - 1);
    mem_fault_in(base + populated, e - populated);
    populated = e;
}

static void remove_free(size_t i)
{
    memmove(frees + i, frees + i + 1, (nfree - i - 1) * sizeof *frees);
    nfree--;
}

/* [off, off + size) is free: onto the list, merged with its neighbours; a
 * stretch that reaches the top lowers the top instead. When the list
 * cannot grow the stretch stays unused (lost to the heap, not to the
 * results). */
static void add_free(size_t off, size_t size)
{
    size_t lo = 0, hi = nfree; /* the first stretch after OFF */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (frees[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t i = lo;
    if (i > 0 && frees[i - 1].off + frees[i - 1].size == off) {
        i--;
        off = frees[i].off;
        size += frees[i].size;
        remove_free(i);
    }
    if (i < nfree && off + size == frees[i].off) {
        size += frees[i].size;
        remove_free(i);
    }
    if (off + size == top) {
        top = off;
        return;
    }
    if (nfree == capfree) {
        size_t cap = capfree ? 2 * capfree : 64;
        Stretch *f = realloc(frees, cap * sizeof *f);
        if (!f)
            return;
        frees = f;
        capfree = cap;
    }
    memmove(frees + i + 1, frees + i, (nfree - i) * sizeof *frees);
    frees[i].off = off;
    frees[i].size = size;
    nfree++;
}

static size_t *size_of(void *p) { return (size_t *)((char *)p - HEADER); }

static size_t block_size(size_t bytes) { return (HEADER + bytes + ALIGN - 1) & ~(ALIGN - 1); }

void *vheap_alloc(size_t bytes)
{
    if (bytes < vheap_min || bytes > RESERVE / 4 || !reserve())
        return NULL;
    size_t need = block_size(bytes), off = SIZE_MAX;
    for (size_t i = 0; i < nfree; i++) /* first fit: the lowest address */
        if (frees[i].size >= need) {
            off = frees[i].off;
            if (frees[i].size == need) {
                remove_free(i);
            } else {
                frees[i].off += need;
                frees[i].size -= need;
            }
            break;
        }
    if (off == SIZE_MAX) {
        if (top + need > RESERVE)
            return NULL;
        off = top;
        top += need;
    }
    populate(off + need);
    char *p = base + off + HEADER;
    *size_of(p) = need;
    return p;
}

int vheap_owns(const void *p)
{
    return base && base != MAP_FAILED && (const char *)p >= base && (const char *)p < base + RESERVE;
}

void vheap_free(void *p)
{
    add_free((size_t)((char *)p - HEADER - base), *size_of(p));
}

void *vheap_resize(void *p, size_t bytes)
{
    size_t have = *size_of(p), off = (size_t)((char *)p - HEADER - base), need = block_size(bytes);
    if (need <= have) {
        if (have - need >= vheap_min) { /* the tail goes back */
            *size_of(p) = need;
            add_free(off + need, have - need);
        }
        return p;
    }
    size_t end = off + have, more = need - have;
    if (end == top && top + more <= RESERVE) { /* the last block grows into the top */
        top += more;
        populate(off + need);
        *size_of(p) = need;
        return p;
    }
    for (size_t i = 0; i < nfree && frees[i].off <= end; i++) /* into the stretch right after it */
        if (frees[i].off == end && frees[i].size >= more) {
            if (frees[i].size == more) {
                remove_free(i);
            } else {
                frees[i].off += more;
                frees[i].size -= more;
            }
            *size_of(p) = need;
            return p;
        }
    void *q = vheap_alloc(bytes);
    if (!q)
        q = malloc(bytes);
    if (!q)
        return NULL;
    memcpy(q, p, have - HEADER);
    vheap_free(p);
    return q;
}

size_t vheap_extent(void) { return top; }

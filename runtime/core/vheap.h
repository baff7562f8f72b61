/* runtime/core/vheap.h — the heap of vectors.
 *
 * Vectors of VHEAP_MIN bytes and more (header and elements) live in one
 * reserved address range of their own: blocks placed first fit by
 * address, freed stretches merged with their free neighbours, pages once
 * touched kept for the next vector (no fault, no clearing). Smaller ones
 * stay on the C heap (value.c). The threshold is high because two heaps
 * each keep the peak of their own share: with every vector here
 * (segregated lists as in the classic, or one address-ordered list)
 * delaunay_40k needed 15% more memory than with glibc's placement, with
 * 1 MiB 5% more (qs_5m and quickhull_5m 5-8% less), with 8-48 MiB qs_5m
 * or quickhull_5m, whose vectors straddle the threshold, up to 80% more.
 * Nothing else is allocated there, so the rest of the program's
 * allocations (a block plan, a code buffer, made while a program runs
 * under the tiers) cannot split a freed stretch and push the next big
 * vector onto fresh pages (dotp_50m under auto: +200 MB and 50000 page
 * faults on the C heap). A stretch used for the first time is faulted in
 * by one madvise (MADV_POPULATE_WRITE), not one fault per page. Main
 * thread only, as the accounting of -m (value.c). */
#ifndef RUNTIME_VHEAP_H
#define RUNTIME_VHEAP_H

#include <stddef.h>

#define VHEAP_MIN ((size_t)128 << 20)
/* The threshold in use: VHEAP_MIN unless changed (tests use small blocks). */
extern size_t vheap_min;

/* A block of BYTES (>= vheap_min), 64-byte aligned; NULL when the range
 * cannot take it (not reserved, or full): the caller uses malloc. */
void *vheap_alloc(size_t bytes);
/* 1 when P is a block of the vector heap. */
int vheap_owns(const void *p);
/* Free a block of the vector heap. */
void vheap_free(void *p);
/* The block P (of the vector heap) with room for BYTES: grown in place
 * when the space after it is free or the top, else a new block with the
 * contents copied (malloc's when the range is full); NULL when neither
 * can be had. */
void *vheap_resize(void *p, size_t bytes);
/* Fault in the pages of [P, P + N) (page-aligned) in one call
 * (MADV_POPULATE_WRITE, Linux 5.14) instead of one fault per page as they
 * are first written: 2.5x less time here (1 GiB: 0.45 s against 1.1-1.4
 * s). 0, or -1 when the kernel cannot (then never tried again: the pages
 * fault in as usual). */
int mem_fault_in(void *p, size_t n);
/* Bytes of the range in use (blocks and free stretches below the top). */
size_t vheap_extent(void);

#endif

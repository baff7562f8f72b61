/* runtime/fused/tier_hot.h — the blocks of a program found hot in a run that ran
 * them only once, kept in the kernel cache (PROGRAM.hot) for the program's
 * next run.
 *
 * A block that runs once over long vectors cannot use code compiled
 * during its run, so the tiers compile nothing for it then (backend.c
 * tier_first_run); the next run of the same program promotes it at its
 * first hot run, the worker compiles it in the background, and the runs
 * after find its code in the cache. Programs differ in every NESL
 * expression typed at the prompt: those never pay for a compile.
 *
 * The file is text: "vinterp-hot 1 NBLOCKS" and the block indices. It is
 * written to a temporary name and renamed; a file that does not parse, or
 * was written for another number of blocks, is ignored. */
#ifndef RUNTIME_TIER_HOT_H
#define RUNTIME_TIER_HOT_H

#include <stddef.h>
#include <stdint.h>

enum { HOT_PRIOR = 1, HOT_NEW = 2 };

/* DIR/PROGRAM.hot in OUT (LEN bytes). 0, or -1 when it does not fit. */
int tier_hot_path(const char *dir, uint64_t program, char *out, size_t len);
/* Set HOT_PRIOR in HOT[k] (NBLOCKS entries) for each block PATH lists.
 * Returns the number set (0 when missing or malformed). */
int tier_hot_read(const char *path, int nblocks, unsigned char *hot);
/* Write the blocks whose HOT[k] is nonzero, when one of them is HOT_NEW
 * alone (new this run). 1 when written, 0 when nothing was new, -1 on an
 * error. */
int tier_hot_write(const char *path, int nblocks, const unsigned char *hot);

#endif

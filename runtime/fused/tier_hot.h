/* runtime/fused/tier_hot.h — the blocks of a program found hot in a run that
 * ran them only once, kept in the kernel cache (PROGRAM.hot) for the
 * program's next run.
 *
 * A block that runs once over long vectors cannot use code compiled
 * during its run, so the tiers do nothing for it then (backend.c
 * tier_first_run); the next run of the same program promotes it at its
 * first hot run: the cache is probed for its unit, which the worker
 * compiles in the background on a miss, and the runs after use it.
 * Programs differ in every NESL expression typed at the prompt: those
 * never pay for a compile.
 *
 * A block is named by a hash of its instructions, not by its index: the
 * same code runs as different blocks in different runs (inlined into its
 * caller, or in the function itself when the interpreter switched to the
 * inlined program during the call). The file is text: "vinterp-hot 2 N"
 * and N hashes in hex, sorted. It is written to a temporary name and
 * renamed; a file that does not parse is ignored. */
#ifndef RUNTIME_FUSED_TIER_HOT_H
#define RUNTIME_FUSED_TIER_HOT_H

#include <stddef.h>
#include <stdint.h>

#include "translate/dfg.h"
#include "vcode/program.h"

typedef struct {
    uint64_t *h;        /* sorted, distinct */
    int n, cap;
} HotSet;

/* DIR/PROGRAM.hot in OUT (LEN bytes). 0, or -1 when it does not fit. */
int tier_hot_path(const char *dir, uint64_t program, char *out, size_t len);
/* The same set, of the blocks whose fused runs earlier runs found the
 * slower (their units' verdicts, tier_verdict.h), in DIR/PROGRAM.CONFIG.slow:
 * a later run leaves them interpreted without translating them (which on
 * the main thread, to find their units' keys, cost bh_16k 2-3% of its run
 * for 59 blocks none of which ran fused). A verdict belongs to the unit's
 * code, which the key names; this set names blocks, so it is kept per
 * CONFIG (tier_config_id): whatever else shapes the code starts a new set. */
int tier_slow_path(const char *dir, uint64_t program, uint64_t config, char *out, size_t len);
/* The same set, of the blocks whose units earlier runs found in the kernel
 * cache or compiled into it, in DIR/PROGRAM.CONFIG.warm: a later run
 * promotes such a block at its first long run and probes the cache for it
 * on the main thread at once (a probe and a load take milliseconds), so
 * that a block that runs once gets its fused code in that very run. */
int tier_warm_path(const char *dir, uint64_t program, uint64_t config, char *out, size_t len);
/* CONFIG for tier_slow_path: the executor's name, --float-reassoc, the
 * compiler and its flags from the environment, the version, and this
 * binary's size and modification time (a rebuilt translator). */
uint64_t tier_config_id(const char *executor, int float_reassoc);
/* The hash of block B's instructions. */
uint64_t tier_block_hash(const Program *p, const Block *b);
/* Read PATH into S (empty when missing or malformed). */
void tier_hot_read(const char *path, HotSet *s);
int tier_hot_has(const HotSet *s, uint64_t h);
/* Add H to S. 0, or -1 out of memory. */
int tier_hot_add(HotSet *s, uint64_t h);
/* Write PRIOR and FRESH together to PATH when FRESH has a hash PRIOR
 * lacks: 1 written, 0 nothing new, -1 an error. */
int tier_hot_write(const char *path, const HotSet *prior, const HotSet *fresh);
/* Write FRESH and what of PRIOR is not in GONE to PATH, when that differs
 * from PRIOR: 1 written, 0 nothing to change, -1 an error. */
int tier_warm_write(const char *path, const HotSet *prior, const HotSet *fresh, const HotSet *gone);
void tier_hot_free(HotSet *s);

#endif

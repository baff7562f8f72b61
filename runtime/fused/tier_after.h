/* runtime/fused/tier_after.h — the compiles after the run. A block found
 * hot whose code was not ready when the program ended (promoted but still
 * queued or compiling, or hot in its only run) gains nothing from a
 * compile in this run; the program's next run would start it again, and
 * end first again (a NESL expression, a benchmark run once per process).
 * So once the output is written, its unit is compiled into the kernel
 * cache and the block kept as warm (tier_hot.h), and the next run installs
 * it at its first long run. The block's interpreted speeds of this run
 * are kept beside its unit (tier_verdict.h), so that the next run judges
 * its first fused run at once (TIER_FIRST_RUN_SLOWER).
 *
 * The compiles run in a child process (fork() after the worker has
 * stopped: the child's one thread owns every lock), with stdin, stdout and
 * stderr on /dev/null and at the worker's low priority. Under
 * TIER_AFTER_DETACH (the cuda backend's default; the cpu backend's is
 * off, for what runtime/fused/tuning.h measured) it is a session of its own and vinterp
 * exits at once: whoever waits for vinterp (a shell, NESL's scripts, a
 * pipe's reader) waits for nothing more. Under TIER_AFTER_WAIT vinterp
 * waits for it before its exit. */
#ifndef RUNTIME_FUSED_TIER_AFTER_H
#define RUNTIME_FUSED_TIER_AFTER_H

#include "runtime/fused/tier.h"

typedef void (*TierAfterWork)(void *arg);

/* Run WORK(ARG) in a child as MODE says (not TIER_AFTER_OFF). IDLE: the
 * child under SCHED_IDLE besides nice 10. GATE (tests; NULL: none): the
 * child waits until that file exists before WORK. 0 when the child was
 * started (and, under TIER_AFTER_WAIT, has ended); -1 when no child could
 * be made (nothing is done). */
int tier_after_run(TierAfter mode, int idle, const char *gate, TierAfterWork work, void *arg);

#endif

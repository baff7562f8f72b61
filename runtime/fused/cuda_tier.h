/* runtime/fused/cuda_tier.h — the cuda backend's device tier: VCODE vector
 * instructions run one by one on the device, each as a precompiled
 * primitive (kernels/kernels.h; the emulated device's host versions),
 * with no compiler in the way, on vectors that live on the device.
 *
 * Placement by size: a vector is made on the device when an instruction
 * that makes a long vector from short operands runs there — RAND over a
 * lazy fill, INDEX, DIST, a vector constant, of at least the placement
 * threshold ($VINTERP_DEVICE_MIN elements) — or by an instruction the
 * tier runs because an operand of that length is on the device already;
 * everything else stays with the host interpreter (scalars, short vectors,
 * vectors made on the host). A short result of the tier (a reduction's
 * sums) stays on the device until the host reads it. An
 * operand on the other side is moved: a lazy fill goes as a scalar, a
 * host vector is uploaded (counted). An instruction the tier does not run
 * yet brings its device operands to the host (-d stats names it and the
 * bytes it read back); so does one the device memory left would not hold
 * ($VINTERP_DEVICE_MEM, -m). Runs on device today: every elementwise
 * instruction (SELECT included), RAND, DIST, INDEX, the scans and the
 * reductions (segmented or not), the permutes, PACK, EXTRACT, REPLACE
 * (positions made and checked there), RANK, MAKE_SEGDES of long device
 * lengths or a long lazy fill, and LENGTHS of long descriptors. Results equal the reference's bit for
 * bit but float + and * scans and reductions on a GPU (a tree: within the
 * bounds of runtime/fused/README.md).
 *
 * Elementwise instructions that cannot fail are deferred into chains
 * (cuda_chain.h), each run as one launch when something else reads its
 * values.
 *
 * Fused blocks on top: a fused block's kernels take and leave device
 * vectors as they are (exec_cuda.c), its steps on metadata (MAKE_SEGDES
 * of long lengths on the device, LENGTHS of a device descriptor) are made
 * here too (cuda_tier_meta_step, through the executor's meta_step), and
 * under --tier=eager a kernel step with a parameter that lives on the
 * device alone runs there whatever its size.
 *
 * Faults (Int / and %, RAND's zero range) and the permutes', EXTRACT's
 * and REPLACE's index checks do not wait: each leaves a record on the device, read with the
 * host's next wait (any read back), before I/O, EXIT, the end of the run
 * and any other fatal error (cuda_tier_settle), so that the first error
 * in program order is the one reported, at its line, and nothing is
 * written after it. A fused block run's kernels write their error record
 * among these checks too, read with them (exec_cuda_impl.h
 * cuda_tier_block_record); a failure found after the block's end replays
 * it from the inputs its run handed over (executor.h ErrReplay). */
#ifndef RUNTIME_FUSED_CUDA_TIER_H
#define RUNTIME_FUSED_CUDA_TIER_H

#include <stdint.h>
#include <stdio.h>
#include "runtime/interp/interp.h"

typedef struct CudaTier CudaTier;

/* The device tier of the process's cuda executor, or NULL when it has
 * none ($VINTERP_DEVICE_TIER). */
CudaTier *cuda_tier_current(void);
/* The interpreter's hook (interp.h InterpDevFn); CTX is a CudaTier. */
int cuda_tier_op(void *ctx, Interp *it, const Instr *ins, int run);
/* Per opcode, 1 when cuda_tier_op wants to see it (interp.h dev_ops):
 * not the stack's moves, calls and branches' ends, the timers, which it
 * never runs and which have no operands (every instruction of a program
 * passes through the hook: bh_16k runs 17.7 M, 415 k of them on the
 * device). */
const uint8_t *cuda_tier_ops(void);
/* The interpreter's settle hook (interp.h InterpSettleFn): the pending
 * checks read (a wait when there are any), fatal at the first that failed. */
void cuda_tier_settle(void *ctx);

#endif

/* runtime/fused/cuda_tier_impl.h — the device tier's state, shared by
 * its three files: cuda_tier.c (placement, each instruction a primitive
 * call), cuda_tier_checks.c (the checks it leaves pending on the device
 * and reads later) and cuda_tier_report.c (its -d stats lines). Not for
 * other modules: they use cuda_tier.h. */
#ifndef RUNTIME_CUDA_TIER_IMPL_H
#define RUNTIME_CUDA_TIER_IMPL_H

#include "runtime/fused/cuda_tier.h"
#include "runtime/fused/cuda_guard.h"
#include "runtime/fused/exec_cuda_impl.h"
#include "runtime/fused/tuning.h"
#include "runtime/interp/interp.h"
#include "vcode/program.h"

/* Checks left pending on the device at once, at most. */
enum { DEFER_SLOTS = DEVICE_DEFER_SLOTS };

struct CudaTier {
    CudaExec *c;
    int64_t min;                        /* the placement threshold, elements */
    unsigned long long *fault_d;        /* the fault record of vk_map */
    VkShape *shape_d;                   /* a device descriptor's shape (vk_seg_shape) */
    int64_t ran[OP_COUNT];              /* instructions run here, by opcode */
    int64_t waits[OP_COUNT];            /* the host's waits in them, by opcode */
    int64_t fell[OP_COUNT], fell_bytes[OP_COUNT]; /* run on the host with device operands */
    int64_t up_count, up_bytes;         /* host vectors uploaded as operands */
    int64_t up_op[OP_COUNT], up_op_bytes[OP_COUNT]; /* the same by instruction */
    int op;                             /* the instruction running */
    int64_t dbytes;                     /* read and written in device memory by the primitives */
    int64_t in_place;                   /* elementwise results written over an argument */
    int64_t short_reads, short_bytes;   /* host instructions that read short device vectors */
    Interp *it;                         /* the interpreter of the last instruction (the read-ahead's stack) */
    int ahead_on;                       /* $VINTERP_DEVICE_READ_AHEAD */
    int64_t ahead_waits, ahead_vals, ahead_bytes; /* reads that brought back more (cuda_tier_read_ahead) */
    int64_t short_op[OP_COUNT], short_op_bytes[OP_COUNT]; /* the same by instruction */
    /* checks left pending on the device: their records and instructions */
    VkPermFault *pend_d;
    int npend, settling;
    const Program *pend_prog[DEFER_SLOTS];
    const Instr *pend_ins[DEFER_SLOTS];
    const char *pend_side[DEFER_SLOTS];
    int8_t pend_kind[DEFER_SLOTS];      /* PEND_PERMUTE, PEND_MAP, PEND_RAND, PEND_BLOCK, PEND_GUARD, PEND_POSITIONS */
    /* PEND_BLOCK: a fused block run's error record (of blk_d, zero until
     * a kernel fails, which ends the run: never cleared) and its replay
     * (NULL while the block runs: the backend's own replay is set then) */
    unsigned long long *blk_d;
    int nblk, last_check;               /* records of blk_d in use; 1 + the last other check's slot */
    int8_t pend_blk[DEFER_SLOTS];
    ErrReplay *pend_rp[DEFER_SLOTS];
    ErrReplay *done[DEFER_SLOTS];       /* replays read clean, to be dropped (cuda_tier_take_done) */
    int ndone;
    int64_t deferred, settles, settle_waits;
    int64_t taken; /* LENGTHS and MAKE_SEGDES given their argument's storage */
    int64_t blk_records, blk_deferred;  /* fused block runs' records; of them, left to a later wait */
    int64_t mem_declined[OP_COUNT];     /* left on the host: the device memory would not hold them */
    int64_t in_blocks[OP_COUNT];        /* of ran: a fused block's host steps (cuda_tier_meta_step) */
    /* EXTRACT's and REPLACE's positions uploaded lately (positions_up) */
    struct {
        int64_t *pd, *h, m; /* on the device (the executor's own memory) and the host's copy */
        uint64_t used;
    } kept[POS_KEPT];
    uint64_t kept_clock;
    int64_t pos_reused, pos_reused_bytes;
    /* IFs taken ahead of their condition (cuda_guard.h): PEND_GUARD
     * slots hold the condition (a device value) and the message */
    GuardCache *guards;
    int guards_on;
    Value *pend_cond[DEFER_SLOTS];
    const Value *pend_msg[DEFER_SLOTS];
    /* PEND_POSITIONS: EXTRACT's or REPLACE's indices (in pend_cond) and
     * descriptor held until read, for the message of a bad one */
    Value *pend_sd[DEFER_SLOTS];
    int ncond;                          /* values the slots hold (PEND_GUARD, PEND_POSITIONS) */
    int64_t pos_deferred;               /* PEND_POSITIONS slots left */
    int64_t guard_ifs;
};

/* What a pending record checks: a permute's indices (VkPermFault), an
 * elementwise instruction's faults (its ERR a vk_map fault record), RAND's
 * range step (the same, MOD by zero read as RAND's zero range), a fused
 * block's record, an IF taken ahead of its condition (PEND_GUARD: the
 * condition held, no record), EXTRACT's or REPLACE's indices on the device
 * (PEND_POSITIONS: ERR vk_seg_positions' record, the indices and the
 * descriptor held). */
enum { PEND_PERMUTE, PEND_MAP, PEND_RAND, PEND_BLOCK, PEND_GUARD, PEND_POSITIONS };

/* The checks' own state made and freed (cuda_tier_new, cuda_tier_free):
 * their records on the device, and T as the tier whose checks a fatal
 * error reads first (rt_set_pending_check). */
void tier_checks_init(CudaTier *t);
void tier_checks_free(CudaTier *t);
/* Read the pending records (AFTER_WAIT: the host waits next anyway, so
 * the read is not a wait of its own); fatal at the first that failed, in
 * the order they were left. */
void tier_settle(CudaTier *t, int after_wait);
/* A record for the check of the permute INS of IT (SIDE: the descriptor
 * its error names) or of KIND (PEND_*); all taken: the pending ones read
 * first (a wait). A fault record (PEND_MAP, PEND_RAND) is its ERR, set to
 * "none" here (a few bytes up, no wait). */
VkPermFault *tier_defer_slot(CudaTier *t, Interp *it, const Instr *ins, const char *side, int kind);
/* The condition C (the stack's reference, taken) of the IF INS taken
 * ahead (cuda_guard.h), held in a slot with its message MSG until the
 * next settle reads it. */
void tier_hold_guard(CudaTier *t, Interp *it, const Instr *ins, Value *c, const Value *msg);
/* A record for the check of EXTRACT's or REPLACE's indices IDX on the
 * device (vk_seg_positions' FAULT_D: its ERR), IDX and the descriptor SD
 * held (references taken here) until the next settle reads it. */
VkPermFault *tier_defer_positions(CudaTier *t, Interp *it, const Instr *ins, Value *idx, Value *sd);
/* The reference's message for EXTRACT's or REPLACE's bad index in
 * segment K of SD (IDX's element K read from wherever it is); does not
 * return. */
__attribute__((noreturn)) void tier_bad_position(CudaTier *t, Value *idx, Value *sd, int64_t k);
/* The memory reclaim while the tier runs (value.h mem_set_reclaim). */
int tier_reclaim(void);

#endif

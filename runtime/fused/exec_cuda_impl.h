/* runtime/fused/exec_cuda_impl.h — the cuda executor's device memory and
 * primitives as its device tier (cuda_tier.c) uses them; shared by those
 * two files and no one else. */
#ifndef RUNTIME_FUSED_EXEC_CUDA_IMPL_H
#define RUNTIME_FUSED_EXEC_CUDA_IMPL_H

#include "runtime/core/value.h"
#include "runtime/device/cuda_dev.h"
#include "runtime/fused/executor.h"

typedef struct CudaExec CudaExec;
typedef struct CudaTier CudaTier;

/* A value's device copy (Value.dev). */
typedef struct {
    void *d;            /* elements (a descriptor: its m lengths) */
    int64_t *off;       /* descriptor: m offsets (device), or NULL */
    int planted;        /* tests: D is the host's copy (plant_host_ptr): never freed or read back */
    void *chain;        /* pending: the chain that writes D (cuda_chain.h), or NULL */
    int32_t holds;      /* chains holding this value as a leaf */
} DevCopy;

/* The executor that owns the device (one per process), or NULL. */
CudaExec *cx_current(void);
/* Its primitives: timed, their pointers checked under
 * $VINTERP_CUDA_CHECK_PTRS. */
const VkLib *cx_lib(CudaExec *c);
/* Vector memory on the device (charged against -m's device ledger), and
 * the executor's own records (not charged); fatal on failure. */
void *cx_dalloc(CudaExec *c, size_t bytes);
void *cx_dalloc_fixed(CudaExec *c, size_t bytes);
/* A few bytes up without a wait; bytes down (waits: a sync). Counted. */
void cx_h2d_small(CudaExec *c, void *dst, const void *src, size_t bytes);
void cx_d2h(CudaExec *c, void *dst, const void *src, size_t bytes);
/* Bytes down right after a wait (the device idle: not counted as one). */
void cx_d2h_after_wait(CudaExec *c, void *dst, const void *src, size_t bytes);
void cx_h2d(CudaExec *c, void *dst, const void *src, size_t bytes);
/* Copies and clears on the device; device memory given back. */
void cx_d2d(CudaExec *c, void *dst, const void *src, size_t bytes);
void cx_memset0(CudaExec *c, void *dst, size_t bytes);
void cx_dfree(CudaExec *c, void *p);
/* A primitive waited to hand a number back (a sync). */
void cx_note_sync(CudaExec *c);
/* The host's waits so far (the syncs of -d stats). */
int64_t cx_syncs(const CudaExec *c);
/* V's device copy, uploaded (counted) when it has none. */
DevCopy *cx_on_device(CudaExec *c, Value *v);
/* A new vector of LEN elements of T whose contents will be on the device
 * only (its host copy stale). */
Value *cx_device_value(CudaExec *c, ValType t, int64_t len);
/* A new descriptor of M segments whose lengths and offsets will be on
 * the device only (its shape fields the caller's: seg_set_shape). */
Value *cx_device_segdes(CudaExec *c, int64_t m);
/* A new Int (T VT_INT) or descriptor (VT_SEGDES) of FROM's length with
 * FROM's device elements, taken from it (4-byte elements, FROM only the
 * stack's, no chain on it), or NULL: the caller copies them. */
Value *cx_device_take(CudaExec *c, Value *from, ValType t);
/* A primitive was called (the launch count); one failed (fatal). */
void cx_lib_called(CudaExec *c);
void cx_lib_fail(CudaExec *c, const char *what);
/* The tier read N fused block records (cuda_tier_block_record): the
 * running block's, if any, is gone (its next kernel takes a new one). */
void cx_block_records_read(CudaExec *c, int n);
/* The executor's device tier, or NULL. */
CudaTier *cx_tier(CudaExec *c);

/* The tier's side (cuda_tier.c): made with the placement threshold MIN
 * (elements), its -d stats lines, freed. */
CudaTier *cuda_tier_new(CudaExec *c, int64_t min);
/* Before the host reads anything back (a wait): the checks the tier left
 * pending on the device are read with it (cuda_tier.h cuda_tier_settle). */
void cuda_tier_before_wait(CudaTier *t);
void cuda_tier_report(const CudaTier *t, FILE *f);
/* The host waits to read V, a short vector only the device has: the other
 * such vectors to read in the same wait (at most MAX, into OUT; their
 * count). */
int cuda_tier_read_ahead(CudaTier *t, const Value *v, Value **out, int max);
/* A fused block's host step on metadata (OP_MAKE_SEGDES of lengths,
 * OP_LENGTHS of a descriptor) done on the device when its operand lives
 * there and is long (as the tier would run the instruction): the result,
 * which lives there too; NULL to leave it to the host. */
Value *cuda_tier_meta_step(CudaTier *t, int op, Value *arg);
/* Fused blocks' error records among the pending checks: a new record
 * (4 words, zero until a kernel fails; a settle first when every slot is
 * taken), for the running block's kernels; its replay R once the block
 * has ended (1; 0 when REC is no longer pending); the replays read clean,
 * one at a time (NULL: none), for the executor to drop between block
 * runs; every pending check read now (a wait when there are any). */
unsigned long long *cuda_tier_block_record(CudaTier *t);
int cuda_tier_block_defer(CudaTier *t, const unsigned long long *rec, ErrReplay *r);
ErrReplay *cuda_tier_take_done(CudaTier *t);
void cuda_tier_settle_now(CudaTier *t);
/* Bytes its primitives read and wrote in device memory so far (the model). */
int64_t cuda_tier_bytes(const CudaTier *t);
void cuda_tier_free(CudaTier *t);

#endif

/* runtime/fused/cuda_chain.h — the device tier's deferred elementwise
 * instructions: chains of them, each run as one kernel (kernels.h
 * vk_expr, vk_expr_reduce).
 *
 * An elementwise instruction the tier runs (cuda_tier.c), over operands
 * that live on the device alone or are lazy fills, and that cannot fail
 * (not an Int / or %), is not launched: its result is allocated as the
 * reference's would be (written over an argument only the stack holds,
 * else new, so that -m sees the same vectors) and becomes pending, a
 * value whose device copy (DevCopy.chain) is an output of a chain not run
 * yet. The next such instruction takes its operands' chains into one,
 * whatever else holds those operands (their values stay outputs of the
 * chain); its other operands become the chain's leaves (held until it
 * runs). A DIST is deferred as a chain too, its value operand a leaf
 * spread over the descriptor's segments (chain_dist), an INDEX as a node
 * over its start and stride so spread (chain_index), a LENGTHS as a copy
 * of its descriptor's lengths (chain_lengths), and a BPERMUTE,
 * its data a leaf read at the gathered positions (chain_gather). A chain
 * runs — one
 * launch reading each leaf once and writing each
 * output that still has a value once, the intermediate results in
 * registers — when anything else reads one of its values: another
 * instruction of the tier, a host instruction, a fused block (the
 * executor's flush before it binds its inputs), I/O, the host's copy
 * (value.h's to_host hook), the program's timers (exec_cuda_data.c), or when a
 * new instruction would take it past the kernel's bounds. Chains wanted
 * at the same time (an instruction's operands, every chain at once) of as
 * many elements run in one launch where the kernel's bounds allow (the
 * stats' "together"). A one-segment
 * reduction of a pending value runs with its chain (chain_reduce). A
 * chain whose outputs have all gone is dropped unrun (one with gathers
 * runs, for their check).
 *
 * What the reference sees is unchanged: an instruction that reads a leaf
 * of a chain first runs every chain when the stack alone would hold the
 * leaf without them, so that its count of references is the reference's
 * (an in-place write there decides as it does); a vector that does not fit
 * under -m (host or device ledger) first runs every chain, which lets the
 * leaves go (value.c mem_set_reclaim), so that the program runs out of
 * memory where the reference does and not before. One device per process:
 * the chains are the module's. */
#ifndef RUNTIME_FUSED_CUDA_CHAIN_H
#define RUNTIME_FUSED_CUDA_CHAIN_H

#include "runtime/core/value.h"
#include "runtime/fused/exec_cuda_impl.h"
#include "vcode/program.h"

/* 1 when instruction INS over V[0 .. NA) (the signature's order) can be
 * deferred: an elementwise instruction that cannot fail over operands
 * that are lazy fills or vectors of N > 0 elements on the device alone. */
int chain_takes(const Instr *ins, Value *const *v, int na, int64_t n);
/* Defer it (chain_takes said so): the result, of type RT and N elements,
 * pending; SELF (an index into V, or -1) the argument the reference would
 * write over (its storage becomes the result's, as cuda_tier.c's
 * in_place), else a new vector. The caller pops the arguments and pushes
 * the result. */
Value *chain_defer(CudaExec *c, const Instr *ins, Value *const *v, int na, ValType rt, int64_t n, int self);
/* 1 when the chains are on ($VINTERP_DEVICE_CHAINS). */
int chain_on(void);
/* DIST deferred: a new vector of N elements of T, pending, each element
 * its segment's of descriptor SD (on the device) — HELD's (a vector on the
 * device, one element a segment) or, when HELD is NULL, VAL's one value. */
Value *chain_dist(CudaExec *c, const VkArg *val, Value *held, Value *sd, ValType t, int64_t n);
/* INDEX deferred: a new Int vector of N elements, pending, element i of
 * segment s of descriptor SD (on the device, its offsets there) START's
 * element s + (i's position in s) * STRIDE's element s (each HELD's, a
 * vector on the device of one element a segment, or when it is NULL the
 * VkArg's one value). */
Value *chain_index(CudaExec *c, const VkArg *start, Value *start_held, const VkArg *stride, Value *stride_held,
                   Value *sd, int64_t n);
/* LENGTHS of descriptor SD (its lengths on the device, held elsewhere)
 * deferred: a new Int vector of its M elements, pending, a copy of them
 * in a chain (read where the chain reads it: an elementwise instruction
 * or a reduction over it copies nothing). */
Value *chain_lengths(CudaExec *c, Value *sd);
/* 1 when a BPERMUTE of DATA at IDX (source descriptor SSD, destination
 * DSD) can be deferred: DATA a vector with a whole device copy (or
 * pending: chain_gather runs it first), IDX such a vector, pending, or a
 * lazy fill, as many segments on each side. Its element is then a node
 * of a chain (kernels.h VK_EXPR_GATHER), DATA a leaf read at the gathered
 * positions, and the index check the chain's: a permute's record (the
 * tier's pending check, cuda_tier.c) that the chain's run writes. Every
 * gather of one chain has the same index and descriptors (the tuple's
 * fields of one NESL gather), so one record checks them all. */
int chain_gather_takes(const Value *data, const Value *idx, const Value *ssd, const Value *dsd);
/* 1 when that gather joins a chain with the same index and descriptors,
 * sharing its record (chain_gather then needs none). */
int chain_gather_joins(const Value *data, const Value *idx, const Value *ssd, const Value *dsd);
/* Defer it: R (new, IDX's length, DATA's type, on the device) pending;
 * REC the record of its check (NULL when chain_gather_joins said so), in
 * the tier's pending checks in program order: the chain must run before
 * the tier reads it (chain_force_checks). SSD's and DSD's device copies
 * exist when there are several segments. */
Value *chain_gather(Value *r, Value *data, Value *idx, Value *ssd, Value *dsd, VkPermFault *rec);
/* EXTRACT of one element (DATA's at POS, checked: the host's index)
 * deferred: a new vector of one element, pending, a chain of one copy
 * whose leaf is that element of DATA's device copy (DATA held), never
 * run on the host (which would read DATA back whole). When the host reads
 * one such value, the chains of one element pending with it run in the
 * same launch (chain_force: a chain's kin) and come back in one wait (the
 * tier's read-ahead): a tuple's fields read one EXTRACT after another,
 * one launch and one wait in all. chain_element_takes: 1 when DATA has a
 * whole device copy (or is pending: its chain runs first). */
int chain_element_takes(const Value *data);
Value *chain_element(CudaExec *c, Value *data, int64_t pos);
/* 1 when a scatter of DATA at IDX from descriptor SSD to DSD into N_DST
 * elements can be deferred into a scatter group — a PERMUTE (FILLED 0:
 * SSD and DSD its one descriptor, the unclaimed positions 0) or a
 * DPERMUTE into a lazy fill (FILLED 1) — : DATA and IDX vectors with
 * whole device copies (or pending: the caller runs their chains first),
 * as many segments on each side, few enough elements for one pass
 * (kernels/vk_count.h). The scatters at one index between the same
 * descriptors (the fields of a sequence of tuples, one after another) then
 * run as one launch (kernels.h vk_scatter_many, vk_scatter_fill_many: up
 * to VK_SCATTER_MANY vectors) when anything reads one of their results,
 * as a chain runs; a group is a chain of its own kind, never taken into
 * another, run whenever one of its results goes (for its check). */
int chain_scatter_takes(const Value *data, const Value *idx, const Value *ssd, const Value *dsd, int64_t n_dst,
                        int filled);
/* 1 when such a scatter joins a live group, sharing its record. */
int chain_scatter_joins(const Value *idx, const Value *ssd, const Value *dsd, int64_t n_dst, int filled);
/* Defer it: R (new, N_DST elements of DATA's type, on the device)
 * pending; FILL the fill's value (NULL: a PERMUTE); REC the record of its
 * check (NULL when chain_scatter_joins said so), in the tier's pending
 * checks in program order. The descriptors' device copies exist when
 * they have several segments. */
Value *chain_scatter(Value *r, Value *data, Value *idx, Value *ssd, Value *dsd, const VkArg *fill, VkPermFault *rec);
/* Every chain with a gather, and every scatter group, run now (before the
 * tier reads the pending records). A chain with a gather whose outputs
 * all go runs anyway, for its check. */
void chain_force_checks(void);
/* The chains of V[0 .. NA) run now, together where they may. */
void chain_force_operands(Value *const *v, int na);
/* Before an instruction that is not deferred reads V[0 .. NA): a pending
 * operand runs, and every chain runs when one of them is a leaf. */
void chain_settle_operands(Value *const *v, int na);
/* Before an instruction is deferred: every chain runs when one of V[0 ..
 * NA) is a leaf that only the stack would hold without the chains. */
void chain_settle_holds(Value *const *v, int na);
/* 1 when any chain is pending. */
int chain_any(void);
/* 1 when V is pending (its device copy not written yet). */
int chain_pending(const Value *v);
/* V's chain, when it has one, run now (the device copy then holds V). */
void chain_force(Value *v);
/* A reduction of pending V (one segment; ROP's result to OUT_D, on the
 * device) in the same launch as V's chain, which then is not written
 * unless something other than the stack holds V. */
void chain_reduce(Value *v, VsRop rop, void *out_d);
/* REPLACE of pending V's elements into device storage DST_D at positions
 * POS_D (V's length of them, distinct, on the device): V's chain runs now
 * with one output more, V's values written there as they are made (no
 * launch of a scatter of their own; V's own copy not written when only
 * the stack holds V). chain_put_takes: 1 when V is pending and its chain
 * can (an output free; DST_D neither a leaf's storage nor an output's). */
int chain_put_takes(const Value *v, const void *dst_d);
void chain_put(Value *v, void *dst_d, const int64_t *pos_d);
/* Every chain run now; how many there were. */
int chain_force_all(void);
/* V is being freed: when it is pending, its output goes from its chain
 * (its storage kept by the chain when a leaf reads it), and a chain with
 * no output left is dropped unrun, its leaves let go. */
void chain_drop(Value *v);
/* -d stats: instructions deferred; chains taken into another; chains
 * run; dropped unrun (every output gone); bytes the chains read and
 * wrote; cut at the kernel's bounds; outputs written; runs that were a
 * reduction's too; of the deferred, DISTs. */
typedef struct {
    int64_t deferred, merged, runs, dropped, bytes, full, outputs, reduced, spread;
    int64_t indexed;   /* of the deferred, INDEXes */
    int64_t host_runs; /* run on the host (chain_host_run), not among RUNS */
    int64_t puts;      /* of RUNS: a REPLACE's scatter with them (chain_put) */
    int64_t gathers, gather_joins; /* of the deferred, BPERMUTEs; of those, joining another's record */
    int64_t together;  /* chains run in another's launch, wanted at the same time (not among RUNS) */
    int64_t scatters, scatter_joins, scatter_runs; /* scatters deferred; of them, joining a group; groups run */
    int64_t elements;  /* of the deferred, EXTRACTs of one element (chain_element) */
} ChainStats;
const ChainStats *chain_stats(void);
/* A short chain run where its value is wanted. A chain of at most
 * HOST_MAX elements (chain_init) whose leaves are plain vectors and
 * scalars (no gathers, no leaves spread over segments, no output written
 * over a leaf) runs on the host when the host wants one of its values:
 * its vector leaves read back (a wait each whose host copy is stale, as
 * the host reading them would have waited), every output computed into
 * its host copy by the library's own elementwise code (kernels/vk_elem.h,
 * the semantics the device runs) and its device copy dropped — no launch.
 * A device instruction that reads it runs it on the device as before.
 * chain_host_run: 1 when V's chain ran so (V's host copy now holds it);
 * 0 when V is not pending or its chain does not qualify. */
int chain_host_run(Value *v);
/* Before a host instruction reads V[0 .. NA): chain_settle_operands, each
 * pending operand's chain run on the host when it qualifies, and a chain
 * holding an operand as a leaf (one the stack alone would hold without
 * the chains) the same. */
void chain_settle_for_host(Value *const *v, int na);
/* The module's memory reclaim (value.h mem_set_reclaim) on, for the run;
 * chains of at most HOST_MAX elements may run on the host (above). */
void chain_init(int64_t host_max);

#endif

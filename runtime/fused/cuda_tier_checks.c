/* runtime/fused/cuda_tier_checks.c — the checks the device tier leaves
 * pending on the device (cuda_tier_impl.h): permutes' indices, Int / and
 * %, RAND's range, EXTRACT's and REPLACE's indices, fused block runs'
 * error records and the conditions of IFs taken ahead, each in a slot, read together with a wait the host
 * makes anyway, in program order, the first failure reported as the
 * reference reports it. */
#include "runtime/fused/cuda_tier_impl.h"
#include "runtime/fused/cuda_chain.h"
#include "runtime/fused/kernel_fail.h"
#include "kernels/vk_elem.h"
#include "runtime/core/errors.h"
#include "runtime/interp/ops.h"
#include "runtime/interp/ops_io.h"
#include "runtime/interp/profile.h"

#include <stdlib.h>

/* The tier whose checks a fatal error must read first (one per process). */
static CudaTier *pending_tier;

static void run_replay(void *arg)
{
    ErrReplay *r = arg;
    r->replay(r);
}

/* BYTES of records down: a wait of their own unless *AFTER_WAIT (the
 * device idle already); it is, after. */
static void read_records(CudaTier *t, void *dst, const void *src, size_t bytes, int *after_wait)
{
    if (*after_wait) {
        cx_d2h_after_wait(t->c, dst, src, bytes);
    } else {
        cx_d2h(t->c, dst, src, bytes);
        t->settle_waits++;
        *after_wait = 1;
    }
}

/* An IF taken ahead (slot I) whose condition was true: what its THEN
 * branch does (cuda_guard.h), the message written and EXIT's end. */
static void guard_failed(CudaTier *t, int i)
{
    io_write_chars_stderr(t->pend_msg[i]);
    prof_report(stderr);
    fflush(stdout);
    fflush(stderr);
    rt_exit_status(0);
}

void tier_settle(CudaTier *t, int after_wait)
{
    if (t->npend == 0 || t->settling)
        return;
    t->settling = 1;
    chain_force_checks(); /* a chain's gathers write their record when it runs (cuda_chain.h) */
    int n = t->npend, nc = t->last_check, nb = t->nblk;
    VkPermFault rec[DEFER_SLOTS];
    unsigned long long blk[DEFER_SLOTS][4];
    if (nc > 0)
        read_records(t, rec, t->pend_d, (size_t)nc * sizeof rec[0], &after_wait);
    if (nb > 0) {
        read_records(t, blk, t->blk_d, (size_t)nb * sizeof blk[0], &after_wait);
        cx_block_records_read(t->c, nb);
    }
    int32_t cond[DEFER_SLOTS];
    for (int i = 0; i < n; i++)
        if (t->pend_kind[i] == PEND_GUARD)
            read_records(t, &cond[i], ((DevCopy *)t->pend_cond[i]->dev)->d, sizeof cond[i], &after_wait);
    t->settles++;
    t->npend = t->nblk = t->last_check = 0;
    for (int i = 0; i < n; i++) {
        if (t->pend_kind[i] == PEND_GUARD) {
            Value *c = t->pend_cond[i];
            t->pend_cond[i] = NULL;
            t->ncond--;
            val_release(c);
            if (cond[i] != 0)
                guard_failed(t, i);
            continue;
        }
        if (t->pend_kind[i] == PEND_POSITIONS) {
            Value *idx = t->pend_cond[i], *sd = t->pend_sd[i];
            t->pend_cond[i] = t->pend_sd[i] = NULL;
            t->ncond--;
            if (rec[i].err != ~0ull) {
                rt_set_where(t->pend_prog[i], t->pend_ins[i]);
                tier_bad_position(t, idx, sd, (int64_t)(rec[i].err >> 3));
            }
            val_release(idx);
            val_release(sd);
            continue;
        }
        if (t->pend_kind[i] == PEND_BLOCK) {
            unsigned long long *e = blk[t->pend_blk[i]];
            ErrReplay *r = t->pend_rp[i];
            if (!e[0])
                continue;
            if (r) { /* a block run that ended: its replay reports it */
                rt_set_where(r->prog, r->where);
                rt_set_replay(run_replay, r);
            }
            kernel_fail((int)e[0], (int64_t)e[1], (int64_t)e[2], (int64_t)e[3]);
        }
        if (rec[i].err == ~0ull)
            continue;
        rt_set_where(t->pend_prog[i], t->pend_ins[i]);
        if (t->pend_kind[i] != PEND_PERMUTE) {
            int code = (int)(rec[i].err & 7);
            if (t->pend_kind[i] == PEND_RAND && code == VS_MOD0)
                code = VS_RAND0;
            rt_fatal(vs_fault_format(code), (long long)(rec[i].err >> 3));
        }
        if (rec[i].err & 1)
            ops_permute_no_partner(rec[i].k, t->pend_side[i]);
        ops_permute_bad_index((int64_t)(rec[i].err >> 1), rec[i].j, rec[i].len);
    }
    /* clean: the replays are done with (dropped between block runs) */
    for (int i = 0; i < n; i++)
        if (t->pend_kind[i] == PEND_BLOCK && t->pend_rp[i]) {
            if (t->ndone < DEFER_SLOTS)
                t->done[t->ndone++] = t->pend_rp[i];
            else
                t->pend_rp[i]->drop(t->pend_rp[i]);
            t->pend_rp[i] = NULL;
        }
    t->settling = 0;
}

void cuda_tier_settle(void *ctx)
{
    chain_force_all(); /* I/O: what it reads written, and -m as the reference's */
    tier_settle(ctx, 0);
}
void cuda_tier_before_wait(CudaTier *t) { tier_settle(t, 1); }
static void settle_pending(void)
{
    if (pending_tier)
        tier_settle(pending_tier, 0);
}

/* The memory reclaim (value.h mem_set_reclaim) while the tier runs: every
 * chain run (cuda_chain.h), and the values the pending slots hold (IFs'
 * conditions, EXTRACT's and REPLACE's indices) read and let go (a wait), so that a program runs out of -m where the
 * reference does. 1 when something went. */
int tier_reclaim(void)
{
    int n = chain_force_all();
    if (pending_tier && pending_tier->ncond > 0) {
        tier_settle(pending_tier, 0);
        n++;
    }
    return n > 0;
}

VkPermFault *tier_defer_slot(CudaTier *t, Interp *it, const Instr *ins, const char *side, int kind)
{
    if (t->npend == DEFER_SLOTS)
        tier_settle(t, 0);
    int i = t->npend++;
    t->last_check = i + 1;
    t->pend_prog[i] = it->prog;
    t->pend_ins[i] = ins;
    t->pend_side[i] = side;
    t->pend_kind[i] = (int8_t)kind;
    t->deferred++;
    if (kind != PEND_PERMUTE) {
        unsigned long long none = VK_NO_FAULT;
        cx_h2d_small(t->c, &t->pend_d[i].err, &none, sizeof none);
    }
    return t->pend_d + i;
}

unsigned long long *cuda_tier_block_record(CudaTier *t)
{
    if (t->npend == DEFER_SLOTS)
        tier_settle(t, 0);
    int i = t->npend++, j = t->nblk++;
    t->pend_kind[i] = PEND_BLOCK;
    t->pend_blk[i] = (int8_t)j;
    t->pend_rp[i] = NULL;
    t->blk_records++;
    return t->blk_d + 4 * j;
}

int cuda_tier_block_defer(CudaTier *t, const unsigned long long *rec, ErrReplay *r)
{
    for (int i = t->npend - 1; i >= 0; i--)
        if (t->pend_kind[i] == PEND_BLOCK && t->blk_d + 4 * t->pend_blk[i] == rec) {
            t->pend_rp[i] = r;
            t->blk_deferred++;
            return 1;
        }
    return 0;
}

ErrReplay *cuda_tier_take_done(CudaTier *t) { return t->ndone ? t->done[--t->ndone] : NULL; }

void cuda_tier_settle_now(CudaTier *t) { tier_settle(t, 0); }

VkPermFault *tier_defer_positions(CudaTier *t, Interp *it, const Instr *ins, Value *idx, Value *sd)
{
    VkPermFault *rec = tier_defer_slot(t, it, ins, NULL, PEND_POSITIONS);
    int i = t->npend - 1;
    t->pend_cond[i] = val_ref(idx);
    t->pend_sd[i] = val_ref(sd);
    t->ncond++;
    t->pos_deferred++;
    return rec;
}

/* Element K of the Int vector or descriptor V, wherever it is (a wait when
 * only the device has it). */
static int32_t int_at(CudaTier *t, Value *v, int64_t k)
{
    if (v->lazy)
        return v->fill.i;
    int32_t x;
    if (v->dev && v->hstale)
        cx_d2h(t->c, &x, (const int32_t *)((DevCopy *)v->dev)->d + k, sizeof x);
    else
        x = ((const int32_t *)v->data)[k];
    return x;
}

void tier_bad_position(CudaTier *t, Value *idx, Value *sd, int64_t k)
{
    int32_t ix = int_at(t, idx, k), len = int_at(t, sd, k);
    ops_bad_segment_index(k, ix, len > 0 ? len : 0);
}

void tier_hold_guard(CudaTier *t, Interp *it, const Instr *ins, Value *c, const Value *msg)
{
    if (t->npend == DEFER_SLOTS)
        tier_settle(t, 0);
    int i = t->npend++;
    t->pend_kind[i] = PEND_GUARD;
    t->pend_prog[i] = it->prog;
    t->pend_ins[i] = ins;
    t->pend_side[i] = NULL;
    t->pend_cond[i] = c;
    t->pend_msg[i] = msg;
    t->ncond++;
}

void tier_checks_init(CudaTier *t)
{
    t->pend_d = cx_dalloc_fixed(t->c, DEFER_SLOTS * sizeof *t->pend_d);
    t->blk_d = cx_dalloc_fixed(t->c, DEFER_SLOTS * 4 * sizeof *t->blk_d);
    cx_memset0(t->c, t->blk_d, DEFER_SLOTS * 4 * sizeof *t->blk_d);
    pending_tier = t;
    rt_set_pending_check(settle_pending);
}

void tier_checks_free(CudaTier *t)
{
    if (pending_tier == t) {
        pending_tier = NULL;
        rt_set_pending_check(NULL);
    }
    cx_dfree(t->c, t->pend_d);
    cx_dfree(t->c, t->blk_d);
    for (ErrReplay *r; (r = cuda_tier_take_done(t));)
        r->drop(r);
    for (int i = 0; i < t->npend; i++) {
        if (t->pend_kind[i] == PEND_BLOCK && t->pend_rp[i])
            t->pend_rp[i]->drop(t->pend_rp[i]);
        if ((t->pend_kind[i] == PEND_GUARD || t->pend_kind[i] == PEND_POSITIONS) && t->pend_cond[i])
            val_release(t->pend_cond[i]);
        if (t->pend_kind[i] == PEND_POSITIONS && t->pend_sd[i])
            val_release(t->pend_sd[i]);
    }
}

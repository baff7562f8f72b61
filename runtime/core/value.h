/* runtime/core/value.h — run-time values: typed vectors with reference counts,
 * segment descriptors and pairs, and the accounting of vector memory (-m).
 *
 * Element storage: INT and BOOL are int32_t (BOOL holds 0/1), FLOAT is
 * double, a SEGDES holds its m segment lengths as int32_t. A scalar is a
 * vector of length 1. Values are immutable once pushed; an op may write its
 * result into an argument only when that argument's count is 1 (val_unique). */
#ifndef RUNTIME_VALUE_H
#define RUNTIME_VALUE_H

#include "runtime/core/tuning.h"
#include <stdint.h>
#include <stddef.h>

typedef enum { VT_INT = 0, VT_BOOL, VT_FLOAT, VT_SEGDES, VT_PAIR } ValType;

typedef struct Value Value;
struct Value {
    int32_t rc;         /* references: stack entries, pairs, constant table */
    uint8_t type;       /* ValType */
    uint8_t sane;       /* SEGDES: every length >= 0 */
    uint8_t shaped;     /* SEGDES: minl and maxl are set (seg_finish) */
    uint8_t donated;    /* offered as a kernel's result storage (val_donate) */
    uint8_t sclass;     /* the small-block size class it came from (value.c), 0: none */
    uint8_t lazy;       /* a fill not made yet: every element is `fill`, data is NULL
                           (val_new_fill); charged as if it were made */
    uint8_t ext;        /* data is a block of its own (a fill made late), not
                           the storage behind the header */
    uint8_t ghost;      /* freed as far as -m knows, kept for a replay (held) */
    uint8_t nohost;     /* no host storage yet (val_new_remote): data is NULL
                           until val_host_storage gives it a block of its own */
    uint16_t held;      /* replays that hold it (val_hold; not references) */
    int64_t len;        /* elements; for SEGDES the number of segments m */
    int64_t units;      /* vector memory charged, in 8-byte units */
    void *data;         /* int32_t* or double*; NULL when len == 0 or lazy */
    union {
        double f;
        int32_t i;
    } fill;             /* lazy: the value of every element */
    /* SEGDES only */
    int64_t n;          /* total element count, the sum of the lengths */
    int32_t minl, maxl; /* shortest and longest segment (when shaped; 0 for
                           no segments): minl == maxl is a uniform descriptor,
                           which the reference's loops take without a
                           per-segment branch */
    int64_t *offs;      /* cached exclusive offsets (m entries), or NULL */
    /* PAIR only */
    Value *fst, *snd;
    /* A device copy (owned by the device layer, see val_set_device) and
     * whether the host copy at data is out of date (only the device copy
     * holds the contents). */
    void *dev;
    uint8_t hstale;
#ifdef VINTERP_VALUE_REGISTRY
    Value *reg_prev, *reg_next;     /* the list of live values */
#endif
};

#define VI(v) ((int32_t *)(v)->data)
#define VF(v) ((double *)(v)->data)

/* Memory accounting. The limit is in 8-byte units as for the classic -m;
 * every live vector is charged as the classic charges it (Int/Bool/Segdes
 * ceil(len/2), Float len). */
void mem_set_limit(int64_t units);
int64_t mem_used(void);
int64_t mem_limit(void);
int64_t val_units(ValType t, int64_t len);
/* Held for a replay. A fused block's inputs are held while its kernels'
 * checks wait on the device (backend.c): held is not a reference, so
 * the counts, and what may be written in place, stay the reference's.
 * A held value whose count falls to 0 is freed as far as -m (host and
 * device) knows, and kept until its last holder lets go (val_unhold).
 * Before one is written in place, the checks are read (val_unique calls
 * val_settle_held, rt_settle_pending): its holder is then done with it.
 * val_ghost_bytes: the bytes of values kept that way. Not pairs. */
void val_hold(Value *v);
void val_unhold(Value *v);
void val_settle_held(void);
int64_t val_ghost_bytes(void);
/* The units in use set to UNITS, as they were when a block began whose
 * failure is replayed after later instructions ran (the run ends with
 * the replay). */
void mem_replay_at(int64_t units);
/* Stop counting UNITS that stay allocated: a fused block that failed gives
 * up its intermediates before the reference replays it (rt_set_replay), so
 * that the replay sees the memory the reference would. */
void mem_uncharge(int64_t units);
/* The largest mem_used() since mem_peak_reset: a fused block runs with the
 * limit raised and compares its peak with -m at its end (backend.c). */
void mem_peak_reset(void);
int64_t mem_peak(void);
/* Host vectors, and the device's ledger, may use UNITS beyond -m (0:
 * none): the fused block's raised limit. Messages still name -m. The
 * block's host peak decides whether it is run again on the reference
 * (backend.c); its device copies and scratch, which the reference does not
 * have, are bounded by -m plus the headroom within a block, by -m between
 * blocks (tsg_other_ops_test under the emulated device: 6003 device units
 * in use at ref's smallest -m, 6651, and a block's scratch on top). */
void mem_set_headroom(int64_t units);
/* Host memory outside values that grows with the data (kernel scratch,
 * the evaluator's tables, descriptor offsets) is charged against the same
 * limit, in 8-byte units rounded up (mem_bytes_units): mem_alloc_charged
 * takes BYTES (at least 1), fatal with the same message as a vector that
 * does not fit (WHAT, may be NULL, names it); mem_free_charged(P, BYTES)
 * with the same BYTES frees it and gives the charge back. */
int64_t mem_bytes_units(int64_t bytes);
void *mem_alloc_charged(int64_t bytes, const char *what);
void mem_free_charged(void *p, int64_t bytes);
/* FN lets go of memory held for later (the device tier's pending chains
 * and their leaves): called once before a charge of either ledger would
 * fail, the charge then tried again; it returns 1 when it let go of any.
 * Results must not depend on whether it ran (only the memory in use). */
void mem_set_reclaim(int (*fn)(void));
/* Device memory (a device executor's copies and temporaries) has a ledger
 * of its own with the same limit: -m bounds the host and the device side
 * each. */
void mem_dev_charge_bytes(int64_t bytes, const char *what);
void mem_dev_uncharge_bytes(int64_t bytes);
/* Units the device ledger holds now. */
int64_t mem_dev_used(void);
/* The device's own size (BYTES: $VINTERP_DEVICE_MEM, a card smaller than
 * -m): the device ledger's limit is the smaller of the two. The bytes the
 * device ledger can still take (the device tier places what does not fit
 * on the host). */
void mem_dev_set_capacity(int64_t bytes);
int64_t mem_dev_room_bytes(void);

/* New vector of LEN elements with rc 1; contents uninitialised (zeroed for
 * LEN elements when ZERO). Fatal (through rt_fatal) when -m would be
 * exceeded or LEN is negative or absurd. */
Value *val_new(ValType t, int64_t len);
Value *val_new_zero(ValType t, int64_t len);
/* A vector (or descriptor) whose contents a device copy alone will hold
 * (the caller attaches it and sets hstale): charged against -m as
 * val_new, but its host storage is allocated only when the host first
 * needs it (val_host_storage; val_for_host and val_drop_device do it
 * before the device layer's to_host): a device result the host never
 * reads costs no host memory and no page faults. */
Value *val_new_remote(ValType t, int64_t len);
/* Made by val_new_remote with elements, and given host storage later
 * (-d stats; the tests see a device result the host never reads stay
 * without). */
extern int64_t val_remote_made, val_remote_hosted;
/* V's host storage, allocated now if V has none yet (nohost); a no-op
 * otherwise. Fatal when the host has no memory for it. */
void val_host_storage(Value *v);
/* Lazy fills. DIST of one value into one long segment (NESL's constants:
 * `x * 2.0` is a DIST then a `*`) need not write the vector: a vector
 * of T (not a descriptor) with LEN elements, each *X (an int32_t or a
 * double), is made with no storage (lazy, charged against -m as if it
 * had it) when LEN >= val_lazy_min (VAL_LAZY_MIN; $VINTERP_LAZY_MIN sets
 * it, for the tests, down to 1) and val_lazy_on, else filled at once.
 * The elementwise instructions read a lazy argument as a scalar
 * (ops.h ops_lazy_aware); every other reader of v->data makes the fill
 * first through val_for_host (the interpreter does it for an
 * instruction's operands, the fused backends for a block's inputs).
 * val_lazy_live counts the lazy values alive, so that nothing is looked
 * at while it is 0. $VINTERP_LAZY=0 or --check turn lazy fills off
 * (val_lazy_on = 0). */
/* VAL_LAZY_MIN: runtime/core/tuning.h */
extern int val_lazy_on;
extern int64_t val_lazy_min;
extern int64_t val_lazy_live;
/* Lazy fills made, and made lazily that were written out later (-d stats). */
extern int64_t val_lazy_made, val_lazy_written;
Value *val_new_fill(ValType t, int64_t len, const void *x);
/* Make lazy V's fill now (pairs: their components); V stays where it is. */
void val_unlazy(Value *v);
/* V (a fresh vector only the caller holds, no device copy) with LEN
 * elements, the first min(LEN, old length) kept: input grows its vector in
 * place instead of a buffer that is copied. Charges or gives back the
 * difference (fatal past -m); V may move. */
Value *val_resize(Value *v, int64_t len);
/* New segment descriptor with M segments; lengths uninitialised; call
 * seg_finish after filling them. */
Value *seg_new(int64_t m);
/* MAKE_SEGDES: the descriptor of the Int lengths L, made by retagging L in
 * place when REUSE (the caller holds L alone; a new reference), else a
 * copy. */
Value *seg_of_lengths(Value *l, int reuse);
/* LENGTHS: the Int lengths of descriptor SD, made by retagging SD in place
 * when REUSE (the caller holds SD alone; a new reference), else a copy. */
Value *lengths_of_seg(Value *sd, int reuse);
/* Compute n, sanity and the shortest and longest length after the lengths
 * are written. Fatal when the total overflows 32 bits. */
void seg_finish(Value *sd);
/* The same from the total N and the shortest and longest length LO, HI,
 * found elsewhere (a descriptor whose lengths live on the device). */
void seg_set_shape(Value *sd, int64_t n, int32_t lo, int32_t hi);
/* Exclusive offsets of the segments (cached; charged against -m while
 * cached, but for one segment). seg_drop_offsets forgets them. */
const int64_t *seg_offsets(Value *sd);
/* The same offsets written to OUT (SD's m entries), nothing cached or
 * charged: for a copy made and let go (the device's upload). */
void seg_offsets_into(const Value *sd, int64_t *out);
void seg_drop_offsets(Value *sd);
/* Checks that every non-empty segment lies inside [0, n) — always true when
 * sd->sane. Returns 0 when fine. */
int seg_check_ranges(Value *sd);

/* L when every segment of SD is L > 0 long (known from seg_finish), else
 * 0: generated code then finds an element's segment by a division. */
int64_t seg_uniform_len(const Value *sd);

Value *val_pair(Value *a, Value *b);   /* takes both references */

static inline Value *val_ref(Value *v) { v->rc++; return v; }

/* In-place results. The backend offers the storage of an argument that
 * nothing else holds to the kernel step that reads it last (val_donate:
 * a flagged reference in the result's slot); the step's allocation takes
 * it when it has LEN elements of T's size (val_take_donation: a new
 * reference, retyped to T, the flag cleared), else returns NULL and the
 * step allocates as usual. A host writer then drops any device copy
 * (val_drop_device). */
static inline Value *val_donate(Value *v) { v->donated = 1; return val_ref(v); }
Value *val_take_donation(Value *slot, ValType t, int64_t len);
void val_free(Value *v);
/* Configure the heap vectors live in (once, before the first vector):
 * memory freed stays with the process, as the classic's vector heap. */
void mem_init(void);
static inline void val_release(Value *v) { if (--v->rc == 0) val_free(v); }

/* Device copies. A device executor registers how to bring a stale host
 * copy up to date and how to free a device copy; from then on every host
 * use of a value's contents goes through val_for_host. Values start with
 * a valid host copy and no device copy. */
typedef struct {
    void (*to_host)(Value *v);      /* fill v->data (allocated first: val_host_storage) from v->dev; clears hstale */
    void (*release)(Value *v);      /* free v->dev (v is being freed or rewritten) */
    /* elements POS[0..M) of v->dev to BUF (WRITE = 0) or from BUF (WRITE
     * = 1), BUF holding M elements of v's element size */
    void (*elems)(Value *v, const int64_t *pos, int64_t m, void *buf, int write);
    /* stop charging v->dev against the device ledger (val_stop_charging) */
    void (*uncharge)(Value *v);
} ValDevice;
void val_set_device(const ValDevice *d);
/* 1 once a device layer is registered (host uses must then sync). */
extern int val_device_on;
/* Make V's host copy valid (pairs: both components). When V has a single
 * reference the host may overwrite it in place, so its device copy is
 * dropped. */
void val_for_host_slow(Value *v);
static inline void val_for_host(Value *v)
{
    if (val_lazy_live && (v->lazy || v->type == VT_PAIR))
        val_unlazy(v);
    if (val_device_on && (v->dev || v->hstale || v->type == VT_PAIR))
        val_for_host_slow(v);
}
/* The same for the device side only: a lazy V stays lazy (an instruction
 * that reads lazy arguments as scalars). */
static inline void val_for_host_keep_lazy(Value *v)
{
    if (val_device_on && (v->dev || v->hstale || v->type == VT_PAIR))
        val_for_host_slow(v);
}
/* V's host copy is about to be written in place: make it valid and drop
 * its device copy whatever its count of references. */
void val_drop_device(Value *v);
/* 1 when V (not a pair) has a device copy that val_dev_elems can reach. */
int val_on_device(const Value *v);
/* Elements POS[0..M) of V's device copy to BUF, or from BUF with WRITE (a
 * few elements: REPLACE in place on a value that stays on the device). */
void val_dev_elems(Value *v, const int64_t *pos, int64_t m, void *buf, int write);
/* 1 when V can be overwritten in place (only the caller holds it); a
 * held one's checks read first. */
static inline int val_unique(const Value *v)
{
    if (v->rc == 1 && v->held)
        val_settle_held();
    return v->rc == 1;
}

#ifdef VINTERP_VALUE_REGISTRY
/* Built with -DVINTERP_VALUE_REGISTRY (the fuzz harness; nothing else),
 * every live value is on a list. val_live_count: how many there are.
 * val_reclaim_all: free every one of them whatever its count (the values
 * a run abandoned when a fatal error longjmp'ed out of it) and clear the
 * memory accounting. */
int64_t val_live_count(void);
void val_reclaim_all(void);
#endif

/* Element size in bytes (4 or 8); 0 for pairs. */
static inline size_t val_esize(ValType t) { return t == VT_FLOAT ? 8 : (t == VT_PAIR ? 0 : 4); }

/* "Int", "Bool", "Float", "Segdes", "Pair" */
const char *val_type_name(ValType t);

#endif

/* runtime/core/value.c — vectors, descriptors, pairs and -m accounting. */
#define _GNU_SOURCE
#include "runtime/core/value.h"
#include "runtime/core/errors.h"
#include "runtime/core/par.h"
#include "runtime/core/vheap.h"

#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <malloc.h>

static int64_t limit_units = 1000000;
static int64_t used_units;
static int64_t peak_units;  /* mem_peak */
static int64_t extra_units; /* mem_set_headroom */

void mem_set_limit(int64_t units) { limit_units = units; }
int64_t mem_used(void) { return used_units; }
int64_t mem_limit(void) { return limit_units; }

int64_t val_units(ValType t, int64_t len)
{
    if (t == VT_FLOAT)
        return len;
    if (t == VT_PAIR)
        return 0;
    return (len + 1) / 2;
}

static ValDevice device_ops;
int val_device_on;

void val_set_device(const ValDevice *d)
{
    if (d) {
        device_ops = *d;
        val_device_on = 1;
    } else {
        memset(&device_ops, 0, sizeof device_ops);
        val_device_on = 0;
    }
}

void val_for_host_slow(Value *v)
{
    while (v) {
        if (v->type == VT_PAIR) {
            if (v->fst)
                val_for_host_slow(v->fst);
            v = v->snd;
            continue;
        }
        if (v->hstale && device_ops.to_host) {
            val_host_storage(v);
            device_ops.to_host(v);
        }
        if (v->dev && v->rc == 1 && device_ops.release)
            device_ops.release(v);
        return;
    }
}

void val_drop_device(Value *v)
{
    if (!val_device_on || v->type == VT_PAIR)
        return;
    if (v->hstale && device_ops.to_host) {
        val_host_storage(v);
        device_ops.to_host(v);
    }
    if (v->dev && device_ops.release)
        device_ops.release(v);
}

int val_on_device(const Value *v)
{
    return val_device_on && v->type != VT_PAIR && v->dev && device_ops.elems;
}

void val_dev_elems(Value *v, const int64_t *pos, int64_t m, void *buf, int write)
{
    if (m > 0)
        device_ops.elems(v, pos, m, buf, write);
}

void mem_peak_reset(void) { peak_units = used_units; }
void mem_set_headroom(int64_t units) { extra_units = units > 0 ? units : 0; }
int64_t mem_peak(void) { return peak_units > used_units ? peak_units : used_units; }

void mem_uncharge(int64_t units)
{
    used_units -= units < used_units ? units : used_units;
}

void mem_replay_at(int64_t units) { used_units = units; }

static void out_of_memory(const char *side, const char *what, int64_t units, int64_t used)
{
    rt_fatal("ran out of vector memory.  Rerun using larger -m argument. "
             "(%s%s%s%lld units needed, %lld of %lld in use)",
             side, what ? what : "", what ? ": " : "", (long long)units, (long long)used, (long long)limit_units);
}

static int (*reclaim_fn)(void);

void mem_set_reclaim(int (*fn)(void)) { reclaim_fn = fn; }

/* Memory held for later (mem_set_reclaim) let go before a charge fails:
 * 1 when some was. */
static int reclaim(void)
{
    static int busy;
    if (!reclaim_fn || busy)
        return 0;
    busy = 1;
    int r = reclaim_fn();
    busy = 0;
    return r;
}

/* Charge UNITS for WHAT (NULL: a vector). */
static void charge_for(int64_t units, const char *what)
{
    if (units > limit_units + extra_units - used_units && (!reclaim() || units > limit_units + extra_units - used_units))
        out_of_memory("", what, units, used_units);
    used_units += units;
    if (used_units > peak_units)
        peak_units = used_units;
}

static void charge(int64_t units) { charge_for(units, NULL); }

int64_t mem_bytes_units(int64_t bytes) { return bytes > 0 ? (bytes + 7) / 8 : 0; }

void *mem_alloc_charged(int64_t bytes, const char *what)
{
    if (bytes < 1)
        bytes = 1;
    charge_for(mem_bytes_units(bytes), what);
    void *p = malloc((size_t)bytes);
    if (!p) {
        mem_uncharge(mem_bytes_units(bytes));
        rt_fatal("out of host memory for %lld bytes of %s", (long long)bytes, what ? what : "vector memory");
    }
    return p;
}

void mem_free_charged(void *p, int64_t bytes)
{
    free(p);
    mem_uncharge(mem_bytes_units(bytes < 1 ? 1 : bytes));
}

static int64_t dev_used_units;

static int64_t dev_cap_units = INT64_MAX; /* mem_dev_set_capacity */

void mem_dev_set_capacity(int64_t bytes) { dev_cap_units = mem_bytes_units(bytes); }

static int64_t dev_limit_units(void)
{
    int64_t l = limit_units + extra_units;
    return dev_cap_units < l ? dev_cap_units : l;
}

int64_t mem_dev_room_bytes(void)
{
    int64_t room = dev_limit_units() - dev_used_units;
    return room > 0 ? room * 8 : 0;
}

void mem_dev_charge_bytes(int64_t bytes, const char *what)
{
    int64_t units = mem_bytes_units(bytes);
    if (units > dev_limit_units() - dev_used_units && (!reclaim() || units > dev_limit_units() - dev_used_units))
        out_of_memory("device: ", what, units, dev_used_units);
    dev_used_units += units;
}

int64_t mem_dev_used(void) { return dev_used_units; }

void mem_dev_uncharge_bytes(int64_t bytes)
{
    int64_t units = mem_bytes_units(bytes);
    dev_used_units -= units < dev_used_units ? units : dev_used_units;
}

/* The offsets of a one-segment descriptor: no allocation, no charge. */
static int64_t one_segment_offs[1];

static void drop_offsets(Value *sd)
{
    if (sd->offs && sd->offs != one_segment_offs)
        mem_free_charged(sd->offs, sd->len * (int64_t)sizeof(int64_t));
    sd->offs = NULL;
}

void seg_drop_offsets(Value *sd) { drop_offsets(sd); }

static int64_t ghost_bytes;

static int64_t held_bytes_of(const Value *v) { return v->len * (int64_t)val_esize((ValType)v->type); }

void val_hold(Value *v)
{
    if (v->type == VT_PAIR || v->held == UINT16_MAX)
        rt_fatal("internal error: a pair, or a value held too often, held for a replay");
    v->held++;
}

/* Freed as far as -m knows (its count fell to 0 while held). */
static void val_ghost(Value *v)
{
    if (v->ghost)
        return;
    v->ghost = 1;
    drop_offsets(v);
    used_units -= v->units < used_units ? v->units : used_units;
    v->units = 0;
    if (v->dev && device_ops.uncharge)
        device_ops.uncharge(v);
    ghost_bytes += held_bytes_of(v);
}

void val_unhold(Value *v)
{
    if (--v->held == 0 && v->rc == 0)
        val_free(v);
}

void val_settle_held(void) { rt_settle_pending(); }

int64_t val_ghost_bytes(void) { return ghost_bytes; }

/* Largest vector we accept: 2^31-1 elements, as the classic (int lengths). */
#define MAX_LEN INT64_C(2147483647)

/* Vector storage: vectors of vheap_min bytes and more in the vector heap
 * (vheap.h), the others on the C library's heap, configured once
 * (mem_init) the way the classic's fixed vector heap behaves: freed memory
 * stays with the process for the next vector instead of going back to the
 * system, so that a page is faulted in and cleared once per run, not once
 * per vector (bh_16k: 182000 page faults -> 3000, as the classic). A fresh
 * stretch of that heap under a vector of POPULATE_MIN bytes or more is
 * faulted in at once (mem_fault_in): only memory past the highest address
 * done so far (below it the heap's pages are present: it is never
 * trimmed). */
#define POPULATE_MIN ((size_t)256 << 10)
static uintptr_t populated_to;

static void prefault(void *block, size_t bytes)
{
    if (bytes < POPULATE_MIN)
        return;
    uintptr_t page = 4096, a = (uintptr_t)block, e = a + bytes;
    if (e <= populated_to)
        return;
    if (a < populated_to)
        a = populated_to;
    a = (a + page - 1) & ~(page - 1);
    e &= ~(page - 1);
    if (e > a && mem_fault_in((void *)a, e - a) == 0)
        populated_to = e;
}

void mem_init(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    mallopt(M_MMAP_MAX, 0);                 /* big vectors from the heap too */
    mallopt(M_TRIM_THRESHOLD, INT_MAX);     /* never give the top back */
}

/* Small blocks (header and elements together up to SMALL_MAX bytes:
 * scalars and short vectors, most of what NESL programs allocate) go back
 * on a list per size class for the next vector of that size, which skips
 * malloc's slower paths (glibc keeps only 7 blocks of a size at hand:
 * bh_16k allocates 2.5 million vectors). At most SMALL_KEEP bytes are
 * kept; values are made and freed on the main thread only (as the
 * accounting of -m above). */
#define SMALL_STEP 32
#define SMALL_MAX 1024
#define SMALL_CLASSES (SMALL_MAX / SMALL_STEP)
#define SMALL_KEEP ((size_t)256 << 10)

typedef struct SmallBlock {
    struct SmallBlock *next;
} SmallBlock;
static SmallBlock *small_list[SMALL_CLASSES];
static size_t small_kept;

/* A block of TOTAL bytes; *CLS the class to give back to block_free.
 * Big blocks come from the vector heap (vheap.h), else from malloc with
 * their fresh pages faulted in at once. */
static void *block_alloc(size_t total, uint8_t *cls)
{
    if (total > SMALL_MAX) {
        *cls = 0;
        void *p = total >= vheap_min ? vheap_alloc(total) : NULL;
        if (!p && (p = malloc(total)))
            prefault(p, total);
        return p;
    }
    size_t c = (total + SMALL_STEP - 1) / SMALL_STEP; /* 1 .. SMALL_CLASSES */
    *cls = (uint8_t)c;
    SmallBlock *b = small_list[c - 1];
    if (b) {
        small_list[c - 1] = b->next;
        small_kept -= c * SMALL_STEP;
        return b;
    }
    return malloc(c * SMALL_STEP);
}

static void block_free(void *p, uint8_t cls)
{
    if (vheap_owns(p)) {
        vheap_free(p);
        return;
    }
    if (cls && small_kept + (size_t)cls * SMALL_STEP <= SMALL_KEEP) {
        SmallBlock *b = p;
        b->next = small_list[cls - 1];
        small_list[cls - 1] = b;
        small_kept += (size_t)cls * SMALL_STEP;
        return;
    }
    free(p);
}

#ifdef VINTERP_VALUE_REGISTRY
static Value *reg_head;
static int64_t reg_count;

static void reg_link(Value *v)
{
    v->reg_prev = NULL;
    v->reg_next = reg_head;
    if (reg_head)
        reg_head->reg_prev = v;
    reg_head = v;
    reg_count++;
}

static void reg_unlink(Value *v)
{
    if (v->reg_prev)
        v->reg_prev->reg_next = v->reg_next;
    else
        reg_head = v->reg_next;
    if (v->reg_next)
        v->reg_next->reg_prev = v->reg_prev;
    reg_count--;
}

int64_t val_live_count(void) { return reg_count; }

void val_reclaim_all(void)
{
    while (reg_head) {
        Value *v = reg_head;
        reg_unlink(v);
        /* A pair's components are on the list themselves. */
        if (v->type != VT_PAIR) {
            drop_offsets(v);
            if (v->ext)
                block_free(v->data, 0);
        }
        block_free(v, v->sclass);
    }
    used_units = 0;
    dev_used_units = 0;
    val_lazy_live = 0;
}
#else
#define reg_link(v) ((void)0)
#define reg_unlink(v) ((void)0)
#endif

/* LEN elements of T, charged; ZERO: cleared; !HOST: the header alone
 * (val_new_remote). */
static Value *alloc_value(ValType t, int64_t len, int zero, int host)
{
    if (len < 0)
        rt_fatal("negative vector length %lld", (long long)len);
    if (len > MAX_LEN)
        rt_fatal("vector length %lld is too large", (long long)len);
    int64_t units = val_units(t, len);
    charge(units);
    size_t bytes = host ? (size_t)len * val_esize(t) : 0;
    uint8_t cls;
    Value *v = block_alloc(sizeof *v + bytes, &cls);
    if (!v) {
        used_units -= units;
        rt_fatal("out of host memory allocating %zu bytes", bytes);
    }
    memset(v, 0, sizeof *v);
    v->sclass = cls;
    reg_link(v);
    v->rc = 1;
    v->type = (uint8_t)t;
    v->len = len;
    v->units = units;
    v->data = len && host ? (void *)(v + 1) : NULL;
    v->nohost = (uint8_t)(len && !host);
    if (zero && bytes)
        memset(v->data, 0, bytes);
    return v;
}

int64_t val_remote_made, val_remote_hosted;

void val_host_storage(Value *v)
{
    if (!v->nohost)
        return;
    val_remote_hosted++;
    size_t bytes = (size_t)v->len * val_esize((ValType)v->type);
    uint8_t cls;
    void *d = block_alloc(bytes, &cls);
    if (!d)
        rt_fatal("out of host memory allocating %zu bytes", bytes);
    v->data = d;
    v->ext = 1;
    v->nohost = 0;
}

Value *val_resize(Value *v, int64_t len)
{
    if (v->lazy || v->ext || v->nohost)
        rt_fatal("internal error: resizing a vector made by a fill or on a device");
    if (len < 0 || len > MAX_LEN)
        rt_fatal("vector length %lld is out of range", (long long)len);
    ValType t = (ValType)v->type;
    int64_t units = val_units(t, len);
    if (units > v->units)
        charge(units - v->units);
    else
        used_units -= v->units - units;
    size_t bytes = (size_t)len * val_esize(t);
    reg_unlink(v);
    size_t total = sizeof(Value) + bytes, old = sizeof(Value) + (size_t)v->len * val_esize(t);
    Value *nv;
    if (vheap_owns(v)) {
        nv = vheap_resize(v, total);
    } else if (total >= vheap_min && (nv = vheap_alloc(total)) != NULL) {
        /* grown into the vector heap: moved once */
        memcpy(nv, v, old < total ? old : total);
        block_free(v, v->sclass);
    } else {
        nv = realloc(v, total);
        if (nv)
            prefault(nv, total);
    }
    if (nv)
        nv->sclass = 0; /* a block of its own now, whatever its size */
    if (!nv) {
        reg_link(v);
        used_units += v->units - units;
        rt_fatal("out of host memory resizing a vector to %zu bytes", bytes);
    }
    reg_link(nv);
    nv->len = len;
    nv->units = units;
    nv->data = len ? (void *)(nv + 1) : NULL;
    return nv;
}

Value *val_take_donation(Value *slot, ValType t, int64_t len)
{
    if (!slot || !slot->donated)
        return NULL;
    slot->donated = 0;
    if (slot->lazy || t == VT_SEGDES || t == VT_PAIR || slot->type == VT_SEGDES || slot->type == VT_PAIR || slot->len != len ||
        val_esize((ValType)slot->type) != val_esize(t))
        return NULL;
    slot->type = (uint8_t)t;
    return val_ref(slot);
}

Value *val_new(ValType t, int64_t len) { return alloc_value(t, len, 0, 1); }
Value *val_new_zero(ValType t, int64_t len) { return alloc_value(t, len, 1, 1); }
Value *val_new_remote(ValType t, int64_t len)
{
    Value *v = alloc_value(t, len, 0, 0);
    if (t == VT_SEGDES)
        v->sane = 1;
    val_remote_made += len > 0;
    return v;
}

/* ---- lazy fills (value.h) ---------------------------------------------------- */

int val_lazy_on = 1;
int64_t val_lazy_min = VAL_LAZY_MIN;
int64_t val_lazy_live;
int64_t val_lazy_made, val_lazy_written;

typedef struct {
    void *data;
    int isf;
    double f;
    int32_t i;
} FillJob;

static void fill_range(void *job, int64_t lo, int64_t hi)
{
    const FillJob *j = job;
    if (j->isf) {
        double x = j->f, *o = j->data;
        for (int64_t k = lo; k < hi; k++)
            o[k] = x;
    } else {
        int32_t x = j->i, *o = j->data;
        for (int64_t k = lo; k < hi; k++)
            o[k] = x;
    }
}

/* Write V's fill over DATA (split between threads when long). */
static void fill_data(Value *v, void *data)
{
    FillJob j = { data, v->type == VT_FLOAT, v->fill.f, v->fill.i };
    par_for(v->len, PAR_MIN_CHEAP, fill_range, &j);
}

Value *val_new_fill(ValType t, int64_t len, const void *x)
{
    if (t == VT_SEGDES || t == VT_PAIR)
        rt_fatal("internal error: a lazy fill of a %s", val_type_name(t));
    int lazy = val_lazy_on && len >= val_lazy_min && len > 0;
    Value *v = alloc_value(t, lazy ? 0 : len, 0, 1);
    if (t == VT_FLOAT)
        memcpy(&v->fill.f, x, sizeof v->fill.f);
    else
        memcpy(&v->fill.i, x, sizeof v->fill.i);
    if (!lazy) {
        if (len)
            fill_data(v, v->data);
        return v;
    }
    /* the header alone, charged for LEN elements */
    int64_t units = val_units(t, len);
    charge(units);
    v->units += units;
    v->len = len;
    v->lazy = 1;
    val_lazy_live++;
    val_lazy_made++;
    return v;
}

void val_unlazy(Value *v)
{
    while (v) {
        if (v->type == VT_PAIR) {
            val_unlazy(v->fst);
            v = v->snd;
            continue;
        }
        if (!v->lazy)
            return;
        size_t bytes = (size_t)v->len * val_esize((ValType)v->type);
        uint8_t cls;
        void *d = block_alloc(bytes, &cls);
        if (!d)
            rt_fatal("out of host memory allocating %zu bytes", bytes);
        fill_data(v, d);
        v->data = d;
        v->ext = 1;
        v->lazy = 0;
        val_lazy_live--;
        val_lazy_written++;
        return;
    }
}

Value *seg_new(int64_t m)
{
    Value *v = alloc_value(VT_SEGDES, m, 0, 1);
    v->sane = 1;
    return v;
}

int64_t seg_uniform_len(const Value *sd)
{
    return sd->type == VT_SEGDES && sd->sane && sd->shaped && sd->len > 0 && sd->minl == sd->maxl && sd->minl > 0
               ? sd->minl
               : 0;
}

void seg_set_shape(Value *sd, int64_t n, int32_t lo, int32_t hi)
{
    if (n > MAX_LEN || n < -MAX_LEN - 1)
        rt_fatal("segment lengths sum to %lld, beyond the 32-bit range", (long long)n);
    sd->n = n;
    sd->sane = (uint8_t)(lo >= 0);
    sd->minl = lo;
    sd->maxl = hi;
    sd->shaped = 1;
    drop_offsets(sd);
}

void seg_finish(Value *sd)
{
    const int32_t *l = VI(sd);
    int64_t n = 0;
    int32_t lo = sd->len ? INT32_MAX : 0, hi = sd->len ? INT32_MIN : 0;
    for (int64_t k = 0; k < sd->len; k++) {
        n += l[k];
        lo = l[k] < lo ? l[k] : lo;
        hi = l[k] > hi ? l[k] : hi;
    }
    seg_set_shape(sd, n, lo, hi);
}

Value *seg_of_lengths(Value *l, int reuse)
{
    Value *sd;
    if (reuse) {
        /* same storage (int32 lengths, same units): retag in place */
        val_drop_device(l);
        sd = val_ref(l);
        sd->type = VT_SEGDES;
    } else {
        sd = seg_new(l->len);
        if (l->len)
            memcpy(sd->data, l->data, (size_t)l->len * 4);
    }
    seg_finish(sd);
    return sd;
}

Value *lengths_of_seg(Value *sd, int reuse)
{
    if (!reuse) {
        Value *l = val_new(VT_INT, sd->len);
        if (sd->len)
            memcpy(l->data, sd->data, (size_t)sd->len * 4);
        return l;
    }
    /* same storage (int32 lengths, same units): retag in place, the
     * descriptor's own state gone */
    val_drop_device(sd);
    drop_offsets(sd);
    sd->type = VT_INT;
    sd->n = 0;
    sd->minl = sd->maxl = 0;
    sd->sane = sd->shaped = 0;
    return val_ref(sd);
}

const int64_t *seg_offsets(Value *sd)
{
    if (!sd->offs && sd->len <= 1) {
        sd->offs = one_segment_offs;
    } else if (!sd->offs) {
        int64_t m = sd->len;
        /* charged while they exist, as the device's copy of them is */
        int64_t *o = mem_alloc_charged(m * (int64_t)sizeof *o, "segment offsets");
        seg_offsets_into(sd, o);
        sd->offs = o;
    }
    return sd->offs;
}

void seg_offsets_into(const Value *sd, int64_t *out)
{
    const int32_t *l = VI(sd);
    int64_t s = 0;
    for (int64_t k = 0; k < sd->len; k++) {
        out[k] = s;
        s += l[k];
    }
}

int seg_check_ranges(Value *sd)
{
    if (sd->sane)
        return 0;
    const int64_t *o = seg_offsets(sd);
    const int32_t *l = VI(sd);
    int64_t n = sd->n < 0 ? 0 : sd->n;
    for (int64_t k = 0; k < sd->len; k++)
        if (l[k] > 0 && (o[k] < 0 || o[k] + l[k] > n))
            return -1;
    return 0;
}

Value *val_pair(Value *a, Value *b)
{
    uint8_t cls;
    Value *v = block_alloc(sizeof *v, &cls);
    if (!v)
        rt_fatal("out of host memory");
    memset(v, 0, sizeof *v);
    v->sclass = cls;
    reg_link(v);
    v->rc = 1;
    v->type = VT_PAIR;
    v->fst = a;
    v->snd = b;
    return v;
}

void val_free(Value *v)
{
    /* Pairs nest: release iteratively along the second component to keep
     * deep chains off the C stack. */
    while (v) {
        Value *next = NULL;
        if (v->held) { /* kept for a replay (val_hold): not a pair */
            val_ghost(v);
            return;
        }
        if (v->ghost)
            ghost_bytes -= held_bytes_of(v);
        reg_unlink(v);
        if (v->type == VT_PAIR) {
            if (v->fst)
                val_release(v->fst);
            if (v->snd && --v->snd->rc == 0)
                next = v->snd;
        } else {
            used_units -= v->units;
            drop_offsets(v);
            if (v->dev && device_ops.release)
                device_ops.release(v);
            if (v->lazy)
                val_lazy_live--;
            if (v->ext)
                block_free(v->data, 0);
        }
        block_free(v, v->sclass);
        v = next;
    }
}

const char *val_type_name(ValType t)
{
    switch (t) {
    case VT_INT: return "Int";
    case VT_BOOL: return "Bool";
    case VT_FLOAT: return "Float";
    case VT_SEGDES: return "Segdes";
    case VT_PAIR: return "Pair";
    }
    return "?";
}

/* runtime/value.c — vectors, descriptors, pairs and -m accounting. */
#include "runtime/value.h"
#include "runtime/errors.h"

#include <stdlib.h>
#include <string.h>

static int64_t limit_units = 1000000;
static int64_t used_units;
static int64_t peak_units;

void mem_set_limit(int64_t units) { limit_units = units; }
int64_t mem_used(void) { return used_units; }
int64_t mem_peak(void) { return peak_units; }
int64_t mem_limit(void) { return limit_units; }

int64_t val_units(ValType t, int64_t len)
{
    if (t == VT_FLOAT)
        return len;
    if (t == VT_PAIR)
        return 0;
    return (len + 1) / 2;
}

static void charge(int64_t units)
{
    if (units > limit_units - used_units)
        rt_fatal("ran out of vector memory.  Rerun using larger -m argument. "
                 "(%lld units needed, %lld of %lld in use)",
                 (long long)units, (long long)used_units, (long long)limit_units);
    used_units += units;
    if (used_units > peak_units)
        peak_units = used_units;
}

/* Largest vector we accept: 2^31-1 elements, as the classic (int lengths). */
#define MAX_LEN INT64_C(2147483647)

static Value *alloc_value(ValType t, int64_t len, int zero)
{
    if (len < 0)
        rt_fatal("negative vector length %lld", (long long)len);
    if (len > MAX_LEN)
        rt_fatal("vector length %lld is too large", (long long)len);
    int64_t units = val_units(t, len);
    charge(units);
    size_t bytes = (size_t)len * val_esize(t);
    Value *v = malloc(sizeof *v + bytes);
    if (!v) {
        used_units -= units;
        rt_fatal("out of host memory allocating %zu bytes", bytes);
    }
    memset(v, 0, sizeof *v);
    v->rc = 1;
    v->type = (uint8_t)t;
    v->len = len;
    v->units = units;
    v->data = len ? (void *)(v + 1) : NULL;
    if (zero && bytes)
        memset(v->data, 0, bytes);
    return v;
}

Value *val_new(ValType t, int64_t len) { return alloc_value(t, len, 0); }
Value *val_new_zero(ValType t, int64_t len) { return alloc_value(t, len, 1); }

Value *seg_new(int64_t m)
{
    Value *v = alloc_value(VT_SEGDES, m, 0);
    v->sane = 1;
    return v;
}

void seg_finish(Value *sd)
{
    const int32_t *l = VI(sd);
    int64_t n = 0;
    int sane = 1;
    for (int64_t k = 0; k < sd->len; k++) {
        n += l[k];
        if (l[k] < 0)
            sane = 0;
    }
    if (n > MAX_LEN || n < -MAX_LEN - 1)
        rt_fatal("segment lengths sum to %lld, beyond the 32-bit range", (long long)n);
    sd->n = n;
    sd->sane = (uint8_t)sane;
    free(sd->offs);
    sd->offs = NULL;
}

const int64_t *seg_offsets(Value *sd)
{
    if (!sd->offs) {
        int64_t m = sd->len;
        int64_t *o = malloc((size_t)(m ? m : 1) * sizeof *o);
        if (!o)
            rt_fatal("out of host memory for segment offsets");
        const int32_t *l = VI(sd);
        int64_t s = 0;
        for (int64_t k = 0; k < m; k++) {
            o[k] = s;
            s += l[k];
        }
        sd->offs = o;
    }
    return sd->offs;
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
    Value *v = calloc(1, sizeof *v);
    if (!v)
        rt_fatal("out of host memory");
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
        if (v->type == VT_PAIR) {
            if (v->fst)
                val_release(v->fst);
            if (v->snd && --v->snd->rc == 0)
                next = v->snd;
        } else {
            used_units -= v->units;
            free(v->offs);
        }
        free(v);
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

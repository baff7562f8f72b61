/* runtime/fused/replace_step.c — see replace_step.h. */
#include "runtime/fused/replace_step.h"
#include "runtime/core/errors.h"
#include "vcode/semantics.h"

#include <stdlib.h>
#include <string.h>

Value *replace_step(Value *data, Value *idx, Value *vals, Value *sd, int inplace, UndoLog *log)
{
    /* a lazy fill (value.h) is written out first: its elements change */
    if (data->lazy)
        val_unlazy(data);
    if (!sd->sane && seg_check_ranges(sd) != 0)
        rt_fatal("segment descriptor with negative lengths does not fit its data");
    int64_t m = sd->len;
    if (idx->len < m || vals->len < m)
        rt_fatal("REPLACE: %lld segments but %lld indices and %lld values", (long long)m, (long long)idx->len,
                 (long long)vals->len);
    ValType t = (ValType)data->type;
    if ((t == VT_FLOAT) != (vals->type == VT_FLOAT))
        rt_fatal("REPLACE: a %s vector given %s values", val_type_name(t), val_type_name((ValType)vals->type));
    const int32_t *L = VI(sd), *ix = VI(idx);
    /* Every index first, as the reference checks them, then the writes. */
    int64_t *pos = rt_xmalloc((size_t)m * sizeof *pos);
    int64_t at = 0;
    for (int64_t k = 0; k < m; at += L[k], k++) {
        if (ix[k] < 0 || ix[k] >= L[k]) {
            free(pos);
            rt_fatal(VS_MSG_SEGMENT_INDEX, (long long)ix[k],
                     (long long)k, (long long)(L[k] > 0 ? L[k] : 0));
        }
        pos[k] = at + ix[k];
        if (pos[k] >= data->len) {
            free(pos);
            rt_fatal("REPLACE: segment %lld reaches element %lld of a vector of length %lld", (long long)k,
                     (long long)(at + ix[k]), (long long)data->len);
        }
    }
    /* In place on a vector that lives on the device (its host copy may be
     * stale): the few elements are read and written there, and on the host
     * too while its copy is valid, so the vector never makes the round trip
     * (a loop of REPLACEs over a long vector would move it twice a step). */
    int dev = inplace && val_on_device(data) && sd->sane; /* sane: distinct positions */
    if (inplace && !dev)
        val_drop_device(data);
    else if (!inplace)
        val_for_host(data);
    size_t es = val_esize(t);
    Value *r;
    if (inplace) {
        if (log->n == log->cap) {
            int cap = log->cap ? 2 * log->cap : 8;
            UndoEntry *e = realloc(log->e, (size_t)cap * sizeof *e);
            if (!e) {
                free(pos);
                rt_fatal("out of host memory");
            }
            log->e = e;
            log->cap = cap;
        }
        uint64_t *old = malloc((size_t)(m ? m : 1) * sizeof *old);
        if (!old) {
            free(pos);
            rt_fatal("out of host memory");
        }
        char *cur = NULL;
        if (dev && data->hstale) {
            cur = rt_xmalloc((size_t)m * es);
            val_dev_elems(data, pos, m, cur, 0);
        }
        for (int64_t k = 0; k < m; k++) {
            const char *at = cur ? cur + (size_t)k * es : (const char *)data->data + (size_t)pos[k] * es;
            if (t == VT_FLOAT) {
                memcpy(&old[k], at, sizeof(double));
            } else {
                int32_t x;
                memcpy(&x, at, 4);
                old[k] = (uint32_t)x;
            }
        }
        free(cur);
        log->e[log->n++] = (UndoEntry){ val_ref(data), m, pos, old, dev };
        pos = NULL;
        r = val_ref(data);
    } else {
        r = val_new(t, data->len);
        if (data->len)
            memcpy(r->data, data->data, (size_t)data->len * val_esize(t));
    }
    const int64_t *p = pos ? pos : log->e[log->n - 1].pos;
    if (!dev || !r->hstale) {
        if (t == VT_FLOAT) {
            for (int64_t k = 0; k < m; k++)
                VF(r)[p[k]] = VF(vals)[k];
        } else {
            for (int64_t k = 0; k < m; k++)
                VI(r)[p[k]] = VI(vals)[k];
        }
    }
    if (dev)
        val_dev_elems(r, p, m, vals->data, 1);
    free(pos);
    return r;
}

int undo_log_refs(const UndoLog *log, const Value *v)
{
    int n = 0;
    for (int i = 0; i < log->n; i++)
        n += log->e[i].v == v;
    return n;
}

void undo_log_rollback(UndoLog *log)
{
    for (int i = log->n - 1; i >= 0; i--) {
        UndoEntry *e = &log->e[i];
        int host = !e->dev || !e->v->hstale;
        for (int64_t k = e->m - 1; k >= 0 && host; k--) {
            if (e->v->type == VT_FLOAT)
                memcpy(&VF(e->v)[e->pos[k]], &e->old[k], sizeof(double));
            else
                VI(e->v)[e->pos[k]] = (int32_t)(uint32_t)e->old[k];
        }
        if (e->dev && val_on_device(e->v)) {
            /* one write of the old elements (an entry's positions are
             * distinct: the device path takes sane descriptors only) */
            size_t es = val_esize((ValType)e->v->type);
            char *buf = rt_xmalloc((size_t)e->m * es);
            for (int64_t k = 0; k < e->m; k++) {
                int32_t x = (int32_t)(uint32_t)e->old[k];
                memcpy(buf + (size_t)k * es, es == 8 ? (const void *)&e->old[k] : (const void *)&x, es);
            }
            val_dev_elems(e->v, e->pos, e->m, buf, 1);
            free(buf);
        }
    }
    undo_log_clear(log);
}

void undo_log_clear(UndoLog *log)
{
    for (int i = 0; i < log->n; i++) {
        val_release(log->e[i].v);
        free(log->e[i].pos);
        free(log->e[i].old);
    }
    log->n = 0;
}

void undo_log_free(UndoLog *log)
{
    undo_log_clear(log);
    free(log->e);
    log->e = NULL;
    log->cap = 0;
}

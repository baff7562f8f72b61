/* runtime/replace_step.c — see replace_step.h. */
#include "runtime/replace_step.h"
#include "runtime/errors.h"

#include <stdlib.h>
#include <string.h>

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        rt_fatal("out of host memory");
    return p;
}

Value *replace_step(Value *data, Value *idx, Value *vals, Value *sd, int inplace, UndoLog *log)
{
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
    int64_t *pos = xmalloc((size_t)m * sizeof *pos);
    int64_t at = 0;
    for (int64_t k = 0; k < m; at += L[k], k++) {
        if (ix[k] < 0 || ix[k] >= L[k]) {
            free(pos);
            rt_fatal("index %lld for segment %lld is outside the segment of length %lld", (long long)ix[k],
                     (long long)k, (long long)(L[k] > 0 ? L[k] : 0));
        }
        pos[k] = at + ix[k];
        if (pos[k] >= data->len) {
            free(pos);
            rt_fatal("REPLACE: segment %lld reaches element %lld of a vector of length %lld", (long long)k,
                     (long long)(at + ix[k]), (long long)data->len);
        }
    }
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
        for (int64_t k = 0; k < m; k++) {
            if (t == VT_FLOAT)
                memcpy(&old[k], &VF(data)[pos[k]], sizeof(double));
            else
                old[k] = (uint32_t)VI(data)[pos[k]];
        }
        log->e[log->n++] = (UndoEntry){ val_ref(data), m, pos, old };
        pos = NULL;
        r = val_ref(data);
    } else {
        r = val_new(t, data->len);
        if (data->len)
            memcpy(r->data, data->data, (size_t)data->len * val_esize(t));
    }
    const int64_t *p = pos ? pos : log->e[log->n - 1].pos;
    if (t == VT_FLOAT) {
        for (int64_t k = 0; k < m; k++)
            VF(r)[p[k]] = VF(vals)[k];
    } else {
        for (int64_t k = 0; k < m; k++)
            VI(r)[p[k]] = VI(vals)[k];
    }
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
        for (int64_t k = e->m - 1; k >= 0; k--) {
            if (e->v->type == VT_FLOAT)
                memcpy(&VF(e->v)[e->pos[k]], &e->old[k], sizeof(double));
            else
                VI(e->v)[e->pos[k]] = (int32_t)(uint32_t)e->old[k];
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

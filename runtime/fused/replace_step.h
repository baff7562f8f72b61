/* runtime/fused/replace_step.h — REPLACE as a host step of a fused block, in
 * place when the block owns the data vector.
 *
 * REPLACE changes one element per segment of a vector that is usually far
 * longer than its segment count; the reference interpreter updates it in
 * place when nothing else holds it. Fused as a MAP it would copy the whole
 * vector on every call (a loop of REPLACEs turns O(m) steps into O(n)), so
 * the backend runs it here instead. An in-place update records the old
 * elements in an undo log: when a later step of the same block fails, the
 * block is replayed on the reference interpreter from its inputs, and the
 * log puts those inputs back first. A vector that lives on a device (the
 * cuda backend) is updated there, element by element, and keeps its
 * device copy. */
#ifndef RUNTIME_REPLACE_STEP_H
#define RUNTIME_REPLACE_STEP_H

#include <stdint.h>
#include "runtime/core/value.h"

typedef struct {
    Value *v;           /* the updated vector (a reference held by the log) */
    int64_t m;          /* elements changed */
    int64_t *pos;       /* their positions */
    uint64_t *old;      /* their old contents (an int32 or a double's bits) */
    int dev;            /* written on the device copy (and the host's when valid) */
} UndoEntry;

typedef struct {
    UndoEntry *e;
    int n, cap;
} UndoLog;

/* data idx vals sd → data with element idx[k] of segment k set to vals[k].
 * Every index is checked before anything is written (rt_fatal on the
 * first bad one). With INPLACE the result is DATA itself (a new
 * reference), its old elements logged in LOG; otherwise a new vector. */
Value *replace_step(Value *data, Value *idx, Value *vals, Value *sd, int inplace, UndoLog *log);
/* How many of the log's entries hold a reference to V. */
int undo_log_refs(const UndoLog *log, const Value *v);
/* Restore every logged element, newest first, and empty the log. */
void undo_log_rollback(UndoLog *log);
/* Forget the log's entries (the block finished). */
void undo_log_clear(UndoLog *log);
void undo_log_free(UndoLog *log);

#endif

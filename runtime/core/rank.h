/* runtime/core/rank.h — stable ranks within segments (vcode/SPEC.md §4.7): out[i] is
 * the position data[i] takes when its segment is sorted, ascending (or
 * descending when DOWN), equal keys keeping their order; floats in true
 * numeric order (-0.0 before +0.0, NaNs by bit pattern at the ends).
 * Every non-empty segment must lie inside the data (checked by callers). */
#ifndef RUNTIME_RANK_H
#define RUNTIME_RANK_H

#include "runtime/core/value.h"

void rank_segments(const Value *data, Value *sd, int down, int32_t *out);

#endif

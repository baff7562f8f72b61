/* translate/tuning.h — the tuning constants of the code generators, each
 * with what set it. Results never depend on them. */
#ifndef TRANSLATE_TUNING_H
#define TRANSLATE_TUNING_H

/* Generated C: a MAP runs its loop with OpenMP from MAP_PAR_MIN elements
 * (below, the threads' start costs more than they save). Set by hand. */
#define MAP_PAR_MIN 65536

/* Generated C: a MAP whose pull asks seg_of(X, i) walks X's segments in
 * chunks of MAP_CHUNK elements (each chunk's first segment found once by
 * a search), so that the chunks can run in parallel however the segments
 * fall. Set by hand. */
#define MAP_CHUNK 4096

/* Generated C: Int and Bool reductions fold chunks of RED_CHUNK elements
 * in parallel (their operators are associative: the result is the
 * sequential fold's). Set by hand. */
#define RED_CHUNK 4096

#endif

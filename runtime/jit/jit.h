/* runtime/jit/jit.h — compiling generated C into a shared object, through an
 * on-disk cache.
 *
 * The cache key is a 128-bit hash of the source, the target, the
 * compiler's identity (its path, size and time stamp), the options, the
 * project version and the generated-code ABI version. An entry is
 * DIR/KEY.so beside DIR/KEY.c (the source, for people reading --check
 * reports). Entries are written under temporary names and renamed into
 * place, so a concurrent or interrupted run never leaves a half-written
 * entry under a real name. Every unit defines `vk_unit_key`, the key
 * itself: a file that does not load, or whose key differs, is recompiled,
 * never trusted.
 *
 * DIR: the option (--cache-dir), else $VINTERP_CACHE_DIR, else
 * $XDG_CACHE_HOME/vinterp, else $HOME/.cache/vinterp. Disabled by
 * --no-cache or VINTERP_NO_CACHE=1: then units are built in a temporary
 * directory that is removed once loaded. The compiler is $VINTERP_CC (else
 * "cc"); its options are "-O2 -shared -fPIC -ffp-contract=off -fopenmp",
 * or $VINTERP_CFLAGS. */
#ifndef RUNTIME_JIT_H
#define RUNTIME_JIT_H

#include <stddef.h>

typedef struct {
    const char *cache_dir;  /* NULL: from the environment */
    int no_cache;
    int private_dir;        /* cache_dir is this run's own (tiers under --no-cache): used whatever the environment says */
} JitOptions;

typedef struct {
    int compiled;           /* units compiled */
    int hits;               /* units found in the cache */
    int rejected;           /* cache entries that failed validation */
    double compile_seconds; /* in the compiler */
    double load_seconds;    /* dlopen and validation */
    char dir[1024];         /* the cache directory used ("" when none) */
} JitStats;

/* One build request's figures (an executor's build, the device's). */
typedef struct {
    int probe;                  /* in: compile nothing, only look in the cache */
    int fast;                   /* in: the quick-compiled variant (a staged compile's first stage) */
    int compiled, hits;         /* units compiled, found in the cache */
    double compile_seconds;
    char unit[1024];            /* out (the cpu executor's): the cached source of the unit built or
                                   found ("" when none) */
} JitBuildStats;

/* Is the C compiler there (and does it run)? */
int jit_have_compiler(void);

/* Build (or find) the shared object of SRC and dlopen it. Returns the
 * handle, or NULL with a reason in MSG. SRCPATH receives the path of the
 * cached source ("" when the cache is off). */
void *jit_load_c(const JitOptions *o, const char *src, size_t len, JitStats *st, char *srcpath, size_t srcpathlen,
                 char *msg, size_t msglen);

/* The same for another language: C++ is the generated CUDA compiled for
 * the emulated device ($VINTERP_CXX, else c++; options $VINTERP_CXXFLAGS,
 * else "-x c++ -O2 -shared -fPIC -ffp-contract=off"); C++ quick is the
 * same with -O0 added (the first stage of a staged compile: the emulated
 * device's counterpart of NVRTC's --Ofast-compile). */
typedef enum { JIT_C = 0, JIT_CXX, JIT_CXX_QUICK } JitLang;
int jit_have(JitLang lang);
void *jit_load(const JitOptions *o, JitLang lang, const char *src, size_t len, JitStats *st, char *srcpath,
               size_t srcpathlen, char *msg, size_t msglen);

/* Compile SRC into the cache without loading it (a later jit_load of the
 * same text is a hit). Thread-safe: the tier thread's builds. Needs the
 * cache (not --no-cache). PROBE: compile nothing, only look. SRCPATH (of
 * SRCPATHLEN bytes; 0: not wanted) receives the path of the cached
 * source. 0 (in the cache now), 1 (PROBE: not in the cache), or -1 with
 * MSG. */
int jit_build(const JitOptions *o, JitLang lang, const char *src, size_t len, JitStats *st, int probe, char *srcpath,
              size_t srcpathlen, char *msg, size_t msglen);

/* Once, before any thread: the process settings generated units read
 * (OpenMP's wait policy). */
void jit_init(void);
/* --no-cache under tiers: the worker builds into the cache and the main
 * thread loads from it, so the run gets a cache directory of its own,
 * removed at exit. 0, or -1 with MSG. */
int jit_private_dir(JitOptions *o, char *msg, size_t msglen);
/* The run is ending: kill a compiler still running and start none. */
void jit_abandon(void);
/* In a child made by fork() after the run (tier_after.h), the only
 * thread: compiles may start again (jit_abandon's refusal is the
 * parent's), unpaced, with no compiler of the parent's in view. */
void jit_after_fork(void);
/* 1 while a compiler process started here runs (any thread's). */
int jit_compiling(void);

/* Pacing. Compiles started on the calling thread from now on (ON 1) may
 * be stopped by jit_pace; others never are. jit_pace stops (STOP 1) or
 * lets run (0) the paced compile in progress, its whole process group,
 * and returns 1 when there is one, else 0. The tier worker's compiles are
 * paced to its share of the run, from a thread of their own: the worker
 * runs at idle priority, and on a busy machine would not get its turn to
 * stop its own compiler before that compiler had finished. */
void jit_set_paced(int on);
int jit_pace(int stop);

/* The cache directory (created): 0 with its path in OUT, 1 when the cache
 * is off, -1 when it cannot be used. For other kinds of cached code
 * (cubins), which keep the same rules: temporary name, rename, validate. */
int jit_dir(const JitOptions *o, char *out, size_t len);

/* The 128-bit hash used for keys, as 32 hex digits (+ NUL). */
void jit_hash_hex(const void *data, size_t len, char out[33]);

#endif

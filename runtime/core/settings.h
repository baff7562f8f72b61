/* runtime/core/settings.h — every environment variable vinterp reads, in
 * one table: its name, kind, range, default and one line of doc. The
 * environment is read here only, once at start-up (settings_load, before
 * any thread), with one error format:
 *
 *     vinterp: VINTERP_TIER_SHARE: '0' is not a count from 1 to 100
 *
 * and the rest of the runtime asks the table (settings_count, ...). `vinterp
 * --help` prints the table (settings_print); the README's settings table is
 * checked against that listing by tests/run_cli.py. The translator reads no
 * setting: the runtime hands it what it needs (cg_set_plant_race).
 *
 * A variable set to the empty string counts as not set, but for the TEXT
 * kind, where empty is a value (VINTERP_CFLAGS= : no flags). */
#ifndef RUNTIME_CORE_SETTINGS_H
#define RUNTIME_CORE_SETTINGS_H

#include <stdint.h>
#include <stdio.h>

typedef enum {
    SK_TEXT,   /* any text (a path, flags, a list) */
    SK_FLAG,   /* 0 or 1 */
    SK_COUNT,  /* an integer from LO to HI */
    SK_POW2,   /* a power of two from LO to HI */
    SK_CHOICE, /* one of CHOICES, separated by '|' */
    SK_SYSTEM  /* the system's (HOME, PATH...): any text, not listed as ours */
} SettingKind;

/* X(ID, NAME, KIND, LO, HI, CHOICES, DEFAULT, DOC). DEFAULT is what the
 * runtime takes when the variable is not set, as the user reads it (some
 * depend on the machine or the backend). Test-only settings: "(tests)" at
 * the start of DOC. */
#define VINTERP_SETTINGS(X)                                                                                        \
    X(BACKEND, "VINTERP_BACKEND", SK_CHOICE, 0, 0, "auto|ref|lcu|cpu|cuda", "auto",                                \
      "the backend when --backend is not given")                                                                  \
    X(CACHE_DIR, "VINTERP_CACHE_DIR", SK_TEXT, 0, 0, NULL, "$XDG_CACHE_HOME/vinterp, else ~/.cache/vinterp",      \
      "the compiled-kernel cache when --cache-dir is not given")                                                   \
    X(NO_CACHE, "VINTERP_NO_CACHE", SK_FLAG, 0, 1, NULL, "0", "1: compile kernels without the cache (--no-cache)") \
    X(CC, "VINTERP_CC", SK_TEXT, 0, 0, NULL, "cc", "the C compiler of the cpu backend's units")                    \
    X(CFLAGS, "VINTERP_CFLAGS", SK_TEXT, 0, 0, NULL, "-O2 -shared -fPIC -ffp-contract=off -fopenmp",          \
      "its flags (part of the cache key)")                                                                        \
    X(CXX, "VINTERP_CXX", SK_TEXT, 0, 0, NULL, "c++", "the C++ compiler of the emulated device's units")           \
    X(CXXFLAGS, "VINTERP_CXXFLAGS", SK_TEXT, 0, 0, NULL, "-x c++ -O2 -shared -fPIC -ffp-contract=off",        \
      "its flags (part of the cache key)")                                                                        \
    X(THREADS, "VINTERP_THREADS", SK_COUNT, 1, 256, NULL, "the online CPUs (at most 8)",                          \
      "threads of the reference's parallel loops")                                                                \
    X(PAR_MIN, "VINTERP_PAR_MIN", SK_COUNT, 0, INT64_MAX, NULL, "per loop (runtime/core/par.h)",                   \
      "elements below which a loop runs on one thread")                                                           \
    X(LAZY, "VINTERP_LAZY", SK_FLAG, 0, 1, NULL, "1", "0: no lazy fills (a DIST is written out at once)")          \
    X(LAZY_MIN, "VINTERP_LAZY_MIN", SK_COUNT, 1, INT64_MAX, NULL, "1024",                                        \
      "elements from which a one-segment DIST is a lazy fill")                                                    \
    X(FLOAT_REASSOC, "VINTERP_FLOAT_REASSOC", SK_FLAG, 0, 1, NULL, "0",                                           \
      "1: long float + and * reductions fold by chunks (--float-reassoc)")                                       \
    X(CHECK_PERTURB, "VINTERP_CHECK_PERTURB", SK_TEXT, 0, 0, NULL, "none",                                        \
      "(tests) under --check, perturb a fused result: KERNEL:ULPS (runtime/fused/check_bound.h)")                \
    X(TIER, "VINTERP_TIER", SK_CHOICE, 0, 0, "background|on|sync|eager|off", "background",                        \
      "when blocks are translated, if --tier is not given")                                                       \
    X(TIER_WORK, "VINTERP_TIER_WORK", SK_COUNT, 0, INT64_MAX, NULL, "20000000 (cuda 50000000)",                   \
      "interpreter work (elements) before a block is promoted (--tier-work)")                                    \
    X(TIER_MIN_LEN, "VINTERP_TIER_MIN_LEN", SK_COUNT, 0, INT64_MAX, NULL, "4096 (cuda 65536)",                     \
      "shortest run a promoted block takes fused (--tier-min-len)")                                              \
    X(TIER_DELAY_MS, "VINTERP_TIER_DELAY_MS", SK_COUNT, 0, INT64_MAX, NULL, "20",                                 \
      "milliseconds before the tier worker starts")                                                              \
    X(TIER_SHARE, "VINTERP_TIER_SHARE", SK_COUNT, 1, 100, NULL, "10 on 1-2 CPUs, else 100",                        \
      "percent of the run's wall time the tier worker may take")                                                 \
    X(TIER_GRACE_MS, "VINTERP_TIER_GRACE_MS", SK_COUNT, 0, INT64_MAX, NULL, "0",                                  \
      "milliseconds the end of the run waits for the worker's job")                                              \
    X(TIER_AFTER, "VINTERP_TIER_AFTER", SK_CHOICE, 0, 0, "detach|wait|off", "off (cuda: detach)",                \
      "hot blocks still without code at the end: compiled into the cache after the output, for the next run "     \
      "(detach: in a process of their own; wait: before the exit; off: not)")                                    \
    X(TIER_BUDGET_MS, "VINTERP_TIER_BUDGET_MS", SK_COUNT, 0, INT64_MAX, NULL, "100",                              \
      "unused share (ms) a compile needs before it starts")                                                      \
    X(TIER_IDLE, "VINTERP_TIER_IDLE", SK_FLAG, 0, 1, NULL, "1", "1: the worker runs at idle priority")             \
    X(TEST_TIER_START, "VINTERP_TEST_TIER_START", SK_CHOICE, 0, 0, "ready", "none",                                 \
      "(tests) ready: the program starts once the worker has prepared it")                                       \
    X(TEST_TIER_END, "VINTERP_TEST_TIER_END", SK_CHOICE, 0, 0, "compiling|stopped|done", "none",                  \
      "(tests) the run ends once the worker reaches this point")                                                 \
    X(TEST_TIER_REFINE, "VINTERP_TEST_TIER_REFINE", SK_CHOICE, 0, 0, "wait", "none",                              \
      "(tests) wait: a promoted block's entries wait for its code, and (staged) for its full code")           \
    X(TEST_TIER_HOLD, "VINTERP_TEST_TIER_HOLD", SK_FLAG, 0, 1, NULL, "0",                                         \
      "(tests) 1: the worker's job never ends (as one inside NVRTC)")                                            \
    X(TEST_TIER_LATE_STOP, "VINTERP_TEST_TIER_LATE_STOP", SK_FLAG, 0, 1, NULL, "0",                               \
      "(tests) 1: a worker's job outlasts the stop's wait, then ends before the exit (leak checks)")             \
    X(TEST_TIER_AFTER_GATE, "VINTERP_TEST_TIER_AFTER_GATE", SK_TEXT, 0, 0, NULL, "none",                         \
      "(tests) the compiles after the run wait until this file exists")                                          \
    X(CUDA_EMULATE, "VINTERP_CUDA_EMULATE", SK_FLAG, 0, 1, NULL, "0",                                             \
      "1: the cuda backend runs on the emulated device (host C++)")                                              \
    X(CUDA_EMULATE_SHAPE, "VINTERP_CUDA_EMULATE_SHAPE", SK_CHOICE, 0, 0, "small|real", "small",                  \
      "real: the emulated device in a GPU's shapes (blocks of 256, warps of 32)")                                \
    X(CUDA_EMULATE_BLOCK, "VINTERP_CUDA_EMULATE_BLOCK", SK_POW2, 1, 256, NULL, "16 (real 256)",                   \
      "the emulated device's threads per block")                                                                 \
    X(CUDA_EMULATE_WARP, "VINTERP_CUDA_EMULATE_WARP", SK_POW2, 1, 256, NULL, "a quarter of a block (real 32)",   \
      "the emulated device's warp")                                                                              \
    X(CUDA_EMULATE_GRID, "VINTERP_CUDA_EMULATE_GRID", SK_POW2, 1, 65536, NULL, "4 (real 8)",                       \
      "the emulated device's blocks")                                                                            \
    X(CUDA_EMULATE_SHUFFLE, "VINTERP_CUDA_EMULATE_SHUFFLE", SK_COUNT, 0, INT64_MAX, NULL, "0",                    \
      "(tests) a seed: the emulated device runs blocks and threads in an order drawn from it (0: in order)")     \
    X(CUDA_EMULATE_FAULT, "VINTERP_CUDA_EMULATE_FAULT", SK_COUNT, 0, INT64_MAX, NULL, "0",                        \
      "(tests) N: the emulated device's Nth launch faults")                                                      \
    X(CUDA_EMULATE_PRIMS, "VINTERP_CUDA_EMULATE_PRIMS", SK_TEXT, 0, 0, NULL, "none",                             \
      "(tests) a library of kernels.h's primitives built for the host (build/kernels_host/libvkernels_host.so): " \
      "the emulated device calls it in place of its own")                                                        \
    X(CUDA_HOST_MAX_ELEM, "VINTERP_CUDA_HOST_MAX_ELEM", SK_COUNT, 0, INT64_MAX, NULL, "16384 (tiered 0)",          \
      "cuda --tier=eager: elementwise kernels up to this length run on the host")                                \
    X(CUDA_HOST_MAX_SCAN, "VINTERP_CUDA_HOST_MAX_SCAN", SK_COUNT, 0, INT64_MAX, NULL, "65536 (tiered 0)",          \
      "the same for reductions and scans")                                                                       \
    X(CUDA_HOST_MAX_LIB, "VINTERP_CUDA_HOST_MAX_LIB", SK_COUNT, 0, INT64_MAX, NULL, "65536 (tiered 0)",            \
      "the same for the library's sorts and permutes")                                                           \
    X(CUDA_PART_BYTES, "VINTERP_CUDA_PART_BYTES", SK_COUNT, 1, INT64_MAX, NULL, "32768 (emulated: one part)",     \
      "bytes of CUDA per NVRTC program")                                                                         \
    X(CUDA_EVENTS_MAX, "VINTERP_CUDA_EVENTS_MAX", SK_COUNT, 1, 1 << 20, NULL, "65536",                           \
      "-d stats on a GPU: event pairs timing kernels that may wait to be read before the host waits for them")  \
    X(DEVICE_TIER, "VINTERP_DEVICE_TIER", SK_CHOICE, 0, 0, "off|on", "off",                                         \
      "on: the cuda backend runs vector instructions on device vectors one by one, from the first (device tier)") \
    X(DEVICE_CHAINS, "VINTERP_DEVICE_CHAINS", SK_CHOICE, 0, 0, "off|on", "on",                                     \
      "the device tier defers elementwise instructions and runs each chain of them as one kernel")              \
    X(DEVICE_READ_AHEAD, "VINTERP_DEVICE_READ_AHEAD", SK_CHOICE, 0, 0, "off|on", "on",                             \
      "a wait that reads a short device vector brings back with it those of its length near the stack's top")  \
    X(DEVICE_GUARDS, "VINTERP_DEVICE_GUARDS", SK_CHOICE, 0, 0, "off|on", "on",                                     \
      "the device tier takes an IF whose THEN branch is NESL's runtime error exit before its condition is read")  \
    X(DEVICE_MIN, "VINTERP_DEVICE_MIN", SK_COUNT, 1, INT64_MAX, NULL, "4096",                                      \
      "the device tier's placement: vectors made from shorter operands go to the device from this length")       \
    X(DEVICE_MEM, "VINTERP_DEVICE_MEM", SK_COUNT, 1, INT64_MAX, NULL, "9/10 of the GPU's (emulated: none)",       \
      "bytes of device memory the cuda backend may use; the device tier leaves what does not fit on the host")   \
    X(CUDA_STRATEGY, "VINTERP_CUDA_STRATEGY", SK_CHOICE, 0, 0, "auto|lib|thread|warp|block", "auto",              \
      "how reductions and scans run on the device")                                                              \
    X(CUDA_CHECK_PTRS, "VINTERP_CUDA_CHECK_PTRS", SK_FLAG, 0, 1, NULL, "0",                                       \
      "1: every pointer a launch receives is checked against this run's device allocations")                     \
    X(TEST_CUDA_PLANT_HOST_PTR, "VINTERP_TEST_CUDA_PLANT_HOST_PTR", SK_FLAG, 0, 1, NULL, "0",                     \
      "(tests) 1: with VINTERP_CUDA_CHECK_PTRS=1, a launch receives a host pointer")                             \
    X(CUDA_CHECK_DONE, "VINTERP_CUDA_CHECK_DONE", SK_TEXT, 0, 0, NULL, "none",                                    \
      "--cuda-check: a directory of kernels already compiled, left out")                                         \
    X(NVRTC, "VINTERP_NVRTC", SK_TEXT, 0, 0, NULL, "libnvrtc.so", "NVRTC's library")                               \
    X(NVRTC_OPT, "VINTERP_NVRTC_OPT", SK_CHOICE, 0, 0, "full|fast|staged", "staged (emulated: full)",            \
      "NVRTC: full; fast (--Ofast-compile=max: compiles ~10x quicker, kernels 1.5-8x slower); staged (the "      \
      "tiers compile a block fast, then full in the background and swap)")                                     \
    X(NVRTC_THREADS, "VINTERP_NVRTC_THREADS", SK_COUNT, 1, 1024, NULL, "the online CPUs (at most 32)",            \
      "NVRTC compiles at once")                                                                                  \
    X(TEST_CUDA_DRIVER, "VINTERP_TEST_CUDA_DRIVER", SK_TEXT, 0, 0, NULL, "none",                                   \
      "(tests) the CUDA driver library to load in place of libcuda.so.1, without looking for a GPU "           \
      "(build/kernels_host/libcuda_host.so: the host standing in for one)")                                     \
    X(KERNELS_LIB, "VINTERP_KERNELS_LIB", SK_TEXT, 0, 0, NULL, "libvkernels.so beside vinterp",                    \
      "the precompiled device kernels")                                                                          \
    X(CG_PLANT_RACE, "VINTERP_CG_PLANT_RACE", SK_FLAG, 0, 1, NULL, "0",                                           \
      "(tests) 1: generated CUDA group reductions lose a barrier (a race the emulated device must report)")      \
    X(HOME, "HOME", SK_SYSTEM, 0, 0, NULL, NULL, "the kernel cache's default place")                              \
    X(XDG_CACHE_HOME, "XDG_CACHE_HOME", SK_SYSTEM, 0, 0, NULL, NULL, "the kernel cache's default place")          \
    X(TMPDIR, "TMPDIR", SK_SYSTEM, 0, 0, NULL, NULL, "temporary caches")                                          \
    X(PATH, "PATH", SK_SYSTEM, 0, 0, NULL, NULL, "where the compilers are found")

typedef enum {
#define SETTING_ID(id, name, kind, lo, hi, choices, dflt, doc) SET_##id,
    VINTERP_SETTINGS(SETTING_ID)
#undef SETTING_ID
    SET_COUNT
} SettingId;

/* Read every setting from the environment. Returns 0, or -1 after one
 * line on ERR for the first malformed one. Called by main before any
 * thread; again by tests after they change the environment. The
 * accessors below load on first use (and exit with status 1 after the
 * message when a setting is malformed) where main did not. */
int settings_load(FILE *err);

/* 1 when the variable is set (for TEXT, even to the empty string). */
int settings_given(SettingId id);
/* A COUNT, POW2 or FLAG setting, or DFLT when not set. */
int64_t settings_count(SettingId id, int64_t dflt);
/* A CHOICE setting: the index of its value among CHOICES, or DFLT. */
int settings_choice(SettingId id, int dflt);
/* A TEXT or SYSTEM setting's value, or NULL when not set. */
const char *settings_text(SettingId id);
/* The name, for messages. */
const char *settings_name(SettingId id);

/* S as a count: decimal digits only, from LO to HI. 0 with the value in
 * *OUT; -1 when S is not such a count; -2 when its digits pass 64 bits.
 * The one number parser of the settings and of the command line's count
 * options (main.c), which word their own messages. */
int settings_parse_count(const char *s, int64_t lo, int64_t hi, int64_t *out);

/* The table for --help: our variables, each with its values, default and
 * doc (test-only ones when TESTS), then the system's. */
void settings_print(FILE *f, int tests);
/* Every setting as a Markdown table (runtime/SETTINGS.md is this). */
void settings_print_markdown(FILE *f);

#endif

/* runtime/fused/tuning.h — the tuning constants of the fused backends,
 * each with what set it. Results never depend on them (only where and when
 * work runs); each has a setting (runtime/SETTINGS.md) the tests use. */
#ifndef RUNTIME_FUSED_TUNING_H
#define RUNTIME_FUSED_TUNING_H

/* The tiers (tier.c, tier_defaults). A fused run costs a few microseconds
 * more than an interpreted one (variable table, length checks, allocation
 * callbacks; on a GPU the launches): worth it from some thousands of
 * elements (cpu) or a hundred thousand (cuda): the shortest run a promoted
 * block takes fused. Promotion at about 20 ms of interpreter work (cpu): a
 * block that hot is likely to run long enough for a background compile
 * (0.1-0.5 s) to come back in time. */
#define TIER_MIN_LEN_CPU 4096
#define TIER_MIN_LEN_CUDA 65536
#define TIER_WORK_CPU 20000000
#define TIER_WORK_CUDA 50000000
/* Most programs a NESL session runs take a few milliseconds: they end
 * before the worker starts inlining (which costs the interpreter some
 * memory bandwidth and page-table work, and a SPAWN's fork more). */
#define TIER_DELAY_MS 20
/* A compiler on the other core slows the interpreter (shared cache,
 * memory bandwidth): by 0.3-0.5 s per second of compiling on the bench
 * programs (2 cores; black_scholes_8m: +12% at a 30% share, about +4% at
 * 10%). With more than 2 CPUs the compiler has one of its own: no share. */
#define TIER_SHARE_PCT_2CPU 10
/* Under a share, a block's compile starts only once the share holds this
 * much unused time: no sooner than 1 s into a run at 10%. A shorter run
 * could not use the code (a unit takes 0.1-0.5 s to compile), and the
 * compile would only slow it (qs_5m, quickhull_5m: 6-12% cold). */
#define TIER_BUDGET_MS 100
/* A block installed with interpreted speeds from earlier runs
 * (tier_verdict.h: sampled after their install, or kept by the compiles
 * after the run) goes back to the interpreter at its first fused run when
 * that run took more than this many times their time per unit of work
 * (for the rest of the run; that one sample is kept for later runs'
 * verdicts, not remembered as slow on its own).
 * The margin covers the first run's page faults on fresh vectors, which
 * the interpreted samples leave out; fused code 2-5x slower (qs_5m's
 * blocks that run 2-9 times a run) is sent back before it does its damage. */
#define TIER_FIRST_RUN_SLOWER 2.0
/* The compiles after a run (tier_after.h), by backend: on cuda they are
 * the point (fused code on the device in the next run); on cpu they are
 * off unless asked for (VINTERP_TIER_AFTER=detach). Measured here
 * (2026-11-28, 2 cores, the nine of ../shared/bench under auto = cpu from
 * an empty cache, each run after the last one's compile, beside ref):
 * dotp_50m's and muladd_50m's timed regions got faster in the second run
 * (0.10 -> 0.05 s, 0.039 -> 0.032 s), but the second run of most others
 * was slower than ref's while the verdicts (tier_verdict.h) were not in
 * yet: qs_5m 2.30 s against 0.93, quickhull_5m 2.17 against 1.04, radix_10m
 * 1.64 against 1.16, bh_16k 4.12 against 3.41, black_scholes_8m 1.3-1.4x
 * for five runs; the runs after settle near ref's. Again with the first
 * fused run checked against the interpreted speeds kept beside the unit
 * (TIER_FIRST_RUN_SLOWER), quiet: the second run still slower than ref on
 * four of five (qs_5m 1.36x, quickhull_5m 1.17x, radix_10m 1.20x,
 * black_scholes_8m 1.54x; bh_16k level), tests/bench/RESULTS.md. */
#define TIER_AFTER_CPU TIER_AFTER_OFF
#define TIER_AFTER_CUDA TIER_AFTER_DETACH

/* The cuda executor under --tier=eager (tiered, every kernel of a fused
 * run goes to the device): a kernel step runs on the host when its largest
 * parameter has fewer elements than its family's threshold. First
 * estimates from launch cost (a few us per launch, several launches per
 * step) against host loop speed (about a nanosecond per element), not yet
 * measured on a GPU. */
#define CUDA_HOST_MAX_ELEM 16384
#define CUDA_HOST_MAX_SCAN 65536
#define CUDA_HOST_MAX_LIB 65536

/* The device tier (cuda_tier.h): a vector made from short operands
 * (RAND over a lazy fill, INDEX, a segmented DIST) of at least this many
 * elements is made on the device. The starting point, not yet
 * measured on a GPU (a launch costs a few us; the host makes 4096
 * elements in about as long). */
#define DEVICE_MIN 4096
/* EXTRACT and REPLACE of up to this many segments on a device vector read
 * or write its elements from the host (value.h val_dev_elems: a short
 * result lives on the host); more go through positions on the device.
 * Reading 1-64-segment EXTRACTs into device results instead was within 1%
 * in the model (2026-11-28, device_tier_table.py). */
#define DEVICE_FEW_SEGMENTS 64
/* EXTRACT's and REPLACE's positions, their indices and descriptor on
 * the host, are made there and uploaded (8 bytes a segment, no launch)
 * up to this many segments even when the descriptor has a device copy;
 * more go up as indices (4 bytes a segment) for a positions kernel on
 * the device. From the model below: a launch (5 us) is 125 KB on the bus,
 * the 4 bytes a segment more of 31 250 segments. */
#define HOST_POSITIONS_MAX 31250
/* Such positions kept after their instruction for a later one with the
 * same (cuda_tier.c positions_up): how many arrays. radix's steps use two
 * a loop (a REPLACE at its gather's indices); 4 is not tuned. */
#define POS_KEPT 4
/* The read-ahead (cuda_tier.c cuda_tier_read_ahead): a wait that reads a
 * short device vector brings back with it the short device-only vectors
 * of its length among the stack's top READ_AHEAD_DEPTH entries, at most
 * READ_AHEAD_MAX of them (one wait, each piece its own async copy). bh_16k
 * counted (2026-11-29, emulated, its first 65 000 reads of a short device
 * vector): 30 501 found the device idle since the read before (nothing
 * queued between: a wait a read-ahead could have saved); those of the
 * earlier read's length among the top 64 entries were 26 727 of them (41 345
 * vectors brought back in all, 263 MB); among the top 16, 9 165; of any
 * length among the top 64, 33 484 (478 038 vectors, 2.4 GB). */
#define READ_AHEAD_DEPTH 64
#define READ_AHEAD_MAX 8
/* Checks left pending on the device (the permutes' indices, Int / and %,
 * RAND's range): when this many wait, the host reads them in a wait of
 * their own (-d stats counts those, "64 pending"). A bound on the records'
 * memory, not tuned: in qs_5m and bh at 2000 bodies (emulated device,
 * 2026-11-28) every check but the last few was read with some other read
 * back (1 wait of their own in each run: the end). */
#define DEVICE_DEFER_SLOTS 64
/* A fused block run whose kernels' error record is read with a later wait
 * holds its inputs until then, to replay the block on the reference
 * should it have failed; those the reference would have freed stop
 * counting against -m while held (value.h val_stop_charging). At most
 * this many of their bytes are held at once; a block run that would pass
 * it reads its record at its end, as without the device tier. A bound on
 * the memory -m does not see, not tuned. */
#define DEFER_HOLD_BYTES ((int64_t)16 << 20)

/* The modelled device of -d stats' "model" line (placement worked on
 * without a GPU): an H100's order of magnitude as the issue states it,
 * not measured here. A copy or a clear on the device (queued as a launch
 * is) costs a launch. Device memory is priced at the bytes the device
 * tier's primitives and the generated kernels touch (exec_cuda.c
 * soac_bytes). */
#define MODEL_LAUNCH_S 5e-6
#define MODEL_WAIT_S 10e-6
#define MODEL_BUS_BPS 25e9
#define MODEL_HBM_BPS 3e12

/* A unit's parts for NVRTC: at most this many bytes of kernel text each.
 * bh.5000's unit (1.4 MB, 1289 kernels), NVRTC for sm_90 on this
 * project's 2-core machine, busy with other work (CPU seconds: in all, the
 * slowest part): one unit, 217 s; parts of 64 KB cut between kernels, 154
 * s and 14 s; cut between SOACs too, large SOACs' segment helpers called
 * (VK_BIG_PART): parts of 8 KB (196: the prelude compiled 196 times) 142 s
 * and 3.4 s, of 32 KB (46) 123 s and 4.9 s. The same machine idle
 * (2026-11-27, `--cuda-check=sm_90 --no-cache -d stats`, 2 NVRTC threads):
 * 47 parts of 32 KB, 57.6 s wall, 113 CPU s, the slowest part 5.07 s (one
 * unit on one thread: 88 s wall). */
#define CUDA_PART_BYTES 32768

#endif

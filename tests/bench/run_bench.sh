#!/bin/sh
# Benchmark runner for vinterp: every backend on every benchmark program.
#
#   sh tests/bench/run_bench.sh [options] [DIR]
#
# DIR defaults to ../shared/bench next to the repository.  Each DIR/*.vcode
# is run under each backend as `bin/vinterp --backend=B -m 1000000000 FILE`:
# one discarded warm-up run, then the median of N timed runs; the output is
# checked against DIR/NAME.expected (all but the last line, the program's own
# timer; its value, the seconds of the program's timed region, is reported
# too).  Fused backends get one more run with `-d stats` for the kernel
# launches and host<->device bytes.  The table goes to stdout and, with a
# header naming the machine, commit and date, to tests/bench/RESULTS.md; the
# speed-up of each backend over ref is drawn to tests/bench/speedup.png when
# gnuplot is installed (sh .ci/install-deps bench).  Progress goes to stderr.
# Exit status is 1 if any output mismatched or any run failed.
#
# Options:
#   -n N              timed runs per program and backend (default 5)
#   --backends LIST   e.g. ref,lcu (default: every available backend; ref
#                     always, lcu/cpu/cuda/auto-cold when bin/vinterp runs them)
#   --quick           only programs whose classic time is < 1 s, one run, no
#                     warm-up; writes build/bench/RESULTS-quick.md and
#                     build/bench/speedup-quick.png instead (make bench-quick)
#   --classic PATH    also time the classic interpreter (classic command line,
#                     e.g. /work/classic/bin/vinterp from tests/bench/build_classic.sh)
#                     in the same run, interleaved run by run, as "classic":
#                     columns "classic -O2 s (this run)", "classic timed s (this
#                     run)" and per row "÷ classic" / "timed ÷ classic" (whole
#                     process / the program's own timed region, last stdout
#                     line); --ref-interp PATH is the old name of this option
#   --backends ...,auto-cold  auto-cold = bin/vinterp with no --backend and a
#                     fresh empty kernel cache per run (VINTERP_CACHE_DIR), so
#                     kernel compilation is included (in the default list)
#   --no-floor, --floor-threads T  dotp_* and muladd_* also get the memory-
#                     bandwidth floor of their timed region (tests/bench/floor.c,
#                     built into build/bench/floor; T OpenMP threads, default 2):
#                     columns "floor s" and "timed region ÷ floor"; the floor
#                     runs once before a program and once in every round
#                     of its timed runs, and is the median of those
#   --settle K        after their --tier=sync run, K warm-up runs (default 6)
#                     of the tiered warm columns (cpu, cuda, cpu-reassoc)
#                     that settle the tiers' verdicts
#   --interp PATH     our interpreter (default bin/vinterp)
#   --cache-dir DIR   the warm fused backends' kernel cache (default: a new
#                     temporary one); with --backends ...,cuda-eager (cuda
#                     under --tier=eager) and cubins there, no compile at all
#   --programs LIST   only these programs
#   --timeout S       kill a run after S s (default 900, 120 with --quick;
#                     0: no limit)
#   --warmup W, --no-stats, -o FILE ('-': stdout only), --chart PNG ('': none)
#
# The lcu backend is a tree-walking evaluator, 10-40x slower than ref: at the
# benchmark sizes a full run with lcu takes over an hour on 2 cores (radix_10m
# alone needs about 20 min a run and hits the timeout).  Use
# --backends ref (or make bench-quick) for a short run.  Timings are only
# meaningful on an otherwise idle machine; RESULTS.md records the load average.
# The work is done by bench.py beside this script.
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/bench.py" "$@"

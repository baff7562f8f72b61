#!/bin/sh
# Benchmark runner for vinterp.
#
#   sh tests/bench/run_bench.sh [-n N] [--quick] [INTERP] [DIR]
#
# INTERP defaults to bin/vinterp of this repository, DIR to ../shared/bench
# next to the repository.  Each DIR/*.vcode is run N times (default 3) as
# `INTERP -m 1000000000 FILE`; the result is a Markdown table on stdout
# (progress goes to stderr).  Exit status is 1 if any output mismatched.
# The work is done by bench.py beside this script.
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/bench.py" "$@"

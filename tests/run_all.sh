#!/bin/sh
# tests/run_all.sh INTERP BUILD — every test of the project: the unit test
# binaries under BUILD/tests/unit, then the golden, error and demo programs.
# Each runner ends with "N passed, N failed"; the last line here is the sum.
interp=${1:-bin/vinterp}
build=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

t_last=$(date +%s)

count() {
    # Take the runner's closing line and add it to the totals; say how long
    # the section took when it took 5 s or more (CI's time is budgeted).
    now=$(date +%s)
    if [ $((now - t_last)) -ge 5 ]; then
        echo "  (took $((now - t_last)) s)"
    fi
    t_last=$now
    line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ -z "$line" ]; then
        echo "  (no result line: counted as one failure)"
        failed=$((failed + 1))
        return
    fi
    p=$(echo "$line" | awk '{ for (i = 2; i <= NF; i++) if ($i == "passed,") print $(i - 1) }')
    f=$(echo "$line" | awk '{ for (i = 2; i <= NF; i++) if ($i == "failed" || $i == "failed,") print $(i - 1) }')
    passed=$((passed + p))
    failed=$((failed + f))
}

echo "== layers: no folder includes a header of a layer above it"
sh "$here/check_layers.sh" >"$log" 2>&1
grep -v ' passed, ' "$log" | head -n 40
tail -n 1 "$log"
count

for t in "$build"/tests/unit/*; do
    [ -x "$t" ] || continue
    echo "== unit: $(basename "$t")"
    "$t" >"$log" 2>&1
    grep -v ' passed, ' "$log" | head -n 40
    tail -n 1 "$log"
    count
done

for dir in golden errors demo; do
    [ -d "$here/$dir" ] || continue
    echo "== $dir programs"
    python3 "$here/run_golden.py" "$here/$dir" "$interp" >"$log" 2>&1
    grep -v ' passed, ' "$log" | head -n 60
    tail -n 1 "$log"
    count
done

# The reference with every elementwise loop, one-segment DIST and INDEX
# split between three threads however short (runtime/core/par.h): the same
# answers and errors.
for dir in golden errors; do
    echo "== $dir programs, ref, loops split between 3 threads (VINTERP_PAR_MIN=1)"
    VINTERP_BACKEND=ref VINTERP_PAR_MIN=1 VINTERP_THREADS=3 python3 "$here/run_golden.py" "$here/$dir" "$interp" >"$log" 2>&1
    grep -v ' passed, ' "$log" | head -n 60
    tail -n 1 "$log"
    count
done

# Lazy fills (runtime/core/value.h) from one element up, so that every
# one-segment DIST is one: read as a scalar by the elementwise instructions,
# made by the others, by the fused backends' blocks and by the printer.
for dir in golden errors; do
    echo "== $dir programs, ref, every one-segment DIST a lazy fill (VINTERP_LAZY_MIN=1)"
    VINTERP_BACKEND=ref VINTERP_LAZY_MIN=1 python3 "$here/run_golden.py" "$here/$dir" "$interp" >"$log" 2>&1
    grep -v ' passed, ' "$log" | head -n 60
    tail -n 1 "$log"
    count
done

# The default run is tiered: small programs stay in the interpreter. The
# generated code of every block, compiled before the run (--tier=eager):
if command -v "${VINTERP_CC:-cc}" >/dev/null 2>&1; then
    for dir in golden errors; do
        echo "== $dir programs, cpu backend, every block compiled (--tier=eager)"
        VINTERP_BACKEND=cpu VINTERP_TIER=eager python3 "$here/run_golden.py" "$here/$dir" "$interp" >"$log" 2>&1
        grep -v ' passed, ' "$log" | head -n 60
        tail -n 1 "$log"
        count
    done
    echo "== golden programs, cpu backend, every block compiled, every one-segment DIST lazy (VINTERP_LAZY_MIN=1)"
    VINTERP_BACKEND=cpu VINTERP_TIER=eager VINTERP_LAZY_MIN=1 python3 "$here/run_golden.py" "$here/golden" "$interp" >"$log" 2>&1
    grep -v ' passed, ' "$log" | head -n 60
    tail -n 1 "$log"
    count
    # The tiers' own paths, every block promoted at its first run: compiled
    # one unit per block on the main thread (sync), or on the worker while
    # the interpreter goes on (background, with no budget to wait for;
    # which runs use the compiled code depends on timing, the answers may
    # not).
    for mode in sync background; do
        echo "== golden programs, cpu backend, --tier=$mode, every block promoted at its first run"
        VINTERP_BACKEND=cpu VINTERP_TIER=$mode VINTERP_TIER_WORK=0 VINTERP_TIER_MIN_LEN=0 VINTERP_TIER_DELAY_MS=0 \
            VINTERP_TIER_BUDGET_MS=0 \
            python3 "$here/run_golden.py" "$here/golden" "$interp" >"$log" 2>&1
        grep -v ' passed, ' "$log" | head -n 60
        tail -n 1 "$log"
        count
    done
fi

# The CUDA skeletons and the cuda executor's protocol on the emulated device
# (no GPU needed; blocks of 16 threads), every generated kernel sent to the
# device: the golden programs must give the same answers there, with the
# reduction strategies chosen by size (auto) and with each one forced.
if command -v "${VINTERP_CXX:-c++}" >/dev/null 2>&1; then
    for strategy in auto lib thread warp block; do
        echo "== golden programs, cuda backend on the emulated device, reductions: $strategy"
        VINTERP_BACKEND=cuda VINTERP_TIER=eager VINTERP_CUDA_EMULATE=1 VINTERP_CUDA_HOST_MAX_ELEM=0 VINTERP_CUDA_HOST_MAX_SCAN=0 \
            VINTERP_CUDA_HOST_MAX_LIB=0 VINTERP_CUDA_STRATEGY=$strategy \
            python3 "$here/run_golden.py" "$here/golden" "$interp" >"$log" 2>&1
        grep -v ' passed, ' "$log" | head -n 60
        tail -n 1 "$log"
        count
    done
    echo "== errors programs, cuda backend on the emulated device"
    VINTERP_BACKEND=cuda VINTERP_TIER=eager VINTERP_CUDA_EMULATE=1 VINTERP_CUDA_HOST_MAX_ELEM=0 VINTERP_CUDA_HOST_MAX_SCAN=0 \
        VINTERP_CUDA_HOST_MAX_LIB=0 python3 "$here/run_golden.py" "$here/errors" "$interp" >"$log" 2>&1
    grep -v ' passed, ' "$log" | head -n 60
    tail -n 1 "$log"
    count
    echo "== generated programs: cpu and cuda (emulated, every strategy) against ref"
    python3 "$here/run_diff_random.py" "$interp" -n 10 >"$log" 2>&1
    grep -v ' passed, ' "$log" | head -n 40
    tail -n 1 "$log"
    count
fi

# Float sums whose order matters (tests/float_order): the classic's digits
# left to right, and --float-reassoc's chunks (vcode/semantics.h), on ref
# (also split between threads), lcu and cpu; cuda sums as trees, so there
# it runs under --check, whose error bounds must pass it.
echo "== float_order programs, ref"
VINTERP_BACKEND=ref python3 "$here/run_golden.py" "$here/float_order" "$interp" >"$log" 2>&1
grep -v ' passed, ' "$log" | head -n 40
tail -n 1 "$log"
count
echo "== float_order programs, ref, reductions split between 3 threads (VINTERP_PAR_MIN=1)"
VINTERP_BACKEND=ref VINTERP_PAR_MIN=1 VINTERP_THREADS=3 python3 "$here/run_golden.py" "$here/float_order" "$interp" >"$log" 2>&1
grep -v ' passed, ' "$log" | head -n 40
tail -n 1 "$log"
count
echo "== float_order programs, lcu, every block planned (--tier=eager)"
VINTERP_BACKEND=lcu VINTERP_TIER=eager python3 "$here/run_golden.py" "$here/float_order" "$interp" >"$log" 2>&1
grep -v ' passed, ' "$log" | head -n 40
tail -n 1 "$log"
count
if command -v "${VINTERP_CC:-cc}" >/dev/null 2>&1; then
    for mode in eager sync; do
        # four OpenMP threads (the checked parallel float sums run from two)
        echo "== float_order programs, cpu backend, --tier=$mode, every block promoted at its first run, 4 threads"
        OMP_NUM_THREADS=4 VINTERP_BACKEND=cpu VINTERP_TIER=$mode VINTERP_TIER_WORK=0 VINTERP_TIER_MIN_LEN=0 \
            python3 "$here/run_golden.py" "$here/float_order" "$interp" >"$log" 2>&1
        grep -v ' passed, ' "$log" | head -n 40
        tail -n 1 "$log"
        count
    done
fi
if command -v "${VINTERP_CXX:-c++}" >/dev/null 2>&1; then
    echo "== float_order programs, cuda backend on the emulated device, under --check"
    fo_pass=0
    fo_fail=0
    for v in "$here"/float_order/*.vcode; do
        a=$(cat "${v%.vcode}.args" 2>/dev/null)
        # shellcheck disable=SC2086
        if VINTERP_BACKEND=cuda VINTERP_TIER=eager VINTERP_CUDA_EMULATE=1 VINTERP_CUDA_HOST_MAX_ELEM=0 \
            VINTERP_CUDA_HOST_MAX_SCAN=0 VINTERP_CUDA_HOST_MAX_LIB=0 "$interp" --check $a "$v" >/dev/null 2>"$log"; then
            fo_pass=$((fo_pass + 1))
        else
            fo_fail=$((fo_fail + 1))
            echo "  FAIL $(basename "$v"): $(head -c 300 "$log")"
        fi
    done
    echo "$fo_pass passed, $fo_fail failed" | tee "$log"
    count
fi

# --check against error bounds: reassociated float sums pass, wrong kernels
# fail (runtime/fused/check_bound.h; skips what lacks a compiler).
echo "== --check: error bounds (tests/check)"
python3 "$here/run_check_bound.py" "$interp" >"$log" 2>&1
grep -v ' passed, ' "$log" | head -n 40
tail -n 1 "$log"
count

echo "== command line"
python3 "$here/run_cli.py" "$interp" >"$log" 2>&1
grep -v ' passed, ' "$log" | head -n 20
tail -n 1 "$log"
count

echo "== the -m limit under every backend"
python3 "$here/run_mem_limits.py" "$interp" >"$log" 2>&1
grep -v ' passed, ' "$log" | head -n 20
tail -n 1 "$log"
count

echo "== tiers"
python3 "$here/run_tiers.py" "$interp" >"$log" 2>&1
grep -v ' passed, ' "$log" | head -n 20
tail -n 1 "$log"
count

# Translation stays linear in the program: a chain of 20000 functions,
# blocks of 8000 vector instructions (tests/gen_long_programs.py).
echo "== long programs: inlining budget, fusion of long blocks"
python3 "$here/run_long_programs.py" "$interp" >"$log" 2>&1
grep -v ' passed, ' "$log" | head -n 20
tail -n 1 "$log"
count

# The fusion ILP is bounded by solver work, not time: the same plans with
# every CPU busy.
echo "== block plans: the same on an idle and on a busy machine"
python3 "$here/run_plan_determinism.py" "$interp" >"$log" 2>&1
grep -v ' passed, ' "$log" | head -n 20
tail -n 1 "$log"
count

# The NESL front-end scripts (nesl-lib/), run against the corpus programs.
if [ -d "$here/../../shared/corpus" ]; then
    echo "== nesl-lib scripts"
    sh "$here/../nesl-lib/selftest.sh" "$(cd "$(dirname "$interp")" && pwd)/$(basename "$interp")" >"$log" 2>&1
    grep -v ' passed, ' "$log" | grep -v '^ok ' | head -n 20
    tail -n 1 "$log"
    count
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

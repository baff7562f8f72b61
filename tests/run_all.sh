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

# The compiles after a run (VINTERP_TIER_AFTER, runtime/fused/tier_after.h)
# are off here: the default leaves a detached process compiling into the
# cache after each run that ends with hot blocks without code, which would
# pile up beside the next runs. run_tiers.py tests them, on gates it
# controls; `make valgrind` runs one under valgrind.
export VINTERP_TIER_AFTER=off

# show: what a runner printed. A runner that failed (or printed no result
# line): every FAIL line of its log, all of them, then the log's tail.
# One that passed: its notes (at most 40 lines), then its result line.
show() {
    line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    f=$(echo "$line" | awk '{ for (i = 2; i <= NF; i++) if ($i == "failed" || $i == "failed,") print $(i - 1) }')
    if [ -z "$line" ] || [ "${f:-1}" -ne 0 ]; then
        grep -E '^ *FAIL' "$log"
        echo "  -- the last 30 lines of its log:"
        tail -n 30 "$log" | sed 's/^/  | /'
    else
        grep -v -E ' passed, |^ok ' "$log" | head -n 40
        echo "$line"
    fi
}

# section TITLE COMMAND...: run one runner into the log, show it, count it.
section() {
    echo "== $1"
    shift
    "$@" >"$log" 2>&1
    show
    count
}

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

section "layers: no folder includes a header, no archive a symbol, of a layer above it" sh "$here/check_layers.sh" "$build"

for t in "$build"/tests/unit/*; do
    [ -x "$t" ] || continue
    section "unit: $(basename "$t")" "$t"
done

for dir in golden errors demo; do
    [ -d "$here/$dir" ] || continue
    section "$dir programs" python3 "$here/run_golden.py" "$here/$dir" "$interp"
done

# The reference with every elementwise loop, one-segment DIST and INDEX
# split between three threads however short (runtime/core/par.h): the same
# answers and errors.
for dir in golden errors; do
    section "$dir programs, ref, loops split between 3 threads (VINTERP_PAR_MIN=1)" \
        env VINTERP_BACKEND=ref VINTERP_PAR_MIN=1 VINTERP_THREADS=3 python3 "$here/run_golden.py" "$here/$dir" "$interp"
done

# Lazy fills (runtime/core/value.h) from one element up, so that every
# one-segment DIST is one: read as a scalar by the elementwise instructions,
# made by the others, by the fused backends' blocks and by the printer.
for dir in golden errors; do
    section "$dir programs, ref, every one-segment DIST a lazy fill (VINTERP_LAZY_MIN=1)" \
        env VINTERP_BACKEND=ref VINTERP_LAZY_MIN=1 python3 "$here/run_golden.py" "$here/$dir" "$interp"
done

# The default run is tiered: small programs stay in the interpreter. The
# generated code of every block, compiled before the run (--tier=eager):
if command -v "${VINTERP_CC:-cc}" >/dev/null 2>&1; then
    for dir in golden errors; do
        section "$dir programs, cpu backend, every block compiled (--tier=eager)" \
            env VINTERP_BACKEND=cpu VINTERP_TIER=eager python3 "$here/run_golden.py" "$here/$dir" "$interp"
    done
    section "golden programs, cpu backend, every block compiled, every one-segment DIST lazy (VINTERP_LAZY_MIN=1)" \
        env VINTERP_BACKEND=cpu VINTERP_TIER=eager VINTERP_LAZY_MIN=1 python3 "$here/run_golden.py" "$here/golden" "$interp"
    # The tiers' own paths, every block promoted at its first run: compiled
    # one unit per block on the main thread (sync), or on the worker while
    # the interpreter goes on (background, with no budget to wait for;
    # which runs use the compiled code depends on timing, the answers may
    # not).
    for mode in sync background; do
        section "golden programs, cpu backend, --tier=$mode, every block promoted at its first run" \
            env VINTERP_BACKEND=cpu VINTERP_TIER=$mode VINTERP_TIER_WORK=0 VINTERP_TIER_MIN_LEN=0 VINTERP_TIER_DELAY_MS=0 \
            VINTERP_TIER_BUDGET_MS=0 python3 "$here/run_golden.py" "$here/golden" "$interp"
    done
fi

# The CUDA skeletons and the cuda executor's protocol on the emulated device
# (no GPU needed; blocks of 16 threads), every generated kernel sent to the
# device: the golden programs must give the same answers there, with the
# reduction strategies chosen by size (auto) and with each one forced.
device_env="VINTERP_BACKEND=cuda VINTERP_TIER=eager VINTERP_CUDA_EMULATE=1 VINTERP_CUDA_HOST_MAX_ELEM=0
    VINTERP_CUDA_HOST_MAX_SCAN=0 VINTERP_CUDA_HOST_MAX_LIB=0"
if command -v "${VINTERP_CXX:-c++}" >/dev/null 2>&1; then
    for strategy in auto lib thread warp block; do
        # shellcheck disable=SC2086
        section "golden programs, cuda backend on the emulated device, reductions: $strategy" \
            env $device_env VINTERP_CUDA_STRATEGY=$strategy python3 "$here/run_golden.py" "$here/golden" "$interp"
    done
    # shellcheck disable=SC2086
    section "errors programs, cuda backend on the emulated device" \
        env $device_env python3 "$here/run_golden.py" "$here/errors" "$interp"
    # The device tier (runtime/fused/cuda_tier.h): every vector placed on
    # the device from one element up, so that every instruction it runs
    # runs there; the answers and the errors the reference's.
    for dir in golden errors; do
        section "$dir programs, cuda backend's device tier on the emulated device, every vector there (VINTERP_DEVICE_MIN=1)" \
            env VINTERP_BACKEND=cuda VINTERP_TIER=off VINTERP_CUDA_EMULATE=1 VINTERP_DEVICE_TIER=on VINTERP_DEVICE_MIN=1 \
            python3 "$here/run_golden.py" "$here/$dir" "$interp"
    done
    section "golden programs, device tier, vectors of 3 elements up there (shorter ones on the host)" \
        env VINTERP_BACKEND=cuda VINTERP_TIER=off VINTERP_CUDA_EMULATE=1 VINTERP_DEVICE_TIER=on VINTERP_DEVICE_MIN=3 \
        python3 "$here/run_golden.py" "$here/golden" "$interp"
    # ... and over the library's own kernels (kernels/vk_*.cu) run on the
    # host (tests/kernels_host), in place of the emulated device's
    # primitives: what the first GPU will run, every thread a fiber
    prims=$(cd "$build" && pwd)/kernels_host/libvkernels_host.so
    if [ -f "$prims" ]; then
        for dir in golden errors; do
            section "$dir programs, device tier, every vector there, the library's own kernels run on the host" \
                env VINTERP_BACKEND=cuda VINTERP_TIER=off VINTERP_CUDA_EMULATE=1 VINTERP_DEVICE_TIER=on \
                VINTERP_DEVICE_MIN=1 VINTERP_CUDA_EMULATE_PRIMS="$prims" python3 "$here/run_golden.py" "$here/$dir" "$interp"
        done
        section "device tier with the library's own kernels on the host: placement, transfers, faults, -m" \
            env VINTERP_CUDA_EMULATE_PRIMS="$prims" python3 "$here/run_device_tier.py" "$interp"
    fi
    # ... and the real device's code (runtime/device/cuda_real.c: the
    # driver, the library's memory and copies, events) over the host
    # standing in for a GPU: a stand-in driver and the same library
    driver=$(cd "$build" && pwd)/kernels_host/libcuda_host.so
    if [ -f "$prims" ] && [ -f "$driver" ]; then
        for dir in golden errors; do
            section "$dir programs, device tier, every vector there, the real device's code on the host standing in for a GPU" \
                env VINTERP_BACKEND=cuda VINTERP_TIER=off VINTERP_DEVICE_TIER=on VINTERP_DEVICE_MIN=1 \
                VINTERP_TEST_CUDA_DRIVER="$driver" VINTERP_KERNELS_LIB="$prims" \
                python3 "$here/run_golden.py" "$here/$dir" "$interp"
        done
        section "device tier, the real device's code on the host standing in for a GPU: placement, transfers, faults, -m" \
            env DEVICE_TIER_REAL=1 VINTERP_TEST_CUDA_DRIVER="$driver" VINTERP_KERNELS_LIB="$prims" \
            python3 "$here/run_device_tier.py" "$interp"
    fi
    # Fused blocks on top of the device tier: every block fused (its units
    # from the runs above), every vector between them on the device; a
    # block's MAKE_SEGDES and LENGTHS on device operands made there.
    for dir in golden errors; do
        # shellcheck disable=SC2086
        section "$dir programs, fused blocks on top of the device tier (--tier=eager, VINTERP_DEVICE_MIN=1)" \
            env $device_env VINTERP_DEVICE_TIER=on VINTERP_DEVICE_MIN=1 python3 "$here/run_golden.py" "$here/$dir" "$interp"
    done
    section "device tier: placement in a timed region, a planted transfer, faults, -m" \
        python3 "$here/run_device_tier.py" "$interp"
    section "generated programs: cpu and cuda (emulated, every strategy) against ref" \
        python3 "$here/run_diff_random.py" "$interp" -n 10
    section "generated programs: the device tier's elementwise chains against ref" \
        python3 "$here/run_chain_random.py" "$interp" -n 24
fi

# Float sums whose order matters (tests/float_order): the classic's digits
# left to right, and --float-reassoc's chunks (vcode/semantics.h), on ref
# (also split between threads), lcu and cpu; cuda sums as trees, so there
# it runs under --check, whose error bounds must pass it.
section "float_order programs, ref" \
    env VINTERP_BACKEND=ref python3 "$here/run_golden.py" "$here/float_order" "$interp"
section "float_order programs, ref, reductions split between 3 threads (VINTERP_PAR_MIN=1)" \
    env VINTERP_BACKEND=ref VINTERP_PAR_MIN=1 VINTERP_THREADS=3 python3 "$here/run_golden.py" "$here/float_order" "$interp"
# the errors under the lcu evaluator too: a fused block fails where the
# reference fails (rt_dead_*: an error whose result is dropped)
section "errors programs, lcu, every block planned (--tier=eager)" \
    env VINTERP_BACKEND=lcu VINTERP_TIER=eager python3 "$here/run_golden.py" "$here/errors" "$interp"
section "float_order programs, lcu, every block planned (--tier=eager)" \
    env VINTERP_BACKEND=lcu VINTERP_TIER=eager python3 "$here/run_golden.py" "$here/float_order" "$interp"
if command -v "${VINTERP_CC:-cc}" >/dev/null 2>&1; then
    for mode in eager sync; do
        # four OpenMP threads (the checked parallel float sums run from two)
        section "float_order programs, cpu backend, --tier=$mode, every block promoted at its first run, 4 threads" \
            env OMP_NUM_THREADS=4 VINTERP_BACKEND=cpu VINTERP_TIER=$mode VINTERP_TIER_WORK=0 VINTERP_TIER_MIN_LEN=0 \
            python3 "$here/run_golden.py" "$here/float_order" "$interp"
    done
fi
# each float_order program on the emulated device under --check (its .args)
float_order_check() {
    fo_pass=0
    fo_fail=0
    fo_log=$(mktemp)
    for v in "$here"/float_order/*.vcode; do
        a=$(cat "${v%.vcode}.args" 2>/dev/null)
        # shellcheck disable=SC2086
        if env $device_env "$interp" --check $a "$v" >/dev/null 2>"$fo_log"; then
            fo_pass=$((fo_pass + 1))
        else
            fo_fail=$((fo_fail + 1))
            echo "FAIL: $(basename "$v"): $(head -c 300 "$fo_log")"
        fi
    done
    rm -f "$fo_log"
    echo "$fo_pass passed, $fo_fail failed"
}
if command -v "${VINTERP_CXX:-c++}" >/dev/null 2>&1; then
    section "float_order programs, cuda backend on the emulated device, under --check" float_order_check
fi

# --check against error bounds: reassociated float sums pass, wrong kernels
# fail (runtime/fused/check_bound.h; skips what lacks a compiler).
section "--check: error bounds (tests/check)" python3 "$here/run_check_bound.py" "$interp"
section "command line" python3 "$here/run_cli.py" "$interp"
section "docs: every file and option the pages name exists; README within 160 lines" python3 "$here/check_docs.py" "$interp"
section "the -m limit under every backend" python3 "$here/run_mem_limits.py" "$interp"
section "tiers" python3 "$here/run_tiers.py" "$interp"
section "exit while the tier workers compile: 12 runs at once sharing one cache, twice" \
    sh "$here/run_exit_stress.sh" "$interp" 2
section "the GPU checklist's own logic (its compute-sanitizer verdicts)" sh "$here/bench/gpu_checklist.sh" selftest

# Translation stays linear in the program: a chain of 20000 functions,
# blocks of 8000 vector instructions (tests/gen_long_programs.py).
section "long programs: inlining budget, fusion of long blocks" python3 "$here/run_long_programs.py" "$interp"

# The fusion ILP is bounded by solver work, not time: the same plans with
# every CPU busy.
section "block plans: the same on an idle and on a busy machine" python3 "$here/run_plan_determinism.py" "$interp"

# The NESL front-end scripts (nesl-lib/), run against the corpus programs.
if [ -d "$here/../../shared/corpus" ]; then
    section "nesl-lib scripts" \
        sh "$here/../nesl-lib/selftest.sh" "$(cd "$(dirname "$interp")" && pwd)/$(basename "$interp")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

#!/bin/sh
# tests/run_races.sh INTERP BUILD — the emulated device made adversarial,
# with INTERP and BUILD from `make tsan` (ThreadSanitizer watches every
# emulated thread; runtime/device/emul_grid.h):
#   0. the tier worker's unit test (test_tier_worker: the worker, its
#      pacer and the test's own threads on a stepped clock): no report;
#   1. the emulator's unit test, blocks of 16 and 256 threads: three planted
#      races (a write-write race in a block, a read-write race in shared
#      memory without a barrier, one element written by every block) each
#      fail their launch naming the kernel, race-free kernels pass;
#   2. a sample of the corpus with every step on the emulated device, in a
#      GPU's shapes (blocks of 256 threads, warps of 32) and in a drawn
#      order: the expected output, and no report;
#   3. a race planted in the generated code (VINTERP_CG_PLANT_RACE: a
#      barrier of the group reductions left out): the run fails naming the
#      kernel and its block's VCODE lines;
#   4. the generated differential programs (every reduction strategy),
#      likewise with blocks of 256 and in a drawn order;
#   5. the tier worker and its pacer thread (tests/tier/loop.vcode, every
#      block promoted, the run waiting for the worker's events): at a
#      share of 1% with a compiler that does not end (stopped by the
#      pacer, then abandoned), at 10% and with no share (every compile
#      done): the right answer, and no report;
#   6. staged compiles (quick code, then the full code swapped in) under
#      --tier=sync and in the background: the right answer, no report;
#   7. tests/run_exit_stress.sh: 12 runs at once sharing one cache, ending
#      while their workers compile (some held as if inside NVRTC).
# Ends with "N passed, N failed".
interp=$(cd "$(dirname "${1:-build-tsan/bin/vinterp}")" && pwd)/$(basename "${1:-build-tsan/bin/vinterp}")
build=${2:-build-tsan}
here=$(cd "$(dirname "$0")" && pwd)
corpus=${VINTERP_CORPUS:-$here/../../shared/corpus}
sample=${RACE_SAMPLE:-"bn_qs bn_radix bn_batcher cu_sort_rank ts_test_remove_duplicates cu_nested_deep ex_primes"}
passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export VINTERP_CACHE_DIR="$tmp/cache"

for b in 16 256; do
    if VINTERP_CUDA_EMULATE_BLOCK=$b "$build/tests/unit/test_cuda_emul" >"$tmp/unit.log" 2>&1 &&
        grep -q ' 0 failed' "$tmp/unit.log" && grep -q 'race detection' "$tmp/unit.log" &&
        [ "$(grep -c 'WARNING: ThreadSanitizer: data race' "$tmp/unit.log")" -ge 3 ]; then
        ok
    else
        bad "test_cuda_emul, blocks of $b"
        grep -v '^ ' "$tmp/unit.log" | head -n 20
    fi
done

# the tier worker, its pacer and a test driving both on a stepped clock
if "$build/tests/unit/test_tier_worker" >"$tmp/unit.log" 2>&1 && grep -q ' 0 failed' "$tmp/unit.log" &&
    ! grep -q ThreadSanitizer "$tmp/unit.log"; then
    ok
else
    bad "test_tier_worker under ThreadSanitizer"
    grep -v '^ ' "$tmp/unit.log" | head -n 30
fi

device_env="VINTERP_TIER=eager VINTERP_CUDA_EMULATE=1 VINTERP_CUDA_EMULATE_SHAPE=real VINTERP_CUDA_EMULATE_SHUFFLE=7
    VINTERP_CUDA_HOST_MAX_ELEM=0 VINTERP_CUDA_HOST_MAX_SCAN=0 VINTERP_CUDA_HOST_MAX_LIB=0"
if [ -d "$corpus" ]; then
    for p in $sample; do
        [ -f "$corpus/$p.vcode" ] || { bad "$p: not in the corpus"; continue; }
        (cd "$corpus" && env $device_env "$interp" --backend=cuda "$p.vcode" >"$tmp/out" 2>"$tmp/err")
        rc=$?
        if [ $rc -eq 0 ] && cmp -s "$tmp/out" "$corpus/$p.expected" && ! grep -q ThreadSanitizer "$tmp/err"; then
            ok
        else
            bad "$p (exit $rc)"
            head -c 3000 "$tmp/err"
        fi
    done
else
    echo "(no corpus at $corpus: the sample is skipped)"
fi

# a race planted in the generated code (a barrier left out of the group
# reductions): the run fails, naming the kernel and the block's lines
(cd "$here/demo" && env $device_env VINTERP_CUDA_STRATEGY=block VINTERP_CG_PLANT_RACE=1 "$interp" --backend=cuda \
    segsum.vcode >"$tmp/out" 2>"$tmp/err")
rc=$?
if [ $rc -eq 1 ] && grep -q "WARNING: ThreadSanitizer: data race" "$tmp/err" &&
    grep -q "emulated kernel vk_u[0-9]*_s[0-9]*_sredb: ThreadSanitizer reported a data race" "$tmp/err" &&
    grep -q "of the block at lines" "$tmp/err"; then
    ok
else
    bad "the planted race in generated code (exit $rc)"
    grep -v '^ ' "$tmp/err" | head -n 20
fi

if env $device_env VINTERP_CUDA_EMULATE_BLOCK=256 python3 "$here/run_diff_random.py" "$interp" -n 3 >"$tmp/diff.log" 2>&1 &&
    ! grep -q ThreadSanitizer "$tmp/diff.log"; then
    ok
else
    bad "run_diff_random.py"
    grep -v '^ ' "$tmp/diff.log" | head -n 30
fi

# The tier worker and its pacer, decided by events (tests/run_tiers.py):
# the run starts once the worker has the inlined program, and ends at 1%
# once the pacer has stopped the compile (a stand-in that blocks until the
# flag goes: it is then abandoned), at 10% and with no share once every
# compile is done.
"$interp" --backend=ref "$here/tier/loop.vcode" >"$tmp/loop.expected" 2>/dev/null
printf '#!/bin/sh\nwhile [ -e "%s" ]; do sleep 0.05; done\nexec cc "$@"\n' "$tmp/blocking.on" >"$tmp/blocking-cc.sh"
chmod +x "$tmp/blocking-cc.sh"
for share in 1 10 100; do
    cc_env=
    gate=done
    if [ $share = 1 ]; then
        : >"$tmp/blocking.on"
        cc_env="VINTERP_CC=$tmp/blocking-cc.sh"
        gate=stopped
    fi
    rm -rf "$tmp/tcache"
    env $cc_env VINTERP_TIER_SHARE=$share VINTERP_TIER_DELAY_MS=0 VINTERP_TIER_BUDGET_MS=0 VINTERP_TIER_IDLE=0 \
        VINTERP_TEST_TIER_START=ready VINTERP_TEST_TIER_END=$gate "$interp" --backend=cpu \
        --tier-work=0 --cache-dir="$tmp/tcache" -d stats -d tier "$here/tier/loop.vcode" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    rm -f "$tmp/blocking.on"
    if [ $rc -eq 0 ] && [ -s "$tmp/loop.expected" ] && cmp -s "$tmp/out" "$tmp/loop.expected" &&
        ! grep -q ThreadSanitizer "$tmp/err" && grep -q "($share% of the run at most)" "$tmp/err" &&
        ! grep -q VINTERP_TEST_TIER_END "$tmp/err" &&
        { [ $share != 1 ] || grep -q "its compile stopped for the share" "$tmp/err"; } &&
        { [ $share = 1 ] || ls "$tmp/tcache"/*.so >/dev/null 2>&1; }; then
        ok
    else
        bad "the tier worker and its pacer at a share of $share% (exit $rc)"
        grep -v '^ ' "$tmp/err" | head -n 20
    fi
done

# staged compiles on the emulated device (runtime/fused/README.md, tiers
# 9): the quick code installed, the full code compiled by the worker while
# the program runs the block, then swapped in (the entry waits for it:
# VINTERP_TEST_TIER_REFINE=wait), under --tier=sync (the main thread
# compiles the quick code beside the worker's full compiles) and in the
# background
for mode in sync background; do
    rm -rf "$tmp/tcache"
    env VINTERP_CUDA_EMULATE=1 VINTERP_NVRTC_OPT=staged VINTERP_TEST_TIER_REFINE=wait VINTERP_TIER_SHARE=100 \
        VINTERP_TIER_DELAY_MS=0 VINTERP_TIER_BUDGET_MS=0 VINTERP_TIER_IDLE=0 VINTERP_TEST_TIER_START=ready \
        "$interp" --backend=cuda --tier=$mode --tier-work=0 --tier-min-len=0 --cache-dir="$tmp/tcache" -d stats \
        "$here/tier/loop.vcode" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -eq 0 ] && cmp -s "$tmp/out" "$tmp/loop.expected" && ! grep -q ThreadSanitizer "$tmp/err" &&
        grep -Eq "staged compiles: [1-9][0-9]* blocks installed with quick code first, [1-9]" "$tmp/err"; then
        ok
    else
        bad "staged compiles under --tier=$mode (exit $rc)"
        grep -v '^ ' "$tmp/err" | grep -v "^stats: tier: " | head -n 20
    fi
done

# many processes sharing one cache, ending while their workers compile
# (tests/run_exit_stress.sh), every thread watched
if sh "$here/run_exit_stress.sh" "$interp" 1 >"$tmp/stress.log" 2>&1; then
    ok
else
    bad "run_exit_stress.sh under ThreadSanitizer"
    grep -v '^ ' "$tmp/stress.log" | head -n 30
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]

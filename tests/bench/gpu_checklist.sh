#!/bin/sh
# tests/bench/gpu_checklist.sh — the GPU checklist, sized for the device
# tool: one call (the tool allows 10 minutes a call and about 15 of device
# time a session, starts included). Every section runs under its own time
# limit, so a slow one is cut, not the call, and `all` starts a section only
# while its limit fits in what is left of GPU_CALL_S (default 480 s); the
# summary is written (and printed) line by line as it goes.
#
# Here, on a machine without a GPU (nvcc needed, no device):
#     sh tests/bench/gpu_checklist.sh prepare [--classic PATH]
#   builds bin/vinterp, bin/libvkernels.so and bin/test_kernels (sm_90);
#   fills .gpu/ (ignored by git, well under the 64 MiB a call carries): a
#   sample of the corpus, the bench programs of ../shared, dotp at 100M and
#   black_scholes at 20M elements, a sample of NESL/GPU's suite
#   (../shared/neslgpu-bench), the shared libraries bin/vinterp links
#   (lp_solve's: nothing can be installed there), the classic interpreter
#   when --classic names it (built from the NESL sources, CVL -O2: see
#   tests/bench/NOTES.md), and the kernel cache with every cubin the call
#   needs for sm_90, compiled here by NVRTC (vinterp --cuda-check, the
#   whole program's unit as --tier=eager runs it), so that the call spends
#   no device time compiling.
# There, with the device tool, carrying bin, build and .gpu:
#     sh tests/bench/gpu_checklist.sh all      the sections below, in order
#   or one of them by name. The sections, with their limits (seconds):
#     check     90  kernels/ unit tests; the corpus sample with every kernel
#                   on the device under --check (floats against their
#                   error bounds: README "--check")
#     devcheck 120  the device tier's primitives on the GPU: tests/golden
#                   and tests/errors with every vector on the device,
#                   tests/run_device_tier.py on the real device
#                   (DEVICE_TIER_REAL=1), memcheck over two programs
#     devtier   90  (GPU_DEVTIER_S to change) the device tier
#                   (VINTERP_DEVICE_TIER=on --tier=off: the precompiled
#                   primitives, no NVRTC) beside ref on the two big
#                   programs and the nine: timed region, whole process,
#                   -d stats' tally and model lines; dotp_100m's Chrome trace
#                   ($OUT/dotp_100m.trace.json); the two big programs
#                   again with VINTERP_DEVICE_CHAINS=off (every elementwise
#                   instruction a launch); bh and delaunay with
#                   VINTERP_DEVICE_READ_AHEAD=off; then bh, delaunay, batcher
#                   and radix at VINTERP_DEVICE_MIN 1024, 16384 and 65536
#     big       60  dotp_100m and black_scholes_20m: ref, cuda (eager,
#                   prefilled) and the classic; the timed regions against
#                   the device's copy bandwidth; -d stats' timed-region line
#     heldout   60  NESL/GPU's programs the tests have never seen: 20 runs,
#                   8 at a time, sharing one kernel cache (the default tiers:
#                   compiles in the background, ends while compiling):
#                   the classic's lines, exit 0, no crash
#     bench    170  ref, cuda (eager, every kernel on the device, prefilled,
#                   the device tier between the fused blocks) and the
#                   classic on the nine bench programs, one warm-up and one
#                   timed run each
#     compile   45  bh.5000 (48028 instructions inlined) cold under
#                   --tier=sync --no-cache: the whole process's wall time
#                   (issue 28 asks at most 10 s on 16 cores) and -d stats'
#                   NVRTC lines (units, parts at once, the slowest part)
#     sanitize  75  compute-sanitizer: a planted out-of-bounds write must be
#                   reported; memcheck on two programs, racecheck and
#                   synccheck on one (the verdict from the sanitizer's own
#                   log, the program's output compared without it)
# The logs go to $OUT (else .gpu/out); $OUT/SUMMARY.md is the short record:
# copy what it says to tests/bench/GPU_SUMMARY.md.
#
# Here, and in make test:
#     sh tests/bench/gpu_checklist.sh selftest
#   checks what of it runs without a GPU (the compute-sanitizer verdicts).
#     sh tests/bench/gpu_checklist.sh dry [SECTION]
#   runs every section (or one) on the emulated device (VINTERP_CUDA_EMULATE=1) with
#   small sizes, no sanitizer, no prefilled cache: the script's own logic,
#   before a GPU session depends on it.
set -u
cd "$(dirname "$0")/../.." || exit 1
root=$(pwd)
out=${OUT:-$root/.gpu/out}
mode=${1:-}
SAMPLE="bn_qs bn_radix bn_batcher bn_delaunay cu_nested_deep ex_primes cu_sort_rank ts_test_remove_duplicates er_div0"
HELDOUT="bh.1000 bh.5000 black-scholes.100000 dotp.1000000 delaunay.10000 batcher quickhull.100000 qs.100000"
# every kernel on the device, and the whole program's unit compiled before the run
DEVICE_ENV="VINTERP_TIER=eager VINTERP_CUDA_HOST_MAX_ELEM=0 VINTERP_CUDA_HOST_MAX_SCAN=0 VINTERP_CUDA_HOST_MAX_LIB=0"
ARCH=sm_90

scale() { # scale SRC DST N: the program with its size constant set to N
    awk -v n="$3" 'done == 0 && /^CONST INT [0-9]+$/ && seen { $3 = n; done = 1 } /^FUNC MAIN/ { seen = 1 } { print }' \
        "$1" >"$2"
}

# sanitizer_verdict LOG: compute-sanitizer's verdict from its log file (its
# summary line: "ERROR SUMMARY: N errors" for memcheck and synccheck,
# "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)" for
# racecheck): "clean", "errors N", or "no summary" (it did not finish).
sanitizer_verdict() {
    awk '
        /ERROR SUMMARY: [0-9]+ error/ { for (i = 1; i <= NF; i++) if ($i == "SUMMARY:") n = $(i + 1); seen = 1 }
        /RACECHECK SUMMARY: [0-9]+ hazard/ { for (i = 1; i <= NF; i++) if ($i == "SUMMARY:") n = $(i + 1); seen = 1 }
        END { if (!seen) print "no summary"; else if (n + 0 == 0) print "clean"; else print "errors " n }
    ' "$1" 2>/dev/null || echo "no summary"
}

# same_but_timer A B: A's lines equal B's but for B's last one (the
# program's own timer)
same_but_timer() {
    sbt_n=$(wc -l <"$2")
    [ "$(head -n $((sbt_n - 1)) "$1")" = "$(head -n $((sbt_n - 1)) "$2")" ] && [ "$(wc -l <"$1")" -eq "$sbt_n" ]
}

case "$mode" in
selftest)
    # the parts that run without a GPU: the sanitizer verdicts of sample logs
    t=$(mktemp -d)
    pass=0; fail=0
    expect() { # expect WANT LOGTEXT
        printf '%s\n' "$2" >"$t/log"
        got=$(sanitizer_verdict "$t/log")
        if [ "$got" = "$1" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: '$2' -> '$got', not '$1'"; fi
    }
    expect clean "========= COMPUTE-SANITIZER
========= ERROR SUMMARY: 0 errors"
    expect "errors 1" "========= Invalid __global__ write of size 4 bytes
=========     at planted_oob_write(int *, int)+0x70
========= ERROR SUMMARY: 1 error"
    expect "errors 3" "========= ERROR SUMMARY: 3 errors"
    expect clean "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
    expect "errors 2" "========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)"
    expect "no summary" "========= COMPUTE-SANITIZER
========= Program hit cudaErrorLaunchFailure"
    expect "no summary" ""
    printf 'a\nb\n( 1.5 )\n' >"$t/x"; printf 'a\nb\n( 2.5 )\n' >"$t/y"; printf 'a\nc\n( 2.5 )\n' >"$t/z"
    if same_but_timer "$t/x" "$t/y" && ! same_but_timer "$t/z" "$t/y"; then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "FAIL: same_but_timer"; fi
    rm -rf "$t"
    echo "$pass passed, $fail failed"
    [ $fail -eq 0 ]
    exit ;;
prepare)
    shift
    classic=
    [ "${1:-}" = --classic ] && classic=${2:-}
    make -j2 all kernels-check || exit 1
    rm -rf .gpu
    mkdir -p .gpu/lib .gpu/big .gpu/corpus .gpu/cache .gpu/heldout
    for p in $SAMPLE; do cp ../shared/corpus/$p.vcode ../shared/corpus/$p.expected .gpu/corpus/; done
    for p in $HELDOUT; do
        cp ../shared/neslgpu-bench/$p.vcode ../shared/neslgpu-bench/$p.expected .gpu/heldout/ 2>/dev/null ||
            echo "prepare: $p not in ../shared/neslgpu-bench"
    done
    cp -r ../shared/bench .gpu/bench
    ldd bin/vinterp | awk '$3 ~ /^\// && $1 !~ /^(libc|libm|libdl|libpthread|librt)\.so/ { print $3 }' |
        while read -r p; do cp -L "$p" .gpu/lib/; done
    if [ -n "$classic" ]; then
        # with the libraries it links that the device machine lacks (flex's)
        mkdir -p .gpu/classic && cp "$classic" .gpu/classic/vinterp || exit 1
        ldd "$classic" | awk '$3 ~ /^\// && $1 !~ /^(libc|libm|libdl|libpthread|librt)\.so/ { print $3 }' |
            while read -r p; do cp -L "$p" .gpu/lib/; done
    fi
    scale ../shared/bench/dotp_50m.vcode .gpu/big/dotp_100m.vcode 100000000
    scale ../shared/bench/black_scholes_8m.vcode .gpu/big/black_scholes_20m.vcode 20000000
    # every cubin the call needs: the eager unit of each program it runs
    # with the cuda backend under --tier=eager (the host paths as the
    # device runs them: DEVICE_ENV for the sample, the defaults elsewhere)
    t0=$(date +%s)
    for p in $SAMPLE; do
        (cd .gpu/corpus && env $DEVICE_ENV "$root/bin/vinterp" --cuda-check=$ARCH --cache-dir="$root/.gpu/cache" \
            $p.vcode >/dev/null) || { echo "prepare: NVRTC failed on $p"; exit 1; }
    done
    # the bench section runs every kernel on the device (no host path: its
    # C would be compiled there, by gcc, 20-60 s a program); big as is
    for f in .gpu/bench/*.vcode; do
        env $DEVICE_ENV "$root/bin/vinterp" --cuda-check=$ARCH --cache-dir="$root/.gpu/cache" -m 1000000000 "$f" \
            >/dev/null || { echo "prepare: NVRTC failed on $f"; exit 1; }
    done
    for f in .gpu/big/*.vcode; do
        "$root/bin/vinterp" --cuda-check=$ARCH --cache-dir="$root/.gpu/cache" -m 2000000000 "$f" >/dev/null ||
            { echo "prepare: NVRTC failed on $f"; exit 1; }
    done
    echo "prepare: cubins compiled in $(($(date +%s) - t0)) s"
    # cubins are mostly zeros: packed, the cache travels in a seventh of
    # the 64 MiB a call carries (unpacked there before the first section)
    tar -czf .gpu/cache.tar.gz -C .gpu cache && rm -rf .gpu/cache || exit 1
    git rev-parse --short HEAD >.gpu/commit
    du -sh .gpu bin
    echo "prepared: carry bin, build and .gpu; then run: sh tests/bench/gpu_checklist.sh all"
    exit 0 ;;
dry)
    # every section on the emulated device, small sizes, a fresh cache
    export VINTERP_CUDA_EMULATE=1
    DRY=1
    out=${OUT:-$root/build/gpu-dry}
    rm -rf "$out" "$root/build/gpu-dry-data"
    d=$root/build/gpu-dry-data
    mkdir -p "$d/corpus" "$d/heldout" "$d/big" "$d/bench" "$d/cache"
    for p in bn_qs er_div0 cu_sort_rank; do cp ../shared/corpus/$p.vcode ../shared/corpus/$p.expected "$d/corpus/"; done
    for p in dotp.1000 black-scholes.1000 bh.100; do
        cp ../shared/neslgpu-bench/$p.vcode ../shared/neslgpu-bench/$p.expected "$d/heldout/"
    done
    scale ../shared/bench/dotp_50m.vcode "$d/big/dotp_100m.vcode" 100000
    scale ../shared/bench/black_scholes_8m.vcode "$d/big/black_scholes_20m.vcode" 10000
    scale ../shared/bench/dotp_50m.vcode "$d/bench/dotp_small.vcode" 20000
    bin/vinterp --backend=ref "$d/bench/dotp_small.vcode" >"$d/bench/dotp_small.expected"
    SAMPLE="bn_qs er_div0 cu_sort_rank"
    HELDOUT="dotp.1000 black-scholes.1000 bh.100"
    data=$d
    # no prefilled cache here: the units compiled before the timed
    # sections (as prepare does with NVRTC for a GPU)
    mode=${2:-all} # dry SECTION: that section alone
    [ "$mode" = devtier ] || [ "$mode" = devcheck ] || for f in "$d"/big/*.vcode "$d"/bench/*.vcode; do
        VINTERP_CACHE_DIR="$d/cache" bin/vinterp --backend=cuda --tier=eager -m 2000000000 "$f" >/dev/null 2>&1
    done ;;
all|check|sanitize|compile|heldout|big|devtier|devcheck|bench)
    DRY=0; data=$root/.gpu
    if [ -f .gpu/cache.tar.gz ] && [ ! -d .gpu/cache ]; then tar -xzf .gpu/cache.tar.gz -C .gpu || exit 1; fi ;;
*)
    echo "usage: sh tests/bench/gpu_checklist.sh prepare [--classic PATH]|all|check|devcheck|sanitize|compile|heldout|big|devtier|bench|selftest|dry" >&2
    exit 2 ;;
esac

mkdir -p "$out"
export LD_LIBRARY_PATH="$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export VINTERP_CACHE_DIR="$data/cache"
# no compiles after a run (runtime/fused/tier_after.h): a detached NVRTC
# would run beside the next timed command
export VINTERP_TIER_AFTER=off
classic=
[ -x "$data/classic/vinterp" ] && classic=$data/classic/vinterp
summary="$out/SUMMARY.md"
log="$out/$mode.log"
exec 3>&1 >"$log" 2>&1 # the log; the summary lines also go to the caller's stdout (3) as they come
say() { echo "$*"; echo "$*" >>"$summary"; echo "$*" >&3; }
t_start=$(date +%s)
elapsed() { echo $(($(date +%s) - t_start)); }
# run_limited S CMD...: CMD under a limit of S seconds (the section's own)
run_limited() { s=$1; shift; timeout "$s" "$@"; }
: >"$summary"
say "# GPU checklist, $(date -u +%F) (commit $(cat .gpu/commit 2>/dev/null || git rev-parse --short HEAD))"
say ""
if [ "$DRY" = 1 ]; then
    say "device: the emulated device (dry run: the script's logic, not a GPU's figures)"
else
    say "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -n 1)"
fi
say "vinterp: $(bin/vinterp --version 2>&1 | head -n 1); the classic: ${classic:-not carried}"
say ""

# ---- check (90 s) ----------------------------------------------------------------
do_check() {
    s0=$(date +%s)
    left() { echo $((90 - ($(date +%s) - s0))); }
    echo "== kernels/ unit tests"
    if [ "$DRY" = 1 ]; then
        run_limited 40 build/tests/unit/test_kernels_emul >"$out/test_kernels.log" 2>&1
    else
        run_limited 40 bin/test_kernels >"$out/test_kernels.log" 2>&1
    fi
    rc=$?
    say "- kernels/ unit tests: $(grep -E 'passed, [0-9]+ failed' "$out/test_kernels.log" | tail -n 1) (exit $rc)"
    grep '^FAIL' "$out/test_kernels.log" | head -n 20 | while read -r l; do say "  $l"; done
    echo "== corpus sample: --backend=cuda --check, every kernel on the device"
    pass=0; fail=0
    for p in $SAMPLE; do
        [ "$(left)" -gt 5 ] || { say "  (check: out of time before $p)"; break; }
        (cd "$data/corpus" && env $DEVICE_ENV timeout "$(left)" "$root/bin/vinterp" --backend=cuda --check -d stats \
            $p.vcode >"$out/$p.out" 2>"$out/$p.err")
        rc=$?
        # er_div0 ends in the reference's error, as the classic does
        if [ $rc -eq 0 ] && cmp -s "$out/$p.out" "$data/corpus/$p.expected"; then pass=$((pass + 1))
        elif [ $p = er_div0 ] && [ $rc -eq 1 ] && grep -q "vinterp:" "$out/$p.err" && ! grep -q "cuda:" "$out/$p.err"; then
            pass=$((pass + 1))
        else fail=$((fail + 1)); say "  FAIL $p (exit $rc): $(grep -v '^stats' "$out/$p.err" | head -c 300)"; fi
    done
    say "- corpus sample under --check, every kernel on the device: $pass passed, $fail failed ($(elapsed) s in)"
    say "  cubins: $(cat "$out"/*.err 2>/dev/null | grep -o 'units compiled [0-9]*, cubin cache hits [0-9]*' |
        awk '{ c += $3; h += $7 } END { printf "%d compiled there, %d from the prefilled cache", c, h }')"
}

# ---- devcheck (120 s) ------------------------------------------------------------
# The device tier's primitives on the GPU (issue 29; in make test only on the
# emulated device): the golden programs and the error programs with every
# vector on the device (floats within 1e-9 relative: a CUB reduction's
# order), run_device_tier.py's checks and run_chain_random.py's programs
# (the elementwise chains) on the real device, and memcheck over one
# program with every vector on the device.
do_devcheck() {
    s0=$(date +%s)
    left() { echo $((120 - ($(date +%s) - s0))); }
    DT="VINTERP_BACKEND=cuda VINTERP_DEVICE_TIER=on VINTERP_TIER=off"
    for d in golden:1 errors:3; do
        dir=${d%%:*}
        env $DT VINTERP_DEVICE_MIN=${d##*:} timeout "$(left)" python3 tests/run_golden.py tests/$dir bin/vinterp \
            --float-rel 1e-9 >"$out/devcheck-$dir.log" 2>&1
        say "- device tier, tests/$dir with VINTERP_DEVICE_MIN=${d##*:}: $(tail -n 1 "$out/devcheck-$dir.log")"
        grep -v passed "$out/devcheck-$dir.log" | head -n 8 | while read -r l; do say "  $l"; done
    done
    DEVICE_TIER_REAL=$((1 - DRY)) timeout "$(left)" python3 tests/run_device_tier.py bin/vinterp >"$out/devcheck-tier.log" 2>&1
    say "- run_device_tier.py on the GPU: $(tail -n 1 "$out/devcheck-tier.log")"
    grep '^FAIL' "$out/devcheck-tier.log" | head -n 12 | cut -c1-240 | while read -r l; do say "  $l"; done
    DEVICE_TIER_REAL=$((1 - DRY)) timeout "$(left)" python3 tests/run_chain_random.py bin/vinterp -n 12 \
        >"$out/devcheck-chains.log" 2>&1
    say "- run_chain_random.py on the GPU (vk_expr, vk_expr_reduce, their gathers and checks): $(tail -n 1 "$out/devcheck-chains.log")"
    grep '^FAIL' "$out/devcheck-chains.log" | head -n 6 | cut -c1-240 | while read -r l; do say "  $l"; done
    if [ "$DRY" = 0 ] && command -v compute-sanitizer >/dev/null 2>&1; then
        for p in bn_qs cu_sort_rank; do
            [ "$(left)" -gt 5 ] || break
            (cd "$data/corpus" && env $DT VINTERP_DEVICE_MIN=1 timeout "$(left)" compute-sanitizer --tool memcheck \
                --log-file "$out/$p.dt.san" --error-exitcode 9 "$root/bin/vinterp" $p.vcode \
                >"$out/$p.dt.out" 2>"$out/$p.dt.err")
            rc=$?
            say "- memcheck, device tier, every vector on the device, $p: exit $rc, $(sanitizer_verdict "$out/$p.dt.san")$(
                cmp -s "$out/$p.dt.out" "$data/corpus/$p.expected" || echo ', OUTPUT DIFFERS')"
        done
    fi
}

# ---- sanitize (75 s) -------------------------------------------------------------
do_sanitize() {
    if [ "$DRY" = 1 ] || ! command -v compute-sanitizer >/dev/null 2>&1; then
        say "- compute-sanitizer: not run (a dry run, or not on this machine)"
        return
    fi
    s0=$(date +%s)
    left() { echo $((75 - ($(date +%s) - s0))); }
    # the check can fail: a planted out-of-bounds write must be reported
    timeout 20 compute-sanitizer --tool memcheck --log-file "$out/plant-oob.san" --error-exitcode 9 \
        bin/test_kernels --plant-oob >"$out/plant-oob.out" 2>&1
    rc=$?
    v=$(sanitizer_verdict "$out/plant-oob.san")
    if [ $rc -eq 9 ] && [ "${v%% *}" = errors ]; then
        say "- compute-sanitizer memcheck: the planted out-of-bounds write reported ($v)"
    else
        say "- compute-sanitizer memcheck: FAIL: the planted out-of-bounds write not reported (exit $rc, $v)"
    fi
    for tp in memcheck:cu_sort_rank memcheck:ex_primes racecheck:cu_sort_rank synccheck:cu_sort_rank; do
        tool=${tp%%:*}
        p=${tp##*:}
        [ "$(left)" -gt 5 ] || { say "  (sanitize: out of time before $tool $p)"; break; }
        [ -f "$data/corpus/$p.vcode" ] || continue
        # the sanitizer's own lines to its log file, the program's output
        # alone on stdout (compared with .expected)
        (cd "$data/corpus" && env $DEVICE_ENV timeout "$(left)" compute-sanitizer --tool $tool \
            --log-file "$out/$p.$tool.san" --error-exitcode 9 \
            "$root/bin/vinterp" --backend=cuda $p.vcode >"$out/$p.$tool.out" 2>"$out/$p.$tool.err")
        rc=$?
        v=$(sanitizer_verdict "$out/$p.$tool.san")
        if [ $rc -eq 0 ] && [ "$v" = clean ] && cmp -s "$out/$p.$tool.out" "$data/corpus/$p.expected"; then
            say "- compute-sanitizer $tool $p: ok"
        else
            say "- compute-sanitizer $tool $p: FAIL (exit $rc, $v$(cmp -s "$out/$p.$tool.out" "$data/corpus/$p.expected" ||
                echo ', output differs'))"
            head -n 40 "$out/$p.$tool.san"
        fi
    done
}

# ---- compile (45 s) --------------------------------------------------------------
do_compile() {
    p=bh.5000
    [ "$DRY" = 1 ] && p=bh.100
    [ -f "$data/heldout/$p.vcode" ] || { say "- cold NVRTC of $p: not run ($p.vcode not carried)"; return; }
    t0=$(date +%s.%N)
    (cd "$data/heldout" && timeout 40 "$root/bin/vinterp" --backend=cuda --tier=sync --no-cache -d stats -m 1000000000 \
        $p.vcode >"$out/$p.sync.out" 2>"$out/$p.sync.err")
    rc=$?
    t1=$(date +%s.%N)
    w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    same=same
    same_but_timer "$out/$p.sync.out" "$data/heldout/$p.expected" || same="OUTPUT DIFFERS"
    say "- cold NVRTC: $p --backend=cuda --tier=sync --no-cache on $(nproc) cores: $w s whole process, exit $rc," \
        "output $same as the classic's ($(elapsed) s in)"
    grep -E '^stats: (cuda: NVRTC|summary)' "$out/$p.sync.err" | while read -r l; do say "  $l"; done
}

# ---- heldout (60 s) --------------------------------------------------------------
do_heldout() {
    s0=$(date +%s)
    # 20 runs over the held-out programs, 8 at a time, one shared cache, the
    # default tiers (background compiles that the runs' ends abandon)
    hc="$out/heldout-cache"
    rm -rf "$hc"
    mkdir -p "$hc" "$out/heldout"
    set -- $HELDOUT
    n=$#
    ok=0; bad=0; i=0
    while [ $i -lt 20 ] && [ $(($(date +%s) - s0)) -lt 50 ]; do
        j=0
        pids=
        while [ $j -lt 8 ] && [ $i -lt 20 ]; do
            k=$((i % n + 1))
            p=$(echo $HELDOUT | cut -d' ' -f$k)
            (cd "$data/heldout" && VINTERP_CACHE_DIR="$hc" timeout 50 "$root/bin/vinterp" --backend=cuda \
                -m 1000000000 $p.vcode >"$out/heldout/$i.out" 2>"$out/heldout/$i.err"; echo $? >"$out/heldout/$i.rc") &
            pids="$pids $!"
            echo "$p" >"$out/heldout/$i.name"
            i=$((i + 1)); j=$((j + 1))
        done
        wait $pids
    done
    for f in "$out"/heldout/*.rc; do
        r=${f%.rc}
        p=$(cat "$r.name")
        rc=$(cat "$f")
        if [ "$rc" = 0 ] && same_but_timer "$r.out" "$data/heldout/$p.expected"; then ok=$((ok + 1))
        else bad=$((bad + 1)); say "  FAIL held-out $p (exit $rc): $(head -c 300 "$r.err")"; fi
    done
    say "- held-out (NESL/GPU's programs), $i runs 8 at a time, one cache, default tiers: $ok passed, $bad failed" \
        "($(elapsed) s in)"
}

# ---- big (60 s) ------------------------------------------------------------------
do_big() {
    s0=$(date +%s)
    if [ "$DRY" = 1 ]; then
        bw=2958.0
        say "- device copy bandwidth: (dry run: the H100's $bw GB/s assumed)"
    else
        timeout 30 bin/test_kernels --bandwidth >"$out/bandwidth.txt" 2>&1
        bw=$(awk '/copy bandwidth/ { print $3 }' "$out/bandwidth.txt")
        say "- device copy bandwidth: ${bw:-?} GB/s"
        # the device tier's chain kernels beside it (a dot product, a map), and what a launch and a wait cost
        grep '^vk_expr\|^launch costs' "$out/bandwidth.txt" | while read -r l; do say "  $l"; done
    fi
    for p in dotp_100m:16 black_scholes_20m:48; do
        [ $(($(date +%s) - s0)) -lt 50 ] || { say "  (big: out of time before ${p%%:*})"; break; }
        name=${p%%:*}
        perel=${p##*:} # bytes the timed region must move per element (inputs read + results written)
        f=$data/big/$name.vcode
        n=$(awk '/^FUNC MAIN/ { s = 1 } s && /^CONST INT/ { print $3; exit }' "$f")
        timeout 30 bin/vinterp --backend=ref -m 2000000000 "$f" >"$out/$name.ref"
        reft=$(tail -n 1 "$out/$name.ref" | tr -d '()' | awk '{ print $1 }')
        clt=-
        if [ -n "$classic" ]; then
            timeout 30 "$classic" -m 2000000000 "$f" >"$out/$name.classic" 2>/dev/null
            clt=$(tail -n 1 "$out/$name.classic" | tr -d '()' | awk '{ print $1 }')
        fi
        times=""
        for r in 1 2 3; do
            timeout 20 bin/vinterp --backend=cuda --tier=eager -m 2000000000 -d stats "$f" >"$out/$name.cuda" \
                2>"$out/$name.cuda.err" || echo "run $r failed"
            times="$times $(tail -n 1 "$out/$name.cuda" | tr -d '()' | awk '{ print $1 }')"
        done
        med=$(echo "$times" | tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
        gbs=$(awk -v n="$n" -v b="$perel" -v t="$med" 'BEGIN { if (t > 0) printf "%.1f", n * b / t / 1e9; else print "?" }')
        same=same
        same_but_timer "$out/$name.cuda" "$out/$name.ref" || same="OUTPUT DIFFERS"
        say "- $name ($n elements): timed region, median of 3, cuda ${med:-?} s ($gbs GB/s of ${bw:-?}), ref ${reft:-?} s," \
            "classic $clt s; output $same as ref"
        say "  $(grep '^stats: timed region' "$out/$name.cuda.err" || echo "(no timed-region line: the run failed?)")"
        # the default tiers from the same (warm) cache: every promoted
        # block whose unit is cached is installed at once (issue 28)
        timeout 20 bin/vinterp --backend=cuda -m 2000000000 -d stats "$f" >"$out/$name.auto" 2>"$out/$name.auto.err"
        say "  default tiers, warm cache: timed region $(tail -n 1 "$out/$name.auto" | tr -d '()' | awk '{ print $1 }') s;" \
            "$(grep '^stats: tiers' "$out/$name.auto.err" | head -n 1 | cut -c1-240)"
    done
}

# ---- bench (170 s) ---------------------------------------------------------------
do_bench() {
    backends=ref,cuda-eager
    [ -n "$classic" ] && cl="--classic $classic" || cl=
    # shellcheck disable=SC2086
    # the fused blocks on top of the device tier (between blocks, the
    # tier's primitives on device vectors; the 2026-11-27 runs had no tier)
    timeout 170 env $DEVICE_ENV VINTERP_DEVICE_TIER=on sh tests/bench/run_bench.sh --interp bin/vinterp --backends $backends $cl -n 1 --warmup 1 --settle 0 \
        --no-stats --no-floor --timeout 60 --cache-dir "$data/cache" -o "$out/RESULTS.md" --chart '' "$data/bench"
    rc=$?
    say "- bench table (ref, cuda under --tier=eager with every kernel on the device from the prefilled cache and the device tier between blocks${classic:+, the classic}; one warm-up," \
        "one timed run): $out/RESULTS.md, exit $rc ($(elapsed) s in)"
    grep '^|' "$out/RESULTS.md" 2>/dev/null | while read -r l; do say "  $l"; done
}

# ---- devtier (90 s) ---------------------------------------------------------------
# The device tier (VINTERP_DEVICE_TIER=on, --tier=off: every vector
# instruction on device vectors as a precompiled primitive, no NVRTC)
# beside ref, the two big programs and the nine: timed region and whole
# process, the tally and the model's figure for the same counts.
do_devtier() {
    s0=$(date +%s)
    DEVTIER_S=${GPU_DEVTIER_S:-90} # the section's limit; a call given to the device tier alone may raise it
    for f in "$data/big/dotp_100m.vcode" "$data/big/black_scholes_20m.vcode" "$data"/bench/*.vcode; do
        [ -f "$f" ] || continue
        name=$(basename "$f" .vcode)
        [ $(($(date +%s) - s0)) -lt $((DEVTIER_S * 2 / 3)) ] || { say "  (devtier: out of time before $name)"; break; }
        w0=$(date +%s.%N)
        timeout 30 bin/vinterp --backend=ref -m 2000000000 "$f" >"$out/$name.dref" 2>&1
        w1=$(date +%s.%N)
        # timed without -d stats (which times every kernel by events,
        # driver calls of their own), then again for the tally
        VINTERP_DEVICE_TIER=on timeout 30 bin/vinterp --backend=cuda --tier=off -m 2000000000 "$f" \
            >"$out/$name.dt" 2>"$out/$name.dt.plain.err"
        rc=$?
        w2=$(date +%s.%N)
        # the issue's trace of dotp_100m (Perfetto), and where the time went
        # in the timed region for the programs the model misprices
        trace=
        case $name in dotp_100m | black_scholes_20m | bh_16k | radix_10m) trace="-d trace=$out/$name.trace.json" ;; esac
        # shellcheck disable=SC2086
        VINTERP_DEVICE_TIER=on timeout 30 bin/vinterp --backend=cuda --tier=off -m 2000000000 -d stats $trace "$f" \
            >"$out/$name.dts" 2>"$out/$name.dt.err"
        same=same
        same_but_timer "$out/$name.dt" "$out/$name.dref" || same="OUTPUT DIFFERS (exit $rc)"
        say "- $name: device tier timed region $(tail -n 1 "$out/$name.dt" | tr -d '()' | awk '{ print $1 }') s" \
            "($(tail -n 1 "$out/$name.dts" | tr -d '()' | awk '{ print $1 }') s under -d stats)," \
            "ref $(tail -n 1 "$out/$name.dref" | tr -d '()' | awk '{ print $1 }') s; whole process" \
            "$(awk -v a="$w1" -v b="$w2" 'BEGIN { printf "%.2f", b - a }') s, ref" \
            "$(awk -v a="$w0" -v b="$w1" 'BEGIN { printf "%.2f", b - a }') s; output $same"
        say "  $(grep '^stats: timed region' "$out/$name.dt.err" | cut -c8-)"
        say "  $(grep '^stats: model' "$out/$name.dt.err" | cut -c8-200)"
        grep '^stats: device tier: [0-9]* instructions ran on the host' "$out/$name.dt.err" | cut -c1-300 |
            while read -r l; do say "  $l"; done
        if [ -n "$trace" ] && [ -f "$out/$name.trace.json" ]; then
            say "  the trace's timed region (tests/bench/trace_summary.py; under -d stats and the trace):"
            timeout 60 python3 tests/bench/trace_summary.py "$out/$name.trace.json" 2>&1 | while read -r l; do say "    $l"; done
        fi
    done
    # The chains measured (runtime/fused/cuda_chain.h): the two big
    # programs with every elementwise instruction a launch of its own.
    for name in dotp_100m black_scholes_20m; do
        [ -f "$data/big/$name.vcode" ] || continue
        [ $(($(date +%s) - s0)) -lt $((DEVTIER_S * 3 / 4)) ] || { say "  (devtier: out of time before $name, chains off)"; break; }
        devtier_with "$data/big/$name.vcode" nochain 30 VINTERP_DEVICE_CHAINS=off
    done
    # The read-ahead measured (runtime/fused/README.md "Read-ahead"): the
    # two programs whose waits it halves by the model, without it.
    for name in bh_16k delaunay_40k; do
        [ -f "$data/bench/$name.vcode" ] || continue
        [ $(($(date +%s) - s0)) -lt $((DEVTIER_S * 3 / 4)) ] || { say "  (devtier: out of time before $name, read-ahead off)"; break; }
        devtier_with "$data/bench/$name.vcode" noahead 20 VINTERP_DEVICE_READ_AHEAD=off
    done
    # The placement threshold measured (issue 29; the emulated model prices
    # the device's work only, not the host's): the four programs whose work
    # is in short vectors, at three more thresholds than the default 4096.
    for n in 1024 16384 65536; do
        for name in bh_16k delaunay_40k batcher_1m radix_10m; do
            [ -f "$data/bench/$name.vcode" ] || continue
            [ $(($(date +%s) - s0)) -lt $((DEVTIER_S - 5)) ] || { say "  (devtier: out of time before $name at $n)"; break 2; }
            devtier_with "$data/bench/$name.vcode" "min$n" 20 VINTERP_DEVICE_MIN=$n
        done
    done
}

# devtier_with FILE TAG SECONDS SETTING: FILE under the device tier with
# SETTING (VAR=VALUE) as well, beside the run without it (FILE's .dref,
# the reference's output): its timed region, its output and its tally.
devtier_with() {
    name=$(basename "$1" .vcode)
    env "$4" VINTERP_DEVICE_TIER=on timeout "$3" bin/vinterp --backend=cuda --tier=off -m 2000000000 -d stats "$1" \
        >"$out/$name.$2" 2>"$out/$name.$2.err"
    same=same
    same_but_timer "$out/$name.$2" "$out/$name.dref" || same="OUTPUT DIFFERS"
    say "- $name, $4: timed region $(tail -n 1 "$out/$name.$2" | tr -d '()' | awk '{ print $1 }') s; output $same;" \
        "$(grep '^stats: timed region' "$out/$name.$2.err" | cut -c22-100)"
}

case "$mode" in
devtier) do_devtier ;;
devcheck) do_devcheck ;;
check) do_check ;;
sanitize) do_sanitize ;;
compile) do_compile ;;
heldout) do_heldout ;;
big) do_big ;;
bench) do_bench ;;
all)
    # in this order, each only while its limit still fits in the call
    # (GPU_CALL_S, default 480 s: 8 minutes): what matters most comes first
    call_s=${GPU_CALL_S:-480}
    for sec in check:90 devcheck:120 devtier:${GPU_DEVTIER_S:-90} big:60 heldout:60 bench:170 compile:45 sanitize:75; do
        if [ $(($(elapsed) + ${sec##*:})) -le "$call_s" ]; then
            do_${sec%%:*}
        else
            say "- (${sec%%:*}: not run, its ${sec##*:} s do not fit in the $((call_s - $(elapsed))) s left of the call)"
        fi
    done ;;
esac
say ""
say "total $(elapsed) s"

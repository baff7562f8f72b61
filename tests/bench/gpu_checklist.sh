#!/bin/sh
# tests/bench/gpu_checklist.sh — the GPU checklist, sized for the device
# tool: one call of at most ~8 minutes from a cold start (the tool allows
# 10 a call and about 15 of device time a session, starts included).
#
# Here, on a machine without a GPU (nvcc needed, no device):
#     sh tests/bench/gpu_checklist.sh prepare
#   builds bin/vinterp, bin/libvkernels.so and bin/test_kernels (sm_90);
#   fills .gpu/ (ignored by git, well under the 64 MiB a call carries): a
#   sample of the corpus, the bench programs of ../shared, dotp at 100M and
#   black_scholes at 20M elements, the shared libraries bin/vinterp links
#   (lp_solve's: nothing can be installed there), and the kernel cache with
#   the sample's cubins for sm_90, compiled here by NVRTC (vinterp
#   --cuda-check, CUDA 13.0 as there), so that the call spends no device
#   time compiling them.
# There, with the device tool, carrying bin, build and .gpu:
#     sh tests/bench/gpu_checklist.sh all     check, then bench (one call)
#     sh tests/bench/gpu_checklist.sh check   kernels/ unit tests; the corpus
#         sample with every kernel on the device under --check (floats
#         against their error bounds: README "--check"); compute-sanitizer
#         memcheck on a planted out-of-bounds write (it must be reported),
#         then memcheck, racecheck and synccheck on three small programs
#     sh tests/bench/gpu_checklist.sh bench   copy bandwidth; the timed
#         regions of dotp_100m and black_scholes_20m; ref and cuda on the
#         bench programs (medians of 3)
# Here, and in make test: `sh tests/bench/gpu_checklist.sh selftest` checks
# what of it runs without a GPU (the compute-sanitizer verdicts, read from
# the sanitizer's own log file, never from the program's stdout).
# Each section runs under a time limit. The logs go to $OUT (else
# .gpu/out); $OUT/SUMMARY.md is the short record: copy it to
# tests/bench/GPU_SUMMARY.md, which the next session with a GPU reads first.
set -u
cd "$(dirname "$0")/../.." || exit 1
root=$(pwd)
out=${OUT:-$root/.gpu/out}
mode=${1:-}
SAMPLE="bn_qs bn_radix bn_batcher bn_delaunay cu_nested_deep ex_primes cu_sort_rank ts_test_remove_duplicates er_div0"
SANITIZE="cu_sort_rank ex_primes ts_test_remove_duplicates"
# every kernel on the device, and the whole program's unit compiled before the run
DEVICE_ENV="VINTERP_TIER=eager VINTERP_CUDA_HOST_MAX_ELEM=0 VINTERP_CUDA_HOST_MAX_SCAN=0 VINTERP_CUDA_HOST_MAX_LIB=0"

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

scale() { # scale SRC DST N: the program with its size constant set to N
    awk -v n="$3" 'done == 0 && /^CONST INT [0-9]+$/ && seen { $3 = n; done = 1 } /^FUNC MAIN/ { seen = 1 } { print }' \
        "$1" >"$2"
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
    rm -rf "$t"
    echo "$pass passed, $fail failed"
    [ $fail -eq 0 ]
    exit ;;
prepare)
    make -j2 all kernels-check || exit 1
    rm -rf .gpu
    mkdir -p .gpu/lib .gpu/big .gpu/corpus .gpu/cache
    for p in $SAMPLE; do cp ../shared/corpus/$p.vcode ../shared/corpus/$p.expected .gpu/corpus/; done
    cp -r ../shared/bench .gpu/bench
    ldd bin/vinterp | awk '$3 ~ /^\// && $1 !~ /^(libc|libm|libdl|libpthread|librt)\.so/ { print $3 }' |
        while read -r p; do cp -L "$p" .gpu/lib/; done
    scale ../shared/bench/dotp_50m.vcode .gpu/big/dotp_100m.vcode 100000000
    scale ../shared/bench/black_scholes_8m.vcode .gpu/big/black_scholes_20m.vcode 20000000
    for p in $SAMPLE; do
        (cd .gpu/corpus && env $DEVICE_ENV "$root/bin/vinterp" --cuda-check=sm_90 --cache-dir="$root/.gpu/cache" \
            $p.vcode >/dev/null) || { echo "prepare: NVRTC failed on $p"; exit 1; }
    done
    git rev-parse --short HEAD >.gpu/commit
    du -sh .gpu bin
    echo "prepared: carry bin, build and .gpu; then run: sh tests/bench/gpu_checklist.sh all"
    exit 0 ;;
check|bench|all) ;;
*)
    echo "usage: sh tests/bench/gpu_checklist.sh prepare|all|check|bench|selftest" >&2
    exit 2 ;;
esac

mkdir -p "$out"
export LD_LIBRARY_PATH="$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export VINTERP_CACHE_DIR="$root/.gpu/cache"
summary="$out/SUMMARY.md"
log="$out/$mode.log"
exec 3>&1 >"$log" 2>&1 # the log; the summary goes to the caller's stdout (3) at the end
say() { echo "$*"; echo "$*" >>"$summary"; }
t_start=$(date +%s)
elapsed() { echo $(($(date +%s) - t_start)); }
{
    echo "# GPU checklist, $(date -u +%F) (commit $(cat .gpu/commit 2>/dev/null || echo unknown))"
    echo
    echo "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -n 1)"
    echo "vinterp: $(bin/vinterp --version 2>&1 | head -n 1)"
    echo
} >"$summary"
cat "$summary"

do_check() {
    echo "== kernels/ unit tests (bin/test_kernels)"
    timeout 120 bin/test_kernels >"$out/test_kernels.log" 2>&1
    rc=$?
    say "- kernels/ unit tests: $(grep -E 'passed, [0-9]+ failed' "$out/test_kernels.log" | tail -n 1) (exit $rc)"
    echo "== corpus sample: --backend=cuda --check, every kernel on the device (prefilled cubins)"
    pass=0; fail=0
    for p in $SAMPLE; do
        (cd .gpu/corpus && env $DEVICE_ENV timeout 120 "$root/bin/vinterp" --backend=cuda --check -d stats $p.vcode \
            >"$out/$p.out" 2>"$out/$p.err")
        rc=$?
        # er_div0 ends in the reference's error, as the classic does
        if [ $rc -eq 0 ] && cmp -s "$out/$p.out" .gpu/corpus/$p.expected; then pass=$((pass + 1))
        elif [ $p = er_div0 ] && [ $rc -eq 1 ] && grep -q "vinterp:" "$out/$p.err" && ! grep -q "cuda:" "$out/$p.err"; then
            pass=$((pass + 1))
        else fail=$((fail + 1)); echo "FAIL $p (exit $rc)"; grep -v '^stats' "$out/$p.err" | head -c 1500; fi
            grep -E "stats: cuda: NVRTC" "$out/$p.err" | head -n 1
    done
    say "- corpus sample under --check, every kernel on the device: $pass passed, $fail failed ($(elapsed) s in)"
    say "  cubins: $(cat "$out"/*.err | grep -o 'units compiled [0-9]*, cubin cache hits [0-9]*' | awk '{ c += $3; h += $7 } END { printf "%d compiled there, %d from the prefilled cache", c, h }')"
    if command -v compute-sanitizer >/dev/null 2>&1; then
        # the check can fail: a planted out-of-bounds write must be reported
        timeout 60 compute-sanitizer --tool memcheck --log-file "$out/plant-oob.san" --error-exitcode 9 \
            bin/test_kernels --plant-oob >"$out/plant-oob.out" 2>&1
        rc=$?
        v=$(sanitizer_verdict "$out/plant-oob.san")
        if [ $rc -eq 9 ] && [ "${v%% *}" = errors ]; then
            say "- compute-sanitizer memcheck: the planted out-of-bounds write reported ($v)"
        else
            say "- compute-sanitizer memcheck: FAIL: the planted out-of-bounds write not reported (exit $rc, $v)"
        fi
        for tool in memcheck racecheck synccheck; do
            res=""
            for p in $SANITIZE; do
                # the sanitizer's own lines to its log file, the program's
                # output alone on stdout (compared with .expected)
                (cd .gpu/corpus && env $DEVICE_ENV timeout 150 compute-sanitizer --tool $tool \
                    --log-file "$out/$p.$tool.san" --error-exitcode 9 \
                    "$root/bin/vinterp" --backend=cuda $p.vcode >"$out/$p.$tool.out" 2>"$out/$p.$tool.err")
                rc=$?
                v=$(sanitizer_verdict "$out/$p.$tool.san")
                if [ $rc -eq 0 ] && [ "$v" = clean ] && cmp -s "$out/$p.$tool.out" .gpu/corpus/$p.expected; then
                    res="$res $p:ok"
                else
                    res="$res $p:FAIL(exit $rc, $v$(cmp -s "$out/$p.$tool.out" .gpu/corpus/$p.expected || echo ', output differs'))"
                    head -n 40 "$out/$p.$tool.san"
                fi
            done
            say "- compute-sanitizer $tool:$res ($(elapsed) s in)"
        done
    else
        say "- compute-sanitizer: not on this machine"
    fi
}

do_bench() {
    echo "== device copy bandwidth"
    timeout 60 bin/test_kernels --bandwidth
    bw=$(timeout 60 bin/test_kernels --bandwidth | awk '/copy bandwidth/ { print $3 }')
    say "- device copy bandwidth: ${bw:-?} GB/s"
    for p in dotp_100m:16 black_scholes_20m:48; do
        name=${p%%:*}
        perel=${p##*:} # bytes the timed region must move per element (inputs read + results written)
        f=.gpu/big/$name.vcode
        n=$(awk '/^FUNC MAIN/ { s = 1 } s && /^CONST INT/ { print $3; exit }' "$f")
        echo "== $name ($n elements, $perel bytes each in the timed region)"
        timeout 120 bin/vinterp --backend=ref -m 2000000000 "$f" >"$out/$name.ref"
        times=""
        for r in 1 2 3 4 5 6; do
            timeout 60 bin/vinterp --backend=cuda -m 2000000000 "$f" >"$out/$name.cuda" || echo "run $r failed"
            [ $r -gt 1 ] && times="$times $(tail -n 1 "$out/$name.cuda" | tr -d '()' | awk '{ print $1 }')"
        done
        timeout 120 bin/vinterp --backend=cuda --check -m 2000000000 "$f" >/dev/null 2>"$out/$name.check"
        chk=$?
        med=$(echo "$times" | tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
        reft=$(tail -n 1 "$out/$name.ref" | tr -d '()' | awk '{ print $1 }')
        gbs=$(awk -v n="$n" -v b="$perel" -v t="$med" 'BEGIN { if (t > 0) printf "%.1f", n * b / t / 1e9; else print "?" }')
        say "- $name: timed region median of 5 ${med:-?} s (ref ${reft:-?} s), $gbs GB/s of ${bw:-?}; --check exit $chk"
        [ $chk -eq 0 ] || head -c 1500 "$out/$name.check"
        timeout 60 bin/vinterp --backend=cuda -d stats -m 2000000000 "$f" 2>&1 >/dev/null | grep "stats: cuda"
    done
    echo "== bench table (ref, cuda; medians of 3)"
    timeout 300 sh tests/bench/run_bench.sh --interp bin/vinterp --backends ref,cuda -n 3 --no-stats --no-floor \
        -o "$out/RESULTS.md" --chart '' .gpu/bench
    say "- bench table: $out/RESULTS.md ($(elapsed) s in)"
}

case "$mode" in
check) do_check ;;
bench) do_bench ;;
all) do_check; do_bench ;;
esac
say ""
say "total $(elapsed) s"
cat "$summary" >&3

#!/bin/sh
# tests/bench/gpu_checklist.sh — issue 4's GPU checklist, as few calls of the
# device tool as it takes (each under its 10-minute limit).
#
# Here, on a machine without a GPU (nvcc needed, no device):
#     sh tests/bench/gpu_checklist.sh prepare
#   builds bin/vinterp, bin/libvkernels.so and bin/test_kernels (sm_90), and
#   fills .gpu/ (ignored by git): the corpus and bench programs of
#   ../shared, dotp at 100M and black_scholes at 20M elements, and the
#   shared libraries bin/vinterp links (lp_solve's) (the device machine cannot install
#   packages).
# There, with the device tool, carrying bin, build and .gpu:
#     sh tests/bench/gpu_checklist.sh check   kernels' unit tests, the corpus under
#                                              --backend=cuda, --check on every bench program
#     sh tests/bench/gpu_checklist.sh bench   copy bandwidth, the timed regions of
#                                              dotp_100m and black_scholes_20m, the bench table
# Each writes its log (and bench its RESULTS.md) to $OUT, else .gpu/out.
set -u
cd "$(dirname "$0")/../.." || exit 1
root=$(pwd)
out=${OUT:-$root/.gpu/out}
mode=${1:-}

scale() { # scale SRC DST N: the program with its size constant set to N
    awk -v n="$3" 'done == 0 && /^CONST INT [0-9]+$/ && seen { $3 = n; done = 1 } /^FUNC MAIN/ { seen = 1 } { print }' \
        "$1" >"$2"
}

case "$mode" in
prepare)
    make -j2 all kernels-check || exit 1
    rm -rf .gpu
    mkdir -p .gpu/lib .gpu/big
    cp -r ../shared/corpus .gpu/corpus
    cp -r ../shared/bench .gpu/bench
    # the shared libraries beyond the C library's own (lp_solve's)
    ldd bin/vinterp | awk '$3 ~ /^\// && $1 !~ /^(libc|libm|libdl|libpthread|librt)\.so/ { print $3 }' |
        while read -r p; do cp -L "$p" .gpu/lib/; done
    scale ../shared/bench/dotp_50m.vcode .gpu/big/dotp_100m.vcode 100000000
    scale ../shared/bench/black_scholes_8m.vcode .gpu/big/black_scholes_20m.vcode 20000000
    du -sh .gpu
    echo "prepared: carry bin, build and .gpu"
    exit 0 ;;
check|bench) ;;
*)
    echo "usage: sh tests/bench/gpu_checklist.sh prepare|check|bench" >&2
    exit 2 ;;
esac

mkdir -p "$out"
export LD_LIBRARY_PATH="$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export VINTERP_CACHE_DIR="$root/.gpu/cache"
log="$out/$mode.log"
exec >"$log" 2>&1
echo "== $(date -u) on $(hostname)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
bin/vinterp --version

if [ "$mode" = check ]; then
    echo "== kernels/ unit tests (bin/test_kernels)"
    bin/test_kernels 2>&1 | tail -n 40
    # one group of programs per CPU: NVRTC compiles each program's unit once
    # (a few seconds each), the second run finds them in the cache
    export VINTERP_CORPUS="$root/.gpu/corpus"
    echo "== corpus, --backend=cuda (every kernel on the device), --float-rel 1e-12"
    VINTERP_CUDA_HOST_MAX_ELEM=0 VINTERP_CUDA_HOST_MAX_SCAN=0 VINTERP_CUDA_HOST_MAX_LIB=0 \
        sh tests/run_corpus_par.sh bin/vinterp --arg=--backend=cuda --float-rel 1e-12 --quiet
    echo "== corpus, --backend=cuda with the default host thresholds, --float-rel 1e-12"
    sh tests/run_corpus_par.sh bin/vinterp --arg=--backend=cuda --float-rel 1e-12 --quiet
    echo "== --check on the bench programs (cuda against the reference, block by block)"
    for f in .gpu/bench/*.vcode; do
        t0=$(date +%s.%N)
        if bin/vinterp --backend=cuda --check -m 1000000000 "$f" >/dev/null 2>"$out/check.err"; then r=ok; else r=FAIL; fi
        echo "$(basename "$f" .vcode): $r ($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s)"
        [ $r = ok ] || head -c 3000 "$out/check.err"
    done
    bin/vinterp --backend=cuda -d stats -m 1000000000 .gpu/bench/dotp_50m.vcode 2>&1 >/dev/null | grep "stats: cuda"
    exit 0
fi

# bench
echo "== device copy bandwidth"
bin/test_kernels --bandwidth
bw=$(bin/test_kernels --bandwidth | awk '/copy bandwidth/ { print $3 }')
for p in dotp_100m:16 black_scholes_20m:48; do
    name=${p%%:*}
    perel=${p##*:} # bytes the timed region must move per element (inputs read + results written)
    f=.gpu/big/$name.vcode
    n=$(awk '/^FUNC MAIN/ { s = 1 } s && /^CONST INT/ { print $3; exit }' "$f")
    echo "== $name ($n elements, $perel bytes each in the timed region)"
    bin/vinterp --backend=ref -m 2000000000 "$f" >"$out/$name.ref"
    times=""
    for r in 1 2 3 4 5 6; do
        bin/vinterp --backend=cuda -m 2000000000 "$f" >"$out/$name.cuda" || echo "run $r failed"
        # the last line is the program's timer, printed as "( SECONDS )"
        [ $r -gt 1 ] && times="$times $(tail -n 1 "$out/$name.cuda" | tr -d '()' | awk '{ print $1 }')"
    done
    head -n -1 "$out/$name.ref" >"$out/a"
    head -n -1 "$out/$name.cuda" >"$out/b"
    if cmp -s "$out/a" "$out/b"; then echo "output (less the timer) equals ref's"; else echo "output differs from ref's:"; diff "$out/a" "$out/b" | head -5; fi
    med=$(echo "$times" | tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    echo "timed region, median of 5: $med s (ref: $(tail -n 1 "$out/$name.ref" | tr -d '()' | awk '{ print $1 }') s)"
    awk -v n="$n" -v b="$perel" -v t="$med" -v bw="$bw" 'BEGIN {
        if (t <= 0 || bw <= 0) { print "no bandwidth figure (no timer or no copy bandwidth)"; exit }
        gbs = n * b / t / 1e9; printf "achieved %.1f GB/s = %.0f%% of the copy bandwidth %.1f GB/s\n", gbs, 100 * gbs / bw, bw }'
    bin/vinterp --backend=cuda -d stats -m 2000000000 "$f" 2>&1 >/dev/null | grep "stats: cuda"
done
echo "== bench table (ref, cpu, cuda)"
sh tests/bench/run_bench.sh --interp bin/vinterp --backends ref,cpu,cuda -n 5 -o "$out/RESULTS.md" --chart '' .gpu/bench

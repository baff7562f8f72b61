#!/bin/sh
# tests/bench/gpu_nvrtc_opt.sh — what NVRTC's fast mode costs the kernels
# (VINTERP_NVRTC_OPT=fast: --Ofast-compile=max, about a tenth of the
# compile's CPU time), beside ref and the classic, in one device call.
#
# Here (nvcc, no GPU):
#     sh tests/bench/gpu_nvrtc_opt.sh prepare
#   after gpu_checklist.sh prepare (bin, .gpu/bench, .gpu/lib, .gpu/classic):
#   compiles every unit the bench programs need with every kernel on the
#   device (--tier=eager, no host path), once in full and once in fast mode,
#   into .gpu/cache-full.tar.gz and .gpu/cache-fast.tar.gz.
# There, carrying bin, .gpu:
#     sh tests/bench/gpu_nvrtc_opt.sh run
#   bh.5000 cold under --tier=sync --no-cache in fast mode (issue 28: at
#   most 10 s on 16 cores); then for each bench program one warm-up and one
#   timed run of ref, the classic and cuda (every kernel on the device,
#   eager, from the prefilled cache) in both modes; the warm-up of each cuda
#   mode under -d stats gives the time in kernels (events around each
#   launch). Whole process and timed region seconds; the table last.
set -u
cd "$(dirname "$0")/../.." || exit 1
root=$(pwd)
out=${OUT:-$root/.gpu/out}
DEVICE_ENV="VINTERP_TIER=eager VINTERP_CUDA_HOST_MAX_ELEM=0 VINTERP_CUDA_HOST_MAX_SCAN=0 VINTERP_CUDA_HOST_MAX_LIB=0"
M=1000000000
BENCH=${BENCH:-.gpu/bench} # (a dry run of the script's logic: BENCH=a folder of small programs, VINTERP_CUDA_EMULATE=1)

case "${1:-}" in
prepare)
    [ -d .gpu/bench ] || { echo "run gpu_checklist.sh prepare first"; exit 1; }
    for mode in full fast; do
        rm -rf .gpu/cache-$mode
        t0=$(date +%s)
        for f in .gpu/bench/*.vcode; do
            env $DEVICE_ENV VINTERP_NVRTC_OPT=$mode bin/vinterp --cuda-check=sm_90 --cache-dir=.gpu/cache-$mode -m $M "$f" \
                >/dev/null || { echo "prepare: NVRTC ($mode) failed on $f"; exit 1; }
        done
        echo "prepare: $mode cubins in $(($(date +%s) - t0)) s"
        tar -czf .gpu/cache-$mode.tar.gz -C .gpu cache-$mode && rm -rf .gpu/cache-$mode
    done
    du -sh .gpu
    exit 0 ;;
run) ;;
*) echo "usage: sh tests/bench/gpu_nvrtc_opt.sh prepare|run" >&2; exit 2 ;;
esac

mkdir -p "$out/ab"
export LD_LIBRARY_PATH="$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
for mode in full fast; do
    [ -d .gpu/cache-$mode ] || tar -xzf .gpu/cache-$mode.tar.gz -C .gpu || exit 1
done
classic=
[ -x .gpu/classic/vinterp ] && classic=.gpu/classic/vinterp
now() { date +%s.%N; }
# timed NAME OUTFILE CMD...: runs CMD, prints "whole timed ok" (s, s, yes/no)
timed() {
    name=$1; of=$2; shift 2
    a=$(now)
    timeout 120 "$@" >"$of" 2>"$of.err"
    rc=$?
    b=$(now)
    exp=$BENCH/$name.expected
    n=$(wc -l <"$exp")
    ok=no
    [ $rc -eq 0 ] && [ "$(head -n $((n - 1)) "$of")" = "$(head -n $((n - 1)) "$exp")" ] && ok=yes
    [ $rc -eq 0 ] && [ $ok = no ] && ok=differs
    t=$(tail -n 1 "$of" | tr -d '()' | awk '{ printf "%.4f", $1 }')
    awk -v a="$a" -v b="$b" -v t="$t" -v ok="$ok" -v rc=$rc 'BEGIN { printf "%.3f %s %s%s\n", b - a, t, ok, rc ? "(exit " rc ")" : "" }'
}

echo "# NVRTC full against fast, $(date -u +%F), commit $(git rev-parse --short HEAD 2>/dev/null)"
echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1); $(nproc) cores"
if [ -f .gpu/heldout/bh.5000.vcode ]; then
    for mode in fast full; do
        a=$(now)
        (cd .gpu/heldout && VINTERP_NVRTC_OPT=$mode timeout 60 "$root/bin/vinterp" --backend=cuda --tier=sync --no-cache \
            -d stats -m $M bh.5000.vcode >"$out/ab/bh5000.$mode.out" 2>"$out/ab/bh5000.$mode.err")
        rc=$?
        b=$(now)
        n=$(wc -l <.gpu/heldout/bh.5000.expected)
        same=differs
        [ "$(head -n $((n - 1)) "$out/ab/bh5000.$mode.out")" = "$(head -n $((n - 1)) .gpu/heldout/bh.5000.expected)" ] && same=same
        echo "bh.5000 --tier=sync --no-cache, NVRTC $mode: $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", b - a }') s," \
            "exit $rc, output $same; $(grep -o 'compiles [0-9.]* s before' "$out/ab/bh5000.$mode.err")"
    done
fi
rows=$out/ab/rows
: >"$rows"
for f in "$BENCH"/*.vcode; do
    name=$(basename "$f" .vcode)
    for r in 0 1; do
        line="$name"
        line="$line ref $(timed "$name" "$out/ab/$name.ref" bin/vinterp --backend=ref -m $M "$f")"
        if [ -n "$classic" ]; then line="$line classic $(timed "$name" "$out/ab/$name.classic" "$classic" -m $M "$f")"
        else line="$line classic - - -"; fi
        for mode in full fast; do
            if [ $r = 0 ]; then
                timed "$name" "$out/ab/$name.$mode.w" env $DEVICE_ENV VINTERP_NVRTC_OPT=$mode bin/vinterp --backend=cuda \
                    --cache-dir=.gpu/cache-$mode -d stats -m $M "$f" >/dev/null
                k=$(grep -o 'kernels [0-9.]* s (events' "$out/ab/$name.$mode.w.err" | awk '{ print $2 }')
                c=$(grep -o 'NVRTC units compiled [0-9]*' "$out/ab/$name.$mode.w.err" | awk '{ print $4 }')
                echo "$name $mode kernels ${k:-?} compiled ${c:-?}" >>"$out/ab/kernels"
            fi
            line="$line $mode $(timed "$name" "$out/ab/$name.$mode" env $DEVICE_ENV VINTERP_NVRTC_OPT=$mode bin/vinterp \
                --backend=cuda --cache-dir=.gpu/cache-$mode -m $M "$f")"
        done
        [ $r = 1 ] && echo "$line" >>"$rows" && echo "$line"
    done
done
echo
echo "| program | ref s (timed) | classic s (timed) | cuda full s (timed) | cuda fast s (timed) | kernels full / fast s | ok ref classic full fast |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
while read -r name _ rw rt rok _ cw ct cok _ fw ft fok _ sw st sok; do
    kf=$(awk -v n="$name" '$1 == n && $2 == "full" { print $4 }' "$out/ab/kernels")
    ks=$(awk -v n="$name" '$1 == n && $2 == "fast" { print $4 }' "$out/ab/kernels")
    echo "| $name | $rw ($rt) | $cw ($ct) | $fw ($ft) | $sw ($st) | $kf / $ks | $rok $cok $fok $sok |"
done <"$rows"

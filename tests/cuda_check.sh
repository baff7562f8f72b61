#!/bin/sh
# tests/cuda_check.sh INTERP [ARCH] — the CUDA side without a GPU: generate
# the CUDA of every block of every corpus program and compile it with NVRTC
# for ARCH (default sm_90), running nothing (vinterp --cuda-check), one
# program per CPU at a time. A kernel is compiled once for the whole corpus:
# most programs share most of their kernels (9332 kernels, 3224 distinct),
# so each program's unit leaves out those an earlier unit compiled
# ($VINTERP_CUDA_CHECK_DONE, a folder of their hashes). Ends with "N passed,
# N failed"; exit 1 on a failure.
interp=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
arch=${2:-sm_90}
corpus=$(cd "$(dirname "$0")/../.." && pwd)/shared/corpus
if [ ! -d "$corpus" ]; then
    echo "cuda-check: no ../shared/corpus; nothing to compile"
    echo "0 passed, 0 failed"
    exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/done"
VINTERP_CUDA_CHECK_DONE=$work/done
export interp arch work VINTERP_CUDA_CHECK_DONE
cd "$corpus"
ls *.vcode | xargs -P "$(nproc)" -n 1 sh -c '
    name=$(basename "$0" .vcode)
    if "$interp" --cuda-check="$arch" --cache-dir="$work/cache" "$0" >"$work/$name.log" 2>&1; then
        touch "$work/$name.pass"
    else
        touch "$work/$name.fail"
    fi'
passed=$(ls "$work" | grep -c '\.pass$')
failed=$(ls "$work" | grep -c '\.fail$')
for f in "$work"/*.fail; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .fail)
    echo "FAIL: $name: $(head -c 600 "$work/$name.log")"
done
echo "cuda-check ($arch, NVRTC): $(ls "$work/done" | wc -l) distinct kernels compiled"
echo "cuda-check ($arch, NVRTC): $passed passed, $failed failed"
[ "$failed" -eq 0 ]

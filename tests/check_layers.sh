#!/bin/sh
# tests/check_layers.sh — the layers of the Makefile, lowest first; a file
# may include headers of its own layer and of the layers before it, and
# kernels/ (plain C headers shared with the CUDA side) where listed. Prints
# each include that breaks the order, then "layers: N passed, N failed".
cd "$(dirname "$0")/.." || exit 1
pass=0
fail=0
# layer: the include prefixes it may use
check() {
    dir=$1
    shift
    for f in "$dir"/*.c "$dir"/*.h; do
        [ -e "$f" ] || continue
        bad=$(grep -o '^#include "[^"]*"' "$f" | sed 's/#include "\(.*\)"/\1/' | while read -r inc; do
            ok=0
            for p in "$@"; do
                case "$inc" in "$p"/*) rest=${inc#"$p"/}; case "$rest" in */*) ;; *) ok=1 ;; esac ;; esac
            done
            [ $ok -eq 1 ] || echo "$inc"
        done)
        if [ -n "$bad" ]; then
            fail=$((fail + 1))
            for inc in $bad; do echo "layers: $f includes $inc (above its layer)"; done
        else
            pass=$((pass + 1))
        fi
    done
}
check vcode vcode
check translate vcode translate
check runtime/core vcode runtime/core
check runtime/interp vcode runtime/core runtime/interp
check runtime/jit translate runtime/core runtime/jit
check runtime/device kernels translate runtime/core runtime/jit runtime/device
check runtime/fused kernels vcode translate runtime/core runtime/interp runtime/jit runtime/device runtime/fused
echo "layers: $pass passed, $fail failed"
[ $fail -eq 0 ]

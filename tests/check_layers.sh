#!/bin/sh
# tests/check_layers.sh [BUILD [ORDER LAYERS]] — the layers, lowest first,
# are the Makefile's INCLUDE_ORDER: its LAYERS (one folder and one static
# library each) with kernels/ after vcode/ (asked of make when not given). A file of a layer (.c, .h, and in
# kernels/ .cu and .cuh; not the tests: kernels/test_kernels.cu) may
# include the headers of its own layer and of the layers before it only.
# With BUILD (the build folder, as `make` passes it): no layer's archive
# leaves undefined a symbol that a layer above it defines (nm), which
# the include check alone would miss (a prototype written by hand). Prints
# each break, then "layers: N passed, N failed".
cd "$(dirname "$0")/.." || exit 1
build=${1:-}
order=${2:-$(make -s --no-print-directory print-include-order)}
layers=${3:-$(make -s --no-print-directory print-layers)}
if [ -z "$order" ] || [ -z "$layers" ]; then
    echo "layers: the Makefile gave no INCLUDE_ORDER or LAYERS"
    echo "layers: 0 passed, 1 failed"
    exit 1
fi
pass=0
fail=0
below="" # the layers so far, this one included
for layer in $order; do
    below="$below $layer"
    for f in "$layer"/*.c "$layer"/*.h "$layer"/*.cu "$layer"/*.cuh; do
        [ -e "$f" ] || continue
        case "$f" in kernels/test_*) continue ;; esac
        bad=$(grep -o '^#include "[^"]*"' "$f" | sed 's/#include "\(.*\)"/\1/' | while read -r inc; do
            ok=0
            for p in $below; do
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
done
# the archives: a symbol one layer uses and a layer above it defines
if [ -n "$build" ] && command -v nm >/dev/null 2>&1; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    above=""
    for layer in $(echo "$layers" | tr ' ' '\n' | sed '1!G;h;$!d'); do # highest first
        lib="$build/lib/lib$(echo "$layer" | tr / _).a"
        [ -f "$lib" ] || continue
        nm -u "$lib" 2>/dev/null | awk '$1 == "U" { print $2 }' | sort -u >"$tmp/undef"
        if [ -n "$above" ]; then
            # shellcheck disable=SC2086
            up=$(cat $above | sort -u | comm -12 "$tmp/undef" -)
            if [ -n "$up" ]; then
                fail=$((fail + 1))
                for sym in $up; do echo "layers: $lib uses $sym, which a layer above it defines"; done
            else
                pass=$((pass + 1))
            fi
        fi
        nm -g --defined-only "$lib" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/def.$(echo "$layer" | tr / _)"
        above="$above $tmp/def.$(echo "$layer" | tr / _)"
    done
fi
echo "layers: $pass passed, $fail failed"
[ $fail -eq 0 ]

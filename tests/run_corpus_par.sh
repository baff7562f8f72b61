#!/bin/sh
# tests/run_corpus_par.sh INTERP [run_corpus.py options] — the corpus of
# ../shared/corpus ($VINTERP_CORPUS if set) run by its own runner
# (run_corpus.py), split into one group of programs per CPU (at most 16)
# that run side by side. The programs that open
# files share file names (fooxxxx.tmp, ...), so they all go to the first
# group, which runs them one after another. Prints the groups' failures,
# then "N passed, N failed"; exit 1 on a failure.
set -u
interp=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
corpus=${VINTERP_CORPUS:-$here/../../shared/corpus}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
groups=$(nproc 2>/dev/null || echo 2)
[ "$groups" -gt 16 ] && groups=16
[ "$groups" -lt 1 ] && groups=1

# run_corpus.py takes names as prefixes, so a name that begins another
# (bn_bh, bn_bh_run) stands for both: such a cluster goes to one group under
# its shortest name. Clusters with a program that opens files go to group
# 0; the others round-robin.
for f in "$corpus"/*.vcode; do
    name=$(basename "$f" .vcode)
    if grep -q 'FOPEN' "$f"; then echo "$name 1"; else echo "$name 0"; fi
done | LC_ALL=C sort | awk -v groups="$groups" -v dir="$work" '
    function flush() {
        if (root == "") return
        g = files ? 0 : (n++ % groups)
        print root >> (dir "/group" g)
    }
    root != "" && index($1, root) == 1 { files = files || $2; next }
    { flush(); root = $1; files = $2 }
    END { flush() }'

g=0
while [ "$g" -lt "$groups" ]; do
    if [ -s "$work/group$g" ]; then
        # shellcheck disable=SC2046
        # (--timeout: run_corpus.py's per-program limit, 120 s by default,
        # made a guard against a hang: a sanitizer build compiling on a busy
        # machine can take longer, and is not wrong for it)
        python3 "$corpus/run_corpus.py" "$interp" --timeout 1800 "$@" $(cat "$work/group$g") >"$work/out$g" 2>&1 &
    fi
    g=$((g + 1))
done
wait

passed=0
failed=0
for out in "$work"/out*; do
    grep -v -E '^[0-9]+ passed, [0-9]+ failed$' "$out"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
    if [ -z "$line" ]; then
        echo "a corpus group gave no result line"
        failed=$((failed + 1))
        continue
    fi
    passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

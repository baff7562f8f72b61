#!/bin/sh
# selftest.sh -- check foreground-sh and background-sh the way NESL calls
# them, without NESL.  Run from anywhere:
#     nesl-lib/selftest.sh [VINTERP] [CORPUS_DIR]
# VINTERP defaults to bin/vinterp of this checkout, CORPUS_DIR to
# ../shared/corpus next to it.  Prints one line per check and ends with
# "N passed, N failed"; exit status 1 when something failed.
#
# NESL (neslsrc/run-vcode.lisp) builds the shell line
#     SCRIPT "RSH" INTERP MEMSIZE TEMPDIR JOBNAME MAXTIME "ARGS"
# and hands it to /bin/sh -c (clisp, Allegro, GCL) or /bin/csh -fc (CMU CL);
# the checks below hand the same kind of line to /bin/sh -c.

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
vinterp=${1:-$root/bin/vinterp}
corpus=${2:-$root/../shared/corpus}
pass=0
fail=0

ok()  { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

if [ ! -x "$vinterp" ]; then
    echo "selftest.sh: no interpreter at $vinterp (run make first)" >&2
    exit 1
fi
if [ ! -d "$corpus" ]; then
    echo "selftest.sh: no corpus at $corpus" >&2
    exit 1
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
user=selftest
n=0

# foreground NAME ARGS: runs corpus program NAME as NESL job n, leaves the
# output in $out and the stderr in $err.
foreground() {
    n=$((n + 1))
    job=vcode_${user}_$n
    cp "$corpus/$1.vcode" "$tmp/${job}_code"
    line="$here/foreground-sh \"\" $vinterp 40000000 $tmp/ $job -1 \"$2\""
    (cd "$corpus" && /bin/sh -c "$line") 2> "$tmp/stderr"
    status=$?
    out=$tmp/${job}_out
    err=$tmp/stderr
}

# Deterministic programs: the output file must equal the reference output.
for name in bn_qs bn_batcher bn_radix bn_black_scholes bn_muladd_dbg bn_delaunay bn_dotp; do
    [ -f "$corpus/$name.vcode" ] || continue
    for args in "--backend=ref" ""; do
        foreground "$name" "$args"
        if [ "$status" -eq 0 ] && cmp -s "$out" "$corpus/$name.expected"; then
            ok "foreground $name args=\"$args\""
        else
            bad "foreground $name args=\"$args\" (status $status)"
        fi
    done
done

# stderr of the interpreter is not mixed into the output file.
if [ -f "$corpus/cu_print.vcode" ]; then
    foreground cu_print "--backend=ref"
    if cmp -s "$out" "$corpus/cu_print.expected" && grep -q "hello, world" "$err"; then
        ok "foreground cu_print: print_string on stderr, result in _out"
    else
        bad "foreground cu_print"
    fi
fi

# Two options in the arguments field.
foreground bn_qs "--backend=ref -t"
if cmp -s "$out" "$corpus/bn_qs.expected" && grep -q "elapsed time" "$err"; then
    ok "foreground with two options in arguments"
else
    bad "foreground with two options in arguments"
fi

# A failing run leaves an empty output file (NESL: "Error while running VCODE.").
foreground bn_qs "--backend=no-such-backend"
if [ "$status" -ne 0 ] && [ -f "$out" ] && [ ! -s "$out" ] && [ -s "$err" ]; then
    ok "failing run: empty _out, message on stderr"
else
    bad "failing run (status $status)"
fi

# Remote form: a non-empty rsh_command is put in front of the interpreter.
n=$((n + 1))
job=vcode_${user}_$n
cp "$corpus/bn_qs.vcode" "$tmp/${job}_code"
/bin/sh -c "$here/foreground-sh \"env LC_ALL=C\" $vinterp 40000000 $tmp/ $job -1 \"--backend=ref\"" 2> /dev/null
if cmp -s "$tmp/${job}_out" "$corpus/bn_qs.expected"; then
    ok "foreground with an rsh_command prefix"
else
    bad "foreground with an rsh_command prefix"
fi

# Background: returns at once; _check appears when done, _err holds stderr.
n=$((n + 1))
job=vcode_${user}_$n
cp "$corpus/cu_print.vcode" "$tmp/${job}_code"
/bin/sh -c "$here/background-sh \"\" $vinterp 40000000 $tmp/ $job 60 \"--backend=ref\""
i=0
while [ ! -f "$tmp/${job}_check" ] && [ "$i" -lt 100 ]; do
    sleep 0.1 2> /dev/null || sleep 1
    i=$((i + 1))
done
if [ -f "$tmp/${job}_check" ] && cmp -s "$tmp/${job}_out" "$corpus/cu_print.expected" \
   && grep -q "hello, world" "$tmp/${job}_err" && [ ! -f "$tmp/${job}_submit" ]; then
    ok "background cu_print"
else
    bad "background cu_print"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

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
bad() { fail=$((fail + 1)); echo "FAIL: $1"; }

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

# --backend=cuda where vinterp cannot use CUDA falls back to --backend=auto
# with one warning line (see foreground-sh).  Stand-ins for vinterp make
# every case testable on any machine; each logs its arguments to $log.
log=$tmp/interp.log
# fake_interp NAME CASE: CASE is what the stand-in does with --backend=cuda:
#   nogpu  refuse it as vinterp does on a machine without a usable GPU
#   gpu    accept it (runs the real vinterp with --backend=ref instead)
#   old    refuse it the way an interpreter without --backend would
fake_interp() {
    cat > "$tmp/$1" <<EOF_FAKE
#!/bin/sh
echo "\$*" >> '$log'
args=
for a in "\$@"; do
    if [ "\$a" = --backend=cuda ]; then
        case $2 in
        nogpu) echo "vinterp: --backend=cuda: no CUDA driver (selftest stand-in)" >&2; exit 1 ;;
        old) echo "usage: vinterp [-m num] file" >&2; exit 1 ;;
        esac
        a=--backend=ref
    fi
    set -- "\$@" "\$a"
    shift
done
exec '$vinterp' "\$@"
EOF_FAKE
    chmod +x "$tmp/$1"
}
fake_interp vinterp-nogpu nogpu
fake_interp vinterp-gpu gpu
fake_interp vinterp-old old

# foreground_with INTERP NAME ARGS: foreground with another interpreter.
foreground_with() {
    saved=$vinterp
    vinterp=$1
    foreground "$2" "$3"
    vinterp=$saved
}
warnings() { grep -c "running with --backend=auto instead" "$1"; }

rm -f "$log"
foreground_with "$tmp/vinterp-nogpu" bn_qs "--backend=cuda -t"
if [ "$status" -eq 0 ] && cmp -s "$out" "$corpus/bn_qs.expected" \
   && [ "$(warnings "$err")" -eq 1 ] && ! grep -q "^vinterp: --backend=cuda" "$err" \
   && grep -q "elapsed time" "$err" \
   && [ "$(sed -n 2p "$log")" = "-m 40000000 --backend=auto -t $tmp/${job}_code" ]; then
    ok "foreground --backend=cuda without a GPU: one warning, runs --backend=auto -t"
else
    bad "foreground --backend=cuda without a GPU (status $status)"
fi
left=
for f in "$tmp"/*probe*; do
    [ -e "$f" ] && left="$left $f"
done
if [ -z "$left" ]; then
    ok "the probe's files are removed"
else
    bad "the probe's files are removed:$left"
fi

rm -f "$log"
foreground_with "$tmp/vinterp-gpu" bn_qs "--backend=cuda"
if [ "$status" -eq 0 ] && cmp -s "$out" "$corpus/bn_qs.expected" \
   && [ "$(warnings "$err")" -eq 0 ] && [ "$(wc -l < "$log")" -eq 2 ] \
   && [ "$(sed -n 2p "$log")" = "-m 40000000 --backend=cuda $tmp/${job}_code" ]; then
    ok "foreground --backend=cuda with a usable GPU: no warning, runs --backend=cuda"
else
    bad "foreground --backend=cuda with a usable GPU (status $status)"
fi

rm -f "$log"
foreground_with "$tmp/vinterp-old" bn_qs "--backend=cuda"
if [ "$status" -ne 0 ] && [ ! -s "$out" ] && [ "$(warnings "$err")" -eq 0 ] \
   && [ "$(grep -c usage "$err")" -eq 1 ]; then
    ok "foreground --backend=cuda refused for another reason: no fallback, one error"
else
    bad "foreground --backend=cuda refused for another reason (status $status)"
fi

rm -f "$log"
foreground_with "$tmp/vinterp-nogpu" bn_qs "--backend=ref"
if [ "$status" -eq 0 ] && cmp -s "$out" "$corpus/bn_qs.expected" \
   && [ "$(wc -l < "$log")" -eq 1 ] && [ "$(warnings "$err")" -eq 0 ]; then
    ok "foreground without --backend=cuda: no probe"
else
    bad "foreground without --backend=cuda: no probe (status $status)"
fi

# The real vinterp: the result is right either way; the warning comes
# exactly when vinterp cannot use CUDA on this machine.
printf 'FUNC MAIN1_1\nRET\n' > "$tmp/empty.vcode"
if "$vinterp" --backend=cuda "$tmp/empty.vcode" > /dev/null 2>&1; then
    want=0 machine="with a usable GPU"
else
    want=1 machine="without a usable GPU"
fi
foreground bn_qs "--backend=cuda"
if [ "$status" -eq 0 ] && cmp -s "$out" "$corpus/bn_qs.expected" \
   && [ "$(warnings "$err")" -eq "$want" ]; then
    ok "foreground --backend=cuda, this machine ($machine): $want warning(s)"
else
    bad "foreground --backend=cuda, this machine ($machine) (status $status)"
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
# (The wait for _check is bounded at 10 minutes: a guard against a hang.)
n=$((n + 1))
job=vcode_${user}_$n
cp "$corpus/cu_print.vcode" "$tmp/${job}_code"
/bin/sh -c "$here/background-sh \"\" $vinterp 40000000 $tmp/ $job 60 \"--backend=ref\""
i=0
while [ ! -f "$tmp/${job}_check" ] && [ "$i" -lt 6000 ]; do
    sleep 0.1 2> /dev/null || sleep 1
    i=$((i + 1))
done
if [ -f "$tmp/${job}_check" ] && cmp -s "$tmp/${job}_out" "$corpus/cu_print.expected" \
   && grep -q "hello, world" "$tmp/${job}_err" && [ ! -f "$tmp/${job}_submit" ]; then
    ok "background cu_print"
else
    bad "background cu_print"
fi

# Background with --backend=cuda and no GPU: the warning at submission, the
# job runs with --backend=auto.
rm -f "$log"
n=$((n + 1))
job=vcode_${user}_$n
cp "$corpus/cu_print.vcode" "$tmp/${job}_code"
/bin/sh -c "$here/background-sh \"\" $tmp/vinterp-nogpu 40000000 $tmp/ $job 60 \"--backend=cuda\"" 2> "$tmp/stderr"
i=0
while [ ! -f "$tmp/${job}_check" ] && [ "$i" -lt 6000 ]; do
    sleep 0.1 2> /dev/null || sleep 1
    i=$((i + 1))
done
if [ -f "$tmp/${job}_check" ] && cmp -s "$tmp/${job}_out" "$corpus/cu_print.expected" \
   && [ "$(warnings "$tmp/stderr")" -eq 1 ] && grep -q "hello, world" "$tmp/${job}_err" \
   && [ "$(sed -n 2p "$log")" = "-m 40000000 --backend=auto $tmp/${job}_code" ]; then
    ok "background --backend=cuda without a GPU: one warning, runs --backend=auto"
else
    bad "background --backend=cuda without a GPU"
fi

# Each script is self-contained (users copy one alone into NESL's bin/),
# so cuda_fallback is written in both: the two copies must not drift.
fallback_of() { sed -n '/^cuda_fallback() {$/,/^}$/p' "$1"; }
if [ -n "$(fallback_of "$here/foreground-sh")" ] \
   && [ "$(fallback_of "$here/foreground-sh")" = "$(fallback_of "$here/background-sh")" ]; then
    ok "cuda_fallback is the same in foreground-sh and background-sh"
else
    bad "cuda_fallback differs between foreground-sh and background-sh"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

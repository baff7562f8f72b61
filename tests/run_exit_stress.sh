#!/bin/sh
# tests/run_exit_stress.sh INTERP [ROUNDS] — many processes sharing one kernel
# cache, ending while their tier workers compile (issue 28: a run that
# printed its whole output, then died at exit).
#
# Each round starts 12 runs at once, all with the same --cache-dir, over
# tests/tier/loop.vcode and tests/tier/once.vcode, every block promoted at
# its first run, in six ways:
#   cpu, the background tiers as they are (the run ends when it ends);
#   cpu, ending once a compile runs (VINTERP_TEST_TIER_END=compiling: it
#        is abandoned, its compiler killed);
#   cpu, the same with the job held after its build
#        (VINTERP_TEST_TIER_HOLD=1: a job that cannot be stopped, as one
#        inside NVRTC, whose library's teardown would crash under it);
#   cuda on the emulated device, ending once a compile runs;
#   cuda on the emulated device, the job held;
#   cuda on the emulated device, ending once every compile is done (units
#        written into the shared cache while the others read it).
# Every run must exit 0 with the reference's output and no sanitizer
# report; at the end no temporary file of a compile is left in the cache.
# Run under the sanitizer builds too (make asan-test: run_all.sh; make
# race-test: run_races.sh). Ends with "N passed, N failed".
interp=${1:-bin/vinterp}
rounds=${2:-2}
here=$(cd "$(dirname "$0")" && pwd)
passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cache="$tmp/cache"
mkdir -p "$cache"

# small programs: their units compile in a second or two, so that the
# runs (12 at once on a busy machine) are over in a minute or two
progs="$here/tier/loop.vcode $here/tier/once.vcode"
i=0
for p in $progs; do
    i=$((i + 1))
    "$interp" --backend=ref "$p" >"$tmp/want$i" 2>"$tmp/err" || { bad "ref on $p"; cat "$tmp/err"; }
done
nprogs=$i

# no compiles after a run (cuda's default: a detached child still writing
# into the shared cache when its temporary files are looked for)
common="VINTERP_TIER_AFTER=off VINTERP_TIER_DELAY_MS=0 VINTERP_TIER_BUDGET_MS=0 VINTERP_TIER_WORK=0 VINTERP_TIER_MIN_LEN=0
    VINTERP_TIER_IDLE=0 VINTERP_TEST_TIER_START=ready"
emu="VINTERP_CUDA_EMULATE=1 VINTERP_CUDA_HOST_MAX_ELEM=0 VINTERP_CUDA_HOST_MAX_SCAN=0 VINTERP_CUDA_HOST_MAX_LIB=0"
way() { # way K: the settings and backend of the K-th way (see above)
    case $1 in
    0) echo "--backend=cpu VINTERP_TEST_TIER_START=" ;;
    1) echo "--backend=cpu VINTERP_TEST_TIER_END=compiling" ;;
    2) echo "--backend=cpu VINTERP_TEST_TIER_END=compiling VINTERP_TEST_TIER_HOLD=1" ;;
    3) echo "--backend=cuda $emu VINTERP_TEST_TIER_END=compiling" ;;
    4) echo "--backend=cuda $emu VINTERP_TEST_TIER_END=compiling VINTERP_TEST_TIER_HOLD=1" ;;
    5) echo "--backend=cuda $emu VINTERP_TEST_TIER_END=done" ;;
    esac
}

r=0
while [ $r -lt "$rounds" ]; do
    r=$((r + 1))
    j=0
    while [ $j -lt 12 ]; do
        k=$((j % 6))
        n=$((j % nprogs + 1))
        p=$(echo $progs | cut -d' ' -f$n)
        set -- $(way $k)
        backend=$1
        shift
        # (units at -O0: the same code, a third of the compile time)
        # shellcheck disable=SC2086
        env $common "VINTERP_CFLAGS=-O0 -shared -fPIC -ffp-contract=off -fopenmp" \
            "VINTERP_CXXFLAGS=-x c++ -O0 -shared -fPIC -ffp-contract=off" "$@" \
            "$interp" "$backend" --cache-dir="$cache" "$p" >"$tmp/out$r.$j" 2>"$tmp/err$r.$j" &
        echo $! >"$tmp/pid$r.$j"
        j=$((j + 1))
    done
    j=0
    while [ $j -lt 12 ]; do
        wait "$(cat "$tmp/pid$r.$j")"
        rc=$?
        k=$((j % 6))
        n=$((j % nprogs + 1))
        if [ $rc -eq 0 ] && cmp -s "$tmp/out$r.$j" "$tmp/want$n" &&
            ! grep -q -E 'Sanitizer|runtime error|torn down|not reached in the time' "$tmp/err$r.$j"; then
            ok
        else
            bad "round $r, run $j (way $k: $(way $k | sed 's/VINTERP_CUDA_HOST_MAX_[A-Z]*=0 //g'), $(echo $progs | cut -d' ' -f$n | xargs basename)): exit $rc"
            head -c 2000 "$tmp/err$r.$j"
        fi
        j=$((j + 1))
    done
done
left=$(ls "$cache" | grep -E '\.tmp|\.log$' || true)
if [ -z "$left" ]; then
    ok
else
    bad "temporary files left in the shared cache: $left"
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]

#!/bin/sh
# tests/fuzz/run_smoke.sh BUILD SECONDS — run each fuzz target under BUILD
# for SECONDS seconds, one after the other, starting from the seeds in
# tests/fuzz/seeds_exec plus the corpus of earlier runs (tests/fuzz/corpus_NAME/,
# not in git). A target fails when libFuzzer stops before the time is up: a
# crash, a sanitizer report, a leak, a timeout (-timeout=120) or running out
# of memory; the input is then saved as tests/fuzz/crash-* (or leak-*,
# timeout-*, oom-*) and the end of the log is shown. The last line is
# "fuzz-smoke: N passed, N failed".
build=${1:-build-fuzz}
secs=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
passed=0
failed=0
for t in fuzz_frontend fuzz_exec fuzz_translate; do
    bin="$build/$t"
    corpus="$here/corpus_${t#fuzz_}"
    log="$build/$t.log"
    mkdir -p "$corpus"
    extra=""
    asan=${ASAN_OPTIONS:-}
    # fuzz_exec abandons the memory of runs that end in a fatal error
    # (see fuzz_exec.c), so LeakSanitizer is off there, per input and at exit.
    if [ "$t" = fuzz_exec ]; then
        extra="-detect_leaks=0"
        asan="${asan:+$asan:}detect_leaks=0"
    fi
    echo "== $t: $secs s"
    if ASAN_OPTIONS="$asan" "$bin" -max_total_time="$secs" -max_len=4096 -timeout=120 -close_fd_mask=2 \
        -dict="$here/vcode.dict" -artifact_prefix="$here/" -print_final_stats=1 $extra \
        "$corpus" "$here/seeds_exec" >"$log" 2>&1 </dev/null; then
        grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$log" | tr '\n' ' '
        echo
        passed=$((passed + 1))
    else
        echo "$t: FAILED (log: $log)"
        grep -E 'ERROR|SUMMARY|Test unit written|==[0-9]+==' "$log" | head -n 20
        tail -n 40 "$log"
        failed=$((failed + 1))
    fi
done
echo "fuzz-smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

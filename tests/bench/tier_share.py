#!/usr/bin/env python3
"""tests/bench/tier_share.py [INTERP] [-n RUNS] [--rounds N] — how the tier
worker keeps to its share on this machine: a measurement, not a test (the
tests decide by events: tests/run_tiers.py, tests/unit/test_tier_worker.c).

A loop program (tests/tier/loop.vcode with N rounds, every block promoted
at its first run) runs RUNS times at each share (1%, 10%, 100%), each from
an empty cache so that the worker compiles with the real compiler. From
-d stats and -d tier it reports, medians over the runs:

  run s        the process's wall time
  worker s     the worker's busy time (its CPU time and its compilers'
               unstopped time) and that time as a % of the run
  stopped s    the time the pacer kept the compilers stopped
  stops        how often the pacer stopped a compile
  overshoot ms at each stop, how far the worker was past its share
               (busy minus share, from the trace; the rule stops at 20 ms
               past it, the rest is how late the pacer's look came)

Run it on an idle machine and beside a load (e.g. two busy loops per CPU:
`for i in $(seq $((2*$(nproc)))); do sh -c 'while :; do :; done' & done`)
to see what a busy machine does to the share.
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
interp = os.path.abspath(os.path.join(HERE, "..", "..", "bin", "vinterp"))
runs, rounds = 5, 60000
while args:
    a = args.pop(0)
    if a == "-n":
        runs = int(args.pop(0))
    elif a == "--rounds":
        rounds = int(args.pop(0))
    else:
        interp = os.path.abspath(a)

with open(os.path.join(HERE, "..", "tier", "loop.vcode")) as f:
    src = f.read().replace("CONST INT 300 ", "CONST INT %d " % rounds, 1)
work = tempfile.mkdtemp(prefix="vinterp-share-")
prog = os.path.join(work, "loop.vcode")
with open(prog, "w") as f:
    f.write(src)
env = {k: v for k, v in os.environ.items() if not k.startswith("VINTERP_")}


def med(xs):
    return statistics.median(xs) if xs else float("nan")


print("| share | run s | worker s | worker % of run | stopped s | stops | overshoot ms (median, max) |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
try:
    for share in (1, 10, 100):
        rows = []
        for r in range(runs):
            cache = os.path.join(work, "cache%d_%d" % (share, r))
            e = dict(env, VINTERP_TIER_SHARE=str(share), VINTERP_TIER_DELAY_MS="0", VINTERP_TIER_BUDGET_MS="0")
            t0 = time.monotonic()
            p = subprocess.run([interp, "--backend=cpu", "--tier-work=0", "--cache-dir=" + cache, "-d", "stats",
                                "-d", "tier", prog], capture_output=True, text=True, env=e)
            wall = time.monotonic() - t0
            shutil.rmtree(cache, ignore_errors=True)
            m = re.search(r"the worker ran ([0-9.]+) s .*its compilers stopped ([0-9.]+) s", p.stderr)
            if p.returncode != 0 or not m:
                print("run failed (exit %d): %s" % (p.returncode, p.stderr[-500:]), file=sys.stderr)
                continue
            over = [1e3 * (float(b) - float(s)) for b, s in
                    re.findall(r"its compile stopped for the share: the worker busy ([0-9.]+) s, its share ([0-9.]+) s",
                               p.stderr)]
            rows.append((wall, float(m.group(1)), float(m.group(2)), len(over), over))
        overs = [o for row in rows for o in row[4]]
        print("| %d%% | %.3f | %.3f | %.1f | %.3f | %s | %s |" % (
            share, med([r[0] for r in rows]), med([r[1] for r in rows]),
            100 * med([r[1] / r[0] for r in rows]), med([r[2] for r in rows]),
            med([r[3] for r in rows]),
            "%.1f, %.1f" % (med(overs), max(overs)) if overs else "—"))
finally:
    shutil.rmtree(work, ignore_errors=True)

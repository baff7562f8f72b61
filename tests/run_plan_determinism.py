#!/usr/bin/env python3
"""tests/run_plan_determinism.py INTERP — block plans do not depend on how
busy the machine is: the fusion ILP is bounded by lp_solve's work, not by
a time limit (translate/fuse.h), so a program's -d fusion trace (the
graphs, the ILPs, the schedules, the fused kernels; the solve times left
out) is the same on an idle machine and with every CPU kept busy. Under
the old 0.1 s time limit, bn_black_scholes's largest ILP (about 90 ms
idle) fell back to the greedy schedule under load.

Runs programs with ILPs: a golden program always, and the corpus's
bn_black_scholes and the benchmark bh_16k when ../../shared has them. Not
timed. Ends with "N passed, N failed"."""
import os
import re
import subprocess
import sys

from tally import check, finish

HERE = os.path.dirname(os.path.abspath(__file__))
interp = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "bin", "vinterp"))
SHARED = os.path.join(HERE, "..", "..", "shared")
# (program, extra arguments): bh_16k runs for minutes under the lcu
# evaluator, but its first 3000 instructions translate 100 blocks.
PROGRAMS = [(os.path.join(HERE, "golden", "cmp_float_nan.vcode"), []),
            (os.path.join(SHARED, "corpus", "bn_black_scholes.vcode"), []),
            (os.path.join(SHARED, "bench", "bh_16k.vcode"), ["--max-steps=3000", "-m", "1000000000"])]




def plans(path, args):
    """The -d fusion lines that describe plans, solve times removed."""
    p = subprocess.run([interp, "--backend=lcu", "-d", "fusion"] + args + [path], capture_output=True,
                       text=True, timeout=300, cwd=os.path.dirname(path))
    keep = [re.sub(r", [0-9.]+ ms$", "", l) for l in p.stderr.splitlines()
            if re.match(r"(fusion: |-- clusters:|-- schedule:|-- fused|== block)", l)]
    return p.returncode, keep


def busy(n):
    """n processes spinning on a CPU each."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


ncpu = os.cpu_count() or 2
for path, args in PROGRAMS:
    if not os.path.exists(path):
        print("skipped (not found): %s" % path)
        continue
    name = os.path.basename(path)
    rc1, idle = plans(path, args)
    spinners = busy(ncpu)
    try:
        rc2, loaded = plans(path, args)
    finally:
        for s in spinners:
            s.kill()
            s.wait()
    check(name + ": runs (to its end or its --max-steps)", rc1 == rc2 and (rc1 == 0 or args))
    ilp = [l for l in idle if l.startswith("fusion: ") and "(ILP)" in l]
    check(name + ": some block is scheduled by the ILP", len(ilp) > 0)
    same = idle == loaded
    detail = ""
    if not same:
        diff = [(a, b) for a, b in zip(idle, loaded) if a != b][:2]
        detail = "; ".join("idle %r / loaded %r" % (a[:100], b[:100]) for a, b in diff)
    check(name + ": the same plans idle and with %d busy CPUs" % ncpu, same, detail)
    print("%s: %d plan lines, %d ILP schedules, largest ILP work %s" % (
        name, len(idle), len(ilp),
        max((int(m.group(1)) for m in (re.search(r"lp_solve work (\d+)", l) for l in ilp) if m),
            default=0)))

finish()

#!/usr/bin/env python3
"""tests/run_long_programs.py INTERP — translation stays linear in the size
of the program: the programs of gen_long_programs.py (a chain of 20000
functions, blocks of 8000 vector instructions, 100 functions inlined into
one block) run under --backend=lcu (inlining, fusion) and must print what
--backend=ref prints, within a generous bound on the CPU seconds the run
uses (a regression to cubic fusion or to quadratic inlining takes minutes
there; CPU time, not wall time, so that a busy machine does not change the
verdict: other processes do not add to it), and the inlined
program must stay within the inlining budget (translate/inline.h:
instructions after <= before + max(before, 200000)). Translation times
(-d stats) are printed, never compared. Ends with "N passed, N failed"."""
import os
import re
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_long_programs  # noqa: E402

from tally import check, finish

interp = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "bin", "vinterp"))
CPU_LIMIT_S = 60    # CPU seconds per run; the fused runs take about 2 s here
HANG_S = 1800       # wall seconds: a guard against a hang, not a measurement
GROWTH = 200000     # InlineOptions.max_growth's default


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(args):
    """(exit status, stdout, stderr, CPU seconds of the run)"""
    c0 = child_cpu()
    try:
        p = subprocess.run([interp] + args, capture_output=True, text=True, timeout=HANG_S)
        return p.returncode, p.stdout, p.stderr, child_cpu() - c0
    except subprocess.TimeoutExpired:
        return None, "", "still running after %d s" % HANG_S, child_cpu() - c0


with tempfile.TemporaryDirectory() as d:
    for name, path in gen_long_programs.write_all(d).items():
        rc_ref, out_ref, err_ref, _ = run(["--backend=ref", path])
        check(name + ": ref runs", rc_ref == 0, err_ref[-300:])
        rc, out, err, cpu = run(["--backend=lcu", "-d", "stats", path])
        check(name + ": lcu finishes within %d CPU seconds" % CPU_LIMIT_S, rc == 0 and cpu <= CPU_LIMIT_S,
              "%.1f CPU s; %s" % (cpu, err[-300:]))
        check(name + ": lcu prints what ref prints", rc == 0 and rc_ref == 0 and out == out_ref)
        m = re.search(r"^inline: .* (\d+) -> (\d+) instructions$", err, re.M)
        check(name + ": inline line in -d stats", m is not None)
        if m:
            before, after = int(m.group(1)), int(m.group(2))
            check(name + ": inlined size within the budget", after <= before + max(before, GROWTH),
                  "%d -> %d" % (before, after))
        t = re.search(r"^stats: translation ([0-9.]+) s", err, re.M)
        check(name + ": translation time in -d stats", t is not None)
        print("%s: %s; translation %s s; %.2f CPU s" % (name, m.group(0)[len("inline: "):] if m else "?",
                                                        t.group(1) if t else "?", cpu))

finish()

#!/usr/bin/env python3
"""tests/run_long_programs.py INTERP — translation stays linear in the size
of the program: the programs of gen_long_programs.py (a chain of 20000
functions, blocks of 8000 vector instructions, 100 functions inlined into
one block) run under --backend=lcu (inlining, fusion) and must print what
--backend=ref prints, within a generous time limit (a regression to cubic
fusion or to quadratic inlining takes minutes there), and the inlined
program must stay within the inlining budget (translate/inline.h:
instructions after <= before + max(before, 200000)). Translation times
(-d stats) are printed, never compared. Ends with "N passed, N failed"."""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_long_programs  # noqa: E402

from tally import check, finish

interp = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "bin", "vinterp"))
LIMIT_S = 60        # per run; the fused runs take about 2 s here
GROWTH = 200000     # InlineOptions.max_growth's default




def run(args):
    try:
        p = subprocess.run([interp] + args, capture_output=True, text=True, timeout=LIMIT_S)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % LIMIT_S


with tempfile.TemporaryDirectory() as d:
    for name, path in gen_long_programs.write_all(d).items():
        rc_ref, out_ref, err_ref = run(["--backend=ref", path])
        check(name + ": ref runs", rc_ref == 0, err_ref[-300:])
        rc, out, err = run(["--backend=lcu", "-d", "stats", path])
        check(name + ": lcu finishes in %d s" % LIMIT_S, rc == 0, err[-300:])
        check(name + ": lcu prints what ref prints", rc == 0 and rc_ref == 0 and out == out_ref)
        m = re.search(r"^inline: .* (\d+) -> (\d+) instructions$", err, re.M)
        check(name + ": inline line in -d stats", m is not None)
        if m:
            before, after = int(m.group(1)), int(m.group(2))
            check(name + ": inlined size within the budget", after <= before + max(before, GROWTH),
                  "%d -> %d" % (before, after))
        t = re.search(r"^stats: translation ([0-9.]+) s", err, re.M)
        check(name + ": translation time in -d stats", t is not None)
        print("%s: %s; translation %s s" % (name, m.group(0)[len("inline: "):] if m else "?",
                                            t.group(1) if t else "?"))

finish()

#!/usr/bin/env python3
"""tests/run_mem_corpus.py INTERP [N] — every backend within the reference's -m
on real programs: for each of the N largest programs of ../shared/corpus
(default 10), the smallest -m the reference needs is found by bisection;
then lcu and cpu with every block fused (--tier=eager), the default tiered
run, cuda on the emulated device with every kernel there, and the cuda
backend's device tier with every vector on the emulated device run the
program at exactly that -m and print what the reference prints; one unit
below it every one of them fails as the reference does (output, message,
status).

A fused block may hold more at its peak than the reference's instruction
order does: it runs with the limit raised, and one that passed -m is run
again on the reference (runtime/fused/backend.c); so is one within -m
whose reference run might not have been (it holds less than the reference
where it materialises fewer vectors: the reference's charges are bounded
from the lengths the run saw, ref_charge_bound); the segment offsets it
cached on descriptors are dropped at its end. Run by .ci/run after the
corpus runs, whose kernel cache it shares (the same compiler flags).
Ends with "N passed, N failed"."""
import os
import subprocess
import sys

from tally import check, finish

HERE = os.path.dirname(os.path.abspath(__file__))
interp = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "bin", "vinterp"))
count = int(sys.argv[2]) if len(sys.argv) > 2 else 10
corpus = os.environ.get("VINTERP_CORPUS", os.path.join(HERE, "..", "..", "shared", "corpus"))
HI = 1 << 40

EMUL = {"VINTERP_CUDA_EMULATE": "1", "VINTERP_CUDA_HOST_MAX_ELEM": "0", "VINTERP_CUDA_HOST_MAX_SCAN": "0",
        "VINTERP_CUDA_HOST_MAX_LIB": "0", "VINTERP_CXXFLAGS": "-x c++ -O0 -shared -fPIC -ffp-contract=off"}
CPU = {"VINTERP_CFLAGS": "-O0 -shared -fPIC -ffp-contract=off -fopenmp"}
# every vector on the emulated device (runtime/fused/cuda_tier.h)
DEVTIER = {"VINTERP_CUDA_EMULATE": "1", "VINTERP_DEVICE_TIER": "on", "VINTERP_DEVICE_MIN": "1"}
BACKENDS = [
    ("lcu", ["--backend=lcu", "--tier=eager"], {}),
    ("cpu eager", ["--backend=cpu", "--tier=eager"], CPU),
    ("default (tiered)", [], CPU),
    ("cuda emulated", ["--backend=cuda", "--tier=eager"], EMUL),
    ("cuda device tier", ["--backend=cuda", "--tier=off"], DEVTIER),
]
# Below the reference's smallest -m every backend fails as the reference
# does, to the byte
EXACT = tuple(name for name, _, _ in BACKENDS)


def run(args, env_extra, m, prog):
    env = {k: v for k, v in os.environ.items() if k not in ("VINTERP_BACKEND", "VINTERP_TIER")}
    env.update(env_extra)
    p = subprocess.run([interp] + args + ["-m", str(m), prog + ".vcode"], cwd=corpus, capture_output=True, text=True,
                       timeout=1800, env=env)
    return p.returncode, p.stdout, p.stderr


if not os.path.isdir(corpus):
    print("no corpus at %s: skipped" % corpus)
    finish()

progs = sorted((f[:-len(".vcode")] for f in os.listdir(corpus) if f.endswith(".vcode")),
               key=lambda n: (-os.path.getsize(os.path.join(corpus, n + ".vcode")), n))
# programs that time themselves or open files print what varies: left out
usable = []
for n in progs:
    text = open(os.path.join(corpus, n + ".vcode"), encoding="latin-1").read()
    if "TIMER" in text or "FOPEN" in text or "SPAWN" in text or "READ" in text:
        continue
    usable.append(n)
# and programs whose -m the backends once missed: a RANK over a descriptor
# that lives on after it (the reference cached its offsets, charged)
EXTRA = [n for n in ("cu_nested_segmented2",) if n in usable and n not in usable[:count]]
for n in usable[:count] + EXTRA:
    rc, want, _ = run(["--backend=ref"], {}, HI, n)
    if not check("%s: runs under ref" % n, rc == 0):
        continue
    lo, hi = 1, HI
    while lo < hi:
        mid = (lo + hi) // 2
        if run(["--backend=ref"], {}, mid, n)[0] == 0:
            hi = mid
        else:
            lo = mid + 1
    below = run(["--backend=ref"], {}, lo - 1, n)
    rc, out, err = below
    check("%s: ref needs -m %d (at %d it runs out)" % (n, lo, lo - 1), rc == 1 and "ran out of vector memory" in err,
          err[-300:])
    for name, args, env in BACKENDS:
        rc, out, err = run(args, env, lo, n)
        check("%s: %s at ref's smallest -m (%d): ref's output" % (n, name, lo), rc == 0 and out == want, err[-400:])
        if name in EXACT:
            got = run(args, env, lo - 1, n)
            check("%s: %s at %d: ref's failure, the same output, message and status" % (n, name, lo - 1),
                  got == below, "%r against %r" % (got[2][-300:], below[2][-300:]))
finish()

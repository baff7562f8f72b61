#!/usr/bin/env python3
"""tests/run_mem_limits.py INTERP — the -m limit under every backend.

For each program of tests/mem/, the smallest -m with which the reference
runs it is found by bisection; then under every backend (ref, lcu, cpu with
every block compiled, cpu tiered, cuda on the emulated device with every
kernel on the device, the cuda backend's device tier with every vector on
the emulated device):

  * at the reference's smallest -m the program runs, with the reference's
    output (a fused backend never needs more than the reference);
  * the backend's own smallest -m is found: just under it the run stops
    with exit 1, nothing on stdout, and the one message every backend
    gives, naming the VCODE line;
  * every backend needs exactly the reference's -m: a fused block that
    holds less than the reference would (map_chain: 7 units where the
    reference's vectors need 20002) is run again on the reference when
    the reference might not have fitted (runtime/fused/backend.c,
    ref_charge_bound).

Then FREAD_CHAR from an endless stream stops at a small -m (it used to read
2^30 characters before checking). Ends with "N passed, N failed"."""
import os, re, subprocess, sys, tempfile

from tally import check, finish

HERE = os.path.dirname(os.path.abspath(__file__))
interp = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "bin", "vinterp"))
MEM = os.path.join(HERE, "mem")

EMUL = {"VINTERP_CUDA_EMULATE": "1", "VINTERP_CUDA_HOST_MAX_ELEM": "0",
        "VINTERP_CUDA_HOST_MAX_SCAN": "0", "VINTERP_CUDA_HOST_MAX_LIB": "0"}
BACKENDS = [
    ("ref", ["--backend=ref"], {}),
    ("lcu", ["--backend=lcu"], {}),
    ("cpu eager", ["--backend=cpu", "--tier=eager"], {}),
    ("cpu tiered", ["--backend=cpu"], {}),
    ("cuda emulated", ["--backend=cuda", "--tier=eager"], EMUL),
    ("cuda device tier", ["--backend=cuda", "--tier=off"],
     {"VINTERP_CUDA_EMULATE": "1", "VINTERP_DEVICE_TIER": "on", "VINTERP_DEVICE_MIN": "1"}),
]
MESSAGE = re.compile(r"^vinterp: [^:]+\.vcode:\d+: [^:]+: ran out of vector memory\.  "
                     r"Rerun using larger -m argument\. \(.*units needed, \d+ of \d+ in use\)\n$")

# program and its stdin
with tempfile.TemporaryDirectory() as tmp:
    ints = os.path.join(tmp, "ints.txt")
    with open(ints, "w") as f:
        f.write("( " + " ".join(str(i) for i in range(30000)) + " )\n")
    PROGRAMS = [
        ("deep_recursion", None),
        ("map_chain", None),
        ("read_input", ints),
        ("rank_segments", None),
        ("chain_leaves", None),
        ("chain_gathers", None),
        ("gather_in_place", None),
        ("guard_held", None),
    ]


    def run(args, env_extra, m, stdin, prog):
        env = dict(os.environ, **env_extra)
        env.pop("VINTERP_TIER", None)
        env["VINTERP_CACHE_DIR"] = os.environ.get("VINTERP_CACHE_DIR", os.path.join(tmp, "cache"))
        with open(stdin or os.devnull) as inp:
            p = subprocess.run([interp] + args + ["-m", str(m), os.path.join(MEM, prog + ".vcode")],
                               stdin=inp, capture_output=True, text=True, timeout=600, env=env)
        return p.returncode, p.stdout, p.stderr

    def smallest(args, env_extra, stdin, prog, hi):
        """The smallest -m in [1, hi] that runs PROG (hi must)."""
        lo = 0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if run(args, env_extra, mid, stdin, prog)[0] == 0:
                hi = mid
            else:
                lo = mid
        return hi

    for prog, stdin in PROGRAMS:
        rc, want, _ = run(["--backend=ref"], {}, 100000000, stdin, prog)
        check(prog + ": runs under ref", rc == 0)
        ref_min = smallest(["--backend=ref"], {}, stdin, prog, 100000000)
        for name, args, env_extra in BACKENDS:
            rc, out, err = run(args, env_extra, ref_min, stdin, prog)
            check("%s, %s: runs at the reference's -m %d" % (prog, name, ref_min), rc == 0 and out == want,
                  err.strip()[:200])
            own = smallest(args, env_extra, stdin, prog, ref_min)
            check("%s, %s: needs the reference's -m (%d), not less" % (prog, name, ref_min), own == ref_min,
                  "needs %d" % own)
            rc, out, err = run(args, env_extra, own - 1, stdin, prog)
            check("%s, %s: at -m %d the run stops with the one message, naming the line" % (prog, name, own - 1),
                  rc == 1 and out == "" and MESSAGE.match(err) is not None, repr(err[:300]))

    # FREAD_CHAR with no limit from /dev/zero: stops at -m 100
    for name, args, env_extra in BACKENDS:
        env = dict(os.environ, **env_extra)
        with open("/dev/zero") as z:
            p = subprocess.run([interp] + args + ["-m", "100", os.path.join(MEM, "fread_zero.vcode")],
                               stdin=z, capture_output=True, text=True, timeout=600, env=env)
        check("fread_zero, %s: stops at -m 100 with the message" % name,
              p.returncode == 1 and MESSAGE.match(p.stderr) is not None, repr(p.stderr[:300]))

finish()

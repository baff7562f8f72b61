#!/usr/bin/env python3
"""tests/run_check_bound.py INTERP — --check against error bounds
(runtime/fused/check_bound.h), with the programs of tests/check/:

  - cancel_sum.vcode (nearly cancelling dot products, reduced and scanned),
    moves.vcode (those sums through the data movement instructions)
    and unverifiable.vcode (a length that depends on the sign of such a
    sum) pass --check under cpu and under cuda on the emulated device with
    every kernel there: every reduction strategy, blocks of 1, 16 and 256
    threads, --tier=eager and --tier=sync; the reassociated sums do differ
    there, so a flat relative tolerance would fail them;
  - deliberately wrong kernels ($VINTERP_CHECK_PERTURB) on small_sum.vcode,
    whose bounds are known by hand, fail with the message and the bound:
    a sum moved past its bound, a Float elementwise result moved 1 ulp, an
    Int moved by 1; a sum moved within its bound passes; --check-rel still
    adds its allowance.

Ends with "N passed, N failed"."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from tally import check, finish

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check")
interp = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "bin/vinterp")




own_cache = None
base_env = dict(os.environ)
for k in ("VINTERP_CHECK_PERTURB", "VINTERP_CUDA_STRATEGY", "VINTERP_CUDA_EMULATE_BLOCK", "VINTERP_TIER",
          "VINTERP_BACKEND"):
    base_env.pop(k, None)
if not base_env.get("VINTERP_CACHE_DIR"):
    own_cache = tempfile.mkdtemp(prefix="vinterp-checkbound-")
    base_env["VINTERP_CACHE_DIR"] = own_cache
DEVICE = {"VINTERP_CUDA_EMULATE": "1", "VINTERP_CUDA_HOST_MAX_ELEM": "0", "VINTERP_CUDA_HOST_MAX_SCAN": "0",
          "VINTERP_CUDA_HOST_MAX_LIB": "0"}
SYNC = {"VINTERP_TIER": "sync", "VINTERP_TIER_WORK": "0", "VINTERP_TIER_MIN_LEN": "0",
        "VINTERP_TIER_DELAY_MS": "0", "VINTERP_TIER_BUDGET_MS": "0"}


def run(args, env):
    e = dict(base_env)
    e.update(env)
    p = subprocess.run([interp] + args, capture_output=True, text=True, timeout=300, env=e)
    return p.returncode, p.stdout, p.stderr


def prog(name):
    return os.path.join(CHECK, name + ".vcode")


have_cc = shutil.which(os.environ.get("VINTERP_CC") or "cc") is not None
have_cxx = shutil.which(os.environ.get("VINTERP_CXX") or "c++") is not None

configs = []
if have_cc:
    configs.append(("cpu --tier=eager", ["--backend=cpu", "--tier=eager"], {}))
    configs.append(("cpu --tier=sync", ["--backend=cpu"], SYNC))
if have_cxx:
    for block in ("1", "16", "256"):
        for strategy in ("auto", "lib", "thread", "warp", "block"):
            env = dict(DEVICE, VINTERP_CUDA_EMULATE_BLOCK=block, VINTERP_CUDA_STRATEGY=strategy)
            configs.append(("cuda (emulated, blocks of %s, %s) --tier=eager" % (block, strategy),
                            ["--backend=cuda", "--tier=eager"], env))
    for strategy in ("auto", "warp", "block"):
        env = dict(DEVICE, **SYNC, VINTERP_CUDA_STRATEGY=strategy)
        configs.append(("cuda (emulated, %s) --tier=sync" % strategy, ["--backend=cuda"], env))

try:
    # ---- reassociated sums pass, and do differ somewhere -------------------------
    for name in ("cancel_sum", "moves", "unverifiable"):
        ref = run(["--backend=ref", prog(name)], {})[1]
        differed = False
        for what, args, env in configs:
            rc, out, err = run(args + ["--check", "-d", "stats", prog(name)], env)
            m = re.search(r"(\d+) block runs compared with the reference, no difference", err)
            ok = rc == 0 and m is not None and int(m.group(1)) >= 1
            check("%s: %s --check" % (name, what), ok, err[-2000:])
            differed = differed or out != ref
            if name == "unverifiable" and ok:
                check("%s: %s counts the unverifiable output" % (name, what), "1 not verifiable" in err, err[-800:])
        # the emulated device's trees do reassociate (in sanitizer builds its
        # blocks have one thread, and only cancel_sum's sums still differ)
        if have_cxx and name == "cancel_sum":
            check("%s: some configuration's answer differs from ref (the sums were reassociated)" % name, differed)

    # ---- wrong kernels fail -----------------------------------------------------
    wrong = []
    if have_cc:
        wrong.append(("cpu", ["--backend=cpu", "--tier=eager"], {}))
    if have_cxx:
        wrong.append(("cuda (emulated, block)", ["--backend=cuda", "--tier=eager"],
                      dict(DEVICE, VINTERP_CUDA_STRATEGY="block")))
    small = prog("small_sum")
    for what, args, env in wrong:
        # 13 = 0.5+0.5+6+6: the bound of a 4-term sum is gamma(3)*2*13*(1+gamma(6)) ~ 8.7e-15
        rc, out, err = run(args + ["--check", small], dict(env, VINTERP_CHECK_PERTURB="fsum:4e-15"))
        check("%s: a sum moved within its bound passes" % what, rc == 0, err[-1000:])
        rc, out, err = run(args + ["--check", small], dict(env, VINTERP_CHECK_PERTURB="fsum:2e-14"))
        check("%s: a sum moved past its bound fails" % what,
              rc == 1 and "differ in the block at lines 7-16" in err and "element 0 = 13.00000000000002" in err
              and "the reference gives Float of length 1, element 0 = 13; the bound there is 8.7e-15" in err,
              err[-1500:])
        rc, out, err = run(args + ["--check", small], dict(env, VINTERP_CHECK_PERTURB="ulps:1"))
        check("%s: a Float elementwise result 1 ulp off fails (exact)" % what,
              rc == 1 and "element 3 = 6.0000000000000009" in err and "the bound there is 0 (exact)" in err,
              err[-1500:])
        rc, out, err = run(args + ["--check", "--check-rel=1e-12", small], dict(env, VINTERP_CHECK_PERTURB="ulps:1"))
        check("%s: --check-rel=1e-12 allows 1 ulp" % what, rc == 0, err[-1500:])
        rc, out, err = run(args + ["--check", small], dict(env, VINTERP_CHECK_PERTURB="int:1"))
        check("%s: an Int result off by 1 fails" % what,
              rc == 1 and "Int of length 3, element 2 = 10; the reference gives Int of length 3, element 2 = 9; "
              "it must be exact there" in err, err[-1500:])
        rc, out, err = run(args + ["--check", small], dict(env, VINTERP_CHECK_PERTURB="int:1.5"))
        check("%s: a malformed VINTERP_CHECK_PERTURB is refused" % what,
              rc == 1 and "VINTERP_CHECK_PERTURB: 'int:1.5' is not" in err and out == "", err)
    if have_cc:
        rc, out, err = run(["--backend=cpu", small], {"VINTERP_CHECK_PERTURB": "int:1"})
        check("VINTERP_CHECK_PERTURB does nothing without --check",
              rc == 0 and out == run(["--backend=ref", small], {})[1], err)
        rc, out, err = run(["--backend=cpu", "--check", "--check-rel=-1", small], {})
        check("--check-rel takes a tolerance >= 0", rc == 1 and "--check-rel" in err, err)
finally:
    if own_cache:
        shutil.rmtree(own_cache, ignore_errors=True)

finish()

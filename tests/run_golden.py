#!/usr/bin/env python3
"""Golden tests for a VCODE interpreter.

usage: run_golden.py DIR INTERP [extra interpreter args...] [--float-rel TOL]

For every DIR/NAME.vcode (sorted by name) the runner executes

    INTERP [extra args] [contents of NAME.args] NAME.vcode

with DIR as the working directory, stdin from NAME.stdin when that file exists
(otherwise /dev/null) and a 600 s timeout (a guard against a hang). The test passes when

  * stdout equals NAME.expected exactly (or, with --float-rel TOL, token by token
    where float tokens may differ by at most TOL relative; integers, booleans,
    brackets and non-finite values must still match exactly),
  * stderr equals NAME.stderr (empty when that file is absent),
  * the exit status equals the number in NAME.status (0 when absent).

One line is printed per failing test, then the summary `N passed, N failed`.
Exit status: 0 when everything passed, 1 otherwise, 2 for usage errors.
--float-rel TOL may appear anywhere; every other argument after INTERP is passed
to the interpreter.
"""
import concurrent.futures
import os
import shlex
import subprocess
import sys

TIMEOUT_S = 600  # a guard against a hang, not a measurement


def read_text(path, default=None):
    if not os.path.exists(path):
        return default
    with open(path, "rb") as f:
        return f.read().decode("latin-1")


def is_float_token(tok):
    """A token written by %.14e (or any decimal with a point / exponent)."""
    t = tok.lower()
    if t in ("inf", "-inf", "nan", "-nan"):
        return False  # non-finite values are compared exactly
    if "." not in t and "e" not in t:
        return False
    try:
        float(t)
    except ValueError:
        return False
    return True


def same_token(a, b, rel):
    if a == b:
        return True
    if rel <= 0 or not (is_float_token(a) and is_float_token(b)):
        return False
    x, y = float(a), float(b)
    if x == y:
        return True
    return abs(x - y) <= rel * max(abs(x), abs(y))


def same_stdout(got, exp, rel):
    if got == exp:
        return True
    if rel <= 0:
        return False
    gl, el = got.split("\n"), exp.split("\n")
    if len(gl) != len(el):
        return False
    for g, e in zip(gl, el):
        gt, et = g.split(" "), e.split(" ")  # keep spacing significant
        if len(gt) != len(et):
            return False
        if not all(same_token(x, y, rel) for x, y in zip(gt, et)):
            return False
    return True


def shorten(s, n=70):
    r = repr(s)
    return r if len(r) <= n else r[: n - 3] + "..."


def diff_hint(got, exp):
    """Where two texts first differ, as a short human-readable hint."""
    gl, el = got.split("\n"), exp.split("\n")
    for i in range(max(len(gl), len(el))):
        g = gl[i] if i < len(gl) else None
        e = el[i] if i < len(el) else None
        if g != e:
            if g is None:
                return "line %d: missing, expected %s" % (i + 1, shorten(e))
            if e is None:
                return "line %d: unexpected %s" % (i + 1, shorten(g))
            return "line %d: got %s, expected %s" % (i + 1, shorten(g), shorten(e))
    return "texts differ"


def describe_status(rc):
    if rc is None:
        return "timeout"
    if rc < 0:
        return "signal %d" % -rc
    return str(rc)


def run_one(d, name, interp, extra, rel):
    """Returns None on success, else a list of reasons."""
    base = os.path.join(d, name)
    args_text = read_text(base + ".args", "")
    targs = shlex.split(args_text.strip()) if args_text.strip() else []
    cmd = [interp] + extra + targs + [name + ".vcode"]
    stdin_path = base + ".stdin"
    stdin_f = open(stdin_path, "rb") if os.path.exists(stdin_path) else open(os.devnull, "rb")
    try:
        p = subprocess.run(cmd, cwd=d, stdin=stdin_f, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT_S)
        out, err, rc = p.stdout.decode("latin-1"), p.stderr.decode("latin-1"), p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("latin-1")
        err = (e.stderr or b"").decode("latin-1")
        rc = None
    except OSError as e:
        return ["cannot run %s: %s" % (interp, e)]
    finally:
        stdin_f.close()

    exp_out = read_text(base + ".expected", "")
    exp_err = read_text(base + ".stderr", "")
    st = read_text(base + ".status", "0").strip() or "0"
    exp_rc = int(st)

    why = []
    if rc != exp_rc:
        why.append("status %s, expected %d" % (describe_status(rc), exp_rc))
    if not same_stdout(out, exp_out, rel):
        why.append("stdout " + diff_hint(out, exp_out))
    if err != exp_err:
        why.append("stderr " + diff_hint(err, exp_err))
    return why or None


def main(argv):
    # --float-rel may appear anywhere (the interpreter has no such option).
    rel, rest = 0.0, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--float-rel" and i + 1 < len(argv):
            rel = float(argv[i + 1])
            i += 2
            continue
        if a.startswith("--float-rel="):
            rel = float(a.split("=", 1)[1])
        elif a in ("-h", "--help") and not rest:
            print(__doc__)
            return 0
        else:
            rest.append(a)
        i += 1
    if len(rest) < 2:
        sys.stderr.write(__doc__)
        return 2
    d = os.path.abspath(rest[0])
    interp = rest[1]
    if os.sep in interp:
        interp = os.path.abspath(interp)
    extra = rest[2:]
    if not os.path.isdir(d):
        sys.stderr.write("run_golden.py: %s is not a directory\n" % d)
        return 2
    names = sorted(f[:-6] for f in os.listdir(d) if f.endswith(".vcode"))
    # One program per CPU at a time; those that open files or spawn
    # (their files are named in the program, in this folder) one after
    # another in a lane of their own. Failures are printed in name order.
    def touches_files(name):
        text = read_text(os.path.join(d, name + ".vcode"), "")
        return "FOPEN" in text or "SPAWN" in text
    serial = [n for n in names if touches_files(n)]
    results = {}

    def run_serial():
        for n in serial:
            results[n] = run_one(d, n, interp, extra, rel)

    workers = max(1, min(16, os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        lane = pool.submit(run_serial)
        futs = {n: pool.submit(run_one, d, n, interp, extra, rel) for n in names if n not in set(serial)}
        lane.result()
        for n, f in futs.items():
            results[n] = f.result()
    passed = failed = 0
    for name in names:
        why = results[name]
        if why is None:
            passed += 1
        else:
            failed += 1
            print("FAIL: %s: %s" % (name, "; ".join(why)), flush=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""tests/run_cli.py INTERP — command-line behaviour that the golden
programs cannot express: --version, --help, -t, --profile (text and JSON,
with call counts checked), --progress off a terminal, --backend choices and
the fused backend's kernel profile. Ends with "N passed, N failed"."""
import json, os, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
interp = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "bin", "vinterp"))
fib = os.path.join(HERE, "demo", "fib.vcode")
passed = failed = 0


def run(*args):
    p = subprocess.run([interp] + list(args), capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def check(name, cond):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL", name)


def json_objects(text):
    """The JSON objects in TEXT, in order (--profile=json prints one per report)."""
    dec, out, i = json.JSONDecoder(), [], 0
    while True:
        j = text.find("{", i)
        if j < 0:
            return out
        obj, i = dec.raw_decode(text, j)
        out.append(obj)


rc, out, err = run("--version")
check("--version exits 0 and names vinterp", rc == 0 and out.startswith("vinterp "))
rc, out, err = run("--help")
check("--help exits 0 and lists --backend", rc == 0 and "--backend" in err)
rc, out, err = run("--backend=nonesuch", fib)
check("unknown backend is an error", rc == 1 and "unknown backend" in err and out == "")
rc, out, err = run("-t", fib)
check("-t prints the elapsed time line on stderr before the dump",
      rc == 0 and re.match(r"elapsed time = [0-9]+\.[0-9]{6} seconds\n$", err) is not None)
ref_out = run(fib)[1]
rc, out, err = run("--profile=json", fib)
objs = json_objects(err)
check("--profile=json leaves stdout alone", rc == 0 and out == ref_out)
funcs = {f["name"]: f for f in objs[0]["functions"]} if objs else {}
# fib.vcode calls FIB for 1, 10 and 15 (see tests/demo/fib.vcode): the
# number of activations of a naive recursive fib(n) is 2*fib(n+1)-1.
def calls(n):
    a, b = 0, 1
    for _ in range(n + 1):
        a, b = b, a + b
    return 2 * a - 1
want = calls(1) + calls(10) + calls(15)
check("--profile counts every recursive call (%d)" % want, funcs.get("FIB", {}).get("calls") == want)
check("--profile: inclusive >= exclusive", all(f["inclusive_seconds"] >= f["exclusive_seconds"] - 1e-9
                                               for f in funcs.values()))
rc, out, err = run("--profile", fib)
check("--profile text has the table header", rc == 0 and "calls" in err and "excl s" in err and out == ref_out)
rc, out, err = run("--progress", fib)
check("--progress prints nothing when stderr is not a terminal", rc == 0 and err == "" and out == ref_out)
rc, out, err = run("--backend=lcu", "--profile=json", os.path.join(HERE, "demo", "segsum.vcode"))
objs = json_objects(err)
check("lcu --profile=json adds a kernel report", rc == 0 and len(objs) == 2 and len(objs[1]["kernels"]) >= 1)
rc, out, err = run("--backend=lcu", "-d", "stats", fib)
check("lcu -d stats summary", rc == 0 and out == ref_out and "kernel launches" in err)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)

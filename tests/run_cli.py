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
# -d traces (VCODE.md §7): the classic line formats, on a tiny program.
tiny = os.path.join(HERE, "cli_trace.vcode.tmp")
with open(tiny, "w") as f:
    f.write("FUNC MAIN\nCONST INT 5\nCALL G\nRET\nFUNC G\nCONST INT (1 2)\nCOPY 1 0\nPOP 1 0\nRET\n")
want = {
    "program": "(0) vop = CONST; type = Int; val = 5; line = 2\n"
               "(1) vop = CALL; branch to 3; line = 3\n"
               "(2) vop = RET; ; line = 4\n"
               "(3) vop = CONST; type = Int; val = ( 1 2); line = 6\n"
               "(4) vop = COPY; args = 1, 0; line = 7\n"
               "(5) vop = POP; args = 1, 0; line = 8\n"
               "(6) vop = RET; ; line = 9\n",
    "command": "(2) vop = CONST; type = Int; val = 5; line = 2\n"
               "(3) vop = CALL; branch to 3; line = 3\n"
               "(6) vop = CONST; type = Int; val = ( 1 2); line = 6\n"
               "(7) vop = COPY; args = 1, 0; line = 7\n"
               "(8) vop = POP; args = 1, 0; line = 8\n"
               "(9) vop = RET; ; line = 9\n"
               "(4) vop = RET; ; line = 4\n",
    "stack": "\n1(Int) \n1(Int) \n1(Int) 2(Int) \n1(Int) 2(Int) 2(Int) \n1(Int) 2(Int) \n1(Int) 2(Int) \n",
    "runtime": "push: \t stack_count = 1, saved_pc = -1\n"
               "push: \t stack_count = 2, saved_pc = 2\n"
               "pop: \t stack_count = 1, new_pc = 2\n"
               "pop: \t stack_count = 0, new_pc = -1\n",
}
for word, text in want.items():
    rc, out, err = run("-d", word, tiny)
    check("-d %s format" % word, rc == 0 and err == text and out == "( 5 )\n( 1 2 )\n")
rc, out, err = run("-d", "values", tiny)
check("-d values: the stack line, a tab, then the dump", rc == 0 and err.startswith("\t\n1(Int) \t( 5 )\n"))
os.remove(tiny)

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)

#!/usr/bin/env python3
"""tests/run_cli.py INTERP — command-line behaviour that the golden
programs cannot express: --version, --help, -t, --profile (text and JSON,
with call counts checked), --progress off a terminal, --backend choices and
the fused backend's kernel profile. Ends with "N passed, N failed"."""
import json, os, re, subprocess, sys

from tally import check, finish

HERE = os.path.dirname(os.path.abspath(__file__))
interp = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "bin", "vinterp"))
fib = os.path.join(HERE, "demo", "fib.vcode")
# These tests are about the compiled code and its cache: every block is
# compiled before the run (--tier=eager) unless a test says otherwise.
os.environ["VINTERP_TIER"] = "eager"


def run(*args):
    p = subprocess.run([interp] + list(args), capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr




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
check("--help exits 0, on stdout, and lists --backend", rc == 0 and "--backend" in out and err == "")
help_text = out
# every option getopt takes is in --help, and so is every setting but the
# test ones; the -m default shown is the current one (as the classic's usage)
main_c = open(os.path.join(HERE, "..", "runtime", "main.c")).read()
long_names = re.findall(r'^    \{ "([a-z-]+)", (?:no|required|optional)_argument, LO_', main_c, re.M)
check("main.c's option table found (%d options)" % len(long_names), len(long_names) >= 15)
missing = [n for n in long_names if "--" + n not in help_text]
check("--help lists every long option", not missing, " ".join(missing))
for word in ["fusion", "stats", "tier"]:
    check("--help lists -d " + word, "-d " + word in help_text)
rc, out, err = run("-m", "5000", "--help")
check("--help shows the -m given before it as the default", rc == 0 and "(default 5000)" in out)
rc, settings_md, err = run("--settings")
names = re.findall(r"^\| `([A-Z_]+)` \|", settings_md, re.M)
check("--settings lists the settings (%d)" % len(names), rc == 0 and len(names) >= 40)
check("runtime/SETTINGS.md is vinterp --settings's output (regenerate it: bin/vinterp --settings > runtime/SETTINGS.md)",
      open(os.path.join(HERE, "..", "runtime", "SETTINGS.md")).read() == settings_md)
rows = dict(re.findall(r"^\| `([A-Z_]+)` \| [^|]* \| [^|]* \| (.*) \|$", settings_md, re.M))
shown = [n for n, doc in rows.items() if not doc.startswith("(tests)") and n.startswith("VINTERP_")]
check("--help lists every setting but the tests' ones", all(n + "=" in help_text for n in shown),
      " ".join(n for n in shown if n + "=" not in help_text))
# docs that cannot drift: every VINTERP_ variable a README or a test names
# is one vinterp reads (not vinterp's: VINTERP_DIR, nesl-lib's; VINTERP_FUZZ_FILES, the fuzz
# harness's; VINTERP_CORPUS, the test scripts'; VINTERP_VALUE_REGISTRY, a build macro)
named = set()
for root in ["README.md", "runtime", "translate", "kernels", "vcode", "tests", "nesl-lib", ".ci", "Makefile"]:
    path = os.path.join(HERE, "..", root)
    files = [path] if os.path.isfile(path) else [os.path.join(dp, f) for dp, _, fs in os.walk(path) for f in fs
                                                 if f.endswith((".md", ".py", ".sh", ".c", ".h", ".cu", ".cuh"))
                                                 or f in ("run", "Makefile")]
    for f in files:
        named |= set(re.findall(r"\b(VINTERP_[A-Z][A-Z0-9_]*[A-Z0-9])\b", open(f, errors="replace").read()))
unknown = sorted(n for n in named - set(names) - {"VINTERP_DIR", "VINTERP_FUZZ_FILES", "VINTERP_CORPUS", "VINTERP_VALUE_REGISTRY",
                                                   "VINTERP_SETTINGS", "VINTERP_VERSION"})
check("every VINTERP_ variable the docs and tests name is in the settings table", not unknown, " ".join(unknown))
# one voice: every message one line, "vinterp: ", naming the option and the value
one_line = [
    (["--backend=nonesuch", fib], "vinterp: --backend: 'nonesuch' is not one of auto, ref, lcu, cpu or cuda"),
    (["--bogus", fib], "vinterp: unknown option --bogus (vinterp --help lists them)"),
    (["-x", fib], "vinterp: unknown option -x (vinterp --help lists them)"),
    (["-d", "bogus", fib], "vinterp: -d: 'bogus' is not one of "),
    ([fib, fib], "vinterp: Please supply one file name, not 2"),
    ([], "vinterp: Please supply file name."),
    (["/"], "vinterp: Error reading input file /: Is a directory"),
    (["-l", "/nonexistent.so", fib], "vinterp: -l: '/nonexistent.so': No such file or directory"),
    (["--cache-dir=", fib], "vinterp: --cache-dir: '' is not a directory name"),
    (["--max-depth=0", fib], "vinterp: --max-depth: '0' is not a count of at least 1"),
    (["--tier=soon", fib], "vinterp: --tier: 'soon' is not one of background, sync, eager or off"),
    (["-m"], "vinterp: -m needs a value"),
    (["--backend"], "vinterp: --backend needs a value"),
]
for args, want in one_line:
    rc, out, err = run(*args)
    check("one line: vinterp %s" % " ".join(a.replace(HERE, "tests") for a in args),
          rc == 1 and out == "" and err.startswith(want) and err.count("\n") == 1, err)
bad_env = [
    ("VINTERP_TIER_SHARE", "0", "vinterp: VINTERP_TIER_SHARE: '0' is not a count from 1 to 100"),
    ("VINTERP_THREADS", "abc", "vinterp: VINTERP_THREADS: 'abc' is not a count from 1 to 256"),
    ("VINTERP_FLOAT_REASSOC", "yes", "vinterp: VINTERP_FLOAT_REASSOC: 'yes' is not 0 or 1"),
    ("VINTERP_TIER", "later", "vinterp: VINTERP_TIER: 'later' is not one of background, on, sync, eager or off"),
    ("VINTERP_CUDA_EMULATE_BLOCK", "3", "vinterp: VINTERP_CUDA_EMULATE_BLOCK: '3' is not a power of two from 1 to 256"),
    ("VINTERP_PAR_MIN", "-1", "vinterp: VINTERP_PAR_MIN: '-1' is not a count of at least 0"),
    ("VINTERP_TEST_TIER_START", "soon", "vinterp: VINTERP_TEST_TIER_START: 'soon' is not 'ready'"),
    ("VINTERP_NVRTC_THREADS", "0", "vinterp: VINTERP_NVRTC_THREADS: '0' is not a count from 1 to 1024"),
]
for var, val, want in bad_env:
    p = subprocess.run([interp, "--backend=ref", fib], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, **{var: val}))
    check("%s=%s is refused at start-up, in one line, under any backend" % (var, val),
          p.returncode == 1 and p.stdout == "" and p.stderr == want + "\n", p.stderr)
p = subprocess.run([interp, "--backend=ref", fib], capture_output=True, text=True, timeout=600,
                   env=dict(os.environ, VINTERP_TIER_SHARE=""))
check("a setting set to the empty string counts as not set", p.returncode == 0, p.stderr)
# -d stats opens with one summary line a user can read
for args, want in [(["--backend=ref"], r"the run [0-9.]+ s, all of it in the reference interpreter \(--backend=ref\)"),
                   (["--backend=lcu", "--tier=eager"], r"the run [0-9.]+ s, of which fused code [0-9.]+ s; "
                    r"translation [0-9.]+ s and compiles [0-9.]+ s before the blocks' first runs")]:
    rc, out, err = run(*(args + ["-d", "stats", fib]))
    first = [l for l in err.splitlines() if l.startswith("stats:")][:1]
    check("-d stats (%s) opens with the summary" % " ".join(args),
          rc == 0 and first and re.match(r"stats: summary: [0-9.]+ s in all: parse and check [0-9.]+ s; " + want + "$",
                                        first[0]) is not None, err[:600])
rc, out, err = run("--backend=cpu", "--tier=off", "--profile", fib)
check("--profile with every block interpreted says so (no empty kernel table)",
      rc == 0 and "profile: no fused kernel ran (every block interpreted)" in err and "by time" not in err, err[-600:])
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
# -d traces (vcode/SPEC.md §7): the classic line formats, on a tiny program.
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

# ---- REPLACE as a host step: in place only when the block owns the vector ------
loop = os.path.join(HERE, "golden", "replace_in_place_loop.vcode")
shared = os.path.join(HERE, "golden", "replace_shared_copies.vcode")
rc, out, err = run("--backend=lcu", "-d", "stats", loop)
check("REPLACE of a vector the block owns is done in place",
      rc == 0 and out == "( 5 )\n( 0 1 4 9 16 )\n" and "REPLACE host steps: 5 in place, 0 copied" in err)
rc, out, err = run("--backend=lcu", "-d", "stats", shared)
check("REPLACE of a vector still on the stack copies it",
      rc == 0 and out == "( 1 2 3 )\n( 1 99 3 )\n" and "REPLACE host steps: 0 in place, 1 copied" in err)
rc, out, err = run("--backend=lcu", "--check", "-d", "stats", loop)
check("under --check REPLACE copies (the reference reruns the block from its inputs)",
      rc == 0 and out == "( 5 )\n( 0 1 4 9 16 )\n" and "REPLACE host steps: 0 in place, 5 copied" in err)

# ---- lazy fills (runtime/core/value.h) -------------------------------------------
# golden/lazy_fill.vcode: 19 fills of 3000 elements (16 DISTs, 3 results of
# instructions over fills alone); 6 are read by instructions that are not
# elementwise (+_REDUCE twice, PERMUTE, EXTRACT, SELECT, +_SCAN), of which
# the reductions fold them without their copies (ops_scan.c lazy_reduce):
# 4 written out
lazy = os.path.join(HERE, "golden", "lazy_fill.vcode")
with open(os.path.join(HERE, "golden", "lazy_fill.expected")) as f:
    lazy_out = f.read()
rc, out, err = run("--backend=ref", "-d", "stats", lazy)
check("lazy fills: -d stats counts them and those written out",
      rc == 0 and out == lazy_out and "lazy fills: 19 made, 4 of them written out later" in err, err)
os.environ["VINTERP_LAZY"] = "0"
rc, out, err = run("--backend=ref", "-d", "stats", lazy)
check("VINTERP_LAZY=0: no lazy fill, the same answers",
      rc == 0 and out == lazy_out and "lazy fills: 0 made" in err, err)
del os.environ["VINTERP_LAZY"]
rc, out, err = run("--backend=lcu", "--check", "-d", "stats", lazy)
check("--check: no lazy fill (every value compared element by element)",
      rc == 0 and out == lazy_out and "lazy fills: 0 made" in err, err)
for bad in ("0", "x"):
    os.environ["VINTERP_LAZY_MIN"] = bad
    rc, out, err = run("--backend=ref", lazy)
    check("VINTERP_LAZY_MIN=%s is refused" % bad, rc == 1 and out == "" and "VINTERP_LAZY_MIN" in err, err)
del os.environ["VINTERP_LAZY_MIN"]

# ---- --float-reassoc (vcode/semantics.h VS_CHUNK) ---------------------------------
# tests/float_order/float_reassoc.vcode: its first sum is 2^53 left to right
# and 2^53 + 134464 by chunks of 65536
fr = os.path.join(HERE, "float_order", "float_reassoc.vcode")
with open(os.path.join(HERE, "float_order", "float_reassoc.expected")) as f:
    fr_chunked = f.read()
rc, out, err = run("--help")
check("--help lists --float-reassoc", rc == 0 and "--float-reassoc" in out)
rc, out, err = run("--backend=ref", fr)
check("without --float-reassoc: the left-to-right sum, 2^53",
      rc == 0 and out.splitlines()[0] == "( 9.00719925474099e+15 )", out)
rc, out, err = run("--backend=ref", "--float-reassoc", fr)
check("--float-reassoc: the sum by chunks", rc == 0 and out == fr_chunked, out)
for val, want in (("1", fr_chunked), ("0", None)):
    os.environ["VINTERP_FLOAT_REASSOC"] = val
    for be in ("ref", "cpu"):
        rc, out, err = run("--backend=" + be, fr)
        ok = rc == 0 and (out == want if want else out.splitlines()[0] == "( 9.00719925474099e+15 )")
        check("VINTERP_FLOAT_REASSOC=%s under %s" % (val, be), ok, out + err)
os.environ["VINTERP_FLOAT_REASSOC"] = "yes"
rc, out, err = run("--backend=ref", fr)
check("VINTERP_FLOAT_REASSOC=yes is refused", rc == 1 and out == "" and "VINTERP_FLOAT_REASSOC" in err, err)
del os.environ["VINTERP_FLOAT_REASSOC"]
# tests/float_order/float_sum_order.vcode: of its four long sums, one has
# only small integer terms (summed in parallel), three have not (2^53, 0.5,
# 0.1: the parallel sum is dropped for the left-to-right fold); the 0.1s
# are a lazy fill, folded without its copies and so not tried in parallel
# (ops_scan.c lazy_reduce) unless fills are off
fso = os.path.join(HERE, "float_order", "float_sum_order.vcode")
with open(os.path.join(HERE, "float_order", "float_sum_order.expected")) as f:
    fso_out = f.read()
for threads, lazy, want in (("2", "1", ": 1, 2 tried"), ("2", "0", ": 1, 3 tried"), ("1", "1", ": 0, 0 tried")):
    os.environ["VINTERP_THREADS"] = threads
    os.environ["VINTERP_LAZY"] = lazy
    rc, out, err = run("--backend=ref", "-d", "stats", fso)
    check("float sums in parallel when every term allows it, %s thread(s), VINTERP_LAZY=%s" % (threads, lazy),
          rc == 0 and out == fso_out and "interpreted float sums in parallel" in err and want in err, err)
del os.environ["VINTERP_THREADS"]
del os.environ["VINTERP_LAZY"]
rc, out, err = run("--backend=cpu", "--float-reassoc", "-d", "fusion", fr)
check("-d fusion marks the chunked reductions", rc == 0 and ") chunked" in err and "(fmax)" in err
      and "(fmax) chunked" not in err, err[-500:])

# ---- the compiled backends: the kernel cache, errors of choice ------------------
import shutil, tempfile
segsum = os.path.join(HERE, "demo", "segsum.vcode")
ref_seg = run("--backend=ref", segsum)[1]
have_cc = shutil.which(os.environ.get("VINTERP_CC") or "cc") is not None
if have_cc:
    cache = tempfile.mkdtemp(prefix="vinterp-cli-")
    try:
        rc, out, err = run("--backend=cpu", "--cache-dir=" + cache, "-d", "stats", segsum)
        check("cpu: first run compiles one unit", rc == 0 and out == ref_seg and "1 units compiled, 0 cache hits" in err)
        rc, out, err = run("--backend=cpu", "--cache-dir=" + cache, "-d", "stats", segsum)
        check("cpu: second run compiles nothing", rc == 0 and out == ref_seg and "0 units compiled, 1 cache hits" in err)
        sos = [f for f in os.listdir(cache) if f.endswith(".so")]
        srcs = [f for f in os.listdir(cache) if f.endswith(".c")]
        check("cpu: the cache holds the unit and its source", len(sos) == 1 and len(srcs) == 1)
        for f in sos:
            with open(os.path.join(cache, f), "wb") as fh:
                fh.write(b"not a shared object")
        rc, out, err = run("--backend=cpu", "--cache-dir=" + cache, "-d", "stats", segsum)
        check("cpu: a corrupt entry is rejected and recompiled",
              rc == 0 and out == ref_seg and "1 units compiled, 0 cache hits, 1 entries rejected" in err)
        rc, out, err = run("--backend=cpu", "--no-cache", "-d", "stats", segsum)
        check("cpu: --no-cache compiles without the cache", rc == 0 and out == ref_seg and "cache off" in err)
        rc, out, err = run("--backend=cpu", "--check", "--cache-dir=" + cache, "-d", "stats", segsum)
        check("cpu: --check compares every block", rc == 0 and out == ref_seg and "compared with the reference" in err)
        # a block's inputs that die in its one MAP: the result takes one's
        # storage (translate/plan.c input_donor_ok; its unit tests in
        # test_translate say where it must not)
        donor = os.path.join(HERE, "golden", "input_donor.vcode")
        with open(os.path.join(HERE, "golden", "input_donor.expected")) as f:
            donor_out = f.read()
        rc, out, err = run("--backend=cpu", "--tier=eager", "--cache-dir=" + cache, "-d", "stats", donor)
        check("cpu: a block input's storage taken by the block's MAP",
              rc == 0 and out == donor_out and "written over an argument: 1 of 1 offered" in err, out + err[-400:])
        rc, out, err = run("--backend=cpu", "--tier=eager", "--check", "--cache-dir=" + cache, "-d", "stats", donor)
        check("cpu: not under --check (it reruns blocks from their inputs)",
              rc == 0 and out == donor_out and "written over an argument: 0 of 0 offered" in err, out + err[-400:])
        rc, out, err = run("--backend=cpu", "-c", segsum)
        check("cpu: -c is refused with a reason", rc == 1 and "-c checks arguments" in err and out == "")
        have_cxx = shutil.which(os.environ.get("VINTERP_CXX") or "c++") is not None
        if have_cxx:
            env = dict(os.environ, VINTERP_CUDA_EMULATE="1", VINTERP_CUDA_HOST_MAX_ELEM="0",
                       VINTERP_CUDA_HOST_MAX_SCAN="0", VINTERP_CUDA_HOST_MAX_LIB="0")
            p = subprocess.run([interp, "--backend=cuda", "--check", "--cache-dir=" + cache, "-d", "stats", segsum],
                               capture_output=True, text=True, timeout=600, env=env)
            check("cuda (emulated device): same output, kernels on the device, bytes counted",
                  p.returncode == 0 and p.stdout == ref_seg and "2 runs on the device" in p.stderr
                  and "host to device" in p.stderr and "device launches" in p.stderr)
            # The variable tables of a block run's kernel steps go up once,
            # and once more only after a sync point (the host read something
            # back) or a host step (whose results the next steps bind; it
            # does not wait): programs whose blocks have several device steps, with
            # filters (bn_qs; bn_quickhull_run and bn_bh behave alike, left out
            # for CI's time: 12 s and 66 s on a cold cache) and host steps between. A
            # step that may be offered donated storage is prepared ahead with
            # the donor's storage in its table (exec_cuda.c speculate_donation):
            # no upload but the first of a block run and those after a sync
            # point or a host step (OTHERS: none; bn_qs had 9 before).
            corpus = os.path.join(HERE, "..", "..", "shared", "corpus")
            uploads_re = re.compile(r"variable table: (\d+) uploads.*\n.*variable table uploads: (\d+) first of a "
                                    r"block run, (\d+) after a sync point, (\d+) after a host step, (\d+) others; "
                                    r"(\d+) block runs on the device, (\d+) sync points in them")
            progs = [segsum] + [os.path.join(corpus, n + ".vcode")
                                for n in ("bn_black_scholes", "bn_qs")]
            for i, prog in enumerate(progs):
                if not os.path.exists(prog):
                    continue
                p = subprocess.run([interp, "--backend=cuda", "--tier=eager", "--check", "--cache-dir=" + cache,
                                    "-d", "stats", "-m", "100000000", prog],
                                   capture_output=True, text=True, timeout=600, env=env)
                m = uploads_re.search(p.stderr)
                up, first, synced, hosted, other, runs, syncs = (int(x) for x in m.groups()) if m else (0,) * 7
                check("cuda: %s: %d table uploads <= %d device block runs + %d sync points + %d after host steps "
                      "(%d others)" % (os.path.basename(prog), up, runs, syncs, hosted, other),
                      p.returncode == 0 and m is not None and runs > 0 and up <= runs + syncs + hosted
                      and up == first + synced + hosted + other and other == 0, p.stderr[-400:])
                if i == 2:
                    # --check offers no donations: none is expected ahead
                    check("cuda: bn_qs under --check: no result given a donor's storage ahead",
                          "donor's storage when prepared ahead: 0\n" in p.stderr, p.stderr[-400:])
                    p = subprocess.run([interp, "--backend=cuda", "--tier=eager", "--cache-dir=" + cache,
                                        "-d", "stats", "-m", "100000000", prog],
                                       capture_output=True, text=True, timeout=600, env=env)
                    m = uploads_re.search(p.stderr)
                    with open(prog[:-len(".vcode")] + ".expected") as f:
                        qs_out = f.read()
                    check("cuda: bn_qs: results given a donor's storage ahead, no upload but the first and "
                          "those after a sync point",
                          p.returncode == 0 and p.stdout == qs_out and m is not None and int(m.group(5)) == 0
                          and re.search(r"donor's storage when prepared ahead: [1-9]", p.stderr) is not None
                          and re.search(r"written over an argument: ([1-9]\d*) of \1 offered", p.stderr) is not None,
                          p.stderr[-400:])
            # a unit compiled in parts (cg_unit_split; the real device
            # compiles them in parallel): every SOAC a part of its own,
            # each module searched for its kernels' entry points; a fault
            # names the part's source
            p = subprocess.run([interp, "--backend=cuda", "--tier=eager", "--check", "--cache-dir=" + cache,
                                "-d", "stats", segsum], capture_output=True, text=True, timeout=600,
                               env=dict(env, VINTERP_CUDA_PART_BYTES="1"))
            m = re.search(r"compiled \((\d+) parts of at most 1 bytes of kernels\)", p.stderr)
            kd = re.search(r"(\d+) distinct", p.stderr)
            check("cuda: a unit in parts, one per SOAC: the same output under --check",
                  p.returncode == 0 and p.stdout == open(segsum[:-len(".vcode")] + ".expected").read()
                  and m is not None and kd is not None and int(m.group(1)) >= int(kd.group(1)) > 1, p.stderr[-600:])
            # the pointer check (VINTERP_CUDA_CHECK_PTRS=1): every pointer a
            # launch or a primitive receives is a device allocation of this
            # run; a host pointer planted in a launch's table is refused
            # (the emulated device's memory is host memory: without the
            # check it would be taken silently, as a GPU with the driver's
            # heterogeneous memory management reads it over the bus)
            p = subprocess.run([interp, "--backend=cuda", "--tier=eager", "--cache-dir=" + cache, segsum],
                               capture_output=True, text=True, timeout=600, env=dict(env, VINTERP_CUDA_CHECK_PTRS="1"))
            check("cuda: the pointer check passes a clean run",
                  p.returncode == 0 and p.stdout == open(segsum[:-len(".vcode")] + ".expected").read(), p.stderr)
            p = subprocess.run([interp, "--backend=cuda", "--tier=eager", "--cache-dir=" + cache, segsum],
                               capture_output=True, text=True, timeout=600,
                               env=dict(env, VINTERP_CUDA_CHECK_PTRS="1", VINTERP_TEST_CUDA_PLANT_HOST_PTR="1"))
            check("cuda: a host pointer planted in a launch's table is refused, naming the kernel and its block",
                  p.returncode == 1 and p.stdout == "" and len(p.stderr.strip().split("\n")) == 1
                  and "receives a pointer that is no device allocation of this run (V[" in p.stderr
                  and "of the block at lines" in p.stderr, p.stderr)
            p = subprocess.run([interp, "--backend=cuda", "--tier=eager", "--cache-dir=" + cache, segsum],
                               capture_output=True, text=True, timeout=600, env=dict(env, VINTERP_CUDA_CHECK_PTRS="yes"))
            check("cuda: VINTERP_CUDA_CHECK_PTRS=yes is refused", p.returncode == 1
                  and "VINTERP_CUDA_CHECK_PTRS: 'yes' is not 0 or 1" in p.stderr, p.stderr)
            # the instruments: the two lines scripts read, kernel time apart
            # from loads, allocations, copies and waits
            timed = os.path.join(HERE, "cli", "timed_work.vcode")
            p = subprocess.run([interp, "--backend=cuda", "--tier=eager", "--cache-dir=" + cache, "-d", "stats", timed],
                               capture_output=True, text=True, timeout=600, env=env)
            tr = re.search(r"^stats: timed region: (\d+) launches, (\d+) syncs, (\d+) bytes host to device, (\d+) bytes "
                           r"device to host, ([0-9.]+) s in kernels$", p.stderr, re.M)
            wr = re.search(r"^stats: whole run: (\d+) launches, (\d+) syncs, (\d+) bytes host to device, (\d+) bytes "
                           r"device to host, ([0-9.]+) s in kernels$", p.stderr, re.M)
            # (the region sums a vector made before it: a launch or more,
            # and no vector of 4000 bytes crosses to the device in it)
            check("cuda: -d stats: the timed region's and the whole run's launches, syncs, bytes and kernel seconds",
                  p.returncode == 0 and p.stdout == "( 500500 )\n" and tr is not None and wr is not None
                  and int(tr.group(1)) >= 1 and int(tr.group(3)) < 4000
                  and all(int(tr.group(i)) <= int(wr.group(i)) for i in (1, 2, 3, 4))
                  and float(tr.group(5)) <= float(wr.group(5))
                  and "stats: cuda: where the time went: kernels" in p.stderr, p.stderr[-1500:])
            # a sticky device fault (the emulated device's VINTERP_CUDA_EMULATE_FAULT=N:
            # the Nth launch returns, every later call fails, as on a GPU)
            fault = os.path.join(HERE, "cli", "fault_replay.vcode")
            for n, lines, parts in (("1", "6-9", "1"), ("2", "11-12", "1"), ("2", "11-12", None)):
                e2 = dict(env, VINTERP_CUDA_EMULATE_FAULT=n)
                if parts:
                    e2["VINTERP_CUDA_PART_BYTES"] = parts
                p = subprocess.run([interp, "--backend=cuda", "--tier=eager", "--cache-dir=" + cache, fault],
                                   capture_output=True, text=True, timeout=600, env=e2)
                first = p.stderr.split("\n")[0]
                check("cuda: a fault of launch %s names the kernel, its block's lines and its source%s"
                      % (n, ", the unit in parts" if parts else ""),
                      p.returncode == 1 and p.stdout == "" and "illegal memory access" in first
                      and ("the last kernel launched: vk_u%d_s0_" % (int(n) - 1)) in first
                      and ("of the block at lines %s (function MAIN), in " % lines) in first
                      and ".cpp" in first)
                replay = "the block's replay on the reference could not run" in p.stderr
                check("cuda: fault of launch %s: %s" % (n, "the replay's own failure follows the first error"
                                                        if n == "2" else "no replay failure"),
                      replay == (n == "2") and len(p.stderr.strip().split("\n")) == (2 if n == "2" else 1))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
env = dict(os.environ)
env.pop("VINTERP_CUDA_EMULATE", None)
p = subprocess.run([interp, "--backend=cuda", segsum], capture_output=True, text=True, timeout=600, env=env)
check("--backend=cuda without a usable device is a clear error",
      (p.returncode == 1 and p.stdout == "" and "--backend=cuda:" in p.stderr) or p.returncode == 0)
rc, out, err = run("--backend=ref", "--check", segsum)
check("--check with the reference backend is refused", rc == 1 and "--check" in err)

# STOP_TIMER: seconds and nanoseconds subtracted apart (a double of epoch
# seconds would make every value a multiple of 2^-22 s, about 238 ns).
timer = os.path.join(HERE, "cli", "timer_empty.vcode")
for be in ("ref", "lcu", "cpu"):
    rc, out, err = run("--backend=" + be, timer)
    vals = [float(x) for x in re.findall(r"\( (\S+) \)", err)]
    off_grid = [v for v in vals if v > 0 and abs(v * 2**22 - round(v * 2**22)) > 1e-6]
    check("%s: an empty timed region reads below 1e-6 s, not on a 2^-22 s grid" % be,
          rc == 0 and len(vals) == 20 and min(vals) >= 0 and min(vals) < 1e-6 and len(off_grid) > 0)

finish()

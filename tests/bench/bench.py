#!/usr/bin/env python3
"""Time vinterp's backends on the benchmark programs; write RESULTS.md and a chart.

Called by run_bench.sh; see there (or --help) for usage.  For every
NAME.vcode in the benchmark directory and every selected backend this runs

    bin/vinterp --backend=B -m 1000000000 NAME.vcode

once as a discarded warm-up and then N times (default 5); the backends take
turns run by run, so that a change in the machine's load falls on all of them
alike.  It records per run

  * whole-process wall seconds (time.perf_counter around the child),
  * peak resident memory of the child (GNU time's %M, or ru_maxrss from
    os.wait4 when /usr/bin/time is missing), and
  * whether stdout matches NAME.expected, ignoring the last line on both
    sides (it is the program's own timer value, which varies), and
  * that last line's value: the seconds of the program's timed region
    (NESL `time(...)`, START_TIMER/STOP_TIMER).

The whole-process and timed-region seconds are both reported as medians.

Fused backends (every backend but ref) get one more run with `-d stats`, from
which the kernel launches and the bytes copied between host and device are
read.  The backend "auto-cold" is `bin/vinterp` with no --backend (the default,
auto) and a fresh, empty kernel cache per run (VINTERP_CACHE_DIR=a new temporary
directory, removed after the run; VINTERP_BACKEND and VINTERP_NO_CACHE are
unset), so its time includes compiling the kernels.

With --classic PATH (alias --ref-interp) the classic interpreter, with the
classic command line `PATH -m 1000000000 NAME.vcode` (e.g. the CMU vinterp
built by tests/bench/build_classic.sh), is timed in the same run, taking its turn
with the backends run by run, as the pseudo-backend "classic"; every row then
gets the ratios of its whole-process and timed-region medians to the
classic's ("÷ classic", "timed ÷ classic").  A `# SUMMARY:` comment in a
build.sh beside PATH or one folder above it describes the build in the
results' header.  Without --classic the classic times are read from the table
in the benchmark directory's README.md (the column whose header mentions -O2).

For dotp_* and muladd_* the memory-bandwidth floor of their timed region is
measured with floor.c (beside this script; compiled with `cc -O2 -fopenmp`
into build/bench/floor): a plain OpenMP loop with 2 threads (--floor-threads)
over arrays of the program's size and element types, median of 5; the table
shows it as "floor s" and every row's "timed region ÷ floor".

The table goes to stdout and, with a header naming the machine, to
tests/bench/RESULTS.md; the speed-up of each backend over ref is drawn to
tests/bench/speedup.png with gnuplot when it is installed.
"""

import argparse
import datetime
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

MEMORY_ARG = "1000000000"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
DEFAULT_INTERP = os.path.join(ROOT, "bin", "vinterp")
DEFAULT_DIR = os.path.normpath(os.path.join(ROOT, "..", "shared", "bench"))

# The backends this script knows, in the order they are tried and reported.
# To add one, add a line: name -> (fused, device).  fused: it runs fused
# kernels and `-d stats` reports "kernel launches N"; device: it copies data
# between host and device memory (the "bytes host<->device" column).  A backend
# named with --backends that is not listed here is treated as fused, on the
# host.  A backend is "available" when `vinterp --backend=NAME --version`
# succeeds and a tiny program gives the right answer under it.
BACKENDS = {
    "ref": (False, False),
    "lcu": (True, False),
    "cpu": (True, False),
    "cuda": (True, True),
    "auto-cold": (True, False),
    "cpu-reassoc": (True, False),
    "cuda-eager": (True, True),
}
REF_INTERP = "classic"             # the pseudo-backend of --classic (alias --ref-interp)
COLD = "auto-cold"                 # the default backend with a fresh kernel cache per run
REASSOC = "cpu-reassoc"            # cpu with --float-reassoc (float sums by chunks)
EAGER_CUDA = "cuda-eager"          # cuda with the whole program's unit before the run (--tier=eager): with
                                   # --cache-dir holding its cubins (gpu_checklist.sh prepare), no compile at all
# The programs with a bandwidth floor: name prefix -> floor.c's KIND.
FLOOR_KINDS = (("dotp", "dotp"), ("muladd", "muladd"))
FLOOR_SRC = os.path.join(HERE, "floor.c")
FLOOR_BIN = os.path.join(ROOT, "build", "bench", "floor")
DASH = "\u2014"                    # em dash: "does not apply"

TINY_PROGRAM = "FUNC MAIN1_1\nCONST INT 2\nCONST INT 3\n+ INT\nRET\n"
TINY_OUTPUT = "( 5 )"


# --------------------------------------------------------------------------
# the machine

def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def command_output(cmd, cwd=None, env=None):
    """stdout of cmd stripped, or None if it cannot run or fails."""
    try:
        p = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, timeout=30, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout.decode("utf-8", "replace").strip() if p.returncode == 0 else None


def cpu_line():
    model = "unknown CPU"
    for line in read_text("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem = "unknown"
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", read_text("/proc/meminfo"), re.M)
    if m:
        mem = "%.1f GiB" % (int(m.group(1)) / 1024.0 / 1024.0)
    return "%s, %s, %d cores, %s memory" % (platform.machine(), model, os.cpu_count() or 0, mem)


def device_line():
    out = command_output(["nvidia-smi", "-L"]) if shutil.which("nvidia-smi") else None
    return "; ".join(out.splitlines()) if out else "none"


def commit_line():
    head = command_output(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT)
    if head is None:
        return "unknown (not a git checkout)"
    dirty = command_output(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT)
    return head + (" with uncommitted changes" if dirty else "")


def classic_build_line(path):
    """What the classic interpreter is: the `# SUMMARY:` lines of a build.sh next to it."""
    for d in (os.path.dirname(path), os.path.dirname(os.path.dirname(path))):
        script = os.path.join(d, "build.sh")
        summary = [l.split(":", 1)[1].strip() for l in read_text(script).splitlines()
                   if l.startswith("# SUMMARY:")]
        if summary:
            return "built by `%s`: %s" % (script, " ".join(summary))
    return "how it was built is unknown (no build.sh with a `# SUMMARY:` line next to it)"


def load_average():
    try:
        return "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "unknown"


# --------------------------------------------------------------------------
# the programs

def classic_times(readme):
    """Map program name -> classic -O2 seconds, from the README's table."""
    times = {}
    column = None
    for line in read_text(readme).splitlines():
        if not line.startswith("|"):
            column = None          # a table ended; look for the next header
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if column is None:
            column = -1            # header row: find the -O2 column
            for i, c in enumerate(cells):
                if "-O2" in c:
                    column = i
            continue
        if 0 <= column < len(cells):
            try:
                times[cells[0]] = float(cells[column])
            except ValueError:
                pass               # the |---| separator row, or junk
    return times


def problem_size(vcode):
    """The first CONST INT of the entry function (vcode/SPEC.md 2.5), or None.

    The entry function is FUNC MAIN if there is one, else the first FUNC's name
    (its last definition).  Comments run from { to the first }.
    """
    text = re.sub(r"\{[^}]*(\}|$)", " ", read_text(vcode))
    tokens = text.split()
    starts = {}                    # function name -> index of its last definition
    first = None
    for i in range(len(tokens) - 1):
        if tokens[i] == "FUNC":
            starts[tokens[i + 1]] = i + 2
            first = first or tokens[i + 1]
    entry = "MAIN" if "MAIN" in starts else first
    if entry is None:
        return None
    i = starts[entry]
    while i + 2 < len(tokens) and tokens[i] != "FUNC":
        if tokens[i] == "CONST" and tokens[i + 1] == "INT":
            try:
                return int(tokens[i + 2])
            except ValueError:
                return None
        i += 1
    return None


def timer_value(line):
    """The number in a final stdout line such as '( 1.23e+00 )', or None."""
    m = re.fullmatch(r"\(\s*(\S+)\s*\)", line.strip())
    try:
        return float(m.group(1)) if m else None
    except ValueError:
        return None


def check_output(stdout, expected):
    """None if stdout matches expected apart from the last line, else a reason."""
    got = stdout.splitlines()
    want = expected.splitlines()
    if not got:
        return "no output"
    if timer_value(got[-1]) is None:
        return "last line is not a timer value: %r" % got[-1][:60]
    if got[:-1] != want[:-1]:
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                return "line %d: got %r, expected %r" % (i + 1, g[:60], w[:60])
        return "got %d lines, expected %d" % (len(got), len(want))
    return None


# --------------------------------------------------------------------------
# running

TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


class Run:
    """One finished run of an interpreter."""
    def __init__(self, wall, rss_kib, rc, stdout, stderr, timed_out):
        self.wall, self.rss_kib, self.rc = wall, rss_kib, rc
        self.stdout, self.stderr, self.timed_out = stdout, stderr, timed_out


def run_once(cmd, timeout=None, env=None):
    """Run cmd (a list) once with stdin closed and return a Run.

    Peak RSS comes from GNU time's %M when /usr/bin/time exists.  Otherwise it
    is ru_maxrss from os.wait4, the usage of this one child; Linux carries the
    pre-exec high-water mark across exec, so that fallback reports at least
    the size of this Python process (about 15 MB), which only matters for
    tiny programs.  With a timeout the child is killed when it runs longer.
    """
    for attempt in range(60):      # the interpreter may be missing while it is rebuilt
        if os.access(cmd[0], os.X_OK):
            break
        if attempt == 0:
            print("run_bench: %s is missing or not executable; waiting up to a minute"
                  % cmd[0], file=sys.stderr, flush=True)
        time.sleep(1)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r") as rss_file:
        if TIME:
            cmd = [TIME, "-f", "%M", "-o", rss_file.name] + cmd
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=bool(timeout), env=env)
        killed = []
        timer = None
        if timeout:
            def kill():
                killed.append(True)
                try:
                    os.killpg(proc.pid, 9)     # the session holds time and vinterp
                except OSError:
                    pass
            timer = threading.Timer(timeout, kill)
            timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except KeyboardInterrupt:  # the child's own session missed the ^C
            if timeout:
                os.killpg(proc.pid, 9)
            raise
        wall = time.perf_counter() - start
        if timer:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)   # already reaped
        rss = usage.ru_maxrss
        if TIME:
            # GNU time writes "Command exited with non-zero status N" first
            # when the command fails; the number is on the last line.
            words = rss_file.read().split()
            rss = int(words[-1]) if words and words[-1].isdigit() else 0
        out.seek(0)
        err.seek(0)
        return Run(wall, rss, proc.returncode, out.read().decode("utf-8", "replace"),
                   err.read().decode("utf-8", "replace"), bool(killed))


def backend_cmd(interp, backend, classic):
    if backend == REF_INTERP:
        return [classic]
    if backend == COLD:
        return [interp]            # no --backend: the default (auto)
    if backend == REASSOC:
        return [interp, "--backend=cpu", "--float-reassoc"]
    if backend == EAGER_CUDA:
        return [interp, "--backend=cuda", "--tier=eager"]
    return [interp, "--backend=" + backend]


_warm_dir = None


def warm_env(args):
    """The environment of the warm fused backends: one kernel cache for the
    whole benchmark run (a new temporary directory, removed at exit)."""
    global _warm_dir
    if _warm_dir is None and getattr(args, "cache_dir", None):
        _warm_dir = os.path.abspath(args.cache_dir)   # the caller's, kept
    if _warm_dir is None:
        _warm_dir = tempfile.mkdtemp(prefix="vinterp-warm-cache-")
        import atexit
        atexit.register(shutil.rmtree, _warm_dir, True)
    env = dict(os.environ)
    env.pop("VINTERP_BACKEND", None)
    env.pop("VINTERP_NO_CACHE", None)
    env["VINTERP_CACHE_DIR"] = _warm_dir
    # no compiles after a run (VINTERP_TIER_AFTER): a detached one would run
    # beside the next timed run
    env["VINTERP_TIER_AFTER"] = "off"
    return env


class ColdCache:
    """A fresh, empty kernel-cache directory and the environment that uses it.

    `with ColdCache() as env:` gives os.environ without VINTERP_BACKEND and
    VINTERP_NO_CACHE, with VINTERP_CACHE_DIR set to a new temporary
    directory, which is removed on exit, and no compiles after the run.
    """
    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="vinterp-cold-cache-")
        env = dict(os.environ)
        env.pop("VINTERP_BACKEND", None)
        env.pop("VINTERP_NO_CACHE", None)
        env["VINTERP_CACHE_DIR"] = self.dir
        env["VINTERP_TIER_AFTER"] = "off"  # as in warm_env
        return env

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


def backend_available(interp, backend):
    """True if interp knows the backend and runs a tiny program under it."""
    cmd = backend_cmd(interp, backend, None)
    with ColdCache() as cold_env:
        env = cold_env if backend == COLD else None
        if command_output(cmd + ["--version"], env=env) is None:
            return False
        with tempfile.NamedTemporaryFile("w", suffix=".vcode") as f:
            f.write(TINY_PROGRAM)
            f.flush()
            out = command_output(cmd + [f.name], env=env)
    return out is not None and out.splitlines()[-1:] == [TINY_OUTPUT]


def failure(run, expected, name):
    """None if the run is good, else why not."""
    if run.timed_out:
        return "timed out after %.3g s" % run.wall
    if run.rc != 0:
        if run.rc < 0 or run.rc > 128:     # GNU time reports a signal as 128 + N
            why = "killed by signal %d" % (-run.rc if run.rc < 0 else run.rc - 128)
        else:
            why = "exit status %d" % run.rc
        lines = [l for l in run.stderr.strip().splitlines() if not l.startswith("Command exited")]
        return why + (": " + lines[-1][:80] if lines else "")
    if expected is None:
        return None
    return check_output(run.stdout, expected)


def parse_stats(stderr):
    """(kernel launches, bytes between host and device) from `-d stats`; None where absent.

    Kernel launches: "kernel launches N".  Bytes: every number that follows a
    phrase like "host->device", "device to host", "bytes host<->device" on a
    stats line (with or without the word "bytes" and a following unit), summed.
    """
    kernels = None
    moved = None
    for line in stderr.splitlines():
        if not line.startswith("stats:"):
            continue
        m = re.search(r"kernel launches\s+(\d+)", line)
        if m:
            kernels = (kernels or 0) + int(m.group(1))
        for m in re.finditer(r"(?:host|device)\s*(?:->|\u2192|<->|\u2194|to)\s*(?:host|device)"
                             r"\D{0,20}?(\d+)", line):
            moved = (moved or 0) + int(m.group(1))
    return kernels, moved


class Result:
    def __init__(self, program, backend):
        self.program, self.backend = program, backend
        self.walls = []
        self.timed = []            # the program's own timer (last stdout line), per good run
        self.rss_kib = 0
        self.problem = None        # first failure, or None
        self.checked = False       # an .expected file was compared
        self.kernels = None
        self.moved = None
        self.stats_run = False
        self.crashed = False       # a run failed or timed out: its time means little

    @property
    def median(self):
        return statistics.median(self.walls) if self.walls else None

    @property
    def timed_median(self):
        return statistics.median(self.timed) if self.timed else None


def bench_program(name, vcode, expected, backends, args, floor=None):
    """Warm-ups, timed runs and stats runs of one program; a Result per backend.

    FLOOR (a Floor or None): its loop runs once more in every round of the
    timed runs, taking its turn with the backends (floor_round).

    The backends take turns: every backend's warm-up, then run 1 of each, run
    2 of each, and so on, so that a change in the machine's load while the
    program is timed falls on all of them alike.  A backend whose run fails
    (exit status, signal, timeout) is not run again.  Fused backends then get
    one run with `-d stats`.
    """
    results = []
    for backend in backends:
        res = Result(name, backend)
        res.checked = expected is not None
        res.cmd = backend_cmd(args.interp, backend, args.classic)
        res.fused = backend != REF_INTERP and BACKENDS.get(backend, (True, False))[0]
        results.append(res)

    def one(res, label, extra=()):
        cmd = res.cmd + list(extra) + ["-m", MEMORY_ARG, vcode]
        if res.backend == COLD:
            with ColdCache() as env:
                r = run_once(cmd, args.timeout, env)
        elif res.fused:
            r = run_once(cmd, args.timeout, warm_env(args))
        else:
            r = run_once(cmd, args.timeout)
        why = failure(r, expected, name)
        res.problem = res.problem or why
        note = ""
        if extra:
            res.kernels, res.moved = parse_stats(r.stderr)
            res.stats_run = True
            note = "  kernel launches %s" % ("?" if res.kernels is None else res.kernels)
        r.timer = None
        if r.rc == 0 and not r.timed_out:
            lines = r.stdout.splitlines()
            r.timer = timer_value(lines[-1]) if lines else None
        if r.timer is not None and not extra:
            note += "  (timed region %.3f s)" % r.timer
        print("  %-*s %-10s %-8s %8.2f s%s%s" % (args.width, name, res.backend, label, r.wall,
              note, "" if why is None else "  FAILED: " + why), file=sys.stderr, flush=True)
        if r.rc != 0 or r.timed_out:
            res.crashed = True     # it will not get better; do not wait on it again
        return r

    # The warm columns (cpu, cuda): their cache is filled first by a run
    # under --tier=sync, which promotes by the same model as the default
    # and compiles each promoted block at once, into the same per-block
    # units: the timed runs then find every unit the tiers ask for (a
    # background warm-up compiles only its share before it ends).
    for res in results:
        if res.fused and res.backend in ("cpu", "cuda", REASSOC) and not res.crashed and args.warmup:
            one(res, "warm-up, --tier=sync", ["--tier=sync"])
    # Then the runs that settle the tiers' verdicts (runtime/fused/README.md,
    # the tiers, 5): a block that runs once a program run is judged across
    # runs, from two interpreted runs and four fused ones; the timed runs
    # are the steady state that a user who runs the program again sees.
    for i in range(args.settle if args.warmup else 0):
        for res in results:
            if res.fused and res.backend in ("cpu", "cuda", REASSOC) and not res.crashed:
                one(res, "warm-up %d/%d, settling the tiers' verdicts" % (i + 1, args.settle))
    for i in range(args.warmup):
        for res in results:
            if not res.crashed:
                one(res, "warm-up")
    for i in range(args.runs):
        if floor is not None:
            floor_round(floor, args, name)
        for res in results:
            if not res.crashed:
                r = one(res, "run %d/%d" % (i + 1, args.runs))
                res.walls.append(r.wall)
                if r.timer is not None:
                    res.timed.append(r.timer)
                res.rss_kib = max(res.rss_kib, r.rss_kib)
    for res in results:
        if res.fused and not res.crashed and args.stats:
            one(res, "-d stats", ["-d", "stats"])
    return results


# --------------------------------------------------------------------------
# the memory-bandwidth floor

def floor_kind(name):
    """floor.c's KIND for a program name (dotp_50m -> dotp), or None."""
    for prefix, kind in FLOOR_KINDS:
        if name == prefix or name.startswith(prefix + "_"):
            return kind
    return None


def build_floor():
    """Compile floor.c to build/bench/floor unless it is up to date; (path, None) or (None, why)."""
    if not os.path.isfile(FLOOR_SRC):
        return None, "%s is missing" % shown(FLOOR_SRC)
    if (os.access(FLOOR_BIN, os.X_OK)
            and os.path.getmtime(FLOOR_BIN) >= os.path.getmtime(FLOOR_SRC)):
        return FLOOR_BIN, None
    os.makedirs(os.path.dirname(FLOOR_BIN), exist_ok=True)
    cmd = ["cc", "-O2", "-fopenmp", FLOOR_SRC, "-o", FLOOR_BIN]
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        return None, "%s: %s" % (" ".join(cmd), e)
    if p.returncode != 0:
        return None, "%s failed: %s" % (" ".join(cmd),
                                       p.stdout.decode("utf-8", "replace").strip()[-200:])
    return FLOOR_BIN, None


class Floor:
    """floor.c's measurements for one program: seconds, bytes and GB/s per KIND line."""
    def __init__(self, kind, n, threads):
        self.kind, self.n, self.threads = kind, n, threads
        self.lines = {}            # "dotp" / "muladd" / "muladd-fresh" -> dict of fields
        self.problem = None
        self.exe = None
        self.samples = []          # the main line's seconds: the first run's, then floor_round's

    @property
    def seconds(self):
        line = self.lines.get(self.kind)
        return line["seconds"] if line else None


def floor_round(fl, args, name):
    """One more run of FL's loop (5 repetitions, their median), beside a round
    of the timed runs: the floor is the median of these and the first
    measurement, so that it is taken side by side with the rows it divides."""
    if fl.seconds is None or fl.exe is None:
        return
    r = run_once([fl.exe, fl.kind, str(fl.n), str(fl.threads), "5"], args.timeout)
    for line in r.stdout.splitlines():
        words = line.split()
        if len(words) >= 3 and words[0] == "floor" and words[1] == fl.kind:
            for w in words[2:]:
                k, _, v = w.partition("=")
                if k == "seconds":
                    try:
                        fl.samples.append(float(v))
                    except ValueError:
                        pass
    main_line = fl.lines[fl.kind]
    main_line["seconds"] = statistics.median(fl.samples)
    if main_line.get("bytes"):
        main_line["GB/s"] = main_line["bytes"] / main_line["seconds"] / 1e9
    print("  %-*s %-10s %s %.4f s (median of %d so far)" % (args.width, name, "floor", fl.kind,
          main_line["seconds"], len(fl.samples)), file=sys.stderr, flush=True)


def measure_floor(name, vcode, args):
    """Run floor.c's loop for program name (if it has one); a Floor or None."""
    kind = floor_kind(name)
    if kind is None or not args.floor:
        return None
    n = problem_size(vcode)
    fl = Floor(kind, n, args.floor_threads)
    if n is None:
        fl.problem = "no problem size found"
        return fl
    exe, why = build_floor()
    if exe is None:
        fl.problem = why
        print("run_bench: no floor: " + why, file=sys.stderr)
        return fl
    fl.exe = exe
    cmd = [exe, kind, str(n), str(args.floor_threads), "5"]
    r = run_once(cmd, args.timeout)
    if r.rc != 0 or r.timed_out:
        fl.problem = failure(r, None, name)
    for line in r.stdout.splitlines():
        words = line.split()
        if len(words) < 2 or words[0] != "floor":
            continue
        fields = {}
        for w in words[2:]:
            k, _, v = w.partition("=")
            try:
                fields[k] = float(v)
            except ValueError:
                pass
        if "seconds" in fields:
            fl.lines[words[1]] = fields
    if fl.seconds is None:
        fl.problem = fl.problem or "no `floor %s ... seconds=` line in its output" % kind
    else:
        fl.samples.append(fl.seconds)
    print("  %-*s %-10s %s" % (args.width, name, "floor", "; ".join(
          "%s %.4f s (%.1f GB/s)" % (k, v["seconds"], v.get("GB/s", 0)) for k, v in fl.lines.items())
          or "FAILED: %s" % fl.problem), file=sys.stderr, flush=True)
    return fl


# --------------------------------------------------------------------------
# reporting

def shown(path):
    """path relative to the current directory when it is below it, else absolute."""
    rel = os.path.relpath(os.path.abspath(path))
    return os.path.abspath(path) if rel.startswith("..") else rel


def fmt(x, digits=2):
    return DASH if x is None else "%.*f" % (digits, x)


def fmt_seconds(x):
    if x is None:
        return DASH
    if x < 0.1:
        return "%.4f" % x          # timed regions of a few ms
    return "%.3f" % x if x < 10 else "%.2f" % x


def fmt_ratio(x):
    if x is None:
        return DASH
    return "%.3f" % x if x < 0.1 else "%.2f" % x


def fmt_bytes(n):
    if n is None:
        return None
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return "%.1f %s" % (n / size, unit)
    return "%d B" % n


def ratio(a, b):
    """a / b for two Results' values, or None if either is missing."""
    return a / b if (a is not None and b) else None


def table(results, order, classic, args, floors=None):
    """Markdown table rows (a list of str)."""
    floors = floors or {}
    by = {(r.program, r.backend): r for r in results}
    have_floor = any(f is not None for f in floors.values())
    head = ["program", "size", "backend", "median s (of %d)" % args.runs,
            "timed region s", "speed-up vs ref"]
    align = ["---", "---:", "---", "---:", "---:", "---:"]
    if args.classic:
        head += ["\u00f7 classic", "timed \u00f7 classic"]
        align += ["---:", "---:"]
    head += ["kernels launched", "bytes host\u2194device", "peak RSS MB"]
    align += ["---:", "---:", "---:"]
    if args.classic:
        head += ["classic -O2 s (this run)", "classic timed s (this run)"]
    else:
        head += ["classic -O2 s (README)"]
    align += ["---:"] * (2 if args.classic else 1)
    if have_floor:
        head += ["floor s", "timed region \u00f7 floor"]
        align += ["---:", "---:"]
    head.append("output ok")
    align.append("---")
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(align) + " |"]
    for name, size in order:
        ref = by.get((name, "ref"))
        other = by.get((name, REF_INTERP))
        if other is not None and other.crashed:
            other = None           # a failed classic run compares with nothing
        fl = floors.get(name)
        for backend in args.backend_list + ([REF_INTERP] if args.classic else []):
            r = by.get((name, backend))
            if r is None:
                continue
            fused, device = BACKENDS.get(backend, (True, False))
            med = r.median
            tmed = r.timed_median
            speed = None
            if (ref is not None and ref.median and med and not ref.crashed
                    and not r.crashed):
                speed = ref.median / med
            if backend in ("ref", REF_INTERP) or not fused:
                kernels = DASH
            elif r.kernels is not None:
                kernels = str(r.kernels)
            else:
                kernels = "?" if r.stats_run else DASH
            moved = fmt_bytes(r.moved)
            if moved is None:
                moved = "?" if (device and r.stats_run) else DASH
            cells = [name, DASH if size is None else str(size), backend, fmt_seconds(med),
                     fmt_seconds(tmed), fmt_ratio(speed)]
            if args.classic:
                ok = other is not None and not r.crashed
                cells += [fmt_ratio(ratio(med, other.median) if ok else None),
                          fmt_ratio(ratio(tmed, other.timed_median) if ok else None)]
            cells += [kernels, moved, "%.0f" % (r.rss_kib / 1024.0) if r.rss_kib else DASH]
            if args.classic:
                cells += [fmt_seconds(other.median if other else None),
                          fmt_seconds(other.timed_median if other else None)]
            else:
                cells.append(fmt(classic.get(name)))
            if have_floor:
                fs = fl.seconds if fl is not None else None
                cells += [DASH if fs is None else "%.4f" % fs,
                          fmt_ratio(ratio(tmed, fs) if not r.crashed else None)]
            if r.problem is not None:
                cells.append("NO (%s)" % r.problem.replace("|", "\\|"))
            else:
                cells.append("yes" if r.checked else "not checked (no .expected)")
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def write_chart(results, order, args, title):
    """Draw speed-up vs ref per program and backend with gnuplot; return a message."""
    if not args.chart:
        return None
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        return ("no chart: gnuplot is not installed (apt-get install -y gnuplot-nox, "
                "or sh .ci/install-deps bench as root)")
    by = {(r.program, r.backend): r for r in results}
    series = [b for b in args.backend_list if b != "ref"] + ([REF_INTERP] if args.classic else [])
    if "ref" not in args.backend_list or not series:
        return "no chart: it needs the ref backend and at least one other backend or --classic"
    rows = []
    for name, _ in order:
        ref = by.get((name, "ref"))
        vals = []
        for b in series:
            r = by.get((name, b))
            ok = (ref is not None and r is not None and ref.median and r.median
                  and not ref.crashed and not r.crashed)
            vals.append("%.6g" % (ref.median / r.median) if ok else "NaN")
        rows.append(name + " " + " ".join(vals))
    # a backend that failed or timed out gets the word "failed" where its bar would be
    failed = []
    for k, row in enumerate(rows):
        for j, v in enumerate(row.split()[1:]):
            if v == "NaN":
                x = k - 0.5 + (0.5 + j + 0.5) / (len(series) + 1)
                failed.append('set label "failed" at %.4f, graph 0.02 left rotate by 90 offset 0.5,0 '
                              'font ",9" textcolor rgb "#cc0000"\n' % x)
    speeds = [float(v) for row in rows for v in row.split()[1:] if v != "NaN"]
    if not speeds:
        return "no chart: no backend produced a good output to compare"
    lo = min(speeds + [1.0]) * 0.9          # room below the shortest bar
    hi = max(speeds + [1.0]) * 1.1
    ymin = 10.0 ** math.floor(math.log10(lo))
    ymax = 10.0 ** math.ceil(math.log10(hi))
    out = os.path.abspath(args.chart)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "speedup.dat")
        with open(data, "w") as f:
            f.write("program " + " ".join(series) + "\n")
            f.write("\n".join(rows) + "\n")
        width = max(800, 130 * len(order) + 40 * len(order) * len(series))
        script = """
set terminal pngcairo size {w},560 font "sans,11" noenhanced
set output '{out}'
set title "{title}"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y
set yrange [{ymin}:{ymax}]
set ylabel "speed-up vs ref (ref median / backend median, log scale)"
set grid ytics
set key top right autotitle columnhead
set xtics rotate by -25 nomirror
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 dt 2 lc rgb "#444444"
set label "ref = 1" at graph 0.003, first 1.15 left textcolor rgb "#444444"
set xrange [-0.6:{nprog}-0.4]
{failed}n = {nser}
gap = 1
plot for [i=2:n+1] '{data}' using i:xtic(1) title columnheader(i), \
     for [i=2:n+1] '{data}' using ($0 - 0.5 + (gap / 2.0 + i - 1.5) / (n + gap)):(column(i)):\
         (sprintf(column(i) < 0.095 ? "%.3f" : "%.2f", column(i))) \
         with labels offset 0,0.7 font ",9" notitle
""".format(w=width, out=out.replace("'", "''"), title=title.replace('"', "'"),
           ymin=ymin, ymax=ymax, nprog=len(order), nser=len(series), data=data,
           failed="".join(failed))
        p = subprocess.run([gnuplot], input=script.encode(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        if p.returncode != 0:
            return "no chart: gnuplot failed: " + p.stdout.decode("utf-8", "replace").strip()[-300:]
    return "chart: " + shown(out)


# --------------------------------------------------------------------------

def parse_args():
    ap = argparse.ArgumentParser(
        prog="run_bench.sh",
        description="Time vinterp's backends on DIR/*.vcode (default %s) and write "
                    "tests/bench/RESULTS.md and tests/bench/speedup.png." % DEFAULT_DIR,
        epilog="The lcu backend is a tree-walking evaluator, 10-40x slower than ref on "
               "most programs and far slower on radix_10m: a full run of all backends at "
               "the benchmark sizes takes over an hour (use --backends ref, or --quick).")
    ap.add_argument("paths", nargs="*", metavar="DIR",
                    help="benchmark directory (an executable file here is taken as --interp, "
                         "for the old command line)")
    ap.add_argument("-n", dest="runs", type=int, default=5, metavar="N",
                    help="timed runs per program and backend (default 5); the median is reported")
    ap.add_argument("--quick", action="store_true",
                    help="only programs whose classic time is < 1 s, one run, no warm-up; "
                         "writes build/bench/RESULTS-quick.md and speedup-quick.png "
                         "unless -o / --chart say otherwise")
    ap.add_argument("--backends", metavar="LIST",
                    help="comma-separated backends (default: every available one of %s); "
                         "auto-cold is bin/vinterp with no --backend and a fresh empty "
                         "kernel cache (VINTERP_CACHE_DIR) per run" % ",".join(BACKENDS))
    ap.add_argument("--interp", default=DEFAULT_INTERP, metavar="PATH",
                    help="our interpreter (default: %(default)s)")
    ap.add_argument("--classic", "--ref-interp", dest="classic", metavar="PATH",
                    help="the classic interpreter (classic command line, e.g. the CMU vinterp "
                         "built by tests/bench/build_classic.sh), timed in the same run, interleaved "
                         "with the backends, as 'classic'; adds the columns 'classic -O2 s "
                         "(this run)', 'classic timed s (this run)', '\u00f7 classic' and "
                         "'timed \u00f7 classic' (--ref-interp is an old name of this option)")
    ap.add_argument("--no-floor", dest="floor", action="store_false",
                    help="skip the memory-bandwidth floor (floor.c) of dotp_* and muladd_*")
    ap.add_argument("--floor-threads", type=int, default=2, metavar="T",
                    help="OpenMP threads of the floor loop (default %(default)s)")
    ap.add_argument("--cache-dir", metavar="DIR",
                    help="the warm fused backends' kernel cache (default: a new temporary one); "
                         "gpu_checklist.sh gives the one its prepare step filled")
    ap.add_argument("--settle", type=int, default=6, metavar="K",
                    help="warm-up runs of the tiered warm columns (cpu, cuda, cpu-reassoc) that settle the "
                         "tiers' verdicts, after their --tier=sync run (default 6; none without warm-up)")
    ap.add_argument("--warmup", type=int, default=None, metavar="W",
                    help="discarded warm-up runs (default 1, 0 with --quick)")
    ap.add_argument("--timeout", type=float, default=None, metavar="S",
                    help="kill a run after S seconds; 0: no limit (default 900, 120 with "
                         "--quick; lcu needs about 20 min for radix_10m)")
    ap.add_argument("--no-stats", dest="stats", action="store_false",
                    help="skip the extra `-d stats` run of fused backends")
    ap.add_argument("-o", "--output", metavar="FILE",
                    help="results file (default tests/bench/RESULTS.md; '-' for stdout only)")
    ap.add_argument("--chart", metavar="PNG",
                    help="chart file (default tests/bench/speedup.png, none with -o -; '' for none)")
    ap.add_argument("--programs", metavar="LIST",
                    help="comma-separated program names to run (default: all in DIR)")
    ap.add_argument("--notes", metavar="FILE",
                    help="markdown appended to the results file after the table (default "
                         "tests/bench/NOTES.md when it exists; '' for none): what the table "
                         "cannot say, such as the GPU checklist's state")
    args = ap.parse_args()

    args.dir = DEFAULT_DIR
    for p in args.paths:
        if os.path.isdir(p):
            args.dir = p
        elif os.path.isfile(p) and os.access(p, os.X_OK):
            args.interp = p
        else:
            ap.error("%s is neither a directory nor an executable" % p)
    args.dir = os.path.abspath(args.dir)
    args.interp = os.path.abspath(args.interp)
    if args.quick:
        args.runs = 1
    if args.timeout is None:
        args.timeout = 120 if args.quick else 900
    if args.warmup is None:
        args.warmup = 0 if args.quick else 1
    if args.runs < 1 or args.warmup < 0:
        ap.error("-n must be at least 1 and --warmup at least 0")
    if args.floor_threads < 1:
        ap.error("--floor-threads must be at least 1")
    out_dir = os.path.join(ROOT, "build", "bench") if args.quick else HERE
    suffix = "-quick" if args.quick else ""
    if args.output is None:
        args.output = os.path.join(out_dir, "RESULTS%s.md" % suffix)
    if args.chart is None:     # no chart by default when the table only goes to stdout
        args.chart = "" if args.output == "-" else os.path.join(out_dir, "speedup%s.png" % suffix)
    return args


def main():
    args = parse_args()
    interp = args.interp
    if not os.access(interp, os.X_OK):
        sys.exit("run_bench: interpreter %s not found or not executable" % interp)
    if args.classic:
        args.classic = os.path.abspath(args.classic)
        if not os.access(args.classic, os.X_OK):
            sys.exit("run_bench: --classic %s not found or not executable" % args.classic)

    if args.backends:
        wanted = [b.strip() for b in args.backends.split(",") if b.strip()]
        missing = [b for b in wanted if not backend_available(interp, b)]
        if missing:
            sys.exit("run_bench: backend(s) not available in %s: %s"
                     % (interp, ", ".join(missing)))
        args.backend_list = wanted
    else:
        args.backend_list = [b for b in BACKENDS if backend_available(interp, b)]
        if not args.backend_list:
            sys.exit("run_bench: %s runs no backend (not even ref)" % interp)
    print("run_bench: backends %s%s" % (",".join(args.backend_list),
          " and classic " + args.classic if args.classic else ""), file=sys.stderr)
    if "lcu" in args.backend_list and not args.quick:
        print("run_bench: note: lcu is 10-40x slower than ref (radix_10m: ~1000x); this takes long "
              "(--backends ref to leave it out)", file=sys.stderr)

    classic = classic_times(os.path.join(args.dir, "README.md"))
    names = sorted(f[:-len(".vcode")] for f in os.listdir(args.dir) if f.endswith(".vcode"))
    if args.programs:
        pick = [p.strip() for p in args.programs.split(",") if p.strip()]
        unknown = [p for p in pick if p not in names]
        if unknown:
            sys.exit("run_bench: no such program in %s: %s" % (args.dir, ", ".join(unknown)))
        names = [p for p in names if p in pick]
    if args.quick:
        names = [p for p in names if classic.get(p, float("inf")) < 1.0]
    if not names:
        sys.exit("run_bench: nothing to run in %s" % args.dir)

    args.width = max(len(n) for n in names)
    started = datetime.datetime.now().astimezone()
    load_before = load_average()
    results = []
    order = []
    floors = {}
    for name in names:
        vcode = os.path.join(args.dir, name + ".vcode")
        order.append((name, problem_size(vcode)))
        try:
            with open(os.path.join(args.dir, name + ".expected")) as f:
                expected = f.read()
        except OSError:
            expected = None
        backends = args.backend_list + ([REF_INTERP] if args.classic else [])
        floors[name] = measure_floor(name, vcode, args)
        results += bench_program(name, vcode, expected, backends, args, floors[name])
    load_after = load_average()
    elapsed = (datetime.datetime.now().astimezone() - started).total_seconds()

    version = command_output([interp, "--version"]) or "?"
    header = [
        "# Benchmark results",
        "",
        "Written by `tests/bench/run_bench.sh` (%s); do not edit by hand." % " ".join(
            ["run_bench.sh"] + sys.argv[1:]),
        "",
        "* Machine: %s" % cpu_line(),
        "* Device: %s" % device_line(),
        "* Date: %s (the runs took %.0f s)" % (started.strftime("%Y-%m-%d %H:%M %Z"), elapsed),
        "* Commit: %s" % commit_line(),
        "* Load average (1, 5, 15 min): %s before, %s after" % (load_before, load_after),
        "* Interpreter: `%s` (%s), `-m %s`" % (os.path.relpath(interp, ROOT), version, MEMORY_ARG),
    ]
    if args.classic:
        header.append("* classic: `%s -m %s FILE`, timed in this run; %s"
                      % (args.classic, MEMORY_ARG, classic_build_line(args.classic)))
    if COLD in args.backend_list:
        header.append("* auto-cold: `%s -m %s FILE` with no `--backend` (the default, auto) and "
                      "a fresh empty kernel cache per run (`VINTERP_CACHE_DIR=$(mktemp -d)`, "
                      "removed afterwards), so kernel compilation is included"
                      % (os.path.relpath(interp, ROOT), MEMORY_ARG))
    if REASSOC in args.backend_list:
        header.append("* cpu-reassoc: `%s --backend=cpu --float-reassoc`, warm as cpu: float + and * "
                      "reductions of more than 65536 elements fold by chunks (opt-in; the last digits "
                      "may differ from the classic's, and \"output ok\" says where they do)"
                      % os.path.relpath(interp, ROOT))
    fl_done = [(n, f) for n, f in floors.items() if f is not None]
    if fl_done:
        parts = []
        for n, f in fl_done:
            if f.seconds is None:
                parts.append("%s: failed (%s)" % (n, f.problem))
                continue
            main_line = f.lines[f.kind]
            part = "%s: %s over n=%d, %.0f MB moved, %.4f s = %.1f GB/s" % (
                n, {"dotp": "sum of x[i]*y[i] (doubles)",
                    "muladd": "r[i] = a[i]*b[i] + c[i] (32-bit ints, r written)"}[f.kind],
                f.n, main_line.get("bytes", 0) / 1e6, main_line["seconds"],
                main_line.get("GB/s", 0))
            fresh = f.lines.get(f.kind + "-fresh")
            if fresh:
                part += " (%.4f s with r freshly allocated, page faults included)" % fresh["seconds"]
            parts.append(part)
        header.append("* Floor (`tests/bench/floor.c`, `cc -O2 -fopenmp`, %d OpenMP threads, arrays "
                      "touched beforehand; each run the median of 5 passes, run once before the program's "
                      "runs and once in every round of its timed runs, taking its turn with the backends; "
                      "the median of those): %s. \"timed region \u00f7 floor\" is a "
                      "row's timed-region median over this." % (args.floor_threads, "; ".join(parts)))
    header += [
        "* Programs: `%s` (size = the first `CONST INT` of the entry function)" % args.dir,
        "* Method: whole-process wall seconds, %d discarded warm-up run(s) (cpu/cuda/cpu-reassoc: one more "
        "before them, under `--tier=sync`, into a kernel cache kept for the whole benchmark run, so "
        "that their rows are the tiered default with every promoted block's unit in the cache, and %d more "
        "that settle the tiers' verdicts, kept beside the units: the steady state of a program run again), "
        "then the median "
        "of %d timed run(s), the backends taking turns run by run; peak RSS is the largest of the timed runs. Fused backends get "
        "one more run with `-d stats` for the kernel launches and host\u2194device bytes. "
        "Output is compared with NAME.expected apart from its last line (the program's "
        "own timer); \"timed region s\" is the median of that last line (the program's "
        "START_TIMER/STOP_TIMER seconds). %s"
        % (args.warmup, args.settle if args.warmup else 0, args.runs,
           "\"\u00f7 classic\" is the row's whole-process median over the classic's, "
           "\"timed \u00f7 classic\" the same for the timed region (below 1: faster than "
           "the classic)." if args.classic else
           "The classic -O2 column is copied from the programs' README.md (another machine)."),
        "",
    ]
    lines = table(results, order, classic, args, floors)
    title = "vinterp speed-up vs ref, %s, %s" % (started.strftime("%Y-%m-%d"),
                                                 cpu_line().split(",")[1].strip())
    chart_msg = write_chart(results, order, args, title)
    if chart_msg and chart_msg.startswith("chart:") and args.output != "-":
        rel = os.path.relpath(os.path.abspath(args.chart),
                              os.path.dirname(os.path.abspath(args.output)))
        lines += ["", "![speed-up vs ref](%s)" % rel]

    notes = args.notes if args.notes is not None else os.path.join(HERE, "NOTES.md")
    if notes and os.path.isfile(notes):
        with open(notes) as f:
            lines += ["", f.read().rstrip("\n")]
    print("\n".join(header[2:] + lines))
    if args.output != "-":
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        with open(args.output, "w") as f:
            f.write("\n".join(header + lines) + "\n")
        print("run_bench: wrote %s" % shown(args.output), file=sys.stderr)
    if chart_msg:
        print("run_bench: " + chart_msg, file=sys.stderr)
    return 1 if any(r.problem is not None for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())

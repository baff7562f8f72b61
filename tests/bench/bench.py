#!/usr/bin/env python3
"""Time vinterp on the benchmark programs and print a Markdown table.

Called by run_bench.sh; see there for usage.  For every NAME.vcode in the
benchmark directory this runs `INTERP -m 1000000000 NAME.vcode` N times and
records, per run:

  * whole-process wall seconds (time.perf_counter around the child),
  * peak resident memory of the child (GNU time's %M, or ru_maxrss from
    os.wait4 when /usr/bin/time is missing),
  * whether stdout matches NAME.expected, ignoring the last line on both
    sides (it is the program's own timer value, which varies), and
  * the timed-region seconds printed on that last line.

The classic interpreter's times are read from the table in the benchmark
directory's README.md (the column whose header mentions -O2).
"""

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

MEMORY_ARG = "1000000000"
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEFAULT_INTERP = os.path.join(ROOT, "bin", "vinterp")
DEFAULT_DIR = os.path.normpath(os.path.join(ROOT, "..", "shared", "bench"))


def machine_line():
    """One line naming the machine: architecture, CPU model, core count."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "Machine: %s, %s, %d cores" % (platform.machine(), model, os.cpu_count() or 0)


def classic_times(readme):
    """Map program name -> classic -O2 seconds, from the README's table."""
    times = {}
    try:
        with open(readme) as f:
            lines = f.read().splitlines()
    except OSError:
        return times
    column = None
    for line in lines:
        if not line.startswith("|"):
            column = None          # a table ended; look for the next header
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if column is None:
            # header row: find the -O2 column
            for i, c in enumerate(cells):
                if "-O2" in c:
                    column = i
            continue
        if column < len(cells):
            try:
                times[cells[0]] = float(cells[column])
            except ValueError:
                pass               # the |---| separator row, or junk
    return times


TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def run_once(interp, vcode):
    """Run the interpreter once; return (wall s, peak RSS KiB, rc, stdout, stderr).

    Peak RSS comes from GNU time's %M when /usr/bin/time exists.  Otherwise it
    is ru_maxrss from os.wait4, the usage of this one child; Linux carries the
    pre-exec high-water mark across exec, so that fallback reports at least
    the size of this Python process (about 15 MB), which only matters for
    tiny programs.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r") as rss_file:
        cmd = [interp, "-m", MEMORY_ARG, vcode]
        if TIME:
            cmd = [TIME, "-f", "%M", "-o", rss_file.name] + cmd
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)   # already reaped
        rss = usage.ru_maxrss
        if TIME:
            # GNU time writes "Command exited with non-zero status N" first
            # when the command fails; the number is on the last line.
            lines = rss_file.read().split()
            rss = int(lines[-1]) if lines and lines[-1].isdigit() else 0
        out.seek(0)
        err.seek(0)
        return (wall, rss, proc.returncode,
                out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"))


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


def fmt(x, digits=2):
    return "-" if x is None else "%.*f" % (digits, x)


def main():
    ap = argparse.ArgumentParser(description="Benchmark vinterp on DIR/*.vcode.")
    ap.add_argument("interp", nargs="?", default=DEFAULT_INTERP,
                    help="interpreter (default: %(default)s)")
    ap.add_argument("dir", nargs="?", default=DEFAULT_DIR,
                    help="benchmark directory (default: %(default)s)")
    ap.add_argument("-n", type=int, default=3, metavar="N", help="runs per program (default 3)")
    ap.add_argument("--quick", action="store_true",
                    help="only programs whose classic time is < 1 s, one run each")
    args = ap.parse_args()

    interp = os.path.abspath(args.interp)
    if not os.access(interp, os.X_OK):
        sys.exit("run_bench: interpreter %s not found or not executable" % interp)
    classic = classic_times(os.path.join(args.dir, "README.md"))
    names = sorted(f[:-len(".vcode")] for f in os.listdir(args.dir) if f.endswith(".vcode"))
    runs = args.n
    if args.quick:
        names = [p for p in names if classic.get(p, float("inf")) < 1.0]
        runs = 1
    if not names or runs < 1:
        sys.exit("run_bench: nothing to run in %s" % args.dir)

    rows = []
    failed = False
    for name in names:
        vcode = os.path.join(args.dir, name + ".vcode")
        try:
            with open(os.path.join(args.dir, name + ".expected")) as f:
                expected = f.read()
        except OSError:
            expected = None
        walls, rss, timers, problem = [], 0, [], None
        for i in range(runs):
            wall, kib, rc, out, err = run_once(interp, vcode)
            walls.append(wall)
            rss = max(rss, kib)
            if rc != 0:
                why = "exit status %d" % rc
                if err.strip():
                    why += ": " + err.strip().splitlines()[-1][:80]
            elif expected is None:
                why = "no %s.expected" % name
            else:
                why = check_output(out, expected)
                timers.append(timer_value(out.splitlines()[-1]) if why is None else None)
            problem = problem or why
            print("%s run %d/%d: %.2f s%s" % (name, i + 1, runs, wall,
                  "" if why is None else "  MISMATCH: " + why), file=sys.stderr)
        failed = failed or problem is not None
        timers = [t for t in timers if t is not None]
        med = statistics.median(walls)
        ref = classic.get(name)
        rows.append([name, fmt(med), fmt(min(walls)), "%.0f" % (rss / 1024.0),
                     fmt(statistics.median(timers), 3) if timers else "-",
                     fmt(ref), fmt(med / ref if ref else None),
                     "yes" if problem is None else "NO (%s)" % problem])

    print(machine_line())
    print("Interpreter: %s, %d run(s) each, -m %s" % (interp, runs, MEMORY_ARG))
    print()
    print("| program | median s (of %d) | min s | peak RSS MB | timed region s (median) "
          "| classic -O2 s | ratio ours/classic | output ok |" % runs)
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

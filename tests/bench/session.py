#!/usr/bin/env python3
"""Emulate an interactive NESL session: many small programs, one process each.

    python3 tests/bench/session.py [options] [NAME-or-PREFIX ...]

An interactive NESL session sends the interpreter one small VCODE program
per top-level expression, each a separate `vinterp` process.  This script
runs the small programs of the VCODE corpus (../shared/corpus, see its
run_corpus.py) one after another as such processes:

  1. selection: every corpus program (or those named) is run once under
     `--backend=ref`; those that take longer than --max-seconds (0.5 s) are
     left out.  This pass is not counted (it also warms the file cache);
  2. then, --reps times (default 3), interleaved:
       * the "ref" session:  `vinterp --backend=ref -m MEM NAME.vcode` for
         every selected program, in order;
       * the "auto" session: `vinterp -m MEM NAME.vcode` (no --backend: the
         default, auto; VINTERP_BACKEND and VINTERP_NO_CACHE unset) for every
         selected program, with ONE fresh, empty kernel cache directory
         (VINTERP_CACHE_DIR) for the whole session, removed afterwards: the
         first program that needs a kernel compiles it, later ones may reuse
         it, as in a real session that starts with an empty cache.

Each session's time is the sum of its processes' wall seconds.  The script
prints, per repetition and as medians, the totals of both sessions and the
ratio auto / ref (of the medians), the programs that cost auto the most over
ref, and the number of outputs that do not match the corpus's reference
(run_corpus.py's rules: stdout equals NAME.expected, where a program tagged
`timer` may differ in its last line; stderr equals NAME.stderr; exit status
0).  The programs run in a temporary copy of the corpus folder (they read
data/ and write *.tmp files there).  Exit status 1 if any output mismatched.
"""

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
DEFAULT_INTERP = os.path.join(ROOT, "bin", "vinterp")
DEFAULT_CORPUS = os.path.normpath(os.path.join(ROOT, "..", "shared", "corpus"))


def load_run_corpus(corpus):
    """The corpus's own run_corpus.py as a module (its tags and output comparison)."""
    path = os.path.join(corpus, "run_corpus.py")
    spec = importlib.util.spec_from_file_location("run_corpus", path)
    if spec is None or not os.path.isfile(path):
        sys.exit("session: %s not found" % path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read(path):
    try:
        with open(path, encoding="latin-1") as f:
            return f.read()
    except OSError:
        return ""


class Program:
    def __init__(self, name, tags, workdir):
        self.name, self.tags = name, tags
        self.expected = read(os.path.join(workdir, name + ".expected"))
        self.expected_err = read(os.path.join(workdir, name + ".stderr"))
        self.walls = {"ref": [], "auto": []}


def run_program(cmd, workdir, env, timeout):
    """(wall seconds, stdout, stderr, exit status or 'timeout') of one process.

    When the interpreter cannot be started (being rebuilt: missing, not yet
    executable, text file busy) this waits and tries again for up to a minute.
    """
    for attempt in range(60):
        if not os.access(cmd[0], os.X_OK) and attempt < 59:
            if attempt == 0:
                print("session: %s is missing or not executable; waiting" % cmd[0],
                      file=sys.stderr, flush=True)
            time.sleep(1)
            continue
        start = time.perf_counter()
        try:
            p = subprocess.run(cmd, cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=timeout)
            out, err, rc = p.stdout.decode("latin-1"), p.stderr.decode("latin-1"), p.returncode
        except subprocess.TimeoutExpired:
            out, err, rc = "", "", "timeout"
        except OSError as e:
            if attempt == 59:
                raise
            if attempt == 0:
                print("session: cannot start %s (%s); waiting" % (cmd[0], e.strerror),
                      file=sys.stderr, flush=True)
            time.sleep(1)
            continue
        return time.perf_counter() - start, out, err, rc


def mismatch(rc_mod, prog, out, err, rc, rel):
    """None if the run matches the corpus's reference, else what differs (run_corpus.py's rules)."""
    why = []
    if not rc_mod.same_output(out, prog.expected, rel, "timer" in prog.tags):
        why.append("stdout")
    if err != prog.expected_err and not ("timer" in prog.tags and "spawn" in prog.tags):
        why.append("stderr")
    if rc != 0:
        why.append("exit=%s" % rc)
    return ",".join(why) or None


def dir_size(path):
    files = size = 0
    for d, _, names in os.walk(path):
        for n in names:
            try:
                size += os.path.getsize(os.path.join(d, n))
                files += 1
            except OSError:
                pass
    return files, size


def parse_args():
    ap = argparse.ArgumentParser(
        description="Emulate an interactive NESL session: the small corpus programs one "
                    "after another as separate processes, all under --backend=ref, then all "
                    "under the default (auto) with one fresh kernel cache for the session; "
                    "repeated and interleaved; prints the totals and auto/ref.")
    ap.add_argument("names", nargs="*", metavar="NAME",
                    help="corpus programs or name prefixes (default: all in the corpus)")
    ap.add_argument("--interp", default=DEFAULT_INTERP, metavar="PATH",
                    help="the interpreter (default: %(default)s)")
    ap.add_argument("--corpus", default=DEFAULT_CORPUS, metavar="DIR",
                    help="the VCODE corpus with run_corpus.py (default: %(default)s)")
    ap.add_argument("--reps", type=int, default=3, metavar="R",
                    help="repetitions of the ref and auto sessions, interleaved (default 3); "
                         "the medians are reported")
    ap.add_argument("--max-seconds", type=float, default=0.5, metavar="S",
                    help="leave out programs that take longer than S under ref in the "
                         "selection pass (default 0.5; 0: keep all)")
    ap.add_argument("--no-select", dest="select", action="store_false",
                    help="skip the selection pass (keep every named program)")
    ap.add_argument("-m", dest="mem", default="200000000", metavar="MEM",
                    help="the -m argument (default %(default)s, as run_corpus.py)")
    ap.add_argument("--timeout", type=float, default=120, metavar="S",
                    help="per-process limit in seconds (default %(default)s)")
    ap.add_argument("--float-rel", type=float, default=0.0, metavar="TOL",
                    help="relative float tolerance of the output check (default 0: exact, "
                         "as run_corpus.py)")
    ap.add_argument("--top", type=int, default=10, metavar="K",
                    help="list the K programs that cost auto the most over ref (default 10)")
    args = ap.parse_args()
    if args.reps < 1:
        ap.error("--reps must be at least 1")
    args.interp = os.path.abspath(args.interp)
    args.corpus = os.path.abspath(args.corpus)
    return args


def main():
    args = parse_args()
    if not os.access(args.interp, os.X_OK):
        sys.exit("session: interpreter %s not found or not executable" % args.interp)
    rc_mod = load_run_corpus(args.corpus)
    tags = rc_mod.load_tags()
    names = sorted(tags)
    if args.names:
        names = [n for n in names if any(n == w or n.startswith(w) for w in args.names)]
    if not names:
        sys.exit("session: no corpus program matches %s" % " ".join(args.names))

    base_env = dict(os.environ)
    base_env.pop("VINTERP_BACKEND", None)
    base_env.pop("VINTERP_NO_CACHE", None)
    ref_cmd = [args.interp, "--backend=ref", "-m", args.mem]
    auto_cmd = [args.interp, "-m", args.mem]

    tmp = tempfile.mkdtemp(prefix="vinterp-session-")
    try:
        workdir = os.path.join(tmp, "corpus")
        shutil.copytree(args.corpus, workdir,
                        ignore=shutil.ignore_patterns("*.tmp", "__pycache__"))
        progs = [Program(n, tags[n], workdir) for n in names]

        # 1. selection (not counted)
        if args.select:
            kept, dropped = [], []
            for p in progs:
                wall, _, _, _ = run_program(ref_cmd + [p.name + ".vcode"], workdir, None,
                                            args.timeout)
                if args.max_seconds > 0 and wall > args.max_seconds:
                    dropped.append("%s (%.2f s)" % (p.name, wall))
                else:
                    kept.append(p)
            progs = kept
            print("session: %d programs selected (under %.2g s under ref), %d left out%s"
                  % (len(progs), args.max_seconds, len(dropped),
                     (": " + ", ".join(dropped)) if dropped else ""), file=sys.stderr)
        if not progs:
            sys.exit("session: no program left to run")

        # 2. the sessions, interleaved
        totals = {"ref": [], "auto": []}
        cache = []                 # (files, bytes) of each auto session's cache at its end
        bad = {"ref": {}, "auto": {}}   # name -> set of reasons
        nbad = {"ref": 0, "auto": 0}
        for rep in range(args.reps):
            for kind in ("ref", "auto"):
                cache_dir = None
                env = None
                cmd = ref_cmd
                if kind == "auto":
                    cache_dir = tempfile.mkdtemp(prefix="cache-", dir=tmp)
                    env = dict(base_env, VINTERP_CACHE_DIR=cache_dir)
                    cmd = auto_cmd
                total = 0.0
                for p in progs:
                    wall, out, err, rc = run_program(cmd + [p.name + ".vcode"], workdir, env,
                                                     args.timeout)
                    total += wall
                    p.walls[kind].append(wall)
                    why = mismatch(rc_mod, p, out, err, rc, args.float_rel)
                    if why:
                        nbad[kind] += 1
                        bad[kind].setdefault(p.name, set()).add(why)
                totals[kind].append(total)
                note = ""
                if cache_dir:
                    files, size = dir_size(cache_dir)
                    cache.append((files, size))
                    note = ", cache at the end: %d files, %.1f MB" % (files, size / 1e6)
                    shutil.rmtree(cache_dir, ignore_errors=True)
                print("session: rep %d/%d %-4s %7.2f s for %d programs%s" % (
                      rep + 1, args.reps, kind, total, len(progs), note), file=sys.stderr,
                      flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # 3. report
    med = {k: statistics.median(v) for k, v in totals.items()}
    print("Session of %d corpus programs, one process each (%s), %d repetitions, interleaved"
          % (len(progs), args.interp, args.reps))
    print("%-6s %s  %s" % ("", "  ".join("rep %-5d" % (i + 1) for i in range(args.reps)),
                           "median"))
    for kind in ("ref", "auto"):
        print("%-6s %s  %6.2f s" % (kind, "  ".join("%7.2f s" % t for t in totals[kind]),
                                    med[kind]))
    ratio = med["auto"] / med["ref"] if med["ref"] else float("nan")
    print("auto / ref (medians): %.2f" % ratio)
    print("per program (medians): ref %.1f ms, auto %.1f ms"
          % (1000 * med["ref"] / len(progs), 1000 * med["auto"] / len(progs)))
    if cache:
        print("auto's kernel cache at the end of a session: %d files, %.1f MB (median)"
              % (statistics.median(c[0] for c in cache),
                 statistics.median(c[1] for c in cache) / 1e6))
    diffs = sorted(((statistics.median(p.walls["auto"]) - statistics.median(p.walls["ref"]), p)
                    for p in progs), key=lambda d: -d[0])
    if args.top > 0:
        print("most costly under auto (median auto - median ref):")
        for d, p in diffs[:args.top]:
            print("  %-28s %+8.1f ms  (ref %.1f ms, auto %.1f ms)"
                  % (p.name, 1000 * d, 1000 * statistics.median(p.walls["ref"]),
                     1000 * statistics.median(p.walls["auto"])))
    for kind in ("ref", "auto"):
        print("mismatches under %s: %d of %d runs%s" % (
              kind, nbad[kind], len(progs) * args.reps,
              "" if not bad[kind] else ": " + ", ".join(
                  "%s (%s)" % (n, "/".join(sorted(w))) for n, w in sorted(bad[kind].items()))))
    return 1 if nbad["ref"] or nbad["auto"] else 0


if __name__ == "__main__":
    sys.exit(main())

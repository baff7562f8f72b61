#!/usr/bin/env python3
"""tests/check_docs.py INTERP — the docs cannot drift from the code: every
file a Markdown page of the repository names (a link, or a `name.c`-like
word in backquotes) exists (a bare name: some file of the repository has
it), every vinterp option the user-facing pages name is one `vinterp
--help` lists, and the top README stays within 160 lines. (The settings:
tests/run_cli.py.) Ends with "N passed, N failed"."""
import os, re, subprocess, sys

from tally import check, finish

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
interp = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "bin", "vinterp"))

files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
if not files:  # not a git checkout: walk the tree
    files = [os.path.relpath(os.path.join(dp, f), ROOT) for dp, dns, fs in os.walk(ROOT)
             for f in fs if "/build" not in dp and "/.git" not in dp]
known = set(files)
dirs = {os.path.dirname(f) + "/" for f in files} | {d.rsplit("/", 2)[0] + "/" for d in files if d.count("/") > 1}
suffixes = set()
for f in files:
    parts = f.split("/")
    for i in range(len(parts)):
        suffixes.add("/".join(parts[i:]))
# what the tools write (not in the repository): the checklist's summary, the quick bench table
GENERATED = {"SUMMARY.md", "RESULTS-quick.md"}
# options of other programs that the pages name (NVRTC's, the test and bench scripts')
FOREIGN = {"--fmad", "--float-rel", "--backends", "--classic", "--reps", "--settle", "--bandwidth", "--timeout",
           "--arg", "--quiet", "--cache-dir-bench"}

help_text = subprocess.run([interp, "--help"], capture_output=True, text=True).stdout
check("vinterp --help runs", "--backend" in help_text)

pages = [f for f in files if f.endswith(".md")]
for page in pages:
    text = open(os.path.join(ROOT, page), errors="replace").read()
    here = os.path.dirname(page)
    names = set(re.findall(r"\]\(([^)#\s]+)", text))
    names |= {c for c in re.findall(r"`([A-Za-z0-9_./-]+)`", text)
              if re.search(r"\.(c|h|cu|cuh|md|py|sh|mk)$", c) or (c.endswith("/") and "/" in c[:-1])}
    missing = []
    for n in sorted(names):
        if n.startswith(("http", "../shared", "~", "/", "build/", "build-")) or "*" in n or re.match(r"[A-Z_]+[./]", n):
            continue
        if os.path.basename(n.rstrip("/")) in GENERATED:
            continue
        rel = os.path.normpath(os.path.join(here, n)) if here else os.path.normpath(n)
        target = n.rstrip("/")
        if (rel in known or rel + "/" in dirs or n in known or n in dirs or target in suffixes
                or os.path.exists(os.path.join(ROOT, rel))):
            continue
        missing.append(n)
    check("%s: every file it names exists" % page, not missing, " ".join(missing))
    opts = set(re.findall(r"`[^`\n]*?(--[a-z][a-z-]+)", text)) - FOREIGN
    unknown = sorted(o for o in opts if o not in help_text)
    if page.startswith(("README.md", "runtime/", "vcode/", "nesl-lib/", "kernels/", "translate/")):
        check("%s: every vinterp option it names is in --help" % page, not unknown, " ".join(unknown))

n = len(open(os.path.join(ROOT, "README.md")).read().splitlines())
check("README.md is at most 160 lines (%d)" % n, n <= 160)
finish()

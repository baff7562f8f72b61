#!/usr/bin/env python3
"""tests/run_tiers.py INTERP — the tiers (runtime/fused/tier.h): options and their
errors, the cost model's promotion point, per-block units and the cache,
the dispatch rule, a compile abandoned at the end leaving nothing behind,
the pacer stopping a compile for the share, --no-cache's private
directory, the compiles after the run (VINTERP_TIER_AFTER), and
deterministic plans (the same cache keys on an idle and on a loaded
machine). Ends with "N passed, N failed".

Every check decides by events, never by the clock, so that it gives the
same answer on a busy machine. The background tiers' checks make the run
wait for the worker at two points (tier.h, TierGate):
VINTERP_TEST_TIER_START=ready starts the program once the worker has the
inlined program ready, VINTERP_TEST_TIER_END=compiling|stopped|done ends it
once a compile runs, once the pacer has stopped one, or once every job is
done; the compilers that must still run at the end are stand-ins that
block until the test removes a file. The worker runs at nice 10 here
(VINTERP_TIER_IDLE=0): under SCHED_IDLE, with every CPU busy, it may wait
minutes for one. The compiles after the run are off (VINTERP_TIER_AFTER=
off) but in their own checks: a detached one would change what a later
run finds in the cache at a moment no test controls; where a check runs
one detached, it holds it on a gate file until the test lets it go. How the share and the pacer do on a real machine is a
measurement: tests/bench/tier_share.py."""
import os, re, shutil, subprocess, sys, tempfile, time

from tally import check, finish

HERE = os.path.dirname(os.path.abspath(__file__))
interp = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "bin", "vinterp"))
loop = os.path.join(HERE, "tier", "loop.vcode")
corpus = os.path.join(HERE, "..", "..", "shared", "corpus")
base_env = {k: v for k, v in os.environ.items() if not k.startswith("VINTERP_")}
base_env["VINTERP_TIER_AFTER"] = "off"


# the background tiers, decided by events (see above)
GATED = {"VINTERP_TEST_TIER_START": "ready", "VINTERP_TIER_IDLE": "0"}


def run(*args, env=None, timeout=600, keep_slow=False, inp=None):
    """Run the interpreter. The checks here expect hot blocks promoted and
    translated; a block an earlier run's timing found slower fused would be
    left untranslated (DIR/PROGRAM.CONFIG.slow), so the sets of such blocks
    are forgotten first, unless KEEP_SLOW (the checks of that set). TIMEOUT
    is a guard against a hang, not a measurement."""
    e = dict(base_env)
    e.update(env or {})
    for a in args:
        if not keep_slow and a.startswith("--cache-dir="):
            d = a[len("--cache-dir="):]
            for f in os.listdir(d) if os.path.isdir(d) else []:
                if f.endswith(".slow"):
                    os.unlink(os.path.join(d, f))
    p = subprocess.run([interp] + list(args), capture_output=True, text=True, timeout=timeout, env=e, input=inp)
    return p.returncode, p.stdout, p.stderr, None


def blocking_cc(path, flag):
    """A compiler stand-in that waits, without using a CPU, while FLAG
    exists, then runs cc: the test decides when (or whether) it ends."""
    with open(path, "w") as f:
        f.write("#!/bin/sh\nwhile [ -e '%s' ]; do sleep 0.05; done\nexec cc \"$@\"\n" % flag)
    os.chmod(path, 0o755)
    open(flag, "w").close()




def stat(err, pattern):
    m = re.search(pattern, err)
    return m.group(1) if m else None


# ---- options ------------------------------------------------------------------
rc, out, err, _ = run("--tier=fast", loop)
check("--tier=fast is refused, naming the option", rc == 1 and "--tier: 'fast' is not" in err and out == "")
rc, out, err, _ = run("--tier-work=12x", loop)
check("--tier-work=12x is refused", rc == 1 and "--tier-work: '12x' is not a count" in err)
rc, out, err, _ = run("--tier-min-len=-3", loop)
check("--tier-min-len=-3 is refused", rc == 1 and "--tier-min-len: '-3' is not a count" in err)
rc, out, err, _ = run("--backend=cpu", loop, env={"VINTERP_TIER": "later"})
check("VINTERP_TIER=later is refused", rc == 1 and "VINTERP_TIER: 'later' is not one of" in err)

ref = run("--backend=ref", loop)[1]
check("the loop program's answer", ref == "( 6020000 )\n", ref)

if shutil.which("cc") is None:
    print("no C compiler: the compiled tiers are not tested")
    finish()

cache = tempfile.mkdtemp(prefix="vinterp-tiers-")
try:
    c = "--cache-dir=" + cache
    # ---- the default: background tiers ----------------------------------------
    rc, out, err, _ = run("--backend=cpu", c, loop)
    check("background (the default): the same answer", rc == 0 and out == ref, err)
    rc, out, err, _ = run(c, loop)
    check("auto: the same answer", rc == 0 and out == ref, err)

    # ---- the cost model, on the main thread (sync: deterministic) -------------
    # LOOP's block has 4 vector instructions over 20000 elements: 80000 work a
    # run; at 20000000 it is promoted at its 250th entry.
    rc, out, err, _ = run("--backend=cpu", "--tier=sync", c, "-d", "stats", "-d", "tier", loop)
    check("sync: promoted at the 250th entry (work 250 x 4 x 20000)",
          rc == 0 and out == ref and "promoted at entry 250 " in err, err)
    # how many runs stay fused depends on timing (a block whose fused runs
    # are the slower is demoted), so only that some ran fused:
    m = re.search(r"LOOP\): (?:fused|demoted); \d+ entries \(0 short\), \d+ elements, (\d+) fused runs", err)
    check("sync: the block's code installed and run fused (or demoted by earlier runs' speeds)",
          "1 promoted, 1 installed" in err and m is not None
          and (int(m.group(1)) >= 1 or "slower in earlier runs" in err), err)
    check("-d tier traces the promotion", "fused code installed after 250 entries" in err, err)
    rc, out, err, _ = run("--backend=cpu", "--tier=sync", c, "-d", "stats", loop)
    check("sync, second run: the block's unit comes from the cache",
          rc == 0 and out == ref and "0 units compiled, 1 cache hits" in err, err)
    rc, out, err, _ = run("--backend=cpu", "--tier=sync", "--tier-work=0", c, "-d", "stats", loop)
    check("--tier-work=0: every block promoted at its first long run",
          rc == 0 and out == ref and "promoted at entry 1 " in err and "2 promoted, 2 installed" in err, err)
    rc, out, err, _ = run("--backend=cpu", "--tier=sync", "--tier-work=0", "--tier-min-len=20001", c, "-d", "stats",
                          loop)
    check("dispatch rule: runs shorter than --tier-min-len stay interpreted",
          rc == 0 and out == ref and "0 promoted" in err and "(300 short)" in err, err)
    rc, out, err, _ = run("--backend=cpu", "--tier=off", c, "-d", "stats", loop)
    check("--tier=off: nothing promoted", rc == 0 and out == ref and "0 promoted" in err, err)
    rc, out, err, _ = run("--backend=cpu", "--tier=eager", c, "-d", "stats", loop)
    check("--tier=eager: one unit of every block before the run",
          rc == 0 and out == ref and "1 units of" in err and "stats: tiers" not in err, err)

    # ---- cuda on the emulated device: per-block units, built then loaded -----
    if shutil.which("c++"):
        emu = {"VINTERP_CUDA_EMULATE": "1"}
        rc, out, err, _ = run("--backend=cuda", "--tier=sync", "--tier-work=0", "--tier-min-len=0", c, "-d", "stats", loop, env=emu,
                              timeout=300)
        check("cuda (emulated), tiered: blocks built and loaded one by one, every kernel on the device",
              rc == 0 and out == ref and "4 promoted, 4 installed" in err and "4 units of" in err
              and re.search(r"elementwise kernels: [1-9]\d* runs on the device, 0 on the host", err) is not None, err)
        rc, out, err, _ = run("--backend=cuda", "--tier=sync", "--tier-work=0", "--tier-min-len=0", c, "-d", "stats", loop, env=emu)
        check("cuda (emulated), tiered, second run: both units from the cache",
              rc == 0 and out == ref and "0 units compiled, 4 cache hits" in err, err)

        # ---- staged compiles (VINTERP_NVRTC_OPT=staged, a GPU's default): the
        # quick code first (the emulated device: C++ at -O0), the full code
        # compiled by the worker and swapped in at the block's next entry
        # (VINTERP_TEST_TIER_REFINE=wait: that entry waits for it, so the
        # swap is an event, not a race with the clock)
        scache = tempfile.mkdtemp(prefix="vinterp-staged-")
        sc = "--cache-dir=" + scache
        senv = dict(emu, VINTERP_NVRTC_OPT="staged", VINTERP_TEST_TIER_REFINE="wait", VINTERP_TIER_SHARE="100",
                    VINTERP_TIER_IDLE="0")
        rc, out, err, _ = run("--backend=cuda", "--tier=sync", "--tier-work=0", "--tier-min-len=0", sc, "-d", "stats",
                              "-d", "tier", loop, env=senv, timeout=300)
        quick = re.findall(r"block (\d+) \(lines [^)]*\): fused code installed \(quick compile\)", err)
        full = re.findall(r"block (\d+) \(lines [^)]*\): full code installed", err)
        check("staged: every block installed with its quick code, then given its full code",
              rc == 0 and out == ref and len(quick) == 4 and sorted(quick) == sorted(full)
              and "4 blocks installed with quick code first, 4 of them given their full code" in err, err)
        check("staged: the quick code and the full code are cache entries of their own (-O0 in the key)",
              len([f for f in os.listdir(scache) if f.endswith(".so")]) == 8, str(os.listdir(scache)))
        rc, out, err, _ = run("--backend=cuda", "--tier=sync", "--tier-work=0", "--tier-min-len=0", sc, "-d", "tier",
                              loop, env=senv)
        check("staged, second run: the full code from the cache at once, no quick code",
              rc == 0 and out == ref and "(quick compile)" not in err and "full code installed" not in err
              and err.count("fused code installed") == 4, err)
        rc, out, err, _ = run("--backend=cuda", "--tier=sync", "--tier-work=0", "--tier-min-len=0",
                              "--cache-dir=" + tempfile.mkdtemp(prefix="vinterp-fast-"), "-d", "tier", "-d", "stats",
                              loop, env=dict(emu, VINTERP_NVRTC_OPT="fast"))
        check("VINTERP_NVRTC_OPT=fast: the quick code only, nothing swapped",
              rc == 0 and out == ref and err.count("fused code installed after") == 4 and "full code" not in err
              and "staged compiles" not in err, err)
        rc, out, err, _ = run("--backend=cuda", "--tier=sync", "--tier-work=0", "--tier-min-len=0", c, "-d", "tier",
                              loop, env=dict(emu, VINTERP_NVRTC_OPT="later"))
        check("VINTERP_NVRTC_OPT=later is refused", rc == 1 and "VINTERP_NVRTC_OPT: 'later' is not one of" in err, err)
        shutil.rmtree(scache, ignore_errors=True)

    # ---- the speeds of both tiers kept beside each unit ------------------------
    vcache = tempfile.mkdtemp(prefix="vinterp-verdict-")
    vc = "--cache-dir=" + vcache
    rc, out, err, _ = run("--backend=cpu", "--tier=sync", "--tier-work=0", vc, "-d", "stats", loop)
    units = sorted(f for f in os.listdir(vcache) if f.endswith(".c"))
    tiers = [f for f in os.listdir(vcache) if f.endswith(".tier")]
    check("a run with fused runs keeps the speeds beside the units (UNIT.PROGRAM.tier)",
          rc == 0 and out == ref and len(units) == 2 and len(tiers) >= 1
          and all(re.match(r"[0-9a-f]{32}\.[0-9a-f]{16}\.tier$", f) and f[:32] + ".c" in units for f in tiers),
          str(os.listdir(vcache)) + err)
    prog = tiers[0][33:49] if tiers else "0" * 16
    with open(os.path.join(vcache, tiers[0]) if tiers else os.devnull) as f:
        line = f.read()
    check("... as one line 'vinterp-tier 1 ...' of 7 numbers", re.match(r"vinterp-tier 1( [0-9.e+-]+){6}\n$", line)
          is not None, line)
    for u in units: # earlier runs found every fused block 100000x slower
        with open(os.path.join(vcache, u[:-2] + "." + prog + ".tier"), "w") as f:
            f.write("vinterp-tier 1 10 0.001 1000000000 10 100.0 1000\n")
    rc, out, err, _ = run("--backend=cpu", "--tier=sync", "--tier-work=0", vc, "-d", "stats", loop)
    check("a unit whose fused runs were the slower in earlier runs is not run fused",
          rc == 0 and out == ref and "2 installed, 2 demoted" in err and "kernel launches 0," in err
          and "its fused runs were the slower in earlier runs" in err, err)
    slow = [f for f in os.listdir(vcache) if f.endswith(".slow")]
    check("... and the program's blocks found slower are kept (PROGRAM.CONFIG.slow, 2 blocks)",
          len(slow) == 1 and re.match(prog + r"\.[0-9a-f]{16}\.slow$", slow[0]) is not None
          and open(os.path.join(vcache, slow[0])).read().startswith("vinterp-hot 2 2\n"), str(os.listdir(vcache)))
    rc, out, err, _ = run("--backend=cpu", "--tier=sync", "--tier-work=0", vc, "-d", "stats", loop, keep_slow=True)
    check("... a later run leaves them interpreted, untranslated",
          rc == 0 and out == ref and "0 promoted, 0 installed" in err
          and "(2 of them hot, untranslated: slower fused in earlier runs)" in err and "cpu: 0 kernels generated" in err
          and "its fused runs were the slower in earlier runs: not translated" in err, err)
    rc, out, err, _ = run("--backend=cpu", "--float-reassoc", "--tier=sync", "--tier-work=0", vc, "-d", "stats", loop,
                          keep_slow=True)
    check("... a set kept per configuration: --float-reassoc has its own",
          rc == 0 and out == ref and "(0 of them hot, untranslated" in err, err)
    for u in units: # ... and the other way round
        with open(os.path.join(vcache, u[:-2] + "." + prog + ".tier"), "w") as f:
            f.write("vinterp-tier 1 10 100.0 1000 10 0.001 1000000000\n")
    rc, out, err, _ = run("--backend=cpu", "--tier=sync", "--tier-work=0", vc, "-d", "stats", loop)
    check("... and one whose fused runs were the faster is run fused",
          rc == 0 and out == ref and "2 installed, 0 demoted" in err, err)
    shutil.rmtree(vcache, ignore_errors=True)

    # ---- a block that runs once a program run, judged across runs -------------
    # tier/once.vcode's last block runs once: its only fused run is counted
    # at the end (page faults and all); once two runs are kept, the next
    # run's first entry is interpreted, timed
    once_prog = os.path.join(HERE, "tier", "once.vcode")
    ocache = tempfile.mkdtemp(prefix="vinterp-once-")
    oc = "--cache-dir=" + ocache

    def once_speeds():
        rows = []
        for f in sorted(os.listdir(ocache)):
            if f.endswith(".tier"):
                with open(os.path.join(ocache, f)) as h:
                    rows.append(h.read().split())
        return rows

    outs = []
    for r in range(3):
        rc, out, err, _ = run("--backend=cpu", "--tier=sync", "--tier-work=0", oc, "-d", "stats", once_prog)
        outs.append((rc, out))
        if r == 0:
            first = once_speeds()
    last = once_speeds()
    check("a block run once: its one fused run kept (late 0, fused 1)",
          len(first) == 1 and first[0][2] == "0" and first[0][5] == "1", str(first))
    check("... and after two such runs the third interprets it, timed (late 1, fused 2)",
          len(last) == 1 and last[0][2] == "1" and last[0][5] == "2" and all(o == (0, "( 900000 )\n") for o in outs),
          str(last) + str(outs))
    shutil.rmtree(ocache, ignore_errors=True)

    # ---- lazy fills among a block's inputs: the interpreter runs it -----------
    with open(loop) as f:
        lazy_src = f.read().replace("CONST INT 1\nCONST INT 0\nCONST INT 20000\nMAKE_SEGDES\nINDEX",
                                    "CONST INT 1\nCONST INT 20000\nMAKE_SEGDES\nDIST INT", 1)
    lazy_loop = os.path.join(cache, "loop_lazy.vcode")
    with open(lazy_loop, "w") as f:
        f.write(lazy_src)
    rc, out, err, _ = run("--backend=cpu", "--tier=sync", "--tier-work=0", c, "-d", "stats", lazy_loop)
    check("a block whose input is a lazy fill (a DIST) stays interpreted, never promoted",
          "DIST INT" in lazy_src and rc == 0 and out == ref and "0 promoted" in err
          and re.search(r"LOOP\): interpreted; 300 entries \(0 short, 300 with a lazy fill\)", err) is not None, err)
    rc, out, err, _ = run("--backend=cpu", "--tier=eager", c, "-d", "stats", lazy_loop)
    check("... and under --tier=eager it runs fused (its input written out first)",
          rc == 0 and out == ref and re.search(r"kernel launches [1-9]", err) is not None, err)
    if shutil.which("c++"):
        # the cuda executor takes the fill as it is: filled on the device
        # (one element up, doubling copies there), lazy on the host. MAIN's
        # block has no input (shorter than --tier-min-len=1: interpreted, its
        # DIST a lazy fill); LOOP's, promoted at once, runs on the device.
        emu = {"VINTERP_CUDA_EMULATE": "1", "VINTERP_CUDA_HOST_MAX_ELEM": "0", "VINTERP_CUDA_HOST_MAX_SCAN": "0"}
        rc, out, err, _ = run("--backend=cuda", "--tier=sync", "--tier-work=0", "--tier-min-len=1", c, "-d", "stats",
                              lazy_loop, env=emu, timeout=300)
        m = re.search(r"lazy fills filled on the device: (\d+)", err)
        check("cuda (emulated): a block whose input is a lazy fill runs on the device, the fill filled there",
              rc == 0 and out == ref and m is not None and int(m.group(1)) >= 1 and "with a lazy fill" not in err
              and re.search(r"lines 27-38, LOOP\): (?:fused|demoted); \d+ entries \(0 short\), \d+ elements, [1-9]\d* fused runs",
                            err) is not None, err)

    # ---- a compile still running at the end is abandoned ----------------------
    # The run starts at the switch (every block promoted at its first run),
    # and ends once the worker's compile runs; the compiler blocks until
    # the flag file goes, which the test removes only after the run ended.
    slow = os.path.join(cache, "slow-cc.sh")
    slow_flag = os.path.join(cache, "slow-cc.on")
    blocking_cc(slow, slow_flag)
    abandon = tempfile.mkdtemp(prefix="vinterp-abandon-")
    rc, out, err, _ = run("--backend=cpu", "--cache-dir=" + abandon, "--tier-work=0", "-d", "stats", "-d", "tier", loop,
                          env=dict(GATED, VINTERP_CC=slow, VINTERP_TIER_DELAY_MS="0", VINTERP_TIER_BUDGET_MS="0",
                                   VINTERP_TEST_TIER_END="compiling"))
    left = [f for f in os.listdir(abandon) if not f.endswith(".hot")] # the program's hot list may be there
    check("a compile running at the end is abandoned: the run ends without waiting for its compiler",
          rc == 0 and out == ref and os.path.exists(slow_flag) and "VINTERP_TEST_TIER_END" not in err, err)
    check("... and leaves nothing in the cache (no partial entry, no temporary file), only its marker",
          len(left) == 1 and left[0].endswith(".abandoned"), str(left))
    check("... and -d stats says so", "abandoned at the end of the run" in err
          and re.search(r"\([1-9]\d* abandoned\)", err) is not None, err)
    # the next compile of that unit (the same compiler: the key names it)
    # runs unpaced and clears the marker
    os.unlink(slow_flag)
    marker = left[0] if left else ""
    rc, out, err, _ = run("--backend=cpu", "--tier=sync", "--cache-dir=" + abandon, "--tier-work=0", "-d", "stats",
                          loop, env={"VINTERP_CC": slow})
    left = os.listdir(abandon)
    check("... the next run compiles it and removes the marker",
          rc == 0 and out == ref and marker not in left and marker[:-len(".abandoned")] + ".so" in left,
          str(left) + err)
    shutil.rmtree(abandon, ignore_errors=True)

    # ---- the worker's share: a compile past it is stopped ----------------------
    # At a share of 1%, a compile that does not end (the stand-in, until
    # the test removes its flag) is past the share within tens of ms of
    # running: the pacer stops it. The run ends once it has (the trace says
    # so; the stopped time itself may be a microsecond, the run ending at
    # once: its arithmetic is test_tier_worker's).
    paced = tempfile.mkdtemp(prefix="vinterp-paced-")
    blocking_cc(slow, slow_flag)
    rc, out, err, _ = run("--cache-dir=" + paced, "--tier-work=0", "-d", "stats", "-d", "tier", loop,
                          env=dict(GATED, VINTERP_CC=slow, VINTERP_TIER_SHARE="1", VINTERP_TIER_DELAY_MS="0",
                                   VINTERP_TIER_BUDGET_MS="0", VINTERP_TEST_TIER_END="stopped"))
    waited = stat(err, r"waited ([0-9.]+) s for its share")
    stopped = stat(err, r"its compilers stopped ([0-9.]+) s")
    check("share 1%: the right answer, and the worker's compile was stopped for its share",
          rc == 0 and out == ref and "(1% of the run at most)" in err and None not in (waited, stopped)
          and float(waited) >= float(stopped) >= 0
          and re.search(r"tier: [0-9.]+ s: block \d+: its compile stopped for the share", err) is not None
          and "VINTERP_TEST_TIER_END" not in err, out + err)
    check("... and abandoned at the end, its compiler never let finish",
          os.path.exists(slow_flag) and "abandoned at the end of the run" in err, err)
    os.unlink(slow_flag)
    # a block's compile waits until the share holds the budget unused: at
    # 10% and 60 s, none starts in a run shorter than ten minutes (the
    # default 100 ms: none in a run's first second, which a sanitizer
    # build of this run can pass)
    budget = tempfile.mkdtemp(prefix="vinterp-budget-")
    rc, out, err, _ = run("--backend=cpu", "--cache-dir=" + budget, "--tier-work=0", "-d", "stats", loop,
                          env=dict(GATED, VINTERP_TIER_SHARE="10", VINTERP_TIER_DELAY_MS="0",
                                   VINTERP_TIER_BUDGET_MS="60000"))
    check("budget: a run too short for the share to hold it compiles nothing",
          rc == 0 and out == ref and "background compile 0.000000 s" in err
          and not [f for f in os.listdir(budget) if f.endswith(".so")], err)
    shutil.rmtree(budget, ignore_errors=True)
    rc, out, err, _ = run("--cache-dir=" + paced, loop, env={"VINTERP_TIER_BUDGET_MS": "soon"})
    check("VINTERP_TIER_BUDGET_MS=soon is refused", rc == 1 and "VINTERP_TIER_BUDGET_MS" in err, err)
    rc, out, err, _ = run("--cache-dir=" + paced, loop, env={"VINTERP_TIER_SHARE": "0"})
    check("VINTERP_TIER_SHARE=0 is refused", rc == 1 and "VINTERP_TIER_SHARE: '0' is not a count from 1 to 100" in err, err)
    rc, out, err, _ = run("--cache-dir=" + paced, loop, env={"VINTERP_TIER_SHARE": "half"})
    check("VINTERP_TIER_SHARE=half is refused", rc == 1 and "VINTERP_TIER_SHARE" in err, err)
    for var, bad in (("VINTERP_TEST_TIER_START", "soon"), ("VINTERP_TEST_TIER_END", "later"),
                     ("VINTERP_TIER_IDLE", "yes")):
        rc, out, err, _ = run("--cache-dir=" + paced, loop, env={var: bad})
        check("%s=%s is refused" % (var, bad), rc == 1 and out == "" and var in err and "'%s'" % bad in err, err)
    shutil.rmtree(paced, ignore_errors=True)

    # ---- a hot block that runs once: remembered for the next run --------------
    # tests/tier/once.vcode: a block past --tier-work=1000 in its only run,
    # where code compiled then would come too late
    once = os.path.join(HERE, "tier", "once.vcode")
    once_ref = run("--backend=ref", once)[1]
    quick = dict(GATED, VINTERP_TIER_DELAY_MS="0")
    hotdir = tempfile.mkdtemp(prefix="vinterp-hot-")
    hc = "--cache-dir=" + hotdir
    rc, out, err, _ = run("--backend=cpu", hc, "--tier-work=1000", "-d", "stats", "-d", "tier", once, env=quick)
    hot = [f for f in os.listdir(hotdir) if f.endswith(".hot")]
    check("a block past --tier-work in its only run: nothing compiled, remembered as hot",
          rc == 0 and out == once_ref == "( 900000 )\n" and "remembered for the next run" in err
          and " 0 promoted" in err and not [f for f in os.listdir(hotdir) if f.endswith((".so", ".c"))], out + err)
    text = open(os.path.join(hotdir, hot[0])).read() if len(hot) == 1 else ""
    check("... in PROGRAM.hot: 'vinterp-hot 2 N' and N block hashes",
          re.match(r"vinterp-hot 2 1\n[0-9a-f]{16}\n$", text) is not None, str(hot) + text)
    # the next run promotes it at its first run and compiles it (its end
    # waits for the worker to be done); the one after uses the cached code
    rc, out, err, _ = run("--backend=cpu", hc, "--tier-work=1000", "-d", "stats", once,
                          env=dict(quick, VINTERP_TEST_TIER_END="done"))
    check("... the next run promotes it at its first run and compiles it",
          rc == 0 and out == once_ref and "promoted at entry 1 " in err
          and [f for f in os.listdir(hotdir) if f.endswith(".so")], out + err)
    rc, out, err, _ = run("--backend=cpu", hc, "--tier-work=1000", "-d", "stats", "-d", "tier", once,
                          env=dict(quick, VINTERP_TEST_TIER_END="done"))
    # (a block this small is not translated on the main thread for a probe:
    # the worker finds its unit in the cache instead of compiling it)
    check("... and the run after that finds its unit in the cache, the same answer",
          rc == 0 and out == once_ref and ("its code in the cache" in err or "(0 compiled, 1 cache hits)" in err),
          out + err)
    for bad in ("vinterp-hot 1 3\n0\n", "vinterp-hot 2 2\nabc\n", "vinterp-hot 2 1\n12 x\n", "garbage\n"):
        fresh = tempfile.mkdtemp(prefix="vinterp-hot-")
        if len(hot) == 1:
            with open(os.path.join(fresh, hot[0]), "w") as f:
                f.write(bad)
        rc, out, err, _ = run("--backend=cpu", "--cache-dir=" + fresh, "--tier-work=1000", "-d", "stats", once,
                              env=quick)
        check("a malformed or mismatched PROGRAM.hot is ignored (%r)" % bad, rc == 0 and out == once_ref
              and " 0 promoted" in err and "promoted at entry" not in err, err)
        shutil.rmtree(fresh, ignore_errors=True)
    shutil.rmtree(hotdir, ignore_errors=True)

    # ---- a block whose unit is in the cache: installed at once ---------------
    # once.vcode's last block runs once, with less work than the threshold.
    # A run that compiles it (--tier=sync) keeps it in PROGRAM.CONFIG.warm;
    # the next run promotes it at its first run, finds its unit in the
    # cache on the main thread and runs it fused in that very run.
    for be, extra, env in (("cpu", [], {}),
                           ("cuda", ["--tier-min-len=0"], {"VINTERP_CUDA_EMULATE": "1", "VINTERP_CUDA_HOST_MAX_ELEM": "0",
                                                            "VINTERP_CUDA_HOST_MAX_SCAN": "0"})):
        if be == "cuda" and not shutil.which("c++"):
            continue
        wdir = tempfile.mkdtemp(prefix="vinterp-warm-")
        wc = "--cache-dir=" + wdir
        rc, out, err, _ = run("--backend=" + be, "--tier=sync", "--tier-work=0", wc, *extra, once_prog, env=env)
        warm = [f for f in os.listdir(wdir) if f.endswith(".warm")]
        m = re.match(r"vinterp-hot 2 ([1-9]\d*)\n", open(os.path.join(wdir, warm[0])).read()) if len(warm) == 1 else None
        nwarm = int(m.group(1)) if m else 0
        check("%s: a run that compiled a block's unit keeps the block as warm (PROGRAM.CONFIG.warm)" % be,
              rc == 0 and out == "( 900000 )\n" and m is not None, str(os.listdir(wdir)) + err)
        rc, out, err, _ = run("--backend=" + be, wc, *extra, "-d", "stats", "-d", "tier", once_prog,
                              env=dict(GATED, **env))
        check("%s: ... the next run installs it at its first run, from the cache, and runs it fused" % be,
              rc == 0 and out == "( 900000 )\n"
              and re.search(r"block \d+ \(lines 21-30, MAIN\): promoted, its code in the cache after 1 entries", err)
              is not None and re.search(r"lines 21-30, MAIN\): fused; \d+ entries \(0 short\), \d+ elements, 1 fused runs",
                                        err) is not None and "0 compiled, 1 cache hits" in err, err)
        # a warm block whose unit has gone from the cache: probed once,
        # compiled again in the background, and no longer warm
        for f in os.listdir(wdir):
            if f.endswith((".so", ".cpp", ".c")):
                os.unlink(os.path.join(wdir, f))
        rc, out, err, _ = run("--backend=" + be, wc, *extra, "-d", "stats", once_prog, env=dict(GATED, **env))
        warm_text = open(os.path.join(wdir, warm[0])).read() if warm else ""
        check("%s: ... a warm block whose unit has gone: probed, interpreted, no longer warm" % be,
              rc == 0 and out == "( 900000 )\n"
              and re.search(r"lines 21-30, MAIN\): [a-z ]+; .*promoted at entry 1 ", err) is not None
              and warm_text.startswith("vinterp-hot 2 %d\n" % (nwarm - 1)), warm_text + err)
        shutil.rmtree(wdir, ignore_errors=True)

    # ---- the compiles after the run (runtime/fused/tier_after.h) --------------
    # once.vcode's hot block runs once: its code would come too late in this
    # run. After the output its unit is compiled into the cache and the
    # block kept as warm, so that the next run installs it at its first
    # entry; with VINTERP_TIER_AFTER=off the next run compiles it again.
    def wait_for(path_pred, what):
        """Wait for an event of a child process (a hang guard, not a measurement)."""
        for _ in range(6000):
            if path_pred():
                return True
            time.sleep(0.05)
        print("FAIL: waited 300 s for " + what)
        return False

    installed = r"lines 21-30, MAIN\): promoted, its code in the cache after 1 entries"
    for be, extra, env in (("cpu", [], {}),
                           ("cuda", ["--tier-min-len=0"], {"VINTERP_CUDA_EMULATE": "1", "VINTERP_CUDA_HOST_MAX_ELEM": "0",
                                                            "VINTERP_CUDA_HOST_MAX_SCAN": "0"})):
        if be == "cuda" and not shutil.which("c++"):
            continue
        for mode in ("wait", "off"):
            adir = tempfile.mkdtemp(prefix="vinterp-after-")
            ac = "--cache-dir=" + adir
            rc, out, err, _ = run("--backend=" + be, ac, "--tier-work=1000", *extra, "-d", "stats", once,
                                  env=dict(quick, VINTERP_TIER_AFTER=mode, **env))
            warm = [f for f in os.listdir(adir) if f.endswith(".warm")]
            said = re.search(r"[1-9]\d* hot blocks without their code at the end: compiled into the cache after the "
                             r"output \(VINTERP_TIER_AFTER=wait\)", err) is not None
            rc2, out2, err2, _ = run("--backend=" + be, ac, "--tier-work=1000", *extra, "-d", "stats", "-d", "tier", once,
                                     env=dict(quick, **env))
            got = re.search(installed, err2) is not None
            if mode == "wait":
                check("%s: VINTERP_TIER_AFTER=wait: the hot block that ran once is compiled after the output, "
                      "-d stats says so, and it is kept as warm" % be,
                      rc == 0 and out == once_ref and said and len(warm) == 1, str(os.listdir(adir)) + err)
                check("%s: ... the next run installs it from the cache at its first entry, the same answer" % be,
                      rc2 == 0 and out2 == once_ref and got, err2)
            else:
                check("%s: VINTERP_TIER_AFTER=off: nothing compiled after the run, and the next run has no code "
                      "at its first entry" % be,
                      rc == 0 and out == once_ref and not said and not warm and rc2 == 0 and out2 == once_ref
                      and not got, err + err2)
            shutil.rmtree(adir, ignore_errors=True)

    # detached (the default): vinterp exits without waiting for it, and its
    # reader gets the end of the output at once (the child holds none of
    # vinterp's files: stdout here is a pipe, read to its end by run());
    # the child waits on the test's gate file, then compiles
    adir = tempfile.mkdtemp(prefix="vinterp-after-")
    gate = os.path.join(adir, "gate")
    rc, out, err, _ = run("--backend=cpu", "--cache-dir=" + adir, "--tier-work=1000", "-d", "stats", once,
                          env=dict(quick, VINTERP_TIER_AFTER="detach", VINTERP_TEST_TIER_AFTER_GATE=gate))
    check("detached: vinterp and its output end while the compile after the run waits on its gate",
          rc == 0 and out == once_ref and "(VINTERP_TIER_AFTER=detach)" in err
          and not [f for f in os.listdir(adir) if f.endswith((".warm", ".so"))], str(os.listdir(adir)) + err)
    open(gate, "w").close()
    ok = wait_for(lambda: [f for f in os.listdir(adir) if f.endswith(".warm")], "the detached compile's warm set")
    rc, out, err, _ = run("--backend=cpu", "--cache-dir=" + adir, "--tier-work=1000", "-d", "stats", "-d", "tier", once,
                          env=quick)
    check("... once let go it compiles the unit, and the next run installs it at its first entry",
          ok and rc == 0 and out == once_ref and re.search(installed, err) is not None, err)
    shutil.rmtree(adir, ignore_errors=True)

    # the defaults (VINTERP_TIER_AFTER empty = not set): off on cpu, where
    # fused code is mostly slower until its verdicts are in
    # (runtime/fused/tuning.h), detached on cuda (held on a gate here)
    adir = tempfile.mkdtemp(prefix="vinterp-after-")
    rc, out, err, _ = run("--backend=cpu", "--cache-dir=" + adir, "--tier-work=1000", "-d", "stats", once,
                          env=dict(quick, VINTERP_TIER_AFTER=""))
    check("cpu: by default no compiles after the run",
          rc == 0 and out == once_ref and "hot blocks without their code" not in err and " 0 promoted" in err, err)
    shutil.rmtree(adir, ignore_errors=True)
    if shutil.which("c++"):
        adir = tempfile.mkdtemp(prefix="vinterp-after-")
        gate = os.path.join(adir, "gate")
        cenv = {"VINTERP_CUDA_EMULATE": "1", "VINTERP_CUDA_HOST_MAX_ELEM": "0", "VINTERP_CUDA_HOST_MAX_SCAN": "0"}
        rc, out, err, _ = run("--backend=cuda", "--cache-dir=" + adir, "--tier-work=1000", "--tier-min-len=0", "-d",
                              "stats", once, env=dict(quick, VINTERP_TIER_AFTER="", VINTERP_TEST_TIER_AFTER_GATE=gate,
                                                      **cenv))
        check("cuda (emulated): by default the compiles after the run are detached",
              rc == 0 and out == once_ref and "(VINTERP_TIER_AFTER=detach)" in err, err)
        open(gate, "w").close()
        ok = wait_for(lambda: [f for f in os.listdir(adir) if f.endswith(".warm")], "the detached compile's warm set")
        check("... and keep the block as warm", ok, str(os.listdir(adir)))
        shutil.rmtree(adir, ignore_errors=True)

    # a compile abandoned at the end (its compiler blocks until the test
    # removes a file) is done again after the run, unpaced
    adir = tempfile.mkdtemp(prefix="vinterp-after-")
    gate = os.path.join(adir, "gate")
    aslow, aflag = os.path.join(adir, "slow-cc.sh"), os.path.join(adir, "slow-cc.on")
    blocking_cc(aslow, aflag)
    rc, out, err, _ = run("--backend=cpu", "--cache-dir=" + adir, "--tier-work=0", "-d", "stats", loop,
                          env=dict(GATED, VINTERP_CC=aslow, VINTERP_TIER_DELAY_MS="0", VINTERP_TIER_BUDGET_MS="0",
                                   VINTERP_TEST_TIER_END="compiling", VINTERP_TIER_AFTER="detach",
                                   VINTERP_TEST_TIER_AFTER_GATE=gate))
    check("a compile abandoned at the end: -d stats names it for the compiles after the run",
          rc == 0 and out == ref and re.search(r"\([1-9]\d* abandoned\)", err) is not None
          and re.search(r"[1-9]\d* hot blocks without their code at the end", err) is not None, err)
    os.unlink(aflag)
    open(gate, "w").close()
    ok = wait_for(lambda: [f for f in os.listdir(adir) if f.endswith(".warm")], "the detached compile's warm set")
    rc, out, err, _ = run("--backend=cpu", "--cache-dir=" + adir, "--tier-work=0", "-d", "stats", "-d", "tier", loop,
                          env=dict(GATED, VINTERP_CC=aslow, VINTERP_TEST_TIER_END="done"))
    check("... compiled after the run: the next run installs the loop's block from the cache at its first entry",
          ok and rc == 0 and out == ref and "LOOP): promoted, its code in the cache after 1 entries" in err
          and not [f for f in os.listdir(adir) if f.endswith(".abandoned")], err)
    shutil.rmtree(adir, ignore_errors=True)

    # ... and the compiles after the run keep the block's interpreted speeds
    # of that run beside its unit (its first timed run left out), so that
    # the next run can judge its first fused run at once: planted speeds
    # decide it (an interpreter 1e12x faster than any fused run, then 1e9x
    # slower), not the clock
    adir = tempfile.mkdtemp(prefix="vinterp-after-")
    aslow, aflag = os.path.join(adir, "slow-cc.sh"), os.path.join(adir, "slow-cc.on")
    blocking_cc(aslow, aflag)
    rc, out, err, _ = run("--backend=cpu", "--cache-dir=" + adir, "--tier-work=0", "-d", "stats", loop,
                          env=dict(GATED, VINTERP_CC=aslow, VINTERP_TIER_DELAY_MS="0", VINTERP_TIER_BUDGET_MS="0",
                                   VINTERP_TEST_TIER_END="compiling", VINTERP_TIER_AFTER="detach",
                                   VINTERP_TEST_TIER_AFTER_GATE=os.path.join(adir, "gate")))
    m = re.search(r"LOOP\): [a-z ,]+; (\d+) entries .*seconds: interpreted [0-9.]+ \((\d+) timed runs\)", err)
    open(os.path.join(adir, "gate"), "w").close()
    os.unlink(aflag)
    kept = []
    if m and rc == 0:  # the child compiles now that its gate and the compiler are open; its warm set comes last
        if wait_for(lambda: [f for f in os.listdir(adir) if f.endswith(".warm")], "the detached compile's warm set"):
            kept = [f for f in os.listdir(adir) if f.endswith(".tier")]
    row = open(os.path.join(adir, kept[0])).read().split() if len(kept) == 1 else []
    check("the compiles after the run keep the block's interpreted runs of that run beside its unit, the first left "
          "out (late N-1, fused 0)",
          m is not None and len(row) == 8 and int(m.group(2)) >= 3 and row[2] == str(int(m.group(2)) - 1)
          and float(row[3]) > 0 and row[5] == "0" and os.path.exists(os.path.join(adir, kept[0][:32] + ".c")),
          str(row) + str(os.listdir(adir)) + err)
    for planted, demoted in (("vinterp-tier 1 10 0.000000000001 1000000000000 0 0 0\n", True),
                             ("vinterp-tier 1 10 1000000.0 1000 0 0 0\n", False)):
        if kept:
            with open(os.path.join(adir, kept[0]), "w") as f:
                f.write(planted)
        rc, out, err, _ = run("--backend=cpu", "--cache-dir=" + adir, "--tier-work=0", "-d", "stats", "-d", "tier",
                              loop, env=dict(GATED, VINTERP_CC=aslow, VINTERP_TEST_TIER_END="done"))
        first = re.search(r"LOOP\): demoted; \d+ entries .*, 1 fused runs;.* demoted at its first fused run: [0-9.]+x "
                          r"the interpreter's time per element in earlier runs", err) is not None
        if demoted:
            check("... a next run whose first fused run is far slower than those speeds goes back to the "
                  "interpreter at once (1 fused run), the same answer", rc == 0 and out == ref and first, err)
        else:
            check("... and one far faster stays fused (the unit from the cache, every run but the sampled ones)",
                  rc == 0 and out == ref and not first
                  and re.search(r"LOOP\): fused; 301 entries .*, 2[0-9][0-9] fused runs; .*\(0 compiled, 1 cache hits\)",
                                err) is not None, err)
    shutil.rmtree(adir, ignore_errors=True)

    rc, out, err, _ = run("--backend=cpu", "--no-cache", "--tier-work=1000", "-d", "stats", once,
                          env=dict(quick, VINTERP_TIER_AFTER="wait"))
    check("--no-cache: no compiles after the run (the run's own cache goes with it)",
          rc == 0 and out == once_ref and "hot blocks without their code" not in err, err)
    rc, out, err, _ = run("--backend=cpu", once, env={"VINTERP_TIER_AFTER": "later"})
    check("VINTERP_TIER_AFTER=later is refused", rc == 1 and "VINTERP_TIER_AFTER: 'later' is not one of" in err, err)

    # ---- a failing instruction whose result is dropped, run fused from the cache
    # tier/dead_*_input.vcode: a /, %, RAND, BPERMUTE or PERMUTE over a
    # vector read from stdin, its result dropped: compiled (and kept as
    # warm) by a run with a good input, the block runs fused from the cache
    # in the next, with a bad one: it must stop with the reference's
    # message and line
    perm_good, perm_bad = "( 1 2 3 4 5 6 7 0 )\n", "( 1 2 3 4 5 6 7 8 )\n"
    nz_good, nz_bad = "( 1 2 3 4 5 6 7 8 )\n", "( 1 2 3 4 5 6 7 0 )\n"
    deads = [("div", "( 1 1 1 1 1 1 1 1 )\n", "( 1 0 1 1 1 1 1 1 )\n", "(lines 25-38, DIVR)"),
             ("mod", nz_good, nz_bad, "(lines 23-36, DIVR)"), ("rand", nz_good, nz_bad, "(lines 23-35, DIVR)"),
             ("bpermute", perm_good, perm_bad, "(lines 23-40, DIVR)"),
             ("permute", perm_good, perm_bad, "(lines 23-38, DIVR)")]
    for be, extra, env in (("cpu", [], {}),
                           ("cuda", [], {"VINTERP_CUDA_EMULATE": "1", "VINTERP_CUDA_HOST_MAX_ELEM": "0",
                                         "VINTERP_CUDA_HOST_MAX_SCAN": "0"})):
        if be == "cuda" and not shutil.which("c++"):
            continue
        for name, good, bad, where in deads:
            dead = os.path.join(HERE, "tier", "dead_%s_input.vcode" % name)
            ref_err = run("--backend=ref", dead, inp=bad)[2]
            ddir = tempfile.mkdtemp(prefix="vinterp-dead-")
            dc = "--cache-dir=" + ddir
            rc, out, err, _ = run("--backend=" + be, "--tier=sync", "--tier-work=0", "--tier-min-len=0", dc, dead,
                                  env=env, inp=good)
            check("%s: dead_%s_input with a good input: 36, its blocks compiled" % (be, name),
                  rc == 0 and out == "( 36 )\n", err)
            rc, out, err, _ = run("--backend=" + be, "--tier-min-len=0", dc, "-d", "tier", dead,
                                  env=dict(GATED, **env), inp=bad)
            lines = err.strip().split("\n")
            check("%s: ... with a bad one, the block fused from the cache stops with the reference's message" % be,
                  rc == 1 and out == "" and ref_err.startswith("vinterp: ") and lines[-1] == ref_err.strip()
                  and where + ": promoted, its code in the cache" in err, err)
            shutil.rmtree(ddir, ignore_errors=True)

    # ---- --no-cache: the tiers' builds go to a directory of the run's own -----
    tmp = tempfile.mkdtemp(prefix="vinterp-tmpdir-")
    rc, out, err, _ = run("--backend=cpu", "--tier=sync", "--tier-work=0", "--no-cache", "-d", "stats", loop,
                          env={"TMPDIR": tmp})
    check("--no-cache under tiers: compiled, and the private directory removed",
          rc == 0 and out == ref and "2 installed" in err and os.listdir(tmp) == [], str(os.listdir(tmp)) + err)
    shutil.rmtree(tmp, ignore_errors=True)

    # ---- deterministic plans: the same keys under load ------------------------
    prog = os.path.join(corpus, "bn_bh.vcode")
    if os.path.exists(prog):
        keys = []
        for loaded in (False, True):
            hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2 * (os.cpu_count() or 2))] \
                if loaded else []
            try:
                rc, out, err, _ = run("--backend=cpu", "--tier=eager", c, "-d", "stats", "-m", "100000000", prog,
                                      timeout=600)
            finally:
                for h in hogs:
                    h.kill()
                    h.wait()
            keys.append(stat(err, r"stats: cpu: unit keys: (\S+)"))
        check("bn_bh: the same plans and cache key idle and under full load", keys[0] and keys[0] == keys[1],
              str(keys))
finally:
    shutil.rmtree(cache, ignore_errors=True)

finish()

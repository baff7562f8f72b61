#!/usr/bin/env python3
"""tests/run_device_tier.py INTERP — the cuda backend's device tier
(runtime/fused/cuda_tier.h) on the emulated device: placement keeps a
timed region's vectors on the device (and a planted long transfer is seen
as one), -d stats' two tally lines in their promised form, results and
faults as the reference's (message, line, status), -m as the reference's,
-d trace=FILE's Chrome trace.

Every check decides by what the run prints, never by the clock.
Prints "N passed, N failed"."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

INTERP = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "bin/vinterp")
N = 20000
LIMIT = 64 * 1024  # bytes a timed region may move host <-> device (issue 29)
passed = failed = 0

DEVICE = {"VINTERP_DEVICE_TIER": "on"}
if os.environ.get("DEVICE_TIER_REAL") != "1":  # DEVICE_TIER_REAL=1: the GPU of the machine (gpu_checklist.sh devcheck)
    DEVICE["VINTERP_CUDA_EMULATE"] = "1"
    # the library's own kernels run on the host (tests/kernels_host) in
    # place of the emulated device's primitives
    PRIMS = os.environ.get("VINTERP_CUDA_EMULATE_PRIMS", "")
    if PRIMS:
        DEVICE["VINTERP_CUDA_EMULATE_PRIMS"] = PRIMS
else:
    # the real device's code: a GPU, or the host standing in for one
    # (tests/kernels_host: its driver and the library built for the host)
    for k in ("VINTERP_KERNELS_LIB", "VINTERP_TEST_CUDA_DRIVER"):
        if os.environ.get(k):
            DEVICE[k] = os.environ[k]

TALLY = re.compile(r"^stats: (timed region|whole run): (\d+) launches, (\d+) syncs, (\d+) bytes host to device, "
                   r"(\d+) bytes device to host, ([0-9.]+) s in kernels$")


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what)


def run(src, args, env_extra=None, mem=None):
    with tempfile.NamedTemporaryFile("w", suffix=".vcode", delete=False) as f:
        f.write(src)
        path = f.name
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("VINTERP_"):
            del env[k]
    env.update(env_extra or {})
    cmd = [INTERP] + args + (["-m", str(mem)] if mem else []) + [path]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    os.unlink(path)
    name = os.path.basename(path)
    return p.returncode, p.stdout, p.stderr.replace(path, "PROG").replace(name, "PROG")


def ref(src, mem=None):
    return run(src, ["--backend=ref"], mem=mem)


def dev(src, extra=(), mem=None, env=None):
    e = dict(DEVICE)
    e.update(env or {})
    return run(src, ["--backend=cuda", "--tier=off"] + list(extra), e, mem)


def tallies(err):
    t = {}
    for line in err.splitlines():
        m = TALLY.match(line)
        if m:
            t[m.group(1)] = [int(m.group(i)) for i in range(2, 6)]
    return t


def region_ok(err):
    """The placement verdict: the timed region moved at most LIMIT bytes."""
    t = tallies(err).get("timed region")
    return t is not None and t[2] + t[3] <= LIMIT


def iota(start, n):
    return "CONST INT %d\nCONST INT 1\nCONST INT %d\nMAKE_SEGDES\nINDEX\n" % (start, n)


# x = 0..N-1 as floats on the device; the timed region: sum of x*x
DOT = ("FUNC MAIN1_1\n" + iota(0, N) + "I_TO_F\nCOPY 1 0\nSTART_TIMER\n* FLOAT\nCONST INT %d\nMAKE_SEGDES\n"
       "+_REDUCE FLOAT\nSTOP_TIMER\nPOP 1 0\nRET\n" % N)
# the same with a long host constant multiplied in inside the timed region
PLANT = ("FUNC MAIN1_1\n" + iota(0, N) + "I_TO_F\nSTART_TIMER\nCONST FLOAT (" + " ".join(["2.0"] * N) +
         ")\n* FLOAT\nCONST INT %d\nMAKE_SEGDES\n+_REDUCE FLOAT\nSTOP_TIMER\nPOP 1 0\nRET\n" % N)


def test_placement():
    rc_r, out_r, _ = ref(DOT)
    rc, out, err = dev(DOT, ["-d", "stats"])
    check(rc == 0 and out == out_r, "dot: the reference's answer (%r, %r)" % (out, out_r))
    t = tallies(err)
    check(set(t) == {"timed region", "whole run"}, "dot: both tally lines in their form: %r" % sorted(t))
    reg = t.get("timed region", [0, 0, 0, 0])
    check(reg[0] >= 1, "dot: the timed region's MUL and REDUCE launched on the device: %r" % reg)
    check(region_ok(err), "dot: the timed region moves at most %d bytes: %r" % (LIMIT, reg))
    m = re.search(r"stats: device tier: (\d+) instructions on the device", err)
    check(m is not None and int(m.group(1)) >= 4, "dot: INDEX, I_TO_F, * and +_REDUCE on the device")
    check("stats: model: timed region" in err, "dot: the modelled time line")
    check(re.search(r"^stats: model: the host's own work beside it \(.*\): timed region [0-9.]+ s, whole run [0-9.]+ s$",
                    err, re.M) is not None or "VINTERP_TEST_CUDA_DRIVER" in DEVICE,
          "dot: the host's own work beside the model (the emulated device)")
    # INDEX, I_TO_F and * make long device results the host never reads
    # (the reduction's scalar is read): none of them gets host storage
    m = re.search(r"stats: device results: (\d+) made with no host storage, (\d+) of them given it later", err)
    check(m is not None and int(m.group(1)) >= 2 and int(m.group(2)) <= 1,
          "dot: device results without host copies: %r" % (m and m.groups(),))
    # a planted long transfer: the same verdict must fail it
    rc_r, out_r, _ = ref(PLANT)
    rc, out, err = dev(PLANT, ["-d", "stats"])
    check(rc == 0 and out == out_r, "plant: the reference's answer")
    reg = tallies(err).get("timed region", [0, 0, 0, 0])
    check(not region_ok(err) and reg[2] >= 8 * N, "plant: the long upload in the timed region is seen: %r" % reg)
    # below the threshold nothing goes to the device
    rc, out, err = dev(DOT, ["-d", "stats"], env={"VINTERP_DEVICE_MIN": str(N + 1)})
    m = re.search(r"stats: device tier: (\d+) instructions on the device", err)
    check(rc == 0 and m is not None and int(m.group(1)) == 0, "dot below the placement threshold: host only")
    # the default tiers over the device tier: the same answer
    rc_r, out_r, _ = ref(DOT)
    rc, out, _ = run(DOT, ["--backend=cuda"], dict(DEVICE, VINTERP_TIER_WORK="0", VINTERP_TIER_MIN_LEN="0"))
    check(rc == 0 and out == out_r, "dot under the default tiers")


def dist(value, n):
    return "CONST INT %d\nCONST INT %d\nMAKE_SEGDES\nDIST INT\n" % (value, n)


# Stacks that EXTRACT and REPLACE take: data, indices, descriptor (top).
# 5000 segments of 4 over 0..19999 (the descriptor made from a long fill,
# on the device), indices k / 1081 made on the device: 0..3, then 4 (bad)
# from segment 4324.
SEG5000 = iota(0, 20000) + dist(4, 5000) + "MAKE_SEGDES\n"
IDX5000 = iota(0, 5000) + dist(1081, 5000) + "/ INT\n"
# 1000 segments of 20 (a host descriptor); indices made on the device as a
# segmented +_REDUCE (a short result left there): how many of the
# segment's elements are >= LIMIT
SEG1000 = iota(0, 20000) + dist(20, 1000) + "MAKE_SEGDES\n"


def idx1000(limit):
    return iota(0, 20000) + dist(limit, 20000) + ">= INT\nB_TO_I\nCOPY 1 1\n+_REDUCE INT\n"


FAULTS = {
    # 5 / (i - 7): element 7 divides by zero
    "div": "FUNC MAIN1_1\nCONST INT 5\nCONST INT %d\nMAKE_SEGDES\nDIST INT\n" % N + iota(-7, N) + "/ INT\nRET\n",
    "mod": "FUNC MAIN1_1\nCONST INT 5\nCONST INT %d\nMAKE_SEGDES\nDIST INT\n" % N + iota(-9, N) + "%\nRET\n",
    # RAND over i - 3: a zero range at element 3
    "rand": "FUNC MAIN1_1\n" + iota(-3, N) + "RAND\nRET\n",
    # BPERMUTE of 0..N-1 through 1..N: index N at position N-1
    "bpermute": "FUNC MAIN1_1\n" + iota(0, N) + iota(1, N) + "CONST INT %d\nMAKE_SEGDES\nCONST INT %d\nMAKE_SEGDES\n"
                "BPERMUTE INT\nRET\n" % (N, N),
    # PERMUTE through 0..N-1 reversed but one: a collision-free permute, then a bad one
    "permute": "FUNC MAIN1_1\n" + iota(0, N) + iota(2, N) + "CONST INT %d\nMAKE_SEGDES\nPERMUTE INT\nRET\n" % N,
    # EXTRACT from 400 segments of 50 at index 60
    "extract": "FUNC MAIN1_1\n" + iota(0, 20000) + "CONST INT 50\nCONST INT 400\nMAKE_SEGDES\nDIST INT\n"
               "COPY 1 0\nMAKE_SEGDES\nPOP 1 1\nCONST INT 60\nCONST INT 400\nMAKE_SEGDES\nDIST INT\n"
               "CPOP 1 1\nEXTRACT INT\nRET\n",
    # positions made and checked on the device: a long result, a short one, REPLACE
    "extract_device": "FUNC MAIN1_1\n" + SEG5000 + IDX5000 + "CPOP 1 1\nEXTRACT INT\nRET\n",
    "extract_short": "FUNC MAIN1_1\n" + SEG1000 + idx1000(19500) + "CPOP 1 1\nEXTRACT INT\nRET\n",
    "replace_device": "FUNC MAIN1_1\n" + SEG5000 + IDX5000 + iota(7, 5000) + "CPOP 1 2\nREPLACE INT\nRET\n",
}

# The permutes' checks do not wait (a record read at the next wait): the
# first error is still the one reported, at its line, with nothing after it
# (a later host error, EXIT, the end of the run), past the 64 records.
BPERM_BAD = iota(0, N) + iota(1, N) + "CONST INT %d\nMAKE_SEGDES\nCONST INT %d\nMAKE_SEGDES\nBPERMUTE INT\n" % (N, N)
BPERM_GOOD = iota(0, N) + iota(0, N) + "CONST INT %d\nMAKE_SEGDES\nCONST INT %d\nMAKE_SEGDES\nBPERMUTE INT\nPOP 1 0\n" % (N, N)
FAULTS.update({
    "bpermute_then_div": "FUNC MAIN1_1\n" + BPERM_BAD + "CONST INT 1\nCONST INT 0\n/ INT\nRET\n",
    "bpermute_then_exit": "FUNC MAIN1_1\n" + BPERM_BAD + "CONST INT 0\nEXIT\nRET\n",
    "bpermute_after_70": "FUNC MAIN1_1\n" + BPERM_GOOD * 70 + BPERM_BAD + "POP 1 0\nCONST INT 3\nRET\n",
    # EXTRACT's and REPLACE's indices on the device are checked there
    # without a wait (a record read at the next): the first error still
    # the one reported, before a later host error, EXIT, or a read of the
    # vector a bad REPLACE wrote
    "extract_then_div": FAULTS["extract_device"].replace("RET\n", "CONST INT 1\nCONST INT 0\n/ INT\nRET\n"),
    "replace_then_exit": FAULTS["replace_device"].replace("RET\n", "CONST INT 0\nEXIT\nRET\n"),
    "replace_then_read": FAULTS["replace_device"].replace("RET\n", "CONST INT 20000\nMAKE_SEGDES\n+_REDUCE INT\n"
                                                          "CONST INT 0\n= INT\nIF\nCONST INT 1\nELSE\n"
                                                          "CONST INT 2\nENDIF\nRET\n"),
    # ... but not where the data is empty (no element 0 for a bad
    # index's position): 5000 empty segments, indices 0 on the device
    "extract_empty": "FUNC MAIN1_1\nCONST INT ()\n" + iota(0, 5000) + dist(0, 5000) + "* INT\n" + dist(0, 5000) +
                     "MAKE_SEGDES\nEXTRACT INT\nRET\n",
    # the same for Int / (and RAND's range): its fault record read later
    "div_then_exit": FAULTS["div"].replace("RET\n", "CONST INT 0\nEXIT\nRET\n"),
    "rand_then_div": FAULTS["rand"].replace("RET\n", "CONST INT 1\nCONST INT 0\n/ INT\nRET\n"),
})

# the same where every index is good: the reference's results
GOOD = {
    "bpermute_70": "FUNC MAIN1_1\n" + BPERM_GOOD * 70 + iota(5, N) + iota(0, N) + "CONST INT %d\nMAKE_SEGDES\n"
                   "CONST INT %d\nMAKE_SEGDES\nBPERMUTE INT\nRET\n" % (N, N),
    "extract_device": "FUNC MAIN1_1\n" + SEG5000 + iota(0, 5000) + dist(1251, 5000) + "/ INT\nCPOP 1 1\n"
                      "EXTRACT INT\nRET\n",
    "extract_short": "FUNC MAIN1_1\n" + SEG1000 + idx1000(20000) + "CPOP 1 1\nEXTRACT INT\nRET\n",
    "replace_device": "FUNC MAIN1_1\n" + SEG5000 + iota(0, 5000) + dist(1251, 5000) + "/ INT\n" + iota(7, 5000) +
                      "CPOP 1 2\nREPLACE INT\nRET\n",
    # a descriptor of 8000 segments of 3 made from a long fill: its LENGTHS,
    # INDEX and DIST over it, in a timed region
    "fill_segdes": "FUNC MAIN1_1\n" + dist(3, 8000) + "START_TIMER\nMAKE_SEGDES\nCOPY 1 0\nLENGTHS\nCOPY 1 0\n"
                   "COPY 1 2\nINDEX\nCOPY 1 1\nLENGTHS\nCOPY 1 2\nDIST INT\nSTOP_TIMER\nPOP 1 2\nRET\n",
}


def test_good():
    for name, src in sorted(GOOD.items()):
        rc_r, out_r, _ = ref(src)
        rc, out, err = dev(src, ["-d", "stats"])
        if "START_TIMER" in src:  # the timer's line differs
            out, out_r = out.splitlines()[:-1], out_r.splitlines()[:-1]
        check(rc_r == 0 and (rc, out) == (rc_r, out_r), "%s: the reference's result (%d)" % (name, rc))
        m = re.search(r"stats: device tier: instructions run there.*", err)
        ran = m.group(0) if m else ""
        check(name.split("_")[0].upper() in ran or name == "fill_segdes", "%s: run on the device: %r" % (name, ran))
        if name == "bpermute_70":
            m = re.search(r"stats: device tier: (\d+) checks \(.*\) left on the device, read in (\d+) reads", err)
            check(m is not None and int(m.group(1)) == 71 and int(m.group(2)) >= 2,
                  "bpermute_70: 71 checks left pending, read in 2 or more reads: %r" % (m and m.group(0)))
        if name in ("extract_device", "replace_device"):  # the check left pending: no wait of its own
            op = name.split("_")[0].upper()
            check(re.search(r" %s 1 \(0\)" % op, ran) is not None, "%s: no wait in the %s: %r" % (name, op, ran))
            m = re.search(r"EXTRACT's and REPLACE's indices: (\d+)\) left on the device", err)
            check(m is not None and m.group(1) == "1", "%s: its check left on the device: %r" % (name, m and m.group(0)))
        if name == "fill_segdes":
            check(region_ok(err) and "MAKE_SEGDES" in ran,
                  "fill_segdes: the descriptor made on the device, nothing long moved: %r" % ran)


def test_faults():
    for name, src in sorted(FAULTS.items()):
        rc_r, out_r, err_r = ref(src)
        rc, out, err = dev(src)
        check(rc_r != 0 and "vinterp:" in err_r, "%s: the reference fails (%d, %r)" % (name, rc_r, err_r))
        check((rc, out, err) == (rc_r, out_r, err_r), "%s: the reference's failure: %r against %r" % (name, err, err_r))


# an elementwise chain over device vectors; its -m boundary
MEM = ("FUNC MAIN1_1\n" + iota(0, N) + "I_TO_F\nCOPY 1 0\n* FLOAT\nCOPY 1 0\n+ FLOAT\nCONST INT %d\nMAKE_SEGDES\n"
       "+_REDUCE FLOAT\nRET\n" % N)


EXTRACT_MEM = ("FUNC MAIN1_1\n" + SEG5000 + iota(0, 5000) + dist(1251, 5000) + "/ INT\nCPOP 1 1\nEXTRACT INT\n"
               "POP 1 0\n" + iota(0, 60000) + "CONST INT 60000\nMAKE_SEGDES\n+_REDUCE INT\nRET\n")


def test_memory():
    for mem in (60000, 40000, 25000, 12000):
        r = ref(MEM, mem)
        d = dev(MEM, mem=mem)
        check(r == d, "-m %d: the reference's result or message: %r against %r" % (mem, d[2], r[2]))
    # EXTRACT's indices on the device are held for their pending check
    # (tier_defer_positions) past the point where the reference lets them
    # go: on a device that holds a later vector only once they have gone,
    # it is still made there (the pending checks read to make room).
    rc_r, out_r, _ = ref(EXTRACT_MEM)
    # (the INDEX of 60000 asks room for three times its 8-byte elements,
    # 1.44 MB; the held indices and descriptor take 80 KB)
    rc, out, err = dev(EXTRACT_MEM, ["-d", "stats"], env={"VINTERP_DEVICE_MEM": "1500000"})
    m = re.search(r"stats: device tier: instructions run there.*", err)
    check((rc, out) == (rc_r, out_r) and m is not None and " EXTRACT 1 (0)" in m.group(0) and " INDEX 3 " in m.group(0),
          "EXTRACT's held indices let go for a later vector's room on the device: %r" % (m and m.group(0)))
    # a device smaller than the data: what does not fit stays on the host
    rc_r, out_r, _ = ref(MEM)
    for dmem in (50000, 600000, 100000000):
        rc, out, err = dev(MEM, ["-d", "stats"], env={"VINTERP_DEVICE_MEM": str(dmem)})
        check((rc, out) == (rc_r, out_r), "VINTERP_DEVICE_MEM=%d: the reference's result (%d, %r)" % (dmem, rc, err[-300:]))
        m = re.search(r"stats: device tier: (\d+) instructions left on the host for want of device memory", err)
        ran = re.search(r"stats: device tier: (\d+) instructions on the device", err)
        if dmem == 50000:
            check(m is not None and ran is not None and int(ran.group(1)) == 0,
                  "VINTERP_DEVICE_MEM=%d: nothing fits, everything on the host: %r" % (dmem, m and m.group(0)))
        elif dmem == 600000:
            check(m is not None and ran is not None and int(ran.group(1)) > 0,
                  "VINTERP_DEVICE_MEM=%d: some on the device, some left on the host" % dmem)
        elif dmem == 100000000:
            check(m is None, "VINTERP_DEVICE_MEM=%d: everything fits" % dmem)


def test_trace():
    """-d trace=FILE: a Chrome trace (JSON) of the device tier's work."""
    path = os.path.join(tempfile.gettempdir(), "vinterp-trace-%d.json" % os.getpid())
    rc, out, err = dev(DOT, ["-d", "trace=" + path])
    try:
        with open(path) as f:
            events = json.load(f)
    except (OSError, ValueError) as e:
        events = []
        check(False, "trace: a JSON file: %s" % e)
    finally:
        if os.path.exists(path):
            os.unlink(path)
    cats = {}
    for e in events:
        cats[e.get("cat")] = cats.get(e.get("cat"), 0) + 1
    spans = [e for e in events if e.get("ph") == "X"]
    check(rc == 0 and all("ts" in e and "dur" in e and e["dur"] >= 0 for e in spans) and len(spans) > 0,
          "trace: complete events with a start and a duration")
    # INDEX and I_TO_F (one chain: vk_expr, run when the timer starts), *
    # with +_REDUCE (vk_expr_reduce)
    check(cats.get("device tier", 0) >= 4 and cats.get("primitive", 0) >= 2 and cats.get("allocation", 0) >= 1,
          "trace: the tier's instructions, its primitive calls and allocations: %r" % cats)
    prims = [e["name"] for e in spans if e.get("cat") == "primitive"]
    check("expr" in prims, "trace: the chain's one launch named: %r" % prims)
    names = [e["name"] for e in spans if e.get("cat") == "device tier"]
    check(any(n.startswith("+_REDUCE (line ") for n in names), "trace: instructions named with their line: %r" % names)
    rc, out, err = dev(DOT, ["-d", "trace=/nonexistent-dir/t.json"])
    check(rc == 1 and out == "" and len(err.splitlines()) == 1 and "trace=FILE" in err,
          "trace: an unwritable file is one line and exit 1: %r" % err)


# A fused block over device vectors whose MAKE_SEGDES (a host step of the
# block's plan) takes lengths computed in the block: x mod 5 over 0..N-1,
# each segment's length summed over its elements (DIST of the lengths,
# a segmented +_REDUCE), then the total.
META = ("FUNC MAIN1_1\n" + iota(0, N) + "START_TIMER\n" + "CONST INT 5\nCONST INT %d\nMAKE_SEGDES\nDIST INT\n%%\n"
        "COPY 1 0\nMAKE_SEGDES\nCOPY 2 0\nDIST INT\nCOPY 1 1\n+_REDUCE INT\nCOPY 1 0\nLENGTH INT\nMAKE_SEGDES\n"
        "+_REDUCE INT\nSTOP_TIMER\nPOP 1 3\nPOP 1 2\nRET\n" % N)


def test_fused():
    """Fused blocks on top of the device tier: a block's descriptor made
    from lengths on the device stays there (no read back, no upload)."""
    rc_r, out_r, _ = ref(META)
    cache = tempfile.mkdtemp(prefix="vinterp-dt-cache-")
    for tier, extra in (("eager", {}), ("sync", {"VINTERP_TIER_WORK": "0", "VINTERP_TIER_MIN_LEN": "0"})):
        env = dict(DEVICE, VINTERP_CACHE_DIR=cache)
        env.update(extra)
        rc, out, err = run(META, ["--backend=cuda", "--tier=" + tier, "-d", "stats"], env)
        check(rc_r == 0 and (rc, out.splitlines()[:-1]) == (0, out_r.splitlines()[:-1]),
              "meta --tier=%s: the reference's result (%d, %r)" % (tier, rc, err[-200:]))
        m = re.search(r"stats: device tier: of these, fused blocks' steps on metadata done there, not on the host: "
                      r"MAKE_SEGDES (\d+)", err)
        check(m is not None and int(m.group(1)) >= 1, "meta --tier=%s: the block's MAKE_SEGDES made on the device" % tier)
        check(region_ok(err), "meta --tier=%s: nothing long moved in the timed region: %r" %
              (tier, tallies(err).get("timed region")))
    shutil.rmtree(cache, ignore_errors=True)


# Fused blocks' own checks (a kernel's Int / by zero, a bad index) are
# read with the host's next wait, not at the block's end: the first error
# in program order is still the one reported (the block replayed on the
# reference from the inputs it held), and -m is the reference's (inputs
# held for a replay and freed by the reference count as freed).
SPLIT = "CONST BOOL T\nIF\nELSE\nENDIF\n"  # a block boundary the inliner keeps
DIV_BLOCK = "CONST INT 5\nCONST INT %d\nMAKE_SEGDES\nDIST INT\n" % N + iota(-7, N) + "/ INT\n"
FUSED_FAULTS = {
    "div": FAULTS["div"],
    "div_then_exit": FAULTS["div_then_exit"],
    "rand_then_div": FAULTS["rand_then_div"],
    "bpermute_then_exit": FAULTS["bpermute_then_exit"],
    # the fused block's failure is found after a later block ran and after
    # a host error: the block's error, at its line
    "div_split_div": "FUNC MAIN1_1\n" + DIV_BLOCK + SPLIT + iota(0, N) + "COPY 1 0\n* INT\nPOP 1 0\n" + SPLIT +
                     "CONST INT 1\nCONST INT 0\n/ INT\nRET\n",
}
# fused blocks: x = 0..N-1; its sum (x dies there); 3..N+2; 4..N+3 (two
# long vectors at once, made while the second block's record is still
# unread and x held for its replay); their sum, plus the first
FUSED_GOOD = ("FUNC MAIN1_1\n" + iota(0, N) + SPLIT + "CONST INT %d\nMAKE_SEGDES\n+_REDUCE INT\n" % N + SPLIT +
              iota(3, N) + SPLIT + iota(4, N) + SPLIT + "+ INT\nCONST INT %d\nMAKE_SEGDES\n+_REDUCE INT\n+ INT\nRET\n" % N)
EAGER = {"VINTERP_CUDA_HOST_MAX_ELEM": "0", "VINTERP_CUDA_HOST_MAX_SCAN": "0", "VINTERP_CUDA_HOST_MAX_LIB": "0",
         "VINTERP_TIER_AFTER": "off"}


def test_fused_faults():
    cache = tempfile.mkdtemp(prefix="vinterp-dt-cache-")
    env = dict(DEVICE, VINTERP_CACHE_DIR=cache, **EAGER)
    for name, src in sorted(FUSED_FAULTS.items()):
        rc_r, out_r, err_r = ref(src)
        rc, out, err = run(src, ["--backend=cuda", "--tier=eager"], env)
        check(rc_r != 0 and (rc, out, err) == (rc_r, out_r, err_r),
              "fused %s: the reference's failure: %r against %r" % (name, err, err_r))
    rc_r, out_r, _ = ref(FUSED_GOOD)
    rc, out, err = run(FUSED_GOOD, ["--backend=cuda", "--tier=eager", "-d", "stats"], env)
    check(rc_r == 0 and (rc, out) == (rc_r, out_r), "fused good: the reference's result (%d, %r)" % (rc, err[-300:]))
    m = re.search(r"stats: device tier: fused block runs' error records among them: (\d+), (\d+) of them read after "
                  r"the block's end", err)
    check(m is not None and int(m.group(2)) >= 1,
          "fused good: a block's record read after its end: %r" % (m and m.group(0)))
    m = re.search(r"stats: block runs whose kernels' checks were read with a later wait: (\d+)", err)
    check(m is not None and int(m.group(1)) >= 1, "fused good: the backend counts it: %r" % (m and m.group(0)))
    # -m: at the reference's smallest, the second block runs while the
    # first one's dead inputs are held (charged, they would not fit). Below
    # it the eager fused run may pass where the reference does not (its
    # first block holds less at its peak than the reference's INDEX): not
    # checked here.
    lo, hi = 1, 1 << 20
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ref(FUSED_GOOD, mid)[0] == 0:
            hi = mid
        else:
            lo = mid
    for mem in (hi, hi + 1, 2 * hi):
        r = ref(FUSED_GOOD, mem)
        d = run(FUSED_GOOD, ["--backend=cuda", "--tier=eager", "-m", str(mem)], env)
        check(r[0] == 0 and r == d, "fused good -m %d: the reference's result: %r against %r" % (mem, d[2], r[2]))
    shutil.rmtree(cache, ignore_errors=True)


# The model prices what generated kernels touch too: x = 0..N-1 as floats
# (a block of its own), x * x in the next (a MAP reading N floats, writing
# N), its sum in the third (reading N): at least 3 * N * 8 bytes, none of
# them the device tier's when every block is fused.
MODEL_FUSED = ("FUNC MAIN1_1\n" + iota(0, N) + "I_TO_F\n" + SPLIT + "COPY 1 0\n* FLOAT\n" + SPLIT +
               "CONST INT %d\nMAKE_SEGDES\n+_REDUCE FLOAT\nRET\n" % N)
MODEL = re.compile(r"^stats: model: whole run ([0-9.]+) s \(.* for (\d+) bytes the device tier's primitives and the "
                   r"generated kernels read and wrote\)$", re.M)


def test_model_bytes():
    rc_r, out_r, _ = ref(MODEL_FUSED)
    cache = tempfile.mkdtemp(prefix="vinterp-dt-cache-")
    env = dict(DEVICE, VINTERP_CACHE_DIR=cache, **EAGER)
    rc, out, err = run(MODEL_FUSED, ["--backend=cuda", "--tier=eager", "-d", "stats"], env)
    check(rc_r == 0 and (rc, out) == (rc_r, out_r), "model: the reference's result (%d, %r)" % (rc, err[-300:]))
    m = MODEL.search(err)
    check(m is not None and int(m.group(2)) >= 3 * N * 8,
          "model: the fused kernels' bytes counted, at least %d: %r" % (3 * N * 8, m and m.group(0)))
    # the device tier alone, one by one, counts the same instructions' bytes
    rc, out, err = dev(MODEL_FUSED, ["-d", "stats"], env={"VINTERP_DEVICE_CHAINS": "off"})
    m2 = MODEL.search(err)
    check(rc == 0 and out == out_r and m2 is not None and int(m2.group(2)) >= 3 * N * 8,
          "model: the device tier's bytes: %r" % (m2 and m2.group(0)))
    # with its chains, INDEX, I_TO_F, * and the sum one launch: the
    # elements made in registers, nothing read, the sum written (8 bytes)
    rc, out, err = dev(MODEL_FUSED, ["-d", "stats"])
    m3 = MODEL.search(err)
    check(rc == 0 and out == out_r and m3 is not None and int(m3.group(2)) == 8,
          "model: the device tier's bytes with its chains: %r" % (m3 and m3.group(0)))
    shutil.rmtree(cache, ignore_errors=True)


# Deferred elementwise instructions (runtime/fused/cuda_chain.h), timed:
# x = float(0..N-1); y = x * 2.0 (x still on the stack: a new vector);
# z = x + y (over y); w = z * z (a new vector, z held twice); the sum of w.
# I_TO_F, *, + and * are one chain, run in one launch with the +_REDUCE
# (x, y and z are gone by then, w the sum's alone: nothing written) where
# one by one there are five.
CHAIN = ("FUNC MAIN1_1\n" + iota(0, N) + "START_TIMER\nI_TO_F\nCOPY 1 0\nCONST FLOAT 2.0\nCONST INT %d\n"
         "MAKE_SEGDES\nDIST FLOAT\n* FLOAT\n+ FLOAT\nCOPY 1 0\n* FLOAT\nCONST INT %d\nMAKE_SEGDES\n"
         "+_REDUCE FLOAT\nSTOP_TIMER\nPOP 1 0\nRET\n" % (N, N))
CHAINS = re.compile(r"^stats: device tier: (\d+) instructions deferred into chains, (\d+) chains taken "
                    r"into another, (\d+) chains run \(one launch each\) writing (\d+) vectors, (\d+) of them with a "
                    r"reduction, (\d+) dropped unrun, (\d+) cut at the kernel's bounds; of the deferred, (\d+) DISTs, (\d+) INDEXes and (\d+) gathers \(BPERMUTE\), (\d+) of them checked with another's record$", re.M)


# The timers end the chains: I_TO_F deferred before START_TIMER runs before
# the clock starts; x * x deferred inside the region runs before it stops
# (and the device is waited for there), so the region holds that launch
# and the sum after it reads the product (no reduction in the chain).
TIMERS = ("FUNC MAIN1_1\n" + iota(0, N) + "I_TO_F\nSTART_TIMER\nCOPY 1 0\n* FLOAT\nSTOP_TIMER\nCPOP 1 1\n"
          "CONST INT %d\nMAKE_SEGDES\n+_REDUCE FLOAT\nRET\n" % N)


def test_chains():
    rc_r, out_r, _ = ref(TIMERS)
    rc, out, err = dev(TIMERS, ["-d", "stats"])
    m = CHAINS.search(err)
    got = m and [int(g) for g in m.groups()]
    reg = tallies(err).get("timed region")
    # (the output: the region's seconds, then the sum)
    same = rc_r == 0 and rc == 0 and out.splitlines()[1:] == out_r.splitlines()[1:] and len(out_r.splitlines()) == 2
    # (the iota's INDEX is deferred too: one chain with I_TO_F)
    check(same and got == [3, 0, 2, 2, 0, 0, 0, 0, 1, 0, 0] and reg and reg[:2] == [1, 1],
          "timers: a chain before the region runs before it, one inside it inside it: %r, region %r" % (got, reg))

    rc_r, out_r, _ = ref(CHAIN)
    rc, out, err = dev(CHAIN, ["-d", "stats"])
    check(rc_r == 0 and (rc, out) == (rc_r, out_r), "chain: the reference's answer (%r, %r)" % (out, out_r))
    m = CHAINS.search(err)
    got = m and [int(g) for g in m.groups()]
    # (and the iota's INDEX, a chain of its own run when the timer starts:
    # it writes x)
    check(got == [5, 0, 2, 1, 1, 0, 0, 0, 1, 0, 0], "chain: 4 instructions deferred, one chain run with the sum, "
          "writing nothing: %r" % got)
    on = tallies(err).get("timed region")
    rc, out, err = dev(CHAIN, ["-d", "stats"], env={"VINTERP_DEVICE_CHAINS": "off"})
    off = tallies(err).get("timed region")
    check(rc == 0 and out == out_r and on and off and off[0] == on[0] + 4,
          "chain: four launches fewer than one by one: %r against %r" % (on, off))
    bytes_re = re.compile(r"^stats: model: .* for (\d+) bytes the device tier's primitives", re.M)
    mb_on = bytes_re.search(dev(CHAIN, ["-d", "stats"])[2])
    mb_off = bytes_re.search(err)
    # one by one: I_TO_F 12N, * 16N (the 2.0 a scalar), + 24N, * 24N (z
    # read as both operands), +_REDUCE 8N; the chain and the sum read the
    # Ints once: 4N
    check(mb_on and mb_off and int(mb_off.group(1)) - int(mb_on.group(1)) == 80 * N,
          "chain: 80 bytes an element fewer read and written: %r, %r" %
          (mb_on and mb_on.group(1), mb_off and mb_off.group(1)))
    # a vector a chain writes that is still needed: the chain writes it too
    both = CHAIN.replace("+_REDUCE FLOAT\nSTOP_TIMER\nPOP 1 0\n",
                         "+_REDUCE FLOAT\nSTOP_TIMER\nPOP 1 0\nPOP 1 0\n").replace(
                         "+ FLOAT\nCOPY 1 0\n", "+ FLOAT\nCOPY 1 0\nCOPY 1 0\nCPOP 1 2\n")
    rc_r, out_r, _ = ref(both)
    rc, out, err = dev(both, ["-d", "stats"])
    m = CHAINS.search(err)
    got = m and [int(g) for g in m.groups()]
    check(rc_r == 0 and (rc, out) == (rc_r, out_r) and got == [5, 0, 2, 2, 1, 0, 0, 0, 1, 0, 0],
          "chain: z kept below the sum: the one launch writes z and sums w: %r %r" % (got, err[-300:]))


# Chains wanted at the same time run in one launch (cuda_chain.c
# run_together): A = 2 i and B = (N-1) - i, two chains made apart, are
# PERMUTE's data and index, which reads both: one launch for the two, then
# the scatter. WIDE: eleven vectors of one chain kept (more outputs than
# the kernel took before: 8), each summed after.
TOGETHER = ("FUNC MAIN1_1\n" + iota(0, N) + dist(2, N) + "* INT\n" + dist(N - 1, N) + iota(0, N) + "- INT\n" +
            "CONST INT %d\nMAKE_SEGDES\nPERMUTE INT\nRET\n" % N)
WIDE = ("FUNC MAIN1_1\n" + iota(0, N) + "".join("COPY 1 0\n" + dist(k, N) + "* INT\nCPOP 1 1\n" for k in range(2, 13)) +
        "POP 1 0\n" + "".join("CONST INT %d\nMAKE_SEGDES\n+_REDUCE INT\n" % N + ("CPOP 1 %d\n" % k if k < 11 else "")
                               for k in range(1, 12)) + "RET\n")
TOGETHER_RE = re.compile(r"^stats: device tier: chains wanted at the same time: (\d+) run in another's launch$", re.M)


def test_chains_together():
    rc_r, out_r, _ = ref(TOGETHER)
    rc, out, err = dev(TOGETHER, ["-d", "stats"])
    m, c = TOGETHER_RE.search(err), CHAINS.search(err)
    whole = tallies(err).get("whole run")
    check(rc_r == 0 and (rc, out) == (rc_r, out_r) and m is not None and m.group(1) == "1" and c is not None and
          c.group(3) == "1" and whole and whole[0] == 2,
          "two chains read by one PERMUTE: the reference's answer, one launch for both, then the scatter: %r, %r, %r" %
          (m and m.group(0), c and c.groups(), whole))
    rc_r, out_r, _ = ref(WIDE)
    rc, out, err = dev(WIDE, ["-d", "stats"])
    c = CHAINS.search(err)
    # (the last summed is never written: the sum is its last reader)
    check(rc_r == 0 and (rc, out) == (rc_r, out_r) and c is not None and c.group(7) == "0" and
          c.group(3) == "1" and c.group(4) == "10", "eleven outputs of one chain: the reference's answer, one run "
          "writing ten, none cut at the kernel's bounds: %r" % (c and c.groups(),))


# PERMUTEs at one index deferred into a scatter group (cuda_chain.h
# chain_scatter): an Int vector (twice), a Float one pending in a chain
# and a Bool one, permuted through one index (IDX) over one descriptor
# (DESC) one after another, each result printed: one launch for the four.
def tuple_prog(idx, desc, tail="RET\n"):
    step = "CPOP 1 %d\nCOPY 2 1\nPERMUTE %s\nCPOP 2 1\n"  # ... x r.. idx sd -> ... r.. r idx sd
    return ("FUNC MAIN1_1\n" + iota(0, N) + "COPY 1 0\n" + iota(0, N) + "I_TO_F\n" + iota(0, N) + dist(7, N) +
            "> INT\n" + idx + desc + step % (2, "BOOL") + step % (3, "FLOAT") + step % (4, "INT") + step % (5, "INT") +
            "POP 2 0\n" + tail)


TUPLE_ONE = tuple_prog(dist(N - 1, N) + iota(0, N) + "- INT\n", "CONST INT %d\nMAKE_SEGDES\n" % N)
# within each of 50 segments of 400, j to 399 - j
TUPLE_SEG = tuple_prog(dist(399, 50) + dist(-1, 50) + dist(400, 50) + "MAKE_SEGDES\nINDEX\n",
                       dist(400, 50) + "MAKE_SEGDES\n")
GROUP_RE = re.compile(r"^stats: device tier: scatters at one index \(PERMUTE, DPERMUTE into a fill\): (\d+) "
                      r"deferred, (\d+) of them joining another's launch; (\d+) launches$", re.M)
# DPERMUTEs into fills at one index (the same groups, kernels.h
# vk_scatter_fill_many): an Int, a Float (pending) and a Bool vector of NS
# elements written reversed into fills (0) of M, each printed: one launch
# for the three up to 1 024 source elements (every vector on the device),
# two above (the fills, then the scatters).
def dperm_prog(ns, m, idx=None):
    def step(depth, t, zero):
        fill = "CONST %s %s\nCONST INT %d\nMAKE_SEGDES\nDIST %s\n" % (t, zero, m, t)
        return "CPOP 1 %d\nCOPY 1 3\n" % depth + fill + "COPY 2 3\nDPERMUTE %s\nCPOP 3 1\n" % t
    return ("FUNC MAIN1_1\n" + iota(0, ns) + iota(0, ns) + "I_TO_F\n" + iota(0, ns) + dist(7, ns) + "> INT\n" +
            (idx or dist(ns - 1, ns) + iota(0, ns) + "- INT\n") + "CONST INT %d\nMAKE_SEGDES\n" % ns +
            "CONST INT %d\nMAKE_SEGDES\n" % m + step(3, "BOOL", "F") + step(4, "FLOAT", "0.5") +
            step(5, "INT", "-3") + "POP 3 0\nRET\n")


FAULTS.update({
    # i + 1 into fills of N: index N at the last element
    "dpermute_group": dperm_prog(N, N, iota(1, N)),
    # i + 1: index N at the last element (the first PERMUTE's line)
    "permute_group": tuple_prog(iota(1, N), "CONST INT %d\nMAKE_SEGDES\n" % N),
    # the same with the results dropped at once, the program going on
    "permute_group_dropped": tuple_prog(iota(1, N), "CONST INT %d\nMAKE_SEGDES\n" % N,
                                        "POP 4 0\n" + iota(0, N) + "CONST INT %d\nMAKE_SEGDES\n+_REDUCE INT\nRET\n"
                                        % N),
})


def test_dpermute_group():
    for ns, m, env, launches in ((1000, 1500, {"VINTERP_DEVICE_MIN": "1"}, "1"), (N, N + 3000, {}, "1")):
        src = dperm_prog(ns, m)
        rc_r, out_r, _ = ref(src)
        rc, out, err = dev(src, ["-d", "stats"], env=env)
        g = GROUP_RE.search(err)
        check(rc_r == 0 and (rc, out) == (rc_r, out_r) and len(out_r.splitlines()) == 3 and g is not None and
              g.groups() == ("3", "2", launches), "three DPERMUTEs into fills at one index, %d into %d: the "
              "reference's answer, one group: %r" % (ns, m, g and g.group(0)))


def test_permute_group():
    for name, src in (("one segment", TUPLE_ONE), ("50 segments", TUPLE_SEG)):
        rc_r, out_r, _ = ref(src)
        rc, out, err = dev(src, ["-d", "stats"])
        m = GROUP_RE.search(err)
        check(rc_r == 0 and (rc, out) == (rc_r, out_r) and len(out_r.splitlines()) == 4 and m is not None and
              m.groups() == ("4", "3", "1"), "four PERMUTEs at one index over %s: the reference's answer, one "
              "launch: %r" % (name, m and m.group(0)))
        rc2, out2, err2 = dev(src, ["-d", "stats"], env={"VINTERP_DEVICE_CHAINS": "off"})
        m2 = GROUP_RE.search(err2)
        check((rc2, out2) == (rc_r, out_r) and m2 is not None and m2.groups() == ("0", "0", "0"),
              "four PERMUTEs over %s without the chains: one by one: %r" % (name, m2 and m2.group(0)))


# EXTRACTs of one element left on the device (cuda_chain.h chain_element):
# elements 5, 7 and 11 of a Float vector (pending in a chain), one EXTRACT
# each, then e5 + e7 * e11 printed: the three read in one launch and one
# wait (one by one, a wait each).
def extract1(k, depth):
    return "COPY 1 %d\nCONST INT %d\nCONST INT %d\nMAKE_SEGDES\nEXTRACT FLOAT\n" % (depth, k, N)


ELEMENTS = ("FUNC MAIN1_1\n" + iota(0, N) + "I_TO_F\n" + extract1(5, 0) + extract1(7, 1) + extract1(11, 2) +
            "* FLOAT\n+ FLOAT\nCPOP 1 1\nPOP 1 0\nRET\n")
FAULTS["extract_one"] = ELEMENTS.replace("CONST INT 11\n", "CONST INT %d\n" % N)


def test_elements():
    rc_r, out_r, _ = ref(ELEMENTS)
    for env, syncs in (({}, 1), ({"VINTERP_DEVICE_CHAINS": "off"}, 3)):
        rc, out, err = dev(ELEMENTS, ["-d", "stats"], env=env)
        whole = tallies(err).get("whole run")
        check(rc_r == 0 and (rc, out) == (rc_r, out_r) and whole is not None and whole[1] == syncs,
              "three EXTRACTs of one element %s: the reference's answer, %d wait(s): %r %r" %
              ("left on the device" if syncs == 1 else "one by one", syncs, whole, out))


# Gathers deferred into chains (cuda_chain.h chain_gather). ONE: one
# segment of N; SEG: 50 segments of 400 (a host descriptor, uploaded).
ONE = "CONST INT %d\nMAKE_SEGDES\nCONST INT %d\nMAKE_SEGDES\n" % (N, N)
SEG = dist(400, 50) + "MAKE_SEGDES\n" + dist(400, 50) + "MAKE_SEGDES\n"
# (N-1) - i, pending in a chain
REVERSE = dist(N - 1, N) + iota(0, N) + "- INT\n"
# three gathers of three vectors (Int, Float, Bool; the last two pending
# when gathered) at one index, then summed: one chain, one record
SIBLINGS = ("FUNC MAIN1_1\n" + REVERSE + iota(0, N) + "COPY 1 1\n" + ONE + "BPERMUTE INT\n" +
            iota(0, N) + "I_TO_F\nCOPY 1 2\n" + ONE + "BPERMUTE FLOAT\n" +
            iota(0, N) + dist(7, N) + "> INT\nCOPY 1 3\n" + ONE + "BPERMUTE BOOL\n" +
            "B_TO_I\nCPOP 1 2\n* INT\nI_TO_F\n+ FLOAT\nCONST INT %d\nMAKE_SEGDES\n+_REDUCE FLOAT\n"
            "CPOP 1 1\nPOP 1 0\nRET\n" % N)
# within each of 50 segments of 400, element j from 399 - j of the
# segment, as a Float; printed whole
SEG_REVERSE = dist(399, 50) + dist(-1, 50) + dist(400, 50) + "MAKE_SEGDES\nINDEX\n"
SEGMENTED = "FUNC MAIN1_1\n" + iota(0, N) + "I_TO_F\n" + SEG_REVERSE + SEG + "BPERMUTE FLOAT\nRET\n"
FAULTS.update({
    # two gathers at one bad index (i + 1): the first's line
    "bpermute_siblings": "FUNC MAIN1_1\n" + dist(1, N) + iota(0, N) + "+ INT\n" + iota(0, N) + "COPY 1 1\n" + ONE +
                         "BPERMUTE INT\n" + iota(0, N) + "I_TO_F\nCOPY 1 2\n" + ONE + "BPERMUTE FLOAT\nRET\n",
    # a bad index in segment 3 of 50 (index 400 at its first element)
    "bpermute_segmented": "FUNC MAIN1_1\n" + iota(0, N) + "I_TO_F\n" + SEG_REVERSE + iota(0, N) + dist(1200, N) +
                          "= INT\nB_TO_I\n+ INT\n" + SEG + "BPERMUTE FLOAT\nRET\n",
    # the gathered vector dropped at once, the program going on: still checked
    "bpermute_dropped_pending": "FUNC MAIN1_1\n" + iota(0, N) + dist(2, N) + iota(0, N) + "+ INT\n" + ONE +
                                "BPERMUTE INT\nPOP 1 0\n" + iota(0, N) + "CONST INT %d\nMAKE_SEGDES\n"
                                "+_REDUCE INT\nRET\n" % N,
})


# INDEX deferred into a chain (cuda_chain.h chain_index): over 50
# segments of 400, its start 7 * k (a short vector: uploaded, read per
# segment) and its stride a DIST of -3 (a fill: one value read for every
# segment), then + the iota of N (a chain of its own, taken into the
# INDEX's), the sum of the result, the result printed whole.
def index_prog(start):
    return ("FUNC MAIN1_1\n" + start + dist(-3, 50) + dist(400, 50) + "MAKE_SEGDES\nINDEX\n" + iota(0, N) +
            "+ INT\nCOPY 1 0\nCONST INT %d\nMAKE_SEGDES\n+_REDUCE INT\nCPOP 1 1\nRET\n" % N)


def test_index_chains():
    for name, start in (("start a vector", iota(0, 50) + dist(7, 50) + "* INT\n"), ("start a fill", dist(5, 50))):
        prog = index_prog(start)
        rc_r, out_r, _ = ref(prog)
        for lazy in ("1", "1000000"):  # every DIST a fill; none (the short ones host vectors)
            env = {"VINTERP_LAZY_MIN": lazy}
            rc, out, err = dev(prog, ["-d", "stats"], env=env)
            m = CHAINS.search(err)
            got = m and [int(g) for g in m.groups()]
            on = tallies(err).get("whole run")
            rc2, out2, err2 = dev(prog, ["-d", "stats"], env=dict(env, VINTERP_DEVICE_CHAINS="off"))
            off = tallies(err2).get("whole run")
            # chained: the two INDEXes and + in one chain with the sum:
            # one launch; one by one two INDEX, + and the sum (the
            # segmented descriptor's shape, LENGTHS and such alike in both)
            check(rc_r == 0 and (rc, out) == (rc_r, out_r) and (rc2, out2) == (rc_r, out_r) and got is not None and
                  got[8] == 2 and on and off and on[0] == off[0] - 3,
                  "INDEX in a chain, %s, VINTERP_LAZY_MIN=%s: the reference's answer, both INDEXes deferred, "
                  "three launches fewer: %r, %r against %r" % (name, lazy, got, on, off))


# IFs taken ahead of their condition (cuda_guard.h): NESL's bounds check,
# any(i < 0 or i >= LIMIT) over the iota of N (on the device: an
# OR_REDUCE), guarding a THEN branch that writes the message and EXITs;
# the ELSE branch goes on with AFTER, then the program prints the sum of
# the iota. LIMIT N: the check passes; N - 1: it fails.
PRINT_STRING = "FUNC PS_1\nPOP 1 1\nWRITE CHAR\nPOP 2 0\nCONST BOOL T\nRET\n"


def guard_prog(limit, after="", pops=0):
    keep = "".join("CONST INT %d\n" % k for k in range(pops))  # values the error branch pops
    return ("FUNC MAIN1_1\n" + keep + iota(0, N) + "COPY 1 0\n" + dist(0, N) + "< INT\n" + "COPY 1 1\n" +
            dist(limit, N) + ">= INT\nOR BOOL\nCONST INT %d\nMAKE_SEGDES\nOR_REDUCE BOOL\n" % N + "IF\n" +
            "".join("POP 1 %d\n" % (pops - 1 - k) for k in range(pops)) +
            "CONST INT 22\nMAKE_SEGDES\nCONST CHAR \"RUNTIME ERROR: bounds\n\"\nCALL PS_1\nPOP 1 0\n"
            "CONST INT 0\nEXIT\nPOP 1 0\nCONST BOOL T\nELSE\nCONST BOOL F\nENDIF\nPOP 1 0\n" + after +
            "CONST INT %d\nMAKE_SEGDES\n+_REDUCE INT\nRET\n" % N + PRINT_STRING)


GUARD_RE = re.compile(r"^stats: device tier: IFs whose THEN branch is a runtime error exit taken ahead of their "
                      r"condition \(read with a later wait\): (\d+)$", re.M)
# what the ELSE branch may do before the failed check is read: write to
# stderr, fail a gather's check on the device, fail an EXTRACT on the host
GUARD_AFTER = {
    "": "",
    "a WRITE": "CONST INT 7\nWRITE INT\nPOP 2 0\n",
    "a bad gather": "COPY 1 0\n" + iota(1, N) + ONE + "BPERMUTE INT\nPOP 1 0\n",
    "a bad EXTRACT": "COPY 1 0\nCONST INT %d\nCONST INT %d\nMAKE_SEGDES\nEXTRACT INT\nPOP 1 0\n" % (N + 5, N),
}


def test_guards():
    for limit in (N, N - 1):
        for what, after in sorted(GUARD_AFTER.items()):
            for pops in (0, 3):
                src = guard_prog(limit, after, pops)
                want = ref(src)
                m = GUARD_RE.search(dev(src, ["-d", "stats"])[2])
                name = "a bounds check that %s, then %s, %d values popped" % (
                    "passes" if limit == N else "fails", what or "nothing", pops)
                # (-d stats is printed at a normal end)
                check(dev(src) == want and (limit != N or want[0] != 0 or m is not None and m.group(1) == "1"),
                      "%s: the reference's exit status, stdout and stderr, the IF taken ahead: %r against %r" %
                      (name, dev(src), want))
    src = guard_prog(N)
    got = dev(src, ["-d", "stats"], env={"VINTERP_DEVICE_GUARDS": "off"})
    m = GUARD_RE.search(got[2])
    check(got[1] == ref(src)[1] and m is not None and m.group(1) == "0", "VINTERP_DEVICE_GUARDS=off: none taken")


# A gather pending (its chain's record among the tier's checks, read at
# the host's next wait) runs in the launch of a reduction of another chain
# of its length that an IF reads (cuda_chain.c take_kin): the iota, the
# reduction with the gather, the gathered vector's sum: three launches
# (four if the gather ran alone before the IF's wait).
GATHER_KIN = ("FUNC MAIN1_1\n" + iota(0, N) + REVERSE + "COPY 1 0\nCPOP 1 2\nCPOP 1 1\n" + ONE + "BPERMUTE INT\n" +
              iota(0, N) + dist(7, N) + "> INT\nCONST INT %d\nMAKE_SEGDES\nOR_REDUCE BOOL\nIF\nELSE\nENDIF\n" % N +
              "CONST INT %d\nMAKE_SEGDES\n+_REDUCE INT\nCPOP 1 1\nPOP 1 0\nRET\n" % N)


def test_gather_kin():
    rc_r, out_r, _ = ref(GATHER_KIN)
    rc, out, err = dev(GATHER_KIN, ["-d", "stats"])
    whole = tallies(err).get("whole run")
    m = TOGETHER_RE.search(err)
    check(rc_r == 0 and (rc, out) == (rc_r, out_r) and whole is not None and whole[0] == 3 and m is not None and
          m.group(1) == "1", "a pending gather in a reduction's launch: the reference's answer, three launches: %r %r" %
          (whole, m and m.group(0)))


def test_gathers():
    rc_r, out_r, _ = ref(SIBLINGS)
    rc, out, err = dev(SIBLINGS, ["-d", "stats"])
    m = CHAINS.search(err)
    got = m and [int(g) for g in m.groups()]
    check(rc_r == 0 and (rc, out) == (rc_r, out_r), "gathers: the reference's answer (%r, %r)" % (out, out_r))
    # deferred: 4 INDEX, - , I_TO_F, >, three gathers, B_TO_I, *, I_TO_F,
    # +; the index's chain takes the gathers (the three chains of the
    # vectors gathered run first: a gather reads a whole vector); one run
    # with the sum
    check(got is not None and got[-3:] == [4, 3, 2] and got[2] == 4 and got[4] == 1,
          "gathers: three deferred, two sharing the first's record, four chains run, one with the sum: %r" % got)
    on = tallies(err).get("timed region") or tallies(err).get("whole run")
    rc2, out2, err2 = dev(SIBLINGS, ["-d", "stats"], env={"VINTERP_DEVICE_CHAINS": "off"})
    off = tallies(err2).get("whole run")
    # kernels (kernels/vk_count.h): one by one, 4 INDEX, 3 + 4
    # elementwise, 3 gathers (each with its record), the sum of 20000
    # (chunked, its partials folded by its last block: one) = 15; chained,
    # the chains of the three vectors gathered (an INDEX each, with I_TO_F
    # and with > on the second and third: run when gathered), the rest
    # (the index's INDEX and -, the gathers, ...) one chain reduced with
    # its record, in one kernel = 4
    check(rc2 == 0 and out2 == out_r and on and off and on[0] == off[0] - 11,
          "gathers: eleven launches fewer than one by one: %r against %r" % (on, off))
    rc_r, out_r, _ = ref(SEGMENTED)
    rc, out, err = dev(SEGMENTED, ["-d", "stats"])
    m = CHAINS.search(err)
    got = m and [int(g) for g in m.groups()]
    check(rc_r == 0 and (rc, out) == (rc_r, out_r) and got is not None and got[-2:] == [1, 0],
          "gathers: 50 segments, the reference's answer, deferred: %r" % got)


# PACK of 50 segments of 400 (every third element kept): the new
# lengths read back first, their sum the result's length; one wait
PACK50 = ("FUNC MAIN1_1\n" + iota(0, N) + iota(0, N) + dist(3, N) + "%%\nCONST INT 0\nCONST INT %d\nMAKE_SEGDES\n"
          "DIST INT\n= INT\n" % N + dist(400, 50) + "MAKE_SEGDES\nPACK INT\nRET\n")


# DPERMUTE into a lazy fill (DIST of 7 over N, unwritten): the reversed
# iota scattered over it. The result is the fill's value written by one
# launch into the result itself, not a device copy of the fill made and
# then copied (a copy on the device: none in the timed region now, one
# before).
DPERM_FILL = ("FUNC MAIN1_1\n" + iota(0, N) + "CONST INT %d\nCONST INT -1\nCONST INT %d\nMAKE_SEGDES\nINDEX\n" % (N - 1, N) +
              "CONST INT 7\nCONST INT %d\nMAKE_SEGDES\nDIST INT\n" % N +
              "CONST INT %d\nMAKE_SEGDES\nCONST INT %d\nMAKE_SEGDES\nSTART_TIMER\nDPERMUTE INT\nSTOP_TIMER\n"
              "RET\n" % (N, N))
# ... and 500 elements scattered into it (every 40th): one launch in all
# (vk_scatter_fill: the fill over the grid, the scatter by its last block)
DPERM_FILL_SHORT = ("FUNC MAIN1_1\n" + iota(0, 500) + "CONST INT 0\nCONST INT 40\nCONST INT 500\nMAKE_SEGDES\nINDEX\n" +
                    "CONST INT 7\nCONST INT %d\nMAKE_SEGDES\nDIST INT\n" % N +
                    "CONST INT 500\nMAKE_SEGDES\nCONST INT %d\nMAKE_SEGDES\nSTART_TIMER\nDPERMUTE INT\nSTOP_TIMER\n"
                    "RET\n" % N)
COPIES = re.compile(r"^stats: model: .*a copy or clear on the device, of which (\d+) in the timed region and (\d+) in "
                    r"the run", re.M)


def test_dpermute_fill():
    rc_r, out_r, _ = ref(DPERM_FILL)
    rc, out, err = dev(DPERM_FILL, ["-d", "stats"])
    m = COPIES.search(err)
    fills = re.search(r"^stats: cuda: lazy fills filled on the device: (\d+)$", err, re.M)
    vec = lambda o: [line for line in o.splitlines() if line.count(" ") > 2]  # the result, not the seconds
    check(rc_r == 0 and rc == 0 and vec(out) == vec(out_r) and len(vec(out_r)) == 1 and m is not None and
          m.group(1) == "0" and fills is not None and
          fills.group(1) == "0", "DPERMUTE into a lazy fill: the reference's answer, no copy, no fill made on the "
          "device: %r, %r" % (m and m.group(0)[-60:], fills and fills.group(0)))
    rc_r, out_r, _ = ref(DPERM_FILL_SHORT)
    rc, out, err = dev(DPERM_FILL_SHORT, ["-d", "stats"])
    reg = tallies(err).get("timed region")
    check(rc_r == 0 and rc == 0 and vec(out) == vec(out_r) and len(vec(out_r)) == 1 and reg and reg[0] == 1,
          "DPERMUTE of 500 elements into a lazy fill: the reference's answer, one launch: %r" % reg)


def test_pack():
    rc_r, out_r, _ = ref(PACK50)
    rc, out, err = dev(PACK50, ["-d", "stats"])
    m = re.search(r"instructions run there \(and the host's waits in them\):.* PACK (\d+) \((\d+)\)", err)
    check(rc_r == 0 and (rc, out) == (rc_r, out_r) and m is not None and m.groups() == ("1", "1"),
          "PACK of 50 segments: the reference's answer, one wait: %r" % (m and m.group(0)[-40:]))


# N segments of lengths i % 3 (made on the device), their LENGTHS summed;
# TAKE: every value only the stack's, so MAKE_SEGDES and LENGTHS take their
# argument's storage; else each argument copied first and used after (the
# descriptor's last LENGTHS takes it).
def lengths_prog(take):
    keep = "" if take else "COPY 1 0\n"
    red = "CONST INT %d\nMAKE_SEGDES\n+_REDUCE INT\n" % N
    tail = "" if take else "CPOP 1 2\n" + red + "CPOP 1 2\nLENGTHS\n" + red  # both used after; the last LENGTHS takes
    return ("FUNC MAIN1_1\n" + iota(0, N) + dist(3, N) + "%\n" + keep + "MAKE_SEGDES\n" + keep + "LENGTHS\n" +
            "CONST INT %d\nMAKE_SEGDES\n+_REDUCE INT\n" % N + tail + "RET\n")


def test_lengths_storage():
    for take in (1, 0):
        src = lengths_prog(take)
        rc_r, out_r, _ = ref(src)
        rc, out, err = dev(src, ["-d", "stats"])
        m = re.search(r"results written in place \((\d+) of them LENGTHS and MAKE_SEGDES", err)
        want = "2" if take else "1"
        check(rc_r == 0 and (rc, out) == (rc_r, out_r) and m is not None and m.group(1) == want,
              "LENGTHS and MAKE_SEGDES over %s: the reference's answer, %s taken: %r %r" %
              ("values only the stack holds" if take else "copied values", want, m and m.group(1), (out, out_r)))
        if not take:  # the first LENGTHS, of a descriptor held after it: a chain, summed in the reduction's launch
            rc2, out2, err2 = dev(src, ["-d", "stats"], env={"VINTERP_DEVICE_CHAINS": "off"})
            on, off = COPIES.search(err), COPIES.search(err2)
            lon, loff = tallies(err).get("whole run"), tallies(err2).get("whole run")
            check((rc2, out2) == (rc_r, out_r) and on is not None and off is not None and lon and loff and
                  int(on.group(2)) == int(off.group(2)) - 1 and lon[0] == loff[0],
                  "LENGTHS of a held descriptor deferred: one copy fewer than one by one, as many launches: %r, %r" %
                  (on and on.group(2), off and off.group(2)))


# Short work over a long device vector, as radix's loops do it (issue 29):
# 0..19999 as 200 segments of 100; EXTRACT of element 7 of each (200
# indices on the host: a short result, kept on the device), + 1 (a chain
# over it), then either REPLACE of the sums at the same indices (the
# chain writes them into the vector as it runs: no scatter of its own, no
# read back) or a host +_REDUCE of them (the chain runs on the host: the
# one wait for the gathered values, no launch). The 200-element fills are
# lazy (VINTERP_LAZY_MIN=100).
SD200 = dist(100, 200) + "MAKE_SEGDES\n"
BUMP = ("FUNC MAIN1_1\n" + iota(0, 20000) + "START_TIMER\nCOPY 1 0\n" + dist(7, 200) + SD200 + "EXTRACT INT\n" +
        dist(1, 200) + "+ INT\n")
SHORT_PUT = (BUMP + dist(7, 200) + "CPOP 1 1\n" + SD200 + "REPLACE INT\nSTOP_TIMER\nCPOP 1 1\n"
             "CONST INT 20000\nMAKE_SEGDES\n+_REDUCE INT\nRET\n")
SHORT_HOST = BUMP + "CONST INT 200\nMAKE_SEGDES\n+_REDUCE INT\nSTOP_TIMER\nCPOP 1 2\nPOP 1 0\nRET\n"
SHORT_STATS = re.compile(r"^stats: device tier: short chains: (\d+) run on the host \(no launch: the host wanted "
                         r"their values\), (\d+) written into a REPLACE's vector as they ran$", re.M)


def test_short_work():
    lazy = {"VINTERP_LAZY_MIN": "100"}
    for name, src, want in (("put", SHORT_PUT, (0, 1)), ("host", SHORT_HOST, (1, 0))):
        rc_r, out_r, _ = run(src, ["--backend=ref"], lazy)
        rc, out, err = dev(src, ["-d", "stats"], env=lazy)
        m = SHORT_STATS.search(err)
        got = m and (int(m.group(1)), int(m.group(2)))
        reg = tallies(err).get("timed region")
        timer = 0 if name == "put" else 1  # the timer's line (its seconds differ)

        def value(o):
            lines = o.splitlines()
            return lines[:timer] + lines[timer + 1:] if len(lines) == 2 else None
        same = rc_r == 0 and rc == 0 and value(out) == value(out_r) and value(out_r) is not None
        # put: the gather and the chain with the scatter, the timer's wait;
        # host: the gather, the wait reading it (and the timer's)
        check(same and got == want and reg and reg[:2] == ([2, 1] if name == "put" else [1, 2]),
              "short work (%s): the reference's answer, chains %r, timed region %r (%r, %r)" %
              (name, got, reg, out[-200:], out_r[-200:]))
        # the REPLACE's positions are the EXTRACT's: kept on the device,
        # not uploaded again (200 positions of 8 bytes go up once)
        kept = re.search(r"^stats: device tier: EXTRACT's and REPLACE's positions made on the host: (\d+) times "
                         r"the same as ones kept on the device \((\d+) bytes not uploaded\)$", err, re.M)
        check(kept is not None and kept.groups() == (("1", "1600") if name == "put" else ("0", "0")) and reg and
              reg[2] == 1600, "short work (%s): positions uploaded once: %r, region %r" %
              (name, kept and kept.groups(), reg))
        # one by one (no chains): the host reads the gathered values and
        # adds; the REPLACE uploads the sums (one wait more, no fewer launches)
        rc, out, err = dev(src, ["-d", "stats"], env=dict(lazy, VINTERP_DEVICE_CHAINS="off"))
        off = tallies(err).get("timed region")
        check(rc == 0 and value(out) == value(out_r) and off and reg and off[1] == 2 and
              off[0] == reg[0], "short work (%s) without chains: %r against %r" % (name, off, reg))
    # a bad index for the REPLACE whose values are pending (100, past
    # segments of 100): the reference's message, line and status
    bad = (BUMP + dist(100, 200) + "CPOP 1 1\n" + SD200 + "REPLACE INT\nSTOP_TIMER\nCPOP 1 1\n"
           "CONST INT 20000\nMAKE_SEGDES\n+_REDUCE INT\nRET\n")
    rc_r, out_r, err_r = run(bad, ["--backend=ref"], lazy)
    rc, out, err = dev(bad, env=lazy)
    check(rc_r != 0 and "vinterp:" in err_r and (rc, out, err) == (rc_r, out_r, err_r),
          "short work: a bad REPLACE index over pending values, the reference's failure: %r against %r" % (err, err_r))


# Two short results only the device has, of one length (the sums and the
# maxima of a long vector's 200 segments), then the host reads both (a
# host +_SCAN of each): the first read brings the other back with it (one
# wait for the two: the read-ahead); VINTERP_DEVICE_READ_AHEAD=off, a wait
# each. The timed region's other wait is the timer's.
ONE200 = "CONST INT 200\nMAKE_SEGDES\n"
AHEAD = ("FUNC MAIN1_1\n" + iota(0, N) + "START_TIMER\nCOPY 1 0\n" + SD200 + "+_REDUCE INT\nCPOP 1 1\n" + SD200 +
         "MAX_REDUCE INT\n" + ONE200 + "+_SCAN INT\nCPOP 1 1\n" + ONE200 + "+_SCAN INT\nSTOP_TIMER\nPOP 1 0\nRET\n")
AHEAD_STATS = re.compile(r"^stats: device tier: read ahead: (\d+) waits for a short vector brought back (\d+) more of "
                         r"its length from the stack \((\d+) bytes\)$", re.M)


# EXTRACT of three segments of a long device vector: its three elements
# read back with one wait (value.h val_dev_elems: a copy each, one wait
# for them), then the timer's.
FEW = ("FUNC MAIN1_1\n" + iota(0, N) + "START_TIMER\nCONST INT (5 17 3)\nCONST INT (6000 7000 %d)\nMAKE_SEGDES\n"
       "EXTRACT INT\nSTOP_TIMER\nPOP 1 0\nRET\n" % (N - 13000))


def test_few_elements():
    rc_r, out_r, _ = ref(FEW)
    rc, out, err = dev(FEW, ["-d", "stats"])
    reg = tallies(err).get("timed region")
    check(rc_r == 0 and (rc, out) == (rc_r, out_r) and reg and reg[1] == 2 and reg[3] == 12,
          "three elements of a device vector: the reference's answer, one wait for them: %r (%r)" % (reg, out[-200:]))


def test_read_ahead():
    rc_r, out_r, _ = ref(AHEAD)
    got = {}
    for mode in ("on", "off"):
        rc, out, err = dev(AHEAD, ["-d", "stats"], env={"VINTERP_DEVICE_READ_AHEAD": mode})
        m = AHEAD_STATS.search(err)
        got[mode] = (rc == 0 and out == out_r, m and m.groups(), tallies(err).get("timed region"))
    on, off = got["on"], got["off"]
    check(rc_r == 0 and on[0] and on[1] == ("1", "1", "800") and on[2] and on[2][1] == 2,
          "read ahead: the reference's answer, one wait for both (and the timer's): %r" % (on,))
    check(off[0] and off[1] == ("0", "0", "0") and off[2] and on[2] and off[2][1] == 3 and off[2][0] == on[2][0] and
          off[2][3] == on[2][3], "read ahead off: a wait each, the same launches and bytes: %r against %r" % (off, on))


def test_prims():
    """VINTERP_CUDA_EMULATE_PRIMS: the primitives the run names are the
    library's own (when this run was given them); a library that does not
    load is one clear line and status 1."""
    src = "FUNC MAIN1_1\n" + iota(0, N) + "CONST INT %d\nMAKE_SEGDES\n+_REDUCE INT\nRET\n" % N
    if "VINTERP_CUDA_EMULATE_PRIMS" in DEVICE:
        rc, out, err = dev(src, ["-d", "stats"])
        check(rc == 0 and "the primitives: the library's kernels on the host" in err,
              "the device names the library's own kernels on the host: %r" % err[-400:])
    if DEVICE.get("VINTERP_CUDA_EMULATE") == "1":
        rc, out, err = dev(src, env={"VINTERP_CUDA_EMULATE_PRIMS": "/nonexistent/libvkernels_host.so"})
        check(rc == 1 and out == "" and "VINTERP_CUDA_EMULATE_PRIMS: cannot load /nonexistent/libvkernels_host.so" in err
              and len(err.strip().splitlines()) == 1, "a primitives' library that does not load: %r %r" % (rc, err))


# Forty reductions of one device vector, each result written: forty
# launches with a wait after each.
REDUCES = ("FUNC MAIN1_1\n" + iota(0, N) + "I_TO_F\n" +
           ("COPY 1 0\nCONST INT %d\nMAKE_SEGDES\n+_REDUCE FLOAT\nWRITE FLOAT\nPOP 2 0\n" % N) * 40 +
           "POP 1 0\nRET\n")
EVENTS_RE = re.compile(r"^stats: cuda: kernels timed by (\d+) event pairs, (\d+) at most waiting to be read, "
                       r"(\d+) waits for them$", re.M)


def test_write_operands():
    """WRITE brings back its operand alone: the long vector below the
    scalar it writes stays on the device, and every reduction runs there."""
    rc_r, out_r, err_r = ref(REDUCES)
    rc, out, err = dev(REDUCES, ["-d", "stats"])
    t = tallies(err).get("whole run", [0, 0, 0, 0])
    m = re.search(r"instructions run there \(and the host's waits in them\):.*\+_REDUCE (\d+) ", err)
    writes = [l for l in err.splitlines() if l.startswith("(")]
    check(rc == 0 and out == out_r and len(writes) == 40 and writes == err_r.splitlines() and t[3] <= 40 * 8 and m and m.group(1) == "40",
          "WRITE of a scalar over a long device vector: 40 reductions on the device, %d bytes back (%r)"
          % (t[3], m and m.group(1)))


def test_events():
    """The real device's code (the driver's stand-in): events around the
    kernels only when the run reports their time, read without a wait
    when they are done, the host waiting only when its ring is full of
    pending ones."""
    rc_r, out_r, _ = ref(REDUCES)
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "driver.log")

        def logged():
            with open(log) as f:
                return re.match(r"events created (\d+), recorded (\d+)", f.read())

        rc, out, err = dev(REDUCES, env={"KHOST_DRIVER_LOG": log})
        m = logged()
        check(rc == 0 and out == out_r and m and m.group(1) == "0" and m.group(2) == "0",
              "events: none created or recorded without -d stats (%r)" % (m and m.groups(),))
        rc, out, err = dev(REDUCES, ["-d", "stats"], env={"KHOST_DRIVER_LOG": log,
                                                          "VINTERP_CUDA_EVENTS_MAX": "2"})
        m, e = logged(), EVENTS_RE.search(err)
        check(rc == 0 and out == out_r and e and int(e.group(1)) >= 40 and e.group(2) == "2" and e.group(3) == "0"
              and m and int(m.group(2)) == 2 * int(e.group(1)),
              "events: -d stats times every kernel, a ring of 2 read when done, no wait (%r, %r)"
              % (e and e.groups(), m and m.groups()))
        rc, out, err = dev(REDUCES, ["-d", "stats"], env={"VINTERP_CUDA_EVENTS_MAX": "2",
                                                          "KHOST_EVENTS_PENDING": "1"})
        e = EVENTS_RE.search(err)
        check(rc == 0 and out == out_r and e and int(e.group(3)) >= 10,
              "events: a full ring of pending events waited for (%r)" % (e and e.groups(),))
        rc, out, err = dev(REDUCES, ["-d", "stats"], env={"VINTERP_CUDA_EVENTS_MAX": "8",
                                                          "KHOST_EVENTS_PENDING": "1"})
        e2 = EVENTS_RE.search(err)
        check(rc == 0 and out == out_r and e2 and e and int(e2.group(3)) < int(e.group(3)),
              "events: a larger ring waits less often (%r)" % (e2 and e2.groups(),))


def main():
    test_prims()
    test_lengths_storage()
    test_pack()
    test_dpermute_fill()
    test_gathers()
    test_index_chains()
    test_chains_together()
    test_permute_group()
    test_dpermute_group()
    test_elements()
    test_gather_kin()
    test_guards()
    test_chains()
    test_short_work()
    test_read_ahead()
    test_few_elements()
    test_placement()
    test_write_operands()
    # the host standing in for a GPU (VINTERP_TEST_CUDA_DRIVER) runs no
    # generated kernel: the fused blocks' tests need a GPU or the emulator
    generated = not DEVICE.get("VINTERP_TEST_CUDA_DRIVER")
    if generated:
        test_model_bytes()
    else:
        test_events()
    test_trace()
    test_faults()
    test_good()
    test_memory()
    if generated:
        test_fused()
        test_fused_faults()
    else:
        print("the host standing in for a GPU: the fused blocks' tests left out (no generated kernel runs there)")
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""tests/bench/device_tier_table.py [INTERP [BENCH_DIR]] — the device tier's
placement on the nine benchmark programs (../shared/bench), counted on the
emulated device (no GPU needed): for the program's timed region and the
whole run, the launches (and the copies and clears on the device, which the
model prices as launches), the host's waits, the bytes moved each way, and the
time the model of -d stats gives them (runtime/fused/tuning.h: 5 us a launch,
10 us a wait, 25 GB/s over the bus, 3 TB/s of device memory). Prints a
markdown table for tests/bench/RESULTS.md. A measurement, not a test: the
emulated device's seconds mean nothing; the counts are what a GPU would do.
Beside the model, the host's own work in the timed region (this machine's
wall time less the emulated device's kernels and copies: the interpreter,
the tier and its calls, which the model does not price), `ref`'s timed
region on this machine (the median of three runs, side by side with the
tier's), and their ratio: the most the device tier could gain over `ref`
with a device that took no time at all, since the host's own work stays
(Amdahl's bound).

Each program runs as `vinterp --backend=cuda --tier=off -d stats -m 1000000000`
with VINTERP_CUDA_EMULATE=1 VINTERP_DEVICE_TIER=on (the device tier alone:
no fused code), and its output is compared with the classic's (the last line,
the timer, left out)."""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
INTERP = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "../../bin/vinterp"))
BENCH = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "../../../shared/bench"))
PROGRAMS = ["batcher_1m", "bh_16k", "black_scholes_8m", "delaunay_40k", "dotp_50m", "muladd_50m", "qs_5m",
            "quickhull_5m", "radix_10m"]
TALLY = re.compile(r"^stats: (timed region|whole run): (\d+) launches, (\d+) syncs, (\d+) bytes host to device, "
                   r"(\d+) bytes device to host")
MODEL = re.compile(r"^stats: model: (?:timed region ([0-9.]+) s, )?whole run ([0-9.]+) s")
HOST = re.compile(r"^stats: model: the host's own work beside it .*: (?:timed region ([0-9.]+) s, )?whole run")
FELL = re.compile(r"^stats: device tier: (\d+) instructions ran on the host with long device operands")
DOPS = re.compile(r"a copy or clear on the device, of which (\d+) in the timed region and (\d+) in the run")


def mb(b):
    return "%.1f" % (b / 1e6) if b >= 1e5 else "%d B" % b


def ref_timed(vc):
    """ref's timed region (the program's last line, NESL's timer) in seconds, the median of three runs."""
    secs = []
    for _ in range(3):
        p = subprocess.run([INTERP, "--backend=ref", "-m", "1000000000", vc], capture_output=True, text=True,
                           cwd=os.path.dirname(vc))
        m = re.search(r"([0-9.]+(?:e[-+]?[0-9]+)?)", (p.stdout.splitlines() or [""])[-1])
        if p.returncode != 0 or not m:
            return None
        secs.append(float(m.group(1)))
    return sorted(secs)[1]


def main():
    env = dict(os.environ, VINTERP_CUDA_EMULATE="1", VINTERP_DEVICE_TIER="on")
    print("| program | output | timed region: launches + copies and clears, waits, up, down | modelled (s) | whole "
          "run: launches + copies and clears, waits, up, down | modelled (s) | host steps on device data | the host's "
          "own work in the timed region (s, this machine) | ref's timed region (s, this machine) | ref ÷ the host's "
          "own work |")
    print("| --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for name in PROGRAMS:
        vc = os.path.join(BENCH, name + ".vcode")
        rt = ref_timed(vc)
        p = subprocess.run([INTERP, "--backend=cuda", "--tier=off", "-d", "stats", "-m", "1000000000", vc],
                           capture_output=True, text=True, env=env, cwd=BENCH)
        want = open(os.path.join(BENCH, name + ".expected")).read().splitlines()[:-1]
        same = p.returncode == 0 and p.stdout.splitlines()[:-1] == want
        t, model, fell, dops, host = {}, (None, None), 0, (0, 0), None
        for line in p.stderr.splitlines():
            m = TALLY.match(line)
            if m:
                t[m.group(1)] = [int(m.group(i)) for i in range(2, 6)]
            m = MODEL.match(line)
            if m:
                model = (m.group(1), m.group(2))
                d = DOPS.search(line)
                dops = (int(d.group(1)), int(d.group(2))) if d else (0, 0)
            m = HOST.match(line)
            if m:
                host = m.group(1)
            m = FELL.match(line)
            if m:
                fell = int(m.group(1))
        r, w = t.get("timed region", [0] * 4), t.get("whole run", [0] * 4)
        bound = "%.1f" % (rt / float(host)) if rt and host and float(host) > 0 else "-"
        print("| %s | %s | %d + %d, %d, %s, %s | %s | %d + %d, %d, %s, %s | %s | %d | %s | %s | %s |" %
              (name, "the classic's" if same else "DIFFERS (exit %d)" % p.returncode, r[0], dops[0], r[1], mb(r[2]),
               mb(r[3]), model[0] or "-", w[0], dops[1], w[1], mb(w[2]), mb(w[3]), model[1] or "-", fell,
               "%.3f" % float(host) if host else "-", "%.3f" % rt if rt else "-", bound))
        sys.stdout.flush()


if __name__ == "__main__":
    main()

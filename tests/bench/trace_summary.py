#!/usr/bin/env python3
"""tests/bench/trace_summary.py TRACE.json [--whole] — where a run's time
went, from its `-d trace=FILE` (a Chrome trace of complete events: each
device-tier instruction, primitive call, launch, copy, wait, allocation,
compile and fused block run, timed on the host).

For the program's timed region (between the two waits of "the program's
timer"; --whole: the whole trace), one line per category and name group:
how many events, their total seconds, their own seconds (less the events
nested inside them: a device-tier instruction's primitive calls and
allocations are theirs, not its own), and the median duration. The last
line is the region's wall time and what no event covers (the
interpreter's own work between instructions).

A measurement aid for tests/bench/GPU_SUMMARY.md (gpu_checklist.sh runs
it on the traces it writes), not a test."""
import json
import sys


def load(path):
    with open(path) as f:
        t = json.load(f)
    ev = t["traceEvents"] if isinstance(t, dict) else t
    return sorted((e for e in ev if e.get("ph") == "X" and "ts" in e), key=lambda e: (e["ts"], -e.get("dur", 0)))


def region(ev, whole):
    """The events inside the last timed region (or all), and its span."""
    timers = [e for e in ev if e.get("cat") == "wait" and e.get("name") == "the program's timer"]
    if whole or len(timers) < 2:
        lo = ev[0]["ts"] if ev else 0.0
        hi = max((e["ts"] + e.get("dur", 0) for e in ev), default=lo)
        return ev, lo, hi, "whole trace"
    a, b = timers[-2], timers[-1]
    lo, hi = a["ts"] + a.get("dur", 0), b["ts"]
    return [e for e in ev if lo <= e["ts"] and e["ts"] + e.get("dur", 0) <= hi], lo, hi, "timed region"


def group(e):
    """A category and, for the device tier's instructions, the opcode alone
    (their names carry the VCODE line)."""
    cat, name = e.get("cat", "?"), e.get("name", "?")
    if cat == "device tier":
        return cat, "instructions"
    return cat, name


def summarise(ev):
    """Per group: count, total and own microseconds, durations. Own time:
    the duration less that of the events directly nested in it (one
    thread: nesting by containment)."""
    stats = {}
    stack = []  # (end, key, child_total)
    own = {}

    def close(upto):
        while stack and stack[-1][0] <= upto:
            end, key, child = stack.pop()
            own[key] = own.get(key, 0.0) - child

    for e in ev:
        start, dur = e["ts"], e.get("dur", 0.0)
        close(start)
        key = group(e)
        s = stats.setdefault(key, [0, 0.0, []])
        s[0] += 1
        s[1] += dur
        s[2].append(dur)
        own[key] = own.get(key, 0.0) + dur
        if stack:
            end, pkey, child = stack[-1]
            stack[-1] = (end, pkey, child + dur)
        stack.append((start + dur, key, 0.0))
    close(float("inf"))
    covered = 0.0  # the union of the top-level events
    end = None
    for e in ev:
        s, d = e["ts"], e.get("dur", 0.0)
        if end is None or s >= end:
            covered += d
            end = s + d
        elif s + d > end:
            covered += s + d - end
            end = s + d
    return stats, own, covered


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        print(__doc__)
        return 2
    ev, lo, hi, what = region(load(args[0]), "--whole" in sys.argv)
    stats, own, covered = summarise(ev)
    wall = (hi - lo) * 1e-6
    print("%s: %.6f s wall, %d events" % (what, wall, len(ev)))
    print("| category | name | count | total s | own s | median us |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for key in sorted(stats, key=lambda k: -own.get(k, 0.0)):
        n, total, durs = stats[key]
        durs.sort()
        print("| %s | %s | %d | %.6f | %.6f | %.1f |" % (key[0], key[1], n, total * 1e-6, own.get(key, 0.0) * 1e-6,
                                                           durs[len(durs) // 2]))
    print("not in any event (the interpreter between instructions): %.6f s" % max(wall - covered * 1e-6, 0.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())

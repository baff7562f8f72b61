#!/usr/bin/env python3
"""tests/check/gen_cancel.py — writes cancel_sum.vcode: dot products that
nearly cancel (the terms are of order 1..1000, each segment's sum is of
order 1e-14 of them), over segments of mixed lengths, reduced and scanned.
A tree of partial sums (the cuda backend's) and the reference's left-to-right
sum then differ in most of their digits, though both are right within
rounding. Deterministic (fixed seed); rerun to regenerate."""
import os, random

rnd = random.Random(20240611)
lengths = [1, 2, 3, 7, 40, 100, 0, 5, 243, 17, 64, 31, 200, 9, 4]
xs, ys = [], []
for j, l in enumerate(lengths):
    x = [rnd.uniform(-1000, 1000) * rnd.choice([1, 1e-3, 1]) for _ in range(l)]
    y = [rnd.uniform(-1, 1) for _ in range(l)]
    if l >= 3:
        # the last term cancels the rest to about 1e-14 of the largest
        # term, or (every other segment) to 0 in the reference's order
        s = sum(a * b for a, b in zip(x[:-1], y[:-1]))
        off = rnd.uniform(-3e-14, 3e-14) * max(abs(a * b) for a, b in zip(x, y)) if j % 2 else 0.0
        y[-1] = -(s + off) / x[-1]
    xs += x
    ys += y
z = [1.0 + rnd.uniform(-1e-3, 1e-3) for _ in range(sum(lengths))]

def fv(v):
    return "(" + " ".join(repr(a) for a in v) + ")"

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cancel_sum.vcode")
with open(out, "w") as f:
    f.write("""{ cancel_sum.vcode -- written by gen_cancel.py. Nearly cancelling dot
  products per segment (lengths %s):
  +_REDUCE, +_SCAN and *_REDUCE FLOAT, segmented and over the whole vector,
  and what is computed from the sums in the same block (a scale, a
  comparison, a SELECT, a FLOOR). Under --check a reassociating backend
  must pass within the error bounds. }
FUNC MAIN
CONST INT %s
MAKE_SEGDES
CONST FLOAT %s
CONST FLOAT %s
* FLOAT
COPY 1 0
COPY 1 2
+_REDUCE FLOAT
COPY 1 0
CONST FLOAT 3.0
COPY 1 1
LENGTH FLOAT
MAKE_SEGDES
DIST FLOAT
* FLOAT
COPY 1 1
CONST FLOAT 0.0
COPY 1 1
LENGTH FLOAT
MAKE_SEGDES
DIST FLOAT
> FLOAT
COPY 1 0
COPY 1 2
COPY 1 4
SELECT FLOAT
COPY 1 2
FLOOR
COPY 1 5
COPY 1 7
+_SCAN FLOAT
COPY 1 6
CONST INT %d
MAKE_SEGDES
+_REDUCE FLOAT
CONST FLOAT %s
COPY 1 9
*_REDUCE FLOAT
CONST FLOAT %s
CONST INT %d
MAKE_SEGDES
*_SCAN FLOAT
RET
""" % (lengths, fv(lengths), fv(xs), fv(ys), sum(lengths), fv(z), fv(z), sum(lengths)))
print("wrote", out)

# ---- moves.vcode: the same sums moved about (their bounds move along) ------
class Block:
    """VCODE text with the stack tracked by names (top last); op(...)
    copies its named arguments to the top in order, then runs."""
    def __init__(self):
        self.lines, self.stack = [], []

    def push(self, text, name):
        self.lines.append(text)
        self.stack.append(name)

    def copy(self, name):
        self.lines.append("COPY 1 %d" % self.stack[::-1].index(name))
        self.stack.append(name)

    def seg(self, n, name):
        self.push("CONST INT %s" % (fv(n) if isinstance(n, list) else n), "_lengths")
        self.lines.append("MAKE_SEGDES")
        self.stack[-1] = name

    def op(self, text, args, results):
        for a in args:
            self.copy(a)
        self.lines.append(text)
        del self.stack[-len(args):]
        self.stack += results


m = len(lengths)
b = Block()
b.push("CONST FLOAT %s" % fv(xs), "x")
b.push("CONST FLOAT %s" % fv(ys), "y")
b.seg(lengths, "s")
b.seg(m, "sm")
b.seg(sum(lengths), "sn")
b.seg([5, 5, 5], "s3")
b.seg((m + 1) // 2, "sh")
b.op("* FLOAT", ["x", "y"], ["p"])
b.op("+_REDUCE FLOAT", ["p", "s"], ["r"])                 # the sums, with bounds
b.op("+_SCAN FLOAT", ["p", "s"], ["c"])                   # prefixes, with bounds
b.push("CONST INT %s" % fv(list(range(m - 1, -1, -1))), "rev_i")
b.op("PERMUTE FLOAT", ["r", "rev_i", "sm"], ["rev"])
b.push("CONST INT %s" % fv(list(range(0, m, 2))), "even_i")
b.op("BPERMUTE FLOAT", ["rev", "even_i", "sm", "sh"], ["even"])
b.push("CONST INT (1 2 3)", "ext_i")
b.op("EXTRACT FLOAT", ["r", "ext_i", "s3"], ["ext"])
b.push("CONST BOOL (%s)" % " ".join("T" if k % 3 else "F" for k in range(m)), "flags")
b.op("PACK FLOAT", ["r", "flags", "sm"], ["kept", "kept_sd"])
b.op("DIST FLOAT", ["r", "s"], ["spread"])                # each sum over its segment
b.push("CONST FLOAT 0.0", "zero")
b.op("DIST FLOAT", ["zero", "sm"], ["zeros"])
b.op("> FLOAT", ["r", "zeros"], ["pos"])                  # may differ
b.op("SELECT FLOAT", ["pos", "r", "rev"], ["sel"])
b.op("PACK FLOAT", ["r", "pos", "sm"], ["posr", "posr_sd"])  # not verifiable
b.op("RANK_UP FLOAT", ["r", "sm"], ["rank"])              # may differ
b.op("PERMUTE FLOAT", ["r", "rank", "sm"], ["sorted"])    # not verifiable
b.op("DPERMUTE FLOAT", ["r", "rev_i", "zeros", "sm", "sm"], ["dp"])
b.op("B_TO_I", ["pos"], ["posi"])
b.op("INDEX", ["posi", "posi", "s"], ["idx"])            # from a may-differ init and stride
b.op("I_TO_F", ["posi"], ["posf"])
b.op("+ FLOAT", ["posf", "r"], ["mixed"])
b.op("+_REDUCE INT", ["posi", "sm"], ["npos"])
with open(os.path.join(os.path.dirname(out), "moves.vcode"), "w") as f:
    f.write("""{ moves.vcode -- written by gen_cancel.py. The nearly cancelling sums of
  cancel_sum.vcode moved about in one block: PERMUTE, BPERMUTE, EXTRACT,
  PACK (exact flags, and flags that may differ: not verifiable), DIST,
  SELECT on a comparison that may differ, RANK_UP and a PERMUTE by it (not
  verifiable), DPERMUTE, INDEX and I_TO_F of may-differ Ints. }
FUNC MAIN
""")
    f.write("\n".join(b.lines) + "\nRET\n")
print("wrote", os.path.join(os.path.dirname(out), "moves.vcode"))

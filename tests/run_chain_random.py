#!/usr/bin/env python3
"""tests/run_chain_random.py INTERP [-n PROGRAMS] [--seed S] — the device
tier's deferred elementwise chains (runtime/fused/cuda_chain.h) against the
reference on generated programs.

Each program is a long random walk over a stack of vectors of one length:
new vectors (INDEX, lazy fills, DISTs of one value a segment over
descriptors of many segments: segmented sums or constants), BPERMUTEs
of vectors below at one index (one segment or several), every kind of elementwise instruction that
the chains take (arithmetic, comparisons, logic, shifts, SELECT,
conversions, libm), stack shuffles (COPY, POP, CPOP: values held twice,
dropped, moved), and reductions and EXTRACTs of copies in between (which
run a chain while its values are still held; two such scalars of one type
on top are sometimes combined); at the end every vector is
reduced to a scalar, and the stack is the output. It runs under
--backend=ref and under the cuda backend's device tier on the emulated
device (every vector there, and vectors from the default placement
length), whose elementwise instructions and reductions are the reference's
bit for bit there: the outputs must be identical. With DEVICE_TIER_REAL=1
(tests/bench/gpu_checklist.sh devcheck) the device tier runs on the
machine's GPU, and the programs reduce Floats by MIN and MAX only (a GPU
sums them as a tree), so the outputs are still identical. Over the set the chains
must have been cut at the kernel's bounds, merged, run with a reduction and
dropped unrun, so that every path ran (on the emulated device, where the
programs are the set make test runs). Ends with "N passed, N failed"."""
import argparse
import os
import random
import re
import subprocess
import tempfile

from tally import check, finish

N = 5000  # above the default placement length (4096)
STEPS = 260
MAX_VECTORS = 18
CHAINS = re.compile(r"^stats: device tier: (\d+) instructions deferred into chains, (\d+) chains taken "
                    r"into another, (\d+) chains run \(one launch each\) writing (\d+) vectors, (\d+) of them with a "
                    r"reduction, (\d+) dropped unrun, (\d+) cut at the kernel's bounds; of the deferred, (\d+) DISTs, (\d+) INDEXes and (\d+) gathers \(BPERMUTE\), (\d+) of them checked with another's record$", re.M)


REAL = os.environ.get("DEVICE_TIER_REAL") == "1"


class Gen:
    def __init__(self, rng, reads, bad=False):
        self.rng = rng
        self.reads = reads  # how often a reduction or an EXTRACT reads a copy (long chains when rare)
        self.bad = bad  # the first gather's index leaves its segment from some element on
        self.stack = []  # bottom to top: "I", "F", "B" (vectors of N), "SI", "SF", "SB" (scalars)
        self.out = []

    def emit(self, *lines):
        self.out.extend(lines)

    def segdes(self):
        self.emit("CONST INT %d" % N, "MAKE_SEGDES")

    def vectors(self):
        return [d for d in range(len(self.stack)) if not self.stack[-1 - d].startswith("S")]

    def new_vector(self):
        r = self.rng
        kind = r.choice("IIFB")
        if kind == "I" and r.random() < 0.6:
            self.emit("CONST INT %d" % r.randint(-50, 50), "CONST INT %d" % r.choice([-3, -1, 1, 2, 7]))
            self.segdes()
            self.emit("INDEX")
        elif kind == "I":
            self.emit("CONST INT %d" % r.randint(-9, 9))
            self.segdes()
            self.emit("DIST INT")
        elif kind == "F":
            self.emit("CONST FLOAT %s" % r.choice(["0.5", "-1.25", "3.0", "7.75"]))
            self.segdes()
            self.emit("DIST FLOAT")
        else:
            self.emit("CONST BOOL %s" % r.choice("TF"))
            self.segdes()
            self.emit("DIST BOOL")
        self.stack.append(kind)

    def lengths(self):
        """A descriptor of N elements in a few segments (some empty)."""
        r = self.rng
        k = r.randint(1, 40)
        cuts = sorted(r.randint(0, N) for _ in range(k - 1))
        lens = [b - a for a, b in zip([0] + cuts, cuts + [N])]
        self.emit("CONST INT (%s)" % " ".join(map(str, lens)), "MAKE_SEGDES")
        return lens

    def spread(self):
        """DIST of one value a segment over a descriptor of N elements: a
        segmented sum of a vector below (on the device), or constants."""
        r = self.rng
        vec = [d for d in self.vectors() if self.stack[-1 - d] in "IF"]
        if vec and r.random() < 0.6:
            d = r.choice(vec)
            t = self.stack[-1 - d]
            name = {"I": "INT", "F": "FLOAT"}[t]
            self.emit("COPY 1 %d" % d)
            lens = self.lengths()
            self.emit("+_REDUCE %s" % name)
            self.emit("CONST INT (%s)" % " ".join(map(str, lens)), "MAKE_SEGDES", "DIST %s" % name)
        else:
            t = r.choice("IFB")
            k = r.randint(1, 40)
            vals = {"I": lambda: str(r.randint(-99, 99)), "F": lambda: r.choice(["0.5", "-2.25", "3.0", "1.125"]),
                    "B": lambda: r.choice("TF")}[t]
            name = {"I": "INT", "F": "FLOAT", "B": "BOOL"}[t]
            self.emit("CONST %s (%s)" % (name, " ".join(vals() for _ in range(k))))
            cuts = sorted(r.randint(0, N) for _ in range(k - 1))
            lens = [b - a for a, b in zip([0] + cuts, cuts + [N])]
            self.emit("CONST INT (%s)" % " ".join(map(str, lens)), "MAKE_SEGDES", "DIST %s" % name)
        self.stack.append(t)

    def gather(self):
        """An index vector (pending in a chain, made by INDEX and %, or
        reversing each segment of a few), then one to three BPERMUTEs of
        vectors below at it over the same descriptors (a chain's gathers
        sharing one check); the index stays, an Int vector."""
        r = self.rng
        ints = [d for d in self.vectors() if self.stack[-1 - d] == "I"]
        lens = None
        if self.bad:  # 0, 3, 6, ...: outside the one segment from element N / 3 on (the run stops there)
            self.bad = False
            self.emit("CONST INT 0", "CONST INT 3")
            self.segdes()
            self.emit("INDEX")
        elif r.random() < 0.3:
            k = r.randint(2, 12)
            cuts = sorted(r.randint(0, N) for _ in range(k - 1))
            lens = [b - a for a, b in zip([0] + cuts, cuts + [N])]
            self.emit("CONST INT (%s)" % " ".join(str(n - 1) for n in lens), "CONST INT (%s)" % " ".join(["-1"] * k),
                      "CONST INT (%s)" % " ".join(map(str, lens)), "MAKE_SEGDES", "INDEX")
        elif ints and r.random() < 0.6:
            self.emit("COPY 1 %d" % r.choice(ints), "CONST INT 1023")
            self.segdes()
            self.emit("DIST INT", "AND INT")
        else:
            self.emit("CONST INT %d" % r.randint(0, 99), "CONST INT %d" % r.randint(1, 7))
            self.segdes()
            self.emit("INDEX", "CONST INT %d" % N)
            self.segdes()
            self.emit("DIST INT", "%")
        self.stack.append("I")
        for _ in range(r.randint(1, 3)):
            d = r.choice(self.vectors())
            t = self.stack[-1 - d]
            self.emit("COPY 1 %d" % d, "COPY 1 1")
            for _ in range(2):
                if lens:
                    self.emit("CONST INT (%s)" % " ".join(map(str, lens)), "MAKE_SEGDES")
                else:
                    self.segdes()
            self.emit("BPERMUTE %s" % {"I": "INT", "F": "FLOAT", "B": "BOOL"}[t], "CPOP 1 1")
            self.stack.insert(len(self.stack) - 1, t)

    def reduce_top(self, keep):
        """A reduction of the top vector (of a copy of it when KEEP)."""
        t = self.stack[-1]
        if keep:
            self.emit("COPY 1 0")
            self.stack.append(t)
        op = {"I": self.rng.choice(["+_REDUCE INT", "MAX_REDUCE INT", "XOR_REDUCE INT"]),
              "F": self.rng.choice((["+_REDUCE FLOAT"] if not REAL else []) + ["MIN_REDUCE FLOAT", "MAX_REDUCE FLOAT"]),
              "B": self.rng.choice(["OR_REDUCE BOOL", "AND_REDUCE BOOL"])}[t]
        self.segdes()
        self.emit(op)
        self.stack[-1] = "S" + t

    def step(self):
        r = self.rng
        st = self.stack
        vec = self.vectors()
        if len(vec) < 3 or (len(vec) < MAX_VECTORS and r.random() < 0.08):
            self.new_vector()
            return
        if len(vec) < MAX_VECTORS and r.random() < 0.04:
            self.spread()
            return
        if len(vec) < MAX_VECTORS - 4 and r.random() < 0.05:
            self.gather()
            return
        top = st[-1] if not st[-1].startswith("S") else None
        second = st[-2] if len(st) > 1 and not st[-2].startswith("S") else None
        if len(st) > 1 and st[-1] == st[-2] and st[-1] in ("SI", "SF") and r.random() < 0.8:
            # two scalars (EXTRACTs' elements, reductions' results) combined
            self.emit(r.choice(["+", "*", "-"]) + (" INT" if st[-1] == "SI" else " FLOAT"))
            st.pop()
            return
        x = r.random()
        if x < 0.12:  # a copy of a vector below
            d = r.choice(vec)
            self.emit("COPY 1 %d" % d)
            st.append(st[-1 - d])
        elif x < 0.2 and len(vec) > 3:  # one goes
            d = r.choice(vec)
            self.emit("POP 1 %d" % d)
            del st[-1 - d]
        elif x < 0.3:  # one comes to the top
            d = r.choice(vec)
            self.emit("CPOP 1 %d" % d)
            st.append(st.pop(-1 - d))
        elif x < 0.3 + self.reads and top:
            self.reduce_top(keep=True)
        elif x < 0.3 + 1.5 * self.reads and top:
            for k in range(1 if r.random() < 0.5 else 2):  # (two: elements of one vector, as a tuple's read)
                self.emit("COPY 1 %d" % k, "CONST INT %d" % r.randrange(N))
                self.segdes()
                self.emit("EXTRACT %s" % {"I": "INT", "F": "FLOAT", "B": "BOOL"}[top])
                st.append("S" + top)
        elif x < 0.36 + 1.5 * self.reads and top and second and len(st) > 2 and st[-3] == "B" and top == second:
            self.emit("SELECT %s" % {"I": "INT", "F": "FLOAT", "B": "BOOL"}[top])
            del st[-3:]
            st.append(top)
        elif x < 0.75 and top and second == top:
            ops = {"I": ["+ INT", "- INT", "* INT", "< INT", "<= INT", "> INT", "= INT", "!= INT", "AND INT",
                         "OR INT", "XOR INT", "LSHIFT", "RSHIFT"],
                   "F": ["+ FLOAT", "- FLOAT", "* FLOAT", "/ FLOAT", "< FLOAT", ">= FLOAT", "= FLOAT",
                         "!= FLOAT"],
                   "B": ["AND BOOL", "OR BOOL", "XOR BOOL"]}[top]
            op = r.choice(ops)
            self.emit(op)
            st.pop()
            st[-1] = "B" if op.split()[0] in ("<", "<=", ">", ">=", "=", "!=") else top
        elif top:
            ops = {"I": [("NOT INT", "I"), ("I_TO_F", "F"), ("I_TO_B", "B")],
                   "F": [("SQRT", "F"), ("SIN", "F"), ("EXP", "F"), ("LOG", "F"), ("TANH", "F"),
                         ("FLOOR", "I"), ("ROUND", "I"), ("TRUNC", "I"), ("CEIL", "I")],
                   "B": [("NOT BOOL", "B"), ("B_TO_I", "I")]}[top]
            op, res = r.choice(ops)
            self.emit(op)
            st[-1] = res
        else:  # a scalar on top: a vector comes up
            d = r.choice(vec)
            self.emit("CPOP 1 %d" % d)
            st.append(st.pop(-1 - d))

    def program(self):
        self.emit("FUNC MAIN1_1")
        for i in range(STEPS):
            if self.bad and i == STEPS // 3:
                self.gather()
            else:
                self.step()
        while self.vectors():
            d = self.vectors()[0]
            if d:
                self.emit("CPOP 1 %d" % d)
                self.stack.append(self.stack.pop(-1 - d))
            self.reduce_top(keep=False)
        self.emit("RET")
        return "\n".join(self.out) + "\n"


def run(interp, path, args, env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("VINTERP_")}
    env.update(env_extra)
    p = subprocess.run([interp] + args + [path], capture_output=True, text=True, env=env, timeout=600)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser(description="the device tier's chains against ref on generated programs")
    ap.add_argument("interp", nargs="?", default=os.path.join(os.path.dirname(__file__), "..", "bin", "vinterp"))
    ap.add_argument("-n", type=int, default=24, help="programs")
    ap.add_argument("--seed", type=int, default=29)
    a = ap.parse_args()
    interp = os.path.abspath(a.interp)
    rng = random.Random(a.seed)
    totals = [0] * 11
    device = {"VINTERP_DEVICE_TIER": "on"} if REAL else {"VINTERP_CUDA_EMULATE": "1", "VINTERP_DEVICE_TIER": "on"}
    configs = [("device tier, every vector there", dict(device, VINTERP_DEVICE_MIN="1")),
               ("device tier, default placement", device)]
    with tempfile.TemporaryDirectory(prefix="vinterp-chains-") as tmp:
        for k in range(a.n):
            path = os.path.join(tmp, "c%d.vcode" % k)
            with open(path, "w") as f:
                f.write(Gen(rng, 0.06 if k % 2 else 0.004).program())
            rc_r, out_r, err_r = run(interp, path, ["--backend=ref"], {})
            if k % 6 == 5:  # a bad gather: the reference's failure, line and all (no -d stats: it prints none)
                bad = path + ".bad.vcode"
                with open(bad, "w") as f:
                    f.write(Gen(rng, 0.004, bad=True).program())
                rc_b, out_b, err_b = run(interp, bad, ["--backend=ref"], {})
                check("c%d (bad gather): the reference fails with its index message" % k,
                      rc_b == 1 and "BPERMUTE: index" in err_b, err_b.strip()[:300])
                for name, env in configs:
                    got = run(interp, bad, ["--backend=cuda", "--tier=off"], env)
                    check("c%d (bad gather) under the %s fails as ref" % (k, name), got == (rc_b, out_b, err_b),
                          "%r against %r" % (got[2].strip()[:200], err_b.strip()[:200]))
            if not check("c%d: the reference runs it" % k, rc_r == 0, err_r.strip()[:300]):
                continue
            for name, env in configs:
                rc, out, err = run(interp, path, ["--backend=cuda", "--tier=off", "-d", "stats"], env)
                m = CHAINS.search(err)
                same = rc == 0 and out == out_r and m is not None
                if same:
                    for j, g in enumerate(m.groups()):
                        totals[j] += int(g)
                else:
                    keep = os.path.join(tempfile.gettempdir(), "vinterp-chains-c%d.vcode" % k)
                    with open(path) as src, open(keep, "w") as dst:
                        dst.write(src.read())
                check("c%d under the %s prints ref's output" % (k, name), same,
                      "exit %d: %s; program kept as %s" % (rc, err.strip()[-300:], keep) if not same else "")
    names = ["deferred", "merged", "runs", "outputs", "with a reduction", "dropped", "cut at the bounds", "DISTs",
             "INDEXes", "gathers", "gathers sharing a record"]
    print("chains over the set: " + ", ".join("%s %d" % (n, t) for n, t in zip(names, totals)))
    for n, t in zip(names, totals):
        if not REAL and n in ("deferred", "merged", "with a reduction", "dropped", "cut at the bounds", "DISTs",
                              "INDEXes", "gathers", "gathers sharing a record"):
            check("some chain was %s over the set (a path the programs must reach)" % n, t > 0)
    finish()


if __name__ == "__main__":
    main()

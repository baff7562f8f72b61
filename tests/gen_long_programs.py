#!/usr/bin/env python3
"""tests/gen_long_programs.py [DIR] — VCODE programs whose translation must
stay linear in their size (see tests/run_long_programs.py):

  chain.vcode       20000 small functions, each calling the next (80002
                    instructions): inlining every call in post-order would
                    give about 4 million instructions
  block_maps.vcode  one block of 8000 element-wise vector instructions
                    (about 24000 instructions with the stack shuffles), one
                    chain of MAPs that all fuse: one huge cluster unless the
                    fusion graph is cut into windows
  block_mixed.vcode one block of 8000 vector instructions of several kinds
                    (MAPs over two lengths, scans, reductions, DIST)
  many_funcs.vcode  100 functions of 60 vector instructions each, called in
                    a row by MAIN: inlined into one block of 6000

Writes them into DIR (default: the current directory). Deterministic: the
same files every time."""
import os
import random
import sys

# No * AND OR: their chains collapse to 0 or -1, which would hide a wrong result.
MAP_OPS = ["+ INT", "XOR INT", "- INT", "+ INT"]


def chain(n=20000):
    out = ["{ %d functions, each calling the next }" % n, "FUNC MAIN", "CONST INT (5 6 7 8)",
           "CALL F0", "RET"]
    for i in range(n):
        out += ["FUNC F%d" % i, "CONST INT (%d 1 2 3)" % (i % 7 + 1), "+ INT"]
        if i + 1 < n:
            out.append("CALL F%d" % (i + 1))
        out.append("RET")
    return out


def map_steps(nops, start=0):
    """[a b] -> [b', a'] nops times: a fibonacci-like chain of MAPs."""
    out = []
    for i in range(start, start + nops):
        # [a b] COPY 1 1 -> [a b a]; op -> [a (b op a)]; CPOP 1 1 (swap) -> [(b op a) a]
        out += ["COPY 1 1", MAP_OPS[i % 4], "CPOP 1 1"]
    return out


def block_maps(nops=8000):
    return (["{ one block of %d element-wise vector instructions }" % nops, "FUNC MAIN",
             "CONST INT (1 2 3 4 5 6 7 8)", "CONST INT (3 1 4 1 5 9 2 6)"]
            + map_steps(nops) + ["RET"])


def block_mixed(nops=8000, seed=1):
    """A stack of [sdA A A A A sdB B B B B] (A of length 8, B of length 5);
    each step combines copies of two vectors of one group, scans one, or
    reduces one and distributes the sum, then drops an older vector of the
    group so that the stack keeps its size."""
    rnd = random.Random(seed)
    LEN = {"A": 8, "B": 5}
    out = ["{ one block of %d vector instructions of several kinds }" % nops, "FUNC MAIN"]
    st = []
    count = [0]

    def emit(line, vector=True):
        out.append(line)
        count[0] += vector

    def copy_of(tag, avoid=-1):
        """Copy one vector of the group to the top; returns its index."""
        i = rnd.choice([k for k, t in enumerate(st) if t == tag and k != avoid])
        emit("COPY 1 %d" % (len(st) - 1 - i), False)
        st.append(tag)
        return i

    for g, n in LEN.items():
        emit("CONST INT %d" % n, False)
        emit("MAKE_SEGDES")
        st.append("sd" + g)
        for _ in range(4):
            emit("CONST INT (%s)" % " ".join(str(rnd.randint(1, 9)) for _ in range(n)), False)
            st.append(g)
    while count[0] < nops:
        g = rnd.choice("AB")
        r = rnd.random()
        if r < 0.1:
            copy_of(g)
            copy_of("sd" + g)
            emit("+_SCAN INT")
            st.pop()
        elif r < 0.15:
            copy_of(g)
            copy_of("sd" + g)
            emit("+_REDUCE INT")
            st.pop()
            st.pop()
            st.append("s")
            copy_of("sd" + g)
            emit("DIST INT")
            st.pop()
            st.pop()
            st.append(g)
        elif r < 0.5:
            # fresh constants now and then: sums and scans alone drive every
            # element to one even value, and then to 0
            copy_of(g)
            emit("CONST INT (%s)" % " ".join(str(rnd.randint(-99, 99)) for _ in range(LEN[g])), False)
            st.append(g)
            emit(rnd.choice(MAP_OPS))
            st.pop()
        else:
            # two different vectors: x - x and x XOR x would be 0
            copy_of(g, copy_of(g))
            emit(rnd.choice(MAP_OPS))
            st.pop()
        i = rnd.choice([k for k, t in enumerate(st[:-1]) if t == g])
        emit("POP 1 %d" % (len(st) - 1 - i), False)
        del st[i]
    out.append("RET")
    return out


def many_funcs(nfuncs=100, nops=60):
    out = ["{ %d functions of %d vector instructions, called in a row }" % (nfuncs, nops),
           "FUNC MAIN", "CONST INT (1 2 3 4 5 6 7 8)", "CONST INT (3 1 4 1 5 9 2 6)"]
    out += ["CALL G%d" % i for i in range(nfuncs)] + ["RET"]
    for i in range(nfuncs):
        out += ["FUNC G%d" % i] + map_steps(nops, i) + ["RET"]
    return out


PROGRAMS = {
    "chain": chain,
    "block_maps": block_maps,
    "block_mixed": block_mixed,
    "many_funcs": many_funcs,
}


def write_all(directory):
    paths = {}
    for name, gen in PROGRAMS.items():
        path = os.path.join(directory, name + ".vcode")
        with open(path, "w") as f:
            f.write("\n".join(gen()) + "\n")
        paths[name] = path
    return paths


if __name__ == "__main__":
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(d, exist_ok=True)
    for name, path in write_all(d).items():
        print(path)

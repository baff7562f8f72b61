#!/usr/bin/env python3
"""tests/kernels_host/host_cu.py IN OUT: a kernels/*.cu source as host C++
for tests/kernels_host (cuda_host.h): every launch `k<<<cfg>>>(args)`
becomes `vkh_launch([&]() { k(args); }, cfg)`, the CUDA, CUB and Thrust
includes become cuda_host.h. Lines keep their numbers (a compiler's
message names the .cu line)."""
import re
import sys

HEADER = '#include "tests/kernels_host/cuda_host.h"\n'


def callee_start(s, i):
    """Where the kernel's name (with template arguments) before s[i] starts."""
    j = i
    if s[j - 1] == '>':  # template arguments: back to the matching '<'
        depth = 0
        while True:
            j -= 1
            if s[j] == '>':
                depth += 1
            elif s[j] == '<':
                depth -= 1
                if depth == 0:
                    break
    while j > 0 and (s[j - 1].isalnum() or s[j - 1] in '_:'):
        j -= 1
    return j


def closing(s, i, open_='(', close=')'):
    """The index of the bracket closing the one at s[i]."""
    depth = 0
    while True:
        if s[i] == open_:
            depth += 1
        elif s[i] == close:
            depth -= 1
            if depth == 0:
                return i
        i += 1


def rewrite(s):
    out, pos = [], 0
    while True:
        i = s.find('<<<', pos)
        if i < 0:
            out.append(s[pos:])
            return ''.join(out)
        j = callee_start(s, i)
        k = s.index('>>>', i)
        cfg = s[i + 3:k]
        a = k + 3
        while s[a].isspace():
            a += 1
        if s[a] != '(':
            raise SystemExit('host_cu.py: a launch without arguments at offset %d' % i)
        b = closing(s, a)
        out.append(s[pos:j])
        out.append('vkh_launch([&]() { %s%s; }, %s)' % (s[j:i], s[a:b + 1], cfg))
        pos = b + 1


def main():
    src, dst = sys.argv[1], sys.argv[2]
    s = open(src).read()
    s = re.sub(r'^#include <(cuda_runtime\.h|cub/[^>]*|thrust/[^>]*)>[^\n]*$', '/* (cuda_host.h) */', s,
               flags=re.M)
    s = rewrite(s)
    with open(dst, 'w') as f:
        f.write(HEADER + '#line 1 "%s"\n' % src + s)


main()

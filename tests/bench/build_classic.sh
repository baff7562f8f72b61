#!/bin/bash
# tests/bench/build_classic.sh — the classic CMU NESL vinterp (serial CVL),
# built from scratch outside the repository ($CLASSIC_ROOT, default
# /work/classic), for the speed comparisons (tests/bench/NOTES.md) and the
# GPU checklist (gpu_checklist.sh prepare --classic $CLASSIC_ROOT/bin/vinterp).
# The NESL sources come from the workplace's fetch tool (github:gblelloch/nesl,
# a git directory without a work tree: $NESL_GITDIR). The portability
# patches below are each checked after they are applied; the result passes
# the 203 programs of ../shared/corpus (2026-11-27).
# Source: github:gblelloch/nesl @ a6addb35f612f140ab50cf5f43acc7b9d0d17b5f, nesl/ subtree.
set -euo pipefail

ROOT=${CLASSIC_ROOT:-/work/classic}
COMMIT=a6addb35f612f140ab50cf5f43acc7b9d0d17b5f
GITDIR=${NESL_GITDIR:-/work/.mirror/gblelloch+nesl/repo/.git}

command -v flex >/dev/null && command -v bison >/dev/null || {
  apt-get update && apt-get install -y flex bison; }

if ! git --git-dir="$GITDIR" cat-file -e "$COMMIT^{commit}" 2>/dev/null; then
  echo "commit $COMMIT not in $GITDIR; using HEAD" >&2
  COMMIT=HEAD
fi

rm -rf "$ROOT/src" "$ROOT/bin"
mkdir -p "$ROOT/src" "$ROOT/bin"
# nesl/bin/neslserver's blob is absent from the mirror (and not needed): exclude it.
git --git-dir="$GITDIR" archive "$COMMIT" -- nesl ':(exclude)nesl/bin/neslserver' \
  | tar -x -C "$ROOT/src"

N=$ROOT/src/nesl
cd "$N"

# Drop the prebuilt binaries/libs shipped in the repo so nothing stale is used.
rm -f bin/vinterp.serial lib/libcvl-serial.a

# --- 1. Timer: wall clock (gettimeofday) instead of getrusage user CPU time.
#     tgt_fos is what START_TIMER/STOP_TIMER and the -t "elapsed time" line use.
sed -i 's/^#if __hpux | __svr4__ | _AIX$/#if __hpux | __svr4__ | _AIX | __linux__/' cvl/serial/facilt.c
grep -q '_AIX | __linux__' cvl/serial/facilt.c

# --- 2. sys_errlist -> strerror
sed -i -e '/extern __const char \*__const sys_errlist\[\];/d' \
       -e 's/sys_errlist\[errno\]/strerror(errno)/g' vcode/main.c vcode/io.c
! grep -q sys_errlist vcode/main.c vcode/io.c

# --- 3. union wait -> int (io.c)
sed -i 's/union wait status;/int status;/' vcode/io.c
! grep -q 'union wait' vcode/io.c

# --- 4. x86-64 is little-endian for float RANK
sed -i 's/^#if mips | alpha | __i860 | i386 $/#if mips | alpha | __i860 | i386 | __x86_64__/; s/^#if mips | alpha | __i860 | i386$/#if mips | alpha | __i860 | i386 | __x86_64__/' cvl/serial/rank.c
grep -q '__x86_64__' cvl/serial/rank.c

# --- 5. flex 2.6.4 declares yyleng as int (yy_size_t is only used internally)
sed -i 's/^extern size_t \tyyleng;/extern int \tyyleng;/' vcode/parse.h
grep -q '^extern int' vcode/parse.h

# --- 6. Regenerate lexer/parser with flex + bison -y
rm -f vcode/lex.yy.c vcode/y.tab.c vcode/y.tab.h
(cd vcode && flex tokens.flex && bison -y -d grammar.yy)

# --- 7. Build
EXTRA=${EXTRA_CFLAGS-}
make linux linuxCvlCC="gcc -O2 $EXTRA" serialCC="gcc -g -O2 $EXTRA"

cp bin/vinterp.serial "$ROOT/bin/vinterp"
echo "built $ROOT/bin/vinterp from commit $(git --git-dir="$GITDIR" rev-parse "$COMMIT")"

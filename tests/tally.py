"""tests/tally.py — the count every script runner keeps (imported as
`from tally import check, finish`): check(NAME, OK, DETAIL) counts a pass,
or prints "FAIL: NAME" and the end of DETAIL; finish() prints the closing
"N passed, N failed" line and exits with status 1 when anything failed."""
import sys

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL: %s%s" % (name, ("\n" + detail[-1500:]) if detail else ""))
    return ok


def finish():
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)

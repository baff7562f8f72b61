/* tests/unit/test_tier_verdict.c — the tiers' per-unit speeds kept in the
 * kernel cache (runtime/fused/tier_verdict.c): the file's path, a round trip,
 * malformed files ignored, and when the fused runs count as the slower. */
#include "check.h"
#include "runtime/fused/tier_verdict.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

int main(void)
{
    char p[64];
    CHECK(tier_verdict_path("/c/0123abcd.c", 0xabcULL, p, sizeof p) == 0 &&
          !strcmp(p, "/c/0123abcd.0000000000000abc.tier"));
    CHECK(tier_verdict_path("/c/0123abcd.cpp", 1, p, sizeof p) == 0 && !strcmp(p, "/c/0123abcd.0000000000000001.tier"));
    CHECK(tier_verdict_path("/c.d/unit", 0xffffffffffffffffULL, p, sizeof p) == 0 &&
          !strcmp(p, "/c.d/unit.ffffffffffffffff.tier"));
    CHECK(tier_verdict_path("/a/very/long/path/name/of/a/unit.c", 1, p, 10) == -1);

    /* programs: the same text, the same identity; one constant other, another */
    Program a, b2;
    memset(&a, 0, sizeof a);
    Instr code[2];
    memset(code, 0, sizeof code);
    code[0].op = 1;
    code[0].ival = 7;
    code[1].op = 2;
    a.code = code;
    a.ncode = 2;
    b2 = a;
    CHECK(tier_program_id(&a) == tier_program_id(&b2));
    Instr code2[2];
    memcpy(code2, code, sizeof code);
    code2[0].ival = 8;
    b2.code = code2;
    CHECK(tier_program_id(&a) != tier_program_id(&b2));

    char dir[] = "/tmp/vinterp-verdict-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/k.tier", dir);
    TierSpeeds s, r;
    CHECK(tier_verdict_read(path, &r) == 0 && r.late_n == 0 && r.fused_work == 0); /* missing */
    memset(&s, 0, sizeof s);
    s.late_n = 3;
    s.late_secs = 0.25;
    s.late_work = 1000000;
    s.fused_n = 40;
    s.fused_secs = 1.5;
    s.fused_work = 20000000;
    CHECK(tier_verdict_write(path, &s) == 0);
    CHECK(tier_verdict_read(path, &r) == 1 && r.late_n == 3 && r.late_work == 1000000 && r.fused_n == 40 &&
          r.fused_work == 20000000 && r.late_secs == 0.25 && r.fused_secs == 1.5);
    /* 0.25 s / 1e6 interpreted against 1.5 s / 2e7 fused: fused faster */
    CHECK(tier_verdict_slower(&r) == 0);
    r.fused_secs = 6.0; /* 3e-7 against 2.5e-7 per unit: slower */
    CHECK(tier_verdict_slower(&r) == 1);
    r.late_n = 1; /* one sampled interpreted run: not enough */
    CHECK(tier_verdict_slower(&r) == -1);
    r.late_n = 2;
    r.fused_n = 3;
    CHECK(tier_verdict_slower(&r) == -1);

    put(path, "vinterp-tier 2 3 0.25 1000000 40 1.5 20000000\n"); /* another version */
    CHECK(tier_verdict_read(path, &r) == 0 && r.late_n == 0);
    put(path, "vinterp-tier 1 3 0.25\n"); /* cut short */
    CHECK(tier_verdict_read(path, &r) == 0);
    put(path, "vinterp-tier 1 -3 0.25 1000000 40 1.5 20000000\n"); /* negative */
    CHECK(tier_verdict_read(path, &r) == 0);
    put(path, "vinterp-tier 1 3 nan 1000000 40 1.5 20000000\n");
    CHECK(tier_verdict_read(path, &r) == 0);
    put(path, "garbage");
    CHECK(tier_verdict_read(path, &r) == 0);
    unlink(path);
    rmdir(dir);
    return check_report("test_tier_verdict");
}

/* tests/unit/test_guard.c — the IFs the device tier takes ahead of their
 * condition (runtime/fused/cuda_guard.h): NESL's runtime error exit in the
 * THEN branch, called or inlined, after POPs of the caller's values; and
 * shapes that are not it. */
#include "check.h"
#include "runtime/fused/cuda_guard.h"
#include "vcode/program.h"

#include <stdlib.h>
#include <string.h>

#define PS "FUNC PS_1\nPOP 1 1\nWRITE CHAR\nPOP 2 0\nCONST BOOL T\nRET\n"
#define MSG "CONST INT 4\nMAKE_SEGDES\nCONST CHAR \"bad!\"\n"

/* The answer for the first IF of SRC's entry function: 1 or 0, with *MSG
 * the message constant's text (its first characters) and *DEPTH. */
static int first_if(const char *src, char *msg, int *depth)
{
    Program p;
    VcError e;
    memset(&p, 0, sizeof p);
    if (vc_parse_string("t.vcode", src, strlen(src), &p, &e) < 0 || vc_link(&p, &e) < 0) {
        fprintf(stderr, "parse: %s\n", e.msg);
        exit(1);
    }
    int pc = p.funcs[p.entry].start;
    while (p.code[pc].op != OP_IF)
        pc++;
    GuardCache *g = guard_cache_new();
    int m = -1, d = -1;
    int r = guard_exit_if(g, &p, pc, &m, &d);
    int again = guard_exit_if(g, &p, pc, &m, &d); /* (the cached answer) */
    CHECK(r == again);
    msg[0] = 0;
    if (r) {
        const VcConst *k = &p.consts[m];
        int64_t n = k->len < 15 ? k->len : 15;
        for (int64_t i = 0; i < n; i++)
            msg[i] = (char)k->ints[i];
        msg[n] = 0;
        *depth = d;
    }
    CHECK(!guard_exit_if(g, &p, pc + 1, &m, &d)); /* not an IF */
    guard_cache_free(g);
    vc_free(&p);
    return r;
}

int main(void)
{
    char msg[16];
    int depth = -1;
    /* called */
    CHECK(first_if("FUNC MAIN1_1\nCONST BOOL F\nIF\n" MSG "CALL PS_1\nPOP 1 0\nCONST INT 0\nEXIT\nPOP 1 0\n"
                   "CONST BOOL T\nELSE\nCONST BOOL F\nENDIF\nRET\n" PS,
                   msg, &depth) == 1);
    CHECK(strcmp(msg, "bad!") == 0 && depth == 0);
    /* inlined (the print function's body in the CALL's place) */
    CHECK(first_if("FUNC MAIN1_1\nCONST BOOL F\nIF\n" MSG "POP 1 1\nWRITE CHAR\nPOP 2 0\nCONST BOOL T\n"
                   "POP 1 0\nCONST INT 0\nEXIT\nELSE\nCONST BOOL F\nENDIF\nRET\n",
                   msg, &depth) == 1);
    CHECK(strcmp(msg, "bad!") == 0 && depth == 0);
    /* the caller's values popped first: POP 1 2, POP 1 1, POP 1 0 need 3
     * entries below the condition; POP 2 1 then POP 1 0, 3 as well */
    CHECK(first_if("FUNC MAIN1_1\nCONST INT 1\nCONST INT 2\nCONST INT 3\nCONST BOOL F\nIF\nPOP 1 2\nPOP 1 1\n"
                   "POP 1 0\n" MSG "CALL PS_1\nPOP 1 0\nCONST INT 0\nEXIT\nELSE\nENDIF\nRET\n" PS,
                   msg, &depth) == 1);
    CHECK(depth == 3);
    CHECK(first_if("FUNC MAIN1_1\nCONST INT 1\nCONST INT 2\nCONST INT 3\nCONST BOOL F\nIF\nPOP 2 1\nPOP 1 0\n" MSG
                   "CALL PS_1\nPOP 1 0\nCONST INT 0\nEXIT\nELSE\nENDIF\nRET\n" PS,
                   msg, &depth) == 1);
    CHECK(depth == 3);
    /* not it: no EXIT (the program goes on) */
    CHECK(first_if("FUNC MAIN1_1\nCONST BOOL F\nIF\n" MSG "CALL PS_1\nPOP 1 0\nCONST INT 0\nELSE\nCONST INT 1\n"
                   "ENDIF\nRET\n" PS,
                   msg, &depth) == 0);
    /* not it: the printed function does more than write (an extra WRITE) */
    CHECK(first_if("FUNC MAIN1_1\nCONST BOOL F\nIF\n" MSG "CALL PX_1\nPOP 1 0\nCONST INT 0\nEXIT\nELSE\nENDIF\n"
                   "RET\nFUNC PX_1\nWRITE INT\nPOP 2 0\nCONST BOOL T\nRET\n",
                   msg, &depth) == 0);
    /* not it: work before the message (an elementwise instruction) */
    CHECK(first_if("FUNC MAIN1_1\nCONST INT 1\nCONST BOOL F\nIF\nCONST INT 2\n+ INT\n" MSG
                   "CALL PS_1\nPOP 1 0\nCONST INT 0\nEXIT\nELSE\nENDIF\nRET\n" PS,
                   msg, &depth) == 0);
    /* not it: the message not a string constant */
    CHECK(first_if("FUNC MAIN1_1\nCONST BOOL F\nIF\nCONST INT 2\nMAKE_SEGDES\nCONST INT (98 97)\nCALL PS_1\n"
                   "POP 1 0\nCONST INT 0\nEXIT\nELSE\nENDIF\nRET\n" PS,
                   msg, &depth) == 0);
    /* not it: the error in the ELSE branch */
    CHECK(first_if("FUNC MAIN1_1\nCONST BOOL F\nIF\nCONST BOOL F\nELSE\n" MSG "CALL PS_1\nPOP 1 0\nCONST INT 0\n"
                   "EXIT\nENDIF\nRET\n" PS,
                   msg, &depth) == 0);
    return check_report("test_guard");
}

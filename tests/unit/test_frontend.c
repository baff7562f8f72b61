/* tests/unit/test_frontend.c — lexer, parser, linker and static checker on
 * small texts whose right answer is written down here. */
#include "check.h"
#include "vcode/lexer.h"
#include "vcode/optable.h"
#include "vcode/program.h"

#include <string.h>
#include <unistd.h>

/* stderr, caught: the lexer's and the front end's warnings go there. */
static char caught[8192];
static int caught_fd = -1;
static FILE *caught_file;

static void catch_begin(void)
{
    fflush(stderr);
    caught_file = tmpfile();
    caught_fd = dup(2);
    if (caught_file && caught_fd >= 0)
        dup2(fileno(caught_file), 2);
}

static const char *catch_end(void)
{
    fflush(stderr);
    caught[0] = 0;
    if (caught_fd >= 0) {
        dup2(caught_fd, 2);
        close(caught_fd);
        caught_fd = -1;
    }
    if (caught_file) {
        rewind(caught_file);
        size_t n = fread(caught, 1, sizeof caught - 1, caught_file);
        caught[n] = 0;
        fclose(caught_file);
        caught_file = NULL;
    }
    return caught;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static Token lex1(const char *s)
{
    Lexer lx;
    lex_init(&lx, s, strlen(s));
    lx.warn = 0;
    return lex_next(&lx);
}

static void test_lexer(void)
{
    /* Longest match, ties to the earlier class (vcode/SPEC.md §1.3). */
    Token t = lex1("5");
    CHECK(t.kind == TK_INT && t.ival == 5);
    t = lex1("-5");
    CHECK(t.kind == TK_INT && t.ival == -5);
    t = lex1("+5");
    CHECK(t.kind == TK_INT && t.ival == 5);
    t = lex1("007");
    CHECK(t.kind == TK_INT && t.ival == 7);
    t = lex1("1.5");
    CHECK(t.kind == TK_FLOAT && t.fval == 1.5);
    t = lex1("5.");
    CHECK(t.kind == TK_FLOAT && t.fval == 5.0);
    t = lex1("-2.5E-3");
    CHECK(t.kind == TK_FLOAT && t.fval == -2.5e-3);
    t = lex1("1e5");
    CHECK(t.kind == TK_WORD);
    t = lex1("1.5e");
    CHECK(t.kind == TK_WORD);
    t = lex1(".5");
    CHECK(t.kind == TK_WORD);
    t = lex1("123abc");
    CHECK(t.kind == TK_WORD);
    t = lex1("+");
    CHECK(t.kind == TK_WORD && tok_is(&t, "+"));
    t = lex1("+_SCAN");
    CHECK(t.kind == TK_WORD && tok_is(&t, "+_SCAN"));
    t = lex1("I");
    CHECK(t.kind == TK_IMARK);
    t = lex1("O");
    CHECK(t.kind == TK_OMARK);
    t = lex1("I1");
    CHECK(t.kind == TK_WORD);
    /* 32-bit truncation of integer literals (§1.4). */
    CHECK(lex_int_value("99999999999", 11) == 1215752191);
    CHECK(lex_int_value("4294967297", 10) == 1);
    CHECK(lex_int_value("2147483648", 10) == (int32_t)-2147483647 - 1);
    CHECK(lex_int_value("-1", 2) == -1);
    /* Comments: to the first '}', lines inside count. */
    Lexer lx;
    const char *src = "{ a\n b } {x}CONST \"s\ntr\" ( )";
    lex_init(&lx, src, strlen(src));
    t = lex_next(&lx);
    CHECK(t.kind == TK_WORD && tok_is(&t, "CONST") && t.line == 2);
    t = lex_next(&lx);
    CHECK(t.kind == TK_STRING && t.len == 4 && memcmp(t.text, "s\ntr", 4) == 0);
    t = lex_next(&lx);
    CHECK(t.kind == TK_LPAREN && t.line == 3);
    t = lex_next(&lx);
    CHECK(t.kind == TK_RPAREN);
    t = lex_next(&lx);
    CHECK(t.kind == TK_EOF);
}

/* Parse, link and check LEN bytes of SRC; what they print on stderr is
 * left in caught[]. */
static int parse_n(const char *src, size_t len, Program *p, VcError *e)
{
    int rc = 0;
    catch_begin();
    if (vc_parse_string("t.vcode", src, len, p, e) < 0)
        rc = -1;
    else if (vc_link(p, e) < 0)
        rc = -2;
    else if (vc_check(p, e) < 0)
        rc = -3;
    catch_end();
    return rc;
}

static int parse(const char *src, Program *p, VcError *e) { return parse_n(src, strlen(src), p, e); }

static void test_parser(void)
{
    Program p;
    VcError e;
    const char *src =
        "{ demo }\n"
        "FUNC F1 I INT O INT\n"
        "CONST INT (1 2 3)\n"
        "CONST FLOAT 2.5\n"
        "CONST CHAR \"ab\"\n"
        "CONST SEGDES 3\n"
        "CONST BOOL ( T F )\n"
        "COPY 2 1\n"
        "IF\n"
        "ELSE\n"
        "ENDIF\n"
        "CALL G\n"
        "RET\n"
        "FUNC G\n"
        "RET\n";
    CHECK(vc_parse_string("t.vcode", src, strlen(src), &p, &e) == 0);
    CHECK(p.nfuncs == 2);
    CHECK(p.ncode == 12);
    CHECK(p.code[0].op == OP_CONST && p.code[0].ckind == CK_VECTOR && p.consts[p.code[0].cidx].len == 3);
    CHECK(p.code[1].op == OP_CONST && p.code[1].ckind == CK_SCALAR && p.code[1].fval == 2.5);
    CHECK(p.consts[p.code[2].cidx].is_string && p.consts[p.code[2].cidx].ints[1] == 'b');
    CHECK(p.consts[p.code[3].cidx].type == TY_SEGDES && p.consts[p.code[3].cidx].ints[0] == 3);
    CHECK(p.code[5].op == OP_COPY && p.code[5].a == 2 && p.code[5].b == 1);
    CHECK(p.code[6].op == OP_IF && p.code[6].target == 8);   /* after the ELSE */
    CHECK(p.code[7].op == OP_ELSE && p.code[7].target == 8); /* the ENDIF */
    CHECK(p.code[0].line == 3 && p.code[10].line == 13 && p.code[11].line == 15);
    CHECK(vc_link(&p, &e) == 0);
    CHECK(p.code[9].target == 1 && p.entry == 0);
    vc_free(&p);

    /* Syntax errors are fatal and name the token. */
    CHECK(parse("FUNC M\nCONST FLOAT 1\nRET\n", &p, &e) == -1);
    CHECK(e.line == 2 && strstr(e.msg, "'1'") != NULL);
    vc_free(&p);
    CHECK(parse("FUNC M\nCONST INT (1 2.0)\nRET\n", &p, &e) == -1);
    CHECK(strstr(e.msg, "illegal type mixing") != NULL);
    vc_free(&p);
    CHECK(parse("FUNC M\nMAX_SCAN BOOL\nRET\n", &p, &e) == -1);
    vc_free(&p);
    CHECK(parse("CONST INT 1\nFUNC M\nRET\n", &p, &e) == -1);
    vc_free(&p);
    CHECK(parse("FUNC M\nIF\nRET\n", &p, &e) == -1);
    vc_free(&p);
    CHECK(parse("FUNC M\nENDIF\nRET\n", &p, &e) == -1);
    vc_free(&p);
    CHECK(parse("FUNC M\nCONST INT 1\n", &p, &e) == -1);
    vc_free(&p);
    CHECK(parse("", &p, &e) == -1);
    vc_free(&p);
    CHECK(parse("FUNC MAIN\nRET\nFUNC MAIN\nRET\n", &p, &e) == -1);
    vc_free(&p);
    CHECK(parse("FUNC M\nCALL F\nRET\n", &p, &e) == -1); /* T/F are keywords */
    vc_free(&p);

    /* Linking: undefined names, MAIN as entry, the later definition wins. */
    CHECK(parse("FUNC M\nCALL NOPE\nRET\n", &p, &e) == -2);
    CHECK(strstr(e.msg, "NOPE") != NULL && e.line == 2);
    vc_free(&p);
    CHECK(parse("FUNC A\nRET\nFUNC MAIN\nRET\n", &p, &e) == 0);
    CHECK(p.entry == 1);
    vc_free(&p);
    CHECK(parse("FUNC A\nCALL B\nRET\nFUNC B\nCONST INT 1\nRET\nFUNC B\nCONST INT 2\nCONST INT 3\nRET\n", &p, &e) == 0);
    CHECK(p.code[0].target == 2 && !p.funcs[1].live && p.funcs[2].live);
    CHECK(p.funcs[0].sum.known && p.funcs[0].sum.nout == 2);
    vc_free(&p);
}

static void test_checker(void)
{
    Program p;
    VcError e;
    /* A function's summary: consumes two Ints, leaves their sum and a Bool. */
    const char *src =
        "FUNC MAIN\n"
        "CONST INT 1\n"
        "CONST INT 2\n"
        "CALL ADDB\n"
        "RET\n"
        "FUNC ADDB\n"
        "+ INT\n"
        "CONST BOOL T\n"
        "RET\n";
    CHECK(parse(src, &p, &e) == 0);
    const Func *f = &p.funcs[1];
    CHECK(f->sum.known && f->sum.nin == 2 && f->sum.nout == 2);
    CHECK(f->sum.out[0] == AT_INT && f->sum.out[1] == AT_BOOL);
    /* Per instruction: depth and slot types. Before CALL the stack is Int Int. */
    const InstrState *st = &p.state[2];
    CHECK(st->reached && st->depth == 2 && st->nslots == 2);
    CHECK(st->slots[0] == AT_INT && st->slots[1] == AT_INT);
    /* Before RET of MAIN: Int Bool. */
    st = &p.state[3];
    CHECK(st->depth == 2 && st->slots[0] == AT_INT && st->slots[1] == AT_BOOL);
    /* Inside ADDB, "+" reads two caller slots. */
    st = &p.state[4];
    CHECK(st->depth == 0);
    vc_free(&p);

    /* Pass-through: a function that swaps its inputs keeps their types. */
    CHECK(parse("FUNC MAIN\nCONST FLOAT 1.0\nCONST INT 2\nCALL SW\nRET\nFUNC SW\nCPOP 1 1\nRET\n", &p, &e) == 0);
    CHECK(p.funcs[1].sum.nin == 2 && AT_IS_INPUT(p.funcs[1].sum.out[0]));
    CHECK(p.state[3].slots[0] == AT_INT && p.state[3].slots[1] == AT_FLOAT);
    vc_free(&p);

    /* Recursion: the summary comes from the base case. */
    const char *rec =
        "FUNC MAIN\nCONST INT 5\nCALL R\nRET\n"
        "FUNC R\nCOPY 1 0\nCONST INT 0\n= INT\nIF\nELSE\nCONST INT 1\n- INT\nCALL R\nENDIF\nRET\n";
    CHECK(parse(rec, &p, &e) == 0);
    CHECK(p.funcs[1].sum.known && p.funcs[1].sum.nin == 1 && p.funcs[1].sum.nout == 1);
    /* The arms leave the input itself and a fresh Int: merged to "any". */
    CHECK(p.state[2].nslots == 1 && p.state[2].depth == 1);
    vc_free(&p);

    /* Definite errors. */
    CHECK(parse("FUNC MAIN\nCONST FLOAT 1.0\nCONST FLOAT 2.0\n+ INT\nRET\n", &p, &e) == -3);
    CHECK(e.line == 4 && strstr(e.msg, "Float") != NULL);
    vc_free(&p);
    CHECK(parse("FUNC MAIN\nCONST INT 1\n+ INT\nRET\n", &p, &e) == -3);
    CHECK(strstr(e.msg, "underflow") != NULL);
    vc_free(&p);
    /* Arms that leave different depths are legal VCODE: the state after
     * the ENDIF is reached but not determined. */
    CHECK(parse("FUNC MAIN\nCONST BOOL T\nIF\nCONST INT 1\nELSE\nENDIF\nCONST INT 2\nRET\n", &p, &e) == 0);
    CHECK(p.state[5].reached && !p.state[5].determined);
    CHECK(p.state[1].reached && p.state[1].determined);
    vc_free(&p);
    /* Errors in functions the entry never calls are not reported. */
    CHECK(parse("FUNC MAIN\nRET\nFUNC U\nCONST FLOAT 1.0\nLENGTHS\nRET\n", &p, &e) == 0);
    vc_free(&p);
    CHECK(parse("FUNC MAIN\nCONST INT 1\nLENGTHS\nRET\n", &p, &e) == -3);
    vc_free(&p);
    /* IF on a Float runs as in the classic (a warning); on a pair it cannot */
    CHECK(parse("FUNC MAIN\nCONST FLOAT 1.0\nIF\nENDIF\nRET\n", &p, &e) == 0);
    vc_free(&p);
    CHECK(parse("FUNC MAIN\nCONST INT 1\nCONST INT 2\nPAIR\nIF\nENDIF\nRET\n", &p, &e) == -3);
    vc_free(&p);
    CHECK(parse("FUNC MAIN\nFUSED 0\nRET\n", &p, &e) == -3);
    vc_free(&p);
    /* EXIT ends a path: the arms need not agree after it. */
    CHECK(parse("FUNC MAIN\nCONST BOOL T\nIF\nCONST INT 1\nELSE\nEXIT\nENDIF\nRET\n", &p, &e) == 0);
    vc_free(&p);
}

/* Accepted, as the classic accepts it, with one line on stderr each
 * (CRLF: silently). */
static void test_warnings(void)
{
    Program p, q;
    VcError e;
    /* '\r' is white space: a CRLF text is the LF text, with its lines. */
    const char *lf = "FUNC MAIN\nCONST INT 1\n{ a\n b }\nCONST INT 2\n+ INT\nRET\n";
    const char *crlf = "FUNC MAIN\r\nCONST INT 1\r\n{ a\r\n b }\r\nCONST INT 2\r\n+\rINT\r\nRET\r\n";
    CHECK(parse(lf, &p, &e) == 0 && caught[0] == 0);
    CHECK(parse(crlf, &q, &e) == 0 && caught[0] == 0);
    CHECK(p.ncode == q.ncode && q.ncode == 4);
    for (int i = 0; i < p.ncode && i < q.ncode; i++)
        CHECK(p.code[i].op == q.code[i].op && p.code[i].line == q.code[i].line &&
              p.code[i].cline == q.code[i].cline);
    CHECK(q.code[2].line == 6);
    vc_free(&p);
    vc_free(&q);
    Lexer lx;
    catch_begin();
    lex_init(&lx, "\r\r5\r", 4);
    Token t = lex_next(&lx);
    catch_end();
    CHECK(t.kind == TK_INT && t.ival == 5 && caught[0] == 0);

    /* A NUL byte: the classic's warning, once, and the rest of the line is read. */
    static const char nul[] = "FUNC MAIN\nCONST INT 1\0CONST INT 2\n{ \0 }RET\n";
    CHECK(parse_n(nul, sizeof nul - 1, &p, &e) == 0);
    CHECK(strcmp(caught, "vinterp: lexer: Unexpected character in input at line 2\n") == 0);
    CHECK(p.ncode == 3 && p.code[1].op == OP_CONST && p.code[1].ival == 2);
    vc_free(&p);

    /* IF on an Int the checker knows: one warning naming the line. */
    CHECK(parse("FUNC MAIN\nCONST INT 1\nIF\nELSE\nENDIF\nRET\n", &p, &e) == 0);
    CHECK(strstr(caught, "vinterp: t.vcode:3: warning: IF on an Int, not a Bool") == caught);
    CHECK(count_lines(caught) == 1);
    /* Programs made from this one (p->warn NULL) print nothing. */
    p.warn = NULL;
    catch_begin();
    CHECK(vc_check(&p, &e) == 0);
    catch_end();
    CHECK(caught[0] == 0);
    vc_free(&p);
    /* A Bool, an input whose type is not known here, unreachable code: none. */
    CHECK(parse("FUNC MAIN\nCONST BOOL T\nIF\nENDIF\nCONST INT 1\nCALL G\nRET\n"
                "FUNC G\nIF\nELSE\nENDIF\nRET\nFUNC U\nCONST INT 0\nIF\nENDIF\nRET\n", &p, &e) == 0);
    CHECK(caught[0] == 0);
    vc_free(&p);

    /* IF arms of different depths: one warning at the IF, with the ENDIF's line. */
    CHECK(parse("FUNC MAIN\nCONST BOOL T\nIF\nCONST INT 1\nELSE\nCONST INT 1\nCONST INT 2\nENDIF\nRET\n",
                &p, &e) == 0);
    CHECK(strstr(caught, "vinterp: t.vcode:3: warning: IF: its arms leave different stack depths at the ENDIF on "
                         "line 8 (true arm +1, false arm +2)") == caught);
    CHECK(count_lines(caught) == 1);
    CHECK(p.state[7].reached && !p.state[7].determined);
    vc_free(&p);
    /* An arm that pops one of the caller's values. */
    CHECK(parse("FUNC MAIN\nCONST INT 5\nCALL G\nRET\nFUNC G\nCONST BOOL T\nIF\nPOP 1 0\nENDIF\nRET\n", &p, &e) == 0);
    CHECK(strstr(caught, "vinterp: t.vcode:7: warning: IF: its arms leave different stack depths at the ENDIF on "
                         "line 9 (true arm -1, false arm +0)") == caught && count_lines(caught) == 1);
    vc_free(&p);
    /* Balanced arms, an arm that EXITs, a warning of the kind in code the
     * entry never calls: none. */
    CHECK(parse("FUNC MAIN\nCONST BOOL T\nIF\nCONST INT 1\nELSE\nCONST INT 2\nENDIF\n"
                "CONST BOOL T\nIF\nEXIT\nENDIF\nRET\nFUNC U\nCONST BOOL T\nIF\nCONST INT 1\nENDIF\nRET\n",
                &p, &e) == 0);
    CHECK(caught[0] == 0);
    vc_free(&p);
    /* Warnings stop at the first definite error (it is printed last). */
    CHECK(parse("FUNC MAIN\nCONST FLOAT 1.0\nCONST INT 1\n+ INT\nCONST INT 1\nIF\nENDIF\nRET\n", &p, &e) == -3);
    CHECK(caught[0] == 0);
    vc_free(&p);

    /* Function names of 50 or more characters: one warning per FUNC, at
     * the name's line; the whole name links. 49 characters: none. */
    char src[1024];
    const char *n49 = "F123456789012345678901234567890123456789012345678";
    const char *n50 = "F1234567890123456789012345678901234567890123456789";
    CHECK(strlen(n49) == 49 && strlen(n50) == 50);
    snprintf(src, sizeof src, "FUNC MAIN\nCALL %s\nCALL %s\nCALL %sX\nRET\nFUNC %s\nRET\nFUNC %s\nRET\nFUNC\n%sX\nRET\n",
             n49, n50, n50, n49, n50, n50);
    CHECK(parse(src, &p, &e) == 0);
    CHECK(count_lines(caught) == 2);
    CHECK(strstr(caught, "vinterp: t.vcode:8: warning: function name 'F123456789012345678901234567890123456789012345678...' "
                         "is 50 characters long; the classic interpreter truncates names of 50 or more characters to "
                         "49, this one uses the whole name\n") == caught);
    CHECK(strstr(caught, "vinterp: t.vcode:11: warning: function name '") != NULL &&
          strstr(caught, "' is 51 characters long;") != NULL);
    CHECK(p.code[1].target == 2 && p.code[2].target == 3);
    vc_free(&p);
}

int main(void)
{
    test_lexer();
    test_parser();
    test_checker();
    test_warnings();
    return check_report("frontend");
}

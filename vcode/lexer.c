/* vcode/lexer.c — VCODE tokens by longest match (vcode/SPEC.md §1.3). */
#include "vcode/lexer.h"

#include <stdlib.h>
#include <string.h>

void lex_init(Lexer *lx, const char *src, size_t len)
{
    memset(lx, 0, sizeof *lx);
    lx->src = src;
    lx->len = len;
    lx->line = 1;
    lx->cline = 1;
    lx->warn = 1;
}

static int is_word_char(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '+' || c == '*' || c == '/' || c == '%' || c == '<' ||
           c == '>' || c == '=' || c == '!' || c == '.' || c == '_';
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }

/* Length of the integer literal at s (0 if none). */
static size_t match_int(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    size_t d = i;
    while (i < n && is_digit((unsigned char)s[i]))
        i++;
    return i > d ? i : 0;
}

/* Length of the float literal at s (0 if none): digits '.' digits* exponent? */
static size_t match_float(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    size_t d = i;
    while (i < n && is_digit((unsigned char)s[i]))
        i++;
    if (i == d || i >= n || s[i] != '.')
        return 0;
    i++;
    while (i < n && is_digit((unsigned char)s[i]))
        i++;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < n && (s[j] == '+' || s[j] == '-'))
            j++;
        size_t e = j;
        while (j < n && is_digit((unsigned char)s[j]))
            j++;
        if (j > e)
            i = j;
    }
    return i;
}

int32_t lex_int_value(const char *s, size_t len)
{
    size_t i = 0;
    int neg = 0;
    if (i < len && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    /* Accumulate the magnitude, saturating at 2^63. */
    uint64_t mag = 0;
    int sat = 0;
    for (; i < len; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (mag > (UINT64_C(1) << 63) / 10 || mag * 10 + d > (UINT64_C(1) << 63))
            sat = 1;
        if (!sat)
            mag = mag * 10 + d;
    }
    int64_t v;
    if (neg)
        v = (sat || mag >= (UINT64_C(1) << 63)) ? INT64_MIN : -(int64_t)mag;
    else
        v = (sat || mag >= (UINT64_C(1) << 63)) ? INT64_MAX : (int64_t)mag;
    return (int32_t)(uint32_t)(uint64_t)v;
}

static void trace(Lexer *lx, const char *s, size_t n)
{
    if (lx->trace) {
        fwrite(s, 1, n, lx->trace);
        fputc('\n', lx->trace);
    }
}

Token lex_next(Lexer *lx)
{
    Token t;
    memset(&t, 0, sizeof t);
    const char *s = lx->src;
    size_t n = lx->len;
    for (;;) {
        if (lx->pos >= n) {
            t.kind = TK_EOF;
            t.line = lx->line;
            t.cline = lx->cline;
            return t;
        }
        unsigned char c = (unsigned char)s[lx->pos];
        /* '\r' is white space here, though not in the classic (which warns
         * "Unexpected character" once per CRLF line): CRLF files run
         * silently, with the LF file's lines and output. */
        if (c == ' ' || c == '\t' || c == '\r') {
            lx->pos++;
            continue;
        }
        if (c == '\n') {
            lx->line++;
            lx->cline++;
            lx->pos++;
            continue;
        }
        if (c == '{') {
            size_t start = lx->pos;
            while (lx->pos < n && s[lx->pos] != '}') {
                if (s[lx->pos] == '\n')
                    lx->line++;
                lx->pos++;
            }
            if (lx->pos < n)
                lx->pos++;
            trace(lx, s + start, lx->pos - start);
            continue;
        }
        t.line = lx->line;
        t.cline = lx->cline;
        if (c == '(' || c == ')') {
            t.kind = c == '(' ? TK_LPAREN : TK_RPAREN;
            t.text = s + lx->pos;
            t.len = 1;
            lx->pos++;
            trace(lx, t.text, 1);
            return t;
        }
        if (c == '"') {
            int open_line = lx->line;
            size_t start = ++lx->pos;
            while (lx->pos < n && s[lx->pos] != '"') {
                if (s[lx->pos] == '\n')
                    lx->line++;
                lx->pos++;
            }
            t.kind = TK_STRING;
            t.text = s + start;
            t.len = lx->pos - start;
            if (lx->pos >= n) {
                /* Unterminated: report as a string running to EOF; the
                 * parser rejects it. */
                t.kind = TK_EOF;
                t.line = open_line;
                t.cline = lx->cline;
                t.text = "unterminated string";
                t.len = strlen(t.text);
                t.ival = -1;
                return t;
            }
            lx->pos++;
            trace(lx, t.text - 1, t.len + 2);
            return t;
        }
        if (is_word_char(c)) {
            const char *p = s + lx->pos;
            size_t rest = n - lx->pos, w = 0;
            while (w < rest && is_word_char((unsigned char)p[w]))
                w++;
            size_t li = match_int(p, rest), lf = match_float(p, rest);
            t.text = p;
            t.len = w;
            if (li == w) {
                t.kind = TK_INT;
                t.ival = lex_int_value(p, w);
            } else if (lf == w) {
                t.kind = TK_FLOAT;
                char buf[512];
                size_t k = w < sizeof buf - 1 ? w : sizeof buf - 1;
                memcpy(buf, p, k);
                buf[k] = 0;
                t.fval = strtod(buf, NULL);
            } else if (w == 1 && p[0] == 'I') {
                t.kind = TK_IMARK;
            } else if (w == 1 && p[0] == 'O') {
                t.kind = TK_OMARK;
            } else {
                t.kind = TK_WORD;
            }
            lx->pos += w;
            trace(lx, p, w);
            return t;
        }
        if (lx->warn)
            fprintf(stderr, "vinterp: lexer: Unexpected character in input at line %d\n", lx->cline);
        lx->pos++;
    }
}

int tok_is(const Token *t, const char *w)
{
    size_t n = strlen(w);
    return t->kind == TK_WORD && t->len == n && memcmp(t->text, w, n) == 0;
}

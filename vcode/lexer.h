/* vcode/lexer.h — tokens of VCODE text (vcode/SPEC.md §1). */
#ifndef VCODE_LEXER_H
#define VCODE_LEXER_H

#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

typedef enum {
    TK_EOF = 0,
    TK_INT,         /* integer literal; ival */
    TK_FLOAT,       /* float literal; fval */
    TK_IMARK,       /* I */
    TK_OMARK,       /* O */
    TK_WORD,        /* keyword or identifier; text */
    TK_STRING,      /* "..."; text (without quotes), len */
    TK_LPAREN,
    TK_RPAREN
} TokKind;

typedef struct {
    TokKind kind;
    int line;           /* source line */
    int cline;          /* the classic interpreter's line count, which skips
                           newlines inside comments and strings (vcode/SPEC.md §1.1) */
    const char *text;   /* points into the source; not NUL-terminated */
    size_t len;
    int32_t ival;
    double fval;
} Token;

typedef struct {
    const char *src;
    size_t len, pos;
    int line, cline;
    FILE *trace;        /* -d lex: echo every token and comment here */
    int warn;           /* print unexpected-character warnings */
} Lexer;

void lex_init(Lexer *lx, const char *src, size_t len);
/* Next token; comments and whitespace (space, tab, newline, and '\r', which
 * the classic does not take as white space) are skipped; any other
 * unexpected byte, NUL included, is reported on stderr with the classic's
 * text, one line per byte, and skipped (the token before it ends there, the
 * text after it is lexed as usual). */
Token lex_next(Lexer *lx);
/* 1 when the token is the word W. */
int tok_is(const Token *t, const char *w);

/* Literal conversion as the classic does it (sscanf %d: clamp to 64 bits,
 * keep the low 32). Exposed for the unit tests. */
int32_t lex_int_value(const char *s, size_t len);

#endif

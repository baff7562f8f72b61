/* vcode/parser.c — VCODE text → Program (vcode/SPEC.md §2).
 *
 * Unlike the classic interpreter, every syntax error is fatal: the message
 * names the file, the line and the offending token. */
#include "vcode/program.h"
#include "vcode/xalloc.h"
#include "vcode/lexer.h"
#include "vcode/optable.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

VcTrace vc_trace;

typedef struct {
    Lexer lx;
    Token tok;          /* current token */
    Program *p;
    VcError *err;
    int failed;
} Parser;

static char *xstrndup(const char *s, size_t n)
{
    char *d = vc_xrealloc(NULL, n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static void advance(Parser *ps) { ps->tok = lex_next(&ps->lx); }

static void describe(const Token *t, char *buf, size_t n)
{
    switch (t->kind) {
    case TK_EOF:
        snprintf(buf, n, t->ival == -1 ? "unterminated string" : "end of file");
        break;
    case TK_STRING:
        snprintf(buf, n, "string \"%.*s\"", (int)(t->len > 40 ? 40 : t->len), t->text);
        break;
    default:
        snprintf(buf, n, "'%.*s'", (int)(t->len > 60 ? 60 : t->len), t->text);
    }
}

static int fail(Parser *ps, int line, const char *fmt, ...)
{
    if (ps->failed)
        return -1;
    ps->failed = 1;
    ps->err->line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err->msg, sizeof ps->err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

/* A parse error the classic interpreter reports with a fixed text: the
 * message is printed as is (vcode/SPEC.md §6.2). */
static int fail_classic(Parser *ps, const char *fmt, ...)
{
    if (ps->failed)
        return -1;
    ps->failed = 1;
    ps->err->classic = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err->msg, sizeof ps->err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

static int syntax(Parser *ps, const char *expected)
{
    char what[128];
    describe(&ps->tok, what, sizeof what);
    return fail(ps, ps->tok.line, "syntax error: unexpected %s, expected %s", what, expected);
}

static const char *const other_keywords[] = {
    "FUNC", "INT", "BOOL", "FLOAT", "SEGDES", "CHAR",
    "T", "F", "STDIN", "STDOUT", "STDERR", "NULL_STREAM", "MAIN", NULL
};

static int is_keyword(const Token *t)
{
    if (t->kind != TK_WORD)
        return 0;
    char buf[64];
    if (t->len >= sizeof buf)
        return 0;
    memcpy(buf, t->text, t->len);
    buf[t->len] = 0;
    if (vc_op_lookup(buf) != OP_COUNT)
        return 1;
    for (int i = 0; other_keywords[i]; i++)
        if (strcmp(buf, other_keywords[i]) == 0)
            return 1;
    return 0;
}

static VcType type_word(const Token *t)
{
    if (tok_is(t, "INT")) return TY_INT;
    if (tok_is(t, "BOOL")) return TY_BOOL;
    if (tok_is(t, "FLOAT")) return TY_FLOAT;
    if (tok_is(t, "SEGDES")) return TY_SEGDES;
    if (tok_is(t, "CHAR")) return TY_CHAR;
    return TY_NONE;
}

static Instr *emit(Parser *ps, Opcode op)
{
    Program *p = ps->p;
    if (p->ncode == p->capcode) {
        p->capcode = p->capcode ? 2 * p->capcode : 256;
        p->code = vc_xrealloc(p->code, (size_t)p->capcode * sizeof *p->code);
    }
    Instr *in = &p->code[p->ncode++];
    memset(in, 0, sizeof *in);
    in->op = op;
    in->line = ps->tok.line;
    in->cline = ps->tok.cline;
    in->target = -1;
    in->cidx = -1;
    return in;
}

static int add_const(Parser *ps, VcType t, int64_t len, int32_t *ints, double *floats, int line)
{
    Program *p = ps->p;
    if (p->nconsts == p->capconsts) {
        p->capconsts = p->capconsts ? 2 * p->capconsts : 64;
        p->consts = vc_xrealloc(p->consts, (size_t)p->capconsts * sizeof *p->consts);
    }
    VcConst *c = &p->consts[p->nconsts];
    c->type = t;
    c->len = len;
    c->ints = ints;
    c->floats = floats;
    c->is_string = 0;
    c->line = line;
    return p->nconsts++;
}

/* CONST forms (vcode/SPEC.md §2.3). The current token follows CONST. */
static int parse_const(Parser *ps, Instr *in)
{
    VcType t = type_word(&ps->tok);
    if (t == TY_NONE)
        return syntax(ps, "a type after CONST");
    in->type = t;
    advance(ps);
    Token v = ps->tok;
    if (t == TY_CHAR) {
        if (v.kind != TK_STRING)
            return syntax(ps, "a string after CONST CHAR");
        int32_t *codes = vc_xrealloc(NULL, (v.len ? v.len : 1) * sizeof *codes);
        for (size_t i = 0; i < v.len; i++)
            codes[i] = (signed char)v.text[i];
        in->type = TY_INT;
        in->ckind = CK_VECTOR;
        in->cidx = add_const(ps, TY_INT, (int64_t)v.len, codes, NULL, v.line);
        ps->p->consts[in->cidx].is_string = 1;
        in->line = v.line;
        in->cline = v.cline;
        advance(ps);
        return 0;
    }
    if (v.kind == TK_LPAREN) {
        size_t cap = 16, n = 0;
        int32_t *ints = NULL;
        double *fl = NULL;
        if (t == TY_FLOAT)
            fl = vc_xrealloc(NULL, cap * sizeof *fl);
        else
            ints = vc_xrealloc(NULL, cap * sizeof *ints);
        char mixing[2048];
        mixing[0] = 0;
        advance(ps);
        while (ps->tok.kind != TK_RPAREN) {
            Token e = ps->tok;
            if (e.kind == TK_EOF) {
                free(ints);
                free(fl);
                return syntax(ps, "')' closing the vector constant");
            }
            int ok = 0;
            if (t == TY_INT && e.kind == TK_INT)
                ok = 1;
            else if (t == TY_FLOAT && e.kind == TK_FLOAT)
                ok = 1;
            else if (t == TY_BOOL && (tok_is(&e, "T") || tok_is(&e, "F")))
                ok = 1;
            if (!ok) {
                if (e.kind != TK_INT && e.kind != TK_FLOAT && !tok_is(&e, "T") && !tok_is(&e, "F")) {
                    free(ints);
                    free(fl);
                    return syntax(ps, "a literal or ')' in the vector constant");
                }
                /* The classic reports every offending element, then fails. */
                size_t used = strlen(mixing);
                if (used + 100 < sizeof mixing)
                    snprintf(mixing + used, sizeof mixing - used,
                             "vinterp: line %d: parse error: illegal type mixing in constant\n", e.cline);
                advance(ps);
                continue;
            }
            if (n == cap) {
                cap *= 2;
                if (fl)
                    fl = vc_xrealloc(fl, cap * sizeof *fl);
                else
                    ints = vc_xrealloc(ints, cap * sizeof *ints);
            }
            if (t == TY_INT)
                ints[n++] = e.ival;
            else if (t == TY_FLOAT)
                fl[n++] = e.fval;
            else
                ints[n++] = tok_is(&e, "T");
            advance(ps);
        }
        in->line = ps->tok.line;
        in->cline = ps->tok.cline;
        if (mixing[0]) {
            free(ints);
            free(fl);
            return fail_classic(ps, "%sParse failure", mixing);
        }
        in->ckind = CK_VECTOR;
        in->cidx = add_const(ps, t, (int64_t)n, ints, fl, in->line);
        advance(ps);
        return 0;
    }
    in->line = v.line;
    in->cline = v.cline;
    in->ckind = CK_SCALAR;
    switch (t) {
    case TY_INT:
        if (v.kind == TK_INT)
            in->ival = v.ival;
        else if (tok_is(&v, "STDIN"))
            in->ival = 0;
        else if (tok_is(&v, "STDOUT"))
            in->ival = 1;
        else if (tok_is(&v, "STDERR"))
            in->ival = 2;
        else if (tok_is(&v, "NULL_STREAM"))
            in->ival = -1;
        else
            return syntax(ps, "an integer after CONST INT");
        break;
    case TY_FLOAT:
        if (v.kind != TK_FLOAT)
            return syntax(ps, "a float literal (with a '.') after CONST FLOAT");
        in->fval = v.fval;
        break;
    case TY_BOOL:
        if (tok_is(&v, "T"))
            in->ival = 1;
        else if (tok_is(&v, "F"))
            in->ival = 0;
        else
            return syntax(ps, "T or F after CONST BOOL");
        break;
    case TY_SEGDES: {
        if (v.kind != TK_INT)
            return syntax(ps, "a length after CONST SEGDES");
        int32_t *l = vc_xrealloc(NULL, sizeof *l);
        l[0] = v.ival;
        in->ckind = CK_VECTOR;
        in->cidx = add_const(ps, TY_SEGDES, 1, l, NULL, v.line);
        break;
    }
    default:
        return syntax(ps, "a type after CONST");
    }
    advance(ps);
    return 0;
}

static int operand_ok(OperandKind k, VcType t)
{
    switch (k) {
    case OPND_NUM: return t == TY_INT || t == TY_FLOAT;
    case OPND_LOGIC: return t == TY_INT || t == TY_BOOL;
    case OPND_ALL3: return t == TY_INT || t == TY_BOOL || t == TY_FLOAT;
    case OPND_ALL5: return t != TY_NONE;
    case OPND_INTONLY: return t == TY_INT;
    default: return 0;
    }
}

static const char *operand_expect(OperandKind k)
{
    switch (k) {
    case OPND_NUM: return "INT or FLOAT";
    case OPND_LOGIC: return "INT or BOOL";
    case OPND_ALL3: return "INT, BOOL or FLOAT";
    case OPND_ALL5: return "INT, BOOL, FLOAT, SEGDES or CHAR";
    case OPND_INTONLY: return "INT";
    default: return "an operand";
    }
}

#define MAX_IF_DEPTH 50

/* The classic's label buffer: names of this many characters or more are
 * truncated to one less. */
#define CLASSIC_NAME_MAX 50

static void add_func(Parser *ps, const Token *name, int line)
{
    Program *p = ps->p;
    if (p->nfuncs == p->capfuncs) {
        p->capfuncs = p->capfuncs ? 2 * p->capfuncs : 64;
        p->funcs = vc_xrealloc(p->funcs, (size_t)p->capfuncs * sizeof *p->funcs);
    }
    Func *f = &p->funcs[p->nfuncs++];
    memset(f, 0, sizeof *f);
    f->name = xstrndup(name->text, name->len);
    f->start = p->ncode;
    f->end = -1;
    f->line = line;
    f->live = 1;
}

/* One function: FUNC name [I types O types] statements RET. */
static int parse_function(Parser *ps)
{
    int fline = ps->tok.line, fcline = ps->tok.cline;
    advance(ps);
    Token name = ps->tok;
    if (name.kind != TK_WORD || (is_keyword(&name) && !tok_is(&name, "MAIN")))
        return syntax(ps, "a function name after FUNC");
    if (tok_is(&name, "MAIN")) {
        for (int i = 0; i < ps->p->nfuncs; i++)
            if (strcmp(ps->p->funcs[i].name, "MAIN") == 0)
                return fail_classic(ps, "attempt to redefine main\n"
                                    "vinterp: line %d: warning: label MAIN being redefined.\nParse failure",
                                    name.cline);
    }
    add_func(ps, &name, fline);
    ps->p->funcs[ps->p->nfuncs - 1].cline = fcline;
    /* The classic keeps 49 characters of a longer name ("label NAME greater
     * than 50 characters, truncating.", vcode/SPEC.md §1.6), so a CALL by the
     * whole name does not resolve there; here the whole name is the name.
     * One warning per FUNC (CALLs say nothing: any that resolve name a FUNC
     * that has warned). */
    if (name.len >= CLASSIC_NAME_MAX && ps->p->warn)
        fprintf(ps->p->warn,
                "vinterp: %s:%d: warning: function name '%.*s...' is %zu characters long; the classic "
                "interpreter truncates names of %d or more characters to %d, this one uses the whole name\n",
                ps->p->filename, name.line, CLASSIC_NAME_MAX - 1, name.text, name.len, CLASSIC_NAME_MAX,
                CLASSIC_NAME_MAX - 1);
    advance(ps);
    if (ps->tok.kind == TK_IMARK) {
        advance(ps);
        while (type_word(&ps->tok) != TY_NONE)
            advance(ps);
        if (ps->tok.kind != TK_OMARK)
            return syntax(ps, "O and the output types after the input types");
        advance(ps);
        while (type_word(&ps->tok) != TY_NONE)
            advance(ps);
    }
    int ifstack[MAX_IF_DEPTH];
    int ifdepth = 0;
    for (;;) {
        Token t = ps->tok;
        if (t.kind == TK_EOF)
            return syntax(ps, ifdepth ? "ENDIF" : "RET ending the function");
        if (t.kind != TK_WORD)
            return syntax(ps, "an instruction");
        if (tok_is(&t, "FUNC"))
            return syntax(ps, "RET before the next FUNC");
        char word[32];
        Opcode op = OP_COUNT;
        if (t.len < sizeof word) {
            memcpy(word, t.text, t.len);
            word[t.len] = 0;
            op = vc_op_lookup(word);
        }
        if (op == OP_COUNT)
            return syntax(ps, "an instruction");
        const OpInfo *oi = &vc_ops[op];
        Instr *in = emit(ps, op);
        int idx = ps->p->ncode - 1;
        advance(ps);
        switch (oi->operand) {
        case OPND_NONE:
            break;
        case OPND_NUM:
        case OPND_LOGIC:
        case OPND_ALL3:
        case OPND_ALL5:
        case OPND_INTONLY: {
            VcType ty = type_word(&ps->tok);
            if (!operand_ok(oi->operand, ty)) {
                char exp[96];
                snprintf(exp, sizeof exp, "%s after %s", operand_expect(oi->operand), oi->name);
                return syntax(ps, exp);
            }
            in->type = ty;
            in->line = ps->tok.line;
            in->cline = ps->tok.cline;
            advance(ps);
            break;
        }
        case OPND_TWOINT:
            if (ps->tok.kind != TK_INT)
                return syntax(ps, "two integers after COPY/POP/CPOP");
            in->a = ps->tok.ival;
            advance(ps);
            if (ps->tok.kind != TK_INT)
                return syntax(ps, "two integers after COPY/POP/CPOP");
            in->b = ps->tok.ival;
            in->line = ps->tok.line;
            in->cline = ps->tok.cline;
            advance(ps);
            break;
        case OPND_ONEINT:
            if (ps->tok.kind != TK_INT)
                return syntax(ps, "an integer after FUSED");
            in->a = ps->tok.ival;
            in->line = ps->tok.line;
            in->cline = ps->tok.cline;
            advance(ps);
            break;
        case OPND_NAME:
            if (ps->tok.kind != TK_WORD || (is_keyword(&ps->tok) && !tok_is(&ps->tok, "MAIN")))
                return syntax(ps, "a function name after CALL");
            in->name = xstrndup(ps->tok.text, ps->tok.len);
            if (vc_trace.link_trace)
                fprintf(stderr, "vinterp: linker: adding link for linking %s\n", in->name);
            in->line = ps->tok.line;
            in->cline = ps->tok.cline;
            advance(ps);
            break;
        case OPND_CONST:
            if (parse_const(ps, in) < 0)
                return -1;
            break;
        }
        switch (op) {
        case OP_IF:
            if (ifdepth == MAX_IF_DEPTH)
                return fail_classic(ps, "vinterp: line %d: IF nesting too deep (> %d).", in->cline, MAX_IF_DEPTH);
            ifstack[ifdepth++] = idx;
            break;
        case OP_ELSE: {
            if (ifdepth == 0)
                return fail_classic(ps, "vinterp: line %d: improper IF nesting.", in->cline);
            Instr *ifi = &ps->p->code[ifstack[ifdepth - 1]];
            if (ifi->op != OP_IF)
                return fail_classic(ps, "vinterp: line %d: improper IF nesting.", in->cline);
            ifi->target = idx + 1;
            ifstack[ifdepth - 1] = idx;
            break;
        }
        case OP_ENDIF: {
            if (ifdepth == 0)
                return fail_classic(ps, "vinterp: line %d: improper IF nesting.", in->cline);
            Instr *open = &ps->p->code[ifstack[--ifdepth]];
            open->target = idx; /* IF without ELSE: to the ENDIF; ELSE: to the ENDIF */
            break;
        }
        case OP_RET:
            if (ifdepth)
                return fail_classic(ps, "vinterp: line %d: RETURN found in middle of IF...ENDIF.  "
                                    "Only one return per procedure.\nParse failure", in->cline);
            ps->p->funcs[ps->p->nfuncs - 1].end = ps->p->ncode;
            return 0;
        default:
            break;
        }
    }
}

static int parse_program(Parser *ps)
{
    advance(ps);
    if (ps->tok.kind == TK_EOF)
        return ps->tok.ival == -1 ? syntax(ps, "FUNC") : fail(ps, ps->tok.line, "no functions in the program");
    while (ps->tok.kind != TK_EOF) {
        if (!tok_is(&ps->tok, "FUNC"))
            return syntax(ps, "FUNC");
        if (parse_function(ps) < 0)
            return -1;
    }
    if (ps->tok.ival == -1)
        return syntax(ps, "FUNC");
    return 0;
}

int vc_parse_string(const char *name, const char *text, size_t len, Program *p, VcError *err)
{
    memset(p, 0, sizeof *p);
    memset(err, 0, sizeof *err);
    p->filename = xstrndup(name, strlen(name));
    p->entry = -1;
    p->warn = stderr;
    Parser ps;
    memset(&ps, 0, sizeof ps);
    lex_init(&ps.lx, text, len);
    ps.lx.trace = vc_trace.lex_trace;
    ps.p = p;
    ps.err = err;
    if (parse_program(&ps) < 0)
        return -1;
    return 0;
}

int vc_parse_file(const char *path, Program *p, VcError *err)
{
    memset(p, 0, sizeof *p);
    memset(err, 0, sizeof *err);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err->msg, sizeof err->msg, "Error opening input file %s: %s", path, strerror(errno));
        err->line = 0;
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = vc_xrealloc(NULL, cap);
    int bad = 0;
    for (;;) {
        errno = 0;
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) {
            bad = ferror(f) ? (errno ? errno : EIO) : 0;
            break;
        }
        cap *= 2;
        buf = vc_xrealloc(buf, cap);
    }
    fclose(f);
    if (bad) {
        free(buf);
        snprintf(err->msg, sizeof err->msg, "Error reading input file %s: %s", path, strerror(bad));
        return -1;
    }
    int r = vc_parse_string(path, buf, n, p, err);
    free(buf);
    return r;
}

void vc_free(Program *p)
{
    for (int i = 0; i < p->ncode; i++)
        free(p->code[i].name);
    free(p->code);
    for (int i = 0; i < p->nfuncs; i++) {
        free(p->funcs[i].name);
        free(p->funcs[i].sum.out);
    }
    free(p->funcs);
    for (int i = 0; i < p->nconsts; i++) {
        free(p->consts[i].ints);
        free(p->consts[i].floats);
    }
    free(p->consts);
    free(p->state);
    free(p->slot_pool);
    free(p->filename);
    memset(p, 0, sizeof *p);
}

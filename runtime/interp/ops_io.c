/* runtime/interp/ops_io.c — the I/O instructions (vcode/SPEC.md §4.15): READ, WRITE,
 * FOPEN, FCLOSE, FREAD, FREAD_CHAR, FWRITE, SPAWN, and the file table.
 *
 * VCODE file descriptors index a 256-slot table of stdio streams; slots 0-2
 * start as stdin, stdout and stderr, NULL_STREAM is -1. Most instructions
 * end by pushing a message (Int vector of character codes, empty on
 * success) and a Bool status flag, with the flag on top. I/O failures are
 * reported only through these two values.
 *
 * The last failure message is kept between instructions: FWRITE to
 * NULL_STREAM reports failure with whatever message the previous failure
 * left there (initially empty), as the classic interpreter does.
 *
 * Cases where the classic interpreter reads or writes out of bounds (empty
 * or mistyped arguments, descriptors outside the table for FREAD_CHAR,
 * delimiters outside 0..255 without -c, ...) are fatal errors here. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/interp/ops_io.h"
#include "runtime/core/errors.h"
#include "runtime/core/print.h"
#include "runtime/core/value.h"

#define IO_NFILES      256
#define IO_NULL_STREAM (-1)
#define IO_FD_ERROR    (-2)
#define IO_MAXPATH     4096     /* names this long or longer are refused */
#define IO_NOLIMIT     (1 << 30) /* FREAD_CHAR's "no limit" (max < 0) */

static FILE *io_files[IO_NFILES];
/* 1 when FCLOSE closed the process's stdin/stdout/stderr (index 0-2). */
static int io_std_closed[3];
/* Message of the most recent failure, and whether the current instruction
 * failed. */
static char io_msg[256];
static int io_failed;

/* ------------------------------------------------------------------ */
/* helpers */

static void io_set_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void io_set_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(io_msg, sizeof io_msg, fmt, ap);
    va_end(ap);
    io_failed = 1;
}

static Value *io_int_scalar(int32_t x)
{
    Value *v = val_new(VT_INT, 1);
    VI(v)[0] = x;
    return v;
}

static Value *io_bool_scalar(int b)
{
    Value *v = val_new(VT_BOOL, 1);
    VI(v)[0] = b ? 1 : 0;
    return v;
}

/* Int vector of the codes of S, each byte taken as a signed char. */
static Value *io_string(const char *s)
{
    int64_t n = (int64_t)strlen(s);
    Value *v = val_new(VT_INT, n);
    for (int64_t i = 0; i < n; i++)
        VI(v)[i] = (int32_t)(signed char)s[i];
    return v;
}

/* Push msg and ok for the current instruction. */
static void io_push_status(Interp *it)
{
    if (io_failed) {
        vs_push(it, io_string(io_msg));
        vs_push(it, io_bool_scalar(0));
    } else {
        vs_push(it, val_new(VT_INT, 0));
        vs_push(it, io_bool_scalar(1));
    }
}

static void io_pop_release(Interp *it)
{
    val_release(vs_pop(it));
}

/* Int-like vectors: Int, or Bool (stored as int32 0/1 like the classic's
 * cvl_bool, so reading it as integers is well defined). */
static int io_intlike(const Value *v)
{
    return v->type == VT_INT || v->type == VT_BOOL;
}

static const char *io_tname(const Value *v)
{
    return val_type_name((ValType)v->type);
}

/* Element 0 of an Int-like vector at DEPTH, fatal when there is none. */
static int32_t io_scalar_at(Interp *it, int64_t depth, const char *what)
{
    const Value *v = vs_at(it, depth);
    if (v->type == VT_PAIR)
        rt_fatal("%s must be an Int scalar, found a pair", what);
    if (!io_intlike(v) || v->len < 1)
        rt_fatal("%s must be an Int scalar, found %s vector of length %lld",
                 what, io_tname(v), (long long)v->len);
    return VI(v)[0];
}

/* Copy an Int-like string vector into a fresh NUL-terminated C string
 * (each code cast to char, as the classic does). */
static char *io_cstring(const Value *v, const char *what)
{
    if (!io_intlike(v))
        rt_fatal("%s must be an Int vector of character codes, found %s", what, io_tname(v));
    size_t n = (size_t)v->len;
    char *s = malloc(n + 1);
    if (!s)
        rt_fatal("out of memory for %s (%lld characters)", what, (long long)v->len);
    for (size_t i = 0; i < n; i++)
        s[i] = (char)VI(v)[i];
    s[n] = '\0';
    return s;
}

/* Pop a descriptor argument (the top of stack) and decode it: a valid slot,
 * IO_NULL_STREAM, or IO_FD_ERROR with the illegal-descriptor message set. */
static int io_fd_arg(Interp *it, const Instr *ins, const char *opname)
{
    const Value *v = vs_at(it, 0);
    /* The classic's weak check: only a vector that is both not Int and not
     * of length 1 is refused. */
    if (it->opt.check && v->type != VT_INT && (v->type == VT_PAIR || v->len != 1))
        rt_fatal_raw("vinterp: line %d: %s: top of stack not scalar integer.", ins->cline, opname);
    int32_t fd = io_scalar_at(it, 0, "the file descriptor");
    io_pop_release(it);
    if (fd != IO_NULL_STREAM && (fd < 0 || fd >= IO_NFILES || io_files[fd] == NULL)) {
        io_set_err("vinterp: line %d: illegal VCODE file descriptor for %s: %d",
                   ins->cline, opname, (int)fd);
        return IO_FD_ERROR;
    }
    return fd;
}

/* Lowest free slot for F, or -1 when the table is full. */
static int io_slot_insert(FILE *f)
{
    for (int i = 0; i < IO_NFILES; i++) {
        if (io_files[i] == NULL) {
            io_files[i] = f;
            return i;
        }
    }
    return -1;
}

static int io_std_index(const FILE *f)
{
    if (f == stdin) return 0;
    if (f == stdout) return 1;
    if (f == stderr) return 2;
    return -1;
}

/* Empty vector for the type operand T as the classic's new_vector makes it
 * (SEGDES gives a descriptor with no segments). */
static Value *io_empty_of(VcType t)
{
    switch (t) {
    case TY_BOOL:   return val_new(VT_BOOL, 0);
    case TY_FLOAT:  return val_new(VT_FLOAT, 0);
    case TY_SEGDES: {
        Value *sd = seg_new(0);
        seg_finish(sd);
        return sd;
    }
    case TY_INT:    return val_new(VT_INT, 0);
    default:
        rt_fatal_raw("vinterp: internal error: illegal type in new_vector.");
    }
}

/* SIGPIPE is ignored while writing, so that a write to a pipe whose reader
 * has gone fails with EPIPE ("Broken pipe") instead of killing us. */
typedef struct { struct sigaction old; int saved; } IoSigSave;

static void io_sigpipe_ignore(IoSigSave *s)
{
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    s->saved = sigaction(SIGPIPE, &ign, &s->old) == 0;
}

static void io_sigpipe_restore(IoSigSave *s)
{
    if (s->saved)
        sigaction(SIGPIPE, &s->old, NULL);
}

/* ------------------------------------------------------------------ */
/* writing */

/* Checks that V can be written with type operand T (before anything is
 * popped). */
static void io_check_writable(const Value *v, VcType t)
{
    if (t == TY_CHAR) {
        if (!io_intlike(v))
            rt_fatal("CHAR output needs an Int vector of character codes, found %s", io_tname(v));
    } else if (v->type == VT_PAIR) {
        rt_fatal("cannot write a pair");
    }
}

/* Write V to F in the text format (or raw characters for CHAR), then
 * check the stream's error flag and flush, as the classic does: an error
 * is noticed by ferror, with errno's text as the message. */
static void io_write_value(FILE *f, const Value *v, VcType t)
{
    IoSigSave ss;
    io_sigpipe_ignore(&ss);
    if (t == TY_CHAR)
        (void)print_chars(f, v);
    else
        (void)print_value(f, v);
    int e = errno;
    if (ferror(f))
        io_set_err("%s", strerror(e));
    else
        fflush(f);
    io_sigpipe_restore(&ss);
}

/* WRITE T: v → msg ok (to stderr). */
static void io_op_write(Interp *it, const Instr *ins)
{
    vs_need(it, 1);
    const Value *v = vs_at(it, 0);
    io_check_writable(v, ins->type);
    io_failed = 0;
    if (io_std_closed[2])
        io_set_err("%s", strerror(EBADF));
    else
        io_write_value(stderr, v, ins->type);
    io_pop_release(it);
    io_push_status(it);
}

void io_write_chars_stderr(const Value *v)
{
    io_failed = 0;
    if (!io_std_closed[2])
        io_write_value(stderr, v, TY_CHAR);
}

/* FWRITE T: v fd → msg ok. */
static void io_op_fwrite(Interp *it, const Instr *ins)
{
    vs_need(it, 2);
    io_failed = 0;
    int fd = io_fd_arg(it, ins, "FWRITE");
    if (fd < 0) {
        /* Invalid: the illegal-descriptor message. NULL_STREAM: failure
         * with the previous message left in the buffer. */
        io_failed = 1;
        io_pop_release(it);
        io_push_status(it);
        return;
    }
    const Value *v = vs_at(it, 0);
    io_check_writable(v, ins->type);
    io_write_value(io_files[fd], v, ins->type);
    io_pop_release(it);
    io_push_status(it);
}

/* ------------------------------------------------------------------ */
/* reading */

/* The vector being read, grown in place (val_resize): input is charged
 * against -m as it arrives, and is never copied. Its capacity is v->len;
 * N elements are filled. Growth: doubling up to a million elements, then
 * by a quarter, never past what -m leaves, so that any vector that fits
 * in -m can be read. */
typedef struct {
    Value *v;
    int64_t n;
} IoBuf;

static void io_buf_init(IoBuf *b, ValType t)
{
    b->v = t == VT_SEGDES ? seg_new(0) : val_new(t, 0);
    b->n = 0;
}

static void io_buf_room(IoBuf *b)
{
    if (b->n < b->v->len)
        return;
    int64_t cap = b->v->len;
    int64_t ncap = cap < 1000 ? 1000 : cap < 1000000 ? 2 * cap : cap + cap / 4;
    if (ncap > INT32_MAX)
        ncap = INT32_MAX;
    if (ncap <= cap)
        rt_fatal("input vector longer than %lld elements", (long long)cap);
    /* never ask for more than -m leaves: a vector that fits is read */
    int64_t per_unit = b->v->type == VT_FLOAT ? 1 : 2;
    int64_t room = (mem_limit() - mem_used()) * per_unit;
    if (ncap - cap > room)
        ncap = cap + (room > 0 ? room : 1);
    b->v = val_resize(b->v, ncap);
}

static void io_buf_int(IoBuf *b, int32_t x)
{
    io_buf_room(b);
    VI(b->v)[b->n++] = x;
}

static void io_buf_dbl(IoBuf *b, double x)
{
    io_buf_room(b);
    VF(b->v)[b->n++] = x;
}

/* The vector read: exactly N elements. */
static Value *io_buf_take(IoBuf *b)
{
    Value *v = val_resize(b->v, b->n);
    b->v = NULL;
    return v;
}

static void io_buf_drop(IoBuf *b)
{
    if (b->v)
        val_release(b->v);
    b->v = NULL;
}

/* F is NULL for the process's stdin after FCLOSE closed it: it reads as
 * an empty stream. */
static int io_getc(FILE *f)
{
    return f ? getc(f) : EOF;
}

/* Read one vector of type T from F and push v msg ok (READ / FREAD). */
static void io_do_read(Interp *it, const Instr *ins, FILE *f)
{
    VcType t = ins->type;
    const char *tname, *form;
    int open_ch, close_ch;
    ValType vt;

    switch (t) {
    case TY_INT:    tname = "integer"; form = "(1 2 3)"; open_ch = '('; close_ch = ')'; vt = VT_INT; break;
    case TY_FLOAT:  tname = "float"; form = "(1.0 2.0 3.0)"; open_ch = '('; close_ch = ')'; vt = VT_FLOAT; break;
    case TY_BOOL:   tname = "boolean"; form = "(T F)"; open_ch = '('; close_ch = ')'; vt = VT_BOOL; break;
    case TY_CHAR:   tname = "string"; form = "\"string\""; open_ch = '"'; close_ch = '"'; vt = VT_INT; break;
    case TY_SEGDES: tname = "segment descriptor"; form = "[1 2 3]"; open_ch = '['; close_ch = ']'; vt = VT_INT; break;
    default:
        rt_fatal("READ/FREAD with an invalid type operand");
    }

    io_failed = 0;
    if (f && isatty(fileno(f))) {
        fprintf(stderr, "vinterp: input %s vector, in form %s: ", tname, form);
        fflush(stderr);
    }

    IoBuf buf;
    io_buf_init(&buf, t == TY_SEGDES ? VT_SEGDES : vt);
    int c;

    while ((c = io_getc(f)) != EOF && isspace(c))
        ;
    if (c != open_ch) {
        io_set_err("vinterp: input error: vector must start with %c", open_ch);
        goto fail;
    }

    switch (t) {
    case TY_INT:
    case TY_SEGDES:
        for (;;) {
            uint32_t val = 0;
            int neg = 0;
            while ((c = io_getc(f)) != EOF && isspace(c))
                ;
            if (c == '-') {
                neg = 1;
                c = io_getc(f);
            } else if (c == '+') {
                c = io_getc(f);
            } else if (!isdigit(c)) {
                break;
            }
            while (c != EOF && isdigit(c)) {
                val = val * 10u + (uint32_t)(c - '0');
                c = io_getc(f);
            }
            /* c, the character that ended the number, is dropped */
            io_buf_int(&buf, (int32_t)(neg ? 0u - val : val));
        }
        break;
    case TY_BOOL:
        for (;;) {
            c = io_getc(f);
            if (c == ' ' || c == '\t' || c == '\n')
                continue;
            if (c != 'T' && c != 'F')
                break;
            io_buf_int(&buf, c == 'T');
        }
        break;
    case TY_CHAR:
        /* The classic reader stops at any character but end-of-file, and
         * at end-of-file stores EOF codes until its buffer cannot grow:
         * report that outcome directly. */
        c = io_getc(f);
        if (c == EOF)
            goto nomem;
        break;
    case TY_FLOAT:
        for (;;) {
            double d;
            if (!f || fscanf(f, " %lf", &d) != 1) {
                c = io_getc(f);
                break;
            }
            io_buf_dbl(&buf, d);
        }
        break;
    default:
        break;
    }

    if (c != close_ch) {
        io_set_err("input error: vector must end with %c", close_ch);
        goto fail;
    }

    {
        Value *v = io_buf_take(&buf);
        if (t == TY_SEGDES)
            seg_finish(v);
        vs_push(it, v);
        io_push_status(it);
        return;
    }

nomem:
    io_set_err("vinterp: could not reallocate read buffer.");
fail:
    io_buf_drop(&buf);
    vs_push(it, val_new(vt, 0));
    io_push_status(it);
}

/* READ T: → v msg ok (from stdin). */
static void io_op_read(Interp *it, const Instr *ins)
{
    io_do_read(it, ins, io_std_closed[0] ? NULL : stdin);
}

/* FREAD T: fd → v msg ok. */
static void io_op_fread(Interp *it, const Instr *ins)
{
    vs_need(it, 1);
    io_failed = 0;
    int fd = io_fd_arg(it, ins, "FREAD");
    if (fd < 0) {
        /* Invalid: empty vector, the illegal-descriptor message, F.
         * NULL_STREAM: empty vector, T. (CHAR is fatal in both.) */
        vs_push(it, io_empty_of(ins->type));
        io_push_status(it);
        return;
    }
    io_do_read(it, ins, io_files[fd]);
}

/* FREAD_CHAR: delims max fd → str stop msg ok. */
static void io_op_fread_char(Interp *it, const Instr *ins)
{
    vs_need(it, 3);
    const Value *fdv = vs_at(it, 0);
    if (it->opt.check && (fdv->type != VT_INT || fdv->len != 1))
        rt_fatal_raw("vinterp: line %d: FREAD_CHAR: top of stack not integer scalar. ", ins->cline);
    int32_t fd = io_scalar_at(it, 0, "the file descriptor");
    if (fd < 0 || fd >= IO_NFILES)
        rt_fatal("file descriptor %d is outside the file table (0..%d)", (int)fd, IO_NFILES - 1);
    io_pop_release(it);

    FILE *f = io_files[fd];
    if (f == NULL) {
        io_pop_release(it);     /* max */
        io_pop_release(it);     /* delims */
        vs_push(it, val_new(VT_INT, 0));
        vs_push(it, val_new(VT_INT, 0));
        io_failed = 0;
        io_set_err("illegal VCODE file descriptor in FREAD");
        io_push_status(it);
        return;
    }

    const Value *maxv = vs_at(it, 0);
    if (it->opt.check && (maxv->type != VT_INT || maxv->len != 1))
        rt_fatal_raw("vinterp: line %d: FREAD_CHAR: second element on stack not scalar int.", ins->cline);
    int32_t max = io_scalar_at(it, 0, "the character count");
    if (max < 0)
        max = IO_NOLIMIT;
    io_pop_release(it);

    const Value *dv = vs_at(it, 0);
    if (it->opt.check && dv->type != VT_INT)
        rt_fatal_raw("vinterp: line %d: FREAD_CHAR: third element on stack not string.", ins->cline);
    if (!io_intlike(dv))
        rt_fatal("the delimiters must be an Int vector of character codes, found %s", io_tname(dv));
    unsigned char mask[256];
    memset(mask, 0, sizeof mask);
    for (int64_t i = 0; i < dv->len; i++) {
        uint32_t d = (uint32_t)VI(dv)[i];
        if (d < 256) {
            mask[d] = 1;
        } else if (it->opt.check) {
            rt_fatal_raw("vinterp: line %d: delimiter element %d for FREAD_CHAR is not a legal character. ",
                         ins->cline, (int)i);
        } else {
            rt_fatal("delimiter element %lld (%d) is not a character code 0..255",
                     (long long)i, (int)VI(dv)[i]);
        }
    }
    io_pop_release(it);

    IoBuf buf;
    io_buf_init(&buf, VT_INT);
    int c = EOF;
    int32_t n = 0;
    while (n < max && (c = getc(f)) != EOF && !mask[c]) {
        io_buf_int(&buf, (int32_t)c);
        n++;
    }

    Value *str = io_buf_take(&buf);
    int32_t stop = n == max ? -2 : (c == EOF ? -1 : (int32_t)c);

    vs_push(it, str);
    vs_push(it, io_int_scalar(stop));
    vs_push(it, val_new(VT_INT, 0));
    vs_push(it, io_bool_scalar(1));
}

/* ------------------------------------------------------------------ */
/* opening and closing */

/* FOPEN: name mode → fd msg ok. */
static void io_op_fopen(Interp *it, const Instr *ins)
{
    vs_need(it, 2);
    const Value *mv = vs_at(it, 0);
    if (it->opt.check && (mv->type != VT_INT || mv->len != 1))
        rt_fatal_raw("vinterp: line %d: FOPEN: top of stack not integer scalar. ", ins->cline);
    int32_t mode = io_scalar_at(it, 0, "the FOPEN mode");
    const char *fmode;
    switch (mode) {
    case 1: fmode = "r"; break;
    case 2: fmode = "w"; break;
    case 3: fmode = "a"; break;
    default:
        rt_fatal_raw("vinterp: line %d: FOPEN: top of stack (%d) not legal mode.", ins->cline, (int)mode);
    }
    io_pop_release(it);

    io_failed = 0;
    const Value *nv = vs_at(it, 0);
    if (!io_intlike(nv))
        rt_fatal("the file name must be an Int vector of character codes, found %s", io_tname(nv));
    int32_t fd = -1;
    if (nv->len >= IO_MAXPATH) {
        /* As in the classic, the name then stays on the stack. */
        io_set_err("file name too long");
    } else {
        char *name = io_cstring(nv, "the file name");
        io_pop_release(it);
        errno = 0;
        FILE *f = it->opt.no_files ? NULL : fopen(name, fmode);
        int e = errno;
        free(name);
        if (it->opt.no_files) {
            io_set_err("file access is disabled");
        } else if (!f) {
            io_set_err("%s", strerror(e));
        } else {
            fd = io_slot_insert(f);
            if (fd < 0) {
                fclose(f);
                io_set_err("no room in internal file table");
            }
        }
    }
    vs_push(it, io_int_scalar(fd));
    io_push_status(it);
}

/* Close the process's own stdin/stdout/stderr (slot 0-2 closed by FCLOSE):
 * later output to it goes nowhere and input from it is at end-of-file,
 * without leaving a closed FILE behind for the rest of the program. */
static int io_close_std(int idx, FILE *f)
{
    int rc = 0;
    if (idx > 0 && fflush(f) == EOF)
        rc = -1;
    int fdno = fileno(f);
    int nul = open("/dev/null", O_RDWR);
    if (nul >= 0) {
        if (fdno >= 0 && nul != fdno) {
            if (dup2(nul, fdno) < 0)
                rc = -1;
            close(nul);
        }
    } else if (fdno >= 0) {
        if (close(fdno) < 0)
            rc = -1;
    }
    clearerr(f);
    io_std_closed[idx] = 1;
    return rc;
}

/* FCLOSE: fd → msg ok. */
static void io_op_fclose(Interp *it, const Instr *ins)
{
    vs_need(it, 1);
    io_failed = 0;
    int fd = io_fd_arg(it, ins, "FCLOSE");
    if (fd >= 0) {
        FILE *f = io_files[fd];
        int idx = io_std_index(f);
        int rc;
        io_files[fd] = NULL;
        if (idx >= 0) {
            rc = io_close_std(idx, f);
        } else {
            IoSigSave ss;
            io_sigpipe_ignore(&ss);
            rc = fclose(f) == EOF ? -1 : 0;
            io_sigpipe_restore(&ss);
        }
        if (rc != 0)
            io_set_err("vinterp: FCLOSE: could not close file");
    }
    io_push_status(it);
}

/* ------------------------------------------------------------------ */
/* SPAWN */

static void io_close_pipe(int p[2])
{
    if (p[0] >= 0) close(p[0]);
    if (p[1] >= 0) close(p[1]);
    p[0] = p[1] = -1;
}

/* The parent's end of a pipe as a new slot (-1 when that fails). */
static int io_pipe_slot(int fdno, const char *mode)
{
    FILE *f = fdopen(fdno, mode);
    if (!f) {
        close(fdno);
        return -1;
    }
    int slot = io_slot_insert(f);
    if (slot < 0)
        fclose(f);
    return slot;
}

/* In the child: connect TARGET (0, 1 or 2) to the child's end of pipe P
 * (END = which end), or to the stream in slot FD. */
static int io_child_connect(int fd, int p[2], int end, int target)
{
    if (fd == IO_NULL_STREAM) {
        if (dup2(p[end], target) < 0 || close(p[1 - end]) < 0)
            return -1;
        return 0;
    }
    return dup2(fileno(io_files[fd]), target) < 0 ? -1 : 0;
}

static void io_push_spawn(Interp *it, int errfd, int outfd, int infd)
{
    vs_push(it, io_int_scalar(errfd));
    vs_push(it, io_int_scalar(outfd));
    vs_push(it, io_int_scalar(infd));
    io_push_status(it);
}

/* SPAWN: cmd in out err → errfd outfd infd msg ok. */
static void io_op_spawn(Interp *it, const Instr *ins)
{
    if (it->opt.no_spawn)
        rt_fatal("SPAWN is disabled by --no-spawn");
    vs_need(it, 4);
    io_failed = 0;
    int errfd = io_fd_arg(it, ins, "SPAWN");
    int outfd = io_fd_arg(it, ins, "SPAWN");
    int infd = io_fd_arg(it, ins, "SPAWN");
    if (io_failed) {
        /* The command stays on the stack below the results. */
        io_push_spawn(it, errfd, outfd, infd);
        return;
    }

    const Value *cv = vs_at(it, 0);
    if (it->opt.check && cv->type != VT_INT)
        rt_fatal_raw("vinterp: line %d: SPAWN: first arg not string.", ins->cline);
    char *command = io_cstring(cv, "the SPAWN command");
    size_t clen = (size_t)cv->len;
    io_pop_release(it);

    /* Reap children that have finished, without waiting. */
    {
        int st;
        while (waitpid(-1, &st, WNOHANG) > 0)
            ;
    }

    /* Split on whitespace in place; no quoting. */
    char **argv = malloc((clen + 1) * sizeof *argv);
    if (!argv) {
        free(command);
        rt_fatal("out of memory for the SPAWN argument vector");
    }
    size_t argc = 0;
    int inspace = 1;
    for (size_t i = 0; i < clen; i++) {
        if (isspace((unsigned char)command[i])) {
            command[i] = '\0';
            inspace = 1;
        } else if (inspace) {
            argv[argc++] = command + i;
            inspace = 0;
        }
    }
    argv[argc] = NULL;
    /* An empty command: as in the classic, the parent reports success; its
     * child (execvp of a null name) dies before printing anything, and
     * this one exits at once, silently. */

    int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
    int pipe_err = 0;
    if (infd == IO_NULL_STREAM && pipe(pin) < 0) pipe_err = 1;
    if (outfd == IO_NULL_STREAM && pipe(pout) < 0) pipe_err = 1;
    if (errfd == IO_NULL_STREAM && pipe(perr) < 0) pipe_err = 1;
    if (pipe_err) {
        io_close_pipe(pin);
        io_close_pipe(pout);
        io_close_pipe(perr);
        io_set_err("SPAWN: error opening pipe");
        goto done;
    }

    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        io_close_pipe(pin);
        io_close_pipe(pout);
        io_close_pipe(perr);
        io_set_err("SPAWN: error performing fork:%s", strerror(e));
        goto done;
    }

    if (pid == 0) {
        /* child */
        if (argc == 0)
            _exit(1);
        if (io_child_connect(infd, pin, 0, 0) == 0 &&
            io_child_connect(outfd, pout, 1, 1) == 0 &&
            io_child_connect(errfd, perr, 1, 2) == 0)
            execvp(argv[0], argv);
        {
            int e = errno;
            /* command now ends at its first separator: the first word, or
             * nothing when it began with whitespace. */
            fprintf(stderr, "vinterp: line %d internal error: execvp failed:\n", ins->cline);
            fprintf(stderr, "\t%s\n", strerror(e));
            fprintf(stderr, "\tcommand was %s\n", command);
            fflush(stderr);
            _exit(1);
        }
    }

    /* parent */
    {
        int close_error = 0;
        if (infd == IO_NULL_STREAM) {
            infd = io_pipe_slot(pin[1], "w");
            if (close(pin[0]) < 0) close_error = 1;
        }
        if (outfd == IO_NULL_STREAM) {
            outfd = io_pipe_slot(pout[0], "r");
            if (close(pout[1]) < 0) close_error = 1;
        }
        if (errfd == IO_NULL_STREAM) {
            errfd = io_pipe_slot(perr[0], "r");
            if (close(perr[1]) < 0) close_error = 1;
        }
        if (close_error)
            io_set_err("error closing end of pipe during spawn");
    }

done:
    free(argv);
    free(command);
    io_push_spawn(it, errfd, outfd, infd);
}

/* ------------------------------------------------------------------ */
/* entry points */

void io_init(void)
{
    for (int i = 0; i < IO_NFILES; i++)
        io_files[i] = NULL;
    io_files[0] = stdin;
    io_files[1] = stdout;
    io_files[2] = stderr;
    io_std_closed[0] = io_std_closed[1] = io_std_closed[2] = 0;
    io_msg[0] = '\0';
    io_failed = 0;
}

void io_shutdown(void)
{
    IoSigSave ss;
    io_sigpipe_ignore(&ss);
    for (int i = 0; i < IO_NFILES; i++) {
        FILE *f = io_files[i];
        if (f && io_std_index(f) < 0)
            fclose(f);
        io_files[i] = NULL;
    }
    io_sigpipe_restore(&ss);
}

void io_exec(Interp *it, const Instr *ins)
{
    switch (ins->op) {
    case OP_READ:       io_op_read(it, ins); break;
    case OP_WRITE:      io_op_write(it, ins); break;
    case OP_FOPEN:      io_op_fopen(it, ins); break;
    case OP_FCLOSE:     io_op_fclose(it, ins); break;
    case OP_FREAD:      io_op_fread(it, ins); break;
    case OP_FREAD_CHAR: io_op_fread_char(it, ins); break;
    case OP_FWRITE:     io_op_fwrite(it, ins); break;
    case OP_SPAWN:      io_op_spawn(it, ins); break;
    default:
        rt_fatal("io_exec called for a non-I/O instruction");
    }
}

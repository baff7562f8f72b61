/* runtime/core/print.c — text form of values (vcode/SPEC.md §4.15, §5.1). */
#include "runtime/core/print.h"

#include <string.h>

/* Integers are formatted by hand: the final dump of a large vector is a
 * hot path and printf per element costs several times more. */
static char *fmt_int(char *p, int32_t x)
{
    char tmp[16];
    int n = 0;
    uint32_t u = x < 0 ? 0u - (uint32_t)x : (uint32_t)x;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (x < 0)
        *p++ = '-';
    while (n)
        *p++ = tmp[--n];
    return p;
}

#define CHUNK 65536

int print_value(FILE *f, const Value *v)
{
    if (v->type == VT_PAIR) {
        fprintf(f, "pair(%s,%s) \n", val_type_name((ValType)v->fst->type),
                val_type_name((ValType)v->snd->type));
        return ferror(f) ? -1 : 0;
    }
    char buf[CHUNK + 64];
    char *p = buf;
    int seg = v->type == VT_SEGDES;
    *p++ = seg ? '[' : '(';
    for (int64_t i = 0; i < v->len; i++) {
        if (p - buf > CHUNK) {
            fwrite(buf, 1, (size_t)(p - buf), f);
            p = buf;
        }
        *p++ = ' ';
        switch ((ValType)v->type) {
        case VT_INT:
        case VT_SEGDES:
            p = fmt_int(p, VI(v)[i]);
            break;
        case VT_BOOL:
            *p++ = VI(v)[i] ? 'T' : 'F';
            break;
        case VT_FLOAT:
            p += snprintf(p, 48, "%.14e", VF(v)[i]);
            break;
        case VT_PAIR:
            break;
        }
    }
    *p++ = ' ';
    *p++ = seg ? ']' : ')';
    *p++ = '\n';
    fwrite(buf, 1, (size_t)(p - buf), f);
    return ferror(f) ? -1 : 0;
}

int print_chars(FILE *f, const Value *v)
{
    if (v->type == VT_FLOAT || v->type == VT_PAIR)
        return print_value(f, v);
    char buf[4096];
    size_t k = 0;
    for (int64_t i = 0; i < v->len; i++) {
        buf[k++] = (char)VI(v)[i];
        if (k == sizeof buf) {
            fwrite(buf, 1, k, f);
            k = 0;
        }
    }
    fwrite(buf, 1, k, f);
    return ferror(f) ? -1 : 0;
}

void print_shape(FILE *f, const Value *v)
{
    if (v->type == VT_PAIR)
        fprintf(f, "pair(%s,%s) ", val_type_name((ValType)v->fst->type),
                val_type_name((ValType)v->snd->type));
    else
        fprintf(f, "%lld(%s) ", (long long)v->len, val_type_name((ValType)v->type));
}

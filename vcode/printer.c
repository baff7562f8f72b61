/* vcode/printer.c — see printer.h. */
#include "vcode/printer.h"
#include "vcode/optable.h"

static void print_const(FILE *f, const Program *p, const Instr *in)
{
    if (in->ckind == CK_SCALAR) {
        switch (in->type) {
        case TY_FLOAT: fprintf(f, "type = Float; val = %f", in->fval); break;
        case TY_BOOL: fprintf(f, "type = Bool; val = %s", in->ival ? "T" : "F"); break;
        default: fprintf(f, "type = Int; val = %d", in->ival); break;
        }
        return;
    }
    const VcConst *c = &p->consts[in->cidx];
    if (c->is_string) {
        fprintf(f, "type = String; val = (");
        for (int64_t i = 0; i < c->len; i++)
            fputc((char)c->ints[i], f);
        fputc(')', f);
        return;
    }
    fprintf(f, "type = %s; val = (", vc_type_name(c->type));
    for (int64_t i = 0; i < c->len; i++) {
        if (c->type == TY_FLOAT)
            fprintf(f, " %.14e", c->floats[i]);
        else if (c->type == TY_BOOL)
            fprintf(f, " %s", c->ints[i] ? "T" : "F");
        else
            fprintf(f, " %d", c->ints[i]);
    }
    fputc(')', f);
}

void vc_print_instr(FILE *f, const Program *p, int idx, int shown)
{
    const Instr *in = &p->code[idx];
    fprintf(f, "(%d) vop = %s; ", shown, vc_ops[in->op].name);
    switch (in->op) {
    case OP_CONST:
        print_const(f, p, in);
        break;
    case OP_COPY:
    case OP_POP:
        fprintf(f, "args = %d, %d", in->a, in->b);
        break;
    case OP_IF:
    case OP_ELSE:
        fprintf(f, "branch to %d", in->target);
        break;
    case OP_CALL:
        fprintf(f, "branch to %d", in->target >= 0 ? p->funcs[in->target].start : -1);
        break;
    case OP_FUSED:
        fprintf(f, "fused op %d", in->a);
        break;
    default:
        if (in->type != TY_NONE)
            fprintf(f, "type = %s", vc_type_name(in->type));
        break;
    }
    fprintf(f, "; line = %d\n", in->cline);
}

void vc_print_program(FILE *f, const Program *p)
{
    for (int i = 0; i < p->ncode; i++)
        vc_print_instr(f, p, i, i);
}

void vc_line_range(const Program *p, int start, int end, int *lo, int *hi)
{
    *lo = *hi = start < end ? p->code[start].line : 0;
    for (int i = start + 1; i < end; i++) {
        int l = p->code[i].line;
        *lo = l < *lo ? l : *lo;
        *hi = l > *hi ? l : *hi;
    }
}

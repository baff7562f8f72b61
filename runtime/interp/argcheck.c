/* runtime/interp/argcheck.c — see argcheck.h. */
#include "runtime/interp/argcheck.h"
#include "runtime/core/errors.h"
#include "vcode/optable.h"

#include <stdio.h>
#include <string.h>

static int want_type(char ch, VcType operand)
{
    switch (ch) {
    case 'T':
        switch (operand) {
        case TY_BOOL: return VT_BOOL;
        case TY_FLOAT: return VT_FLOAT;
        case TY_SEGDES: return VT_SEGDES;
        default: return VT_INT;
        }
    case 'I': return VT_INT;
    case 'B': return VT_BOOL;
    case 'F': return VT_FLOAT;
    case 'S': return VT_SEGDES;
    default: return -1;
    }
}

static int64_t vlen(const Value *v) { return v->len; }

/* Classic -c checking: print every failure, then abort. */
static void classic_check(Interp *it, const Instr *ins, const OpInfo *oi, int k)
{
    const char *name = oi->name;
    int line = ins->cline;
    if (it->sp < k)
        rt_fatal_raw("vinterp: line %d: Only %lld values on stack; %s reqires %d.",
                     line, (long long)it->sp, name, k);
    int bad = 0;
    for (int i = 0; i < k; i++) {
        Value *v = vs_at(it, k - 1 - i);
        char ch = oi->args[i];
        int want = ch == 'A' ? want_type('T', ins->type) : want_type(ch, ins->type);
        if (want >= 0 && v->type != want) {
            fprintf(stderr, "vinterp: line %d: type mismatch.  Stack[%d] is %s, function %s expects %s\n",
                    line, i, val_type_name((ValType)v->type), name, val_type_name((ValType)want));
            bad = 1;
            continue;
        }
        unsigned char rules[3][2];
        int nr = 0;
        for (int r = 0; r < 2; r++)
            if (oi->rule[i][r]) {
                rules[nr][0] = oi->rule[i][r];
                rules[nr][1] = (unsigned char)oi->ref[i][r];
                nr++;
            }
        /* The classic table's DFPERMUTE rules (vcode/SPEC.md §4.4). */
        if (ins->op == OP_DFPERMUTE && i == 3) {
            rules[nr][0] = LC_SAME;
            rules[nr][1] = 1;
            nr++;
        }
        if (ins->op == OP_DFPERMUTE && i == 5) {
            rules[0][1] = 1;
        }
        for (int r = 0; r < nr; r++) {
            int j = rules[r][1];
            Value *ref = vs_at(it, k - 1 - j);
            if (ref->type == VT_PAIR || v->type == VT_PAIR)
                continue;
            if (rules[r][0] == LC_SAME && vlen(v) != vlen(ref)) {
                fprintf(stderr, "vinterp: line %d: length mismatch between args %d(%lld) and %d(%lld) in %s.\n",
                        line, j, (long long)vlen(ref), i, (long long)vlen(v), name);
                bad = 1;
            } else if (rules[r][0] == LC_COMPAT && v->type == VT_SEGDES && v->n != vlen(ref)) {
                fprintf(stderr, "vinterp: line %d: Args %d and %d to %s are incompatible.\n", line, j, i, name);
                bad = 1;
            }
        }
    }
    if (bad)
        rt_fatal_raw("vinterp: aborting: failed argument check.");
}

void argcheck(Interp *it, const Instr *ins)
{
    const OpInfo *oi = &vc_ops[ins->op];
    int k = (int)strlen(oi->args);
    if (it->opt.check)
        classic_check(it, ins, oi, k);
    if (it->sp < k)
        rt_fatal("stack underflow: needs %d value%s, the stack holds %lld", k, k == 1 ? "" : "s",
                 (long long)it->sp);
    for (int i = 0; i < k; i++) {
        Value *v = vs_at(it, k - 1 - i);
        char ch = oi->args[i];
        if (ch == 'A') {
            if (v->type == VT_SEGDES)
                rt_fatal_raw("vinterp: line %d: applying LENGTH to a segment descriptor.", ins->cline);
            if (v->type == VT_PAIR)
                rt_fatal("applying %s to a pair", oi->name);
            continue;
        }
        int want = want_type(ch, ins->type);
        if (want >= 0 && v->type != want) {
            if (ins->op == OP_LENGTHS)
                rt_fatal_raw("vinterp: line %d: applying LENGTHS to a non-segment descriptor.", ins->cline);
            rt_fatal("argument %d is %s, expected %s", i + 1, val_type_name((ValType)v->type),
                     val_type_name((ValType)want));
        }
    }
    for (int i = 0; i < k; i++) {
        Value *v = vs_at(it, k - 1 - i);
        for (int r = 0; r < 2; r++) {
            if (!oi->rule[i][r])
                continue;
            int j = oi->ref[i][r];
            Value *ref = vs_at(it, k - 1 - j);
            if (oi->rule[i][r] == LC_SAME) {
                if (vlen(v) != vlen(ref))
                    rt_fatal("length mismatch: argument %d has %s %lld, argument %d has %lld", i + 1,
                             v->type == VT_SEGDES ? "segment count" : "length", (long long)vlen(v), j + 1,
                             (long long)vlen(ref));
            } else if (v->n != vlen(ref)) {
                rt_fatal("segment descriptor (argument %d) covers %lld elements, argument %d has %lld",
                         i + 1, (long long)v->n, j + 1, (long long)vlen(ref));
            }
        }
    }
}

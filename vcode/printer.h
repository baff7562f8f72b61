/* vcode/printer.h — the -d program / -d command line for an instruction:
 *     (IDX) vop = NAME; DETAILS; line = N
 * (vcode/SPEC.md §7). */
#ifndef VCODE_PRINTER_H
#define VCODE_PRINTER_H

#include <stdio.h>
#include "vcode/program.h"

/* SHOWN is the number in parentheses: the index for -d program, the line
 * for -d command. */
void vc_print_instr(FILE *f, const Program *p, int idx, int shown);
/* Every instruction, as -d program prints it. */
void vc_print_program(FILE *f, const Program *p);

#endif

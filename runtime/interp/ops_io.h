/* runtime/interp/ops_io.h — the I/O instructions (vcode/SPEC.md §4.15): READ, WRITE,
 * FOPEN, FCLOSE, FREAD, FREAD_CHAR, FWRITE, SPAWN, and the file table. */
#ifndef RUNTIME_OPS_IO_H
#define RUNTIME_OPS_IO_H

#include "runtime/interp/interp.h"

/* Set up the 256-slot file table (slots 0-2 = stdin, stdout, stderr). */
void io_init(void);
/* Close every file the program opened (at exit). */
void io_shutdown(void);
/* Execute one I/O instruction (ins->op is one of the eight above). */
void io_exec(Interp *it, const Instr *ins);

#endif

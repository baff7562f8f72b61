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
/* What WRITE CHAR of V writes (V's characters to stderr, flushed; nothing
 * once the program closed stderr), without the stack: the device tier's
 * replay of a runtime error branch it took ahead (cuda_guard.h). */
void io_write_chars_stderr(const Value *v);

#endif

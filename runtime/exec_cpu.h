/* runtime/exec_cpu.h — the cpu executor (generated C, compiled and cached;
 * see exec_cpu.c). */
#ifndef RUNTIME_EXEC_CPU_H
#define RUNTIME_EXEC_CPU_H

#include "runtime/executor.h"
#include "runtime/jit.h"

Executor *exec_cpu_new(const JitOptions *o);

#endif

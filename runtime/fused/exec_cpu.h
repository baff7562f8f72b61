/* runtime/fused/exec_cpu.h — the cpu executor (generated C, compiled and cached;
 * see exec_cpu.c). */
#ifndef RUNTIME_EXEC_CPU_H
#define RUNTIME_EXEC_CPU_H

#include "runtime/fused/executor.h"
#include "runtime/jit/jit.h"

Executor *exec_cpu_new(const JitOptions *o);

/* -d stats: "stats: WHO: unit keys: ..." from the cached sources' PATHS
 * (file names are keys), sorted. */
void exec_report_keys(FILE *f, const char *who, char **paths, int n);

#endif

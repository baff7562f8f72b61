/* runtime/fused/kernel_fail.h — one fatal message per failure code of the
 * generated code (translate/codegen_abi.h), for the cpu and cuda
 * executors. Inside a fused block the backend's replay turns it into the
 * reference interpreter's own message (runtime/core/errors.h). */
#ifndef RUNTIME_KERNEL_FAIL_H
#define RUNTIME_KERNEL_FAIL_H

#include <stdint.h>

__attribute__((noreturn)) void kernel_fail(int code, int64_t a, int64_t b, int64_t c);

#endif

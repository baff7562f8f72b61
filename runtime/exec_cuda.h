/* runtime/exec_cuda.h — the cuda executor: fused kernels generated as CUDA
 * (translate/cg_cuda.c), compiled with NVRTC for the device's exact sm_XX,
 * loaded with the CUDA driver API and launched on the GPU; steps below a
 * size threshold run on the host. The driver and NVRTC are loaded with
 * dlopen at run time, so the same binary runs on machines without them. */
#ifndef RUNTIME_EXEC_CUDA_H
#define RUNTIME_EXEC_CUDA_H

#include <stddef.h>
#include "runtime/executor.h"
#include "runtime/jit.h"

/* 1 when CUDA device DEV can be used (driver, device, NVRTC); else 0 with
 * the reason in WHY. */
int cuda_usable(int dev, char *why, size_t len);

/* The executor for device DEV. With COMPILE_ONLY_ARCH (e.g. "sm_90") no
 * device is needed: prepare generates the CUDA of every kernel and
 * compiles it with NVRTC for that architecture, reports on stderr, and
 * fails (returns -1) on a compilation error; nothing can be run. */
Executor *exec_cuda_new(int dev, const JitOptions *o, const char *compile_only_arch);

#endif

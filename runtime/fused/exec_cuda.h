/* runtime/fused/exec_cuda.h — the cuda executor: fused kernels generated as CUDA
 * (translate/cg_cuda.c), compiled with NVRTC for the device's exact sm_XX,
 * loaded with the CUDA driver API and launched on the GPU; steps below a
 * size threshold run on the host. The driver and NVRTC are loaded with
 * dlopen at run time, so the same binary runs on machines without them. */
#ifndef RUNTIME_EXEC_CUDA_H
#define RUNTIME_EXEC_CUDA_H

#include <stddef.h>
#include "runtime/fused/executor.h"
#include "runtime/jit/jit.h"

/* 1 when CUDA device DEV can be used (driver, device, NVRTC); else 0 with
 * the reason in WHY. */
int cuda_usable(int dev, char *why, size_t len);

/* The executor for device DEV, or NULL with the reason in WHY. With
 * COMPILE_ONLY_ARCH (e.g. "sm_90") no device is needed: prepare generates
 * the CUDA of every kernel and compiles it with NVRTC for that
 * architecture, failing (-1) on a compilation error; nothing can be run.
 * With VINTERP_CUDA_EMULATE=1 (and no COMPILE_ONLY_ARCH) the device is
 * the emulated one of runtime/device/cuda_dev.h. The host thresholds come from
 * VINTERP_CUDA_HOST_MAX_ELEM, _SCAN and _LIB (elements; 0: everything
 * generated runs on the device). */
/* TIERED: blocks come one by one through the tiers (no host thresholds,
 * no generated C for the host path). */
Executor *exec_cuda_new(int dev, const JitOptions *o, const char *compile_only_arch, int tiered, char *why,
                        size_t len);

#endif

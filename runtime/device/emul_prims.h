/* runtime/device/emul_prims.h — host versions of the kernels.h primitives, for
 * the emulated device (runtime/device/cuda_emul.c), with the reference's
 * semantics: strictly left-to-right scans and reductions, the rank of
 * runtime/core/rank.c, the RAND stream of runtime/core/rand.c. "Device" pointers are
 * host pointers. */
#ifndef RUNTIME_EMUL_PRIMS_H
#define RUNTIME_EMUL_PRIMS_H

#include "runtime/device/cuda_dev.h"

/* Fill LIB with the host primitives. */
void emu_prims_bind(VkLib *lib);

#endif

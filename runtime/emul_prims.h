/* runtime/emul_prims.h — host versions of the kernels.h primitives, for
 * the emulated device (runtime/cuda_emul.c), with the reference's
 * semantics: strictly left-to-right scans and reductions, the rank of
 * runtime/rank.c, the RAND stream of runtime/rand.c. "Device" pointers are
 * host pointers. */
#ifndef RUNTIME_EMUL_PRIMS_H
#define RUNTIME_EMUL_PRIMS_H

#include "runtime/cuda_dev.h"

/* Fill LIB with the host primitives. */
void emu_prims_bind(VkLib *lib);

#endif

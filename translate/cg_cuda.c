/* translate/cg_cuda.c — the CUDA target's SOAC skeletons (see codegen.h). */
#include "translate/codegen.h"

#include <stdio.h>

int cg_emit_kernel_cuda(CgBuf *b, const char *name, const LcuKernel *k, const LcuVarType *types, int nvars,
                        char *msg, size_t msglen)
{
    (void)b; (void)name; (void)types; (void)nvars;
    snprintf(msg, msglen, "kernel K%d: the CUDA skeletons are not written yet", k->id);
    return -1;
}

/* runtime/exec_cuda.c — placeholder until the cuda executor lands. */
#include "runtime/exec_cuda.h"

#include <stdio.h>

int cuda_usable(int dev, char *why, size_t len)
{
    (void)dev;
    snprintf(why, len, "this build has no CUDA executor");
    return 0;
}

Executor *exec_cuda_new(int dev, const JitOptions *o, const char *compile_only_arch)
{
    (void)dev;
    (void)o;
    (void)compile_only_arch;
    return NULL;
}

/* tests/kernels_host/include/cuda_runtime.h — first on the include path of
 * the host build of kernels/ (tests/kernels_host): CUDA's runtime header
 * is the host's stand-in, cuda_host.h. */
#include "tests/kernels_host/cuda_host.h"

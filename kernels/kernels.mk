# kernels/kernels.mk — the CUDA primitives (included by the top Makefile).
#
#   $(BIN)/libvkernels.so   kernels/vk_*.cu with the CUDA runtime linked in
#                           statically, so vinterp can dlopen it on any
#                           machine with a driver; built by `make` when nvcc
#                           is on PATH (sm_90 by default: CUDA_ARCH=sm_80 ...)
#   $(BIN)/test_kernels     the GPU unit tests (kernels/test_kernels.cu);
#                           without a device they say so and pass
#   kernels-check           compile everything with nvcc, run nothing: what CI
#                           can prove without a GPU
NVCC        ?= $(shell command -v nvcc 2>/dev/null)
CUDA_ARCH   ?= sm_90
KBUILD      ?= $(BUILD)/kernels
NVCC_FLAGS  := -std=c++17 -O3 --fmad=false -Xcompiler -fPIC -I. -arch=$(CUDA_ARCH)
KERNELS_CU  := $(wildcard kernels/vk_*.cu)
KERNELS_OBJ := $(KERNELS_CU:kernels/%.cu=$(KBUILD)/%.o)
KERNELS_DEP := kernels/kernels.h kernels/vk_internal.cuh kernels/rand_jump.h kernels/vk_elem.h kernels/vk_count.h kernels/seg_plan.h vcode/semantics.h vcode/program.h vcode/ops.h
KERNELS_LIB := $(if $(NVCC),$(BIN)/libvkernels.so)

.PHONY: kernels-check

$(KBUILD)/%.o: kernels/%.cu $(KERNELS_DEP)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -c -o $@ $<

$(BIN)/libvkernels.so: $(KERNELS_OBJ)
	@mkdir -p $(dir $@)
	$(NVCC) -shared -cudart static -arch=$(CUDA_ARCH) -o $@ $(KERNELS_OBJ)

$(BIN)/test_kernels: kernels/test_kernels.cu $(KERNELS_OBJ) $(KERNELS_DEP)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -o $@ kernels/test_kernels.cu $(KERNELS_OBJ)

kernels-check:
	@if [ -z "$(NVCC)" ]; then \
	    echo "kernels-check: no nvcc on PATH: the CUDA primitives are not compiled (skipped)"; \
	else \
	    $(MAKE) --no-print-directory $(BIN)/libvkernels.so $(BIN)/test_kernels && \
	    echo "kernels-check: kernels/*.cu compiled for $(CUDA_ARCH) with $(NVCC): $(BIN)/libvkernels.so, $(BIN)/test_kernels"; \
	fi

# vinterp — VCODE interpreter. `make` builds bin/vinterp; `make test` runs
# every test and ends with "N passed, N failed".

CC      ?= gcc
CSTD    := -std=c11 -D_POSIX_C_SOURCE=200809L
WARN    := -Wall -Wextra -Werror
OPT     ?= -O2 -fvect-cost-model=dynamic
CFLAGS  ?=
ALL_CFLAGS := $(CSTD) $(WARN) $(OPT) -I. $(CFLAGS)
LPSOLVE_LIBS := -llpsolve55 -lcolamd -ldl
LDLIBS  := $(LPSOLVE_LIBS) -lm

BUILD   ?= build
BIN     ?= bin

# The layers, lowest first: each is one folder and one static library, and
# may include the headers of the layers before it only; kernels/ (the CUDA
# primitives and the plain C headers they share) sits above vcode/.
# tests/check_layers.sh, run by every build, checks the includes, and that
# no archive uses a symbol a layer above it defines (the linker would not
# say: it resolves an archive's symbols from any archive on the line).
LAYERS      := vcode translate runtime/core runtime/interp runtime/jit runtime/device runtime/fused
INCLUDE_ORDER := vcode kernels $(filter-out vcode,$(LAYERS))
LINK_ORDER  := runtime/fused runtime/device runtime/jit runtime/interp runtime/core translate vcode
layer_lib    = $(BUILD)/lib/lib$(subst /,_,$(1)).a
LIB_SRC     := $(foreach l,$(LAYERS),$(wildcard $(l)/*.c))
LIB_OBJ     := $(LIB_SRC:%.c=$(BUILD)/%.o)
LAYER_LIBS  := $(foreach l,$(LINK_ORDER),$(call layer_lib,$(l)))
MAIN_OBJ    := $(BUILD)/runtime/main.o

# The CUDA primitives: bin/libvkernels.so when nvcc is there.
.DEFAULT_GOAL := all
include kernels/kernels.mk

UNIT_SRC    := $(wildcard tests/unit/*.c)
# kernels/test_kernels.cu built as host C++ (-DVK_TEST_EMULATED): the GPU
# unit tests of the primitives, run on the emulated device's (no GPU needed)
# ... and again against the library's own kernels (kernels/vk_*.cu) run on
# the host, every GPU thread a fiber (tests/kernels_host, -DVK_TEST_HOST)
UNIT_BIN    := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/unit/%) $(BUILD)/tests/unit/test_kernels_emul \
               $(BUILD)/tests/unit/test_kernels_host
CXX     ?= g++

.PHONY: all check-deps layers print-include-order print-layers deps demo test unit golden corpus asan asan-test tsan race-test valgrind clean bench bench-quick fuzz fuzz-smoke cuda-check

all: check-deps $(BIN)/vinterp $(KERNELS_LIB) layers

# What the build needs, checked before anything compiles: a missing
# package is named with the line that installs it (make deps does).
check-deps:
	@sh .ci/install-deps --check

# Debian packages the build needs (installed when run as root).
deps:
	@sh .ci/install-deps

# Build, then run a demo program and print its result.
demo: deps
	@$(MAKE) --no-print-directory all
	@echo "== tests/demo/segsum.vcode: segmented sum and scan of [[1,2,3],[],[4,5]]"
	@$(BIN)/vinterp tests/demo/segsum.vcode

$(BIN)/vinterp: $(MAIN_OBJ) $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(MAIN_OBJ) $(LAYER_LIBS) $(LDLIBS)

define layer_rule
$(call layer_lib,$(1)): $(patsubst %.c,$(BUILD)/%.o,$(wildcard $(1)/*.c))
	@mkdir -p $$(dir $$@)
	@rm -f $$@
	$(AR) rcs $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call layer_rule,$(l))))

# The reference's operations are short loops over vectors, run millions of
# times: unrolled, gcc's -O2 loops of one element an iteration cost up to
# twice the time on this kind of CPU (an Int scan: 1.9 -> 1.0 cycles an
# element).
$(BUILD)/runtime/interp/ops_%.o $(BUILD)/runtime/core/rank.o: ALL_CFLAGS += -funroll-loops

# Header dependencies from the compiler (-MMD): an object is rebuilt when a
# header it includes changes (and when this file does: an object built
# before the .d files existed has none).
$(BUILD)/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tests/unit/%: tests/unit/%.c $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -MF $@.d -o $@ $< $(LAYER_LIBS) $(LDLIBS)

$(BUILD)/tests/unit/test_kernels_emul: kernels/test_kernels.cu $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CXX) -x c++ -std=c++17 -DVK_TEST_EMULATED $(WARN) $(OPT) -I. $(CFLAGS) -MMD -MP -MF $@.d -o $@ $< -x none \
	    $(LAYER_LIBS) $(LDLIBS)

# kernels/*.cu as host C++ (tests/kernels_host/host_cu.py rewrites the
# launches; tests/kernels_host/include stands in for CUDA's headers).
KHOST       := $(BUILD)/kernels_host
KHOST_OBJ   := $(KERNELS_CU:kernels/%.cu=$(KHOST)/%.o) $(KHOST)/test_kernels.o $(KHOST)/host_grid.o
KHOST_FLAGS := -std=c++17 -DVK_TEST_HOST $(WARN) -Wno-unknown-pragmas $(OPT) -fPIC -Itests/kernels_host/include -I. $(CFLAGS)
# the primitives alone, for the emulated device (VINTERP_CUDA_EMULATE_PRIMS)
KHOST_LIB   := $(KHOST)/libvkernels_host.so

$(KHOST)/%.cc: kernels/%.cu tests/kernels_host/host_cu.py
	@mkdir -p $(dir $@)
	python3 tests/kernels_host/host_cu.py $< $@

$(KHOST)/host_grid.o: tests/kernels_host/host_grid.cc Makefile
	@mkdir -p $(dir $@)
	$(CXX) $(KHOST_FLAGS) -MMD -MP -c -o $@ $<

$(KHOST)/%.o: $(KHOST)/%.cc Makefile
	$(CXX) $(KHOST_FLAGS) -MMD -MP -c -o $@ $<

.SECONDARY: $(KERNELS_CU:kernels/%.cu=$(KHOST)/%.cc) $(KHOST)/test_kernels.cc

$(BUILD)/tests/unit/test_kernels_host: $(KHOST_OBJ)
	@mkdir -p $(dir $@)
	$(CXX) $(KHOST_FLAGS) -o $@ $(KHOST_OBJ)

# (never unloaded: a C program's dlclose would unload libstdc++ with it,
# and LeakSanitizer report its exception pool)
$(KHOST_LIB): $(filter-out $(KHOST)/test_kernels.o,$(KHOST_OBJ))
	$(CXX) $(KHOST_FLAGS) -shared -Wl,-z,nodelete -o $@ $^

# the CUDA driver's stand-in (VINTERP_TEST_CUDA_DRIVER): the real device's
# code over the host library above
KHOST_DRV   := $(KHOST)/libcuda_host.so
$(KHOST_DRV): tests/kernels_host/host_driver.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared -o $@ $<

-include $(LIB_OBJ:.o=.d) $(MAIN_OBJ:.o=.d) $(UNIT_BIN:=.d) $(KHOST_OBJ:.o=.d)

# No folder includes a header of a layer above it; no archive uses a symbol
# of a layer above it (quiet when it passes).
layers: $(LAYER_LIBS)
	@sh tests/check_layers.sh $(BUILD) "$(INCLUDE_ORDER)" "$(LAYERS)" >$(BUILD)/layers.log 2>&1 || \
	    { cat $(BUILD)/layers.log; exit 1; }

print-include-order:
	@echo $(INCLUDE_ORDER)
print-layers:
	@echo $(LAYERS)

# Every test; the last line is the total "N passed, N failed".
test: deps $(BIN)/vinterp $(UNIT_BIN) $(KHOST_LIB) $(KHOST_DRV)
	@sh tests/run_all.sh $(BIN)/vinterp $(BUILD)

unit: $(UNIT_BIN)
	@for t in $(UNIT_BIN); do $$t || exit 1; done

# The corpus of NESL-generated programs (needs ../shared/corpus).
corpus: $(BIN)/vinterp
	python3 ../shared/corpus/run_corpus.py $(BIN)/vinterp --quiet

# The CUDA side without a GPU: kernels/ compiled with nvcc (kernels-check,
# kernels/kernels.mk), then NVRTC over the generated CUDA of every block of
# every corpus program (vinterp --cuda-check, compile only).
CUDA_CHECK_ARCH ?= sm_90
cuda-check: $(BIN)/vinterp
	@$(MAKE) --no-print-directory kernels-check
	@sh tests/cuda_check.sh $(BIN)/vinterp $(CUDA_CHECK_ARCH)

# Sanitizer build of everything, then the whole test suite with it.
asan:
	$(MAKE) BUILD=build-asan BIN=build-asan/bin OPT="-O1 -g" KERNELS_LIB= \
	    CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    LDLIBS="$(LPSOLVE_LIBS) -lm -fsanitize=address,undefined" all

asan-test: asan
	$(MAKE) BUILD=build-asan BIN=build-asan/bin OPT="-O1 -g" KERNELS_LIB= \
	    CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    LDLIBS="$(LPSOLVE_LIBS) -lm -fsanitize=address,undefined" test

# Race detection on the emulated device (runtime/device/emul_grid.h):
# everything built with ThreadSanitizer, which then also watches the
# generated units (runtime/jit/jit.c), every emulated thread a fiber of its
# own; tests/run_races.sh plants races and runs a corpus sample and the
# differential tests with every step on the emulated device.
TSAN_MAKE = $(MAKE) BUILD=build-tsan BIN=build-tsan/bin OPT="-O1 -g" KERNELS_LIB= \
	    CFLAGS="-fsanitize=thread" LDLIBS="$(LPSOLVE_LIBS) -lm -fsanitize=thread"
tsan:
	$(TSAN_MAKE) all build-tsan/tests/unit/test_cuda_emul build-tsan/tests/unit/test_tier_worker

race-test: tsan
	@sh tests/run_races.sh build-tsan/bin/vinterp build-tsan

# Leak check of a sample of the corpus under valgrind's memcheck: ref and
# cpu, and a smaller sample on the emulated cuda device (every kernel there);
# then READ growing its vector (tests/mem/read_input.vcode over
# read_input.stdin, 3000 numbers) under ref and cpu, at a -m it fits in
# and at one where it stops (exit 1 is fine there, a leak is not); then
# two programs under ref with every loop split between threads; and two
# under cpu whose tier worker outlasts the end's wait, then ends before the
# exit (as on a busy machine: what it used is kept, not lost); and the
# compile after the run (its child process, waited for) of a hot block that
# ran once. The others run without it (VINTERP_TIER_AFTER=off).
VALGRIND_SAMPLE ?= bn_qs bn_radix bn_batcher bn_delaunay cu_file_seq cu_nested_deep tsg_io_test ts_spawn_test er_div0 ex_primes cu_sort_rank tsg_testall
VALGRIND_CUDA_SAMPLE ?= bn_qs bn_radix cu_sort_rank ts_test_remove_duplicates
VALGRIND_CUDA_ENV := VINTERP_TIER=eager VINTERP_CUDA_EMULATE=1 VINTERP_CUDA_HOST_MAX_ELEM=0 VINTERP_CUDA_HOST_MAX_SCAN=0 VINTERP_CUDA_HOST_MAX_LIB=0
valgrind: export VINTERP_TIER_AFTER = off
valgrind: $(BIN)/vinterp
	@cd ../shared/corpus && pass=0; fail=0; for b in ref cpu cuda; do \
	    if [ $$b = cuda ]; then sample="$(VALGRIND_CUDA_SAMPLE)"; envs="$(VALGRIND_CUDA_ENV)"; \
	    else sample="$(VALGRIND_SAMPLE)"; envs=; fi; for p in $$sample; do \
	    if env $$envs valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
	        --suppressions=$(CURDIR)/tests/valgrind.supp \
	        --error-exitcode=9 $(CURDIR)/$(BIN)/vinterp --backend=$$b -m 200000000 $$p.vcode >/dev/null 2>/tmp/vinterp-vg.log; \
	    then pass=$$((pass+1)); else fail=$$((fail+1)); echo "valgrind ($$b): $$p"; cat /tmp/vinterp-vg.log; fi; \
	done; done; \
	for b in ref cpu; do for m in 10 1000000; do \
	    if valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
	        --suppressions=$(CURDIR)/tests/valgrind.supp --error-exitcode=9 $(CURDIR)/$(BIN)/vinterp --backend=$$b -m $$m \
	        $(CURDIR)/tests/mem/read_input.vcode <$(CURDIR)/tests/mem/read_input.stdin >/dev/null 2>/tmp/vinterp-vg.log; \
	        [ $$? -ne 9 ]; \
	    then pass=$$((pass+1)); else fail=$$((fail+1)); echo "valgrind ($$b, -m $$m): read_input"; cat /tmp/vinterp-vg.log; fi; \
	done; done; \
	for p in bn_qs bn_bh bn_batcher; do \
	    if env VINTERP_CUDA_EMULATE=1 VINTERP_DEVICE_TIER=on VINTERP_DEVICE_MIN=1 valgrind -q --leak-check=full \
	        --errors-for-leak-kinds=definite,indirect,possible --suppressions=$(CURDIR)/tests/valgrind.supp \
	        --error-exitcode=9 $(CURDIR)/$(BIN)/vinterp --backend=cuda --tier=off -m 200000000 $$p.vcode \
	        >/dev/null 2>/tmp/vinterp-vg.log; \
	    then pass=$$((pass+1)); else fail=$$((fail+1)); echo "valgrind (cuda device tier): $$p"; cat /tmp/vinterp-vg.log; fi; \
	done; \
	for p in bn_qs ex_primes; do \
	    if env VINTERP_TEST_TIER_LATE_STOP=1 VINTERP_TIER_DELAY_MS=0 valgrind -q --leak-check=full \
	        --errors-for-leak-kinds=definite,indirect,possible --suppressions=$(CURDIR)/tests/valgrind.supp \
	        --error-exitcode=9 $(CURDIR)/$(BIN)/vinterp --backend=cpu -m 200000000 $$p.vcode >/dev/null 2>/tmp/vinterp-vg.log; \
	    then pass=$$((pass+1)); else fail=$$((fail+1)); echo "valgrind (cpu, a worker given up at the end): $$p"; \
	        cat /tmp/vinterp-vg.log; fi; \
	done; \
	cache=$$(mktemp -d); if env VINTERP_TIER_AFTER=wait VINTERP_TIER_DELAY_MS=0 VINTERP_TEST_TIER_START=ready \
	    VINTERP_TIER_IDLE=0 valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
	    --suppressions=$(CURDIR)/tests/valgrind.supp --error-exitcode=9 $(CURDIR)/$(BIN)/vinterp --backend=cpu \
	    --cache-dir=$$cache --tier-work=1000 $(CURDIR)/tests/tier/once.vcode >/dev/null 2>/tmp/vinterp-vg.log && \
	    ls $$cache | grep -q '\.warm$$'; \
	then pass=$$((pass+1)); else fail=$$((fail+1)); echo "valgrind (cpu, the compile after the run): once"; \
	    cat /tmp/vinterp-vg.log; fi; rm -rf $$cache; \
	for p in bn_qs bn_bh; do \
	    if env VINTERP_PAR_MIN=1 VINTERP_THREADS=3 valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
	        --suppressions=$(CURDIR)/tests/valgrind.supp --error-exitcode=9 $(CURDIR)/$(BIN)/vinterp --backend=ref \
	        $$p.vcode >/dev/null 2>/tmp/vinterp-vg.log; \
	    then pass=$$((pass+1)); else fail=$$((fail+1)); echo "valgrind (ref, loops split): $$p"; cat /tmp/vinterp-vg.log; fi; \
	done; echo "valgrind: $$pass passed, $$fail failed"; [ $$fail -eq 0 ]

# libFuzzer targets (tests/fuzz/): clang with ASan+UBSan. `make fuzz` builds
# them; `make fuzz-smoke` runs each for FUZZ_SECONDS and ends with
# "fuzz-smoke: N passed, N failed".
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD   ?= build-fuzz
FUZZ_CFLAGS  := -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -I. -fno-omit-frame-pointer \
                -fsanitize=address,undefined -fno-sanitize-recover=all -DVINTERP_VALUE_REGISTRY
FUZZ_TARGETS := $(FUZZ_BUILD)/fuzz_frontend $(FUZZ_BUILD)/fuzz_exec $(FUZZ_BUILD)/fuzz_translate
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_BUILD)/%.o)
.SECONDARY: $(FUZZ_LIB_OBJ)

fuzz:
	@sh .ci/install-deps fuzz
	@$(MAKE) --no-print-directory $(FUZZ_TARGETS)

$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -fsanitize=fuzzer-no-link -c -o $@ $<

-include $(FUZZ_LIB_OBJ:.o=.d)

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJ) $(LPSOLVE_LIBS) -lm

fuzz-smoke: fuzz
	@sh tests/fuzz/run_smoke.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# Time every available backend on ../shared/bench; writes tests/bench/RESULTS.md
# and speedup.png. With lcu this takes long; BENCH_ARGS='--backends ref' to skip it.
bench: $(BIN)/vinterp
	sh tests/bench/run_bench.sh --interp $(BIN)/vinterp $(BENCH_ARGS)

# Programs whose classic time is < 1 s, one run each (build/bench/RESULTS-quick.md).
bench-quick: $(BIN)/vinterp
	sh tests/bench/run_bench.sh --quick --interp $(BIN)/vinterp $(BENCH_ARGS)

clean:
	rm -rf build build-asan build-fuzz bin

# vinterp — VCODE interpreter. `make` builds bin/vinterp; `make test` runs
# every test and ends with "N passed, N failed".

CC      ?= gcc
CSTD    := -std=c11 -D_POSIX_C_SOURCE=200809L
WARN    := -Wall -Wextra -Werror
OPT     ?= -O2
CFLAGS  ?=
ALL_CFLAGS := $(CSTD) $(WARN) $(OPT) -I. $(CFLAGS)
LDLIBS  := -lm

BUILD   ?= build
BIN     ?= bin

VCODE_SRC   := $(wildcard vcode/*.c)
RUNTIME_SRC := $(filter-out runtime/main.c,$(wildcard runtime/*.c))
LIB_SRC     := $(VCODE_SRC) $(RUNTIME_SRC)
LIB_OBJ     := $(LIB_SRC:%.c=$(BUILD)/%.o)
MAIN_OBJ    := $(BUILD)/runtime/main.o

UNIT_SRC    := $(wildcard tests/unit/*.c)
UNIT_BIN    := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/unit/%)

.PHONY: all deps demo test unit golden corpus asan asan-test valgrind clean bench

all: $(BIN)/vinterp

# Debian packages the build needs (installed when run as root).
deps:
	@sh .ci/install-deps

# Build, then run a demo program and print its result.
demo: deps
	@$(MAKE) --no-print-directory all
	@echo "== tests/demo/segsum.vcode: segmented sum and scan of [[1,2,3],[],[4,5]]"
	@$(BIN)/vinterp tests/demo/segsum.vcode

$(BIN)/vinterp: $(LIB_OBJ) $(MAIN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.c $(wildcard vcode/*.h runtime/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/tests/unit/%: tests/unit/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB_OBJ) $(LDLIBS)

# Every test; the last line is the total "N passed, N failed".
test: deps $(BIN)/vinterp $(UNIT_BIN)
	@sh tests/run_all.sh $(BIN)/vinterp $(BUILD)

unit: $(UNIT_BIN)
	@for t in $(UNIT_BIN); do $$t || exit 1; done

# The corpus of NESL-generated programs (needs ../shared/corpus).
corpus: $(BIN)/vinterp
	python3 ../shared/corpus/run_corpus.py $(BIN)/vinterp --quiet

# Sanitizer build of everything, then the whole test suite with it.
asan:
	$(MAKE) BUILD=build-asan BIN=build-asan/bin OPT="-O1 -g" \
	    CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    LDLIBS="-lm -fsanitize=address,undefined" all

asan-test: asan
	$(MAKE) BUILD=build-asan BIN=build-asan/bin OPT="-O1 -g" \
	    CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    LDLIBS="-lm -fsanitize=address,undefined" test

# Leak check of a sample of the corpus under valgrind's memcheck.
VALGRIND_SAMPLE ?= bn_qs bn_radix bn_batcher bn_delaunay cu_file_seq cu_nested_deep tsg_io_test ts_spawn_test er_div0 ex_primes cu_sort_rank tsg_testall
valgrind: $(BIN)/vinterp
	@cd ../shared/corpus && pass=0; fail=0; for p in $(VALGRIND_SAMPLE); do \
	    if valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
	        --error-exitcode=9 $(CURDIR)/$(BIN)/vinterp -m 200000000 $$p.vcode >/dev/null 2>/tmp/vinterp-vg.log; \
	    then pass=$$((pass+1)); else fail=$$((fail+1)); echo "valgrind: $$p"; cat /tmp/vinterp-vg.log; fi; \
	done; echo "valgrind: $$pass passed, $$fail failed"; [ $$fail -eq 0 ]

bench: $(BIN)/vinterp
	sh tests/bench/run_bench.sh $(BIN)/vinterp

clean:
	rm -rf build build-asan bin

# sextant build. One binary (./sextant), one static library (build/libsextant.a) shared by the
# binary, the tests and the benchmarks. Sources are found by wildcard, so adding a module needs no edit here.
# Only micro-kernel files (*_avx512.c, *_avx2.c, *_bf16.c) get ISA flags; everything else is portable.

CC      ?= gcc
# CFLAGS / LDFLAGS are the user's knobs (optimisation, sanitizers); the project's own flags are separate so
# that `make CFLAGS=...` cannot drop them.
CFLAGS  ?= -O3 -g
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -fno-math-errno -Wall -Wextra -Wno-unused-parameter -fopenmp -Isrc -MMD -MP
LDLIBS  += -lgsl -lgslcblas -ljansson -lutf8proc -lnettle -lz -lm
BASE_LDFLAGS := -fopenmp
BUILD   ?= build
SEXTANT ?= sextant
BASE_CFLAGS += -I$(BUILD)   # build/version.h
# Quiet by default: compiler lines only for warnings and errors, one line per linked program. V=1 echoes
# every command.
V ?= 0
ifeq ($(V),1)
Q :=
say :=
else
Q := @
say = printf '  %-4s %s\n' $(1) $(2);
endif

ISA_avx512 = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mavx2
ISA_bf16   = $(ISA_avx512) -mavx512bf16
ISA_avx2   = -mavx2 -mfma

# MPI is optional (docs/DISTRIBUTED.md): with mpicc on the PATH, src/dist/dist.c is built against MPI and
# everything links libmpi; without it the same functions run as a single process. Switching needs `make clean`.
MPICC := $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
LDLIBS += $(shell $(MPICC) --showme:link)
endif

LIB_SRC  := $(filter-out src/cli/main.c,$(wildcard src/*/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

.PHONY: all test test-only check bench bench-long demo ttc-demo study-speedrun study-kv fuzz fuzz-long clean setup FORCE
# Keep the intermediate objects (build/tests/*.o, build/bench/*.o): no `rm` after the test summary, and no
# recompiling them next time.
.SECONDARY:
all: $(SEXTANT)

setup:
	@scripts/setup

$(BUILD)/%_avx512.o: %_avx512.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) $(ISA_avx512) -c $< -o $@
$(BUILD)/%_bf16.o: %_bf16.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) $(ISA_bf16) -c $< -o $@
$(BUILD)/%_avx2.o: %_avx2.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) $(ISA_avx2) -c $< -o $@
ifneq ($(MPICC),)
$(BUILD)/src/dist/dist.o: src/dist/dist.c
	@mkdir -p $(dir $@)
	$(Q)$(MPICC) $(BASE_CFLAGS) $(CFLAGS) -DSEXTANT_MPI -c $< -o $@
endif
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/libsextant.a: $(LIB_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

# The version (sextant --version): git describe, rewritten only when it changes so main.o rebuilds only then.
GIT_DESCRIBE := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
$(BUILD)/version.h: FORCE
	@mkdir -p $(BUILD)
	@echo '#define SEXTANT_GIT "$(GIT_DESCRIBE)"' > $@.tmp; cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp
$(BUILD)/src/cli/main.o: $(BUILD)/version.h
FORCE:

$(SEXTANT): $(BUILD)/src/cli/main.o $(BUILD)/libsextant.a
	$(Q)$(call say,LD,$@)$(CC) $(BASE_LDFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

TEST_SUPPORT := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/support/*.c))
$(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_SUPPORT) $(BUILD)/libsextant.a
	$(Q)$(CC) $(BASE_LDFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/bench/%: $(BUILD)/bench/%.o $(BUILD)/libsextant.a
	$(Q)$(CC) $(BASE_LDFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(BENCH_LIBS)

# make test: install what is missing, build, run every test binary and the shell tests.
test: setup
	@$(MAKE) --no-print-directory test-only

# make check: the same suite under AddressSanitizer + UndefinedBehaviorSanitizer, in its own build dir.
# The C tests keep their scratch files in build/tests/ whatever BUILD is: on a fresh clone it must exist.
check: setup
	@mkdir -p build/tests
	@$(MAKE) --no-print-directory BUILD=build-san \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  LDFLAGS="-fsanitize=address,undefined" SEXTANT=build-san/sextant test-only
test-only: $(SEXTANT) $(TEST_BIN)
	@SEXTANT=$(abspath $(SEXTANT)) tests/run-all $(BUILD) $(TEST_BIN)

bench: $(SEXTANT) $(BENCH_BIN)
	@SEXTANT_SETUP_BENCH=1 scripts/setup
	@bench/run-all $(BUILD)

demo: setup $(SEXTANT)
	@scripts/demo

# The long benchmark (docs/DATA.md): a ladder on the mixture and a ~1e15-FLOP hero; hours on this machine.
bench-long: setup $(SEXTANT)
	@scripts/demo bench-long

# Test-time compute demo (issue 8): trains the arithmetic policy and verifiers, runs the strategies.
ttc-demo: setup $(SEXTANT)
	@SEXTANT=$(abspath $(SEXTANT)) scripts/ttc-demo runs/ttc-demo

# The attention studies of issue 22 (README "KV-cache budget and MLA vs GQA"; needs make demo's data): about
# 1.5 hours on 2 cores, most of it seeds added until the comparisons decide.
study-kv: setup $(SEXTANT)
	@SEXTANT=$(abspath $(SEXTANT)) scripts/study-kv

# The speedrun study of issue 25 (README "Speedrun study"; needs make demo's data): about 1.5 hours on 2 cores.
study-speedrun: setup $(SEXTANT)
	@SEXTANT=$(abspath $(SEXTANT)) scripts/study-speedrun

# Coverage-guided fuzzing of every file parser (clang libFuzzer), 60 s per target.
fuzz: setup
	@tests/fuzz/run 60

# Every parser until the ledger tests/fuzz/hours.tsv gives it FUZZ_CPU_GOAL CPU-seconds (default 3600), in
# rounds of at most FUZZ_SECONDS, corpora seeded from real files; crashes land in tests/fuzz/regressions/,
# which the suite replays (tests/fuzz/long).
fuzz-long: setup $(SEXTANT)
	@SEXTANT=$(abspath $(SEXTANT)) tests/fuzz/long

clean:
	rm -rf build build-san build-fuzz sextant

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

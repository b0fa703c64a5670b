# layad - one binary, CPU always, CUDA when nvcc is present.
#
#   make            build build/layad (CUDA objects for sm_90a + PTX when nvcc exists)
#   make run        start layad on the embedded tiny model (installs packages if missing)
#   make test       CPU Check suites, then the same suites under ASan+UBSan, then the threaded
#                   ones under ThreadSanitizer
#   make test-gpu   GPU suites (skip cleanly without a device)
#   make bench-kernels / make fuzz / make install (see targets below)

BUILD    ?= build
CC       ?= cc
PREFIX   ?= /usr/local
CUDA_HOME ?= /usr/local/cuda
NVCC     ?= $(shell command -v nvcc 2>/dev/null || { test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; })
SANITIZE ?=
PKGS     := jansson libmicrohttpd libuv libpcre2-8 libutf8proc inih libsystemd libcrypto

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)

OPT      ?= -O2
CFLAGS   += -std=c11 -D_GNU_SOURCE $(OPT) -g -Wall -Wextra -Werror -fopenmp -I. $(PKG_CFLAGS)
LDLIBS   += $(PKG_LIBS) -fopenmp -lm -lpthread -ldl

ifeq ($(SANITIZE),thread)
  CFLAGS  += -fsanitize=thread -fno-omit-frame-pointer
  LDFLAGS += -fsanitize=thread
  NVCC :=
else ifneq ($(SANITIZE),)
  CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  LDFLAGS += -fsanitize=address,undefined
  NVCC :=
endif

ifneq ($(NVCC),)
  CFLAGS    += -DLAYAD_CUDA=1 -I$(CUDA_HOME)/include
  NVFLAGS   ?= -O3 -std=c++17 -I. -lineinfo \
               -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_90,code=compute_90 \
               -Xcompiler -Wall,-Wextra,-fPIC $(NVDEFS)
  CU_SRC    := $(wildcard kernels/*.cu) $(call rwildcard,model,*.cu)
  CU_OBJ    := $(CU_SRC:%.cu=$(BUILD)/%.o)
  SKIP_SRC  := model/backend/cuda_stub.c # the CUDA backend without CUDA
  LDLIBS    += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lcudart -lstdc++
else
  CFLAGS    += -DLAYAD_CUDA=0
  CU_OBJ    :=
  SKIP_SRC := $(filter-out model/backend/cuda_stub.c model/backend/cuda_opts.c,$(wildcard model/backend/cuda_*.c))
endif

# The library (model/ + kernels/), the daemon (server/), the development tools (tests/tools/):
# each layer links only what lies below it.
rwildcard = $(foreach d,$(wildcard $(1:=/*)),$(call rwildcard,$d,$2) $(filter $(subst *,%,$2),$d))
LIB_SRC  := $(filter-out $(SKIP_SRC),$(call rwildcard,model,*.c) $(wildcard kernels/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
SRV_SRC  := $(filter-out server/cli/main.c,$(call rwildcard,server,*.c))
SRV_OBJ  := $(SRV_SRC:%.c=$(BUILD)/%.o)
TOOL_SRC := $(filter-out tests/tools/main.c,$(wildcard tests/tools/*.c))
TOOL_OBJ := $(TOOL_SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TESTLIB_SRC := $(wildcard tests/lib/*.c)
TESTLIB_OBJ := $(TESTLIB_SRC:%.c=$(BUILD)/%.o)
GPU_TEST_SRC := $(wildcard tests/gpu_*.c)
GPU_TEST_BIN := $(GPU_TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TINY     := $(BUILD)/tiny

.PHONY: all run test test-cpu test-asan test-tsan test-tsan-run test-gpu racecheck-build deps clean install fuzz bench-kernels persist-probe
.SECONDARY: # keep test objects: make would otherwise delete them as intermediates and rebuild each time
all: $(BUILD)/layad $(BUILD)/layad-dev

deps:
	@scripts/setup --if-missing

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/liblayad.a: $(LIB_OBJ) $(CU_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libserver.a: $(SRV_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libtools.a: $(TOOL_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/layad: $(BUILD)/server/cli/main.o $(BUILD)/libserver.a $(BUILD)/liblayad.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The development tools (mkmodel, check, bench, bench-cpu, parity-fast): not in the daemon.
$(BUILD)/layad-dev: $(BUILD)/tests/tools/main.o $(BUILD)/libtools.a $(BUILD)/libserver.a $(BUILD)/liblayad.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(TESTLIB_OBJ) $(BUILD)/libtools.a $(BUILD)/libserver.a $(BUILD)/liblayad.a
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

# test_noalloc counts the allocator calls of our code on the serving path: every call from the
# static libraries linked into it goes through its __wrap_ functions (not calls inside shared ones).
$(BUILD)/tests/test_noalloc: LDFLAGS += -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free \
    -Wl,--wrap=strdup,--wrap=strndup,--wrap=posix_memalign,--wrap=aligned_alloc

# tiny_assets.c embeds the tiny presets' tokenizers with .incbin (invisible to -MMD).
$(BUILD)/tests/tools/tiny_assets.o: config/tiny-tokenizer.json tests/fixtures/tokenizer/gemma-like.json
# Likewise the API description and the /docs page (GET /openapi.json, GET /docs).
$(BUILD)/server/api/openapi/openapi.o: server/api/openapi/openapi.json
$(BUILD)/server/http/docs/docs.o: server/http/docs/index.html

# The git commit baked into build_info.o (layad --version, laya_build_info), "unknown" outside a
# checkout. $(BUILD)/commit is rewritten only when HEAD moves, which rebuilds build_info.o alone.
GIT_COMMIT := $(or $(shell test -e .git && git rev-parse --short=12 HEAD 2>/dev/null),unknown)
$(BUILD)/commit: FORCE
	@mkdir -p $(BUILD); echo '$(GIT_COMMIT)' | cmp -s - $@ || echo '$(GIT_COMMIT)' > $@
$(BUILD)/server/telemetry/build_info.o: $(BUILD)/commit
$(BUILD)/server/telemetry/build_info.o: CFLAGS += -DLAYAD_COMMIT='"$(GIT_COMMIT)"'
.PHONY: FORCE
FORCE:

# The embedded default model: a deterministic tiny checkpoint in the real layout.
$(TINY)/model.safetensors: $(BUILD)/layad-dev
	$(BUILD)/layad-dev mkmodel --preset tiny --out $(TINY)

run: deps
	@$(MAKE) --no-print-directory $(TINY)/model.safetensors
	$(BUILD)/layad serve --model $(TINY)

# CI: the CPU suites, then the same suites under ASan+UBSan (CPU-only build).
test: deps
	@$(MAKE) --no-print-directory test-cpu
	@$(MAKE) --no-print-directory test-asan
	@$(MAKE) --no-print-directory test-tsan

# Shell suites (tests/test_ops_*.sh) run beside the Check binaries; test_ops_systemd.sh reads the
# tree `make install DESTDIR=$(BUILD)/stage PREFIX=/usr` writes.
OPS_TESTS := $(wildcard tests/test_ops_*.sh)
STAGE    := $(BUILD)/stage
TEST_ENV  = LAYAD_BIN=$(BUILD)/layad LAYAD_DEV=$(BUILD)/layad-dev LAYAD_TINY=$(TINY) LAYAD_BUILD=$(BUILD)
test-cpu: $(BUILD)/layad $(BUILD)/loadgen $(TEST_BIN) $(TINY)/model.safetensors $(STAGE)/.installed
	@$(TEST_ENV) LAYAD_STAGE=$(STAGE) scripts/run-tests $(TEST_BIN) $(OPS_TESTS)

$(STAGE)/.installed: $(BUILD)/layad $(BUILD)/layad-dev config/layad.conf $(wildcard deploy/* deploy/*/*) Makefile
	@rm -rf $(STAGE)
	@$(MAKE) --no-print-directory -s install DESTDIR=$(abspath $(STAGE)) PREFIX=/usr >/dev/null
	@touch $@

test-asan:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SANITIZE=1 OPT=-O1 test-cpu

# ThreadSanitizer over the suites where the daemon's threads meet (HTTP threads, the scheduler's
# loop, workers, shutdown). OpenMP runs one thread: libgomp's barriers are invisible to TSan
# (tests/tsan.supp). Left out: test_daemon_load (400 s under TSan, the same paths as these) and
# test_backend_cpu (its threads are OpenMP's, which TSan cannot follow).
TSAN_SUITES := scheduler daemon_abuse daemon_api daemon_lifecycle daemon_models daemon_workers \
               noalloc overload
test-tsan:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/tsan SANITIZE=thread OPT=-O1 test-tsan-run

test-tsan-run: $(BUILD)/layad $(BUILD)/layad-dev $(TSAN_SUITES:%=$(BUILD)/tests/test_%) $(TINY)/model.safetensors
	@OMP_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 history_size=7 suppressions=$(abspath tests/tsan.supp)" \
	    $(TEST_ENV) scripts/run-tests $(TSAN_SUITES:%=$(BUILD)/tests/test_%)

test-gpu: $(BUILD)/layad $(GPU_TEST_BIN) $(TINY)/model.safetensors
	@$(TEST_ENV) scripts/run-tests $(GPU_TEST_BIN)

# The GPU suites built for compute-sanitizer racecheck: the attention's two groups padded to equal
# named-barrier counts (kernels/attention.cu, KN_ATT_PAD_BARRIERS; same bits, slower, so not the
# default), into $(BUILD)/racecheck/tests/.
racecheck-build:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/racecheck NVDEFS=-DKN_ATT_PAD_BARRIERS=1 \
	    $(GPU_TEST_BIN:$(BUILD)/%=$(BUILD)/racecheck/%)

# Tokenizer tools: full-corpus parity (scripts/tokenizer-parity), benchmark, libFuzzer
# targets (clang, CPU-only, ASan+UBSan; run e.g. build/fuzz/fuzz_tokenizer_encode -max_total_time=600).
TOK_SRC      := $(wildcard model/tokenizer/*.c) model/base/error.c model/base/arena.c
TOK_FUZZ_BIN := $(patsubst tests/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz_tokenizer_*.c))
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE -DLAYAD_CUDA=0 -g -O1 -I. -fno-omit-frame-pointer \
                -fsanitize=fuzzer,address,undefined $(PKG_CFLAGS)
.PHONY: bench-tokenizer

fuzz: $(TOK_FUZZ_BIN) $(BUILD)/fuzz/fuzz_request

# The request validator: request_parse on the tiny checkpoint; the library but the backends
# (no forward runs here), plus the API request layer.
REQ_FUZZ_SRC := $(filter-out model/backend/%,$(call rwildcard,model,*.c)) $(wildcard server/api/*.c)
$(BUILD)/fuzz/fuzz_request: tests/fuzz_request.c $(REQ_FUZZ_SRC) $(call rwildcard,model,*.h) $(wildcard server/api/*.h) $(TINY)/model.safetensors
	@mkdir -p $(dir $@) $(BUILD)/fuzz/corpus-request
	clang $(FUZZ_CFLAGS) -o $@ $< $(REQ_FUZZ_SRC) $(PKG_LIBS) -lm -lpthread

TOK_FUZZ_LIB := tests/lib/tok_corpus.c tests/lib/unicode_oracle.c
$(BUILD)/fuzz/fuzz_tokenizer_%: tests/fuzz_tokenizer_%.c $(TOK_SRC) $(TOK_FUZZ_LIB) $(wildcard model/tokenizer/*.h)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< $(TOK_SRC) $(TOK_FUZZ_LIB) $(PKG_LIBS) -lpthread

bench-tokenizer: $(BUILD)/tests/bench_tokenizer
	$(BUILD)/tests/bench_tokenizer bench/results/cpu/tokenizer.json

# End-to-end daemon benchmark: the load generator, and scripts/bench-daemon to run it
# (e.g. make bench-daemon BENCH_DAEMON_ARGS="--model build/tiny --device cpu --out bench/results/cpu/daemon-tiny.json").
$(BUILD)/loadgen: tests/loadgen.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I. -o $@ $< -ljansson -lcrypto -lpthread

.PHONY: bench-daemon
bench-daemon: $(BUILD)/layad $(BUILD)/loadgen
	scripts/bench-daemon $(BENCH_DAEMON_ARGS)

# Kernel benchmark (GPU machine): our kernels at Laya shapes against the ceilings measured in the
# same run, then the PyTorch equivalents (bench/bench_torch_kernels.py, python3 with torch), merged JSON.
BENCH_JSON ?= bench/results/h200/kernels.json
$(BUILD)/bench/bench_kernels: bench/bench_kernels.cu bench/bench_check.cuh $(BUILD)/liblayad.a
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -o $@ $< $(BUILD)/liblayad.a -lcublasLt -lcublas -lgomp

bench-kernels: $(BUILD)/bench/bench_kernels
	$(BUILD)/bench/bench_kernels $(BUILD)/bench/kernels-ours.json
	python3 bench/bench_torch_kernels.py $(BUILD)/bench/kernels-ours.json $(BENCH_JSON)

# The persistent-kernel probe (GPU machine): a layer's four GEMMs as stages of one persistent
# kernel at 16-128 tokens against the same chain on cuBLAS (bench/results/experiments/README.md).
$(BUILD)/bench/persist_probe: bench/persist_probe.cu bench/bench_check.cuh kernels/sm90.cuh kernels/mma.cuh kernels/cuda_util.cuh
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -o $@ $< -lcublas

# The multicast probe (GPU machine): the residual branches' split products on the library's own
# kernel (weights fetched before the programmatic wait, X by cp.async) and on the probe's
# tensor-box forms with clusters, against cuBLASLt's.
$(BUILD)/bench/mcast_probe: bench/mcast_probe.cu bench/probe_common.cuh bench/probe_small.cuh bench/sm90_cluster.cuh kernels/gemm_small.cuh kernels/sm90.cuh bench/bench_check.cuh \
                           kernels/mma.cuh kernels/cuda_util.cuh $(BUILD)/liblayad.a
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 -I. -lineinfo -gencode=arch=compute_90a,code=sm_90a -o $@ $< $(BUILD)/liblayad.a \
	        -lcublasLt -lcublas -lcuda -lgomp

# The fused-epilogue probe (GPU machine): Wqkv + RoPE and Wi + GeGLU in the small-pack
# kernel's epilogue, a layer's chain against the forward's (cuBLASLt + RoPE and GeGLU kernels).
$(BUILD)/bench/fused_probe: bench/fused_probe.cu bench/probe_common.cuh bench/probe_small.cuh kernels/gemm_small.cuh \
                           kernels/sm90.cuh bench/bench_check.cuh kernels/mma.cuh kernels/cuda_util.cuh $(BUILD)/liblayad.a
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 -I. -lineinfo -gencode=arch=compute_90a,code=sm_90a -o $@ $< $(BUILD)/liblayad.a \
	        -lcublasLt -lcublas -lgomp

# The racecheck probe (GPU machine, under compute-sanitizer): the two-group attention's state
# handoff alone, with the kernel's other parts added one at a time.
$(BUILD)/bench/racecheck_probe: bench/racecheck_probe.cu bench/bench_check.cuh kernels/mma.cuh kernels/cuda_util.cuh
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 -I. -lineinfo -gencode=arch=compute_90a,code=sm_90a -o $@ $<

# The warpgroup-MMA probe (GPU machine): the attention's two products by wgmma against its
# mma.sync steps, bit for bit, and the time of a tile step each way.
$(BUILD)/bench/wgmma_att_probe: bench/wgmma_att_probe.cu bench/bench_check.cuh kernels/wgmma.cuh kernels/mma.cuh \
                               kernels/cuda_util.cuh
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 -I. -lineinfo -gencode=arch=compute_90a,code=sm_90a -o $@ $<

# The ingest probe (GPU machine): how fast bulk copies bring bytes into one SM from L2 and DRAM,
# with and without multicast, and a flag's round trip between two SMs.
$(BUILD)/bench/ingest_probe: bench/ingest_probe.cu bench/sm90_cluster.cuh kernels/sm90.cuh bench/bench_check.cuh
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 -I. -lineinfo -gencode=arch=compute_90a,code=sm_90a -o $@ $<

persist-probe: $(BUILD)/bench/persist_probe
	$(BUILD)/bench/persist_probe 16 32 64 83 128

# The CUTLASS probes (GPU machine; CUTLASS is not a dependency of layad: point CUTLASS_DIR at a
# CUTLASS 4 include/ folder, e.g. the copy inside the tilelang wheel's 3rdparty/cutlass).
CUTLASS_FLAGS = -O3 -DNDEBUG -std=c++17 -I. -I$(CUTLASS_DIR) --expt-relaxed-constexpr \
                -gencode=arch=compute_90a,code=sm_90a
$(BUILD)/bench/cutlass_probe: bench/cutlass_probe.cu bench/cutlass_common.cuh bench/probe_common.cuh bench/bench_check.cuh
	@test -n "$(CUTLASS_DIR)" || { echo "set CUTLASS_DIR to CUTLASS's include/ folder"; exit 1; }
	@mkdir -p $(dir $@)
	$(NVCC) $(CUTLASS_FLAGS) -o $@ $< -lcublas -lcuda

$(BUILD)/bench/cutlass_epilogue_probe: bench/cutlass_epilogue_probe.cu bench/cutlass_common.cuh bench/probe_common.cuh \
                                      bench/bench_check.cuh $(BUILD)/liblayad.a
	@test -n "$(CUTLASS_DIR)" || { echo "set CUTLASS_DIR to CUTLASS's include/ folder"; exit 1; }
	@mkdir -p $(dir $@)
	$(NVCC) $(CUTLASS_FLAGS) -o $@ $< $(BUILD)/liblayad.a -lcublasLt -lcublas -lcuda -lgomp

# PREFIX places the binary, the unit, sysusers.d/tmpfiles.d and the docs; the unit's ExecStart
# and Documentation follow PREFIX. Configuration goes to $(DESTDIR)/etc whatever the prefix
# (systemd reads it there), 0640: it may hold a key. Its group becomes layad through tmpfiles.d
# (a package runs sysusers + tmpfiles; on a live install, as root, so does this target).
UNIT_DIR := $(PREFIX)/lib/systemd/system
install: $(BUILD)/layad $(BUILD)/layad-dev
	install -D -m 0755 $(BUILD)/layad $(DESTDIR)$(PREFIX)/bin/layad
	install -D -m 0640 config/layad.conf $(DESTDIR)/etc/layad/layad.conf
	install -D -m 0640 deploy/layad.env $(DESTDIR)/etc/default/layad
	install -d $(DESTDIR)$(UNIT_DIR)
	sed -e 's|/usr/local/bin/layad|$(PREFIX)/bin/layad|g' -e 's|/usr/local/share/doc/layad|$(PREFIX)/share/doc/layad|g' \
	    deploy/layad.service > $(DESTDIR)$(UNIT_DIR)/layad.service
	chmod 0644 $(DESTDIR)$(UNIT_DIR)/layad.service
	install -D -m 0644 deploy/layad.sysusers $(DESTDIR)$(PREFIX)/lib/sysusers.d/layad.conf
	install -D -m 0644 deploy/layad.tmpfiles $(DESTDIR)$(PREFIX)/lib/tmpfiles.d/layad.conf
	install -D -m 0644 deploy/README.md $(DESTDIR)$(PREFIX)/share/doc/layad/README.md
	install -D -m 0644 -t $(DESTDIR)$(PREFIX)/share/layad/grafana deploy/grafana/*.json
	install -D -m 0644 -t $(DESTDIR)$(PREFIX)/share/layad/prometheus deploy/prometheus/*.yml
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v systemd-sysusers >/dev/null; then \
	    echo "systemd-sysusers + systemd-tmpfiles --create (user layad, /var/lib/layad, 0640 root:layad)"; \
	    systemd-sysusers $(PREFIX)/lib/sysusers.d/layad.conf && \
	    systemd-tmpfiles --create $(PREFIX)/lib/tmpfiles.d/layad.conf; \
	fi

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -type f -name '*.d' 2>/dev/null)

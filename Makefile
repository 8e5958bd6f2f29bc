# goshmem's front door. Every target installs what it needs first
# (scripts/deps.sh is idempotent and fast when everything is present).
#
#   make demo      CPU Jacobi under mpirun with 4 PEs, verified against a 1-PE reference
#   make test      vet, unit tests with -race, allocator fuzzing, multi-PE integration suite, and
#                  every check below but gpu (scripts/test.sh: the nvcc compiles beside the Go ones)
#   make bench     goshmem-perf and the OpenSHMEM peer in one run; ratio table + plot
#   make lint      go vet, gofmt check, staticcheck (pinned) in every module of the tree
#   make gpu       fatbins (sm_90 SASS + compute_90 PTX) and Go binaries for the GPU machine, in bin/
#   make gpucoll   only what tests/gpu/coll.sh needs (the device collectives' fatbins in parts, in parallel)
#   make hdrcheck  device header (include/goshmem.h): host-mode C/C++ tests, nvcc sm_90 (and sm_80) fatbin checks
#   make build     every binary into bin/
#   make gpulib    regenerate the kernel library gpulib/lib.fatbin (module .../gpulib) + its stamp; needs nvcc
#   make modcheck  module zip, go line, modules a shmem program inherits, examples/hello size

SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
# mpirun refuses root unless told; CI and the dev machines run as root.
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1

GO       ?= go
# Go's build cache does not track headers a cgo package #includes from
# outside its directory: internal/cgo/devhost, cxihost and the ibgda/cxi
# e2e tests compile include/goshmem/*.h for the host and would keep stale
# objects after a header edit. A define derived from the headers' content
# makes every header change rebuild them.
HDR_HASH := $(shell cat $$(find include -name '*.h' | sort) 2>/dev/null | sha1sum | cut -c1-12)
# (A make run by make inherits the define: it is replaced, not repeated.)
CGO_CFLAGS_BASE := $(filter-out -DGOSHMEM_HDR_%,$(CGO_CFLAGS))
export CGO_CFLAGS := $(if $(CGO_CFLAGS_BASE),$(CGO_CFLAGS_BASE),-O2 -g) -DGOSHMEM_HDR_$(HDR_HASH)
BIN      := bin
# Open MPI's launcher by its own name: Debian's mpirun alternative may point to MPICH's.
MPIRUN   ?= $(shell command -v mpirun.openmpi || echo mpirun) --oversubscribe
DEMO_NP  ?= 4
UNIT_PKGS := ./internal/... ./shmem/... ./examples/...
# Nested modules (a go.mod of their own, left out of the module zip): go
# commands run inside each. GO_MODULES have packages to vet, TEST_MODULES
# unit tests too.
GO_MODULES   := gpulib cmd/goshmem-perf tests/gpu scripts/modcheck
TEST_MODULES := gpulib cmd/goshmem-perf
# Fuzz budgets are execution counts, about what 20 s (10 s for the CQE
# parser) ran here: a wall-clock -fuzztime races Go 1.26's fuzz coordinator
# at the deadline and fails with a bare "context deadline exceeded" and no
# failing input on a busy machine (go.dev/issue/75804, fixed in Go 1.27).
FUZZ_ALLOC ?= 200000x
FUZZ_WQE   ?= 800000x
FUZZ_CQE   ?= 20000x

.PHONY: all deps build demo test unit integration fuzz bench lint clean hdrcheck hdrcheck-gpu gpu gpucoll fatbins ibgdacheck gpulib gpulib-check modcheck

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./examples/...
	cd cmd/goshmem-perf && $(GO) build -o $(abspath $(BIN))/ .

demo: deps
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/jacobi-cpu ./examples/jacobi-cpu
	$(MPIRUN) -np $(DEMO_NP) $(BIN)/jacobi-cpu
	@echo "demo: OK: the $(DEMO_NP)-PE result matches the 1-PE reference element by element (jacobi-cpu exits 1 on any mismatch)"

# The checks of lint modcheck hdrcheck ibgdacheck fatbins gpulib-check unit
# fuzz integration, run by scripts/test.sh: CUDA's nvcc installs in the
# background (deps.sh --cuda) while lint hdrcheck-host ibgdacheck-host
# gpulib-check fuzz run; then modcheck unit integration, which look at the
# installed packages; the nvcc compiles (test-nvcc, one core each) run in
# the background at the lowest priority once nvcc is there, so that they
# take the cores the Go checks leave idle. Any failing check fails the run.
test: deps
	@MAKE="$(MAKE)" bash scripts/test.sh
# deps installs MPICH, so its tests must run, not skip.
test: export GOSHMEM_REQUIRE_MPICH := 1
test: export GOSHMEM_REQUIRE_RDMA_CORE_DEV := 1
test: export GOSHMEM_REQUIRE_LIBFABRIC_DEV := 1

# goshmem's own kernels (stream-ordered calls, host collectives on GPU
# arrays): the module github.com/goshmem/goshmem/gpulib embeds
# gpulib/lib.fatbin, and a program that needs the kernels imports it
# (docs/gpu.md). lib.fatbin is committed, with lib.fatbin.sha256, the hash
# of its sources (gpulib/stamp.sh). Regenerate after editing gpulib/lib.cu,
# internal/gpulib/lib.h or any device header. The fatbin is compressed
# (-compress-all): the driver inflates it at load. It holds SASS for sm_80
# and sm_90, and for sm_100 when this nvcc lists it (CUDA 12.8 and later),
# and PTX for the newest of them, which the driver compiles for a newer GPU.
gpulib:
	@bash scripts/deps.sh --cuda
	archs="80 90"; nvcc --list-gpu-arch 2>/dev/null | grep -qx compute_100 && archs="$$archs 100"; \
	  last=$${archs##* }; gc=""; for a in $$archs; do gc="$$gc -gencode arch=compute_$$a,code=sm_$$a"; done; \
	  echo "gpulib: $$(nvcc --version | grep -o 'release [0-9.]*'): SASS for sm_$${archs// /, sm_}, PTX compute_$$last"; \
	  cd gpulib && nvcc -std=c++17 -I../include -I../internal/gpulib --threads 0 $$gc \
	  -gencode arch=compute_$$last,code=compute_$$last -Xfatbin -compress-all -fatbin lib.cu -o lib.fatbin
	bash gpulib/stamp.sh > gpulib/lib.fatbin.sha256

# CI: the committed fatbin's stamp matches its sources (nvcc output is not
# byte-reproducible, so the sources' hash is what is compared).
gpulib-check:
	@want=$$(cat gpulib/lib.fatbin.sha256); got=$$(bash gpulib/stamp.sh); \
	  if [ "$$want" != "$$got" ]; then echo "gpulib-check: gpulib/lib.fatbin is stale: run make gpulib and commit it"; exit 1; fi; \
	  echo "gpulib-check: lib.fatbin matches its sources"

# CI: what a user downloads and builds (scripts/modcheck): the module zip
# of HEAD at most 3 MiB, go lines without a patch level, at most
# MODCHECK_MODS modules under a program that imports shmem, examples/hello
# at most 12 MiB; then scripts/buildcheck.sh builds examples/hello where no
# MPI, libfabric, rdma-core, CUDA or pkg-config exists and checks that it
# links only libc.
MODCHECK_MODS ?= 25
modcheck: deps
	cd scripts/modcheck && $(GO) run . -root ../.. -mods $(MODCHECK_MODS)
	bash scripts/buildcheck.sh

# More go test flags for unit, fuzz and integration. make test passes
# -vet=off (scripts/test.sh): its lint has run go vet on every package
# already, and go vet's checks include the ones go test runs.
GOTEST_FLAGS ?=

# 20 minutes a package: under -race internal/collectives' waits yield, and
# beside make test's background nvcc jobs it takes several times as long
# as alone.
unit:
	$(GO) test $(GOTEST_FLAGS) -race -count=1 -timeout 20m $(UNIT_PKGS)
	@for m in $(TEST_MODULES); do echo "cd $$m && $(GO) test $(GOTEST_FLAGS) -race -count=1 -timeout 10m ./..."; \
	  (cd $$m && $(GO) test $(GOTEST_FLAGS) -race -count=1 -timeout 10m ./...) || exit 1; done

fuzz:
	$(GO) test $(GOTEST_FLAGS) -run '^$$' -fuzz FuzzAllocator -fuzztime $(FUZZ_ALLOC) ./internal/symmetric/
	$(GO) test $(GOTEST_FLAGS) -run '^$$' -fuzz FuzzDecodeWQE -fuzztime $(FUZZ_WQE) ./internal/ibgda/
	$(GO) test $(GOTEST_FLAGS) -run '^$$' -fuzz FuzzParseCQE -fuzztime $(FUZZ_CQE) ./internal/ibgda/
	$(GO) test $(GOTEST_FLAGS) -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 20000x ./internal/bootstrap/tcp/
	$(GO) test $(GOTEST_FLAGS) -run '^$$' -fuzz '^FuzzUniqueIDText$$' -fuzztime 20000x ./internal/bootstrap/tcp/

integration:
	$(GO) test $(GOTEST_FLAGS) -count=1 -timeout 15m ./tests/...

# Device API: host-mode tests (gcc C11 + g++ C++17), then nvcc fatbin/cuobjdump
# checks (installed by scripts/deps.sh --cuda; a missing nvcc is a loud skip,
# and fails when GOSHMEM_REQUIRE_NVCC=1).
hdrcheck:
	@bash scripts/deps.sh --cuda
	bash tests/hdr/run.sh
# Its parts, for make test: the host-mode checks, and each group of nvcc
# checks (tests/hdr/run.sh) as a job of its own.
hdrcheck-host:
	bash tests/hdr/run.sh host
HDR_NVCC_JOBS := hdrcheck-nvcc-coll90 hdrcheck-nvcc-lib80 hdrcheck-nvcc-coll80 hdrcheck-nvcc-kernels hdrcheck-nvcc-regs
$(HDR_NVCC_JOBS): hdrcheck-nvcc-%:
	@bash tests/hdr/run.sh nvcc $*

# Everything the GPU machine runs (tests/gpu/run.sh, bench/gpu/run.sh,
# bench/jacobi/run.sh): kernels built here with CUDA 11.8, Go binaries built
# here (MPI is loaded at run time: the GPU machine's own libmpi.so.40). Carry bin/ there.
NVCC_FATBIN := nvcc -std=c++17 -Iinclude -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -fatbin
# Stripped (-s -w): bin/ travels to the GPU machine, 64 MiB at most.
gpu: fatbins
	$(MAKE) --no-print-directory -j$$(nproc) $(COLL_FATBINS)
	bash tests/gpu/kernels/devcoll_parts.sh $(G)
	cd tests/gpu && $(GO) build -ldflags='-s -w' -o $(abspath $(BIN))/devtest ./devtest
	cd cmd/goshmem-perf && $(GO) build -ldflags='-s -w' -o $(abspath $(BIN))/goshmem-perf .
	$(GO) build -ldflags='-s -w' -o $(BIN)/jacobi-gpu ./examples/jacobi-gpu
	$(GO) build -ldflags='-s -w' -o $(BIN)/spmd ./tests/integration/spmd

# Every kernel of the project to an sm_90 + compute_90 fatbin (make test
# compiles each but devtest_sm80, in test-nvcc: the kernels must compile even
# where no GPU exists). Skipped loudly without nvcc.
fatbins:
	@bash scripts/deps.sh --cuda
	@if ! command -v nvcc >/dev/null; then echo "fatbins: WARNING: nvcc not found: kernels NOT compiled"; \
	  [ "$${GOSHMEM_REQUIRE_NVCC:-0}" != 1 ] || exit 1; exit 0; fi; \
	$(MAKE) --no-print-directory -j$$(nproc) $(FATBINS) && \
	echo "fatbins: all kernels compiled (sm_90 SASS + compute_90 PTX; devtest.cu for sm_80 too) into $(BIN)/gpu"

# One rule per kernel file (always rebuilt: compiling them is the check),
# run in parallel by `fatbins`.
G := $(BIN)/gpu
FATBINS := $(G)/devtest.fatbin $(G)/compat.fatbin $(G)/devtest_remote.fatbin $(G)/compat_remote.fatbin \
	$(G)/perf.fatbin $(G)/perf_remote.fatbin $(G)/cxi.fatbin $(G)/jacobi.fatbin $(G)/proxy.fatbin \
	$(G)/ibgda_perf_gpu.fatbin $(G)/ibgda_perf_sys.fatbin $(G)/ibgda_perf_none.fatbin \
	$(G)/devtest_sm80.fatbin
# The GPU machine's collective kernels take many minutes of nvcc on two
# cores, so `make test` leaves them to `make gpu`/`make gpucoll`; CI
# compiles the device collectives through tests/hdr/coll_kernels.cu
# (hdrcheck) and tests/hdr/compat_kernels.cu instead.
# tests/gpu/kernels/devcoll.cu is built in DEVCOLL_NPARTS parts
# (-DDEVCOLL_PART=k: its DC_PART_* table says which kernels), one fatbin
# each, devcoll_<k>.fatbin and devcoll_remote_<k>.fatbin, so that make -j
# runs them at once: nvcc compiles a file on one core. devtest -coll
# bin/gpu/devcoll.fatbin loads the parts.
DEVCOLL_NPARTS := $(shell sed -n 's/^.define DEVCOLL_NPARTS \([0-9]*\).*/\1/p' tests/gpu/kernels/devcoll.cu)
DEVCOLL_KS := $(shell seq 0 $$(($(DEVCOLL_NPARTS) - 1)))
DEVCOLL_FATBINS := $(DEVCOLL_KS:%=$(G)/devcoll_%.fatbin)
DEVCOLL_REMOTE_FATBINS := $(DEVCOLL_KS:%=$(G)/devcoll_remote_%.fatbin)
COLL_FATBINS := $(DEVCOLL_FATBINS) $(DEVCOLL_REMOTE_FATBINS) $(G)/perf_coll.fatbin
.PHONY: $(FATBINS) $(COLL_FATBINS)
$(G)/devtest.fatbin:
	@mkdir -p $(@D); $(NVCC_FATBIN) tests/gpu/kernels/devtest.cu -o $@
# the point-to-point suite's kernels for an A100 (sm_80): the header needs
# nothing newer (hdrcheck builds the collectives and the kernel library
# for it too)
$(G)/devtest_sm80.fatbin:
	@mkdir -p $(@D); nvcc -std=c++17 -Iinclude -gencode arch=compute_80,code=sm_80 -fatbin tests/gpu/kernels/devtest.cu -o $@
$(G)/compat.fatbin:
	@mkdir -p $(@D); $(NVCC_FATBIN) tests/gpu/kernels/compat.cu -o $@
$(G)/devtest_remote.fatbin:
	@mkdir -p $(@D); $(NVCC_FATBIN) -DGOSHMEM_REMOTE_TRANSPORTS tests/gpu/kernels/devtest.cu -o $@
$(G)/compat_remote.fatbin:
	@mkdir -p $(@D); $(NVCC_FATBIN) -DGOSHMEM_REMOTE_TRANSPORTS tests/gpu/kernels/compat.cu -o $@
# (a whole-file devcoll.fatbin left from an older build is removed: devtest
# refuses a name that is both a file and a set of parts). -compress-all:
# nvcc compressed the SASS of the whole file's fatbin but leaves the parts'
# uncompressed, which more than doubled their sum; bin/ travels to the GPU
# machine.
$(DEVCOLL_FATBINS): $(G)/devcoll_%.fatbin:
	@mkdir -p $(@D); rm -f $(@D)/devcoll.fatbin; \
	  $(NVCC_FATBIN) -Xfatbin -compress-all -DDEVCOLL_PART=$* tests/gpu/kernels/devcoll.cu -o $@
$(DEVCOLL_REMOTE_FATBINS): $(G)/devcoll_remote_%.fatbin:
	@mkdir -p $(@D); rm -f $(@D)/devcoll_remote.fatbin; \
	  $(NVCC_FATBIN) -Xfatbin -compress-all -DGOSHMEM_REMOTE_TRANSPORTS -DDEVCOLL_PART=$* tests/gpu/kernels/devcoll.cu -o $@
$(G)/perf_coll.fatbin:
	@mkdir -p $(@D); $(NVCC_FATBIN) -O3 bench/gpu/perf_coll.cu -o $@
# Only what tests/gpu/coll.sh and coll2.sh need (issue 17's GPU runs): `make -j$(nproc) gpucoll`.
gpucoll: $(COLL_FATBINS) $(G)/perf.fatbin
	bash tests/gpu/kernels/devcoll_parts.sh $(G)
	cd tests/gpu && $(GO) build -ldflags='-s -w' -o $(abspath $(BIN))/devtest ./devtest
	cd cmd/goshmem-perf && $(GO) build -ldflags='-s -w' -o $(abspath $(BIN))/goshmem-perf .

$(G)/perf.fatbin:
	@mkdir -p $(@D); $(NVCC_FATBIN) bench/gpu/perf.cu -o $@
$(G)/perf_remote.fatbin:
	@mkdir -p $(@D); $(NVCC_FATBIN) -DGOSHMEM_REMOTE_TRANSPORTS bench/gpu/perf.cu -o $@
$(G)/cxi.fatbin:
	@mkdir -p $(@D); $(NVCC_FATBIN) bench/cxi/cxi.cu -o $@
$(G)/jacobi.fatbin:
	@mkdir -p $(@D); $(NVCC_FATBIN) examples/jacobi-gpu/jacobi.cu -o $@
$(G)/proxy.fatbin:
	@mkdir -p $(@D); $(NVCC_FATBIN) bench/proxy/proxy.cu -o $@
# (explicit, not a pattern rule: make applies no pattern rule to a phony target)
IBGDA_FATBIN = @mkdir -p $(@D); rm -f $@; \
	$(NVCC_FATBIN) -DGOSHMEM_IBGDA_ORDER_$(1) bench/ibgda/ibgda_perf.cu -o $@ 2>&1 | grep -v 'ORDER_NONE\|\#warning\|^ *|\|^ *\^\|In file included\|from ' ; \
	test -s $@
$(G)/ibgda_perf_gpu.fatbin:
	$(call IBGDA_FATBIN,GPU)
$(G)/ibgda_perf_sys.fatbin:
	$(call IBGDA_FATBIN,SYS)
$(G)/ibgda_perf_none.fatbin:
	$(call IBGDA_FATBIN,NONE)

# IBGDA: goshmem's mlx5 WQE encoders byte-compared with rdma-core's own
# mlx5dv.h builders, and the IBGDA kernels compiled in every ordering mode.
ibgdacheck: ibgdacheck-host
	@if command -v nvcc >/dev/null; then $(MAKE) --no-print-directory $(IBGDA_NVCC_JOBS) || exit 1; \
	  echo "ibgdacheck: IBGDA kernels compiled (GPU, SYS, NONE ordering)"; \
	else echo "ibgdacheck: WARNING: nvcc not found: IBGDA kernels NOT compiled"; fi
ibgdacheck-host: deps
	@mkdir -p $(BIN)/ibgda
	gcc -std=c11 -Wall -Wextra -Werror -O2 -Iinclude tests/ibgda/wqe_vs_rdma_core.c -libverbs -lmlx5 -o $(BIN)/ibgda/wqe_vs_rdma_core
	$(BIN)/ibgda/wqe_vs_rdma_core
IBGDA_NVCC_JOBS := ibgdacheck-nvcc-GPU ibgdacheck-nvcc-SYS ibgdacheck-nvcc-NONE
$(IBGDA_NVCC_JOBS): ibgdacheck-nvcc-%:
	@mkdir -p $(BIN)/ibgda
	$(NVCC_FATBIN) -DGOSHMEM_IBGDA_ORDER_$* tests/ibgda/ibgda_kernels.cu -o $(BIN)/ibgda/ibgda_$*.fatbin

# make test's background half: every nvcc compile of hdrcheck, ibgdacheck
# and fatbins as jobs of one make -j, each job's output in one piece, all
# of them run when one fails (-k); skipped loudly without nvcc (a failure
# with GOSHMEM_REQUIRE_NVCC=1), as those targets are. The longest jobs
# first (TEST_NVCC_LONG, a few minutes each), so that the last ones are short.
# devtest.cu for sm_80, one of the longest, is left to make fatbins: the
# header's point-to-point API is compiled for sm_80 by hdrcheck's kernels group.
TEST_NVCC_LONG := $(G)/devtest.fatbin hdrcheck-nvcc-lib80 hdrcheck-nvcc-coll90 $(G)/devtest_remote.fatbin \
	hdrcheck-nvcc-coll80 hdrcheck-nvcc-kernels
TEST_NVCC_JOBS := $(TEST_NVCC_LONG) $(filter-out $(TEST_NVCC_LONG) $(G)/devtest_sm80.fatbin,$(HDR_NVCC_JOBS) $(IBGDA_NVCC_JOBS) $(FATBINS))
test-nvcc:
	@bash scripts/deps.sh --cuda
	@if ! command -v nvcc >/dev/null; then echo "test-nvcc: WARNING: nvcc not found: hdrcheck's nvcc checks, the IBGDA kernels and fatbins NOT compiled"; \
	  [ "$${GOSHMEM_REQUIRE_NVCC:-0}" != 1 ] || exit 1; exit 0; fi; \
	$(MAKE) --no-print-directory -k -j$$(nproc) -Otarget $(TEST_NVCC_JOBS) && \
	echo "test-nvcc: hdrcheck's nvcc checks passed, IBGDA kernels compiled (GPU, SYS, NONE ordering), every fatbin compiled but devtest_sm80"
.PHONY: test-nvcc hdrcheck-host ibgdacheck-host $(HDR_NVCC_JOBS) $(IBGDA_NVCC_JOBS)

# On the GPU machine, after `make hdrcheck` built bin/hdr (carry bin/hdr).
hdrcheck-gpu:
	bin/hdr/smoke_host bin/hdr/smoke.fatbin 0 && bin/hdr/smoke_host bin/hdr/smoke.fatbin 1

bench: deps
	bash bench/run.sh

# staticcheck at a pinned version, installed once into $(BIN)/tools (the
# name carries the version, so a bump reinstalls). It runs in the main
# module and in every nested module (each folder with a go.mod, found at
# run time so a new one is covered); any finding fails lint.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(abspath $(BIN))/tools/staticcheck-$(STATICCHECK_VERSION)

$(STATICCHECK):
	@mkdir -p $(@D)
	GOBIN=$(@D) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(@D)/staticcheck $@

lint: deps $(STATICCHECK)
	$(GO) vet ./...
	@for m in $(GO_MODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@fail=0; for mod in $$(find . -name go.mod -not -path './.git/*' -not -path './$(BIN)/*' -not -path '*/testdata/*' | sort); do \
	  dir=$$(dirname $$mod); echo "staticcheck $(STATICCHECK_VERSION): $$dir"; \
	  (cd $$dir && $(STATICCHECK) ./...) || fail=1; \
	done; \
	if [ $$fail != 0 ]; then echo "lint: staticcheck reported findings (above)"; exit 1; fi

clean:
	rm -rf $(BIN)

# tipnode — see README.md.
GO      ?= go
BIN     := bin/tipnode
PKGS    := ./...
# make run: DATADIR keeps the dev chain in that directory across runs (empty:
# a fresh temporary one, deleted on exit); ARGS are more `tipnode dev` flags,
# e.g. make run ARGS='--http.addr 127.0.0.1:9545 --block.time 4s'.
DATADIR ?=
ARGS    ?=

.PHONY: build test bench run vet lint fuzz fuzz-list clean crash soak bench-geth bench-geth-quick bench-geth-10m bench-import op-geth-diff pgo replay bench-follow200 help

build: ## build bin/tipnode (profile-guided by cmd/tipnode/default.pgo)
	$(GO) build -o $(BIN) ./cmd/tipnode

# The one test command: vet plus the race-enabled test suite. The conformance
# tests read ../shared/conformance and skip (saying so) when it is absent.
test: vet ## the one test command: go vet + the race-enabled test suite
	$(GO) test -race -timeout 40m $(PKGS)

vet: ## go vet over every package
	$(GO) vet $(PKGS)

# staticcheck, run from the Go module proxy at a pinned version (no install
# step; v0.8.2 is staticcheck 2026.2.2, which supports Go 1.26). CI runs it
# after make test. Findings that are deliberate carry a //lint:ignore with
# the reason.
STATICCHECK_VERSION ?= v0.8.2
lint: ## staticcheck (pinned, from the Go module proxy) over every package
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)

bench: ## every Go benchmark
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# The long crash tests: 60 rounds of kill -9 of `tipnode dev` under a
# transaction stream (every seal prunes the trie) and up to 60 of `tipnode
# import`, each followed by `tipnode verify`; then 300 simulated crashes
# after block writes, unwinds, reorgs and unwinds/reorgs deeper than the
# trie window, each clone verified (make test runs 12, 12 and 30).
crash: ## the crash tests: kill -9 of a sealing node and of an import (60 rounds each), 300 simulated store crashes; tipnode verify after each
	TIPNODE_CRASH_ITERATIONS=60 $(GO) test -count=1 -run 'TestCrashKeepsPreconfirmations|TestCrashDuringImport' -v -timeout 30m ./cmd/tipnode/
	TIPNODE_CRASH_ITERATIONS=60 $(GO) test -count=1 -run TestTrieCrashConsistent -v -timeout 30m ./store/

# The replay harness in full (make test runs it short): a go-ethereum-built
# chain with real state roots streamed as OP subblocks (55 blocks of 2 s,
# 250 ms subblocks of about 1 Mgas, state_root and block_hash zero), its
# canonical blocks 31-276 ms late; pending sampled every 20 ms. Reports
# pending regressions, emitted -> readable p50/p99 and the replica's counters.
replay: ## the replay harness in full (make test runs it short)
	TIPNODE_REPLAY=full $(GO) test -count=1 -run TestReplayHarness -v -timeout 20m ./pending/replica/

# The 200 ms block benchmark (not in make test): a go-ethereum upstream in
# its own process makes a block of about 15 Mgas every 200 ms for FOLLOW200;
# a follower over websockets (fsync on, state roots verified) follows it.
# Reports upstream has the block -> readable at latest (p50/p99/max), the
# blocks-behind distribution and CPU per block of both processes.
FOLLOW200 ?= 10m
bench-follow200: ## follow a 200 ms, 15 Mgas block upstream for FOLLOW200 (default 10m)
	TIPNODE_FOLLOW200=$(FOLLOW200) $(GO) test -count=1 -run '^$$' -bench '^BenchmarkFollow200ms$$' -benchtime 1x -timeout 2h -v ./chain/follow/

# The soak test (not in make test): a sequencer and two replicas under
# load, one killed with SIGKILL in turn every SOAK_KILL; nothing lost, the
# same hashes, pending never older than latest, resident memory reported.
SOAK      ?= 300s
SOAK_KILL ?= 40s
soak: ## a sequencer and two replicas under load, one killed in turn (SOAK=300s SOAK_KILL=40s)
	TIPNODE_SOAK=$(SOAK) TIPNODE_SOAK_KILL=$(SOAK_KILL) $(GO) test -count=1 -run TestSoak -v -timeout 60m ./cmd/tipnode/

# Fuzzing: every Fuzz target of the module, found by `go test -list` (a new
# target needs no entry here), each run for FUZZTIME, then the wire-level
# fuzz of a real node over HTTP and websocket (make test runs it for 3 s).
FUZZTIME ?= 20s
# Prints "package target" for every Fuzz target (fails when go test -list does).
FUZZ_LIST = list=$$($(GO) test -list '^Fuzz' $(PKGS)) || { echo "$$list" >&2; exit 1; }; \
	echo "$$list" | awk '/^Fuzz/ {n[++k] = $$1; next} /^ok/ {for (i = 1; i <= k; i++) print $$2, n[i]} {k = 0}'

fuzz-list: ## list the Fuzz targets `make fuzz` runs (package and name)
	@$(FUZZ_LIST)

fuzz: ## a short fuzzing pass (FUZZTIME=20s each) over every Fuzz target, then the wire fuzz of a real node for 60 s
	@targets=$$($(FUZZ_LIST)) || exit 1; \
	test -n "$$targets" || { echo "make fuzz: no Fuzz targets found" >&2; exit 1; }; \
	echo "$$targets" | while read pkg fn; do \
		echo "== $$fn ($$pkg)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done
	TIPNODE_WIREFUZZ=60s $(GO) test -count=1 -run TestWireFuzz -v -timeout 10m ./rpc/node/

# Regenerates cmd/tipnode/default.pgo, the CPU profile the Go compiler
# optimizes tipnode with (profile-guided optimization: `go build` picks it
# up by itself). It merges CPU profiles of the Go benchmarks of the hot
# paths: the read path over HTTP and websocket (the requests of
# cmd/benchgeth), simulation, block import, pre-confirmation and the
# replica (run lengths weighted towards the read path). About 2 minutes;
# rerun it after a large change to a hot path and commit the result
# (TestPGOProfile checks it still covers them).
PGO_DIR   := $(or $(TMPDIR),/tmp)/tipnode-pgo
PGO_BENCH := $(GO) test -run '^$$' -count 1
pgo: ## regenerate cmd/tipnode/default.pgo from the hot-path benchmarks (about 2 minutes)
	rm -rf $(PGO_DIR) && mkdir -p $(PGO_DIR)
	$(PGO_BENCH) -benchtime 2s -bench '^BenchmarkHTTP(ChainID|GetStorageAtHot|GetStorageAtLatest|GetStorageAtPast|BalanceOfLatest|BalanceOfPending|BalanceOfPast|Multicall50|Heavy|Batch100|Simulate1|Simulate3x3)$$' -cpuprofile $(PGO_DIR)/eth.pprof -o $(PGO_DIR)/eth.test ./rpc/eth/
	$(PGO_BENCH) -benchtime 4s -bench '^BenchmarkLoopbackWS$$' -cpuprofile $(PGO_DIR)/rpc.pprof -o $(PGO_DIR)/rpc.test ./rpc/
	$(PGO_BENCH) -benchtime 4s -bench '^BenchmarkImportConformanceChain$$' -cpuprofile $(PGO_DIR)/chain.pprof -o $(PGO_DIR)/chain.test ./chain/
	$(PGO_BENCH) -benchtime 1s -bench '^BenchmarkPreconfirm100Txs$$' -cpuprofile $(PGO_DIR)/pending.pprof -o $(PGO_DIR)/pending.test ./pending/sequencer/
	$(PGO_BENCH) -benchtime 1s -bench '^BenchmarkReceivedToReadable$$' -cpuprofile $(PGO_DIR)/replica.pprof -o $(PGO_DIR)/replica.test ./pending/replica/
	$(GO) tool pprof -proto $(PGO_DIR)/*.pprof > $(PGO_DIR)/merged.pprof
	mv $(PGO_DIR)/merged.pprof cmd/tipnode/default.pgo

# Run the embedded dev chain (fresh temporary data directory unless DATADIR
# is set; more flags in ARGS).
run: build ## build and run the dev chain (DATADIR= keeps it, ARGS= adds flags)
	./$(BIN) dev $(if $(DATADIR),--datadir $(DATADIR)) $(ARGS)

# Side-by-side benchmark against go-ethereum (not part of `make test`; see
# README.md). Builds go-ethereum's cmd/geth from the Go module proxy into
# the cache once, generates a deterministic big-state chain, imports it into
# both nodes and runs every workload against both. The full default run
# takes about 30 minutes on 2 cores; bench-geth-quick about 4.
# Extra flags: make bench-geth BENCH_FLAGS="--workloads chainid,heavy --duration 10s"
GETH_VERSION ?= v1.17.8
BENCH_CACHE  ?= $(HOME)/.cache/tipnode-bench
GETH_BIN     := $(BENCH_CACHE)/geth-$(GETH_VERSION)/geth
BENCH_FLAGS  ?=

$(GETH_BIN):
	GOBIN=$(abspath $(dir $(GETH_BIN))) $(GO) install github.com/ethereum/go-ethereum/cmd/geth@$(GETH_VERSION)

bench-geth: build $(GETH_BIN) ## tipnode against go-ethereum on the 1M-slot chain (about 23 minutes; BENCH_FLAGS=)
	$(GO) build -o bin/benchgeth ./cmd/benchgeth
	./bin/benchgeth --cache $(BENCH_CACHE) --geth $(GETH_BIN) --tipnode $(BIN) $(BENCH_FLAGS)

# The import alone, IMPORT_ROUNDS rounds of go-ethereum and tipnode
# alternated (the machine's speed drifts: only ratios within a round
# compare); IMPORT_AB=PATH adds a second tipnode build to every round.
IMPORT_ROUNDS ?= 12
IMPORT_AB     ?=
bench-import: build $(GETH_BIN) ## the import alone, tipnode against go-ethereum, IMPORT_ROUNDS rounds (about 40 s each; IMPORT_AB=a second tipnode)
	$(GO) build -o bin/benchgeth ./cmd/benchgeth
	./bin/benchgeth --cache $(BENCH_CACHE) --geth $(GETH_BIN) --tipnode $(BIN) --import-rounds $(IMPORT_ROUNDS) $(if $(IMPORT_AB),--import-ab $(IMPORT_AB)) $(BENCH_FLAGS)

bench-geth-quick: ## bench-geth on a small chain, short runs (about 4 minutes)
	$(MAKE) bench-geth BENCH_FLAGS="--quick $(BENCH_FLAGS)"

# The 10M-slot variant (10x the holders, the same blocks); add
# BENCH_FLAGS="--compare ~/.cache/tipnode-bench/results/<1M run>.json" to
# print tipnode's figures against a 1M-slot run. Generating the chain takes
# about 9 minutes and 5 GiB the first time. `tipnode init --genesis`
# streams the 1.4 GB genesis (peak RSS 362 MB), but geth's init decodes it
# in memory: the side-by-side run does not fit a 24 GiB machine yet (add
# --nodes tipnode to run tipnode alone).
bench-geth-10m: ## bench-geth on the 10M-slot chain
	$(MAKE) bench-geth BENCH_FLAGS="--slots 10000000 $(BENCH_FLAGS)"

# The differential oracle against op-geth (outside make test): builds
# op-geth's cmd/geth once into the cache from the Go module proxy, in a
# scratch module replacing go-ethereum with op-geth, then runs
# TestOPGethDifferential with it (an OP chain crossing Ecotone..Jovian built
# through op-geth's engine API; tipnode must match it through import and
# follow; ends with import throughput, OP vs L1). About 2 minutes on 2 cores
# once op-geth is built (the first build: 15-20 minutes on a busy machine).
OPGETH_VERSION ?= v1.101702.3
OPGETH_DIR     := $(BENCH_CACHE)/op-geth-$(OPGETH_VERSION)
OPGETH_BIN     := $(OPGETH_DIR)/geth

$(OPGETH_BIN):
	mkdir -p $(OPGETH_DIR)/src
	printf 'module opgethbuild\n\ngo 1.24\n\nrequire github.com/ethereum/go-ethereum v1.17.0\n\nreplace github.com/ethereum/go-ethereum => github.com/ethereum-optimism/op-geth $(OPGETH_VERSION)\n' > $(OPGETH_DIR)/src/go.mod
	cd $(OPGETH_DIR)/src && GOFLAGS=-mod=mod $(GO) build -o $(abspath $(OPGETH_BIN)) github.com/ethereum/go-ethereum/cmd/geth

# OPGETH_DIFF_DIR keeps the test's files (genesis, RLP chains, data directories).
op-geth-diff: $(OPGETH_BIN) ## the differential test against op-geth (builds op-geth once)
	TIPNODE_OPGETH=$(OPGETH_BIN) TIPNODE_OPGETH_DIR=$(OPGETH_DIFF_DIR) $(GO) test -count=1 -run 'TestOPGethDifferential' -v -timeout 45m ./cmd/tipnode/

clean: ## remove bin/
	rm -rf bin

help: ## list the targets
	@awk 'BEGIN {FS = ":[^#]*## "} /^[a-z0-9-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# tipnode — see README.md.
GO      ?= go
BIN     := bin/tipnode
PKGS    := ./...
DATADIR ?=

.PHONY: build test bench run vet fuzz clean crash

build:
	$(GO) build -o $(BIN) ./cmd/tipnode

# The one test command: vet plus the race-enabled test suite. The conformance
# tests read ../shared/conformance and skip (saying so) when it is absent.
test: vet
	$(GO) test -race -timeout 40m $(PKGS)

vet:
	$(GO) vet $(PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# The long process crash test: 60 rounds of kill -9 under a transaction
# stream (make test runs 12).
crash:
	TIPNODE_CRASH_ITERATIONS=60 $(GO) test -count=1 -run TestCrashKeepsPreconfirmations -v -timeout 30m ./cmd/tipnode/

# Short fuzzing pass over every decoder of outside input.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecodeRequest -fuzztime 20s ./rpc/
	$(GO) test -run '^$$' -fuzz FuzzBlockSelector -fuzztime 20s ./rpc/eth/
	$(GO) test -run '^$$' -fuzz FuzzStateOverride -fuzztime 20s ./rpc/eth/
	$(GO) test -run '^$$' -fuzz FuzzCallArgs -fuzztime 20s ./rpc/eth/
	$(GO) test -run '^$$' -fuzz FuzzCallRequest -fuzztime 20s ./rpc/eth/
	$(GO) test -run '^$$' -fuzz FuzzLogFilter -fuzztime 20s ./rpc/eth/
	$(GO) test -run '^$$' -fuzz FuzzDecodeHeader -fuzztime 20s ./chain/follow/
	$(GO) test -run '^$$' -fuzz FuzzDecodeBlock -fuzztime 20s ./chain/follow/
	$(GO) test -run '^$$' -fuzz FuzzDecodeRawBlock -fuzztime 20s ./chain/follow/
	$(GO) test -run '^$$' -fuzz FuzzDecodeGenesis -fuzztime 20s ./chain/follow/

# Run the embedded dev chain (fresh temporary data directory unless DATADIR is set).
run: build
	./$(BIN) dev $(if $(DATADIR),--datadir $(DATADIR))

clean:
	rm -rf bin

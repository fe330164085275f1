# pbsdirect — quick start: `make demo` (restore a real VM disk image end to end),
# `make test` (every test, end-to-end included; what CI runs).

GO      ?= go
TAGS    ?= disable_grpc_modules
BIN     := bin/pbsdirect
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: all build demo test test-short vet bench bench-instant bench-go tools clean

all: build

build:
	$(GO) build -tags $(TAGS) -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/pbsdirect

# Builds a 1 GiB ext4 VM disk image from real files, backs it up into a local
# datastore, restores it and proves the result byte-identical.
demo: build
	bash scripts/demo.sh

vet:
	$(GO) vet -tags $(TAGS) ./...

# Installs the test servers (versitygw) if missing, then runs every test.
test: vet
	bash scripts/install-test-servers.sh
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" $(GO) test -tags $(TAGS) -count=1 -timeout 30m ./...

test-short:
	$(GO) test -tags $(TAGS) -short ./...

# Benchmark suite (bench/README.md): pbsdirect against its baselines and peers.
bench: build
	bash bench/run.sh

# Instant access (bench/README.md): nbdcopy through serve-nbd vs restore,
# serve-nbd's peak RSS, GETs per cold 4 KiB read from a bucket.
bench-instant:
	bash bench/instant.sh

# Go micro-benchmarks of the decode path (blob codec, SHA-256 variants).
bench-go:
	$(GO) test -tags $(TAGS) -run '^$$' -bench . -benchtime 20x ./chunkstore/ ./restore/

clean:
	rm -rf bin build

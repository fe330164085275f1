# pbsdirect — quick start: `make demo` (restore a real VM disk image end to end),
# `make test` (every test, end-to-end included; what CI runs).

GO      ?= go
TAGS    ?= disable_grpc_modules
BIN     := bin/pbsdirect
VERSION ?= $(shell git describe --always --dirty 2>/dev/null)
# Without a version from git, the binary takes it from its build information.
LDFLAGS := -s -w $(if $(VERSION),-X main.version=$(VERSION))

.PHONY: all build check-static demo test test-short vet bench bench-go tools clean

all: build

# A static binary (no libc): it runs in rescue systems and scratch containers.
build:
	CGO_ENABLED=0 $(GO) build -tags $(TAGS) -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/pbsdirect

# Fails unless bin/pbsdirect is statically linked (what CI checks).
check-static: build
	@out=$$(ldd $(BIN) 2>&1 || true); echo "ldd $(BIN): $$out"; \
	case "$$out" in *"not a dynamic executable"*|*"statically linked"*) ;; *) echo "$(BIN) is dynamically linked" >&2; exit 1;; esac

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

# Go micro-benchmarks of the decode path (blob codec, SHA-256 variants).
bench-go:
	$(GO) test -tags $(TAGS) -run '^$$' -bench . -benchtime 20x ./chunkstore/ ./restore/

clean:
	rm -rf bin build

# pbsdirect — quick start: `make demo` (restore a real VM disk image end to end),
# `make test` (every test, end-to-end included; what CI runs).

GO      ?= go
TAGS    ?= disable_grpc_modules
BIN     := bin/pbsdirect
VERSION ?= $(shell git describe --always --dirty 2>/dev/null)
# Without a version from git, the binary takes it from its build information.
LDFLAGS := -s -w $(if $(VERSION),-X main.version=$(VERSION))

PREFIX  ?= /usr/local

.PHONY: all build check-static man install demo test test-short vet bench bench-instant bench-pxar bench-badday bench-backup bench-delta bench-go tools clean

all: build

# A static binary (no libc): it runs in rescue systems and scratch containers.
build:
	CGO_ENABLED=0 $(GO) build -tags $(TAGS) -buildvcs=auto -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/pbsdirect

# Fails unless bin/pbsdirect is statically linked (what CI checks).
check-static: build
	@out=$$(ldd $(BIN) 2>&1 || true); echo "ldd $(BIN): $$out"; \
	case "$$out" in *"not a dynamic executable"*|*"statically linked"*) ;; *) echo "$(BIN) is dynamically linked" >&2; exit 1;; esac

# Man pages (section 1) for pbsdirect and every command, from the same
# descriptions, flags and examples as --help.
man: build
	rm -rf bin/man && mkdir -p bin/man
	$(BIN) man bin/man

# Installs the binary, its man pages and the bash, zsh and fish completion
# scripts under PREFIX (DESTDIR for packaging).
install: man
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/pbsdirect
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 bin/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	$(BIN) completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/pbsdirect
	$(BIN) completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_pbsdirect
	$(BIN) completion fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/pbsdirect.fish

# Builds a 1 GiB ext4 VM disk image from real files, backs it up into a local
# datastore, restores it and proves the result byte-identical.
demo: build
	bash scripts/demo.sh

vet:
	$(GO) vet -tags $(TAGS) ./...

# Installs the test servers (versitygw) and gotestsum if missing, then runs
# every test; gotestsum ends with the failed and the skipped tests (with
# their reasons) and keeps go test's JSON events in build/test.json.
test: vet
	bash scripts/install-test-servers.sh
	mkdir -p build
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" gotestsum --format pkgname --jsonfile build/test.json -- \
		-tags $(TAGS) -count=1 -timeout 30m ./...

# The quick loop: the slow end-to-end tests (real file systems, bucket
# servers, signals) skip under -short.
test-short:
	$(GO) test -tags $(TAGS) -short ./...

# Benchmark suite (bench/README.md): pbsdirect against its baselines and peers.
bench: build
	bash bench/run.sh

# Instant access (bench/README.md): nbdcopy through serve-nbd vs restore,
# serve-nbd's peak RSS, GETs per cold 4 KiB read from a bucket.
bench-instant:
	bash bench/instant.sh

# pxar extraction (bench/README.md): restore of a directory archive vs tar -x.
bench-pxar:
	bash bench/pxar.sh

# The bad day (bench/README.md): throttling windows, resume, a slow link.
bench-badday:
	bash bench/badday.sh

# Backups that do only new work (bench/README.md, "Backups"): local, S3,
# unchanged again, behind latency, against a baseline build.
bench-backup: build
	bash bench/backup.sh

# Differential restores (bench/README.md): --base and --in-place against a
# full restore, and the 64 TiB sparse image's dry run.
bench-delta:
	bash bench/delta.sh

# Go micro-benchmarks of the decode path (blob codec, SHA-256 variants).
bench-go:
	$(GO) test -tags $(TAGS) -run '^$$' -bench . -benchtime 20x ./chunkstore/ ./restore/

clean:
	rm -rf bin build

#!/usr/bin/env bash
# Installs the object-storage servers the bucket-backend tests start on
# loopback (internal/testenv), and the test runner make test uses.
# Idempotent: does nothing when they are there.
#
#   versitygw  S3 gateway (posix backend), go install'ed into $(go env GOPATH)/bin
#   gotestsum  runs go test for make test, ends with the skipped tests
#
# fake-gcs-server needs no install: the tests run its fakestorage package
# in-process (module github.com/fsouza/fake-gcs-server in go.mod).
#
# Tests look for versitygw in $VERSITYGW, $PATH, then $(go env GOPATH)/bin;
# without it they skip, or fail when CI is set.
set -euo pipefail

VERSITYGW_VERSION=v1.8.0
GOTESTSUM_VERSION=v1.13.0
GOBIN_DIR="$(go env GOPATH)/bin"
bin="$GOBIN_DIR/versitygw"

# Install outside the module so that our go.mod is neither used nor touched.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if go version -m "$GOBIN_DIR/gotestsum" 2>/dev/null |
  grep -Eq "^[[:space:]]+mod[[:space:]]+gotest.tools/gotestsum[[:space:]]+${GOTESTSUM_VERSION}([[:space:]]|$)"; then
  echo "gotestsum ${GOTESTSUM_VERSION} already installed: $GOBIN_DIR/gotestsum"
else
  echo "installing gotestsum ${GOTESTSUM_VERSION} into $GOBIN_DIR (go install)"
  (cd "$tmp" && GOFLAGS=-mod=mod GOBIN="$GOBIN_DIR" go install "gotest.tools/gotestsum@${GOTESTSUM_VERSION}")
fi

have_version() {
  # go install'ed binaries carry their module version (--version says "git").
  [ -x "$bin" ] && go version -m "$bin" 2>/dev/null |
    grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/versity/versitygw[[:space:]]+${VERSITYGW_VERSION}([[:space:]]|$)"
}

if have_version; then
  echo "versitygw ${VERSITYGW_VERSION} already installed: $bin"
  exit 0
fi

echo "installing versitygw ${VERSITYGW_VERSION} into $GOBIN_DIR (go install, ~1-2 min on 2 cores)"
(cd "$tmp" && GOFLAGS=-mod=mod GOBIN="$GOBIN_DIR" go install "github.com/versity/versitygw/cmd/versitygw@${VERSITYGW_VERSION}")
have_version || { echo "versitygw install failed: $bin" >&2; exit 1; }
echo "installed $bin"

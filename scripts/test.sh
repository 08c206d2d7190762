#!/usr/bin/env bash
# Runs every test of Weir: static checks, unit tests compiled with -race and interpreted by
# Yaegi v0.16.1, the compiled-only tests of testmod/, and the end-to-end tests through a real
# Traefik v3.6.12.
# Needs Go, redis-server and chromium on PATH (.ci/run installs them); builds Traefik once
# (cached).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=-mod=vendor

step() { printf '\n=== %s\n' "$*"; }

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '^vendor/') 2>/dev/null || true)
if [ -n "$unformatted" ]; then echo "gofmt would change:"; echo "$unformatted"; exit 1; fi

step "go vet"
go vet ./...
# e2e/ is a module of its own (e2e/doc.go): the root's ./... does not enter it.
(cd e2e && GOFLAGS=-mod=mod go vet ./...)

step "constructs Yaegi v0.16.1 gets wrong"
go run ./scripts/yaegilint . ./core/... ./internal/... ./provider/...

if [ -x scripts/check-vendor.sh ]; then
  step "vendor/ is reproducible"
  scripts/check-vendor.sh
fi

step "go test -race (compiled)"
go test -race -count=1 ./...

step "yaegi test (interpreted, as in Traefik)"
scripts/yaegi-test.sh

step "Traefik v3.6.12 for the tests through it"
# Set here, before testmod/, whose admin page test runs through Traefik too.
WEIR_TRAEFIK=${WEIR_TRAEFIK:-$(scripts/build-traefik.sh)}
export WEIR_TRAEFIK
export WEIR_E2E=${WEIR_E2E:-required}
echo "$WEIR_TRAEFIK"

step "compiled-only tests (testmod/, a module of its own that Traefik never loads)"
# -mod=mod: testmod is not vendored; it resolves its modules from its own go.sum. The admin
# page test drives headless Chromium (Debian's chromium) through Traefik.
(cd testmod && GOFLAGS=-mod=mod go vet ./... && GOFLAGS=-mod=mod go test -count=1 -timeout 10m ./...)

step "end to end through Traefik v3.6.12"
(cd e2e && GOFLAGS=-mod=mod go test -count=1 -timeout 20m ./...)

step "soak: two minutes of a day's traffic and faults through Traefik v3.6.12"
# The hour's run, shortened: its faults' schedule scales so that each is met at least once.
# It fails on growth without bound, a heap over budget, a panic in Traefik's log, or an answer
# no designed refusal explains (docs/benchmarks.md, "Soak").
scripts/soak.sh -duration 2m -out "$(mktemp -d)"

#!/usr/bin/env bash
# Runs every test of Weir: static checks, unit tests compiled with -race and interpreted by
# Yaegi v0.16.1, the compiled-only tests of testmod/, and the end-to-end tests through a real
# Traefik v3.6.12.
# Needs Go and redis-server on PATH (.ci/run installs it); builds Traefik once (cached).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=-mod=vendor

step() { printf '\n=== %s\n' "$*"; }

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '^vendor/') 2>/dev/null || true)
if [ -n "$unformatted" ]; then echo "gofmt would change:"; echo "$unformatted"; exit 1; fi

step "go vet"
go vet ./...

step "constructs Yaegi v0.16.1 gets wrong"
go run ./scripts/yaegilint . ./core/... ./internal/...

if [ -x scripts/check-vendor.sh ]; then
  step "vendor/ is reproducible"
  scripts/check-vendor.sh
fi

step "go test -race (compiled)"
go test -race -count=1 $(go list ./... | grep -v /e2e)

step "yaegi test (interpreted, as in Traefik)"
scripts/yaegi-test.sh

step "compiled-only tests (testmod/, a module of its own that Traefik never loads)"
# -mod=mod: testmod is not vendored; it resolves its modules from its own go.sum.
(cd testmod && GOFLAGS=-mod=mod go vet ./... && GOFLAGS=-mod=mod go test -count=1 ./...)

step "end to end through Traefik v3.6.12"
WEIR_TRAEFIK=${WEIR_TRAEFIK:-$(scripts/build-traefik.sh)}
export WEIR_TRAEFIK
WEIR_E2E=${WEIR_E2E:-required} go test -count=1 -timeout 20m ./e2e/

#!/usr/bin/env bash
# Runs Weir's published load scenarios through a real Traefik v3.6.12 with Weir as a local
# plugin, and prints each figure beside its target (docs/benchmarks.md, "Load scenarios"):
# fairness, expiry, sickstore, hotkey, rounds, or all of them. Not part of scripts/test.sh:
# the e2e suite runs each scenario small and asserts its shape; this runs them at the
# published scale (sickstore's million requests take several minutes).
#
# Usage: scripts/loadtest.sh [-requests 1000000] [-rounds 10000] [-repeats 5] [-controls [-limit DIR]] [-dir DIR] SCENARIO|all
#        -dir keeps Traefik's and Redis's files (configuration, logs); default: temporary
#        -controls: fairness also through bare Traefik and the weirlimit plugin (source in
#        -limit, default ../shared/bench/weirlimit from the root), interleaved with Weir
# Env:   WEIR_TRAEFIK  Traefik binary (default: scripts/build-traefik.sh finds or builds it)
#        sickstore needs redis-server on PATH (or WEIR_REDIS).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# e2e/ is a module of its own, resolved from its go.sum (see scripts/bench.sh).
bin="$(mktemp -d)/loadtest"
GOFLAGS=-mod=mod go -C e2e build -o "$bin" ./cmd/loadtest
exec "$bin" -traefik "${WEIR_TRAEFIK:-$(scripts/build-traefik.sh)}" "$@"

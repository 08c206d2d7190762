#!/usr/bin/env bash
# A day of production in an hour: one Traefik v3.6.12 with Weir as a local plugin, its store on
# a throwaway redis-server, an origin the run controls, under mixed traffic (hits, misses,
# pass-through, uploads, clients that hang up mid-answer, a flood burst every few minutes)
# and the faults of a long day: a configuration reload every 10 s (one in five changing Weir's
# options), Redis killed and restarted every 5 minutes and stopped once for a minute, the
# origin failing for 30 s every 10 minutes. Every 10 s it samples Traefik's heap, goroutines
# and file descriptors, Weir's cache bytes and the clients' answers; it writes soak.csv, an
# SVG chart of each series and verdict.txt to the output directory, and exits 1 with the
# reasons when something grows without bound, the heap outgrows its budget, Traefik logs a
# panic, or a client gets an answer no designed refusal explains. (e2e/cmd/soak; the bounds
# and the classes of answers are documented in docs/benchmarks.md, "Soak".)
#
# Usage: scripts/soak.sh [-duration 60m] [-rate 150] [-out DIR]
#   -duration shortens the run; the faults' schedule scales with it (printed at the start),
#   so that 2m (as CI runs it) still meets every fault once.
# Env:   WEIR_TRAEFIK  Traefik binary (default: scripts/build-traefik.sh finds or builds it)
#        WEIR_REDIS    redis-server binary (default: redis-server on PATH)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

traefik=${WEIR_TRAEFIK:-}
if [ -z "$traefik" ]; then
  traefik=$(scripts/build-traefik.sh)
fi

# e2e/ is a module of its own (e2e/doc.go): the program is built there and runs from here.
bin="$(mktemp -d)/soak"
GOFLAGS=-mod=mod go -C e2e build -o "$bin" ./cmd/soak
exec "$bin" -traefik "$traefik" "$@"

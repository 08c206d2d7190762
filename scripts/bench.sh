#!/usr/bin/env bash
# Measures Weir inside a real Traefik: requests per second through bare Traefik, through
# Traefik + Weir serving cache hits (on a URL without a query and on one with a query
# string), and through Traefik + Weir passing answers through, each also as a ratio to bare
# Traefik. Beside them, the same three kinds of request through the reference plugin
# weirlimit (the least an interpreted middleware can do), with Weir's ratio to it; its source
# is read from -limit (default ../shared/bench/weirlimit from the repository's root), and
# its routes are skipped when it is absent. One Traefik, a router each, one local origin;
# runs interleaved over several rounds, medians printed.
#
# Usage: scripts/bench.sh [-duration 10s] [-rounds 3] [-connections 32] [-threads 2]
#                         [-loadgen auto|wrk|go] [-size 1024] [-warmup 2s] [-limit DIR]
# Env:   WEIR_TRAEFIK     Traefik binary (default: scripts/build-traefik.sh finds or builds it)
#        BENCH_NO_INSTALL set to 1 to never install wrk (the built-in Go generator is used)
#
# wrk is installed from Debian when missing and running as root; without it the built-in
# generator runs, whose own CPU use lowers every figure alike.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

traefik=${WEIR_TRAEFIK:-}
if [ -z "$traefik" ]; then
  traefik=$(scripts/build-traefik.sh)
fi

if ! command -v wrk >/dev/null 2>&1 && [ "${BENCH_NO_INSTALL:-}" != 1 ] \
  && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing wrk" >&2
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null 2>&1; then
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null 2>&1 \
      || echo "wrk could not be installed: using the built-in load generator" >&2
  fi
fi

# e2e/ is a module of its own (e2e/doc.go), resolved from its go.sum: weirbench is built
# there and runs from here, so that paths given to it read from the repository's root.
bin="$(mktemp -d)/weirbench"
GOFLAGS=-mod=mod go -C e2e build -o "$bin" ./cmd/weirbench
exec "$bin" -traefik "$traefik" "$@"

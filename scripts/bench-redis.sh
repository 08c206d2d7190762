#!/usr/bin/env bash
# Measures hits served from a shared Redis store inside a real Traefik: requests per second
# through bare Traefik, through Traefik + Weir with store.url (every hit a Redis GET), and
# through Traefik + Weir with the memory store, each as a ratio to bare Traefik. One Traefik,
# three routers, one local origin, one redis-server (Debian's package, on a free 127.0.0.1
# port, nothing saved); 1 KiB answers; runs interleaved over several rounds, medians printed.
#
# Usage: scripts/bench-redis.sh [-duration 5s] [-rounds 3] [-connections 32]
# Env:   WEIR_TRAEFIK  Traefik binary (default: scripts/build-traefik.sh finds or builds it)
#        WEIR_REDIS    redis-server binary (default: redis-server on PATH)
#
# The load comes from wrk when it is on PATH, else from the harness's Go generator, whose
# own CPU use lowers every figure alike. The runs are TestRedisBenchmark in e2e/.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

duration=5s
rounds=3
connections=32
while [ $# -gt 0 ]; do
  case "$1" in
    -duration) duration=$2; shift 2 ;;
    -rounds) rounds=$2; shift 2 ;;
    -connections) connections=$2; shift 2 ;;
    *) echo "usage: $0 [-duration 5s] [-rounds 3] [-connections 32]" >&2; exit 2 ;;
  esac
done

if [ -z "${WEIR_TRAEFIK:-}" ]; then
  WEIR_TRAEFIK=$(scripts/build-traefik.sh)
fi
export WEIR_TRAEFIK
if [ -z "${WEIR_REDIS:-}" ] && ! command -v redis-server >/dev/null 2>&1; then
  echo "bench-redis: no redis-server on PATH (apt-get install redis-server, or set WEIR_REDIS)" >&2
  exit 1
fi

# A benchmark must not skip quietly: WEIR_E2E=required turns a missing binary into a failure.
WEIR_E2E=required WEIR_BENCH_REDIS=1 BENCH_DURATION=$duration BENCH_ROUNDS=$rounds \
  BENCH_CONNECTIONS=$connections \
  GOFLAGS=-mod=mod exec go -C e2e test -count=1 -timeout 30m -run '^TestRedisBenchmark$' -v .

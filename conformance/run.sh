#!/usr/bin/env bash
# Runs the public HTTP caching test suite (npm package http-cache-tests, pinned in
# package-lock.json) through a real Traefik v3.6.12 with Weir in front of the suite's origin,
# prints Weir's score beside the other caches' results the package ships, and fails if Weir
# passes fewer tests than floor.txt. It is e2e's TestConformance, which scripts/test.sh runs
# with every end-to-end test; this script runs it alone, verbosely.
#
#   conformance/run.sh               the whole suite (about 20s once Traefik is built)
#   conformance/run.sh TEST_ID       one test, with every request and response printed
#   conformance/run.sh --score       score the last run's out/weir.json again, no Traefik
#
# Needs Go, Node.js and npm (>= 7, for lockfile v3). Installs the node modules with `npm ci`
# from package-lock.json when node_modules does not match it. Builds Traefik once with
# scripts/build-traefik.sh (a few minutes, cached) unless WEIR_TRAEFIK names a binary.
# Leaves out/weir.json (the suite's results format), out/failures.tsv and out/score.txt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

for tool in go node npm; do
  command -v "$tool" >/dev/null 2>&1 || { echo "conformance/run.sh: $tool is not on PATH" >&2; exit 1; }
done

if [ "${1:-}" = "--score" ]; then
  cd conformance
  [ -d node_modules/http-cache-tests ] || npm ci --no-audit --no-fund
  exec node score.mjs out/weir.json --floor floor.txt --ceiling ceiling.txt --failures out/failures.tsv
fi

if [ -n "${1:-}" ]; then
  export WEIR_CONFORMANCE_ID="$1"
fi
if [ -z "${WEIR_TRAEFIK:-}" ]; then
  WEIR_TRAEFIK=$(scripts/build-traefik.sh)
  export WEIR_TRAEFIK
fi
# The test bounds each step (npm ci 5m, Traefik's start 60s, the suite 5m); -timeout is the
# backstop.
# e2e/ is a module of its own (e2e/doc.go), resolved from its go.sum.
WEIR_E2E=required GOFLAGS=-mod=mod exec go -C e2e test -count=1 -timeout 15m -run '^TestConformance$' -v .

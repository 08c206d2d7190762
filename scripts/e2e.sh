#!/usr/bin/env bash
# Runs Weir's end-to-end tests: the plugin loaded by a real Traefik v3.6.12 in local plugin
# mode, requests over loopback TCP. Extra arguments go to `go test` (e.g. -run TestCoalescing).
#
# Env: WEIR_TRAEFIK           Traefik binary (default: scripts/build-traefik.sh finds or builds it)
#      WEIR_E2E=required      fail, rather than skip, when no Traefik can be had (CI sets it)
#      WEIR_E2E_RELOADS       reloads in the leak test (default 1000)
#      WEIR_E2E_RELOAD_BUDGET wall-time bound of those reloads (default 5m)
#      WEIR_PLUGIN_ROOT       load the plugin from another checkout
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if [ -z "${WEIR_TRAEFIK:-}" ]; then
  WEIR_TRAEFIK=$(scripts/build-traefik.sh)
  export WEIR_TRAEFIK
fi

# e2e/ is a module of its own (e2e/doc.go), resolved from its go.sum.
cd e2e
GOFLAGS=-mod=mod exec go test -count=1 -timeout 30m ./... "$@"

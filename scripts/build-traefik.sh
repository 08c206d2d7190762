#!/usr/bin/env bash
# Builds the Traefik that Weir's end-to-end tests and benchmarks run, from the Go module proxy,
# and caches the binary: later runs print its path at once.
#
# `go install traefik@version` refuses Traefik because its go.mod has replace directives, so the
# build runs from a throwaway module that requires Traefik and repeats those replaces.
# Prints the binary's path on stdout; everything else goes to stderr.
set -euo pipefail

version="${TRAEFIK_VERSION:-v3.6.12}"
cache="${WEIR_CACHE:-$HOME/.cache/weir}"
bin="$cache/traefik-$version"

if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache"
# One build at a time: a second caller waits for the first and takes its binary.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache/.build-$version.lock"
  flock 9
  if [ -x "$bin" ]; then
    echo "$bin"
    exit 0
  fi
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cat > go.mod <<MOD
module weir.local/traefikbuild

go 1.25.0

require github.com/traefik/traefik/v3 $version

replace (
	github.com/abbot/go-http-auth => github.com/containous/go-http-auth v0.4.1-0.20200324110947-a37a7636d23e
	github.com/gorilla/mux => github.com/containous/mux v0.0.0-20250523120546-41b6ec3aed59
	github.com/mailgun/minheap => github.com/containous/minheap v0.0.0-20190809180810-6e71eb837595
)
MOD
cat > tools.go <<'GO'
//go:build tools

package traefikbuild

import _ "github.com/traefik/traefik/v3/cmd/traefik"
GO
echo "building traefik $version (a few minutes on two cores, once)" >&2
GOFLAGS=-mod=mod go mod tidy >&2
GOFLAGS=-mod=mod go build -trimpath -o "$bin.tmp" github.com/traefik/traefik/v3/cmd/traefik >&2
mv "$bin.tmp" "$bin"
echo "$bin"

#!/usr/bin/env bash
# Regenerates vendor/: `go mod vendor`, then the patches in patches/ in name order, applied
# from the repository root. Traefik loads Weir in GOPATH mode from its vendor/, so the
# vendored copies are what runs; the patches make them run in Yaegi (patches/*.patch say how).
# Running this script again reproduces vendor/ byte for byte; scripts/check-vendor.sh checks it.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# -mod=mod: read go.mod, not the vendor/ being replaced.
GOFLAGS=-mod=mod go mod vendor
for p in patches/*.patch; do
  [ -e "$p" ] || continue
  patch -p1 --forward --batch --no-backup-if-mismatch --quiet < "$p"
done

# The patched redigo adds API of Weir's (redis.DoBulk), so the modules outside the plugin that
# build Weir (testmod/, whose go.mod replaces redigo with this directory) must build against
# the patched copy, not the module proxy's: a go.mod makes the directory a module they can
# replace it with. The go command ignores it when it builds from vendor/, and so does Yaegi.
printf 'module github.com/gomodule/redigo\n\ngo 1.17\n' > vendor/github.com/gomodule/redigo/go.mod

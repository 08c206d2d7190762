#!/usr/bin/env bash
# Copies what Traefik loads of Weir (the plugin and core packages, .traefik.yml, go.mod and
# vendor/, the provider plugin in provider/ with its own .traefik.yml, no tests) into DIR, the
# layout of local plugin mode:
# DIR = <traefik work dir>/plugins-local/src/github.com/weirproxy/weir
# (the provider then loads as moduleName github.com/weirproxy/weir/provider)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dst=${1:?usage: plugin-tree.sh DIR}
rm -rf "$dst"
mkdir -p "$dst"
cd "$root"
files=(go.mod .traefik.yml)
[ -f go.sum ] && files+=(go.sum)
[ -d vendor ] && files+=(vendor)
files+=($(ls *.go | grep -v '_test.go$'))
files+=(core)
[ -d provider ] && files+=(provider)
tar cf - --exclude='*_test.go' --exclude=testdata "${files[@]}" | (cd "$dst" && tar xf -)

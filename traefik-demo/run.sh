#!/usr/bin/env bash
# Starts the demo: the sample origin, and Traefik v3.6.12 with Weir in local plugin mode.
# Ctrl-C stops both. Traefik is built from the Go module proxy the first time (a few minutes).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
traefik=$("$root/scripts/build-traefik.sh")
work=$(mktemp -d)
"$root/scripts/plugin-tree.sh" "$work/plugins-local/src/github.com/weirproxy/weir"
cp "$here/traefik.yml" "$work/"
# The demo's dynamic configuration is a fixture the tests check too (testdata/README.md).
cp "$root/testdata/dynamic/demo.yml" "$work/dynamic.yml"
(cd "$root" && go build -o "$work/origin" ./traefik-demo/origin)
"$work/origin" -addr 127.0.0.1:9000 &
origin_pid=$!
trap 'kill $origin_pid 2>/dev/null; rm -rf "$work"' EXIT
cat <<MSG
Weir demo: Traefik on http://127.0.0.1:8080, its dashboard API on http://127.0.0.1:8081
Try:
  curl -i http://127.0.0.1:8080/fresh            # twice: fwd=uri-miss; stored, then hit
  for i in \$(seq 50); do curl -s http://127.0.0.1:8080/slow?n=\$RANDOM >/dev/null & done; wait
  curl -i -H 'Accept-Language: fr' http://127.0.0.1:8080/hello
  curl -N http://127.0.0.1:8080/events           # server-sent events stream through
  curl http://127.0.0.1:9000/stats               # what reached the origin
MSG
cd "$work"
"$traefik" --configFile=traefik.yml

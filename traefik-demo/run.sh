#!/usr/bin/env bash
# Starts the demo: the sample origin (127.0.0.1:9000) and Traefik v3.6.12 with Weir in local
# plugin mode (127.0.0.1:8080, its API on 8081). Ctrl-C stops everything it started.
#
#   traefik-demo/run.sh            # Weir caching in Traefik's memory
#   traefik-demo/run.sh --redis    # the cache in a Redis it starts (redis-server, port 6399)
#   traefik-demo/run.sh --second   # and a second Traefik sharing it (127.0.0.1:8090, API 8091)
#
# Then traefik-demo/tour.sh, in another terminal, walks through every protection.
# Traefik is built from the Go module proxy the first time (a few minutes, then cached).
# The work directory is $WEIR_DEMO_DIR (default /tmp/weir-demo): Traefik's log is
# traefik.log there, and the tour reads Weir's events from it.
# The admin's token is $WEIR_DEMO_TOKEN, or a random one made here (Weir wants at least 24
# characters); run.sh prints it and keeps it in admin-token in the work directory, where the
# tour reads it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
redis=false
second=false
for arg in "$@"; do
  case "$arg" in
    --redis) redis=true ;;
    --second) redis=true; second=true ;;
    *) echo "usage: run.sh [--redis] [--second]" >&2; exit 2 ;;
  esac
done
redis_port=6399

token=${WEIR_DEMO_TOKEN:-$(head -c 24 /dev/urandom | base64 | tr '+/' '-_')}
if [ "${#token}" -lt 24 ] || ! [[ $token =~ ^[A-Za-z0-9._~-]+$ ]]; then
  echo "WEIR_DEMO_TOKEN: ${#token} characters; at least 24 of A-Z a-z 0-9 . _ ~ -" >&2
  exit 2
fi

traefik=$("$root/scripts/build-traefik.sh")
work=${WEIR_DEMO_DIR:-/tmp/weir-demo}
rm -rf "$work"
mkdir -p "$work"
"$root/scripts/plugin-tree.sh" "$work/plugins-local/src/github.com/weirproxy/weir"
cp "$here/traefik.yml" "$work/"
# The demo's dynamic configuration is a fixture the tests check too (testdata/README.md).
# With Redis, the same configuration with store.url, written from typed values by
# testmod/cmd/democonf (which TestDemoFixture checks against the fixture).
if $redis; then
  (cd "$root/testmod" && GOFLAGS=-mod=mod go run ./cmd/democonf -store "redis://127.0.0.1:$redis_port/0") > "$work/dynamic.yml"
else
  cp "$root/testdata/dynamic/demo.yml" "$work/dynamic.yml"
fi
# The configuration holds a stand-in for the token: the demo's own takes its place.
sed -i "s/weir-demo-token-set-by-run-sh/$token/" "$work/dynamic.yml"
(umask 077 && printf '%s\n' "$token" >"$work/admin-token")
(cd "$root" && GOFLAGS=-mod=vendor go build -o "$work/origin" ./traefik-demo/origin &&
  GOFLAGS=-mod=vendor go build -o "$work/flood" ./traefik-demo/flood)

pids=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$work/origin" -addr 127.0.0.1:9000 2>"$work/origin.log" &
pids+=($!)
if $redis; then
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$work" >"$work/redis.log" 2>&1 &
  pids+=($!)
fi

cd "$work"
"$traefik" --configFile=traefik.yml >traefik.log 2>&1 &
traefik_pid=$!
pids+=($traefik_pid)
if $second; then
  # The second Traefik: the same plugin and dynamic configuration, other ports.
  sed -e 's/127.0.0.1:8080/127.0.0.1:8090/' -e 's/127.0.0.1:8081/127.0.0.1:8091/' traefik.yml >traefik-2.yml
  "$traefik" --configFile=traefik-2.yml >traefik-2.log 2>&1 &
  pids+=($!)
fi

# Ready once Weir answers through Traefik (its admin path never reaches the origin).
for _ in $(seq 300); do
  if curl -fsS -o /dev/null -H "Authorization: Bearer $token" http://127.0.0.1:8080/_weir/api/state 2>/dev/null; then break; fi
  if ! kill -0 "$traefik_pid" 2>/dev/null; then cat traefik.log >&2; exit 1; fi
  sleep 0.1
done
cat <<MSG
Weir demo: Traefik on http://127.0.0.1:8080 (API on :8081), the origin on 127.0.0.1:9000$($redis && echo ", Redis on 127.0.0.1:$redis_port")$($second && echo ", a second Traefik on http://127.0.0.1:8090")
Work directory: $work (traefik.log is Traefik's log, with Weir's events)
Admin token: $token (also in $work/admin-token)
Take the tour in another terminal:  traefik-demo/tour.sh
Or try:
  curl -i http://127.0.0.1:8080/hot              # twice: fwd=uri-miss; stored, then hit
  v=\$RANDOM; for i in \$(seq 50); do curl -s -o /dev/null "http://127.0.0.1:8080/slow?v=\$v" & done; wait
  curl http://127.0.0.1:9000/stats               # what reached the origin: /slow once for the 50
  curl -i -H 'Accept-Language: fr' http://127.0.0.1:8080/hello
  curl -N http://127.0.0.1:8080/events           # server-sent events stream through
  curl -H "Authorization: Bearer \$(cat $work/admin-token)" http://127.0.0.1:8080/_weir/metrics
                                                 # the metrics; the admin page is /_weir/ in a browser (sign in with the token)
Ctrl-C stops the demo.

MSG
tail -n +1 -f traefik.log &
pids+=($!)
wait "$traefik_pid"

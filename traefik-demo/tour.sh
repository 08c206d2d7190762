#!/usr/bin/env bash
# A tour of what Weir does for an origin, through the demo that traefik-demo/run.sh started
# (run it first, in another terminal). Each step sends traffic through Traefik and shows what
# clients got (status, Cache-Status) and what reached the origin. Takes about half a minute;
# run it again as often as you like (each run asks for URLs of its own).
set -euo pipefail
web=http://127.0.0.1:8080
origin=http://127.0.0.1:9000
work=${WEIR_DEMO_DIR:-/tmp/weir-demo}
flood="$work/flood"
log="$work/traefik.log"
# The admin's token, as run.sh made it.
token=${WEIR_DEMO_TOKEN:-$(cat "$work/admin-token" 2>/dev/null || true)}
auth="Authorization: Bearer $token"
tour=$(date +%s)

step() { printf '\n=== %s\n' "$*"; }
# show CMD...: prints the command, quoting what the shell would need quoted, then runs it.
show() {
  local line='$' a
  for a in "$@"; do
    case "$a" in
      *[!A-Za-z0-9_./:=,@%+-]*) line+=" '$a'" ;;
      *) line+=" $a" ;;
    esac
  done
  printf '%s\n' "$line" >&2
  "$@"
}
# what a client sees: the status line and the fields that tell what Weir did.
headers() {
  curl -sS -o /dev/null -D - "$@" | tr -d '\r' | grep -iE '^(HTTP/|cache-status|age|retry-after)' | sed 's/^/    /'
}
# origin PATH: how many requests for PATH reached the origin so far.
origin() { curl -fsS "$origin/stats?path=$1" | cut -d' ' -f1; }
# peak PATH: the most requests for PATH the origin has served at once.
peak() { curl -fsS "$origin/stats?path=$1" | cut -d' ' -f2; }
events() { grep -E "event=($1)" "$log" | tail -n "${2:-3}" | sed 's/^/    /' || echo "    (none)"; }

for _ in $(seq 100); do
  curl -fsS -o /dev/null -H "$auth" "$web/_weir/api/state" 2>/dev/null && break
  sleep 0.2
done
curl -fsS -o /dev/null -H "$auth" "$web/_weir/api/state" || { echo "the demo is not running, or its admin token is not in $work/admin-token: start traefik-demo/run.sh first" >&2; exit 1; }
[ -x "$flood" ] || { echo "$flood is missing: traefik-demo/run.sh builds it" >&2; exit 1; }

echo "Weir tour. 'headers URL' is curl -sD- -o/dev/null URL, showing the status line and the"
echo "fields that tell what Weir did (Cache-Status, Age, Retry-After); 'flood' sends requests"
echo "concurrently and tallies their statuses and Cache-Status values ({n}: a number per request)."

step "1. Cache-Status: a miss is stored, the next request is a hit"
before_hot=$(origin /hot)
show headers "$web/hot?tour=$tour"
show headers "$web/hot?tour=$tour"

step "2. Origin calls saved: 1,000 requests for a hot page"
show "$flood" -n 1000 -c 16 "$web/hot?tour=$tour"
echo "origin calls for /hot: $(( $(origin /hot) - before_hot )) for the 1,002 requests of steps 1 and 2"

step "3. Coalescing: 50 concurrent requests for one cold URL of a page that takes 1s"
# One URL for all 50: the value is drawn once, outside the loop. (A \$RANDOM inside the loop
# would make 50 distinct URLs, 50 cache keys, and nothing to coalesce.)
before=$(origin /slow)
show "$flood" -n 50 -c 50 "$web/slow?tour=$tour"
echo "origin calls for /slow: $(( $(origin /slow) - before )) for 50 requests"
echo "(the same with curl:  v=\$RANDOM; for i in \$(seq 50); do curl -s \"$web/slow?v=\$v\" >/dev/null & done; wait)"

step "4. A flood of distinct searches is held to its own path; other paths and uploads flow"
echo "64 clients send 1,500 distinct /search queries (200ms each at the origin) while 4 clients"
echo "read product pages (/item) and 4 upload 64 KiB each. Each path may hold 4 origin"
echo "requests at once (limiter.maxPerPartition) and queue 8 more; the rest get 503 at once."
before_search=$(origin /search)
"$flood" -label "/search flood" -n 1500 -c 64 "$web/search?tour=$tour&q={n}" >"$work/search.out" &
flood_pid=$!
sleep 0.5
"$flood" -label "/item alongside" -n 150 -c 4 "$web/item?tour=$tour&id={n}" >"$work/item.out" &
item_pid=$!
"$flood" -label "/upload alongside" -method POST -body 65536 -n 40 -c 4 "$web/upload" >"$work/upload.out"
wait "$item_pid" "$flood_pid"
cat "$work/search.out" "$work/item.out" "$work/upload.out"
echo "origin: /search $(( $(origin /search) - before_search )) requests, at most $(peak /search) at once;" \
  "/item at most $(peak /item) at once; /upload at most $(peak /upload) at once"
echo "Weir's summary of what it refused, once a second, in Traefik's log:"
events shed 2

step "5. A miss-rate warning: the /search flood missed the cache 90% of the time or more"
events miss_rate_anomaly 1
echo "(bypassed=true: from then on each query's first ask went past the cache, Cache-Status"
echo " fwd=bypass; detail=flood, so the flood never pushed stored pages out; asked again, a"
echo " query is cached as usual: missRate.bypass)"

step "6. A page served stale while its origin is down (stale.ifError: 1h)"
echo "/flaky says only max-age=2: no stale-if-error of its own; Weir's policy gives it one"
show headers -H 'Host: flaky.localhost' "$web/flaky?tour=$tour&page=stale"
sleep 2.5
show curl -fsS "$origin/fail?on=true"
show headers -H 'Host: flaky.localhost' "$web/flaky?tour=$tour&page=stale"
echo "(a hit with a negative ttl: stale, and why: the origin failed)"

step "7. Negative hits: a failing page answered again without asking the origin"
before=$(origin /flaky)
for i in 1 2 3; do show headers -H 'Host: flaky.localhost' "$web/flaky?tour=$tour"; done
echo "origin calls for /flaky: $(( $(origin /flaky) - before )) for 3 requests"

step "8. The breaker: the failing host's breaker opens, its probe closes it"
echo "distinct URLs on flaky.localhost while its origin fails (the breaker needs 5 fetches, half failed):"
before=$(origin /flaky)
retry=1
for i in $(seq 8); do
  out=$(curl -sS -o /dev/null -D - -H 'Host: flaky.localhost' "$web/flaky?tour=$tour&n=$i" | tr -d '\r')
  printf '    /flaky?n=%s  %s  %s  %s\n' "$i" "$(echo "$out" | head -1 | cut -d' ' -f2)" \
    "$(echo "$out" | grep -i '^cache-status' || true)" "$(echo "$out" | grep -i '^retry-after' || true)"
  r=$(echo "$out" | grep -i '^retry-after' | cut -d' ' -f2 || true)
  [ -n "$r" ] && retry=$r
done
echo "origin calls for /flaky: $(( $(origin /flaky) - before )) for 8 requests"
echo "meanwhile the demo's other host is not refused:"
show headers "$web/item?tour=$tour&id=breaker"
show curl -fsS "$origin/fail?on=false"
echo "waiting out the open period (Retry-After: ${retry}s), then one request is the probe:"
sleep "$retry"
sleep 0.5
show headers -H 'Host: flaky.localhost' "$web/flaky?tour=$tour&n=probe"
show headers -H 'Host: flaky.localhost' "$web/flaky?tour=$tour&n=after"
sleep 0.2
echo "Weir's events:"
events 'breaker_opened|breaker_half_open|breaker_closed' 3

step "9. An origin that says stop is obeyed: its 429 with Retry-After opens that host's breaker for as long"
echo "/busy answers 429 with Retry-After: 7, on its own host (busy.localhost), whose breaker it opens:"
before=$(origin /busy)
show headers -H 'Host: busy.localhost' "$web/busy?tour=$tour"
show headers -H 'Host: busy.localhost' "$web/busy?tour=$tour&n=2"
echo "origin calls for /busy: $(( $(origin /busy) - before )) for 2 requests; the other hosts still flow:"
show headers "$web/item?tour=$tour&id=busy"
events 'breaker_opened' 1

step "10. A private cache per user: /account answers each user (a session cookie) privately"
before=$(origin /account)
show headers -H "Cookie: session=alice-$tour" "$web/account"
show headers -H "Cookie: session=alice-$tour" "$web/account"
show headers -H "Cookie: session=bob-$tour" "$web/account"
show curl -fsS -H "Cookie: session=bob-$tour" "$web/account"
echo "origin calls for /account: $(( $(origin /account) - before )) for 4 requests: one per user"
echo "alice signs out; the origin's Weir-Purge-User drops her copies:"
show curl -fsS -X POST -H "Cookie: session=alice-$tour" "$web/logout"
show headers -H "Cookie: session=alice-$tour" "$web/account"

if curl -fsS -o /dev/null -H "$auth" "http://127.0.0.1:8090/_weir/api/state" 2>/dev/null; then
  step "11. One cache for two Traefik instances (Redis)"
  echo "The cache key holds the host: both requests name the same one (Host: shop.localhost)."
  show headers -H 'Host: shop.localhost' "$web/hot?tour=$tour"
  show headers -H 'Host: shop.localhost' "http://127.0.0.1:8090/hot?tour=$tour"
fi

step "Metrics (admin.path + /metrics)"
show curl -fsS -H "$auth" "$web/_weir/metrics" | grep -E '^weir_(requests_total|coalesced_total|shed_total|breaker_trips_total|missrate_anomalies_total)' || true

step "The admin page and its API (admin.path: /_weir, the token from 127.0.0.1 only)"
echo "open $web/_weir/ in a browser and sign in with the token run.sh printed; its API:"
show curl -fsS -H "$auth" "$web/_weir/api/state" | head -c 600
echo
echo
echo "Everything that reached the origin:"
curl -fsS "$origin/stats"

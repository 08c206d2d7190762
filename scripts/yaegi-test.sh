#!/usr/bin/env bash
# Runs Weir's tests under Yaegi v0.16.1, the interpreter Traefik runs the plugin in.
# Usage: scripts/yaegi-test.sh [package dir ...]   (default: the root package, every core package,
# the provider plugin and the test-only packages under internal/ that core's tests import)
# Env:   YAEGI_TEST_FLAGS  flags for yaegi test (-run, -bench, -benchtime, -v)
#        YAEGI_TEST_TIMEOUT  seconds a package may take (600), then it fails as one that hangs
#        YAEGI_WRAP        a command that runs yaegi (scripts/yaegi-cost.sh's valgrind)
#
# Yaegi resolves imports in GOPATH mode, as Traefik does for a plugin, so the repository is
# linked into a throwaway GOPATH under its module path.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
module=github.com/weirproxy/weir
yaegi_bin=${YAEGI_BIN:-$(command -v yaegi || true)}
[ -n "$yaegi_bin" ] || yaegi_bin="$(go env GOPATH)/bin/yaegi"
if [ ! -x "$yaegi_bin" ]; then
  GOFLAGS=-mod=mod go install github.com/traefik/yaegi/cmd/yaegi@v0.16.1
fi

gopath=$(mktemp -d)
mkdir -p "$gopath/src/$(dirname "$module")"
ln -s "$root" "$gopath/src/$module"

if [ $# -eq 0 ]; then
  set -- . provider
  while IFS= read -r d; do set -- "$@" "$d"; done < <(cd "$root" && find core internal -name '*_test.go' -printf '%h\n' | sort -u)
fi

# yaegi test has no -timeout, and its tests run in a random order (it ranges over a map):
# a test that hangs in one order in a hundred would hold CI until it is killed. Each package
# gets YAEGI_TEST_TIMEOUT; then SIGQUIT makes the Go runtime print every goroutine's stack
# (GOTRACEBACK=all does the same for a crash), and the tests that had started and not ended
# are named. -v is always given so that they can be: its lines are shown only when asked for.
timeout_after=${YAEGI_TEST_TIMEOUT:-600}
verbose=0
case " ${YAEGI_TEST_FLAGS:-} " in *" -v "*) verbose=1 ;; esac
log=$(mktemp)
trap 'rm -rf "$gopath" "$log"' EXIT

# unfinished prints the tests of a -v log that started and did not end.
unfinished() {
  awk '/^=== RUN /{run[$3]=1} /^ *--- (PASS|FAIL|SKIP): /{delete run[$3]} END{for (t in run) print "  " t}' "$1" | sort
}

failed=0
for dir in "$@"; do
  dir=${dir#./}
  pkg=$module
  [ "$dir" = "." ] || pkg="$module/$dir"
  echo "=== yaegi test $pkg"
  set +e
  (cd "$gopath/src/$module" && GOPATH="$gopath" GO111MODULE=off GOTRACEBACK=all \
    timeout -s QUIT -k 30 "$timeout_after" ${YAEGI_WRAP:-} "$yaegi_bin" test -v ${YAEGI_TEST_FLAGS:-} "$pkg") 2>&1 |
    tee "$log" | awk -v verbose=$verbose 'verbose || !/^(=== (RUN|PAUSE|CONT) |[ ]*--- PASS: )/'
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" -ne 0 ]; then
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      echo "FAIL (yaegi) $pkg hangs: not done within ${timeout_after}s (YAEGI_TEST_TIMEOUT)"
    else
      echo "FAIL (yaegi) $pkg"
    fi
    echo "tests started and not ended:"
    unfinished "$log"
    failed=1
  fi
done
exit $failed

#!/usr/bin/env bash
# Runs Weir's tests under Yaegi v0.16.1, the interpreter Traefik runs the plugin in.
# Usage: scripts/yaegi-test.sh [package dir ...]   (default: the root package, every core package,
# the provider plugin and the test-only packages under internal/ that core's tests import)
# Env:   YAEGI_TEST_FLAGS  flags for yaegi test (-run, -bench, -benchtime, -v)
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
trap 'rm -rf "$gopath"' EXIT
mkdir -p "$gopath/src/$(dirname "$module")"
ln -s "$root" "$gopath/src/$module"

if [ $# -eq 0 ]; then
  set -- . provider
  while IFS= read -r d; do set -- "$@" "$d"; done < <(cd "$root" && find core internal -name '*_test.go' -printf '%h\n' | sort -u)
fi

failed=0
for dir in "$@"; do
  dir=${dir#./}
  pkg=$module
  [ "$dir" = "." ] || pkg="$module/$dir"
  echo "=== yaegi test $pkg"
  if ! (cd "$gopath/src/$module" && GOPATH="$gopath" GO111MODULE=off ${YAEGI_WRAP:-} "$yaegi_bin" test ${YAEGI_TEST_FLAGS:-} "$pkg"); then
    echo "FAIL (yaegi) $pkg"
    failed=1
  fi
done
exit $failed

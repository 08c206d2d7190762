#!/usr/bin/env bash
# Fails when vendor/ is not what scripts/vendor.sh makes from go.mod, go.sum and patches/:
# a dependency changed without regenerating vendor/, or vendor/ was edited by hand instead of
# through a patch. Regenerates into a temporary copy of the repository; the work tree is
# left alone.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

tar -C "$root" --exclude=./.git --exclude=./vendor -cf - . | tar -C "$tmp" -xf -
"$tmp/scripts/vendor.sh"

if [ ! -d "$root/vendor" ]; then
  echo "vendor/ is missing: run scripts/vendor.sh" >&2
  exit 1
fi
if ! diff -r "$tmp/vendor" "$root/vendor"; then
  echo "vendor/ differs from what scripts/vendor.sh makes: run scripts/vendor.sh" >&2
  exit 1
fi
echo "vendor/ is up to date"

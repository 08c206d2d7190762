#!/usr/bin/env bash
# Says where a benchmark's allocations go under Yaegi v0.16.1, function by function. Every
# call of an interpreted function allocates its frame: one reflect.New for each argument,
# local and intermediate value of the whole function, whichever branch runs (docs/yaegi.md).
# This builds a copy of Yaegi v0.16.1 that counts, for each interpreted function, its calls,
# the slots of their frames and the bytes of the slots' values (a slot of a struct held by
# value is the whole struct), runs the benchmark once with -benchtime Nx, and prints the
# functions by slots per iteration: the frames to make smaller, or to call less often.
#
# Calls from interpreted code to interpreted functions and methods, and from compiled code to
# interpreted ones (a handler, a ResponseWriter's methods), are counted; a method called on
# an interpreted value by interpreted code is not (it takes another way through Yaegi). The
# counts are of the benchmark's last run (b.N = N), setup included.
#
# Usage: scripts/yaegi-frames.sh <package dir> <Benchmark name> [N (default 3000)] [lines (40)]
#   e.g. scripts/yaegi-frames.sh core BenchmarkLimiterShed
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

dir=${1:?package dir, e.g. core}
bench=${2:?benchmark name, e.g. BenchmarkLimiterShed}
n=${3:-3000}
lines=${4:-40}

src="$(go env GOMODCACHE)/github.com/traefik/yaegi@v0.16.1"
if [ ! -d "$src" ]; then
  (cd /tmp && GOFLAGS=-mod=mod go mod download github.com/traefik/yaegi@v0.16.1)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src" "$work/yaegi"
chmod -R u+w "$work/yaegi"

# The two places a frame is made for an interpreted function: a call from interpreted code
# (call) and from compiled code (genFunctionWrapper's reflect.MakeFunc).
perl -0pi -e 's/(\n\t\tnf := newFrame\(f, len\(def\.types\), f\.runid\(\)\))/\n\t\tprofCall(def)$1/; s/(\n\t\t\tfr := newFrame\(f, len\(def\.types\), f\.runid\(\)\))/\n\t\t\tprofCall(def)$1/' \
  "$work/yaegi/interp/run.go"
[ "$(grep -c 'profCall(def)' "$work/yaegi/interp/run.go")" = 2 ] || { echo "yaegi-frames: run.go is not Yaegi v0.16.1's" >&2; exit 1; }

cat >"$work/yaegi/interp/frames.go" <<'EOF'
package interp

import (
	"fmt"
	"os"
	"sort"
	"sync"
)

// The frames counted, by function node: calls, the slots of their frames, and the bytes
// their slots' values take (each reflect.New of a slot's type, besides the frame's own
// array of reflect.Value).
var (
	framesMu sync.Mutex
	frames   = map[*node]*[3]int64{}
)

func profCall(def *node) {
	framesMu.Lock()
	c := frames[def]
	if c == nil {
		c = new([3]int64)
		frames[def] = c
	}
	c[0]++
	c[1] += int64(len(def.types))
	for _, t := range def.types {
		c[2] += int64(t.Size())
	}
	framesMu.Unlock()
}

// FramesReset forgets what was counted.
func FramesReset() {
	framesMu.Lock()
	frames = map[*node]*[3]int64{}
	framesMu.Unlock()
}

// FramesWrite writes, to the file YAEGI_FRAMES names, each function's slots per iteration of
// n, calls per iteration and slots per call, the most slots first.
func FramesWrite(n int) {
	path := os.Getenv("YAEGI_FRAMES")
	if path == "" || n <= 0 {
		return
	}
	type row struct {
		name                string
		calls, slots, bytes int64
	}
	var rows []row
	framesMu.Lock()
	for def, c := range frames {
		name := "func literal"
		if len(def.child) > 1 && def.child[1] != nil && def.child[1].ident != "" {
			name = def.child[1].ident
		}
		if len(def.child) > 0 && def.child[0] != nil && len(def.child[0].child) > 0 {
			if r := def.child[0].child[0]; len(r.child) > 1 && r.child[1].typ != nil {
				name = r.child[1].typ.id() + "." + name
			}
		}
		pos := def.interp.fset.Position(def.pos)
		rows = append(rows, row{fmt.Sprintf("%s %s:%d", name, pos.Filename, pos.Line), c[0], c[1], c[2]})
	}
	framesMu.Unlock()
	sort.Slice(rows, func(i, j int) bool { return rows[i].slots > rows[j].slots })
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	var total, bytes int64
	for _, r := range rows {
		total += r.slots
		bytes += r.bytes
	}
	fmt.Fprintf(f, "%.0f slots per iteration in all, their values %.0f bytes (N=%d)\n", float64(total)/float64(n), float64(bytes)/float64(n), n)
	fmt.Fprintf(f, "%10s %10s %10s %8s  %s\n", "slots/op", "bytes/op", "calls/op", "slots", "function")
	for _, r := range rows {
		fmt.Fprintf(f, "%10.1f %10.0f %10.2f %8d  %s\n", float64(r.slots)/float64(n), float64(r.bytes)/float64(n), float64(r.calls)/float64(n), r.slots/r.calls, r.name)
	}
}
EOF

# Each benchmark's run starts the count afresh and writes it when done: the file holds the
# last run's, whose b.N is N.
perl -0pi -e 's/benchmarks = append\(benchmarks, testing\.InternalBenchmark\{name, fun\}\)/f := fun\n\t\t\tbenchmarks = append(benchmarks, testing.InternalBenchmark{name, func(b *testing.B) { interp.FramesReset(); f(b); interp.FramesWrite(b.N) }})/' \
  "$work/yaegi/cmd/yaegi/test.go"
grep -q 'interp.FramesWrite' "$work/yaegi/cmd/yaegi/test.go" || { echo "yaegi-frames: test.go is not Yaegi v0.16.1's" >&2; exit 1; }

(cd "$work/yaegi" && GOFLAGS=-mod=mod go build -o "$work/yaegi-frames" ./cmd/yaegi)

YAEGI_FRAMES="$work/frames.txt" YAEGI_BIN="$work/yaegi-frames" \
  YAEGI_TEST_FLAGS="-run ^\$ -bench ^$bench\$ -benchtime ${n}x -benchmem" \
  scripts/yaegi-test.sh "$dir" | grep -E "^$bench" || true
# Paths as the repository names them, not as the throwaway GOPATH does.
head -n $((lines + 2)) "$work/frames.txt" | sed -E 's#[^ ]*/src/github\.com/weirproxy/weir/##'

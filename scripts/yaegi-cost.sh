#!/usr/bin/env bash
# Counts the machine instructions one iteration of a benchmark costs under Yaegi v0.16.1, with
# valgrind's callgrind: the benchmark is run N and 3N times and the difference divided by 2N,
# so the interpreter's start-up and the package's loading cancel out. Unlike a timing, the
# count is the same from run to run (within about 0.5%) whatever else the machine is doing,
# so two shapes of interpreted code can be compared on a shared, noisy machine. It counts
# work, not time: cache misses and the garbage collector (off here) are not in it; the speed
# that counts is still scripts/bench.sh's ratio against bare Traefik.
#
# Usage: scripts/yaegi-cost.sh <package dir> <Benchmark name> [N (default 5000)]
#   e.g. scripts/yaegi-cost.sh core BenchmarkPassThrough
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:?package dir, e.g. core}
bench=${2:?benchmark name, e.g. BenchmarkPassThrough}
n=${3:-5000}
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }

# One thread, no collector, and no asynchronous preemption: callgrind fails on Go's
# preemption signal. Nor RDTSCP, which valgrind 3.19 cannot run on some CPUs (SIGILL in
# runtime.cputicks). Callgrind still fails now and then on a signal (an assertion in
# vgCallgrind_post_signal), so a count that did not come is asked again, four times at most.
count() {
  local c=""
  for _ in 1 2 3 4 5; do
    c=$(count_once "$1")
    [ -n "$c" ] && break
  done
  echo "$c"
}
count_once() {
  GOMAXPROCS=1 GOGC=off GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off YAEGI_TEST_TIMEOUT=${YAEGI_TEST_TIMEOUT:-7200} \
    YAEGI_WRAP="valgrind --tool=callgrind --callgrind-out-file=/dev/null" \
    YAEGI_TEST_FLAGS="-run ^\$ -bench ^$bench\$ -benchtime ${1}x" \
    scripts/yaegi-test.sh "$dir" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
a=$(count "$n")
b=$(count $((3 * n)))
if [ -z "$a" ] || [ -z "$b" ]; then
  echo "the benchmark did not run under callgrind (does $dir load under yaegi test?)" >&2
  exit 1
fi
echo "$bench $(((b - a) / (2 * n))) instructions/op"

#!/usr/bin/env bash
# Whole-stack CPU profile of the end-to-end benchmark: every process (the services, the broker,
# the load driver, librdkafka's and DuckDB's threads, the kernel) sampled by `perf record -a`
# during the steady part of the load, then summarised per service by perf-summary.py.
#
#   bash tools/bench/e2e/profile.sh [out-dir] [load-seconds] [perf-seconds]
#
# Needs `perf` (Debian: linux-perf) and the right to sample every CPU (root, or
# kernel.perf_event_paranoid <= 0). The services run with --perf-basic-prof-only-functions, so
# their JIT frames have names (/tmp/perf-<pid>.map).
# The e2e bench starts its own broker (port 29192 unless --broker-port is changed below).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
out=${1:-.sluice/bench/e2e-profile}
load_seconds=${2:-90}
perf_seconds=${3:-45}
command -v perf >/dev/null || { echo "perf is not installed (apt-get install linux-perf)" >&2; exit 2; }
mkdir -p "$out"
SLUICE_BENCH_NODE_ARGS="--perf-basic-prof-only-functions" \
  npx tsx tools/bench/e2e/run.ts --seconds "$load_seconds" --rate 0 --ceiling-events 100000 --backlog 0 --broker-port 29192 --out "$out" \
  >"$out/progress.log" 2>&1 &
bench=$!
# The bench stops its stack and broker on SIGTERM; never leave it running when this script fails.
trap 'kill $bench 2>/dev/null || true' EXIT
# Start sampling 20 s into the load (after the ceiling pass and the warm-up): progress lines
# print `t=<seconds>s` every ~5 s. load-seconds must leave perf-seconds after that.
until grep -qE "t=[2-9][0-9](\.[0-9])?s" "$out/progress.log" 2>/dev/null; do
  sleep 2
  kill -0 $bench 2>/dev/null || { echo "the bench ended before the load phase; see $out/progress.log" >&2; exit 1; }
done
ps -eo pid,args | grep -E "node|java" | grep -v grep >"$out/ps.txt"
perf record -a -g -F 99 -o "$out/perf.data" -- sleep "$perf_seconds" >"$out/perf.log" 2>&1 ||
  { echo "perf record failed; see $out/perf.log" >&2; exit 1; }
wait $bench
trap - EXIT
python3 tools/bench/e2e/perf-summary.py "$out" | tee "$out/profile.txt"

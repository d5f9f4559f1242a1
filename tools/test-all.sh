#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what is missing, starts the services the
# integration tests need (Kafka and whatever tools/services.d/ lists) on test ports, runs lint,
# type checks, unit and integration tests of every Nx project, stops the services, and ends
# with one line "N passed, N failed" over all suites.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
say() { echo "[test-all] $*" >&2; }

bash tools/setup/setup.sh || { say "setup failed"; echo "0 passed, 1 failed"; exit 1; }

export NX_DAEMON=false NX_NO_CLOUD=true NX_SKIP_NX_CACHE=true NX_TUI=false
# Test services listen on their own ports so a running local stack does not collide.
export KAFKA_PORT="${SLUICE_TEST_KAFKA_PORT:-19092}"
export KAFKA_DATA_DIR="$root/.sluice/test/kafka"
export SLUICE_TEST_KAFKA_BROKERS="127.0.0.1:$KAFKA_PORT"
export SLUICE_TEST_DIR="$root/.sluice/test"
results="$root/.sluice/test/results"
export SLUICE_TEST_RESULTS_DIR="$results"
bash tools/kafka/kafka.sh stop >/dev/null 2>&1   # a broker left from an earlier run
rm -rf "$results" "$KAFKA_DATA_DIR"
mkdir -p "$results"

services=(tools/services.d/*.sh)
stop_services() {
  for ((i = ${#services[@]} - 1; i >= 0; i--)); do
    [ -e "${services[$i]}" ] && bash "${services[$i]}" stop >/dev/null 2>&1
  done
  bash tools/kafka/kafka.sh stop >/dev/null 2>&1
}
trap stop_services EXIT

failures=0
step() { # name, command...
  local name="$1"; shift
  say "== $name"
  if "$@"; then say "ok: $name"; else say "FAILED: $name"; failures=$((failures + 1)); fi
}

bash tools/kafka/kafka.sh start || { say "Kafka did not start"; echo "0 passed, 1 failed"; exit 1; }
for s in "${services[@]}"; do
  [ -e "$s" ] || continue
  bash "$s" start || { say "service $s did not start"; echo "0 passed, 1 failed"; exit 1; }
done

step lint npx nx run-many -t lint --outputStyle=stream
step typecheck npx nx run-many -t typecheck --outputStyle=stream
for check in tools/checks.d/*.sh; do
  [ -e "$check" ] && step "$(basename "$check" .sh)" bash "$check"
done
step unit npx nx run-many -t test --outputStyle=stream
step integration npx nx run-many -t integration --parallel=1 --outputStyle=stream

read -r passed failed skipped < <(node -e '
  const fs = require("fs"), dir = process.argv[1];
  let p = 0, f = 0, s = 0;
  for (const n of fs.readdirSync(dir)) { const r = JSON.parse(fs.readFileSync(dir + "/" + n)); p += r.passed; f += r.failed; s += r.skipped; }
  console.log(p, f, s);' "$results")
# A failed step that ran no Jest test (lint, typecheck, a check) still counts as a failure.
if [ "$failures" -gt 0 ] && [ "$failed" -eq 0 ]; then failed=$failures; fi
say "skipped tests: $skipped"
echo "$passed passed, $failed failed"
[ "$failures" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]

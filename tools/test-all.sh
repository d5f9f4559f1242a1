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
# Every test runs on the project's Node.js (the one setup built the native addon for).
source tools/setup/node.sh || { say "no Node.js to test on"; echo "0 passed, 1 failed"; exit 1; }
# The alert rules are tested under Prometheus' own engine (go test).
source tools/setup/go.sh || { say "no Go toolchain"; echo "0 passed, 1 failed"; exit 1; }
say "Node.js $(node -v)"

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

check_failures=0   # lint, typecheck and tools/checks.d steps that failed
test_step_failures=0  # Jest steps that exited non-zero
unexplained_failures=0  # of those, steps whose failure no Jest result recorded (a runner that crashed)
# Failures the Jest runs recorded so far (tools/jest/summary-reporter.js, one file per run).
recorded_failures() {
  node -e 'const fs = require("fs"), d = process.argv[1]; let f = 0; for (const n of fs.readdirSync(d)) f += JSON.parse(fs.readFileSync(d + "/" + n)).failed; console.log(f);' "$results"
}
step() { # kind (check|tests), name, command...
  local kind="$1" name="$2"; shift 2
  say "== $name"
  local before=0
  [ "$kind" = tests ] && before="$(recorded_failures)"
  if "$@"; then say "ok: $name"; return; fi
  say "FAILED: $name"
  if [ "$kind" = check ]; then check_failures=$((check_failures + 1)); return; fi
  test_step_failures=$((test_step_failures + 1))
  [ "$(recorded_failures)" -eq "$before" ] && unexplained_failures=$((unexplained_failures + 1))
}

# Exports the SLUICE_TEST_*=value lines a service's `env` command prints (its client settings).
export_test_env() {
  local line
  while IFS= read -r line; do
    [[ "$line" =~ ^SLUICE_TEST_[A-Z0-9_]+= ]] && export "${line?}"
  done
  return 0
}

# The broker also listens with SASL over TLS and with mutual TLS, for the clients' security tests;
# set for this broker only, so brokers that tests start themselves stay plaintext.
KAFKA_SECURE_LISTENERS=1 bash tools/kafka/kafka.sh start || { say "Kafka did not start"; echo "0 passed, 1 failed"; exit 1; }
export_test_env < <(KAFKA_SECURE_LISTENERS=1 bash tools/kafka/kafka.sh env)
export SLUICE_TEST_REGISTRY_URL="http://127.0.0.1:${SLUICE_TEST_REGISTRY_PORT:-18081}"
for s in "${services[@]}"; do
  [ -e "$s" ] || continue
  bash "$s" start || { say "service $s did not start"; echo "0 passed, 1 failed"; exit 1; }
  # A service that knows its client settings prints them as SLUICE_TEST_*=value lines.
  export_test_env < <(bash "$s" env 2>/dev/null || true)
done

step check lint npx nx run-many -t lint --outputStyle=stream
step check typecheck npx nx run-many -t typecheck --outputStyle=stream
for check in tools/checks.d/*.sh; do
  [ -e "$check" ] && step check "$(basename "$check" .sh)" bash "$check"
done
step tests unit npx nx run-many -t test --outputStyle=stream
step tests integration npx nx run-many -t integration --parallel=1 --outputStyle=stream

# Totals on stdout; each failed test on stderr, so the tail of a CI log names what failed.
read -r passed failed skipped < <(node -e '
  const fs = require("fs"), dir = process.argv[1];
  let p = 0, f = 0, s = 0;
  for (const n of fs.readdirSync(dir)) {
    const r = JSON.parse(fs.readFileSync(dir + "/" + n));
    p += r.passed; f += r.failed; s += r.skipped;
    for (const failure of r.failures ?? []) console.error(`[test-all] FAILED TEST ${failure}\n`);
  }
  console.log(p, f, s);' "$results")
# Checks that are not Jest tests count as one failure each; so does a Jest step that failed
# without recording a failure (a runner that crashed before its reporter ran).
failed=$((failed + check_failures + unexplained_failures))
say "skipped tests: $skipped"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$test_step_failures" -eq 0 ] && [ "$passed" -gt 0 ]

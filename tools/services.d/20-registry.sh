#!/usr/bin/env bash
# Confluent-compatible schema registry for integration tests (Apicurio Registry, built by
# tools/setup/steps.d/20-registry.sh), on 127.0.0.1:${SLUICE_TEST_REGISTRY_PORT:-18081}.
#
#   tools/services.d/20-registry.sh start    start (idempotent) and wait until the API answers
#   tools/services.d/20-registry.sh stop     stop by pid
#   tools/services.d/20-registry.sh status
#
# Tests read SLUICE_TEST_REGISTRY_URL=http://127.0.0.1:18081 (the Confluent API is served at
# the root). Storage is in memory: each start is a fresh registry; tests use random subjects.
# Pid file and log: .sluice/test/registry/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
port="${SLUICE_TEST_REGISTRY_PORT:-18081}"
data_dir="${SLUICE_TEST_DIR:-$root/.sluice/test}/registry"
pid_file="$data_dir/registry.pid"
log_file="$data_dir/registry.log"
heap="${SLUICE_REGISTRY_HEAP:-384m}"
start_timeout="${SLUICE_REGISTRY_START_TIMEOUT:-120}"
say() { echo "[registry] $*" >&2; }

jar_path() {
  local hash
  hash="$(cd "$root/tools/registry" && find pom.xml src repo -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-12)"
  echo "${SLUICE_REGISTRY_HOME:-$HOME/.cache/sluice/registry-$hash}/sluice-schema-registry-1.0.0-runner.jar"
}

running_pid() {
  [ -f "$pid_file" ] || return 1
  local pid
  pid="$(cat "$pid_file")"
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q "sluice-schema-registry" "/proc/$pid/cmdline" 2>/dev/null; then
    echo "$pid"
    return 0
  fi
  return 1
}

# node is always there (the workspace needs it); curl may not be on a fresh machine.
answers() {
  node -e 'fetch(process.argv[1], { signal: AbortSignal.timeout(2000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' \
    "http://127.0.0.1:$port/subjects" 2>/dev/null
}

start() {
  if pid="$(running_pid)"; then say "already running (pid $pid) on 127.0.0.1:$port"; return 0; fi
  local jar
  jar="$(jar_path)"
  if [ ! -f "$jar" ]; then bash "$root/tools/setup/steps.d/20-registry.sh"; fi
  if answers; then say "port $port is taken by another process"; return 1; fi
  mkdir -p "$data_dir"
  # Kafka is not needed: the in-memory store keeps tests independent of broker state.
  nohup java "-Xmx$heap" -XX:+UseSerialGC \
    -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
    -Dquarkus.log.console.json=false -Dquarkus.log.level=WARN \
    -jar "$jar" >"$log_file" 2>&1 &
  echo $! >"$pid_file"
  local waited=0
  until answers; do
    if ! running_pid >/dev/null; then tail -n 30 "$log_file" >&2; say "exited during start-up (log: $log_file)"; return 1; fi
    if [ "$waited" -ge "$start_timeout" ]; then say "no answer after ${start_timeout}s (log: $log_file)"; stop; return 1; fi
    sleep 1
    waited=$((waited + 1))
  done
  say "ready on http://127.0.0.1:$port (pid $(cat "$pid_file"), ${waited}s)"
}

stop() {
  local pid
  if ! pid="$(running_pid)"; then rm -f "$pid_file"; return 0; fi
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  rm -f "$pid_file"
  say "stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if pid="$(running_pid)"; then echo "running (pid $pid) on 127.0.0.1:$port"; else echo "stopped"; exit 1; fi ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac

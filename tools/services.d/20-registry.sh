#!/usr/bin/env bash
# Confluent-compatible schema registry for integration tests (Apicurio Registry 3, built by
# tools/setup/steps.d/20-registry.sh), on 127.0.0.1:${SLUICE_TEST_REGISTRY_PORT:-18081}.
#
#   tools/services.d/20-registry.sh start    start (idempotent) and wait until the API answers
#   tools/services.d/20-registry.sh stop     stop by pid
#   tools/services.d/20-registry.sh status
#
# Tests read SLUICE_TEST_REGISTRY_URL=http://127.0.0.1:18081 (the Confluent API is served at
# the root). Storage is Apicurio's `kafkasql`: every change is a record in a journal topic on
# the local test broker ($SLUICE_TEST_KAFKA_BROKERS, default 127.0.0.1:19092), which a start
# replays into an in-memory database. So the broker must run first (tools/test-all.sh starts
# it before tools/services.d/), and schemas survive a registry restart for as long as the
# broker keeps its data (test-all starts from an empty broker; tests use random subjects).
# Topics: ${SLUICE_REGISTRY_TOPIC:-_sluice_registry_journal} and the same name with _snapshots
# and _events in place of _journal.
# Pid file and log: .sluice/test/registry/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
port="${SLUICE_TEST_REGISTRY_PORT:-18081}"
data_dir="${SLUICE_TEST_DIR:-$root/.sluice/test}/registry"
pid_file="$data_dir/registry.pid"
log_file="$data_dir/registry.log"
heap="${SLUICE_REGISTRY_HEAP:-256m}"
brokers="${SLUICE_TEST_KAFKA_BROKERS:-127.0.0.1:19092}"
topic="${SLUICE_REGISTRY_TOPIC:-_sluice_registry_journal}"
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
# Whether any of the comma-separated brokers accepts a TCP connection.
kafka_reachable() {
  node -e '
    const net = require("net");
    const addrs = process.argv[1].split(",").map((a) => a.trim()).filter(Boolean);
    let left = addrs.length;
    if (!left) process.exit(1);
    for (const a of addrs) {
      const i = a.lastIndexOf(":");
      const s = net.connect({ host: a.slice(0, i), port: Number(a.slice(i + 1)) });
      s.setTimeout(2000);
      s.on("connect", () => process.exit(0));
      const fail = () => { s.destroy(); if (--left === 0) process.exit(1); };
      s.on("timeout", fail);
      s.on("error", fail);
    }' "$brokers" 2>/dev/null
}

answers() { # path
  node -e 'fetch(process.argv[1], { signal: AbortSignal.timeout(2000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' \
    "http://127.0.0.1:$port${1:-/subjects}" 2>/dev/null
}
# The API answers while the journal is still being replayed; readiness turns UP once it is read.
ready() { answers /subjects && answers /health/ready; }

start() {
  if pid="$(running_pid)"; then say "already running (pid $pid) on 127.0.0.1:$port"; return 0; fi
  local jar
  jar="$(jar_path)"
  if [ ! -f "$jar" ]; then bash "$root/tools/setup/steps.d/20-registry.sh"; fi
  if answers; then say "port $port is taken by another process"; return 1; fi
  if ! kafka_reachable; then
    say "Kafka is not reachable at $brokers (SLUICE_TEST_KAFKA_BROKERS): the registry keeps its schemas there."
    say "Start it first, e.g. KAFKA_PORT=19092 bash tools/kafka/kafka.sh start"
    return 1
  fi
  mkdir -p "$data_dir"
  # kafkasql: the journal, snapshots and events topics are created on first start. The consumer
  # poll timeout (Apicurio's default 5 s) is also how long a start waits on the empty snapshots
  # topic. A small heap and C1-only JIT: it runs beside Kafka and the tests on a small machine.
  nohup java -Xms64m "-Xmx$heap" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
    -Dquarkus.log.console.json=false -Dquarkus.log.level=WARN -Dquarkus.http.access-log.enabled=false \
    -Dapicurio.storage.kind=kafkasql \
    -Dapicurio.kafkasql.consumer.poll.timeout=1000 \
    -Dapicurio.kafkasql.bootstrap.servers="$brokers" \
    -Dapicurio.kafkasql.topic="$topic" \
    -Dapicurio.kafkasql.snapshots.topic="${topic%_journal}_snapshots" \
    -Dapicurio.events.kafka.topic="${topic%_journal}_events" \
    -Dapicurio.events.kafka.config.bootstrap.servers="$brokers" \
    -jar "$jar" >"$log_file" 2>&1 &
  echo $! >"$pid_file"
  local waited=0
  until ready; do
    if ! running_pid >/dev/null; then tail -n 30 "$log_file" >&2; say "exited during start-up (log: $log_file)"; return 1; fi
    if [ "$waited" -ge "$start_timeout" ]; then say "no answer after ${start_timeout}s (log: $log_file)"; stop; return 1; fi
    sleep 1
    waited=$((waited + 1))
  done
  say "ready on http://127.0.0.1:$port (pid $(cat "$pid_file"), ${waited}s; kafkasql on $brokers, topic $topic)"
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

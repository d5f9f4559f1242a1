#!/usr/bin/env bash
# Runs the whole Sluice stack on one machine on embedded defaults:
# a local Kafka (KRaft) on 127.0.0.1:9092, the pipeline's topics, the lake on local disk under
# .sluice/lake, the four services, and a sample event stream into ingest.
#
#   bash tools/run-local.sh          start everything, print where it is, stop all on Ctrl-C
#   bash tools/run-local.sh stop     stop a stack left running (e.g. after a closed terminal)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
say() { echo "[sluice] $*" >&2; }

export KAFKA_PORT="${KAFKA_PORT:-9092}"
export KAFKA_DATA_DIR="${KAFKA_DATA_DIR:-$root/.sluice/kafka-$KAFKA_PORT}"
run_dir="$root/.sluice/run"
lake_dir="${SLUICE_LAKE_DIR:-$root/.sluice/lake}"
mkdir -p "$run_dir" "$lake_dir"

# Embedded defaults shared by all services (each app's src/config.ts documents its variables).
export KAFKA_BROKERS="127.0.0.1:$KAFKA_PORT"
export LAKE_URI="file://$lake_dir"
export INGEST_PORT="${INGEST_PORT:-8080}"
export QUERY_API_PORT="${QUERY_API_PORT:-8090}"
export VALIDATE_METRICS_PORT="${VALIDATE_METRICS_PORT:-9464}"
export MERGE_METRICS_PORT="${MERGE_METRICS_PORT:-9465}"
# Local-only demo credentials; real deployments take these from secrets (deploy/k8s).
export INGEST_API_KEYS="${INGEST_API_KEYS:-[{\"producer\":\"demo\",\"key\":\"demo-ingest-key-0000000000000000\",\"contracts\":[\"*\"]}]}"
export QUERY_API_TOKENS="${QUERY_API_TOKENS:-[{\"name\":\"dashboard\",\"token\":\"demo-query-token-000000000000000\",\"tables\":[\"*\"]}]}"

stop_all() {
  for pid_file in "$run_dir"/*.pid; do
    [ -e "$pid_file" ] || continue
    pid="$(cat "$pid_file")"
    name="$(basename "$pid_file" .pid)"
    if kill -0 "$pid" 2>/dev/null; then
      say "stopping $name (pid $pid)"
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$pid_file"
  done
  bash tools/kafka/kafka.sh stop
}

if [ "${1:-}" = "stop" ]; then stop_all; exit 0; fi

bash tools/setup/setup.sh || exit 1
bash tools/kafka/kafka.sh start || exit 1
trap 'stop_all; exit 0' INT TERM
trap 'stop_all' EXIT

if [ -f tools/src/topics/cli.ts ]; then
  say "provisioning topics"
  npx tsx tools/src/topics/cli.ts --brokers "$KAFKA_BROKERS" || { say "topic provisioning failed"; exit 1; }
fi

# start_bg NAME COMMAND...: runs a process in its own process group, logs to .sluice/run/NAME.log.
start_bg() {
  local name="$1"; shift
  setsid "$@" >"$run_dir/$name.log" 2>&1 </dev/null &
  echo $! >"$run_dir/$name.pid"
  say "started $name (pid $!, log $run_dir/$name.log)"
}

for app in ingest validate merge-compaction query-api; do
  main="apps/$app/src/main.ts"
  if grep -q "buildApp\|build(" "$main" 2>/dev/null; then
    start_bg "$app" npx tsx "$main"
  else
    say "skipping $app: not built yet"
  fi
done

if [ -f tools/src/sample/stream.ts ]; then
  start_bg sample-stream npx tsx tools/src/sample/stream.ts --ingest "http://127.0.0.1:$INGEST_PORT"
fi

cat >&2 <<INFO

  Sluice is running on embedded defaults:
    Kafka            127.0.0.1:$KAFKA_PORT   (data $KAFKA_DATA_DIR)
    ingest           http://127.0.0.1:$INGEST_PORT/v1/events   (key: demo-ingest-key-0000000000000000)
    query-api        http://127.0.0.1:$QUERY_API_PORT/v1/tables  dashboard: http://127.0.0.1:$QUERY_API_PORT/dashboard
    metrics          validate :$VALIDATE_METRICS_PORT/metrics, merge-compaction :$MERGE_METRICS_PORT/metrics
    lake tables      $lake_dir
    logs             $run_dir/*.log
  Ctrl-C stops everything.

INFO
while true; do sleep 3600 & wait $!; done

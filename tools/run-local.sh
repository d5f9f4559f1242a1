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

# Embedded defaults. Each app's src/config.ts documents its variables; these are local-only demo
# credentials, real deployments take them from secrets (deploy/k8s).
ingest_port="${INGEST_PORT:-8080}"
query_port="${QUERY_API_PORT:-8083}"
validate_ops_port="${VALIDATE_OPS_PORT:-9464}"
merge_ops_port="${MERGE_OPS_PORT:-9465}"
ingest_ops_port="${INGEST_OPS_PORT:-9466}"
query_ops_port="${QUERY_API_OPS_PORT:-9467}"
brokers="127.0.0.1:$KAFKA_PORT"
demo_ingest_key="demo-ingest-key-0000000000000000"
demo_query_token="demo-query-token-000000000000000"

stop_all() {
  # Every service is asked to stop first, then all of them get the time their own shutdown takes
  # (ingest drains for up to 25 s, validate exits hard at 30 s) before anything is killed.
  local pids=()
  for pid_file in "$run_dir"/*.pid; do
    [ -e "$pid_file" ] || continue
    pid="$(cat "$pid_file")"
    name="$(basename "$pid_file" .pid)"
    if kill -0 "$pid" 2>/dev/null; then
      say "stopping $name (pid $pid)"
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
      pids+=("$pid")
    fi
    rm -f "$pid_file"
  done
  # ${pids[@]+...}: an empty array under `set -u` is an error in bash before 4.4.
  for _ in $(seq 1 140); do
    local left=0
    for pid in ${pids[@]+"${pids[@]}"}; do kill -0 "$pid" 2>/dev/null && left=1; done
    [ "$left" = 0 ] && break
    sleep 0.25
  done
  for pid in ${pids[@]+"${pids[@]}"}; do
    if kill -0 "$pid" 2>/dev/null; then say "pid $pid still running after 35 s, killing it"; fi
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
  bash tools/kafka/kafka.sh stop
}

if [ "${1:-}" = "stop" ]; then stop_all; exit 0; fi

bash tools/setup/setup.sh || exit 1
source tools/setup/node.sh || exit 1   # the services run on the Node.js setup built for
bash tools/kafka/kafka.sh start || exit 1
trap 'trap - EXIT; stop_all; exit 0' INT TERM
trap 'stop_all' EXIT

if [ -f tools/src/topics/cli.ts ]; then
  say "provisioning topics"
  npx tsx tools/src/topics/cli.ts --brokers "$brokers" || { say "topic provisioning failed"; exit 1; }
fi

# start_bg NAME COMMAND...: runs a process in its own process group, logs to .sluice/run/NAME.log.
start_bg() {
  local name="$1"; shift
  setsid "$@" >"$run_dir/$name.log" 2>&1 </dev/null &
  echo $! >"$run_dir/$name.pid"
  say "started $name (pid $!, log $run_dir/$name.log)"
}

start_bg ingest env KAFKA_BROKERS="$brokers" INGEST_PORT="$ingest_port" OPS_PORT="$ingest_ops_port" \
  INGEST_API_KEYS="[{\"producer\":\"demo\",\"key\":\"$demo_ingest_key\",\"contracts\":[\"*\"],\"envelopeProducers\":[\"*\"]}]" \
  npx tsx apps/ingest/src/main.ts
start_bg validate env KAFKA_BROKERS="$brokers" OPS_PORT="$validate_ops_port" VALIDATE_INSTANCE_ID=local-0 \
  npx tsx apps/validate/src/main.ts
start_bg merge-compaction env SLUICE_KAFKA_BROKERS="$brokers" SLUICE_LAKE_ROOT="$lake_dir" \
  SLUICE_SCRATCH_DIR="$root/.sluice/scratch" OPS_PORT="$merge_ops_port" \
  npx tsx apps/merge-compaction/src/main.ts
start_bg query-api env QUERY_API_PORT="$query_port" OPS_PORT="$query_ops_port" QUERY_API_LAKE_ROOT="$lake_dir" \
  QUERY_API_TOKENS="[{\"name\":\"dashboard\",\"token\":\"$demo_query_token\",\"tables\":[\"*\"]}]" \
  QUERY_API_DLQ_METRICS_URLS="http://127.0.0.1:$validate_ops_port/metrics" \
  npx tsx apps/query-api/src/main.ts

if [ -f tools/src/sample/stream.ts ]; then
  start_bg sample-stream env INGEST_API_KEY="$demo_ingest_key" \
    npx tsx tools/src/sample/stream.ts --ingest "http://127.0.0.1:$ingest_port"
fi

cat >&2 <<INFO

  Sluice is running on embedded defaults:
    Kafka            127.0.0.1:$KAFKA_PORT   (data $KAFKA_DATA_DIR)
    ingest           http://127.0.0.1:$ingest_port/v1/events   (Authorization: Bearer $demo_ingest_key)
    query-api        http://127.0.0.1:$query_port/v1/tables    (Authorization: Bearer $demo_query_token)
    dashboard        http://127.0.0.1:$query_port/dashboard    API docs: http://127.0.0.1:$query_port/docs
    metrics          ingest :$ingest_ops_port/metrics, query-api :$query_ops_port/metrics,
                     validate :$validate_ops_port/metrics, merge-compaction :$merge_ops_port/metrics
    lake tables      $lake_dir
    logs             $run_dir/*.log
  Ctrl-C stops everything.

INFO
while true; do sleep 3600 & wait $!; done

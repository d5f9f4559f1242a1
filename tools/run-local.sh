#!/usr/bin/env bash
# Runs the whole Sluice stack on one machine on embedded defaults:
# a local Kafka (KRaft) on 127.0.0.1:9092, the pipeline's topics, the lake on local disk under
# .sluice/lake, the four services, and a sample event stream into ingest.
#
#   bash tools/run-local.sh          start everything, print where it is, stop all on Ctrl-C
#   bash tools/run-local.sh stop     stop a stack left running (e.g. after a closed terminal)
#
# It refuses to start beside a stack that is still running or on a port another process holds,
# prints the banner only once every service answers /readyz, and starts a service again when it
# exits (the services exit on purpose when wedged, for a supervisor to replace them), backing off
# while it keeps exiting, and Kafka when it exits.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
say() { echo "[sluice] $*" >&2; }

export KAFKA_PORT="${KAFKA_PORT:-9092}"
export KAFKA_DATA_DIR="${KAFKA_DATA_DIR:-$root/.sluice/kafka-$KAFKA_PORT}"
run_dir="${SLUICE_RUN_DIR:-$root/.sluice/run}"
lake_dir="${SLUICE_LAKE_DIR:-$root/.sluice/lake}"
scratch_dir="${SLUICE_SCRATCH_DIR:-$root/.sluice/scratch}"
mkdir -p "$run_dir" "$lake_dir"

# Embedded defaults. Each app's src/config.ts documents its variables; these are local-only demo
# credentials, real deployments take them from secrets (deploy/k8s).
ingest_port="${INGEST_PORT:-8080}"
query_port="${QUERY_API_PORT:-8083}"
validate_ops_port="${VALIDATE_OPS_PORT:-9464}"
merge_ops_port="${MERGE_OPS_PORT:-9465}"
ingest_ops_port="${INGEST_OPS_PORT:-9466}"
query_ops_port="${QUERY_API_OPS_PORT:-9467}"
ready_timeout_s="${SLUICE_READY_TIMEOUT_S:-180}"
brokers="127.0.0.1:$KAFKA_PORT"
demo_ingest_key="demo-ingest-key-0000000000000000"
demo_query_token="demo-query-token-000000000000000"
services=(ingest validate merge-compaction query-api sample-stream)

# The script each service runs: its pid file's process must be running it to count as ours.
script_of() {
  case "$1" in
    ingest) echo apps/ingest/src/main.ts ;;
    validate) echo apps/validate/src/main.ts ;;
    merge-compaction) echo apps/merge-compaction/src/main.ts ;;
    query-api) echo apps/query-api/src/main.ts ;;
    sample-stream) echo tools/src/sample/stream.ts ;;
  esac
}

# live_pid NAME: the pid in NAME's pid file when that process is alive and runs NAME's script
# (a pid file left by a stack that died, whose pid now belongs to something else, is not ours).
live_pid() {
  local pid_file="$run_dir/$1.pid" pid
  [ -f "$pid_file" ] || return 1
  pid="$(cat "$pid_file")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$(script_of "$1")" || return 1
  echo "$pid"
}

# The supervising run-local.sh of a running stack, when alive.
supervisor_pid() {
  local pid
  pid="$(cat "$run_dir/run-local.pid" 2>/dev/null)"
  [ -n "$pid" ] && [ "$pid" != "$$" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF run-local.sh || return 1
  echo "$pid"
}

stop_all() {
  # Every service is asked to stop first, then all of them get the time their own shutdown takes
  # (ingest drains for up to 25 s, validate exits hard at 30 s) before anything is killed.
  local pids=() name pid
  for name in "${services[@]}"; do
    if pid="$(live_pid "$name")"; then
      say "stopping $name (pid $pid)"
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
      pids+=("$pid")
    elif [ -f "$run_dir/$name.pid" ]; then
      say "$name is not running (pid file $run_dir/$name.pid names no process of it); removing the pid file"
    fi
    rm -f "$run_dir/$name.pid"
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
  # Kafka: by `stop`, or by this script once it has started it (a setup that failed first leaves a
  # broker started by hand from the same data directory alone). A start still running is waited
  # for, or the broker would come up after this stop.
  if [ "${1:-}" = all ] || [ "$kafka_ours" = 1 ]; then
    [ -n "$kafka_starter" ] && wait "$kafka_starter" 2>/dev/null
    bash tools/kafka/kafka.sh stop
  fi
  rm -f "$run_dir/run-local.pid"
}
kafka_ours=0
kafka_starter=''

if [ "${1:-}" = "stop" ]; then
  # The supervisor first: it would start again what is stopped under it. Its own stop runs.
  if pid="$(supervisor_pid)"; then
    say "stopping the run-local.sh that supervises the stack (pid $pid)"
    kill -TERM "$pid" 2>/dev/null
    # Its own stop takes up to ~35 s for the services and the time Kafka's stop takes.
    for _ in $(seq 1 480); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  fi
  stop_all all
  exit 0
fi

# Refuse to start beside a running stack: its pid files would be overwritten by services that die
# at once on its ports, and stopping would then stop its Kafka and leave its services unreachable.
# The checks and this script's pid file are under one lock, so two starts at once cannot both pass.
exec 9>"$run_dir/run-local.lock"
if ! flock -w 30 9; then
  say "another run-local.sh has held $run_dir/run-local.lock for 30 s; is a stack starting?"
  exit 1
fi
if pid="$(supervisor_pid)"; then
  say "a Sluice stack is already running (run-local.sh is pid $pid): stop it with 'bash tools/run-local.sh stop'"
  exit 1
fi
for name in "${services[@]}"; do
  if pid="$(live_pid "$name")"; then
    say "a Sluice stack is already running ($name is pid $pid, pid files in $run_dir): stop it with 'bash tools/run-local.sh stop'"
    exit 1
  fi
done
port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for port in "$ingest_port" "$query_port" "$validate_ops_port" "$merge_ops_port" "$ingest_ops_port" "$query_ops_port"; do
  if port_taken "$port"; then
    say "port $port on 127.0.0.1 is taken by another process; free it, or choose ports (INGEST_PORT, QUERY_API_PORT, VALIDATE_OPS_PORT, MERGE_OPS_PORT, INGEST_OPS_PORT, QUERY_API_OPS_PORT)"
    exit 1
  fi
done
trap 'trap - EXIT; stop_all; exit 0' INT TERM HUP
trap 'stop_all' EXIT
echo $$ >"$run_dir/run-local.pid"
exec 9>&-   # released, and not inherited by the services and Kafka

bash tools/setup/setup.sh || exit 1
source tools/setup/node.sh || exit 1   # the services run on the Node.js setup built for
kafka_ours=1
bash tools/kafka/kafka.sh start || exit 1

if [ -f tools/src/topics/cli.ts ]; then
  say "provisioning topics"
  npx tsx tools/src/topics/cli.ts --brokers "$brokers" || { say "topic provisioning failed"; exit 1; }
fi

# start NAME: runs a service in its own process group, logging to $run_dir/NAME.log (appended:
# a restarted service keeps the log of the run before it).
start() {
  local name="$1" script
  script="$(script_of "$name")"
  case "$name" in
    ingest) set -- env KAFKA_BROKERS="$brokers" INGEST_PORT="$ingest_port" OPS_PORT="$ingest_ops_port" \
      INGEST_API_KEYS="[{\"producer\":\"demo\",\"key\":\"$demo_ingest_key\",\"contracts\":[\"*\"],\"envelopeProducers\":[\"*\"]}]" ;;
    validate) set -- env KAFKA_BROKERS="$brokers" OPS_PORT="$validate_ops_port" VALIDATE_INSTANCE_ID=local-0 ;;
    merge-compaction) set -- env SLUICE_KAFKA_BROKERS="$brokers" SLUICE_LAKE_ROOT="$lake_dir" \
      SLUICE_SCRATCH_DIR="$scratch_dir" OPS_PORT="$merge_ops_port" ;;
    query-api) set -- env QUERY_API_PORT="$query_port" OPS_PORT="$query_ops_port" QUERY_API_LAKE_ROOT="$lake_dir" \
      QUERY_API_TOKENS="[{\"name\":\"dashboard\",\"token\":\"$demo_query_token\",\"tables\":[\"*\"]}]" \
      QUERY_API_DLQ_METRICS_URLS="http://127.0.0.1:$validate_ops_port/metrics" ;;
    sample-stream) set -- env INGEST_API_KEY="$demo_ingest_key" ;;
  esac
  local args=()
  [ "$name" = sample-stream ] && args=(--ingest "http://127.0.0.1:$ingest_port")
  setsid "$@" npx tsx "$script" ${args[@]+"${args[@]}"} >>"$run_dir/$name.log" 2>&1 </dev/null &
  echo $! >"$run_dir/$name.pid"
  say "started $name (pid $!, log $run_dir/$name.log)"
}

# ready_port NAME: the port where NAME answers GET /readyz.
ready_port() {
  case "$1" in
    ingest) echo "$ingest_ops_port" ;;
    validate) echo "$validate_ops_port" ;;
    merge-compaction) echo "$merge_ops_port" ;;
    query-api) echo "$query_port" ;;
  esac
}

# is_ready PORT: GET /readyz on 127.0.0.1:PORT answers 200 (bash's /dev/tcp: no curl needed).
is_ready() {
  local status
  status="$( (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 && timeout 5 head -n 1 <&3) 2>/dev/null)"
  [[ "$status" == "HTTP/1."?" 200"* ]]
}

for name in "${services[@]}"; do
  [ -f "$(script_of "$name")" ] && start "$name"
done

say "waiting for every service to answer /readyz (up to $ready_timeout_s s)"
deadline=$((SECONDS + ready_timeout_s))
for name in ingest validate merge-compaction query-api; do
  until is_ready "$(ready_port "$name")"; do
    if ! live_pid "$name" >/dev/null; then
      say "$name exited while starting; the end of $run_dir/$name.log:"
      tail -n 20 "$run_dir/$name.log" >&2
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      say "$name is not ready after $ready_timeout_s s; the end of $run_dir/$name.log:"
      tail -n 20 "$run_dir/$name.log" >&2
      exit 1
    fi
    sleep 1
  done
done

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

# A service that exits (they do on purpose when wedged, for a supervisor) is started again, after
# a back-off that doubles, up to a minute, while it keeps exiting within a minute of its start (a
# crash loop, e.g. a bad setting, is not restarted every 5 s for ever). Kafka is started again too.
declare -A started_at=() backoff_s=() due_at=()
for name in "${services[@]}"; do started_at[$name]=$SECONDS; backoff_s[$name]=0; done
while true; do
  sleep 5 & wait $!
  if ! bash tools/kafka/kafka.sh status >/dev/null 2>&1; then
    say "Kafka exited; starting it again (log under $KAFKA_DATA_DIR)"
    # In the background: a TERM meanwhile runs the trap at once (the trap stops what started).
    bash tools/kafka/kafka.sh start &
    kafka_starter=$!
    wait "$kafka_starter" || say "Kafka did not start; trying again in 5 s"
    kafka_starter=''
  fi
  for name in "${services[@]}"; do
    [ -f "$(script_of "$name")" ] || continue
    live_pid "$name" >/dev/null && continue
    if [ -z "${due_at[$name]:-}" ]; then
      if [ $((SECONDS - started_at[$name])) -lt 60 ]; then
        backoff_s[$name]=$(( backoff_s[$name] == 0 ? 5 : (backoff_s[$name] * 2 > 60 ? 60 : backoff_s[$name] * 2) ))
      else
        backoff_s[$name]=0
      fi
      due_at[$name]=$((SECONDS + backoff_s[$name]))
      say "$name exited; starting it again in ${backoff_s[$name]} s. The end of $run_dir/$name.log:"
      tail -n 5 "$run_dir/$name.log" >&2
    fi
    if [ "$SECONDS" -ge "${due_at[$name]}" ]; then
      unset "due_at[$name]"
      started_at[$name]=$SECONDS
      start "$name"
    fi
  done
done

#!/usr/bin/env bash
# Local S3-compatible object store: SeaweedFS (`weed server -s3`: master, volume server, filer and
# S3 gateway in one process) on 127.0.0.1, built from source through the Go module proxy.
#
#   tools/s3/seaweedfs.sh install   build the pinned version into the bin dir (once; skips if present)
#   tools/s3/seaweedfs.sh start     start, wait until S3 answers a signed request, create the bucket
#   tools/s3/seaweedfs.sh stop      stop the server by its pid
#   tools/s3/seaweedfs.sh status    print whether it runs
#   tools/s3/seaweedfs.sh env       print the SLUICE_TEST_S3_* variables for this server
#
# Settings (environment):
#   S3_PORT            S3 API port                          (default 18333)
#   S3_DATA_DIR        data, config, pid and log             (default .sluice/s3-$S3_PORT)
#   S3_ACCESS_KEY      access key of the one identity        (default sluice-test)
#   S3_SECRET_KEY      its secret key                         (default sluice-test-secret-key-0000000000)
#   S3_BUCKET          bucket created at start                (default sluice-test)
#   S3_MEMORY_LIMIT    Go soft memory limit (GOMEMLIMIT)      (default 384MiB)
#   S3_START_TIMEOUT   seconds to wait for the S3 API         (default 90)
#   SEAWEEDFS_BIN_DIR  where built binaries are kept          (default ~/.cache/sluice/bin)
#
# The master, volume and filer ports are derived from S3_PORT (+3, +4, +5; gRPC = HTTP + 10000) so
# they never collide with SeaweedFS's defaults (9333, 8080, 8888) used by a dev stack.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

# Pinned: a pseudo-version the module proxy serves. `go install …@latest` is refused here, and
# `go install` of any version fails because SeaweedFS's go.mod has replace directives; so the
# module is downloaded and built in place.
version="v0.0.0-20261109003541-7506e5f91cd6"
module="github.com/seaweedfs/seaweedfs"

port="${S3_PORT:-18333}"
master_port="$((port + 3))"
volume_port="$((port + 4))"
filer_port="$((port + 5))"
data_dir="${S3_DATA_DIR:-$root/.sluice/s3-$port}"
access_key="${S3_ACCESS_KEY:-sluice-test}"
secret_key="${S3_SECRET_KEY:-sluice-test-secret-key-0000000000}"
bucket="${S3_BUCKET:-sluice-test}"
memory_limit="${S3_MEMORY_LIMIT:-384MiB}"
start_timeout="${S3_START_TIMEOUT:-90}"
bin_dir="${SEAWEEDFS_BIN_DIR:-$HOME/.cache/sluice/bin}"
bin="$bin_dir/weed-$version"
pid_file="$data_dir/weed.pid"
log_file="$data_dir/weed.log"
identities_file="$data_dir/s3-identities.json"

say() { echo "[s3] $*" >&2; }
die() { say "error: $*"; exit 1; }

install() {
  if [ -x "$bin" ] && "$bin" version >/dev/null 2>&1; then
    return 0
  fi
  source "$root/tools/setup/go.sh" || die "no Go toolchain; building SeaweedFS needs Go (see go.mod of $module@$version for the minimum)"
  say "building SeaweedFS $version from the Go module proxy into $bin (takes many minutes the first time)"
  mkdir -p "$bin_dir"
  local src started
  started=$SECONDS
  # Outside any module, so the workspace's own go.mod (if one appears) cannot interfere.
  src="$(cd / && GOFLAGS= go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [ -n "$src" ] && [ -d "$src/weed" ] || die "could not download $module@$version through the module proxy"
  # A temporary name of this process's own: two setups on one machine (a checkout and a CI clone
  # share the cache) must not move each other's half-built file.
  local tmp="$bin.tmp.$$"
  (cd "$src" && GOFLAGS= go build -o "$tmp" ./weed) || { rm -f "$tmp"; die "go build of SeaweedFS failed"; }
  mv -f "$tmp" "$bin"
  say "built $bin in $((SECONDS - started))s"
}

# The server of this data dir: the pid file's process, or (when the pid file was lost, e.g. two
# starts raced) the weed process whose command line names this data dir.
running_pid() {
  local pid
  if [ -f "$pid_file" ]; then
    pid="$(cat "$pid_file")"
    if [ -n "$pid" ] && is_our_server "$pid"; then
      echo "$pid"
      return 0
    fi
  fi
  for pid in $(pgrep -f -- "-dir=$data_dir/volumes" 2>/dev/null || true); do
    if is_our_server "$pid"; then
      echo "$pid" >"$pid_file"
      echo "$pid"
      return 0
    fi
  done
  return 1
}

is_our_server() {
  kill -0 "$1" 2>/dev/null && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null \
    | grep -qF -- "weed-$version server -ip=127.0.0.1 -ip.bind=127.0.0.1 -dir=$data_dir/volumes "
}

# One start/stop at a time per data dir (test runners of several engineers share a checkout).
with_lock() {
  mkdir -p "$data_dir"
  exec 9>"$data_dir/start-stop.lock"
  flock -w 120 9 || die "another start/stop of $data_dir did not finish within 120s"
  "$@"
}

port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

write_identities() {
  # The one identity the tests use; no anonymous access.
  cat >"$identities_file" <<JSON
{
  "identities": [
    {
      "name": "sluice",
      "credentials": [{ "accessKey": "$access_key", "secretKey": "$secret_key" }],
      "actions": ["Admin", "Read", "List", "Tagging", "Write"]
    }
  ]
}
JSON
  chmod 600 "$identities_file"
}

# A SigV4-signed request with curl; prints the HTTP status (000 when nothing answers).
signed() { # method path
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X "$1" \
    --aws-sigv4 "aws:amz:us-east-1:s3" --user "$access_key:$secret_key" \
    "http://127.0.0.1:$port$2" 2>/dev/null || true
}

print_env() {
  cat <<ENV
SLUICE_TEST_S3_ENDPOINT=http://127.0.0.1:$port
SLUICE_TEST_S3_ACCESS_KEY=$access_key
SLUICE_TEST_S3_SECRET_KEY=$secret_key
SLUICE_TEST_S3_BUCKET=$bucket
ENV
}

start() {
  if pid="$(running_pid)"; then
    say "already running (pid $pid) on 127.0.0.1:$port"
    wait_ready
    print_env
    return 0
  fi
  if [ -f "$pid_file" ]; then
    say "removing stale pid file $pid_file (pid $(cat "$pid_file") is not a running SeaweedFS)"
    rm -f "$pid_file"
  fi
  for p in "$port" "$master_port" "$volume_port" "$filer_port" \
    "$((port + 10000))" "$((master_port + 10000))" "$((volume_port + 10000))" "$((filer_port + 10000))"; do
    port_taken "$p" && die "port 127.0.0.1:$p is already taken by another process; set S3_PORT"
  done
  install
  mkdir -p "$data_dir/volumes" "$data_dir/meta"
  write_identities
  say "starting SeaweedFS on 127.0.0.1:$port (master $master_port, volume $volume_port, filer $filer_port), log $log_file"
  # cwd = data dir: anything SeaweedFS resolves relative to "." (filer.toml lookup, sockets) stays there.
  (
    cd "$data_dir"
    # 9>&- : the server must not inherit the start/stop lock.
    GOMEMLIMIT="$memory_limit" nohup "$bin" server \
      -ip=127.0.0.1 -ip.bind=127.0.0.1 \
      -dir="$data_dir/volumes" -master.dir="$data_dir/meta" \
      -master.port="$master_port" -volume.port="$volume_port" -filer.port="$filer_port" \
      -master.peers=none -master.volumeSizeLimitMB=64 -volume.max=16 -master.telemetry=false \
      -filer -s3 -s3.port="$port" -s3.config="$identities_file" \
      -s3.port.iceberg=0 -s3.port.lance=0 -s3.autoCreateBucket=false \
      -filer.localSocket="$data_dir/filer.sock" -s3.localSocket="$data_dir/s3.sock" \
      >>"$log_file" 2>&1 </dev/null 9>&- &
    echo $! >"$pid_file"
  )
  wait_ready
  say "ready: http://127.0.0.1:$port bucket $bucket (pid $(cat "$pid_file"))"
  print_env
}

# Ready = the bucket exists and lists: creating it needs the S3 gateway, the filer and the master.
wait_ready() {
  local deadline=$((SECONDS + start_timeout)) code
  while :; do
    code="$(signed PUT "/$bucket")"
    case "$code" in 200 | 409) break ;; esac
    if ! running_pid >/dev/null; then
      tail -n 30 "$log_file" >&2 || true
      rm -f "$pid_file"
      die "SeaweedFS exited during start-up (see $log_file)"
    fi
    [ $SECONDS -lt $deadline ] || die "S3 did not answer within ${start_timeout}s (last HTTP status $code, see $log_file)"
    sleep 1
  done
  [ "$(signed GET "/$bucket?list-type=2&max-keys=1")" = 200 ] || die "bucket $bucket is not listable (see $log_file)"
}

stop() {
  local pid
  if ! pid="$(running_pid)"; then
    if [ -f "$pid_file" ]; then
      say "stale pid file $pid_file (pid $(cat "$pid_file") not running); removing it"
      rm -f "$pid_file"
    else
      say "not running"
    fi
    return 0
  fi
  say "stopping pid $pid"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "did not stop in 20s; killing"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pid_file"
  say "stopped"
}

status() {
  if pid="$(running_pid)"; then say "running (pid $pid) on 127.0.0.1:$port"; else say "not running"; return 3; fi
}

case "${1:-}" in
  install) install ;;
  start) with_lock start ;;
  stop) with_lock stop ;;
  status) status ;;
  env) print_env ;;
  *) echo "usage: $0 install|start|stop|status|env" >&2; exit 2 ;;
esac

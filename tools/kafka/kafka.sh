#!/usr/bin/env bash
# Local single-node Apache Kafka (KRaft, broker+controller) on 127.0.0.1.
#
#   tools/kafka/kafka.sh fetch    resolve the broker jars from Maven Central (once)
#   tools/kafka/kafka.sh start    format storage once, start, wait until it answers metadata
#   tools/kafka/kafka.sh stop     stop the broker by its pid
#   tools/kafka/kafka.sh status   print whether it runs
#   tools/kafka/kafka.sh env      print the secure listeners' client settings as SLUICE_TEST_* lines
#
# Settings (environment):
#   KAFKA_PORT            client listener port            (default 9092)
#   KAFKA_CONTROLLER_PORT controller listener port        (default KAFKA_PORT+1)
#   KAFKA_DATA_DIR        storage, config, pid and log     (default .sluice/kafka-$KAFKA_PORT)
#   KAFKA_LIBS_DIR        where the jars are kept          (default ~/.cache/sluice/kafka-<version>-<pom hash>)
#   KAFKA_HEAP            JVM heap                         (default 512m)
#   KAFKA_START_TIMEOUT   seconds to wait for metadata     (default 90)
#   KAFKA_SECURE_LISTENERS=1  also listen with SASL_SSL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; user
#                         sluice, password sluice-secret) on KAFKA_PORT+2 and with SSL requiring a
#                         client certificate on KAFKA_PORT+3; certificates from a CA made once in
#                         $KAFKA_DATA_DIR/tls (for tests of the clients' security settings)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")"

port="${KAFKA_PORT:-9092}"
controller_port="${KAFKA_CONTROLLER_PORT:-$((port + 1))}"
data_dir="${KAFKA_DATA_DIR:-$root/.sluice/kafka-$port}"
# Keyed by the pom's content too, so a changed dependency list fetches afresh.
libs_dir="${KAFKA_LIBS_DIR:-$HOME/.cache/sluice/kafka-$version-$(sha256sum "$here/pom.xml" | cut -c1-8)}"
heap="${KAFKA_HEAP:-512m}"
start_timeout="${KAFKA_START_TIMEOUT:-90}"
secure="${KAFKA_SECURE_LISTENERS:-0}"
sasl_ssl_port=$((port + 2))
ssl_port=$((port + 3))
tls_dir="$data_dir/tls"
sasl_user=sluice
sasl_password=sluice-secret
pid_file="$data_dir/kafka.pid"
log_file="$data_dir/kafka.log"
config_file="$data_dir/server.properties"

say() { echo "[kafka] $*" >&2; }
die() { say "error: $*"; exit 1; }

need_java() {
  command -v java >/dev/null 2>&1 || die "java not found; Kafka $version needs Java 17+ (Debian: apt-get install openjdk-17-jre-headless, or run tools/setup/setup.sh as root)"
  local major
  major="$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)"
  [ -n "$major" ] && [ "$major" -ge 17 ] || die "Java 17+ required, found: $(java -version 2>&1 | head -n1)"
}

classpath() { echo "$libs_dir/*"; }

fetch() {
  if [ -f "$libs_dir/kafka_2.13-$version.jar" ] && [ -f "$libs_dir/.complete" ]; then
    return 0
  fi
  need_java
  command -v mvn >/dev/null 2>&1 || die "mvn not found; needed once to fetch Kafka from Maven Central (Debian: apt-get install maven)"
  say "fetching org.apache.kafka:kafka_2.13:$version and its dependencies from Maven Central into $libs_dir"
  mkdir -p "$libs_dir"
  mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$libs_dir" -DincludeScope=runtime >"$libs_dir/.fetch.log" 2>&1 \
    || { cat "$libs_dir/.fetch.log" >&2; die "maven could not resolve Kafka $version"; }
  touch "$libs_dir/.complete"
}

running_pid() {
  [ -f "$pid_file" ] || return 1
  local pid
  pid="$(cat "$pid_file")"
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q "kafka.Kafka" "/proc/$pid/cmdline" 2>/dev/null; then
    echo "$pid"
    return 0
  fi
  return 1
}

port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A CA, the broker's certificate (for 127.0.0.1 and localhost) and a client certificate, made once.
make_tls() {
  [ -f "$tls_dir/client.pem" ] && return 0
  command -v openssl >/dev/null 2>&1 || die "openssl not found; KAFKA_SECURE_LISTENERS needs it (Debian: apt-get install openssl)"
  mkdir -p "$tls_dir"
  local t="$tls_dir"
  {
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=sluice-test-ca" -keyout "$t/ca-key.pem" -out "$t/ca.pem"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$t/broker-key.pem" -out "$t/broker.csr"
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$t/broker.ext"
    openssl x509 -req -in "$t/broker.csr" -CA "$t/ca.pem" -CAkey "$t/ca-key.pem" -CAcreateserial -days 3650 -extfile "$t/broker.ext" -out "$t/broker-cert.pem"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=sluice-client" -keyout "$t/client-key.pem" -out "$t/client.csr"
    openssl x509 -req -in "$t/client.csr" -CA "$t/ca.pem" -CAkey "$t/ca-key.pem" -CAcreateserial -days 3650 -out "$t/client-cert.pem"
  } >>"$tls_dir/openssl.log" 2>&1 || die "making test certificates failed (see $tls_dir/openssl.log)"
  # Kafka's PEM key store: the PKCS#8 key, then the certificate.
  cat "$t/broker-key.pem" "$t/broker-cert.pem" >"$t/broker.pem"
  cat "$t/client-key.pem" "$t/client-cert.pem" >"$t/client.pem"
}

secure_config() {
  cat <<CONF
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$sasl_user="$sasl_password";
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PEM
ssl.keystore.location=$tls_dir/broker.pem
ssl.truststore.type=PEM
ssl.truststore.location=$tls_dir/ca.pem
listener.name.ssl.ssl.client.auth=required
CONF
}

# SCRAM credentials live in the cluster's metadata: added through the plaintext listener, one
# mechanism per request (the broker refuses two changes of one user in one request).
add_scram_user() {
  local mechanism
  for mechanism in SCRAM-SHA-256 SCRAM-SHA-512; do
    java_run kafka.admin.ConfigCommand --bootstrap-server "127.0.0.1:$port" --alter --entity-type users --entity-name "$sasl_user" \
      --add-config "$mechanism=[password=$sasl_password]" >>"$log_file" 2>&1 \
      || die "adding the $mechanism user failed (see $log_file)"
  done
}

write_config() {
  mkdir -p "$data_dir/logs"
  local listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port"
  local advertised="PLAINTEXT://127.0.0.1:$port"
  local protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  if [ "$secure" = 1 ]; then
    listeners="$listeners,SASL_SSL://127.0.0.1:$sasl_ssl_port,SSL://127.0.0.1:$ssl_port"
    advertised="$advertised,SASL_SSL://127.0.0.1:$sasl_ssl_port,SSL://127.0.0.1:$ssl_port"
    protocols="$protocols,SASL_SSL:SASL_SSL,SSL:SSL"
  fi
  cat >"$config_file" <<CONF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller_port
listeners=$listeners
advertised.listeners=$advertised
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=$protocols
log.dirs=$data_dir/logs
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=8
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.retention.hours=24
log.segment.bytes=268435456
CONF
  if [ "$secure" = 1 ]; then make_tls; secure_config >>"$config_file"; fi
  cat >"$data_dir/log4j2.properties" <<CONF
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName=$log_file
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
logger.kafka.name=kafka
logger.kafka.level=WARN
logger.apache.name=org.apache.kafka
logger.apache.level=WARN
# Start-up, shutdown and their reasons at INFO, so a broker that exits can be diagnosed.
logger.lifecycle.name=kafka.server
logger.lifecycle.level=INFO
logger.raftserver.name=kafka.server.KafkaRaftServer
logger.raftserver.level=INFO
logger.kafkamain.name=kafka.Kafka\$
logger.kafkamain.level=INFO
# Group rebalances (members joining, failing, generations) at INFO: a consumer left without
# partitions after a broker restart is diagnosed from these lines.
logger.groups.name=org.apache.kafka.coordinator.group
logger.groups.level=INFO
CONF
}

java_run() {
  java -Xms128m -Xmx"$heap" -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$data_dir/log4j2.properties" -cp "$(classpath)" "$@"
}

format_once() {
  if [ -f "$data_dir/logs/meta.properties" ]; then return 0; fi
  local cluster_id
  cluster_id="$(java_run kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1)"
  say "formatting KRaft storage in $data_dir/logs (cluster $cluster_id)"
  java_run kafka.tools.StorageTool format -t "$cluster_id" -c "$config_file" >>"$log_file" 2>&1 \
    || { tail -n 20 "$log_file" >&2; die "storage format failed (see $log_file)"; }
}

answers_metadata() {
  timeout 20 java -Xmx128m -cp "$(classpath)" -Dlog4j2.configurationFile="$data_dir/log4j2.properties" \
    org.apache.kafka.tools.ClusterTool cluster-id --bootstrap-server "127.0.0.1:$port" >/dev/null 2>&1
}

# Whether the broker's written config has the secure listeners (a broker started without them
# keeps its config until it is started again).
has_secure_listeners() { grep -q "SASL_SSL://127.0.0.1:$sasl_ssl_port" "$config_file" 2>/dev/null; }

start() {
  if pid="$(running_pid)"; then
    if [ "$secure" = 1 ] && ! has_secure_listeners; then
      die "running (pid $pid) without the secure listeners; stop it first to start it with KAFKA_SECURE_LISTENERS=1"
    fi
    say "already running (pid $pid) on 127.0.0.1:$port"
    return 0
  fi
  if [ -f "$pid_file" ]; then
    say "removing stale pid file $pid_file (pid $(cat "$pid_file") is not a running broker)"
    rm -f "$pid_file"
  fi
  local ports=("$port" "$controller_port")
  if [ "$secure" = 1 ]; then
    ports+=("$sasl_ssl_port" "$ssl_port")
    case "$controller_port" in "$sasl_ssl_port" | "$ssl_port") die "KAFKA_CONTROLLER_PORT $controller_port collides with the secure listeners (KAFKA_PORT+2, +3)" ;; esac
  fi
  for p in "${ports[@]}"; do
    if port_taken "$p"; then
      die "port 127.0.0.1:$p is already taken by another process; set KAFKA_PORT / KAFKA_CONTROLLER_PORT"
    fi
  done
  need_java
  fetch
  write_config
  format_once
  say "starting Kafka $version on 127.0.0.1:$port (controller $controller_port), log $log_file"
  # setsid: the broker gets its own session, so signals aimed at the caller's process group
  # (a test runner's timeout, Ctrl-C in a terminal) never reach it; only `stop` stops it.
  setsid nohup java -Xms128m -Xmx"$heap" -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$data_dir/log4j2.properties" -cp "$(classpath)" \
    kafka.Kafka "$config_file" >>"$data_dir/kafka.out" 2>&1 </dev/null &
  echo $! >"$pid_file"
  local deadline=$((SECONDS + start_timeout))
  until answers_metadata; do
    if ! running_pid >/dev/null; then
      tail -n 30 "$data_dir/kafka.out" "$log_file" >&2 || true
      rm -f "$pid_file"
      die "broker exited during start-up (see $log_file)"
    fi
    [ $SECONDS -lt $deadline ] || die "broker did not answer metadata within ${start_timeout}s (see $log_file)"
    sleep 1
  done
  if [ "$secure" = 1 ]; then
    add_scram_user
    say "secure listeners: SASL_SSL 127.0.0.1:$sasl_ssl_port (user $sasl_user), SSL with client certificates 127.0.0.1:$ssl_port, CA $tls_dir/ca.pem"
  fi
  say "ready: bootstrap 127.0.0.1:$port (pid $(cat "$pid_file"))"
}

print_env() {
  [ "$secure" = 1 ] || return 0
  has_secure_listeners || die "the broker in $data_dir was not started with KAFKA_SECURE_LISTENERS=1"
  echo "SLUICE_TEST_KAFKA_SASL_SSL_BROKERS=127.0.0.1:$sasl_ssl_port"
  echo "SLUICE_TEST_KAFKA_SSL_BROKERS=127.0.0.1:$ssl_port"
  echo "SLUICE_TEST_KAFKA_TLS_DIR=$tls_dir"
  echo "SLUICE_TEST_KAFKA_SASL_USERNAME=$sasl_user"
  echo "SLUICE_TEST_KAFKA_SASL_PASSWORD=$sasl_password"
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
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "did not stop in 30s; killing"
    kill -KILL "$pid" 2>/dev/null || true
    # Wait until it is gone: a new broker cannot lock the log directory while it exists.
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  fi
  rm -f "$pid_file"
  say "stopped"
}

status() {
  if pid="$(running_pid)"; then say "running (pid $pid) on 127.0.0.1:$port"; else say "not running"; return 3; fi
}

case "${1:-}" in
  fetch) fetch ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) print_env ;;
  *) echo "usage: $0 fetch|start|stop|status|env" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Installs what a fresh machine lacks, idempotently: Debian packages (needs root), the project's
# Node.js, npm dependencies (building librdkafka from source), the Kafka broker jars, then every
# step in tools/setup/steps.d/ (Python tools, the S3-compatible server, the schema registry, ...).
# Safe to run again: each step checks before it installs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
say() { echo "[setup] $*" >&2; }

# Debian packages: the headers librdkafka links against, Java 17 + Maven for Kafka, Chromium for
# page tests, Python venv support, curl and unzip for the Go toolchain (tools/setup/go.sh), openssl
# for the test broker's certificates.
apt_packages=(zlib1g-dev libssl-dev libzstd-dev liblz4-dev libsasl2-dev libcurl4-openssl-dev
  openjdk-17-jre-headless maven chromium python3-venv g++ make curl unzip openssl)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    say "missing Debian packages: ${missing[*]}"
    say "installing them needs root: run 'sudo apt-get install -y ${missing[*]}' or run this script as root"
    exit 1
  fi
  say "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The project's Node.js (tools/setup/node.sh), before anything is built for it.
source tools/setup/node.sh

# npm dependencies. CKJS_LINKING=dynamic makes @confluentinc/kafka-javascript build its bundled
# librdkafka against the system zlib/OpenSSL/zstd/lz4/SASL instead of downloading them. The
# stamp names the lock file and the Node ABI the native addon was built for: another Node
# needs another build.
stamp="node_modules/.sluice-lock-sha"
want="$(sha256sum package-lock.json | cut -d' ' -f1) node-abi-$(node -p process.versions.modules)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] \
  || [ ! -f node_modules/@confluentinc/kafka-javascript/build/Release/confluent-kafka-javascript.node ]; then
  say "installing npm dependencies for Node.js $(node -v) (builds librdkafka from source, a few minutes)"
  CKJS_LINKING=dynamic npm ci --no-audit --no-fund --loglevel=error
  echo "$want" >"$stamp"
fi

bash tools/kafka/kafka.sh fetch

# Go for the steps that build the S3 test server and the deploy checkers (tools/setup/go.sh).
source tools/setup/go.sh

for step in tools/setup/steps.d/*.sh; do
  [ -e "$step" ] || continue
  bash "$step"
done
say "done"

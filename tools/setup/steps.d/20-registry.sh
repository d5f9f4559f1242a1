#!/usr/bin/env bash
# Builds the Confluent-compatible schema registry the integration tests use (Apicurio Registry 3
# from Maven Central, re-packaged by tools/registry/pom.xml) into ~/.cache/sluice/registry-<hash>.
# Idempotent: the hash covers the pom, sources and stand-in repo/, so a finished build is reused
# and a change rebuilds. Needs Java 17+ and Maven (installed by tools/setup/setup.sh). The build
# does not need Kafka; the registry uses it when started (tools/services.d/20-registry.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
say() { echo "[setup:registry] $*" >&2; }

src="$root/tools/registry"
hash="$(cd "$src" && find pom.xml src repo -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-12)"
out="${SLUICE_REGISTRY_HOME:-$HOME/.cache/sluice/registry-$hash}"
jar="$out/sluice-schema-registry-1.0.0-runner.jar"

if [ -f "$out/.complete" ] && [ -f "$jar" ]; then
  exit 0
fi
command -v mvn >/dev/null 2>&1 || { say "mvn not found (Debian: apt-get install maven)"; exit 1; }
command -v java >/dev/null 2>&1 || { say "java not found (Debian: apt-get install openjdk-17-jre-headless)"; exit 1; }

say "building Apicurio Registry (Confluent-compatible) into $out — first time only, a few minutes"
mkdir -p "$out"
log="$out/build.log"
if ! mvn -B -q -f "$src/pom.xml" package -Dsluice.build.dir="$out" >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  say "registry build failed (full log: $log)"
  exit 1
fi
[ -f "$jar" ] || { say "build finished but $jar is missing"; exit 1; }
touch "$out/.complete"
say "registry ready: $jar"

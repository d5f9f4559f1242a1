#!/usr/bin/env bash
# Bundles one service the way it ships: apps/ and libs/ TypeScript (path aliases resolved) into
# one CommonJS main.js with a source map, npm packages left external in node_modules, and the
# files a service reads at run time copied beside main.js. Used by deploy/Dockerfile and by the
# local stack the benchmarks, chaos scenarios and stack tests run (tools/src/bench/stack.ts),
# so what is measured and tested is what ships.
#   bash deploy/bundle.sh <service> <out-dir>            (run from the workspace root)
#   bash deploy/bundle.sh --entry <file.ts> <out-dir>    any entry point, same build (benchmarks)
set -euo pipefail
if [ "${1:-}" = --entry ]; then
  entry=${2:?entry file}
  app=
  out=${3:?output directory}
else
  app=${1:?service name}
  out=${2:?output directory}
  case "$app" in
    ingest|validate|merge-compaction|query-api) ;;
    *) echo "bundle.sh: unknown service '$app'" >&2; exit 2 ;;
  esac
  entry="apps/$app/src/main.ts"
fi
mkdir -p "$out"
node_modules/.bin/esbuild "$entry" --bundle --platform=node --target=node22 \
  --format=cjs --packages=external --tsconfig=tsconfig.base.json --sourcemap \
  --outfile="$out/main.js" --log-level=warning
# validate checks events in a worker thread: its entry is bundled beside main.js, where the
# service looks for it (apps/validate/src/routing/worker-checks.ts).
if [ "$app" = validate ]; then
  node_modules/.bin/esbuild apps/validate/src/routing/check-worker.ts --bundle --platform=node --target=node22 \
    --format=cjs --packages=external --tsconfig=tsconfig.base.json --sourcemap \
    --outfile="$out/check-worker.js" --log-level=warning
fi
# Run-time files, found by each service relative to its main (src/ in development, the bundle's
# directory once built).
if [ "$app" = query-api ]; then
  rm -rf "$out/dashboard"
  cp -r apps/query-api/src/dashboard "$out/dashboard"
fi

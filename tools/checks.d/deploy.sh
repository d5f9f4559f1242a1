#!/usr/bin/env bash
# Renders both Kubernetes overlays with kustomize and validates every resource against the
# Kubernetes and KEDA schemas with kubeconform (strict: unknown fields are errors), and checks
# the Prometheus alert rules and Grafana queries with Prometheus' parsers — all offline.
# Exits non-zero on any render or validation problem. Tools come from
# tools/setup/steps.d/40-k8s-tools.sh; the rendered manifests are left in .sluice/deploy/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
say() { echo "[check:deploy] $*" >&2; }

eval "$(bash tools/setup/steps.d/40-k8s-tools.sh --paths)"
for f in "$kustomize" "$kubeconform" "$schemas/.complete" "$promqlcheck"; do
  [ -e "$f" ] || { say "missing $f: run bash tools/setup/steps.d/40-k8s-tools.sh"; exit 1; }
done

out="$root/.sluice/deploy"
mkdir -p "$out"
status=0
for overlay in deploy/k8s/overlays/*/; do
  name="$(basename "$overlay")"
  if ! "$kustomize" build "$overlay" >"$out/$name.yaml"; then
    say "kustomize build $overlay failed"
    status=1
    continue
  fi
  if "$kubeconform" -strict -summary -schema-location "$schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json" "$out/$name.yaml" >&2; then
    say "ok: $name ($(grep -c '^kind:' "$out/$name.yaml") resources)"
  else
    say "invalid: $name"
    status=1
  fi
done
if "$promqlcheck" deploy/prometheus/alerts.yml deploy/grafana/dashboards/*.json >&2; then
  say "ok: alert rules and dashboard queries"
else
  say "invalid: alert rules or dashboard queries"
  status=1
fi
exit "$status"

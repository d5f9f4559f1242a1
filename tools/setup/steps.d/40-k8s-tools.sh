#!/usr/bin/env bash
# Deployment tooling, offline: kustomize and kubeconform built from the Go module proxy into
# ~/.cache/sluice/bin; kubeconform JSON schemas generated from the Kubernetes OpenAPI spec
# (module k8s.io/kubernetes) and KEDA's ScaledObject CRD (module github.com/kedacore/keda/v2),
# because kubeconform's usual schema download from GitHub is not reachable; and promql-check
# (deploy/prometheus/promql-check: Prometheus' own rule and PromQL parsers).
# Idempotent: each piece is skipped when the pinned version is already in place.
#   --paths   print kustomize=…, kubeconform=…, schemas=… (for tools/checks.d/deploy.sh and tests)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
say() { echo "[setup:k8s-tools] $*" >&2; }

KUSTOMIZE_VERSION=v5.8.0   # v5.8.1+ needs Go ≥ 1.27
KUBECONFORM_VERSION=v0.8.0
K8S_VERSION=v1.34.2        # schemas of this Kubernetes release
KEDA_VERSION=v2.18.1

cache="${SLUICE_CACHE_DIR:-$HOME/.cache/sluice}"
bin="$cache/bin"
schemas="$cache/k8s-schemas/k8s-$K8S_VERSION-keda-$KEDA_VERSION"

if [ "${1:-}" = "--paths" ]; then
  echo "kustomize=$bin/kustomize"
  echo "kubeconform=$bin/kubeconform"
  echo "schemas=$schemas"
  echo "promqlcheck=$bin/promql-check"
  exit 0
fi

source "$root/tools/setup/go.sh" || { say "Go is required (go install of kustomize and kubeconform)"; exit 1; }
mkdir -p "$bin"

# go_install <binary> <module path> <version>: builds unless the binary already reports that module version.
go_install() {
  local name="$1" module="$2" version="$3"
  if [ -x "$bin/$name" ] && go version -m "$bin/$name" 2>/dev/null | grep -Eq "^\s+mod\s+$module\s+$version\s"; then
    return 0
  fi
  say "building $name $version from the Go module proxy (a few minutes on 2 cores)"
  (cd "$root" && GOBIN="$bin" GOTOOLCHAIN=local GOFLAGS=-mod=mod go install "$module${4:-}@$version")
}
go_install kustomize sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION"
go_install kubeconform github.com/yannh/kubeconform "$KUBECONFORM_VERSION" /cmd/kubeconform

# promql-check: rebuilt when its source or pinned dependencies change.
src="$root/deploy/prometheus/promql-check"
stamp="$bin/.promql-check.sha"
sha="$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -d' ' -f1)"
if [ ! -x "$bin/promql-check" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$sha" ]; then
  say "building promql-check (Prometheus rule/PromQL parsers; a few minutes the first time)"
  (cd "$src" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -o "$bin/promql-check" .)
  echo "$sha" >"$stamp"
fi

if [ ! -f "$schemas/.complete" ]; then
  say "generating kubeconform schemas for Kubernetes $K8S_VERSION and KEDA $KEDA_VERSION"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  # Module downloads need no go.mod; run them from an empty directory so a workspace go.mod is not consulted.
  k8s_dir="$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
  keda_dir="$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "github.com/kedacore/keda/v2@$KEDA_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
  [ -f "$k8s_dir/api/openapi-spec/swagger.json" ] || { say "no OpenAPI spec in $k8s_dir"; exit 1; }
  [ -f "$keda_dir/config/crd/bases/keda.sh_scaledobjects.yaml" ] || { say "no ScaledObject CRD in $keda_dir"; exit 1; }
  rm -rf "$schemas.partial.$$"
  (cd "$root" && npx --no-install tsx tools/src/deploy/k8s-schemas.ts \
    "$k8s_dir/api/openapi-spec/swagger.json" "$schemas.partial.$$" \
    "$keda_dir/config/crd/bases/keda.sh_scaledobjects.yaml" >&2)
  touch "$schemas.partial.$$/.complete"
  if [ -f "$schemas/.complete" ]; then
    rm -rf "$schemas.partial.$$"   # another setup finished first: keep its copy (it may be in use)
  else
    rm -rf "$schemas"
    mv -T "$schemas.partial.$$" "$schemas" || rm -rf "$schemas.partial.$$"
  fi
fi

# Sourced, not run: puts a Go toolchain first in PATH that builds the project's Go pieces (the
# S3 test server, kustomize, kubeconform, the PromQL checker of deploy/prometheus/promql-check,
# whose go.mod needs 1.26.7), fetching it once.
#   source tools/setup/go.sh
#
# A machine whose `go` is at least that version keeps it. Otherwise the pinned toolchain comes
# from the Go module proxy (module golang.org/toolchain, the one `GOTOOLCHAIN` downloads: the
# go.dev binaries, as a module zip) into ~/.cache/sluice, so a machine with no Go at all needs
# nothing but the proxy.

SLUICE_GO_MIN=1.26.7
SLUICE_GO_VERSION=1.26.8

source "$(dirname "${BASH_SOURCE[0]}")/unpack.sh"

# In the directory sluice_unpack_into gives it: the toolchain module zip at $1 ($2 the
# architecture), unpacked as ./out. A module zip keeps no file modes: the binaries are made
# executable as the go command does for toolchains.
sluice_go_fetch() {
  local root="golang.org/toolchain@v0.0.1-go$SLUICE_GO_VERSION.linux-$2"
  curl -fsSL -o go.zip "$1" && unzip -q go.zip && chmod +x "$root"/bin/* "$root"/pkg/tool/*/* && mv -T "$root" out && out/bin/go version >/dev/null
}

sluice_go() {
  local have arch dir proxy zip
  have="$(go env GOVERSION 2>/dev/null || true)"
  have="${have#go}"
  if [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$SLUICE_GO_MIN" "$have" | sort -V | head -n1)" = "$SLUICE_GO_MIN" ]; then return 0; fi
  case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "[go] no Go $SLUICE_GO_VERSION toolchain here for $(uname -m): install Go $SLUICE_GO_MIN or later" >&2; return 1 ;;
  esac
  dir="$HOME/.cache/sluice/go-$SLUICE_GO_VERSION-linux-$arch"
  if [ ! -x "$dir/bin/go" ]; then
    # The first proxy URL of GOPROXY (a list split by "," or "|", whose "direct" and "off" are no
    # URLs), else the public module proxy.
    proxy=https://proxy.golang.org
    local entry
    for entry in $(printf '%s' "${GOPROXY:-}" | tr ',|' '  '); do
      case "$entry" in http://* | https://*) proxy="${entry%/}"; break ;; esac
    done
    command -v curl >/dev/null && command -v unzip >/dev/null || { echo "[go] fetching Go needs curl and unzip (tools/setup/setup.sh installs them)" >&2; return 1; }
    zip="$proxy/golang.org/toolchain/@v/v0.0.1-go$SLUICE_GO_VERSION.linux-$arch.zip"
    echo "[go] ${have:+go $have is older than $SLUICE_GO_MIN; }fetching Go $SLUICE_GO_VERSION from $zip into $dir" >&2
    sluice_unpack_into "$dir" bin/go go "Go $SLUICE_GO_VERSION" "the module proxy" sluice_go_fetch "$zip" "$arch" || return 1
  fi
  export PATH="$dir/bin:$PATH"
  # The pinned toolchain builds everything: never another download behind GOTOOLCHAIN's back.
  export GOTOOLCHAIN=local
}

sluice_go

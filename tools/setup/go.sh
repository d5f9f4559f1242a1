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

sluice_go() {
  local have arch dir tmp proxy zip
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
    # Unpacked beside its final place and renamed whole, as node.sh does. A module zip keeps no
    # file modes: the binaries are made executable as the go command does for toolchains.
    mkdir -p "$(dirname "$dir")"
    tmp="$(mktemp -d "$dir.partial.XXXXXX")"
    if ! (cd "$tmp" && curl -fsSL -o go.zip "$zip" && unzip -q go.zip && root="golang.org/toolchain@v0.0.1-go$SLUICE_GO_VERSION.linux-$arch" \
      && chmod +x "$root"/bin/* "$root"/pkg/tool/*/* && mv -T "$root" go && go/bin/go version >/dev/null); then
      rm -rf "$tmp"
      echo "[go] could not fetch Go $SLUICE_GO_VERSION from the module proxy" >&2
      return 1
    fi
    if ! mv -T "$tmp/go" "$dir" 2>/dev/null && [ ! -x "$dir/bin/go" ]; then
      rm -rf "$tmp"
      echo "[go] could not move Go $SLUICE_GO_VERSION into $dir" >&2
      return 1
    fi
    rm -rf "$tmp"
  fi
  export PATH="$dir/bin:$PATH"
  # The pinned toolchain builds everything: never another download behind GOTOOLCHAIN's back.
  export GOTOOLCHAIN=local
}

sluice_go

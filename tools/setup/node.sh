# Sourced, not run: puts the project's Node.js first in PATH, fetching it once.
#   source tools/setup/node.sh
#
# The images run Node 22 (deploy/Dockerfile); the tests, the local stack and the native addon
# build (librdkafka's binding is built for one Node ABI) run the same major. A machine whose
# `node` is already 22.x keeps it. Otherwise the pinned build below comes from the npm registry
# (package node-linux-<arch>: the nodejs.org binaries and headers) into ~/.cache/sluice, and
# npm_config_nodedir points node-gyp at its headers (it would take /usr/include/node, the
# system Node's, and build an addon the pinned Node refuses to load).

SLUICE_NODE_VERSION=22.23.5

sluice_node() {
  local major="${SLUICE_NODE_VERSION%%.*}" arch dir tmp
  if [[ "$(node -v 2>/dev/null || true)" == "v$major."* ]]; then return 0; fi
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "[node] no Node.js $SLUICE_NODE_VERSION build here for $(uname -m): install Node.js $major" >&2; return 1 ;;
  esac
  dir="$HOME/.cache/sluice/node-$SLUICE_NODE_VERSION-linux-$arch"
  if [ ! -x "$dir/bin/node" ]; then
    echo "[node] fetching Node.js $SLUICE_NODE_VERSION (npm package node-linux-$arch) into $dir" >&2
    # Unpacked beside its final place and renamed there whole (one filesystem, so a rename, not
    # a copy): an interrupted fetch leaves no half a Node, and a concurrent setup that finished
    # first keeps its copy.
    mkdir -p "$(dirname "$dir")"
    tmp="$(mktemp -d "$dir.partial.XXXXXX")"
    if ! (cd "$tmp" && npm pack --silent "node-linux-$arch@$SLUICE_NODE_VERSION" >/dev/null && tar xzf node-linux-*.tgz && package/bin/node -v >/dev/null); then
      rm -rf "$tmp"
      echo "[node] could not fetch Node.js $SLUICE_NODE_VERSION from the npm registry" >&2
      return 1
    fi
    if ! mv -T "$tmp/package" "$dir" 2>/dev/null && [ ! -x "$dir/bin/node" ]; then
      rm -rf "$tmp"
      echo "[node] could not move Node.js $SLUICE_NODE_VERSION into $dir" >&2
      return 1
    fi
    rm -rf "$tmp"
  fi
  export PATH="$dir/bin:$PATH"
  export npm_config_nodedir="$dir"
}

sluice_node

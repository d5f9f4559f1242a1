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

source "$(dirname "${BASH_SOURCE[0]}")/unpack.sh"

# In the directory sluice_unpack_into gives it: the npm package of one architecture's build, as ./out.
sluice_node_fetch() {
  npm pack --silent "node-linux-$1@$SLUICE_NODE_VERSION" >/dev/null && tar xzf node-linux-*.tgz && package/bin/node -v >/dev/null && mv -T package out
}

sluice_node() {
  local major="${SLUICE_NODE_VERSION%%.*}" arch dir
  if [[ "$(node -v 2>/dev/null || true)" == "v$major."* ]]; then return 0; fi
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "[node] no Node.js $SLUICE_NODE_VERSION build here for $(uname -m): install Node.js $major" >&2; return 1 ;;
  esac
  dir="$HOME/.cache/sluice/node-$SLUICE_NODE_VERSION-linux-$arch"
  if [ ! -x "$dir/bin/node" ]; then
    echo "[node] fetching Node.js $SLUICE_NODE_VERSION (npm package node-linux-$arch) into $dir" >&2
    sluice_unpack_into "$dir" bin/node node "Node.js $SLUICE_NODE_VERSION" "the npm registry" sluice_node_fetch "$arch" || return 1
  fi
  export PATH="$dir/bin:$PATH"
  export npm_config_nodedir="$dir"
}

sluice_node

#!/usr/bin/env bash
# Python venv with the independent Delta Lake reader (delta-rs `deltalake` + pyarrow) that the
# libs/lake interoperability tests call as "$HOME/.cache/sluice/venv/bin/python".
# Idempotent: re-running with the venv in place and the pins satisfied does nothing.
set -euo pipefail
venv="${SLUICE_VENV:-$HOME/.cache/sluice/venv}"
pins=("deltalake==1.6.6" "pyarrow==26.0.1")
say() { echo "[setup:python] $*" >&2; }

if [ ! -x "$venv/bin/python" ]; then
  say "creating venv at $venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
fi

stamp="$venv/.sluice-pins"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${pins[*]}" ] \
  && "$venv/bin/python" -c 'import deltalake, pyarrow' 2>/dev/null; then
  exit 0
fi
say "installing ${pins[*]}"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}"
"$venv/bin/python" -c 'import deltalake, pyarrow; print("deltalake", deltalake.__version__, "pyarrow", pyarrow.__version__)' >&2
echo "${pins[*]}" >"$stamp"

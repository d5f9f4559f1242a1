# Sourced by node.sh and go.sh: puts a fetched tool into its own directory whole, or not at all.

# sluice_unpack_into DIR EXE LABEL WHAT FROM FETCH [ARG...]
#   Runs FETCH ARG... in a fresh directory beside DIR; it must leave the tool there as ./out, with
#   DIR/EXE its executable once in place. ./out is then renamed to DIR whole (one filesystem, so a
#   rename, not a copy): an interrupted fetch leaves no half a tool, and a concurrent setup that
#   finished first keeps its copy. WHAT and FROM name the tool and its source in the errors.
sluice_unpack_into() {
  local dir="$1" exe="$2" label="$3" what="$4" from="$5" tmp
  shift 5
  mkdir -p "$(dirname "$dir")"
  tmp="$(mktemp -d "$dir.partial.XXXXXX")"
  if ! (cd "$tmp" && "$@"); then
    rm -rf "$tmp"
    echo "[$label] could not fetch $what from $from" >&2
    return 1
  fi
  if ! mv -T "$tmp/out" "$dir" 2>/dev/null && [ ! -x "$dir/$exe" ]; then
    rm -rf "$tmp"
    echo "[$label] could not move $what into $dir" >&2
    return 1
  fi
  rm -rf "$tmp"
}

#!/usr/bin/env bash
# Schema compatibility gate: every contract's schema history must keep its declared
# compatibility level (BACKWARD / FORWARD / FULL, transitive or not). Exits non-zero on a break,
# with each break explained in plain words.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
exec npx tsx tools/src/schema-gate/cli.ts "$@"

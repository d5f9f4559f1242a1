#!/usr/bin/env bash
# The S3-compatible server for integration tests: SeaweedFS built from the Go module proxy into
# ~/.cache/sluice/bin. Idempotent: does nothing when the pinned version's binary exists.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
exec bash "$root/tools/s3/seaweedfs.sh" install

#!/usr/bin/env bash
# The S3-compatible server integration tests use (SeaweedFS, see tools/s3/seaweedfs.sh), on its
# test port with its data under .sluice/test/s3. `start` prints the SLUICE_TEST_S3_* variables.
#   tools/services.d/10-s3.sh start|stop|status|env
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export S3_PORT="${SLUICE_TEST_S3_PORT:-18333}"
export S3_DATA_DIR="$root/.sluice/test/s3"
exec bash "$root/tools/s3/seaweedfs.sh" "$@"

#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
cd "${RPB_BUILD_DIR:-build}"
ctest --output-on-failure -j"$(nproc)" --timeout 600

#!/usr/bin/env bash
# Builds rpb and runs the benchmarks; every figure is a ratio measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
"${RPB_BUILD_DIR:-build}"/bench_core "$@"

#!/usr/bin/env bash
# Builds rpb and runs the benchmarks; every figure is a ratio measured in the same run:
#   1. bench_core: the core engine against cblas_sgemm and plain Eigen loops;
#   2. bench/compare.py: rpb against PyTorch (eager) on the same models, interleaved, after a parity
#      check; prints the table and writes bench/results.md.
# Arguments go to compare.py (--reps N, --quick, --tune, --cases A,D4096; see its --help); --quick also
# makes bench_core quick. The build folder is $RPB_BUILD_DIR (default build/).
set -euo pipefail
cd "$(dirname "$0")/.."
# The build's packages, and PyTorch with h5py (and tcmalloc, one of the allocators --tune tries under
# PyTorch) from Debian for the comparison only (the library never needs them): deps.sh installs whichever
# are missing, with sudo when not root.
scripts/deps.sh python3-torch python3-h5py libtcmalloc-minimal4
scripts/build.sh -DRPB_BUILD_BENCH=ON
BUILD_DIR=${RPB_BUILD_DIR:-build}

quick=()
for arg in "$@"; do
  [ "$arg" = "--quick" ] && quick=(--quick)
done
"$BUILD_DIR"/bench_core "${quick[@]}"

# Debian's own python: python3-torch installs there, not into a pyenv or venv python first on PATH.
/usr/bin/python3 bench/compare.py --build "$BUILD_DIR" "$@"

#!/usr/bin/env bash
# Builds rpb with MPI and the benchmarks, then measures rpb on MPI on this machine (bench/mpi.py: the allreduce
# against its size, models A and B on 1 process x 2 threads against 2 ranks x 1 thread, the quick sweep on 1 and 2
# ranks, the cost model for N machines) and writes bench/mpi.md. --quick: fewer steps and a shortened sweep.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh -DRPB_BUILD_BENCH=ON
/usr/bin/python3 bench/mpi.py --build "${RPB_BUILD_DIR:-build}" "$@"

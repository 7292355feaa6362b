#!/usr/bin/env bash
# Builds rpb with CUDA and runs the GPU tests (ctest label `cuda`): every op of the registry on the GPU against the
# CPU, forward and backward, the same bits on every run, device tensors, the caching allocator and the optimizers
# (tests/cuda/). A few minutes on a machine with an NVIDIA GPU and the CUDA toolkit; without a GPU ctest reports the
# test as skipped (exit 77). RPB_BUILD_DIR (build-gpu) names the build folder; RPB_CUDA_TESTS names the test program
# when it was built elsewhere.
#   scripts/test_gpu.sh              configure, build and run
#   scripts/test_gpu.sh --no-build   run what an earlier build left, e.g. a program packed by
#                                    ../shared/tools/device-pack.sh build-gpu/rpb_cuda_tests and unpacked on the GPU
#                                    machine: RPB_CUDA_TESTS=/tmp/devpack/bin/rpb_cuda_tests
#                                    LD_LIBRARY_PATH=/tmp/devpack/lib scripts/test_gpu.sh --no-build
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${RPB_BUILD_DIR:-build-gpu}
TESTS=${RPB_CUDA_TESTS:-$BUILD/rpb_cuda_tests}
if [ "${1:-}" != "--no-build" ]; then
  scripts/deps.sh
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DRPB_CUDA=ON -DRPB_BUILD_BENCH=OFF -DRPB_UNITY=ON >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" --target rpb_cuda_tests
fi
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
fi
"$TESTS" --duration=true 2>&1 | tail -n 200

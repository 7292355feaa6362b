#!/usr/bin/env bash
# Builds rpb with CUDA and runs the GPU tests (ctest label `cuda`): every op of the registry on the GPU against the
# CPU, forward and backward, the same bits on every run, device tensors, the caching allocator and the optimizers
# (tests/cuda/). A few minutes on a machine with an NVIDIA GPU and the CUDA toolkit; without a GPU ctest reports the
# test as skipped. RPB_BUILD_DIR (build-gpu) names the build folder.
#   scripts/test_gpu.sh              configure, build and run
#   scripts/test_gpu.sh --no-build   run what an earlier build (or ../shared/tools/device-pack.sh) left
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${RPB_BUILD_DIR:-build-gpu}
if [ "${1:-}" != "--no-build" ]; then
  scripts/deps.sh
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DRPB_CUDA=ON -DRPB_BUILD_BENCH=OFF -DRPB_UNITY=ON >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" --target rpb_cuda_tests
fi
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
fi
"$BUILD/rpb_cuda_tests" --duration=true 2>&1 | tail -n 200

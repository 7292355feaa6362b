// The CUDA tests' runner. `rpb_cuda_tests --emulate` runs them on the emulated backend (the kernels' own code on
// the host: every scripts/test.sh, ctest names cuda_emulated.*); without it they need a GPU (ctest cuda.gpu, label
// cuda, scripts/test_gpu.sh) and the run exits 77, which ctest reports as skipped, when no device answers.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "core/device.h"

int main(int argc, char** argv) {
  bool emulate = false, listing = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--emulate") == 0) {
      emulate = true;
      continue;
    }
    if (std::strncmp(argv[i], "--list", 6) == 0 || std::strncmp(argv[i], "-ltc", 4) == 0) listing = true;
    args.push_back(argv[i]);
  }
  if (emulate) {
    rpb::set_cuda_emulation(true);
  } else if (!listing && rpb::cuda_backend_kind() != rpb::CudaBackendKind::gpu) {
    std::printf("SKIPPED: no GPU answers (%s); --emulate runs these tests on the host\n",
                rpb::cuda_device_description().c_str());
    return 77;
  }
  if (!listing) std::printf("rpb_cuda_tests on %s\n", rpb::cuda_device_description().c_str());
  doctest::Context context(static_cast<int>(args.size()), args.data());
  return context.run();
}

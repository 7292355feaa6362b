// Device names and the choice of the CUDA backend (core/device.h, core/cuda/backend.h).
#include "core/device.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/cuda/backend.h"
#include "core/error.h"

namespace rpb {

namespace cuda {
Backend* make_emulated_backend();  // core/cuda/backend_emulated.cpp
#ifdef RPB_HAVE_CUDA
Backend* make_gpu_backend(std::string* why);  // core/cuda/backend_gpu.cu
std::string gpu_build_description();
#endif
}  // namespace cuda

const char* device_name(Device d) { return d == Device::cuda ? "cuda" : "cpu"; }

Device parse_device(std::string_view text, std::string_view what) {
  if (text == "cpu") return Device::cpu;
  if (text == "cuda") return Device::cuda;
  RPB_FAIL("device", what, ": expected \"cpu\" or \"cuda\", got \"", text, "\"");
}

namespace {

struct Selection {
  std::once_flag once;
  bool emulate_requested = false;
  std::atomic<bool> decided{false};
  cuda::Backend* backend = nullptr;  // never destroyed: storages may outlive static destructors
  std::string why_none;
};

Selection& selection() {
  static Selection* s = new Selection;
  return *s;
}

bool env_emulation() {
  const char* v = std::getenv("RPB_CUDA_EMULATE");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

Selection& decided() {
  Selection& s = selection();
  std::call_once(s.once, [&] {
    if (s.emulate_requested || env_emulation()) {
      s.backend = cuda::make_emulated_backend();
    } else {
#ifdef RPB_HAVE_CUDA
      s.backend = cuda::make_gpu_backend(&s.why_none);
#else
      s.why_none = "CUDA is not in this build (configure with a CUDA toolkit installed, RPB_CUDA=ON)";
#endif
    }
    s.decided = true;
  });
  return s;
}

std::atomic<bool> g_tf32{false};

}  // namespace

bool cuda_built() {
#ifdef RPB_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

CudaBackendKind cuda_backend_kind() {
  const Selection& s = decided();
  return s.backend ? s.backend->kind() : CudaBackendKind::none;
}

bool cuda_available() { return cuda_backend_kind() != CudaBackendKind::none; }

void set_cuda_emulation(bool on) {
  Selection& s = selection();
  RPB_CHECK(!s.decided, "set_cuda_emulation", "the CUDA backend was already chosen (",
            s.backend ? s.backend->describe() : s.why_none, "); call set_cuda_emulation before the first cuda tensor");
  s.emulate_requested = on;
}

std::string cuda_build_description() {
#ifdef RPB_HAVE_CUDA
  return cuda::gpu_build_description();
#else
  return "CUDA not in this build";
#endif
}

std::string cuda_device_description() {
  const Selection& s = decided();
  return s.backend ? s.backend->describe() : "none: " + s.why_none;
}

void set_cuda_tf32(bool on) { g_tf32 = on; }
bool cuda_tf32() { return g_tf32; }

namespace cuda {

Backend& backend(const char* op) {
  Selection& s = decided();
  RPB_CHECK(s.backend != nullptr, op, "a cuda tensor needs a CUDA device, and there is none: ", s.why_none);
  return *s.backend;
}

}  // namespace cuda

}  // namespace rpb

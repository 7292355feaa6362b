// rpb/core/device.h: where a tensor's storage lives (the host or one CUDA GPU) and which CUDA backend serves it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rpb {

/// The device a tensor's storage lives on: the host, or the one CUDA GPU of this process (device 0, or whatever
/// CUDA_VISIBLE_DEVICES names first). Moving between them is explicit (Tensor::to(Device)); an op whose inputs
/// sit on different devices throws, naming the op and both devices.
enum class Device : uint8_t { cpu, cuda };

/// "cpu" or "cuda".
const char* device_name(Device d);
/// Parses "cpu" or "cuda"; throws rpb::Error naming `what` (a key or flag) and the value otherwise.
Device parse_device(std::string_view text, std::string_view what);

/// What runs the kernels of Device::cuda tensors.
enum class CudaBackendKind : uint8_t {
  none,      // CUDA is not in this build, or no GPU answers: a cuda tensor cannot be made
  gpu,       // an NVIDIA GPU, through the CUDA runtime and cuBLAS
  emulated,  // the same kernels' code run on the host, one simulated thread block at a time (tests; slow)
};

/// True when this build has the CUDA backend compiled in (CMake's RPB_CUDA).
bool cuda_built();
/// The backend Device::cuda tensors use, decided once at the first use: `emulated` when set_cuda_emulation(true)
/// was called or the environment sets RPB_CUDA_EMULATE=1, else `gpu` when CUDA is built in and a device answers,
/// else `none`.
CudaBackendKind cuda_backend_kind();
/// True when Device::cuda tensors can be made (cuda_backend_kind() != none).
bool cuda_available();
/// Runs the CUDA kernels' own code on the host instead of a GPU: every per-element and per-block body, with the
/// GPU's block size and reduction order, driven by a host launcher. For tests of the kernels' arithmetic on a
/// machine without a GPU. Must be called before the first cuda tensor exists; throws after.
void set_cuda_emulation(bool on);
/// One line for `rpb --version`: the CUDA toolkit and architectures built in, or that CUDA is not in this build.
std::string cuda_build_description();
/// One line naming the backend and, on a GPU, its name, memory and compute capability. Starts the backend.
std::string cuda_device_description();

/// Whether cuBLAS may use TF32 tensor cores for float32 products (10-bit mantissa inputs, float32 sums): faster,
/// and not bit-equal to float32. Off by default; a run that turns it on must say so in its identity.
void set_cuda_tf32(bool on);
bool cuda_tf32();

}  // namespace rpb

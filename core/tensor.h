// rpb/core/tensor.h: the Tensor handle, its storage and its factories.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <type_traits>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/shape.h"

namespace rpb {

/// Element types. f32 trains, f64 gradient-checks through the same code path,
/// i64 holds indices (tokens, bucket indices, class targets).
enum class DType : uint8_t { f32, f64, i64 };

const char* dtype_name(DType d);
std::size_t dtype_size(DType d);

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, double>) return DType::f64;
  else {
    static_assert(std::is_same_v<T, int64_t>, "rpb tensors hold float, double or int64_t");
    return DType::i64;
  }
}

/// A reference-counted buffer on one device (64-byte aligned on the host). Tensors that are views share one.
/// Large host buffers come from and return to a size-keyed cache (see release_cached_memory); device buffers come
/// from the CUDA backend's caching allocator (core/cuda/caching_allocator.h), which reuses freed blocks the same way.
class Storage {
 public:
  explicit Storage(std::size_t bytes, Device device = Device::cpu);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  /// The buffer's address on its own device (a device pointer for Device::cuda).
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_;
  std::size_t bytes_;
  Device device_;
};

// Memory accounting, per device: the limit and the counters of Device::cuda count device memory.
/// Frees the idle cached buffers of `device` and returns how many bytes that released. On the host, storages of
/// 64 KiB and more are recycled by exact size (at most 1 GiB held idle).
std::size_t release_cached_memory(Device device = Device::cpu);
/// Bytes currently held idle for reuse.
std::size_t cached_memory_bytes(Device device = Device::cpu);
/// Bytes held by live storages (tensors in use, including what the tape saves for backward).
std::size_t live_memory_bytes(Device device = Device::cpu);
/// The most live_memory_bytes() has been since the last reset_peak_memory() (or the start).
std::size_t peak_memory_bytes(Device device = Device::cpu);
/// Starts a new peak at the current live bytes.
void reset_peak_memory(Device device = Device::cpu);
/// Caps live_memory_bytes(device): a storage that would take it past `bytes` is refused before it is allocated,
/// with rpb::Error "storage: allocating N bytes ... over the memory limit". 0 (the default) removes the cap.
void set_memory_limit(std::size_t bytes, Device device = Device::cpu);
/// The cap set_memory_limit set (0: none).
std::size_t memory_limit(Device device = Device::cpu);

struct GradSlot;  // core/autograd.h

/// What a Tensor handle points at. Every tensor is contiguous and row-major;
/// `offset` lets a reshape view share its source's storage.
struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  Shape shape;
  DType dtype = DType::f32;
  /// Set on leaves by requires_grad_() and on the outputs of recorded ops.
  /// Holds the gradient; the tape shares it, so a node never keeps the output's data alive.
  std::shared_ptr<GradSlot> slot;
};

/// A shared handle to a tensor: copying a Tensor copies the handle, not the data.
///
/// @code
/// rpb::Tensor a = rpb::Tensor::from_vector({2, 2}, std::vector<float>{1, 2, 3, 4});
/// a.requires_grad_();
/// rpb::Tensor y = rpb::sum(a * a);      // 1 + 4 + 9 + 16
/// CHECK(y.item() == 30.0);
/// rpb::backward(y);                     // dy/da = 2a
/// CHECK(a.grad().to_vector() == std::vector<double>{2, 4, 6, 8});
/// @endcode
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- factories (on the host unless a device is given) ----
  /// Uninitialised contents.
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor scalar(double value, DType dtype = DType::f32, Device device = Device::cpu);
  /// Copies `values` (row-major); their count must equal shape.numel().
  template <typename T>
  static Tensor from_vector(const Shape& shape, const std::vector<T>& values);
  /// An i64 tensor of indices.
  static Tensor indices(const Shape& shape, const std::vector<int64_t>& values);
  /// 0, 1, ..., n-1.
  static Tensor arange(int64_t n, DType dtype = DType::f32);

  // ---- properties ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  int dim() const { return impl().shape.size(); }
  /// Extent of axis `d`; negative counts from the end.
  int64_t size(int d) const { return impl().shape[impl().shape.axis(d)]; }
  int64_t numel() const { return impl().shape.numel(); }
  DType dtype() const { return impl().dtype; }
  bool is_floating() const { return dtype() != DType::i64; }
  /// Where the storage lives.
  Device device() const { return impl().storage->device(); }
  bool is_cuda() const { return device() == Device::cuda; }

  // ---- data ----
  /// Typed host pointer to the first element; throws if T does not match dtype() or the tensor is not on the
  /// host (code that reads elements on the host must move a cuda tensor first, with to(Device::cpu)).
  template <typename T>
  const T* data() const;
  template <typename T>
  T* mutable_data() const;
  /// Typed pointer to the first element on the tensor's own device (a device pointer for a cuda tensor), for
  /// kernels; throws if T does not match dtype().
  template <typename T>
  T* device_data() const;
  /// Untyped pointers on the tensor's own device.
  const void* raw_data() const;
  void* raw_mutable_data() const;
  /// The single value of a one-element tensor (copied to the host from a cuda tensor).
  double item() const;
  /// One element by its multi-index (copied to the host from a cuda tensor).
  double at(std::initializer_list<int64_t> index) const;
  /// All values, converted to double (copied to the host from a cuda tensor).
  std::vector<double> to_vector() const;
  /// A deep copy on the same device that does not take part in autograd.
  Tensor clone() const;
  /// A copy converted to `dtype`, on the same device; not recorded on the tape.
  Tensor to(DType dtype) const;
  /// A copy on `device` (the tensor itself when it is there already: moving is explicit, and cheap when it is
  /// not needed). Not recorded on the tape: a moved tensor is a new leaf.
  ///
  /// @code
  /// const rpb::Tensor x = rpb::Tensor::from_vector<float>({2}, {1, 2});
  /// CHECK(x.to(rpb::Device::cpu).shares_storage(x));
  /// if (rpb::cuda_available()) {
  ///   const rpb::Tensor y = x.to(rpb::Device::cuda);
  ///   CHECK(y.device() == rpb::Device::cuda);
  ///   CHECK(y.to(rpb::Device::cpu).to_vector() == std::vector<double>{1, 2});
  /// }
  /// @endcode
  Tensor to(Device device) const;
  /// Overwrites the contents with `src` (same shape; dtype converted; either device). Not recorded.
  void copy_(const Tensor& src) const;
  /// Sets every element to `value`. Not recorded.
  void fill_(double value) const;
  /// True when both handles share a storage (a view or the same tensor).
  bool shares_storage(const Tensor& other) const;
  /// Identifies the buffer this tensor reads: equal for a tensor and its views (shares_storage),
  /// different for tensors with buffers of their own. Compare it; never dereference it.
  const void* storage_id() const;

  // ---- in-place changes of what the handle points at (every copy of the handle sees them) ----
  /// Converts the contents to `dtype` in place: the handle, and every copy of it, stays valid
  /// (Module::to relies on this). A tensor that requires grad keeps requiring it, now in `dtype`,
  /// and its accumulated gradient is dropped; it can only become float32 or float64. Views made
  /// earlier keep the old buffer. Not recorded on the tape; a no-op when the dtype already matches.
  /// Defined in core/autograd.cpp, since it resets the gradient slot.
  void to_(DType dtype) const;
  /// Moves the contents to `device` in place, as to_(DType) converts them: every copy of the handle then reads the
  /// moved storage (Module::to(Device) relies on this). A tensor that requires grad keeps requiring it, and its
  /// accumulated gradient is dropped. Views made earlier keep the old storage. Not recorded on the tape.
  void to_(Device device) const;
  /// Points this handle at `src`'s storage, offset, shape and dtype, like torch's Tensor.set_:
  /// every copy of the handle then reads src's elements and becomes a view of src (writes through
  /// either are seen by both). Not recorded on the tape, and this tensor does not join src's graph.
  /// Throws if this tensor requires grad (its gradient slot has the old shape and dtype).
  ///
  /// @code
  /// rpb::Tensor buffer = rpb::Tensor::zeros({2});
  /// const rpb::Tensor alias = buffer;  // a second copy of the handle, as a module's buffer list keeps
  /// buffer.set_(rpb::Tensor::arange(3, rpb::DType::f64));
  /// CHECK(alias.shape() == rpb::Shape{3});
  /// CHECK(alias.dtype() == rpb::DType::f64);
  /// CHECK(alias.to_vector() == std::vector<double>{0, 1, 2});
  /// @endcode
  void set_(const Tensor& src) const;

  // ---- autograd (defined in core/autograd.cpp, next to the gradient slots they read) ----
  bool requires_grad() const { return defined() && impl().slot != nullptr; }
  /// Marks a leaf as trainable: backward() accumulates into grad() (sums over calls until zero_grad()).
  Tensor& requires_grad_(bool on = true);
  /// True for tensors created by the user rather than by a recorded op.
  bool is_leaf() const;
  /// The accumulated gradient (undefined before any backward reached this tensor).
  Tensor grad() const;
  /// Drops the accumulated gradient.
  void zero_grad() const;
  /// Shares the data, leaves the graph: the result never requires grad.
  Tensor detach() const;

  TensorImpl& impl() const {
    RPB_CHECK(impl_ != nullptr, "tensor", "use of an undefined tensor");
    return *impl_;
  }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

/// Prints dtype, shape and (up to 64) values.
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- template definitions ----
template <typename T>
T* Tensor::device_data() const {
  RPB_CHECK(dtype() == dtype_of<T>(), "tensor.data", "tensor of dtype ", dtype_name(dtype()),
            " read as ", dtype_name(dtype_of<T>()), ", shape ", shape());
  return static_cast<T*>(impl().storage->data()) + impl().offset;
}

template <typename T>
const T* Tensor::data() const {
  RPB_CHECK(device() == Device::cpu, "tensor.data", "a ", device_name(device()), " tensor (", dtype_name(dtype()),
            " ", shape(), ") read on the host; move it with to(Device::cpu) first");
  return device_data<T>();
}

template <typename T>
T* Tensor::mutable_data() const {
  return const_cast<T*>(data<T>());
}

template <typename T>
Tensor Tensor::from_vector(const Shape& shape, const std::vector<T>& values) {
  RPB_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "from_vector", "shape ", shape,
            " needs ", shape.numel(), " values, got ", values.size());
  Tensor t = empty(shape, dtype_of<T>());
  std::copy(values.begin(), values.end(), t.mutable_data<T>());
  return t;
}

}  // namespace rpb

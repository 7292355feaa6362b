#include "core/tensor.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "core/checked.h"
#include "core/cuda/backend.h"
#include "core/dispatch.h"

namespace rpb {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::i64: return "int64";
  }
  return "?";
}

std::size_t dtype_size(DType d) { return d == DType::f32 ? 4 : 8; }

namespace {

// Large buffers are recycled by exact (page-rounded) size: a training step allocates
// the same sizes every step, and fresh large allocations cost page faults
// (a 1 MiB output of a 512x512 matmul would otherwise fault in 256 pages per call).
class BlockCache {
 public:
  static constexpr std::size_t kMinBytes = std::size_t{64} << 10;
  static constexpr std::size_t kAlign = 64;

  static std::size_t rounded(std::size_t bytes) {
    if (bytes < kMinBytes) return std::max<std::size_t>(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
    return (bytes + 4095) / 4096 * 4096;
  }

  void* get(std::size_t size) {
    if (size >= kMinBytes) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(size);
      if (it != free_.end()) {
        void* p = it->second;
        free_.erase(it);
        cached_ -= size;
        return p;
      }
    }
    return std::aligned_alloc(kAlign, size);
  }

  void put(void* p, std::size_t size) {
    if (size >= kMinBytes) {
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_ + size <= limit_) {
        free_.emplace(size, p);
        cached_ += size;
        return;
      }
    }
    std::free(p);
  }

  std::size_t release() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, p] : free_) std::free(p);
    free_.clear();
    const std::size_t n = cached_;
    cached_ = 0;
    return n;
  }

  std::size_t cached() {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_;
  }

 private:
  std::mutex mu_;
  std::multimap<std::size_t, void*> free_;
  std::size_t cached_ = 0;
  std::size_t limit_ = std::size_t{1} << 30;  // never hold more than 1 GiB of idle buffers
};

BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache;  // never destroyed: storages may outlive static destructors
  return *cache;
}

}  // namespace

namespace {
// Held by live storages, per device (index: Device), and the caps (0: none).
std::atomic<std::size_t> g_live_bytes[2] = {0, 0}, g_peak_bytes[2] = {0, 0}, g_limit_bytes[2] = {0, 0};
constexpr double kMiB = 1024.0 * 1024.0;
int index_of(Device d) { return d == Device::cuda ? 1 : 0; }
}  // namespace

void set_memory_limit(std::size_t bytes, Device d) { g_limit_bytes[index_of(d)].store(bytes); }
std::size_t memory_limit(Device d) { return g_limit_bytes[index_of(d)].load(); }

std::size_t release_cached_memory(Device d) {
  if (d == Device::cpu) return block_cache().release();
  return cuda_available() ? cuda::backend("release_cached_memory").empty_cache() : 0;
}
std::size_t live_memory_bytes(Device d) { return g_live_bytes[index_of(d)].load(); }
std::size_t peak_memory_bytes(Device d) { return g_peak_bytes[index_of(d)].load(); }
void reset_peak_memory(Device d) { g_peak_bytes[index_of(d)].store(g_live_bytes[index_of(d)].load()); }
std::size_t cached_memory_bytes(Device d) {
  if (d == Device::cpu) return block_cache().cached();
  return cuda_available() ? cuda::backend("cached_memory_bytes").cached_bytes() : 0;
}

Storage::Storage(std::size_t bytes, Device device) : bytes_(bytes), device_(device) {
  const int k = index_of(device);
  const std::size_t limit = g_limit_bytes[k].load(), live_before = g_live_bytes[k].load();
  RPB_CHECK(limit == 0 || (bytes <= limit && live_before <= limit - bytes), "storage", "allocating ", bytes,
            " bytes (", static_cast<double>(bytes) / kMiB, " MiB) on ", device_name(device), " with ",
            static_cast<double>(live_before) / kMiB, " MiB held would go over the memory limit of ",
            static_cast<double>(limit) / kMiB, " MiB");
  if (device == Device::cpu) {
    data_ = block_cache().get(BlockCache::rounded(bytes));
    RPB_CHECK(data_ != nullptr, "storage", "out of memory allocating ", bytes, " bytes");
  } else {
    data_ = cuda::backend("storage").allocate(bytes);
  }
  const std::size_t live = g_live_bytes[k].fetch_add(bytes_) + bytes_;
  std::size_t peak = g_peak_bytes[k].load();
  while (live > peak && !g_peak_bytes[k].compare_exchange_weak(peak, live)) {
  }
}

Storage::~Storage() {
  g_live_bytes[index_of(device_)].fetch_sub(bytes_);
  if (device_ == Device::cpu) block_cache().put(data_, BlockCache::rounded(bytes_));
  else cuda::backend("storage").release(data_, bytes_);
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  int64_t elements = 1;
  for (int i = 0; i < shape.size(); ++i) elements = checked_mul(elements, shape[i], "tensor", "element count");
  impl->storage = std::make_shared<Storage>(static_cast<std::size_t>(
      checked_mul(elements, static_cast<int64_t>(dtype_size(dtype)), "tensor", "byte size")), device);
  impl->shape = shape;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }
Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }
Tensor Tensor::scalar(double value, DType dtype, Device device) { return full(Shape{}, value, dtype, device); }

Tensor Tensor::indices(const Shape& shape, const std::vector<int64_t>& values) {
  return from_vector<int64_t>(shape, values);
}

Tensor Tensor::arange(int64_t n, DType dtype) {
  Tensor t = empty(Shape{n}, dtype);
  dispatch_all(dtype, "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.mutable_data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(i);
  });
  return t;
}

const void* Tensor::raw_data() const {
  return static_cast<const char*>(impl().storage->data()) + impl().offset * dtype_size(dtype());
}

void* Tensor::raw_mutable_data() const { return const_cast<void*>(raw_data()); }

double Tensor::item() const {
  RPB_CHECK(numel() == 1, "item", "tensor of shape ", shape(), " has ", numel(), " elements, expected 1");
  return to_vector()[0];
}

Tensor Tensor::to(Device target) const {
  if (device() == target) return *this;
  Tensor t = empty(shape(), dtype(), target);
  t.copy_(*this);
  return t;
}

double Tensor::at(std::initializer_list<int64_t> index) const {
  if (is_cuda()) return to(Device::cpu).at(index);
  RPB_CHECK(static_cast<int>(index.size()) == dim(), "at", "index of ", index.size(),
            " coordinates for shape ", shape());
  const Shape st = contiguous_strides(shape());
  int64_t off = 0;
  int d = 0;
  for (int64_t i : index) {
    RPB_CHECK(i >= 0 && i < shape()[d], "at", "index ", i, " out of range for axis ", d, " of shape ", shape());
    off += i * st[d++];
  }
  double v = 0;
  dispatch_all(dtype(), "at", [&](auto tag) {
    using T = typename decltype(tag)::type;
    v = static_cast<double>(data<T>()[off]);
  });
  return v;
}

std::vector<double> Tensor::to_vector() const {
  if (is_cuda()) return to(Device::cpu).to_vector();
  std::vector<double> out(static_cast<std::size_t>(numel()));
  dispatch_all(dtype(), "to_vector", [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::copy(data<T>(), data<T>() + numel(), out.begin());
  });
  return out;
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape(), dtype(), device());
  if (is_cuda()) {
    t.copy_(*this);
    return t;
  }
  std::memcpy(t.raw_mutable_data(), raw_data(), static_cast<std::size_t>(numel()) * dtype_size(dtype()));
  return t;
}

Tensor Tensor::to(DType target) const {
  Tensor t = empty(shape(), target, device());
  t.copy_(*this);
  return t;
}

void Tensor::copy_(const Tensor& src) const {
  RPB_CHECK(src.shape() == shape(), "copy_", "source shape ", src.shape(), " differs from destination ", shape());
  if (is_cuda() || src.is_cuda()) {
    if (numel() == 0) return;
    cuda::Backend& b = cuda::backend("copy_");
    if (src.dtype() == dtype()) {
      b.copy(raw_mutable_data(), device(), src.raw_data(), src.device(), static_cast<std::size_t>(numel()) * dtype_size(dtype()));
    } else if (device() == src.device()) {
      b.cast(src.dtype(), src.raw_data(), dtype(), raw_mutable_data(), numel());
    } else {
      copy_(src.to(device()));  // move first, then convert on this tensor's device
    }
    return;
  }
  dispatch_all(dtype(), "copy_", [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    dispatch_all(src.dtype(), "copy_", [&](auto stag) {
      using S = typename decltype(stag)::type;
      const S* s = src.data<S>();
      std::transform(s, s + numel(), mutable_data<D>(), [](S v) { return static_cast<D>(v); });
    });
  });
}

void Tensor::fill_(double value) const {
  if (is_cuda()) {
    cuda::backend("fill_").fill(dtype(), raw_mutable_data(), numel(), value);
    return;
  }
  dispatch_all(dtype(), "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::fill_n(mutable_data<T>(), numel(), static_cast<T>(value));
  });
}

bool Tensor::shares_storage(const Tensor& other) const {
  return defined() && other.defined() && impl().storage == other.impl().storage;
}

const void* Tensor::storage_id() const { return impl().storage.get(); }

void Tensor::set_(const Tensor& src) const {
  RPB_CHECK(!requires_grad(), "set_", "cannot repoint a tensor that requires grad (shape ", shape(), ", ",
            dtype_name(dtype()), ")");
  const TensorImpl& from = src.impl();
  TensorImpl& self = impl();
  self.storage = from.storage;
  self.offset = from.offset;
  self.shape = from.shape;
  self.dtype = from.dtype;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "Tensor(undefined)";
  os << "Tensor(" << dtype_name(t.dtype()) << ", " << t.shape() << ", [";
  const std::vector<double> v = t.to_vector();
  const std::size_t n = std::min<std::size_t>(v.size(), 64);
  for (std::size_t i = 0; i < n; ++i) os << (i ? ", " : "") << v[i];
  if (v.size() > n) os << ", ...";
  return os << "])";
}

}  // namespace rpb

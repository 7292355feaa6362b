// Inverted dropout. Forward and backward side by side.
#include "core/ops.h"
#include "core/ops/kernels.h"
#include "core/rng.h"

namespace rpb {

Tensor dropout(const Tensor& x, double p, Generator& gen, bool training) {
  RPB_CHECK(x.is_floating(), "dropout", "expected a float tensor, got ", dtype_name(x.dtype()), " ", x.shape());
  RPB_CHECK(p >= 0.0 && p < 1.0, "dropout", "p must be in [0, 1), got ", p, " for input ", x.shape());
  if (!training || p == 0.0) return x;  // identity: nothing recorded, so x itself is safe to return
  // The mask holds 0 for dropped elements and 1/(1-p) for kept ones; it is also the backward's factor.
  Tensor mask = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.is_cuda()) {
    // Counter-based masks (Philox keyed by one draw of gen, counted by position): the same draw gives the same
    // mask on every run, independent of how the GPU schedules the threads. They differ from the CPU's masks.
    cuda::backend("dropout").dropout(x.dtype(), x.raw_data(), out.raw_mutable_data(), mask.raw_mutable_data(),
                                     x.numel(), p, gen.next_u64());
  } else dispatch_float(x.dtype(), "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T scale = static_cast<T>(1.0 / (1.0 - p));
    T* pm = mask.mutable_data<T>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) pm[i] = gen.uniform() >= p ? scale : T(0);
    amap<T>(out) = camap<T>(x) * camap<T>(mask);
  });
  if (autograd::should_record({&x}))
    autograd::record(OpKind::Dropout, out, {&x},
                     [mask](const Tensor& g, InputGrads& gi) { gi.set(0, mul(g, mask)); });  // either device
  return out;
}

}  // namespace rpb

// Cross-entropy: fused log_softmax + NLL over the last axis. Forward and backward side by side.
//
// The forward saves the logits and each row's logsumexp; the backward recomputes
// softmax = exp(logits - lse) from them rather than keeping a probability tensor.
#include <cmath>

#include "core/ops.h"
#include "core/ops/kernels.h"

namespace rpb {

namespace {

// The multi-index of flat position `flat` in `shape`, printed as [i, j, ...].
std::string index_string(const Shape& shape, int64_t flat) {
  Shape idx = shape;
  for (int d = shape.size() - 1; d >= 0; --d) {
    idx[d] = shape[d] > 0 ? flat % shape[d] : 0;
    flat = shape[d] > 0 ? flat / shape[d] : 0;
  }
  return idx.to_string();
}

// The CUDA path: the same checks and formulas (core/cuda/kernels/rows.h); the loss and the count of counted rows
// stay on the device, and the backward reads both there.
Tensor cross_entropy_cuda(const Tensor& logits, const Tensor& target, int64_t ignore_index) {
  const int64_t C = logits.size(-1), R = target.numel();
  cuda::Backend& b = cuda::backend("cross_entropy");
  const int64_t bad = b.first_out_of_range(target.device_data<int64_t>(), R, C, ignore_index);
  RPB_CHECK(bad < 0, "cross_entropy", "target value ", static_cast<int64_t>(reshape(target, {-1}).at({bad})),
            " at position ", index_string(target.shape(), bad), " is out of range [0, ", C, ") for logits of shape ",
            logits.shape());
  Tensor lse = Tensor::empty(Shape{R}, logits.dtype(), Device::cuda);
  Tensor out = Tensor::empty(Shape{}, logits.dtype(), Device::cuda);
  Tensor count = Tensor::empty(Shape{}, DType::i64, Device::cuda);
  b.cross_entropy(logits.dtype(), logits.raw_data(), target.device_data<int64_t>(), lse.raw_mutable_data(),
                  out.raw_mutable_data(), count.device_data<int64_t>(), R, C, ignore_index);
  if (autograd::should_record({&logits}))
    autograd::record(OpKind::CrossEntropy, out, {&logits},
                     [x = logits.detach(), target, lse, count, ignore_index, C, R](const Tensor& g, InputGrads& gi) {
                       Tensor dx = Tensor::empty(x.shape(), x.dtype(), Device::cuda);
                       cuda::backend("cross_entropy")
                           .cross_entropy_backward(x.dtype(), x.raw_data(), target.device_data<int64_t>(),
                                                   lse.raw_data(), g.raw_data(),
                                                   count.device_data<int64_t>(), dx.raw_mutable_data(), R, C,
                                                   ignore_index);
                       gi.set(0, dx);
                     });
  return out;
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index) {
  RPB_CHECK(logits.is_floating(), "cross_entropy", "logits must be float, got ", dtype_name(logits.dtype()), " ",
            logits.shape());
  RPB_CHECK(logits.dim() >= 1, "cross_entropy", "logits need a class axis, got a 0-D tensor");
  RPB_CHECK(target.dtype() == DType::i64, "cross_entropy", "target must be an int64 tensor, got ", dtype_name(target.dtype()),
            " ", target.shape());
  Shape expect = logits.shape();
  expect.erase(expect.size() - 1);
  RPB_CHECK(target.shape() == expect, "cross_entropy", "target of shape ", target.shape(), " for logits of shape ",
            logits.shape(), ": expected ", expect);
  const int64_t C = logits.size(-1);
  const int64_t R = target.numel();
  if (cuda::on_cuda("cross_entropy", {&logits, &target})) return cross_entropy_cuda(logits, target, ignore_index);
  const int64_t* pt = target.data<int64_t>();
  int64_t count = 0;
  for (int64_t r = 0; r < R; ++r) {
    const int64_t t = pt[r];
    if (t == ignore_index) continue;
    RPB_CHECK(t >= 0 && t < C, "cross_entropy", "target value ", t, " at position ", index_string(expect, r),
              " is out of range [0, ", C, ") for logits of shape ", logits.shape());
    ++count;
  }

  Tensor lse = Tensor::empty(Shape{R}, logits.dtype());
  double total = 0.0;  // accumulated in double whatever the dtype
  dispatch_float(logits.dtype(), "cross_entropy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = logits.data<T>();
    T* pl = lse.mutable_data<T>();
    for (int64_t r = 0; r < R; ++r) {
      if (pt[r] == ignore_index) {
        pl[r] = T(0);
        continue;
      }
      const ConstArrayMap<T> x(px + r * C, C);
      const T m = x.maxCoeff();
      pl[r] = m + std::log((x - m).exp().sum());
      total += static_cast<double>(pl[r]) - static_cast<double>(x[pt[r]]);
    }
  });
  Tensor out = Tensor::scalar(count > 0 ? total / static_cast<double>(count) : 0.0, logits.dtype());

  if (autograd::should_record({&logits}))
    autograd::record(OpKind::CrossEntropy, out, {&logits},
                     [x = logits.detach(), target, lse, count, ignore_index, C, R](const Tensor& g, InputGrads& gi) {
                       // d loss / d x_r = (softmax(x_r) - onehot(t_r)) / count for each counted row r.
                       Tensor dx = Tensor::zeros(x.shape(), x.dtype());
                       if (count > 0)
                         dispatch_float(x.dtype(), "cross_entropy", [&](auto tag) {
                           using T = typename decltype(tag)::type;
                           const T scale = static_cast<T>(g.item() / static_cast<double>(count));
                           const T* px = x.data<T>();
                           const T* pl = lse.data<T>();
                           const int64_t* pt = target.data<int64_t>();
                           T* pd = dx.mutable_data<T>();
                           for (int64_t r = 0; r < R; ++r) {
                             if (pt[r] == ignore_index) continue;
                             ArrayMap<T>(pd + r * C, C) = (ConstArrayMap<T>(px + r * C, C) - pl[r]).exp() * scale;
                             pd[r * C + pt[r]] -= scale;
                           }
                         });
                       gi.set(0, dx);
                     });
  return out;
}

}  // namespace rpb

// fused_attention on Device::cuda: the host side of core/cuda/kernels/attention.h. The inputs' shapes were checked
// by core/ops/attention.cpp (geometry_of); this file moves the bias's host-side parts to the device (the ratio
// form of a bias computed by tiles, the padding mask as the call's dtype), launches the forward, and records the
// backward, whose table gradient and tile sums come back in double, summed in a fixed order on the device.
#include <memory>
#include <string>
#include <vector>

#include "core/cuda/backend.h"
#include "core/ops/attention_cuda.h"

namespace rpb {

namespace {

// The device arrays of a ratio bias (kept alive while the call's backward may read them).
struct RatioArrays {
  Tensor u, w, kinks, slope, intercept, du;
};

Tensor device_doubles(const std::vector<double>& v) {
  if (v.empty()) return Tensor();
  return Tensor::from_vector<double>({static_cast<int64_t>(v.size())}, v).to(Device::cuda);
}
const double* doubles(const Tensor& t) { return t.defined() ? static_cast<const double*>(t.raw_data()) : nullptr; }

// The ratio form of `tiles` on the device, into c.ratio.
RatioArrays upload_ratio(const BiasTiles& tiles, bool with_grad, cuda::AttentionCall& c) {
  const std::shared_ptr<const PiecewiseRatioBias> f = tiles.ratio_form();
  RPB_CHECK(f != nullptr, "fused_attention", "this bias computed by tiles has no CUDA form (BiasTiles::ratio_form): "
            "it attends on the CPU, or through the composite path with its full bias");
  RPB_CHECK(f->w.size() == static_cast<std::size_t>(c.Tq) && f->slope.size() == (2 * f->kinks.size() + 1) * c.H &&
                f->intercept.size() == (f->kinks.size() + 1) * c.H && (!with_grad || f->du.size() == f->u.size()),
            "fused_attention", "the ratio form's arrays (w ", f->w.size(), ", slope ", f->slope.size(),
            ", intercept ", f->intercept.size(), ") do not fit ", c.Tq, " queries and ", c.H, " heads");
  RatioArrays r{device_doubles(f->u), device_doubles(f->w), device_doubles(f->kinks), device_doubles(f->slope),
                device_doubles(f->intercept), with_grad ? device_doubles(f->du) : Tensor()};
  c.ratio.u = doubles(r.u), c.ratio.w = doubles(r.w), c.ratio.kinks = doubles(r.kinks);
  c.ratio.slope = doubles(r.slope), c.ratio.intercept = doubles(r.intercept), c.ratio.du = doubles(r.du);
  c.ratio.K = static_cast<int64_t>(f->kinks.size());
  c.ratio.single = f->single;
  c.has_ratio = true;
  return r;
}

// What backward reads.
struct SavedCuda {
  cuda::AttentionCall call;
  Tensor q, k, v, rel, score, padded, out, lse;
  std::shared_ptr<const BiasTiles> tiles;
  RatioArrays ratio;
};

void backward_cuda(const SavedCuda& s, const Tensor& grad, InputGrads& gi) {
  const cuda::AttentionCall& c = s.call;
  const DType dt = s.q.dtype();
  Tensor dq = Tensor::empty(s.q.shape(), dt, Device::cuda);
  Tensor dk = c.packed ? dq : Tensor::empty(s.k.shape(), dt, Device::cuda);
  Tensor dv = c.packed ? dq : Tensor::empty(s.v.shape(), dt, Device::cuda);
  const bool need_rel = gi.needed(3), need_tiles = tile_grads_needed(s.tiles.get(), gi);
  Tensor drel = need_rel ? Tensor::empty({c.H, c.R}, DType::f64, Device::cuda) : Tensor();
  const int64_t head_slots = need_tiles ? 2 * c.ratio.buckets() + 2 * c.Tq : 0;
  Tensor ratio_acc = need_tiles ? Tensor::empty({c.H, head_slots}, DType::f64, Device::cuda) : Tensor();
  if (s.q.numel() > 0)
    cuda::backend("fused_attention")
        .attention_backward(dt, c, s.q.raw_data(), c.packed ? s.q.raw_data() : s.k.raw_data(),
                            c.packed ? s.q.raw_data() : s.v.raw_data(), s.out.raw_data(), s.lse.raw_data(),
                            grad.raw_data(), dq.raw_mutable_data(), dk.raw_mutable_data(), dv.raw_mutable_data(),
                            need_rel ? static_cast<double*>(drel.raw_mutable_data()) : nullptr,
                            need_tiles ? static_cast<double*>(ratio_acc.raw_mutable_data()) : nullptr);
  if (gi.needed(0)) gi.set(0, dq);
  if (!c.packed && gi.needed(1)) gi.set(1, dk);
  if (!c.packed && gi.needed(2)) gi.set(2, dv);
  if (need_rel) gi.set(3, dt == DType::f64 ? drel : drel.to(dt));
  if (need_tiles) set_tile_grads(*s.tiles, ratio_acc.to_vector(), gi);
}

}  // namespace

bool fused_attention_supported(Device device, DType dtype, int64_t head_dim) {
  if (device == Device::cpu) return true;
  if (dtype == DType::f32) return cuda::AttnSmem<float>::bytes(head_dim) <= cuda::kAttnMaxShared;
  if (dtype == DType::f64) return cuda::AttnSmem<double>::bytes(head_dim) <= cuda::kAttnMaxShared;
  return false;
}

Tensor fused_attention_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const RelativeBias& bias,
                            const Tensor& key_padding, const Tensor& score_bias, cuda::AttentionCall c,
                            BackwardFn* backward) {
  RPB_CHECK(q.dtype() == DType::f32 || q.dtype() == DType::f64, "fused_attention",
            "on CUDA expects float32 or float64, got ", dtype_name(q.dtype()), " ", q.shape());
  // Every tensor is contiguous: the kernels read them where they are.
  const Tensor &rel = bias.table, &score = score_bias;
  const Tensor padded = key_padding.defined() ? key_padding.to(q.dtype()) : Tensor();
  c.rel = rel.defined() ? rel.raw_data() : nullptr;
  c.score = score.defined() ? score.raw_data() : nullptr;
  c.padded = padded.defined() ? padded.raw_data() : nullptr;
  RatioArrays ratio;
  if (bias.tiles) ratio = upload_ratio(*bias.tiles, !bias.tiles->parameters().empty(), c);
  Tensor out = Tensor::empty(c.packed ? Shape{c.B, c.Tq, c.H, c.dh} : q.shape(), q.dtype(), Device::cuda);
  Tensor lse = Tensor::empty({c.B, c.H, c.Tq}, q.dtype(), Device::cuda);
  if (q.numel() > 0 && out.numel() > 0)
    cuda::backend("fused_attention")
        .attention_forward(q.dtype(), c, q.raw_data(), c.packed ? q.raw_data() : k.raw_data(),
                           c.packed ? q.raw_data() : v.raw_data(), out.raw_mutable_data(), lse.raw_mutable_data());
  if (backward) {
    auto detached = [](const Tensor& t) { return t.defined() ? t.detach() : Tensor(); };
    auto saved = std::make_shared<const SavedCuda>(SavedCuda{c, q.detach(), detached(k), detached(v), detached(rel),
                                                             detached(score), padded, out.detach(), lse, bias.tiles,
                                                             ratio});
    *backward = [saved](const Tensor& grad, InputGrads& gi) { backward_cuda(*saved, grad, gi); };
  }
  return out;
}

}  // namespace rpb

// Layer normalization over the last axis, fused (as llm.c): the forward saves the
// per-row mean and rstd, the backward recomputes xhat from the saved input.
#include <cmath>

#include "core/ops.h"
#include "core/ops/kernels.h"

namespace rpb {

namespace {

void check_affine(const char* what, const Tensor& p, const Tensor& x) {
  if (!p.defined()) return;
  RPB_CHECK(p.dtype() == x.dtype(), "layer_norm", what, " of dtype ", dtype_name(p.dtype()), " for an input of dtype ",
            dtype_name(x.dtype()));
  RPB_CHECK(p.shape() == Shape{x.size(-1)}, "layer_norm", what, " of shape ", p.shape(), " for input ", x.shape(),
            ": expected [", x.size(-1), "]");
}

// Rows per for_blocks block: about kElementBlock elements, fixed by the row length alone.
int64_t rows_per_block(int64_t C) { return std::max<int64_t>(1, kElementBlock / C); }

// The backward rule, from the saved rows and their statistics.
void layer_norm_backward(const Tensor& saved_x, const Tensor& saved_w, const Tensor& mean, const Tensor& rstd,
                         int64_t C, int64_t R, const Tensor& g, InputGrads& gi) {
  // xhat = (x - mean) * rstd, dn = g * w:
  // dx = rstd * (dn - mean(dn) - xhat * mean(dn * xhat)), dw = sum_rows g * xhat, db = sum_rows g.
  const bool gx = gi.needed(0), gw = gi.needed(1), gb = gi.needed(2);
  if (cuda::on_cuda("layer_norm", {&g, &saved_x, &saved_w, &mean, &rstd})) {
    Tensor dx = gx ? Tensor::empty(g.shape(), g.dtype(), Device::cuda) : Tensor();
    Tensor dw = gw ? Tensor::empty(Shape{C}, g.dtype(), Device::cuda) : Tensor();
    Tensor db = gb ? Tensor::empty(Shape{C}, g.dtype(), Device::cuda) : Tensor();
    const auto ptr = [](const Tensor& t) { return t.defined() ? t.raw_mutable_data() : nullptr; };
    cuda::backend("layer_norm").layer_norm_backward(g.dtype(), g.raw_data(), ptr(saved_x), ptr(saved_w), mean.raw_data(),
                                                    rstd.raw_data(), ptr(dx), ptr(dw), ptr(db), R, C);
    if (gx) gi.set(0, dx);
    if (gw) gi.set(1, dw);
    if (gb) gi.set(2, db);
    return;
  }
  Tensor dx = gx ? Tensor::empty(g.shape(), g.dtype()) : Tensor();
  Tensor dw = gw ? Tensor::zeros(Shape{C}, g.dtype()) : Tensor();
  Tensor db = gb ? Tensor::zeros(Shape{C}, g.dtype()) : Tensor();
  dispatch_float(g.dtype(), "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pg = g.data<T>();
    const T* pm = mean.data<T>();
    const T* pr = rstd.data<T>();
    const T* px = saved_x.defined() ? saved_x.data<T>() : nullptr;
    const T* pw = saved_w.defined() ? saved_w.data<T>() : nullptr;
    T* pdx = gx ? dx.mutable_data<T>() : nullptr;
    // Weight and bias gradients: one partial sum per block of rows, added in block order afterwards.
    const int64_t block = rows_per_block(C), blocks = (R + block - 1) / block;
    Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic> dw_part, db_part;  // (C, blocks)
    if (gw) dw_part.setZero(C, blocks);
    if (gb) db_part.setZero(C, blocks);
    for_blocks(R, [&](int64_t r0, int64_t r1) {
      const int64_t k = r0 / block;
      Eigen::Array<T, Eigen::Dynamic, 1> xhat(C), dn(C);
      for (int64_t r = r0; r < r1; ++r) {
        const ConstArrayMap<T> gr(pg + r * C, C);
        if (gb) db_part.col(k) += gr;
        if (!gx && !gw) continue;
        xhat = (ConstArrayMap<T>(px + r * C, C) - pm[r]) * pr[r];
        if (gw) dw_part.col(k) += gr * xhat;
        if (!gx) continue;
        if (pw) dn = gr * ConstArrayMap<T>(pw, C);
        else dn = gr;
        const T a = dn.mean();
        const T b = (dn * xhat).mean();
        ArrayMap<T>(pdx + r * C, C) = pr[r] * (dn - a - xhat * b);
      }
    }, block);
    for (int64_t k = 0; k < blocks; ++k) {
      if (gw) ArrayMap<T>(dw.mutable_data<T>(), C) += dw_part.col(k);
      if (gb) ArrayMap<T>(db.mutable_data<T>(), C) += db_part.col(k);
    }
  });
  if (gx) gi.set(0, dx);
  if (gw) gi.set(1, dw);
  if (gb) gi.set(2, db);
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  RPB_CHECK(x.is_floating(), "layer_norm", "expected a float tensor, got ", dtype_name(x.dtype()), " ", x.shape());
  RPB_CHECK(x.dim() >= 1 && x.size(-1) > 0, "layer_norm", "needs a non-empty last axis, got shape ", x.shape());
  RPB_CHECK(eps >= 0, "layer_norm", "eps must be non-negative, got ", eps);
  check_affine("weight", weight, x);
  check_affine("bias", bias, x);
  const int64_t C = x.size(-1);
  const int64_t R = x.numel() / C;
  const Device dev = cuda::op_device("layer_norm", {&x, &weight, &bias});
  Tensor out = Tensor::empty(x.shape(), x.dtype(), dev);
  Tensor mean = Tensor::empty(Shape{R}, x.dtype(), dev);
  Tensor rstd = Tensor::empty(Shape{R}, x.dtype(), dev);
  const auto ptr = [](const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; };
  if (dev == Device::cuda)
    cuda::backend("layer_norm").layer_norm(x.dtype(), x.raw_data(), ptr(weight), ptr(bias), out.raw_mutable_data(),
                                           mean.raw_mutable_data(), rstd.raw_mutable_data(), R, C, eps);
  else dispatch_float(x.dtype(), "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = out.mutable_data<T>();
    T* pm = mean.mutable_data<T>();
    T* pr = rstd.mutable_data<T>();
    const T* pw = weight.defined() ? weight.data<T>() : nullptr;
    const T* pb = bias.defined() ? bias.data<T>() : nullptr;
    for_blocks(R, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const ConstArrayMap<T> xr(px + r * C, C);
        ArrayMap<T> yr(py + r * C, C);
        const T mu = xr.mean();
        const T var = (xr - mu).square().mean();  // biased, as torch
        const T rs = T(1) / std::sqrt(var + static_cast<T>(eps));
        pm[r] = mu;
        pr[r] = rs;
        if (pw && pb) yr = (xr - mu) * rs * ConstArrayMap<T>(pw, C) + ConstArrayMap<T>(pb, C);
        else if (pw) yr = (xr - mu) * rs * ConstArrayMap<T>(pw, C);
        else if (pb) yr = (xr - mu) * rs + ConstArrayMap<T>(pb, C);
        else yr = (xr - mu) * rs;
      }
    }, rows_per_block(C));
  });
  if (autograd::should_record({&x, &weight, &bias})) {
    const bool need_x = x.requires_grad() || weight.requires_grad();
    Tensor saved_x = need_x ? x.detach() : Tensor();
    Tensor saved_w = x.requires_grad() && weight.defined() ? weight.detach() : Tensor();
    autograd::record(
        OpKind::LayerNorm, out, {&x, &weight, &bias},
        [saved_x, saved_w, mean, rstd, C, R](const Tensor& g, InputGrads& gi) {
          layer_norm_backward(saved_x, saved_w, mean, rstd, C, R, g, gi);
        });
  }
  return out;
}

}  // namespace rpb

#include "optim/adam.h"

#include <cmath>

#include "core/autograd.h"
#include "core/cuda/plan.h"
#include "core/dispatch.h"

namespace rpb::optim {

Adam::Adam(const nn::NamedTensors& params, AdamOptions options)
    : Optimizer("adam", params, options.groups, options.weight_decay),
      options_(std::move(options)),
      moments_(params_.size()) {
  const AdamOptions& o = options_;
  RPB_CHECK(o.beta1 >= 0 && o.beta1 < 1, "adam", "beta1 must lie in [0, 1), got ", o.beta1);
  RPB_CHECK(o.beta2 >= 0 && o.beta2 < 1, "adam", "beta2 must lie in [0, 1), got ", o.beta2);
  RPB_CHECK(std::isfinite(o.eps) && o.eps >= 0, "adam", "eps must be finite and >= 0, got ", o.eps);
}

void Adam::step(double lr) {
  check_lr(lr);
  NoGradGuard no_grad;
  const double b1 = options_.beta1, b2 = options_.beta2;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const NamedParam& np = params_[i];
    const Tensor& p = np.param;
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    Moments& st = moments_[i];
    if (!st.exp_avg.defined()) {
      st.exp_avg = Tensor::zeros(p.shape(), p.dtype(), p.device());
      st.exp_avg_sq = Tensor::zeros(p.shape(), p.dtype(), p.device());
    }
    RPB_CHECK(st.exp_avg.dtype() == p.dtype() && st.exp_avg.shape() == p.shape(), "adam", "parameter '", np.name,
              "' is now ", p.shape(), " ", dtype_name(p.dtype()), " but its moments are ", st.exp_avg.shape(), " ",
              dtype_name(st.exp_avg.dtype()));
    const int64_t t = ++st.step;
    const double lr_eff = lr * np.lr_scale, wd = np.weight_decay;
    const double bc1 = 1.0 - std::pow(b1, static_cast<double>(t));
    const double bc2 = 1.0 - std::pow(b2, static_cast<double>(t));
    // torch's arrangement of m_hat / (sqrt(v_hat) + eps): step_size * m / (sqrt(v) / sqrt(bc2) + eps).
    const double step_size = lr_eff / bc1, sqrt_bc2 = std::sqrt(bc2);
    if (cuda::on_cuda("adam", {&p, &g, &st.exp_avg, &st.exp_avg_sq})) {
      const bool decay = wd != 0;
      cuda::backend("adam").adam(p.dtype(), p.raw_mutable_data(), g.raw_data(), st.exp_avg.raw_mutable_data(),
                                 st.exp_avg_sq.raw_mutable_data(), p.numel(),
                                 {b1, b2, options_.eps, step_size, sqrt_bc2, wd, lr_eff, !options_.decoupled && decay,
                                  options_.decoupled && decay});
      continue;
    }
    dispatch_float(p.dtype(), "adam", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T *pp = p.mutable_data<T>(), *pm = st.exp_avg.mutable_data<T>(), *pv = st.exp_avg_sq.mutable_data<T>();
      const T* pg = g.data<T>();
      const T tb1 = T(b1), tb2 = T(b2), ob1 = T(1.0 - b1), ob2 = T(1.0 - b2), twd = T(wd);
      const bool coupled = !options_.decoupled && wd != 0, decoupled = options_.decoupled && wd != 0;
      for_blocks(p.numel(), [&](int64_t begin, int64_t end) {
        const int64_t n = end - begin;
        ArrayMap<T> P(pp + begin, n), M(pm + begin, n), V(pv + begin, n);
        const ConstArrayMap<T> G(pg + begin, n);
        if (coupled) {
          M = tb1 * M + ob1 * (G + twd * P);
          V = tb2 * V + ob2 * (G + twd * P).square();
        } else {
          M = tb1 * M + ob1 * G;
          V = tb2 * V + ob2 * G.square();
        }
        if (decoupled) P *= T(1.0 - lr_eff * wd);
        P -= T(step_size) * M / (V.sqrt() / T(sqrt_bc2) + T(options_.eps));
      });
    });
  }
  finish_step(lr);
}

OptimizerState Adam::state() const {
  OptimizerState s = base_state();
  s.scalars.emplace_back("beta1", options_.beta1);
  s.scalars.emplace_back("beta2", options_.beta2);
  s.scalars.emplace_back("eps", options_.eps);
  s.scalars.emplace_back("weight_decay", options_.weight_decay);
  s.scalars.emplace_back("decoupled", options_.decoupled ? 1.0 : 0.0);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Moments& st = moments_[i];
    if (!st.exp_avg.defined()) continue;
    const std::string& n = params_[i].name;
    s.tensors.emplace_back("exp_avg/" + n, st.exp_avg.clone());
    s.tensors.emplace_back("exp_avg_sq/" + n, st.exp_avg_sq.clone());
    s.tensors.emplace_back("step/" + n, Tensor::indices({}, {st.step}));
  }
  return s;
}

void Adam::load_state(const OptimizerState& s) {
  const std::vector<SlotEntry> entries = check_state(s, {{"exp_avg"}, {"exp_avg_sq"}, {"step", true}});
  for (const SlotEntry& e : entries)
    if (e.slot == 2)
      RPB_CHECK(e.value.data<int64_t>()[0] >= 1, "adam.load_state", "tensor 'step/", params_[e.param].name,
                "' holds ", e.value.data<int64_t>()[0], ", expected a count >= 1");
  std::vector<Moments> loaded(params_.size());
  for (const SlotEntry& e : entries) {
    Moments& st = loaded[e.param];
    if (e.slot == 0) st.exp_avg = e.value.clone();
    else if (e.slot == 1) st.exp_avg_sq = e.value.clone();
    else st.step = e.value.data<int64_t>()[0];
  }
  moments_ = std::move(loaded);
  load_base_state(s);
}

}  // namespace rpb::optim

// kerple_power: KERPLE's power variant (Chi et al., NeurIPS 2022), B[h,i,j] = -a_h * |i - j|^p_h, with a and p
// learned per head. The reference is chijames/KERPLE @ 73f1ee2d24722cdbe277d473899321218f5cbd00,
// megatron/mpu/layers.py ParallelKerplePower with pos_emb "kerple_power_ap_" (bias_p and bias_a learned, no
// weight kernel), which this file follows:
//   - init: p = 2 * U(0, 1), then a = U(0, 1), one value per head (torch.rand, drawn in that order);
//   - every forward first clamps the parameters in place, a to [eps, inf) and p to [eps, 2] with eps = 0.01: a
//     projection. Here Module::project_parameters applies it, at construction and after each optimizer step (the
//     trainer's), so every forward reads projected values, as the reference's;
//   - the bias is -a * diff^p with diff = tril(i - j): the reference is causal (its keys after the query read 0 and
//     are masked). A bidirectional model reads |i - j| on both sides, the kernel's symmetric form.
// d^p is exp(p log d) for d >= 1 and 0 at d = 0, where its gradient in p is 0 (torch's pow: 0^p with p > 0).
#include <cmath>
#include <iomanip>
#include <sstream>

#include "nn/init.h"
#include "nn/last_value_cache.h"
#include "nn/position/common.h"

namespace rpb::nn {

namespace {

using position_detail::offset_row;

constexpr double kKerpleEps = 1e-2;  // the reference's self.eps: the smallest a and p
constexpr double kKerpleMaxPower = 2;  // p <= 2 keeps -|d|^p a conditionally positive definite kernel

class KerplePowerScheme final : public PositionScheme {
 public:
  KerplePowerScheme(const PositionOptions& o, Generator& gen) : o_(o) {
    init::uniform_(p, gen, 0, 2);
    init::uniform_(a, gen, 0, 1);
    project();
  }

  // The relative row expanded: the fused kernel's bias and the tape's are the same numbers, bit for bit.
  Tensor bias(const Positions& q) const override {
    check(q, "kerple_power");
    return expand_relative_bias(relative_bias(q).table, q.q_len, q.k_len);  // (H, q, k)
  }

  RelativeBias relative_bias(const Positions& q) const override {
    check(q, "kerple_power");
    const int64_t key[] = {q.q_len, q.k_len, q.q_offset, static_cast<int64_t>(a.dtype())};
    const Tensor log_d = rel_cache_.get({key[0], key[1], key[2], key[3], 0}, [&] {
      return offset_row(q, a.dtype(), [](int64_t r) { return r != 0 ? std::log(static_cast<double>(r < 0 ? -r : r)) : 0.0; });
    });  // (1, R)
    const Tensor nonzero = rel_cache_nz_.get({key[0], key[1], key[2], key[3], 1}, [&] {
      return offset_row(q, a.dtype(), [](int64_t r) { return r != 0 ? 1.0 : 0.0; });
    });  // (1, R)
    return RelativeBias(kernel(log_d, nonzero, {o_.heads, 1}));  // (H, R)
  }

  std::string title() const override { return "kerple_power bias -a * |i - j|^p"; }
  std::string head_note(int64_t head) const override {
    std::ostringstream os;
    os << std::setprecision(4) << "a " << a.at({head}) << ", p " << p.at({head});
    return os.str();
  }
  std::string report(const std::string& prefix) const override {
    std::ostringstream out;
    out << "\n" << prefix << "a, p " << a.shape() << ": bias = -a_h * |i - j|^p_h\n";
    for (int64_t h = 0; h < a.numel(); ++h) {
      const double ah = a.at({h}), ph = p.at({h});
      out << "  head " << h << std::setprecision(5) << ": a " << ah << ", p " << ph << "; bias at distance";
      for (int64_t d : {1, 4, 16, 64, 256}) out << " " << d << ": " << -ah * std::pow(static_cast<double>(d), ph);
      out << "\n";
    }
    return out.str();
  }

 protected:
  // The reference's in-place clamp: a >= eps, eps <= p <= 2.
  void project() override {
    std::vector<double> av = a.to(Device::cpu).to_vector(), pv = p.to(Device::cpu).to_vector();
    for (double& x : av) x = std::max(x, kKerpleEps);
    for (double& x : pv) x = std::clamp(x, kKerpleEps, kKerpleMaxPower);
    a.copy_(Tensor::from_vector<double>({o_.heads}, av));
    p.copy_(Tensor::from_vector<double>({o_.heads}, pv));
  }

 private:
  // -a * exp(p * log d) * [d > 0], a and p reshaped to `shape` to broadcast over the distances.
  Tensor kernel(const Tensor& log_d, const Tensor& nonzero, const std::vector<int64_t>& shape) const {
    const Device dev = a.device();
    const Tensor power = mul(exp(mul(reshape(p, shape), log_d.to(dev))), nonzero.to(dev));
    return neg(mul(reshape(a, shape), power));
  }

  PositionOptions o_;
  LastValueCache rel_cache_, rel_cache_nz_;

 public:
  Tensor p = register_parameter("p", Tensor::zeros({o_.heads}, o_.dtype));  // (H): the power, in [eps, 2]
  Tensor a = register_parameter("a", Tensor::zeros({o_.heads}, o_.dtype));  // (H): the scale, at least eps
};

std::shared_ptr<PositionScheme> make_kerple_power(const PositionOptions& o, Generator& gen) {
  return std::make_shared<KerplePowerScheme>(o, gen);
}

// The registry row (nn/position/scheme.h): no options of its own (the reference fixes its initialisation).
const SchemeRegistrar kerple_power_row(
    {.name = "kerple_power", .dims = 1, .kind = PositionKind::additive_bias, .label = "KERPLE (power)",
     .description = "KERPLE's power kernel -a_h * |i - j|^p_h, a and p learned per head", .per_layer = true,
     .parameters = [](const PositionOptions& o) { return checked_mul(o.heads, 2, "position", "kerple_power"); },
     .max_length = position_detail::unbounded, .length_option = nullptr, .validate = position_detail::no_options,
     .make = make_kerple_power, .window_bias = WindowBias::none, .rank = 65,
     .bidirectional = "symmetric: -a_h * |i - j|^p_h on both sides, the kernel's own form (the reference's tril reads "
                      "only keys before the query)"});

}  // namespace

}  // namespace rpb::nn

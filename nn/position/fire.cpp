// fire: FIRE (Li et al. 2023, "Functional Interpolation for Relative Positions Improves Long Context Transformers"):
//   b_h(i, j) = f_h(psi(i - j) / (psi(max(i, L)) + eps)),  psi(x) = log(|c x| + 1),  L = |m L0|,
// f an MLP 1 -> fire_hidden -> heads with a ReLU. The conventions are those of the open implementation the issue
// names, mcleish7/arithmetic @55af9d5 cramming/architectures/embeddings.py class FIRE:
//   - i - j is query minus key, i the query's position from 0 (under a KV cache, q_offset + row): the normaliser
//     max(i, L) is per query row, so past the threshold each row is scaled by its own length (progressive
//     interpolation) and below it by L;
//   - c starts at 0.1 and the multiplier m at 1, both learned; L0 is position.fire_length, or the run's run.length
//     when that is 0 (the reference's init_L = 512 was its own context length); eps = 1e-6 is added to psi of the
//     normaliser only;
//   - the MLP's weights start ~ N(0, init_std) with zero biases: that code's model applies its `normal` init
//     (std 0.02) to every Linear, FIRE's included;
//   - computed in the scheme's dtype in the reference's order (float32 positions, |c x| + 1, log, divide);
//   - not implemented: the reference's option (off by default) of training on randomly spaced positions.
// Three forms: bias() (H, q, k) on the tape; relative_bias() a table over offsets on the tape when every query sits
// at or below the threshold (then max(i, L) = L for all rows: training at the train length), else, where no
// gradient is recorded, tiles the fused kernel computes from the function in O(q + k) memory (evaluation at any
// length), else undefined (the model then reads bias()).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "core/dispatch.h"
#include "nn/layers.h"
#include "nn/position/common.h"

namespace rpb::nn {

namespace {

using position_detail::distance_table;
using position_detail::from_doubles;
using position_detail::offset_row;

constexpr double kFireEps = 1e-6;  // the reference's eps, added to psi of the normaliser
constexpr double kFireInitC = 0.1;
constexpr double kFireInitMultiplier = 1.0;

// |y| on the tape: the sign is read from the values (a constant mask), so d|y|/dy = sign(y) (+1 at 0, where every
// use here multiplies the gradient by a zero distance or meets a non-zero c).
Tensor abs_value(const Tensor& y) {
  const Tensor negative = Tensor::zeros(y.shape(), DType::i64);
  const std::vector<double> v = y.to_vector();
  int64_t* p = negative.mutable_data<int64_t>();
  for (std::size_t i = 0; i < v.size(); ++i) p[i] = v[i] < 0;
  return where(negative.to(y.device()), neg(y), y);
}

// psi(x) = log(|c x| + 1) on the tape.
Tensor psi(const Tensor& x, const Tensor& c) { return log(add_scalar(abs_value(mul(x, c)), 1.0)); }

// f_h(x) for each head as the piecewise-linear function the ReLU MLP is: between consecutive kinks
// x = -b1[k] / w1[k] the active units are fixed, so f_h(x) = slope_h x + intercept_h there.
struct PiecewiseMlp {
  std::vector<double> kinks;       // ascending; segment s lies below kinks[s] (and at or above kinks[s - 1])
  std::vector<double> slope;       // (segments, heads)
  std::vector<double> intercept;   // (segments, heads)
  int64_t heads = 0;

  PiecewiseMlp(const std::vector<double>& w1, const std::vector<double>& b1, const std::vector<double>& w2,
               const std::vector<double>& b2, int64_t heads_)
      : heads(heads_) {
    const std::size_t width = w1.size();
    for (std::size_t k = 0; k < width; ++k)
      if (w1[k] != 0) kinks.push_back(-b1[k] / w1[k]);
    std::sort(kinks.begin(), kinks.end());
    kinks.erase(std::unique(kinks.begin(), kinks.end()), kinks.end());
    const std::size_t segments = kinks.size() + 1;
    slope.assign(segments * heads, 0.0);
    intercept.assign(segments * heads, 0.0);
    for (std::size_t s = 0; s < segments; ++s) {
      // A point inside segment s decides which units are active there.
      const double x = kinks.empty() ? 0.0
                       : s == 0      ? kinks[0] - 1.0
                       : s == kinks.size() ? kinks.back() + 1.0
                                           : 0.5 * (kinks[s - 1] + kinks[s]);
      for (int64_t h = 0; h < heads; ++h) {
        double a = 0, b = b2[h];
        for (std::size_t k = 0; k < width; ++k)
          if (w1[k] * x + b1[k] > 0) {
            a += w2[h * width + k] * w1[k];
            b += w2[h * width + k] * b1[k];
          }
        slope[s * heads + h] = a;
        intercept[s * heads + h] = b;
      }
    }
  }

  double operator()(int64_t h, double x) const {
    const std::size_t s = static_cast<std::size_t>(std::upper_bound(kinks.begin(), kinks.end(), x) - kinks.begin());
    return slope[s * heads + h] * x + intercept[s * heads + h];
  }
};

// The tiles of one forward: psi of every distance and the normaliser of every query row, computed once in the
// scheme's dtype as the tape computes them, then f_h per score.
template <typename D>
class FireTiles final : public BiasTiles {
 public:
  FireTiles(PiecewiseMlp f, D c, D threshold, int64_t q_offset, int64_t q_len, int64_t k_len)
      : f_(std::move(f)), q_offset_(q_offset) {
    const int64_t far = std::max(q_offset + q_len - 1, k_len - 1 - q_offset);
    psi_.resize(static_cast<std::size_t>(far + 1));
    for (int64_t d = 0; d <= far; ++d) psi_[d] = psi_of(c, static_cast<D>(d));
    norm_.resize(static_cast<std::size_t>(q_len));
    for (int64_t r = 0; r < q_len; ++r)
      norm_[r] = psi_of(c, std::max(static_cast<D>(q_offset + r), threshold)) + static_cast<D>(kFireEps);
  }

  int64_t heads() const override { return f_.heads; }
  void add(int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols, float* s, int64_t ld) const override {
    add_to(h, i0, rows, j0, cols, s, ld);
  }
  void add(int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols, double* s, int64_t ld) const override {
    add_to(h, i0, rows, j0, cols, s, ld);
  }

 private:
  static D psi_of(D c, D x) { return std::log(std::abs(c * x) + D(1)); }

  template <typename T>
  void add_to(int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols, T* s, int64_t ld) const {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      const D norm = norm_[static_cast<std::size_t>(i - q_offset_)];
      T* row = s + r * ld;
      for (int64_t col = 0; col < cols; ++col) {
        const int64_t d = i - (j0 + col);
        const D x = psi_[static_cast<std::size_t>(d < 0 ? -d : d)] / norm;
        row[col] += static_cast<T>(f_(h, static_cast<double>(x)));
      }
    }
  }

  PiecewiseMlp f_;
  int64_t q_offset_;
  std::vector<D> psi_;   // (far + 1): psi(d) per distance d
  std::vector<D> norm_;  // (q_len): psi(max(i, L)) + eps per query row
};

class FireScheme final : public PositionScheme {
 public:
  FireScheme(const PositionOptions& o, Generator& gen)
      : o_(o),
        hidden(register_module("hidden", std::make_shared<Linear>(1, o.fire_hidden, true, gen, o.init_std))),
        out(register_module("out", std::make_shared<Linear>(o.fire_hidden, o.heads, true, gen, o.init_std))) {
    if (o.dtype != DType::f32) to(o.dtype);
  }

  Tensor bias(const Positions& p) const override {
    check(p, "fire");
    const DType dt = c.dtype();
    // |i - j| per (query, key): psi reads |c (i - j)|, which equals |c| |i - j| exactly in float.
    const Device dev = c.device();  // the constants below are made on the host and moved there
    const Tensor distance = reshape(distance_table(p, dt, [](double d) { return d; }), {p.q_len, p.k_len}).to(dev);
    // Each query's position, as the reference's float positions.
    std::vector<double> pos(static_cast<std::size_t>(p.q_len));
    for (int64_t r = 0; r < p.q_len; ++r) pos[r] = static_cast<double>(p.q_offset + r);
    const Tensor positions = from_doubles({p.q_len, 1}, pos, dt).to(dev);  // (q, 1)
    const Tensor thr = threshold();                                 // (1)
    // max(i, L) per row: L where it is the larger (its gradient reaches m there), else the position.
    const Tensor below = Tensor::zeros({p.q_len, 1}, DType::i64);
    const double l = thr.to_vector()[0];
    for (int64_t r = 0; r < p.q_len; ++r) below.mutable_data<int64_t>()[r] = pos[r] < l;
    const Tensor normaliser = add_scalar(psi(where(below.to(dev), mul(Tensor::ones({p.q_len, 1}, dt, dev), thr), positions), c),
                                         kFireEps);                                   // (q, 1)
    const Tensor x = div(psi(distance, c), normaliser);                               // (q, k)
    const Tensor f = mlp(reshape(x, {p.q_len * p.k_len, 1}));                         // (q k, H)
    return permute(reshape(f, {p.q_len, p.k_len, o_.heads}), {2, 0, 1});              // (H, q, k)
  }

  RelativeBias relative_bias(const Positions& p) const override {
    check(p, "fire");
    const Tensor thr = threshold();  // (1)
    if (static_cast<double>(p.q_offset + p.q_len - 1) <= thr.to_vector()[0]) {
      // Every row's normaliser is psi(L): a function of i - j = -(key - query) alone, one value per offset column.
      const int64_t columns = p.q_len + p.k_len - 1;
      const Tensor offsets = reshape(offset_row(p, c.dtype(), [](int64_t r) { return -static_cast<double>(r); }),
                                     {columns, 1}).to(c.device());                   // (R, 1): i - j
      const Tensor x = div(psi(offsets, c), add_scalar(psi(thr, c), kFireEps));       // (R, 1)
      return RelativeBias(transpose(mlp(x), 0, 1));                                  // (H, R)
    }
    if (grad_enabled()) return RelativeBias();  // past the threshold with gradients: bias()
    return RelativeBias(tiles(p));
  }

  Tensor function_input(const Positions& p) const override {
    check(p, "fire");
    const std::shared_ptr<const BiasTiles> t = tiles(p, true);
    Tensor x = Tensor::zeros({p.q_len, p.k_len}, DType::f64);
    t->add(0, p.q_offset, p.q_len, 0, p.k_len, x.mutable_data<double>(), p.k_len);
    return x;
  }

  std::string title() const override { return "fire bias f(psi(i - j) / psi(max(i, L)))"; }
  std::string title_options() const override {
    std::ostringstream os;
    os << "c " << std::setprecision(4) << c.to_vector()[0] << ", L " << threshold().to_vector()[0] << ", MLP 1 -> "
       << o_.fire_hidden << " -> " << o_.heads;
    return os.str();
  }

  // What it learned: c, the threshold, and each head's bias at a few distances for a query at the threshold.
  std::string report(const std::string& prefix) const override {
    std::ostringstream out;
    const double l = threshold().to_vector()[0];
    out << "\n" << prefix << "c " << std::setprecision(5) << c.to_vector()[0] << ", threshold L = |m L0| = " << l
        << " (m " << multiplier.to_vector()[0] << ", L0 " << length0() << ")\n";
    NoGradGuard no_grad;
    const int64_t at = static_cast<int64_t>(std::ceil(l));
    const Positions p = Positions::line(1, at + 1, at);
    const Tensor b = bias(p).to(DType::f64);  // (H, 1, at + 1)
    out << "  the bias of the query at position " << at << " (the threshold; a later query's is its own):\n";
    for (int64_t h = 0; h < o_.heads; ++h) {
      out << "  head " << h << ": bias at distance";
      for (int64_t d : {0, 1, 4, 16, 64, 256})
        if (d <= at) out << " " << d << ": " << std::setprecision(4) << b.at({h, 0, at - d});
      out << "\n";
    }
    return out.str();
  }

 private:
  // L0: position.fire_length, or the run's length.
  double length0() const { return static_cast<double>(o_.fire_length > 0 ? o_.fire_length : o_.train_length); }
  // L = |m L0| (1), on the tape.
  Tensor threshold() const { return abs_value(mul_scalar(multiplier, length0())); }
  // (N, 1) -> (N, H)
  Tensor mlp(const Tensor& x) const { return out->forward(relu(hidden->forward(x))); }

  // The tiles of the bias at `p`; with `input`, of the MLP's input x instead (one head, f(x) = x).
  std::shared_ptr<const BiasTiles> tiles(const Positions& p, bool input = false) const {
    const PiecewiseMlp f = input ? PiecewiseMlp({1.0}, {0.0}, {1.0}, {0.0}, 1)
                                 : PiecewiseMlp(hidden->weight.to_vector(), hidden->bias.to_vector(),
                                                out->weight.to_vector(), out->bias.to_vector(), o_.heads);
    const double cv = c.to_vector()[0], l = threshold().to_vector()[0];
    if (c.dtype() == DType::f64) return std::make_shared<FireTiles<double>>(f, cv, l, p.q_offset, p.q_len, p.k_len);
    return std::make_shared<FireTiles<float>>(f, static_cast<float>(cv), static_cast<float>(l), p.q_offset, p.q_len,
                                              p.k_len);
  }

  PositionOptions o_;

 public:
  Tensor c = register_parameter("c", Tensor::full({1}, kFireInitC, o_.dtype));                    // (1)
  Tensor multiplier = register_parameter("multiplier", Tensor::full({1}, kFireInitMultiplier, o_.dtype));  // (1)
  std::shared_ptr<Linear> hidden;  // weight (fire_hidden, 1), bias (fire_hidden)
  std::shared_ptr<Linear> out;     // weight (heads, fire_hidden), bias (heads)
};

}  // namespace

namespace scheme_files {
void validate_fire(const PositionOptions& o) {
  RPB_CHECK_OPTION(o.fire_length > 0 || o.train_length > 0, "fire", "fire_length", "fire_length 0 means run.length, "
                   "which is not known here: set fire_length (L0, the threshold's starting length)");
  position_detail::check_init_std(o);
}
std::shared_ptr<PositionScheme> make_fire(const PositionOptions& o, Generator& gen) {
  return std::make_shared<FireScheme>(o, gen);
}
}  // namespace scheme_files

}  // namespace rpb::nn

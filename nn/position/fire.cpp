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
// at or below the threshold (then max(i, L) = L for all rows: training at the train length), else tiles the fused
// kernel computes from the function in O(q + k) memory, at any length; with gradients recorded the tiles learn: the
// kernel hands them the scores' gradient tile by tile and they sum what c, m and the MLP's weights need (FireTiles).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <type_traits>

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
// x = -b1[k] / w1[k] the active units are fixed, so f_h(x) = slope_h x + intercept_h there. Its gradient sorts each
// x into a bucket: segment s (0 .. K, strictly between kinks) or the kink itself (K + 1 .. 2K), where the unit
// whose kink it is counts as inactive (relu's derivative at 0 is 0, as the tape's).
struct PiecewiseMlp {
  std::vector<double> kinks;       // (K) ascending; segment s lies below kinks[s] (and at or above kinks[s - 1])
  std::vector<double> slope;       // (2K + 1, heads): d f_h / dx per bucket
  std::vector<double> intercept;   // (K + 1, heads): per segment
  std::vector<uint8_t> active;     // (2K + 1, width): the units active in each bucket
  std::vector<double> w1, b1, w2;  // (width), (width), (heads, width)
  int64_t heads = 0;

  PiecewiseMlp(std::vector<double> w1_, std::vector<double> b1_, std::vector<double> w2_,
               const std::vector<double>& b2, int64_t heads_)
      : w1(std::move(w1_)), b1(std::move(b1_)), w2(std::move(w2_)), heads(heads_) {
    const std::size_t width = w1.size();
    for (std::size_t k = 0; k < width; ++k)
      if (w1[k] != 0) kinks.push_back(kink(k));
    std::sort(kinks.begin(), kinks.end());
    kinks.erase(std::unique(kinks.begin(), kinks.end()), kinks.end());
    const std::size_t segments = kinks.size() + 1, nb = buckets();
    slope.assign(nb * heads, 0.0);
    intercept.assign(segments * heads, 0.0);
    active.assign(nb * width, 0);
    for (std::size_t s = 0; s < nb; ++s) {
      // A point inside segment s decides which units are active there; at a kink, the units strictly above 0.
      const bool at_kink = s >= segments;
      const double x = at_kink ? kinks[s - segments]
                       : kinks.empty() ? 0.0
                       : s == 0      ? kinks[0] - 1.0
                       : s == kinks.size() ? kinks.back() + 1.0
                                           : 0.5 * (kinks[s - 1] + kinks[s]);
      for (std::size_t k = 0; k < width; ++k)
        active[s * width + k] = w1[k] * x + b1[k] > 0 && !(at_kink && w1[k] != 0 && kink(k) == x);
      for (int64_t h = 0; h < heads; ++h) {
        double a = 0, b = b2[h];
        for (std::size_t k = 0; k < width; ++k)
          if (active[s * width + k]) {
            a += w2[h * width + k] * w1[k];
            b += w2[h * width + k] * b1[k];
          }
        slope[s * heads + h] = a;
        if (!at_kink) intercept[s * heads + h] = b;
      }
    }
  }

  std::size_t buckets() const { return 2 * kinks.size() + 1; }
  std::size_t segment(double x) const {
    return static_cast<std::size_t>(std::upper_bound(kinks.begin(), kinks.end(), x) - kinks.begin());
  }
  std::size_t bucket(double x) const {
    const std::size_t s = segment(x);
    return s > 0 && kinks[s - 1] == x ? kinks.size() + s : s;
  }
  double operator()(int64_t h, double x) const {
    const std::size_t s = segment(x);
    return slope[s * heads + h] * x + intercept[s * heads + h];
  }

 private:
  double kink(std::size_t k) const { return -b1[k] / w1[k]; }
};

// d|y|/dy as the tape's abs_value takes it: -1 below 0, else +1.
double abs_slope(double y) { return y < 0 ? -1.0 : 1.0; }

// What the gradient through the tiles reads besides the MLP: the parameters, and the derivatives of psi and the
// normaliser with respect to c and the threshold L.
struct FireGrad {
  std::vector<Tensor> params;     // c, multiplier, hidden weight and bias, out weight and bias
  std::vector<double> dpsi_dc;    // (far + 1): d psi(d) / dc per distance
  std::vector<double> dnorm_dc;   // (q_len): d norm_i / dc
  std::vector<double> dnorm_dl;   // (q_len): d norm_i / dL (0 past the threshold)
  double dl_dm = 0;               // dL / dm, L = |m L0|
};

// The tiles of one forward: psi of every distance and the normaliser of every query row, computed once in the
// scheme's dtype as the tape computes them, then f_h per score. With a FireGrad, the bias learns: per task the sums
// G0[b] = sum dS and G1[b] = sum dS x per bucket of x (the MLP's gradients follow from them), and per query row
// A_i = sum dS f'(x) dpsi/dc and B_i = sum dS f'(x) x (c's and the threshold's).
template <typename D>
class FireTiles final : public BiasTiles {
 public:
  FireTiles(PiecewiseMlp f, D c, D threshold, int64_t q_offset, int64_t q_len, int64_t k_len,
            std::shared_ptr<const FireGrad> grad)
      : f_(std::move(f)), q_offset_(q_offset), q_len_(q_len), grad_(std::move(grad)) {
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

  std::vector<Tensor> parameters() const override { return grad_ ? grad_->params : std::vector<Tensor>(); }
  // [G0 (buckets) | G1 (buckets) | A (q_len) | B (q_len)]
  int64_t grad_slots() const override {
    return grad_ ? 2 * static_cast<int64_t>(f_.buckets()) + 2 * q_len_ : 0;
  }
  void accumulate(int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols, const float* ds, int64_t ld,
                  double* acc) const override {
    accumulate_from(h, i0, rows, j0, cols, ds, ld, acc);
  }
  void accumulate(int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols, const double* ds, int64_t ld,
                  double* acc) const override {
    accumulate_from(h, i0, rows, j0, cols, ds, ld, acc);
  }
  std::vector<Tensor> gradients(const std::vector<double>& acc) const override;
  std::shared_ptr<const PiecewiseRatioBias> ratio_form() const override {
    auto r = std::make_shared<PiecewiseRatioBias>();
    r->single = std::is_same_v<D, float>;
    r->u.assign(psi_.begin(), psi_.end());
    r->w.assign(norm_.begin(), norm_.end());
    r->kinks = f_.kinks;
    r->slope = f_.slope;
    r->intercept = f_.intercept;
    if (grad_) r->du = grad_->dpsi_dc;
    return r;
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

  template <typename T>
  void accumulate_from(int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols, const T* ds, int64_t ld,
                       double* acc) const {
    const std::size_t nb = f_.buckets();
    double *g0 = acc, *g1 = acc + nb, *a = acc + 2 * nb, *b = a + q_len_;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t row = i0 + r - q_offset_;
      const D norm = norm_[static_cast<std::size_t>(row)];
      for (int64_t col = 0; col < cols; ++col) {
        const double g = static_cast<double>(ds[r * ld + col]);
        if (g == 0) continue;  // a masked score, or no gradient
        const int64_t d = std::abs(i0 + r - (j0 + col));
        const double x = static_cast<double>(psi_[static_cast<std::size_t>(d)] / norm);
        const std::size_t k = f_.bucket(x);
        g0[k] += g;
        g1[k] += g * x;
        const double e = g * f_.slope[k * f_.heads + h];
        a[row] += e * grad_->dpsi_dc[static_cast<std::size_t>(d)];
        b[row] += e * x;
      }
    }
  }

  PiecewiseMlp f_;
  int64_t q_offset_, q_len_;
  std::vector<D> psi_;   // (far + 1): psi(d) per distance d
  std::vector<D> norm_;  // (q_len): psi(max(i, L)) + eps per query row
  std::shared_ptr<const FireGrad> grad_;  // null: a constant
};

// From x = psi(d) / norm_i and f_h(x) = sum_k w2[h, k] relu(w1[k] x + b1[k]) + b2[h], per head and bucket:
//   d b2[h] = G0,  d w2[h, k] = w1[k] G1 + b1[k] G0,  d w1[k] = w2[h, k] G1,  d b1[k] = w2[h, k] G0 (k active);
//   d c = sum_i (A_i - B_i dnorm_i/dc) / norm_i,  d L = -sum_i B_i dnorm_i/dL / norm_i,  d m = dL/dm d L.
template <typename D>
std::vector<Tensor> FireTiles<D>::gradients(const std::vector<double>& acc) const {
  const std::size_t nb = f_.buckets(), width = f_.w1.size(), heads = static_cast<std::size_t>(f_.heads);
  const std::size_t slots = static_cast<std::size_t>(grad_slots());
  std::vector<double> dw1(width, 0.0), db1(width, 0.0), dw2(heads * width, 0.0), db2(heads, 0.0);
  double dc = 0, dl = 0;
  for (std::size_t h = 0; h < heads; ++h) {
    const double *g0 = acc.data() + h * slots, *g1 = g0 + nb, *a = g0 + 2 * nb, *b = a + q_len_;
    for (std::size_t k = 0; k < nb; ++k) {
      db2[h] += g0[k];
      for (std::size_t u = 0; u < width; ++u) {
        if (!f_.active[k * width + u]) continue;
        dw2[h * width + u] += f_.w1[u] * g1[k] + f_.b1[u] * g0[k];
        dw1[u] += f_.w2[h * width + u] * g1[k];
        db1[u] += f_.w2[h * width + u] * g0[k];
      }
    }
    for (int64_t i = 0; i < q_len_; ++i) {
      const double norm = static_cast<double>(norm_[static_cast<std::size_t>(i)]);
      dc += (a[i] - b[i] * grad_->dnorm_dc[i]) / norm;
      dl -= b[i] * grad_->dnorm_dl[i] / norm;
    }
  }
  const DType dt = grad_->params[0].dtype();
  const Device dev = grad_->params[0].device();
  auto tensor = [&](const Shape& shape, const std::vector<double>& v) {
    return position_detail::from_doubles(shape, v, dt).to(dev);
  };
  const int64_t w = static_cast<int64_t>(width), nh = static_cast<int64_t>(heads);
  return {tensor({1}, {dc}), tensor({1}, {dl * grad_->dl_dm}), tensor({w, 1}, dw1), tensor({w}, db1),
          tensor({nh, w}, dw2), tensor({nh}, db2)};
}

class FireScheme final : public PositionScheme {
 public:
  FireScheme(const PositionOptions& o, Generator& gen)
      : o_(o),
        hidden(register_module("hidden", std::make_shared<Linear>(1, o.fire_hidden, true, gen, o.init_std))),
        out(register_module("out", std::make_shared<Linear>(o.fire_hidden, o.heads, true, gen, o.init_std))) {
    if (o.dtype != DType::f32) to(o.dtype);
  }

  // At explicit positions too (randomized positions): i, j and each row's normaliser are theirs.
  Tensor bias(const Positions& p) const override {
    check(p, "fire", true);
    const DType dt = c.dtype();
    // |i - j| per (query, key): psi reads |c (i - j)|, which equals |c| |i - j| exactly in float.
    const Device dev = c.device();  // the constants below are made on the host and moved there
    const Tensor distance = reshape(distance_table(p, dt, [](double d) { return d; }), {p.q_len, p.k_len}).to(dev);
    // Each query's position, as the reference's float positions.
    std::vector<double> pos(static_cast<std::size_t>(p.q_len));
    for (int64_t r = 0; r < p.q_len; ++r) pos[r] = static_cast<double>(p.query_position(r));
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
    return RelativeBias(tiles(p));  // past the threshold: computed in the kernel's tiles, learning there too
  }

  // The normaliser depends on the query's position: no table over offsets serves explicit positions; bias(p) does.
  RelativeBias relative_bias_at(const Positions&) const override { return RelativeBias(); }

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

  // The tiles of the bias at `p`; with `input`, of the MLP's input x instead (one head, f(x) = x). They learn
  // (name the parameters) when gradients are recorded and a parameter takes one.
  std::shared_ptr<const BiasTiles> tiles(const Positions& p, bool input = false) const {
    const PiecewiseMlp f = input ? PiecewiseMlp({1.0}, {0.0}, {1.0}, {0.0}, 1)
                                 : PiecewiseMlp(hidden->weight.to_vector(), hidden->bias.to_vector(),
                                                out->weight.to_vector(), out->bias.to_vector(), o_.heads);
    const double cv = c.to_vector()[0], l = threshold().to_vector()[0];
    const std::shared_ptr<const FireGrad> grad = input ? nullptr : tile_grad(p, cv, l);
    if (c.dtype() == DType::f64)
      return std::make_shared<FireTiles<double>>(f, cv, l, p.q_offset, p.q_len, p.k_len, grad);
    return std::make_shared<FireTiles<float>>(f, static_cast<float>(cv), static_cast<float>(l), p.q_offset, p.q_len,
                                              p.k_len, grad);
  }

  // The derivatives the tiles' gradient reads (see FireTiles), or null when no gradient is recorded. The tape's
  // conventions: psi(x) = log(|c x| + 1) with d|y|/dy = +1 at 0; max(i, L) is L where i < L.
  std::shared_ptr<const FireGrad> tile_grad(const Positions& p, double cv, double l) const {
    std::vector<Tensor> params{c, multiplier, hidden->weight, hidden->bias, out->weight, out->bias};
    if (!grad_enabled() ||
        std::none_of(params.begin(), params.end(), [](const Tensor& t) { return t.requires_grad(); }))
      return nullptr;
    auto g = std::make_shared<FireGrad>();
    g->params = std::move(params);
    const int64_t far = std::max(p.q_offset + p.q_len - 1, p.k_len - 1 - p.q_offset);
    for (int64_t d = 0; d <= far; ++d) {
      const double cd = cv * static_cast<double>(d);
      g->dpsi_dc.push_back(abs_slope(cd) * static_cast<double>(d) / (std::abs(cd) + 1));
    }
    for (int64_t r = 0; r < p.q_len; ++r) {
      const double i = static_cast<double>(p.q_offset + r);
      const bool below = i < l;
      const double at = below ? l : i, cm = cv * at, denom = std::abs(cm) + 1;
      g->dnorm_dc.push_back(abs_slope(cm) * at / denom);
      g->dnorm_dl.push_back(below ? abs_slope(cm) * cv / denom : 0.0);
    }
    const double l0 = length0();
    g->dl_dm = abs_slope(multiplier.to_vector()[0] * l0) * l0;
    return g;
  }

  PositionOptions o_;

 public:
  Tensor c = register_parameter("c", Tensor::full({1}, kFireInitC, o_.dtype));                    // (1)
  Tensor multiplier = register_parameter("multiplier", Tensor::full({1}, kFireInitMultiplier, o_.dtype));  // (1)
  std::shared_ptr<Linear> hidden;  // weight (fire_hidden, 1), bias (fire_hidden)
  std::shared_ptr<Linear> out;     // weight (heads, fire_hidden), bias (heads)
};

}  // namespace

namespace {

void validate_fire(const PositionOptions& o) {
  RPB_CHECK_OPTION(o.fire_length > 0 || o.train_length > 0, "fire", "fire_length", "fire_length 0 means run.length, "
                   "which is not known here: set fire_length (L0, the threshold's starting length)");
  position_detail::check_init_std(o);
}
std::shared_ptr<PositionScheme> make_fire(const PositionOptions& o, Generator& gen) {
  return std::make_shared<FireScheme>(o, gen);
}

// c and the multiplier, the hidden layer (weight and bias), the output layer (weight and bias).
int64_t fire_parameters(const PositionOptions& o) {
  const int64_t hidden = checked_mul(o.fire_hidden, 2, "position", "fire");
  return checked_add(checked_add(2 + hidden, o.heads, "position", "fire"),
                     checked_mul(o.fire_hidden, o.heads, "position", "fire"), "position", "fire");
}

// The registry row (nn/position/scheme.h).
const SchemeRegistrar fire_row({.name = "fire", .dims = 1, .kind = PositionKind::additive_bias, .label = "FIRE",
     .description = "FIRE's learned MLP of log distance over the query's log position", .per_layer = true,
     .parameters = fire_parameters, .max_length = position_detail::unbounded, .length_option = nullptr,
     .validate = validate_fire, .make = make_fire, .window_bias = WindowBias::none, .rank = 90,
     .reads = {"fire_length", "fire_hidden", "init_std"},
     .causal_only = "its normaliser psi(max(i, L)) is the query's position, the length of the context a causal query "
                    "sees; the reference (mcleish7/arithmetic, a causal decoder) defines no form for keys after the "
                    "query"});

}  // namespace

}  // namespace rpb::nn

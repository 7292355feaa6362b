// log_decay: B[h,i,j] = -lambda_h * log(1 + |i - j|) (seed 001; KERPLE-log with a = 1). A fixed lambda is a
// non-persistent buffer (rebuilt from the options); a learnable one is a parameter per head.
#include <cmath>
#include <iomanip>
#include <sstream>

#include "nn/last_value_cache.h"
#include "nn/position/common.h"

namespace rpb::nn {

namespace {

using position_detail::distance_table;
using position_detail::offset_row;

class LogDecayScheme final : public PositionScheme {
 public:
  explicit LogDecayScheme(const PositionOptions& o) : o_(o) {}

  Tensor bias(const Positions& p) const override {
    check(p, "log_decay");
    const Tensor neg_log = cache_.get({p.q_len, p.k_len, p.q_offset, static_cast<int64_t>(lambda.dtype())}, [&] {
      return distance_table(p, lambda.dtype(), [](double d) { return -std::log1p(d); });
    });  // (1, q, k): -log(1 + |i - j|)
    // A recorded mul, so a learnable lambda receives sum over (i, j) of -log(1 + |i - j|) * dL/dB[h, i, j].
    return mul(reshape(lambda, {o_.heads, 1, 1}), neg_log.to(lambda.device()));  // (H, q, k)
  }
  RelativeBias relative_bias(const Positions& p) const override {
    check(p, "log_decay");
    const Tensor neg_log = rel_cache_.get({p.q_len, p.k_len, p.q_offset, static_cast<int64_t>(lambda.dtype())}, [&] {
      return offset_row(p, lambda.dtype(), [](int64_t r) { return -std::log1p(static_cast<double>(r < 0 ? -r : r)); });
    });                                                               // (1, R): -log(1 + |r|)
    return RelativeBias(mul(reshape(lambda, {o_.heads, 1}), neg_log.to(lambda.device())));  // (H, R)
  }

  std::string title() const override { return "log_decay bias -lambda * log(1 + |i - j|)"; }
  // The lambda the bias uses (a learned one as trained, not the configured start), to 4 significant digits.
  std::string head_note(int64_t head) const override {
    std::ostringstream os;
    os << "lambda " << std::setprecision(4) << lambda.at({head});
    return os.str();
  }

  // The learned decay per head, and the bias it gives at a few distances.
  std::string report(const std::string& prefix) const override {
    if (!o_.learnable_lambda) return "";
    std::ostringstream out;
    out << "\n" << prefix << "lambda " << lambda.shape() << ": bias = -lambda_h * log(1 + |i - j|)\n";
    for (int64_t h = 0; h < lambda.numel(); ++h) {
      out << "  head " << h << ": lambda " << std::setprecision(5) << lambda.at({h}) << "; bias at distance";
      for (int64_t d : {1, 4, 16, 64, 256}) out << " " << d << ": " << -lambda.at({h}) * std::log1p(static_cast<double>(d));
      out << "\n";
    }
    return out.str();
  }

 private:
  PositionOptions o_;
  LastValueCache cache_, rel_cache_;

 public:
  Tensor lambda = o_.learnable_lambda
                      ? register_parameter("lambda", Tensor::full({o_.heads}, o_.lambda, o_.dtype))  // (H)
                      : register_buffer("lambda", Tensor::full({o_.heads}, o_.lambda, o_.dtype), /*persistent=*/false);
};

}  // namespace

namespace {

void validate_log_decay(const PositionOptions& o) {
  RPB_CHECK_OPTION(o.lambda >= 0 && o.lambda <= limits::kMaxLambda, "log_decay", "lambda", "lambda ", o.lambda,
                   " must be in [0, ", limits::kMaxLambda, "]");
}
std::shared_ptr<PositionScheme> make_log_decay(const PositionOptions& o, Generator&) {
  return std::make_shared<LogDecayScheme>(o);
}

// The registry row (nn/position/scheme.h).
const SchemeRegistrar log_decay_row({.name = "log_decay", .dims = 1, .kind = PositionKind::additive_bias, .label = "Log-decay",
     .description = "-lambda * log(1 + |i - j|), lambda fixed or learned per head", .per_layer = true,
     .parameters = [](const PositionOptions& o) { return o.learnable_lambda ? o.heads : int64_t{0}; },
     .max_length = position_detail::unbounded, .length_option = nullptr, .validate = validate_log_decay,
     .make = make_log_decay, .window_bias = WindowBias::none, .rank = 60, .reads = {"lambda", "learnable_lambda"},
     .bidirectional = "symmetric: -lambda * log(1 + |i - j|) on both sides"});

}  // namespace

}  // namespace rpb::nn

// rpb/train/data/position_loss.cpp: see position_loss.h.
#include "train/data/position_loss.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace rpb::data {

namespace {

template <class T>
double nll_of(const T* z, int64_t vocab, int64_t t) {
  RPB_CHECK(vocab >= 1 && t >= 0 && t < vocab, "token_nll", "target ", t, " outside the vocabulary of ", vocab);
  const double top = *std::max_element(z, z + vocab);
  double s = 0;
  for (int64_t v = 0; v < vocab; ++v) s += std::exp(static_cast<double>(z[v]) - top);
  return top + std::log(s) - static_cast<double>(z[t]);
}

template <class T>
void add_rows(PositionLoss& p, const Tensor& z, const int64_t* tp, int64_t unscored) {
  const int64_t rows = z.size(0), length = z.size(1), vocab = z.size(2);
  const T* zp = z.data<T>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t pos = 0; pos < length; ++pos)
      if (const int64_t t = tp[r * length + pos]; t != unscored)
        p.add(pos, nll_of(zp + (r * length + pos) * vocab, vocab, t));
}

}  // namespace

double token_nll(const float* z, int64_t vocab, int64_t t) { return nll_of(z, vocab, t); }
double token_nll(const double* z, int64_t vocab, int64_t t) { return nll_of(z, vocab, t); }

void PositionLoss::add(int64_t position, double nll) {
  RPB_CHECK(position >= 0, "position_loss", "position ", position, " must be at least 0");
  const std::size_t p = static_cast<std::size_t>(position);
  if (sum.size() <= p) sum.resize(p + 1, 0.0), targets.resize(p + 1, 0);
  sum[p] += nll;
  ++targets[p];
}

void PositionLoss::add(const Tensor& logits, const Tensor& target, int64_t unscored) {
  RPB_CHECK(logits.dim() == 3 && target.dim() == 2 && logits.size(0) == target.size(0) &&
                logits.size(1) == target.size(1) &&
                (logits.dtype() == DType::f32 || logits.dtype() == DType::f64) && target.dtype() == DType::i64 &&
                logits.device() == Device::cpu && target.device() == Device::cpu,
            "position_loss", "logits (B, T, V) f32 or f64 and targets (B, T) i64 on the CPU expected, got ",
            logits.shape(), " ", dtype_name(logits.dtype()), " and ", target.shape(), " ", dtype_name(target.dtype()));
  // Every tensor is contiguous and row-major (core/tensor.h).
  if (logits.dtype() == DType::f32) add_rows<float>(*this, logits, target.data<int64_t>(), unscored);
  else add_rows<double>(*this, logits, target.data<int64_t>(), unscored);
}

PositionLoss& PositionLoss::operator+=(const PositionLoss& other) {
  if (sum.size() < other.sum.size()) sum.resize(other.sum.size(), 0.0), targets.resize(other.sum.size(), 0);
  for (std::size_t p = 0; p < other.sum.size(); ++p) sum[p] += other.sum[p], targets[p] += other.targets[p];
  return *this;
}

std::vector<std::optional<double>> PositionLoss::means() const {
  std::vector<std::optional<double>> out(sum.size());
  for (std::size_t p = 0; p < sum.size(); ++p)
    if (targets[p] > 0) out[p] = sum[p] / static_cast<double>(targets[p]);
  return out;
}

BinnedPositionLoss binned(const PositionLoss& p, int64_t max_bins) {
  RPB_CHECK(max_bins >= 1, "position_loss", "max_bins ", max_bins, " must be at least 1");
  const int64_t n = static_cast<int64_t>(p.sum.size());
  BinnedPositionLoss out;
  out.width = std::max<int64_t>(1, (n + max_bins - 1) / max_bins);
  for (int64_t b = 0; b * out.width < n; ++b) {
    double s = 0;
    int64_t count = 0;
    for (int64_t i = b * out.width; i < std::min(n, (b + 1) * out.width); ++i)
      s += p.sum[static_cast<std::size_t>(i)], count += p.targets[static_cast<std::size_t>(i)];
    out.loss.push_back(count > 0 ? std::optional<double>(s / static_cast<double>(count)) : std::nullopt);
  }
  return out;
}

}  // namespace rpb::data

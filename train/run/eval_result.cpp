// rpb/train/run/eval_result.cpp: see eval_result.h.
#include "train/run/eval_result.h"

#include <cmath>

namespace rpb {

namespace {

std::optional<double> overall(const std::vector<std::vector<double>>& v) {
  double sum = 0;
  int64_t n = 0;
  for (const auto& layer : v)
    for (const double x : layer) sum += x, ++n;
  return n > 0 ? std::optional<double>(sum / static_cast<double>(n)) : std::nullopt;
}

}  // namespace

std::optional<double> past_training_mean(const std::vector<std::optional<double>>& values,
                                         const std::vector<int64_t>& multipliers) {
  double sum = 0;
  int64_t n = 0;
  for (std::size_t j = 0; j < values.size() && j < multipliers.size(); ++j)
    if (multipliers[j] > 1 && values[j]) sum += *values[j], ++n;
  return n > 0 ? std::optional<double>(sum / static_cast<double>(n)) : std::nullopt;
}

std::optional<double> LengthResult::perplexity() const {
  if (!nll) return std::nullopt;
  return std::exp(*nll);
}

std::optional<double> LengthResult::bits_per_byte() const {
  if (!nll || bytes <= 0) return std::nullopt;
  return *nll * static_cast<double>(tokens) / (static_cast<double>(bytes) * std::log(2.0));
}

std::optional<double> AttentionDiagnostics::mean_distance_overall() const { return overall(mean_distance); }
std::optional<double> AttentionDiagnostics::entropy_overall() const { return overall(entropy); }

AttentionDiagnostics attention_diagnostics(const std::vector<nn::AttentionStats>& layers) {
  AttentionDiagnostics d;
  for (const nn::AttentionStats& s : layers) {
    d.mean_distance.emplace_back();
    d.entropy.emplace_back();
    for (int64_t h = 0; h < s.heads(); ++h) {
      d.mean_distance.back().push_back(s.mean_distance(h));
      d.entropy.back().push_back(s.entropy(h));
    }
  }
  return d;
}

}  // namespace rpb

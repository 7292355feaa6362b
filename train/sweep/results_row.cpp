// rpb/train/sweep/results_row.cpp: what a results.json row derives from its per-seed values (SweepResultsRow,
// train/sweep/results_json.h): the means and stds over the seeds, bits per byte, the accuracies, the score.
#include <algorithm>

#include "train/sweep/results_json.h"

namespace rpb {

namespace {


// The mean (second: false) or the std (second: true) over the seeds of value(s, j) at each length j of `row`.
template <typename Value>
std::vector<std::optional<double>> over_seeds(const SweepResultsRow& row, bool second, Value value) {
  const std::size_t lengths = row.perplexity.empty() ? 0 : row.perplexity.front().size();
  std::vector<std::optional<double>> out;
  for (std::size_t j = 0; j < lengths; ++j) {
    std::vector<std::optional<double>> column;
    for (std::size_t s = 0; s < row.perplexity.size(); ++s) column.push_back(value(s, j));
    const auto ms = mean_std(column);
    out.push_back(ms ? std::optional<double>(second ? ms->second : ms->first) : std::nullopt);
  }
  return out;
}

std::vector<std::optional<double>> perplexity_over_seeds(const SweepResultsRow& row, bool second) {
  return over_seeds(row, second, [&](std::size_t s, std::size_t j) {
    return j < row.perplexity[s].size() ? row.perplexity[s][j] : std::nullopt;
  });
}

std::vector<std::optional<double>> distance_over_seeds(const SweepResultsRow& row, bool second) {
  return over_seeds(row, second, [&](std::size_t s, std::size_t j) {
    return s < row.attention.size() && j < row.attention[s].size() ? row.attention[s][j].mean_distance_overall()
                                                                     : std::nullopt;
  });
}

std::vector<std::optional<double>> accuracy_over_seeds(const SweepResultsRow& row, bool second) {
  std::vector<std::optional<double>> out;
  for (const auto& ms : accuracy_stats(row.accuracy, row.trained_accuracy, row.threshold()))
    out.push_back(ms ? std::optional<double>(second ? ms->second : ms->first) : std::nullopt);
  return out;
}

// The mean (second: false) or std of the accuracy over every seed, learned or not.
std::vector<std::optional<double>> accuracy_every_seed(const SweepResultsRow& row, bool second) {
  return over_seeds(row, second, [&](std::size_t s, std::size_t j) {
    return cell_or(row.accuracy, s, j, std::optional<double>());
  });
}

}  // namespace

std::vector<std::optional<double>> SweepResultsRow::perplexity_mean() const {
  return perplexity_over_seeds(*this, false);
}
std::vector<std::optional<double>> SweepResultsRow::perplexity_std() const {
  return perplexity_over_seeds(*this, true);
}
std::vector<std::optional<double>> SweepResultsRow::distance_mean() const { return distance_over_seeds(*this, false); }
std::vector<std::optional<double>> SweepResultsRow::distance_std() const { return distance_over_seeds(*this, true); }

std::optional<double> SweepResultsRow::bits_per_byte(std::size_t s, std::size_t j) const {
  return bits_per_byte_at(nll, tokens, bytes, s, j);
}
std::vector<std::optional<double>> SweepResultsRow::bits_per_byte_mean() const {
  return over_seeds(*this, false, [&](std::size_t s, std::size_t j) { return bits_per_byte(s, j); });
}
std::vector<std::optional<double>> SweepResultsRow::bits_per_byte_std() const {
  return over_seeds(*this, true, [&](std::size_t s, std::size_t j) { return bits_per_byte(s, j); });
}
std::vector<std::optional<double>> SweepResultsRow::accuracy_mean() const { return accuracy_over_seeds(*this, false); }
std::vector<std::optional<double>> SweepResultsRow::accuracy_std() const { return accuracy_over_seeds(*this, true); }
std::vector<std::optional<double>> SweepResultsRow::accuracy_every_seed_mean() const {
  return accuracy_every_seed(*this, false);
}
std::vector<std::optional<double>> SweepResultsRow::accuracy_every_seed_std() const {
  return accuracy_every_seed(*this, true);
}
bool SweepResultsRow::has_unlearned_seed() const {
  if (!has_accuracy()) return false;
  const std::vector<bool> l = learned();
  return std::find(l.begin(), l.end(), false) != l.end();
}
std::vector<bool> SweepResultsRow::learned() const {
  return learned_seeds(accuracy, trained_accuracy, threshold());
}

bool SweepResultsRow::has_token_accuracy() const { return any_defined(token_accuracy); }
std::vector<std::optional<double>> SweepResultsRow::token_accuracy_mean() const {
  return over_seeds(*this, false, [&](std::size_t s, std::size_t j) { return token_accuracy_at(s, j); });
}
std::vector<std::optional<double>> SweepResultsRow::token_accuracy_std() const {
  return over_seeds(*this, true, [&](std::size_t s, std::size_t j) { return token_accuracy_at(s, j); });
}
std::optional<double> SweepResultsRow::token_accuracy_at(std::size_t s, std::size_t j) const {
  return cell_or(token_accuracy, s, j, std::optional<double>());
}
std::optional<double> SweepResultsRow::score(std::size_t s, const std::vector<int64_t>& multipliers) const {
  return s < token_accuracy.size() ? past_training_mean(token_accuracy[s], multipliers) : std::nullopt;
}
std::optional<std::pair<double, double>> SweepResultsRow::score_stats(const std::vector<int64_t>& multipliers) const {
  std::vector<std::optional<double>> scores;
  for (std::size_t s = 0; s < token_accuracy.size(); ++s) scores.push_back(score(s, multipliers));
  return mean_std(scores);
}

bool SweepResultsRow::has_bytes() const { return any_positive(bytes); }
bool SweepResultsRow::has_accuracy() const { return any_defined(accuracy); }

}  // namespace rpb

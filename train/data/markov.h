// rpb/train/data/markov.h: the markov task: a random order-k Markov chain over the vocabulary, its entropy rate exact.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/data/task.h"

namespace rpb::data {

/// A random order-k Markov chain over `vocab` tokens. Each of the vocab^k contexts (k-gram
/// states) has a next-token distribution drawn from a symmetric Dirichlet(concentration), so
/// the chain is almost surely ergodic; its entropy rate is exact:
/// H = sum_s pi(s) H(row s), pi the stationary distribution over k-gram states.
/// Each stream starts from a state drawn from pi (so its first k tokens are that state).
class MarkovTask final : public Task {
 public:
  explicit MarkovTask(const TaskOptions& options);
  /// Test hook: a chain with a given table, row-major (vocab^order rows of vocab
  /// probabilities, each summing to 1); options.concentration is not used.
  MarkovTask(const TaskOptions& options, std::vector<double> table);

  int64_t vocab() const override { return vocab_; }
  std::string describe() const override;
  std::optional<double> entropy_rate() const override { return entropy_; }

  int64_t order() const { return order_; }
  /// vocab^order.
  int64_t num_states() const { return states_; }
  /// Row s holds p(next token | state s); state of tokens (x_1..x_k), oldest first,
  /// is sum_i x_i vocab^(k-i).
  const std::vector<double>& table() const { return table_; }
  /// Stationary distribution over states (sums to 1; pi P = pi to ~1e-14).
  const std::vector<double>& stationary() const { return pi_; }
  /// The state after `state` emits `token`.
  int64_t next_state(int64_t state, int32_t token) const { return (state * vocab_ + token) % states_; }

 private:
  void validate(const TaskOptions& options);  // checks the options, sets vocab_, order_, states_
  void finish(const TaskOptions& options);    // from table_: stationary distribution, entropy, streams

  TaskOptions opt_;
  int64_t vocab_ = 0, order_ = 0, states_ = 0;
  std::vector<double> table_, pi_;
  double entropy_ = 0;
};

}  // namespace rpb::data

// rpb/train/data/position_loss.h: per-token loss by position, the diagnostic the Forgetting Transformer's evaluation
// plots (Lin et al. 2025, "Forgetting Transformer: Softmax Attention with a Forget Gate", its per-token loss against
// the token's position in a long sequence): the mean NLL of the scored targets at each position of the evaluated
// sequences. A model that uses a longer context has a loss that keeps falling with position; one that breaks past
// its training length has a loss that rises there.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/tensor.h"

namespace rpb::data {

/// -log softmax(z)[t] over the `vocab` logits at `z`, in float64: their log-sum-exp minus the target's.
double token_nll(const float* z, int64_t vocab, int64_t t);
double token_nll(const double* z, int64_t vocab, int64_t t);

/// Sums of -log softmax(logits)[target] by position of the model's input, over every sequence scored.
struct PositionLoss {
  std::vector<double> sum;       // [position]: NLL in nats, summed in float64
  std::vector<int64_t> targets;  // [position]: the scored targets summed there

  bool empty() const { return sum.empty(); }
  /// Adds one target's NLL (token_nll) at `position`.
  void add(int64_t position, double nll);
  /// Adds every target of logits (B, T, V) (f32 or f64) on the CPU against targets (B, T) i64 that is not
  /// `unscored`, at its column t.
  void add(const Tensor& logits, const Tensor& targets, int64_t unscored);
  /// The sums of `other` added position by position (the longer of the two sets the size).
  PositionLoss& operator+=(const PositionLoss& other);
  /// The mean NLL at each position; nullopt where no target was scored.
  std::vector<std::optional<double>> means() const;
};

/// The mean loss of consecutive positions in bins of `width` (the last bin may be shorter): the mean over the bin's
/// scored targets, nullopt for a bin without any.
struct BinnedPositionLoss {
  int64_t width = 1;                        // positions per bin
  std::vector<std::optional<double>> loss;  // [bin]: nats
};

/// `p` in the fewest bins of a whole width that number at most `max_bins` (width 1: every position).
BinnedPositionLoss binned(const PositionLoss& p, int64_t max_bins);

}  // namespace rpb::data

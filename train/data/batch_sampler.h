// rpb/train/data/batch_sampler.h: random training windows from a token stream; its State fixes every batch it will draw.
#pragma once

#include <cstdint>

#include "core/rng.h"
#include "core/tensor.h"
#include "train/data/token_stream.h"

namespace rpb::data {

/// Random training windows from one stream. The stream must outlive the sampler.
class BatchSampler {
 public:
  /// Needs stream.size() >= length + 1.
  BatchSampler(const TokenStream& stream, int64_t batch, int64_t length, uint64_t seed);
  BatchSampler(TokenStream&&, int64_t, int64_t, uint64_t) = delete;  // would dangle

  /// inputs (B, L) and targets (B, L) i64 (targets = inputs shifted by one), windows at uniform
  /// random offsets in [0, stream.size() - L - 1] drawn from the sampler's generator (one draw
  /// per row, row 0 first). Fresh tensors each call.
  void next(Tensor& inputs, Tensor& targets);

  struct State {
    Generator::State rng;
    int64_t batches_drawn = 0;
  };
  /// Saved in checkpoints; set_state() of it reproduces exactly the batches that followed.
  State state() const { return {rng_.state(), batches_drawn_}; }
  void set_state(const State& s);

  int64_t batch() const { return batch_; }
  int64_t length() const { return length_; }

 private:
  const TokenStream* stream_;
  int64_t batch_, length_;
  Generator rng_;
  int64_t batches_drawn_ = 0;
};

}  // namespace rpb::data

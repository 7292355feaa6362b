// rpb/train/data/batch_sampler.cpp: training batches drawn from a stream.
#include "train/data/batch_sampler.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "train/data/data_detail.h"
#include "train/data/sampling.h"

namespace rpb::data {

using detail::kBatchStream;

BatchSampler::BatchSampler(const TokenStream& stream, int64_t batch, int64_t length, uint64_t seed)
    : stream_(&stream), batch_(batch), length_(length), rng_(derive_seed(seed, kBatchStream)) {
  RPB_CHECK(batch >= 1, "batches", "batch must be >= 1, got ", batch);
  RPB_CHECK(length >= 1, "batches", "length must be >= 1, got ", length);
  RPB_CHECK(static_cast<int64_t>(stream.size()) >= length + 1, "batches", "a window of length ", length,
            " needs a stream of at least ", length + 1, " tokens, got ", stream.size());
}

void BatchSampler::next(Tensor& inputs, Tensor& targets) {
  const TokenStream& s = *stream_;
  const auto offsets = static_cast<uint64_t>(s.size() - length_);  // valid starts: [0, size - L - 1]
  inputs = Tensor::empty({batch_, length_}, DType::i64);
  targets = Tensor::empty({batch_, length_}, DType::i64);
  int64_t* in = inputs.mutable_data<int64_t>();
  int64_t* tg = targets.mutable_data<int64_t>();
  for (int64_t b = 0; b < batch_; ++b) {
    const auto off = static_cast<int64_t>(uniform_index(rng_, offsets));
    s.copy_to(off, off + length_, in + b * length_);
    s.copy_to(off + 1, off + length_ + 1, tg + b * length_);
  }
  ++batches_drawn_;
}

void BatchSampler::set_state(const State& s) {
  RPB_CHECK(s.batches_drawn >= 0, "batches", "batches_drawn must be >= 0, got ", s.batches_drawn);
  rng_.set_state(s.rng);
  batches_drawn_ = s.batches_drawn;
}

}  // namespace rpb::data

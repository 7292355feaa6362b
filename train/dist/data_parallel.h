// rpb/train/dist/data_parallel.h: what data-parallel training adds to a step (Run, train/trainer.h): the ranks'
// gradients averaged, and the parameters every rank starts from made the same. Built on train/dist/distributed.h.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/module.h"
#include "optim/optimizer.h"

namespace rpb {

/// Averages gradients over the ranks of the job: packs every defined gradient of `params`, in their order, into
/// one contiguous buffer per dtype (float32, float64), sums it with MPI_Allreduce in buckets of 4 MiB (one call
/// for model A's and B's gradients; for larger buffers Open MPI's single call is up to 12x slower, bench/mpi.md),
/// divides by the rank count and unpacks. The buffers are kept between steps. With one rank it does nothing.
class GradientAverager {
 public:
  /// Every rank must pass the same parameters with gradients defined alike (else rpb::Error names the first
  /// parameter whose gradient is missing on some rank).
  void average(const std::vector<optim::NamedParam>& params);

  /// Bytes the last average() sent per rank (its buffers), for the benchmarks.
  int64_t bytes() const { return bytes_; }

 private:
  std::vector<float> f32_;
  std::vector<double> f64_;
  std::vector<double> defined_;  // per parameter: 1 where its gradient is defined, summed over ranks
  int64_t bytes_ = 0;
};

/// Rank 0's values of `tensors` (parameters, buffers) copied into every rank's, in place.
void broadcast_tensors(const nn::NamedTensors& tensors);

}  // namespace rpb

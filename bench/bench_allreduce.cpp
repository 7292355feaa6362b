// bench_allreduce: the gradient allreduce of data-parallel training (train/dist/distributed.h, one float32 buffer per
// step) against its size, and one buffer against buckets of it, on the ranks mpirun starts:
//   mpirun -np 2 build/bench_allreduce [--quick]
// Sizes run from 1e3 floats to 32M (model A has 405,120 parameters, model B 3.2M, "10x B" 32M). Each figure is
// the median over repetitions of rank 0's time, every repetition starting after a barrier; "algbw" is the buffer's
// bytes over that time. Prints a Markdown table on rank 0.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "train/dist/distributed.h"

namespace {

using Clock = std::chrono::steady_clock;

// Median seconds of `reps` allreduces of n floats in buckets of `bucket` floats (0: one call).
double median_seconds(std::vector<float>& buf, std::size_t n, std::size_t bucket, int reps) {
  std::vector<double> t;
  for (int r = 0; r < reps + 1; ++r) {  // the first one warms the connection and the buffers up: not counted
    rpb::dist::barrier();
    const auto t0 = Clock::now();
    if (bucket == 0 || bucket >= n) {
      rpb::dist::allreduce_sum(buf.data(), n);
    } else {
      for (std::size_t at = 0; at < n; at += bucket) rpb::dist::allreduce_sum(buf.data() + at, std::min(bucket, n - at));
    }
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r > 0) t.push_back(s);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  rpb::dist::Session mpi(argc, argv);
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  if (!rpb::dist::built_with_mpi() || rpb::dist::size() < 2) {
    if (rpb::dist::rank() == 0)
      std::printf("bench_allreduce: needs an MPI build and at least 2 ranks (mpirun -np 2 %s); this is %s with %d\n",
                  argv[0], rpb::dist::built_with_mpi() ? "an MPI build" : "a build without MPI", rpb::dist::size());
    return rpb::dist::built_with_mpi() && rpb::dist::size() < 2 ? 2 : 0;
  }
  const std::vector<std::size_t> sizes = {1000, 10000, 100000, 405120, 1000000, 3200000, 10000000, 32000000};
  const std::size_t mib = 262144;  // floats in 1 MiB
  if (rpb::dist::rank() == 0) {
    std::printf("MPI_Allreduce of float32 sums, %d ranks (%s), median of rank 0's time after a barrier\n\n",
                rpb::dist::size(), rpb::dist::library_version().c_str());
    std::printf("| floats | MB | one buffer ms | algbw GB/s | 1 MiB buckets ms | 4 MiB buckets ms |\n");
    std::printf("|---|---|---|---|---|---|\n");
  }
  for (const std::size_t n : sizes) {
    std::vector<float> buf(n, 1.0f);
    const int reps = quick ? 5 : std::max(5, static_cast<int>(std::min<std::size_t>(200, 400000000 / (n * 40))));
    const double one = median_seconds(buf, n, 0, reps);
    const double b1 = median_seconds(buf, n, mib, reps);
    const double b4 = median_seconds(buf, n, 4 * mib, reps);
    if (rpb::dist::rank() == 0)
      std::printf("| %zu | %.2f | %.3f | %.2f | %.3f | %.3f |\n", n, n * 4.0 / 1e6, 1e3 * one, n * 4.0 / one / 1e9,
                  1e3 * b1, 1e3 * b4);
  }
  return 0;
}

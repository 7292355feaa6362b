// rpb/core/parallel.h: the one pool of worker threads that rpb's kernels split their work over:
// batch x heads in fused attention, blocks of rows in matmul, fixed blocks of elements in
// elementwise ops and layer_norm.
//
// Items are split into contiguous, equal chunks, one per thread, so a kernel whose item i writes
// only item i's outputs gives bit-identical results run to run and for any thread count. An idle
// worker polls for the next job for a few hundred microseconds (pausing, and yielding its core every
// few microseconds), then sleeps on a condition variable; the caller waits for the end of a job the
// same way. A futex wake-up per call cost a small model's step 10-20%. OpenBLAS is kept on one thread
// (matmul sets openblas_set_num_threads(1) before each call): with its own pool beside this one,
// its idle threads spin on the cores this pool needs, which cost model A's step 20-30%.
#pragma once

#include <cstdint>
#include <functional>

namespace rpb {

/// Threads parallel_for uses: RPB_NUM_THREADS if set, else the hardware's count.
int num_threads();
/// Sets the count (>= 1); takes effect at the next parallel_for.
void set_num_threads(int n);

/// Runs body(begin, end) over a split of [0, n) on up to num_threads() threads, the calling thread
/// included, and returns when all are done. The first exception a chunk throws is rethrown here.
/// Called from inside a body it runs serially on the calling thread.
void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& body);

}  // namespace rpb

// rpb/core/parallel.h: a small pool of worker threads for kernels that split work over
// independent items (batch x heads in fused attention).
//
// Items are split into contiguous, equal chunks, one per thread, so a kernel whose item i writes
// only item i's outputs gives bit-identical results run to run and for any thread count. Idle
// workers sleep on a condition variable instead of spinning, so they never compete with
// OpenBLAS's own threads for the cores between kernels.
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

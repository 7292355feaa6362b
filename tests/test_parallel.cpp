// core/parallel.h: the thread pool, and the kernels that split their work over it.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/core.h"
#include "core/parallel.h"
#include "test_util.h"

using namespace rpb;
using rpb::testing::contains;
using rpb::testing::error_of;

namespace {

// Restores the thread count when a test ends.
struct ThreadCount {
  int saved = num_threads();
  ~ThreadCount() { set_num_threads(saved); }
};

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data<float>(), b.data<float>(), a.numel() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("parallel_for covers every item once, in contiguous chunks, and runs nested calls serially") {
  ThreadCount restore;
  for (const int threads : {1, 2, 3, 8}) {
    set_num_threads(threads);
    for (const int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      std::atomic<int> chunks{0};
      parallel_for(n, [&](int64_t begin, int64_t end) {
        CHECK(begin < end);
        ++chunks;
        for (int64_t i = begin; i < end; ++i) ++hits[static_cast<std::size_t>(i)];
        // A nested call runs on this thread, serially.
        int64_t inner = 0;
        parallel_for(3, [&](int64_t b, int64_t e) { inner += e - b; });
        CHECK(inner == 3);
      });
      for (const auto& h : hits) CHECK(h == 1);
      CHECK(chunks <= std::min<int64_t>(threads, n));
    }
  }
}

TEST_CASE("parallel_for rethrows a chunk's exception in the caller, and the pool keeps working") {
  ThreadCount restore;
  set_num_threads(2);
  CHECK(contains(error_of([] {
                   parallel_for(10, [](int64_t begin, int64_t) {
                     if (begin > 0) RPB_FAIL("worker", "chunk starting at ", begin, " failed");
                   });
                 }),
                 "worker: chunk starting at 5 failed"));
  int64_t total = 0;
  std::mutex m;
  parallel_for(10, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(m);
    total += e - b;
  });
  CHECK(total == 10);
  CHECK(contains(error_of([] { set_num_threads(0); }), "thread count must be at least 1, got 0"));
}

TEST_CASE("parallel_for runs thousands of jobs back to back and after idle gaps, also with fewer chunks than threads") {
  // Workers poll for the next job, then sleep; the caller polls for the end of one, then sleeps. A lost
  // wake-up would hang here; a job handed to a worker that sits it out would hit an item twice or never.
  ThreadCount restore;
  int64_t wrong = 0;
  for (int round = 0; round < 3000; ++round) {
    set_num_threads(1 + round % 4);
    const int64_t n = round % 7;  // 0 to 6 items: often fewer chunks than threads
    std::vector<int> hits(static_cast<std::size_t>(n), 0);
    parallel_for(n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) ++hits[static_cast<std::size_t>(i)];
    });
    for (const int h : hits) wrong += h != 1;
    if (round % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past the polling: asleep
  }
  CHECK(wrong == 0);
}

TEST_CASE("matmul, elementwise ops, layer_norm and their gradients are bit-identical on 1, 2 and 3 threads") {
  ThreadCount restore;
  Generator gen(5);
  // Several 16K-element blocks, rows that do not divide them evenly.
  const Tensor x = randn({300, 257}, gen).requires_grad_(), y = randn({300, 257}, gen).requires_grad_();
  const Tensor w = randn({257}, gen).requires_grad_(), b = randn({257}, gen).requires_grad_();
  const Tensor m = randn({257, 257}, gen).requires_grad_();  // matmul splits its rows over the threads
  const Tensor g = randn({300, 257}, gen);
  std::vector<std::vector<Tensor>> runs;
  for (const int threads : {1, 2, 3}) {
    set_num_threads(threads);
    for (const Tensor* t : {&x, &y, &w, &b, &m}) t->zero_grad();
    const Tensor h = matmul(layer_norm(add(mul(gelu(x, GeluApprox::tanh), y), b), w, b), m);
    const Tensor out = add(exp(mul_scalar(h, 0.1)), tanh(h));
    backward(out, g);
    runs.push_back({out.detach(), x.grad(), y.grad(), w.grad(), b.grad(), m.grad()});
  }
  for (std::size_t r = 1; r < runs.size(); ++r)
    for (std::size_t i = 0; i < runs[0].size(); ++i) {
      INFO("run ", r, ", tensor ", i);
      CHECK(same_bits(runs[r][i], runs[0][i]));
    }
}

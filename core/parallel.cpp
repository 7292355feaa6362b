#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"

namespace rpb {

namespace {

int default_threads() {
  if (const char* env = std::getenv("RPB_NUM_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    RPB_CHECK(end != env && *end == '\0' && n >= 1 && n <= 1024, "parallel",
              "RPB_NUM_THREADS must be an integer in [1, 1024], got '", env, "'");
    return static_cast<int>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

thread_local bool t_inside = false;

// How long an idle worker keeps polling for the next job, and the caller for the end of the current
// one, before blocking. A step of a small model issues a parallel_for every few tens of microseconds;
// a futex wake-up costs 30 us back to back and 100 us once the idle core has gone to sleep (measured on
// the 2-core bench VM), which made every such call lose that much. Polling pauses the core and yields
// it every few microseconds, so another runnable thread (a second test process, say) still gets it.
constexpr auto kPollFor = std::chrono::microseconds(300);

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls `ready` for up to kPollFor; true once it holds.
template <typename Ready>
bool poll(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + kPollFor;
  for (unsigned i = 1;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if (i % 64 == 0) {
      if (std::chrono::steady_clock::now() >= deadline) return ready();
      std::this_thread::yield();
    }
  }
}

// A job is published through job_; workers poll for that, then block on wake_. The caller
// runs chunk 0, then polls pending_, then blocks on done_. Sleeping and waking use the same handshake
// both ways: the sleeper announces itself (sleepers_ or caller_asleep_) under mutex_ and re-checks its
// condition there; the waker changes the condition first and takes mutex_ before notifying whenever it
// sees the announcement. Both sides are seq_cst, so at least one of them sees the other's write and no
// wake-up is lost.
class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  void run(int threads, int64_t n, const std::function<void(int64_t, int64_t)>& body) {
    std::lock_guard<std::mutex> serial(run_mutex_);  // one parallel_for at a time across caller threads
    grow(threads - 1);
    // Participating workers read these only after they see the new job (acquire); none is mid-job here.
    body_ = &body;
    n_ = n;
    error_ = nullptr;
    pending_.store(threads - 1);
    job_.store(((job_.load() >> kChunkBits) + 1) << kChunkBits | static_cast<uint64_t>(threads));
    if (sleepers_.load() > 0) {
      { std::lock_guard<std::mutex> lock(mutex_); }
      wake_.notify_all();
    }
    run_chunk(0, threads);
    if (!poll([&] { return pending_.load(std::memory_order_acquire) == 0; })) {
      std::unique_lock<std::mutex> lock(mutex_);
      caller_asleep_.store(true);
      done_.wait(lock, [&] { return pending_.load() == 0; });
      caller_asleep_.store(false);
    }
    body_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void grow(int workers) {
    while (static_cast<int>(workers_.size()) < workers) {
      const int id = static_cast<int>(workers_.size()) + 1;
      workers_.emplace_back([this, id] { loop(id); });
    }
  }

  // Chunk c of the current job's `chunks` equal chunks.
  void run_chunk(int c, int chunks) {
    const int64_t begin = n_ * c / chunks, end = n_ * (c + 1) / chunks;
    if (begin == end) return;
    t_inside = true;
    try {
      (*body_)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    t_inside = false;
  }

  void loop(int id) {
    uint64_t seen = 0;
    for (;;) {
      const auto next = [&] { return stop_.load() || job_.load(std::memory_order_acquire) != seen; };
      if (!poll(next)) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, next);
        sleepers_.fetch_sub(1);
      }
      if (stop_.load()) return;
      seen = job_.load(std::memory_order_acquire);
      const int chunks = static_cast<int>(seen & kChunkMask);
      if (id >= chunks) continue;  // this job uses fewer threads
      run_chunk(id, chunks);
      if (pending_.fetch_sub(1) == 1 && caller_asleep_.load()) {
        { std::lock_guard<std::mutex> lock(mutex_); }
        done_.notify_one();
      }
    }
  }

  std::mutex run_mutex_, mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  // The job: written by the caller before it publishes job_, read only by the threads that run a chunk.
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t n_ = 0;
  std::exception_ptr error_;  // under mutex_
  // A job's generation (high bits) and its thread count (low bits), published in one store, so that a
  // worker that sits a job out reads its count consistently while the caller may already write the next.
  static constexpr int kChunkBits = 16;
  static constexpr uint64_t kChunkMask = (uint64_t{1} << kChunkBits) - 1;
  std::atomic<uint64_t> job_{0};
  std::atomic<int> pending_{0};          // workers still running the current job's chunks
  std::atomic<int> sleepers_{0};         // workers blocked (or about to block) on wake_
  std::atomic<bool> caller_asleep_{false};
  std::atomic<bool> stop_{false};
};

std::mutex g_config_mutex;
int g_threads = 0;  // 0: not yet read from the environment

}  // namespace

int num_threads() {
  std::lock_guard<std::mutex> lock(g_config_mutex);
  if (g_threads == 0) g_threads = default_threads();
  return g_threads;
}

void set_num_threads(int n) {
  RPB_CHECK(n >= 1, "parallel", "thread count must be at least 1, got ", n);
  std::lock_guard<std::mutex> lock(g_config_mutex);
  g_threads = n;
}

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  const int threads = static_cast<int>(std::min<int64_t>(num_threads(), n));
  if (threads <= 1 || t_inside) {
    body(0, n);
    return;
  }
  static Pool pool;
  pool.run(threads, n, body);
}

}  // namespace rpb

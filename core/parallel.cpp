#include "core/parallel.h"

#include <algorithm>
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

// Workers wait for a generation counter to move, run their chunk, and report back.
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
    {
      std::lock_guard<std::mutex> lock(mutex_);
      body_ = &body;
      n_ = n;
      chunks_ = threads;
      pending_ = threads - 1;
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    run_chunk(0);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
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

  void run_chunk(int c) {
    const int64_t begin = n_ * c / chunks_, end = n_ * (c + 1) / chunks_;
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
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        if (id >= chunks_) continue;  // this round uses fewer threads
      }
      run_chunk(id);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (--pending_ == 0) done_.notify_one();
      }
    }
  }

  std::mutex run_mutex_, mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t n_ = 0;
  int chunks_ = 1, pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
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

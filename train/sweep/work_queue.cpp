#include "train/sweep/work_queue.h"

#include <chrono>
#include <thread>
#include <vector>

#include "train/dist/distributed.h"

namespace rpb {

namespace {

constexpr int kRequest = 101;  // rank -> 0: {rank}, "give me a job" (sent after finishing the previous one)
constexpr int kAssign = 102;   // 0 -> rank: {job}, or {-1}: no job left

// Rank 0's side: the next job to hand out, and how many other ranks have been told there is none left.
class Dispatcher {
 public:
  explicit Dispatcher(int64_t jobs) : jobs_(jobs) {}

  // The next job, or -1.
  int64_t take() { return next_ < jobs_ ? next_++ : -1; }

  // Answers every request waiting; never blocks.
  void serve() {
    std::vector<int64_t> request;
    while (dist::message_waiting(kRequest)) {
      const int from = dist::receive(request, kRequest);
      const int64_t job = take();
      if (job < 0) ++finished_;
      dist::send(std::vector<int64_t>{job}, from, kAssign);
    }
  }

  // Waits (polling, so that the ranks still training keep their cores) until every other rank has finished.
  void wait_for_ranks() {
    while (finished_ < dist::size() - 1) {
      serve();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

 private:
  int64_t jobs_, next_ = 0;
  int finished_ = 0;
};

}  // namespace

void run_work_queue(int64_t jobs, const std::function<void(int64_t job, const ServeRequests& serve)>& work) {
  const ServeRequests nothing = [] {};
  if (dist::size() == 1) {
    for (int64_t j = 0; j < jobs; ++j) work(j, nothing);
    return;
  }
  if (dist::rank() == 0) {
    Dispatcher d(jobs);
    const ServeRequests serve = [&d] { d.serve(); };
    for (int64_t j = d.take(); j >= 0; j = d.take()) {
      d.serve();
      work(j, serve);
    }
    d.wait_for_ranks();
    return;
  }
  std::vector<int64_t> reply;
  while (true) {
    dist::send(std::vector<int64_t>{dist::rank()}, 0, kRequest);
    dist::receive(reply, kAssign);
    if (reply.empty() || reply[0] < 0) return;
    work(reply[0], nothing);
  }
}

}  // namespace rpb

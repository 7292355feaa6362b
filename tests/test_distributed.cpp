// train/dist/distributed.h and train/dist/data_parallel.h in one process (tests/mpi/test_data_parallel.py runs them under
// mpirun): a plain process is rank 0 of 1 whatever the build, the shards of a batch, the dropout streams of the
// shards, `rpb --version` saying whether MPI is built in, and record_sigusr1 (what every rank under mpirun sets up).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/core.h"
#include "test_util.h"
#include "train/dist/data_parallel.h"
#include "train/dist/distributed.h"
#include "train/interrupt.h"
#include "train/sweep/work_queue.h"
#include "train/workload.h"

using namespace rpb;
using rpb::testing::contains;
using rpb::testing::error_of;

TEST_CASE("distributed: a process not started by mpirun is rank 0 of 1, and the collectives leave values alone") {
  CHECK_FALSE(dist::initialized());
  CHECK(dist::rank() == 0);
  CHECK(dist::size() == 1);
  CHECK(dist::local_size() == 1);
  CHECK(dist::default_threads() >= 1);
  std::vector<float> f{1.5f, -2.0f};
  std::vector<double> d{3.25};
  int64_t i = 7;
  std::string s = "kept";
  dist::allreduce_sum(f.data(), f.size());
  dist::allreduce_sum(d.data(), d.size());
  dist::allreduce_max(&i, 1);
  dist::broadcast(s);
  dist::barrier();
  CHECK(f == std::vector<float>{1.5f, -2.0f});
  CHECK(d == std::vector<double>{3.25});
  CHECK(i == 7);
  CHECK(s == "kept");

  // One rank: averaging changes no gradient.
  Tensor w = Tensor::from_vector({2}, std::vector<float>{1, 2}).requires_grad_();
  backward(sum(mul_scalar(w, 3.0)));
  GradientAverager avg;
  avg.average({{"w", w}});
  CHECK(w.grad().to_vector() == std::vector<double>{3, 3});
}

TEST_CASE("distributed: one process runs on_root's work and rethrows its error, its ending settles at once") {
  int calls = 0;
  dist::on_root([&] { ++calls; });
  CHECK(calls == 1);
  CHECK_THROWS_AS(dist::on_root([] { throw UsageError("train: a usage error"); }), UsageError);
  CHECK(error_of([] { dist::on_root([] { RPB_FAIL("train", "the run folder exists"); }); })
            .rfind("train: the run folder exists [", 0) == 0);  // rank 0's own error, its location kept
  const dist::Settled s = dist::settle_ending(1, "train: failed", std::chrono::milliseconds(0));
  CHECK(s.every_rank);
  CHECK(s.codes == std::vector<int>{1});
  CHECK(s.messages == std::vector<std::string>{"train: failed"});
}

TEST_CASE("distributed: rpb --version says whether MPI is built in") {
  const auto r = rpb::testing::run_rpb("--version");
  CHECK(r.code == 0);
  if (dist::built_with_mpi()) {
    CHECK(contains(r.out, "(MPI: "));
    CHECK(contains(r.out, dist::library_version()));
  } else {
    CHECK(contains(r.out, "(built without MPI: one process; "));
    CHECK(dist::library_version().empty());
  }
}

TEST_CASE("data parallel: the shards of a batch are its rows in rank order, and must divide it") {
  const Tensor batch = Tensor::indices({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(shard_rows(batch, {}).to_vector() == batch.to_vector());
  CHECK(shard_rows(batch, {1, 2}).to_vector() == std::vector<double>{4, 5, 6, 7});
  CHECK(shard_rows(batch, {3, 4}).to_vector() == std::vector<double>{6, 7});
  CHECK(contains(error_of([&] { shard_rows(batch, {0, 3}); }), "a batch of 4 rows does not split into 3 equal shards"));
}

TEST_CASE("data parallel: one shard keeps the dropout stream, several draw from (seed, step, shard)") {
  Generator g(5);
  const Generator::State before = g.state();
  shard_dropout(g, 1, 10, {});
  CHECK(g.state() == before);  // a one-process run draws as it always has
  Generator a(0), b(0), c(0), d(99);
  shard_dropout(a, 1, 10, {0, 2});
  shard_dropout(b, 1, 10, {1, 2});
  shard_dropout(c, 1, 11, {0, 2});
  shard_dropout(d, 1, 10, {0, 2});
  CHECK(a.state() != b.state());  // each shard its own masks
  CHECK(a.state() != c.state());  // each step
  CHECK(a.state() == d.state());  // and nothing else: a resumed run draws the same
}

TEST_CASE("work queue: one process runs every job in order, and serving requests is a no-op") {
  std::vector<int64_t> done;
  run_work_queue(3, [&](int64_t job, const ServeRequests& serve) {
    serve();
    done.push_back(job);
  });
  CHECK(done == std::vector<int64_t>{0, 1, 2});
  run_work_queue(0, [&](int64_t, const ServeRequests&) { FAIL("no job to run"); });
}

namespace record_sigusr1_test {

// In a child process (record_sigusr1 lasts for the rest of the process): SIGUSR1 before, while and after
// InterruptHandlers, outside any DeferInterrupts span, is recorded and kept, and the child lives on. 0 when so.
int child_checks() {
  record_sigusr1();
  ::raise(SIGUSR1);  // start-up: the default action would kill the process
  if (pending_interrupt() != SIGUSR1) return 1;
  {
    const InterruptHandlers handlers;  // keeps the start-up's SIGUSR1: the run stops after its first step
    if (pending_interrupt() != SIGUSR1) return 2;
    ::raise(SIGUSR1);  // a second one, outside a span (an evaluation): would _exit(138)
  }
  if (pending_interrupt() != SIGUSR1) return 3;
  ::raise(SIGUSR1);  // after the handlers: the default action again would kill the process
  return 0;
}

}  // namespace record_sigusr1_test

TEST_CASE("interrupt: with record_sigusr1, SIGUSR1 is recorded from start-up to the end and never ends the process") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(record_sigusr1_test::child_checks());
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK_FALSE(WIFSIGNALED(status));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

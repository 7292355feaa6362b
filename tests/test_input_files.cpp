// Issue 24, inputs: every file rpb reads (a config, a kjv text, a checkpoint) is refused at once when it is a FIFO
// or a device, or larger than its bound; an unreadable checkpoint says why; eval builds only the split it reads and
// its memory estimate counts only what it builds; a failed allocation is named by the estimate's largest part.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hostile_files.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/config/config.h"
#include "train/config/memory.h"
#include "train/data/kjv.h"
#include "train/data/task.h"
#include "train/io/sha256.h"
#include "train/trainer.h"

namespace rpb::h2_input_tests {

namespace fs = std::filesystem;
using testing::contains;
using testing::in_child;
using testing::TempDir;

// A FIFO and a character device like /dev/zero (made here, the system's is not touched) in `dir`.
struct Specials {
  std::string fifo, zero;
  explicit Specials(const TempDir& dir) : fifo(dir.file("fifo")), zero(dir.file("zero")) {
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    REQUIRE(::mknod(zero.c_str(), S_IFCHR | 0600, makedev(1, 5)) == 0);
  }
};

// Runs `load` in a child (killed after 5 s) and returns its error; fails the test on a hang, a crash or no error.
std::string refusal_of(const std::function<void()>& load) {
  const testing::ChildRun r = in_child(load, 5);
  REQUIRE_MESSAGE(r.finished, "the read hung or crashed");
  CHECK(r.error != "no error");
  CHECK(r.memory_growth_kb < 64 * 1024);
  return r.error;
}

data::TaskOptions kjv_at(const std::string& path) {
  data::TaskOptions o;
  o.kind = "kjv";
  o.kjv_path = path;
  o.generate_missing = false;
  return o;
}

// What rpb did when run with `args` in its own process, killed after 5 s.
struct Bounded {
  bool exited = false;  // false: killed after 5 s, or crashed
  int code = -1;
  long peak_rss_kb = 0;
  std::string out;  // stdout and stderr
};

Bounded run_bounded(const std::vector<std::string>& args, const TempDir& dir) {
  const std::string log = dir.file("rpb.log");
  const pid_t pid = testing::spawn_rpb(args, log);
  int status = 0;
  rusage usage{};
  const auto t0 = std::chrono::steady_clock::now();
  while (::wait4(pid, &status, WNOHANG, &usage) == 0) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(5)) ::kill(pid, SIGKILL);
    ::usleep(10000);
  }
  return {WIFEXITED(status), WIFEXITED(status) ? WEXITSTATUS(status) : -1, usage.ru_maxrss, testing::file_text(log)};
}

// A tiny markov run trained for 2 steps in dir/run; returns its checkpoint.
std::string tiny_checkpoint(const TempDir& dir) {
  Run run(parse_config(testing::file_text(RPB_SOURCE_DIR "/configs/t5.toml"), "t5.toml",
                       testing::tiny_t5_overrides(dir.path, "run", 2)),
          Parallel::this_process);
  run.train(false);
  return (dir.path / "run" / "step_00000002.h5").string();
}

TEST_CASE("input files: a FIFO or a device given as a config, a kjv text or a checkpoint is refused at once") {
  TempDir dir("h2_specials");
  const Specials s(dir);
  for (const std::string& path : {s.fifo, s.zero}) {
    const std::string kind = path == s.fifo ? "is a FIFO, not a regular file" : "is a character device, not a regular file";
    CHECK(contains(refusal_of([&] { load_config(path); }), "config " + path + ": " + kind));
    CHECK(contains(refusal_of([&] { data::make_task(kjv_at(path)); }), "kjv text " + path + ": " + kind));
    CHECK(contains(refusal_of([&] { load_checkpoint(path); }), "checkpoint " + path + ": " + kind));
  }
  // The command line says it in one line, without a source path, and exits 1 at once.
  const Bounded r = run_bounded({"train", s.fifo}, dir);
  CHECK(r.exited);
  CHECK(r.code == 1);
  CHECK(contains(r.out, "config " + s.fifo + ": is a FIFO, not a regular file"));
  CHECK(!contains(r.out, ".cpp:"));
}

TEST_CASE("input files: a config or a kjv text larger than its bound is refused naming the bound") {
  TempDir dir("h2_large");
  const std::string big = dir.file("big.txt");
  { std::ofstream(big) << "x"; }
  fs::resize_file(big, data::kMaxKjvTextBytes + 1);  // sparse: zeros that take no disk space
  const std::string text_error = refusal_of([&] { data::make_task(kjv_at(big)); });
  CHECK(contains(text_error, "is larger than " + std::to_string(data::kMaxKjvTextBytes) + " bytes"));
  CHECK(!contains(text_error, "books"));
  CHECK(contains(refusal_of([&] { load_config(big); }),
                 "is larger than " + std::to_string(kMaxConfigBytes) + " bytes"));
}

TEST_CASE("input files: a checkpoint is read once, its digest is of the bytes read, and a bound or a refusal names why") {
  TempDir dir("h2_checkpoint");
  const std::string file = testing::saved_checkpoint(dir, "ck.h5");
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(load_checkpoint(file, false, FileDigest::sha256).file_sha256 == sha256_hex(bytes));
  CHECK(load_checkpoint(file).file_sha256.empty());  // hashed only when asked for
  // save_checkpoint hashes the image it writes, when asked for: the file's digest, with no read of it.
  const std::string again = dir.file("again.h5");
  const std::string written = save_checkpoint(again, testing::small_checkpoint(), FileDigest::sha256);
  CHECK(written == sha256_file(again));
  CHECK(save_checkpoint(again, testing::small_checkpoint()).empty());

  const MemoryBudget before = memory_budget();
  set_memory_budget({1000, "--max-memory 1000"});
  const std::string error = testing::error_of([&] { load_checkpoint(file); });
  set_memory_budget(before);
  CHECK(contains(error, "is larger than 1000 bytes, the memory limit (--max-memory 1000)"));

  // Unreadable (as root nothing is: the child drops to nobody): the system's reason, not "not an HDF5 file".
  ::chmod(file.c_str(), 0);
  const std::string unreadable = refusal_of([&] {
    if (::geteuid() == 0) REQUIRE(::setuid(65534) == 0);
    load_checkpoint(file);
  });
  CHECK(contains(unreadable, "cannot open the file: Permission denied"));
  CHECK(!contains(unreadable, "HDF5"));
}

TEST_CASE("eval builds the test split and the model only, and its memory estimate counts only those") {
  TempDir dir("h2_eval");
  const std::string file = tiny_checkpoint(dir);
  Checkpoint c = load_checkpoint(file);
  const std::string small = "train_tokens = 4096";
  REQUIRE(contains(c.config_text, small));
  c.config_text.replace(c.config_text.find(small), small.size(), "train_tokens = 268435456");  // 2^28: 1 GiB
  const std::string big = dir.file("big_train_split.h5");
  save_checkpoint(big, c);

  const RunConfig cfg = parse_stored_config(c.config_text, big);
  const MemoryEstimate e = estimate_memory(cfg, 5, MemoryUse::evaluate);
  CHECK(e.training.bytes == 0);
  CHECK(e.data.bytes < (std::size_t{1} << 20));
  CHECK(!contains(e.describe(), "training step"));
  CHECK(estimate_memory(cfg, 5).data.bytes > (std::size_t{1} << 30));  // training would build it

  // The command, in its own process (a fork of this one, whose thread pool has run, could deadlock).
  const Bounded r = run_bounded({"eval", big, "--no-record"}, dir);
  CHECK_MESSAGE(r.exited, "killed after 5 s");
  CHECK_MESSAGE(r.code == 0, r.out);
  CHECK(r.peak_rss_kb < 200 * 1024);  // building the train split took 1 GiB more

  // The command's refusal under a small limit blames what eval builds, not a training step.
  const testing::CommandResult m = testing::run_rpb("eval " + big + " --max-memory 100K");
  CHECK(m.code == 1);
  CHECK(!contains(m.out, "training step"));
  CHECK(!contains(m.out, "run.batch"));
}

TEST_CASE("an allocation that fails is named by the memory estimate's largest part and its key") {
  RunConfig cfg = parse_config("[task]\ntrain_tokens = 4294967296\n", "big.toml");
  check_memory(estimate_memory(cfg, 16), {}, "run big");
  const std::string m = out_of_memory_message();
  CHECK(contains(m, "run big: task.train_tokens: out of memory"));
  CHECK(contains(m, "reduce task.train_tokens"));
// ulimit -v cannot bound a process built with AddressSanitizer (its shadow memory needs terabytes of address space):
// gcc says so with __SANITIZE_ADDRESS__, clang 14 only through __has_feature.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RPB_H2_ASAN 1
#endif
#endif
#if !defined(__SANITIZE_ADDRESS__) && !defined(RPB_H2_ASAN)
  TempDir dir("h2_oom");
  std::string args;
  for (const std::string& o : testing::tiny_t5_overrides(dir.path, "run", 2)) args += " --set '" + o + "'";
  const std::string cmd = std::string("ulimit -v 2000000; ") + RPB_BINARY + " train " RPB_SOURCE_DIR
                          "/configs/t5.toml" + args + " --set task.train_tokens=4294967296 --max-memory 64G 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = ::pclose(p);
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(contains(out, "task.train_tokens: out of memory"));
  CHECK(!contains(out, "bad_alloc"));
#endif
}

}  // namespace rpb::h2_input_tests

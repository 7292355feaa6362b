// SIGINT, SIGTERM and SIGUSR1 sent to a running `rpb train`: a checkpoint of the step, a resume command that works, the
// exit codes 130 and 143; a second signal, or one during the final evaluation, ends the process at once.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "run_checks.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/run/latest.h"
#include "train/run/run_folder.h"

namespace fs = std::filesystem;
using namespace rpb;
using rpb::testing::TempDir;
using rpb::testing::check_same_bits;
using rpb::testing::csv_without_times;
using rpb::testing::contains;
using rpb::testing::file_text;
using rpb::testing::lines_stamped_otherwise;
using rpb::testing::run_rpb;
using rpb::testing::spawn_rpb;
using rpb::testing::temp_files;

namespace {

// 400 steps of a few ms each, validated every 50 and saved every 100.
std::string signal_config(const fs::path& out,
                          const std::string& eval = "eval_multipliers = [1, 2]\neval_tokens = 256\n") {
  return "[run]\nname = \"run\"\nout_dir = \"" + out.string() +
         "\"\nsteps = 400\nbatch = 8\nlength = 32\nlog_every = 5\ncheckpoint_every = 100\neval_every = 50\n" + eval +
         "[model]\nd_model = 32\nheads = 2\nlayers = 2\nd_ff = 64\ndropout = 0.1\n"
         "[position]\nscheme = \"t5\"\nnum_buckets = 8\nmax_distance = 64\n"
         "[task]\nkind = \"markov\"\nvocab = 5\norder = 1\ntrain_tokens = 8192\neval_tokens = 40000\n"
         "[optim]\nlr = 1e-2\nschedule = \"cosine\"\nwarmup_steps = 2\n";
}

// The largest step train.log of `dir` has logged ("step K/<steps>"); 0 before the first.
int64_t logged_step(const fs::path& dir) {
  static const std::regex step_re("step ([0-9]+)/[0-9]+");
  const std::string log = file_text(dir / "train.log");
  int64_t k = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), step_re); it != std::sregex_iterator(); ++it)
    k = std::max<int64_t>(k, std::stoll((*it)[1].str()));
  return k;
}

// Waits (polling, at most two minutes: a generous bound, not a timing assertion) until `done` holds or the
// process `pid` has ended; false when it ended first or the time ran out.
template <typename Done>
bool wait_for(pid_t pid, Done done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// The exit code of `pid` (-signal when a signal killed it).
int exit_code(pid_t pid) {
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

// `text` matched literally inside a std::regex.
std::string regex_escape(const std::string& text) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(text, special, R"(\$&)");
}


}  // namespace

TEST_CASE("interrupt: SIGINT and SIGTERM at random steps save that step, exit 130/143, and resume bit-identically") {
  TempDir tmp("signal");
  const fs::path cfg = tmp.path / "signal.toml";
  std::ofstream(cfg) << signal_config(tmp.path);
  const auto ref = run_rpb("train " + cfg.string() + " --set run.name=reference");
  REQUIRE_MESSAGE(ref.code == 0, ref.out);
  const fs::path ref_dir = tmp.path / "reference";
  const Checkpoint reference = load_checkpoint(read_latest(ref_dir.string()));

  std::mt19937 gen(20261123);
  std::uniform_int_distribution<int64_t> at(5, 250);
  for (const int sig : {SIGINT, SIGTERM}) {
    const std::string name = sig == SIGINT ? "sigint" : "sigterm";
    CAPTURE(name);
    const fs::path dir = tmp.path / name, out = tmp.path / (name + ".txt");
    const int64_t target = at(gen);
    const pid_t pid = spawn_rpb({"train", cfg.string(), "--set", "run.name=" + name}, out.string());
    REQUIRE_MESSAGE(wait_for(pid, [&] { return logged_step(dir) >= target; }), file_text(out));
    ::kill(pid, sig);
    CHECK(exit_code(pid) == 128 + sig);
    const std::string text = file_text(out);
    std::smatch m;
    const std::regex line_re("interrupted at step ([0-9]+); resume with: " + regex_escape(RPB_BINARY) + " (train " +
                             regex_escape(cfg.string()) + " --set run.name=" + name + " --resume)\n");
    REQUIRE_MESSAGE(std::regex_search(text, m, line_re), text);
    const int64_t step = std::stoll(m[1].str());
    MESSAGE(name, " sent once step ", target, " was logged; interrupted at step ", step);
    CHECK(step >= target);
    CHECK(step < 400);
    CHECK(read_latest(dir.string()) == (dir / checkpoint_name(step)).string());
    CHECK(load_checkpoint(read_latest(dir.string())).step == step);
    CHECK(temp_files(dir).empty());
    CHECK(file_text(dir / "lock").empty());  // the run lock was released

    const auto resumed = run_rpb(m[2].str());  // the command the message gives
    REQUIRE_MESSAGE(resumed.code == 0, resumed.out);
    const Checkpoint got = load_checkpoint(read_latest(dir.string()));
    CHECK(got.step == 400);
    check_same_bits(reference.params, got.params, "/params");
    check_same_bits(reference.optim.tensors, got.optim.tensors, "/optim");
    CHECK(csv_without_times(dir / "metrics.csv") == csv_without_times(ref_dir / "metrics.csv"));
  }
}

TEST_CASE("interrupt: SIGUSR1 (what mpirun forwards to its ranks) saves the step like SIGTERM and exits 138") {
  TempDir tmp("usr1");
  const fs::path cfg = tmp.path / "usr1.toml", out = tmp.path / "out.txt", dir = tmp.path / "run";
  std::ofstream(cfg) << signal_config(tmp.path);
  const pid_t pid = spawn_rpb({"train", cfg.string()}, out.string());
  REQUIRE_MESSAGE(wait_for(pid, [&] { return logged_step(dir) >= 10; }), file_text(out));
  ::kill(pid, SIGUSR1);
  CHECK(exit_code(pid) == 128 + SIGUSR1);
  const std::string text = file_text(out);
  CHECK(contains(text, "interrupted by SIGUSR1: checkpoint"));
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(text, m, std::regex("interrupted at step ([0-9]+); resume with")), text);
  CHECK(load_checkpoint(read_latest(dir.string())).step == std::stoll(m[1].str()));
  CHECK(temp_files(dir).empty());
}

TEST_CASE("interrupt: a second signal ends rpb train at once, without the checkpoint, the run resumes") {
  TempDir tmp("twice");
  const fs::path cfg = tmp.path / "twice.toml", out = tmp.path / "out.txt", dir = tmp.path / "run";
  std::ofstream(cfg) << signal_config(tmp.path);
  const pid_t pid = spawn_rpb({"train", cfg.string()}, out.string());
  REQUIRE_MESSAGE(wait_for(pid, [&] { return logged_step(dir) >= 20; }), file_text(out));
  ::kill(pid, SIGINT);
  ::kill(pid, SIGTERM);  // arrives while the first waits for the end of its step
  // Which handler runs second (and exits with its code) is the kernel's choice: both pending at once, Linux
  // stacks the handlers' frames, so the later-delivered one runs first.
  const int code = exit_code(pid);
  CHECK_MESSAGE((code == 128 + SIGINT || code == 128 + SIGTERM), "exit code ", code);
  CHECK_FALSE(contains(file_text(out), "resume with"));
  const auto resumed = run_rpb("train " + cfg.string() + " --resume");
  CHECK_MESSAGE(resumed.code == 0, resumed.out);
}

TEST_CASE("interrupt: a signal during the evaluation after training exits with its code and prints no table") {
  TempDir tmp("evalsig");
  const fs::path cfg = tmp.path / "eval.toml", out = tmp.path / "out.txt", dir = tmp.path / "run";
  // A long evaluation after a short training: 262144 tokens at seven lengths up to 2048 take seconds (about 3 s on
  // two threads), so the signal lands in it even on a loaded machine; 32768 tokens (0.15 s) once finished first.
  std::string config = signal_config(tmp.path, "eval_multipliers = [1, 2, 4, 8, 16, 32, 64]\neval_tokens = 262144\n");
  config.replace(config.find("eval_tokens = 40000"), 19, "eval_tokens = 300000");
  std::ofstream(cfg) << config;
  const pid_t pid = spawn_rpb({"train", cfg.string(), "--set", "run.steps=20"}, out.string());
  REQUIRE_MESSAGE(wait_for(pid, [&] { return contains(file_text(dir / "train.log"), "finished at step 20"); }),
                  file_text(out));
  ::kill(pid, SIGTERM);
  CHECK(exit_code(pid) == 128 + SIGTERM);
  CHECK_FALSE(contains(file_text(out), "| length |"));
  CHECK(load_checkpoint(read_latest(dir.string())).step == 20);
  CHECK(temp_files(dir).empty());
}

TEST_CASE("interrupt: SIGINT during a sweep's second run saves it, exits 130, and the printed command finishes it") {
  TempDir tmp("sweepsig");
  const fs::path cfg = tmp.path / "sweep.toml", out = tmp.path / "out.txt";
  std::ofstream(cfg) << signal_config(tmp.path) << "[sweep]\nmethods = [\"t5\", \"alibi\"]\nseeds = [0]\nfigures = false\n";
  const fs::path second = tmp.path / "run" / "markov" / "alibi" / "seed0";
  const pid_t pid = spawn_rpb({"extrapolate", cfg.string(), "--set", "run.steps=200"}, out.string());
  REQUIRE_MESSAGE(wait_for(pid, [&] { return logged_step(second) >= 20; }), file_text(out));
  ::kill(pid, SIGINT);
  CHECK(exit_code(pid) == 128 + SIGINT);
  const std::string text = file_text(out);
  // The sweep's prefix (its count, the run's task, method and seed) and ETA on the progress lines.
  CHECK(contains(text, "[2/2] markov / alibi / seed 0: step 5/200 "));
  CHECK(contains(text, ", sweep elapsed "));
  // Every line of the sweep's log names its run, in one timestamp layout, on the terminal as in train.log.
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (!contains(line, "] markov / t5 / seed 0: ") && !contains(line, "] markov / alibi / seed 0: ")) FAIL_CHECK(line);
  CHECK(lines_stamped_otherwise(text, /*every_line=*/true).empty());
  CHECK(lines_stamped_otherwise(file_text(second / "train.log"), /*every_line=*/true).empty());
  CHECK(contains(file_text(second / "train.log"), "] [warning] [2/2] markov / alibi / seed 0: interrupted at step "));
  const std::string resume = "resume with: " RPB_BINARY " extrapolate " + cfg.string() + " --set run.steps=200\n";
  REQUIRE_MESSAGE(contains(text, resume), text);
  CHECK(load_checkpoint(read_latest(second.string())).step < 200);
  const auto r = run_rpb("extrapolate " + cfg.string() + " --set run.steps=200");
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK(contains(r.out, "markov / t5 / seed 0: finished earlier, reusing"));
  CHECK(load_checkpoint(read_latest(second.string())).step == 200);
}

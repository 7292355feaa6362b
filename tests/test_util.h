// tests/test_util.h: small helpers shared by the test files.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"

extern char** environ;

namespace rpb::testing {

/// The message of the rpb::Error that f throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// --set overrides that make configs/t5.toml a tiny run in <out>/<name>: `steps` steps, logged every step, a
/// checkpoint every `every` steps (0: at the end only); d_model 16, length 16, markov over 5 tokens.
inline std::vector<std::string> tiny_t5_overrides(const std::filesystem::path& out, const std::string& name,
                                                  int64_t steps, int64_t every = 0) {
  return {"run.out_dir=\"" + out.string() + "\"", "run.name=\"" + name + "\"", "run.steps=" + std::to_string(steps),
          "run.checkpoint_every=" + std::to_string(every), "run.log_every=1", "run.batch=4", "run.length=16",
          "run.eval_multipliers=[1]", "run.eval_tokens=256", "model.d_model=16", "model.heads=2", "model.layers=1",
          "model.d_ff=32", "position.num_buckets=8", "position.max_distance=32", "task.vocab=5", "task.order=1",
          "task.train_tokens=4096", "task.eval_tokens=1024", "optim.warmup_steps=1"};
}

/// The [run], [model] and [task] tables of a tiny sweep `name` writing into `out_dir`: 3 steps of batch 2 at length 8,
/// evaluated at `multipliers` ("[1, 2]") on 64 tokens without diagnostics; d_model 8, 2 heads, 1 layer; markov over 5
/// tokens. A test appends [position], [optim] and [sweep].
inline std::string tiny_sweep_config(const std::filesystem::path& out_dir, const std::string& name,
                                     const std::string& multipliers) {
  return "[run]\nname = \"" + name + "\"\nout_dir = \"" + out_dir.string() +
         "\"\nsteps = 3\nbatch = 2\nlength = 8\nlog_every = 1\neval_multipliers = " + multipliers +
         "\neval_tokens = 64\neval_diagnostics = false\n[model]\nd_model = 8\nheads = 2\nlayers = 1\nd_ff = 16\n"
         "[task]\nkind = \"markov\"\nvocab = 5\norder = 1\ntrain_tokens = 1024\neval_tokens = 512\n";
}

/// A fresh folder under the system temp dir, removed with everything in it when the guard goes.
/// `tag` names the test in the folder's name; a counter keeps several guards of one tag apart.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag = "tmp") {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("rpb_test_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
  /// Every entry of the folder, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

/// A matrix written out row by row in a test.
using Matrix = std::vector<std::vector<double>>;

/// The elements of m in row-major order.
inline std::vector<double> flat(const Matrix& m) {
  std::vector<double> v;
  for (const auto& row : m) v.insert(v.end(), row.begin(), row.end());
  return v;
}

/// Exit code and combined stdout+stderr of one `rpb` command (the built binary).
struct CommandResult {
  int code;
  std::string out;
};

inline CommandResult run_rpb(const std::string& args) {
  std::string cmd = RPB_BINARY;  // appended piecewise: GCC 12 at -O1 warns (-Warray-bounds, a false positive) on a + chain
  cmd += " ";
  cmd += args;
  cmd += " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), static_cast<int>(buf.size()), p)) out += buf.data();
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

/// Starts the rpb binary with `args` (no shell), its stdout and stderr going to `log` (or /dev/null); returns
/// its pid, for the caller to kill or wait for.
inline pid_t spawn_rpb(const std::vector<std::string>& args, const std::string& log = "/dev/null") {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  std::vector<std::string> all = {RPB_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, RPB_BINARY, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error(std::string("posix_spawn: ") + std::strerror(rc));
  return pid;
}

/// The pid of a process that has exited and been reaped: no live process has it (until the system reuses it, which
/// takes a full cycle of pid_max).
inline pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

/// The whole content of a file ("" when it cannot be read).
inline std::string file_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

/// The log lines of `text` (lines starting with '[', or with `every_line` all of them: a train.log) that do not
/// start with rpb's one timestamp layout, "[2026-11-24 22:16:11.123] " (train/run/log_format.h).
inline std::vector<std::string> lines_stamped_otherwise(const std::string& text, bool every_line = false) {
  static const std::regex stamp(R"(^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] )");
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if ((every_line || line.rfind('[', 0) == 0) && !std::regex_search(line, stamp)) out.push_back(line);
  return out;
}

/// Sets (or with `value` null, unsets) an environment variable for the scope: the rpb commands run_rpb starts
/// inherit it. The previous value comes back at the end of the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_.c_str(), old_.c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

/// The folder of the stand-in plotting module (tests/plot_stub/rpb_plot/: checks a plot request, writes stub
/// files, no matplotlib): RPB_PYTHON_DIR for tests that draw figures.
inline constexpr const char* kPlotStubDir = RPB_SOURCE_DIR "/tests/plot_stub";

}  // namespace rpb::testing

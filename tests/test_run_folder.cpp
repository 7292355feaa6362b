// A run folder is owned by one run (issue 13): a lock against a second process, the overwrite and resume
// guards reading the checkpoint files themselves, no symbolic link followed, stale temp files cleared,
// train.log written line by line, and a resumed checkpoint's step within [0, run.steps].
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <thread>

#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/io/atomic_file.h"
#include "train/run/latest.h"
#include "train/run/run_lock.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace rpb;
using namespace rpb::testing;  // TempDir, contains, error_of, file_text, run_rpb, spawn_rpb

namespace {

const std::string kConfig = std::string(RPB_SOURCE_DIR) + "/configs/t5.toml";

RunConfig tiny_config(const fs::path& out, const std::string& name, int64_t steps, int64_t every = 0,
                      const std::vector<std::string>& more = {}) {
  std::vector<std::string> o = tiny_t5_overrides(out, name, steps, every);
  o.insert(o.end(), more.begin(), more.end());
  return load_config(kConfig, o);
}

// The same run as `rpb train` arguments (no shell).
std::vector<std::string> tiny_args(const fs::path& out, const std::string& name, int64_t steps,
                                   const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {"train", kConfig};
  for (const std::string& o : tiny_t5_overrides(out, name, steps)) args.insert(args.end(), {"--set", o});
  for (const std::string& o : more) args.insert(args.end(), {"--set", o});
  return args;
}

// The same run as one shell command line for run_rpb.
std::string tiny_command(const fs::path& out, const std::string& name, int64_t steps, const std::string& extra,
                         const std::vector<std::string>& more = {}) {
  std::string cmd;
  for (const std::string& a : tiny_args(out, name, steps, more)) cmd += "'" + a + "' ";
  return cmd + extra;
}

// Waits (up to a minute) until `done` holds; false when it never did.
bool wait_for(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Kills a child with SIGKILL and reaps it.
void kill_child(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

// Name, size and modification time of every entry of a folder: equal listings mean nothing was written.
std::map<std::string, std::string> listing(const fs::path& dir) {
  std::map<std::string, std::string> m;
  for (const auto& e : fs::directory_iterator(dir)) {
    struct stat st{};
    ::lstat(e.path().c_str(), &st);
    m[e.path().filename().string()] = std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
                                      std::to_string(st.st_mtim.tv_nsec);
  }
  return m;
}

}  // namespace

TEST_CASE("run folder: a second rpb train on a folder in use fails at once naming the holder's pid") {
  TempDir tmp("lock");
  const fs::path dir = tmp.path / "busy";
  const pid_t holder = spawn_rpb(tiny_args(tmp.path, "busy", 1000000), (tmp.path / "holder.txt").string());
  const std::string pid_line = std::to_string(holder) + "\n";
  const bool started = wait_for([&] { return contains(file_text(dir / "train.log"), "step 1/"); });
  if (!started) kill_child(holder);
  REQUIRE_MESSAGE(started, file_text(tmp.path / "holder.txt"));
  CHECK(file_text(dir / "lock") == pid_line);
  const auto before = file_text(dir / "config.toml");

  // Another model in the same folder: refused before it writes anything.
  const auto t0 = std::chrono::steady_clock::now();
  const CommandResult r = run_rpb(tiny_command(tmp.path, "busy", 50, "", {"model.d_model=32"}));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  kill_child(holder);
  CAPTURE(r.out);
  CHECK(r.code == 1);
  CHECK(contains(r.out, "run folder " + dir.string() + " is in use by pid " + std::to_string(holder)));
  CHECK(seconds < 30);  // no waiting for the lock (the command itself takes ~1 s)
  CHECK(file_text(dir / "config.toml") == before);

  // The kernel released the dead holder's lock: the folder is free again.
  CHECK(error_of([&] { RunLock again(dir.string()); }).empty());
}

TEST_CASE("run folder: the lock is held while a Run trains and released when it ends or fails") {
  TempDir tmp("lock_inproc");
  const RunConfig cfg = tiny_config(tmp.path, "run", 2);
  Run run(cfg);
  int64_t refused_at = -1;
  std::string err;
  run.on_gradients([&](int64_t step, const std::vector<optim::NamedParam>&) {
    if (step != 1) return;
    err = error_of([&] { RunLock second(run.dir()); });
    refused_at = step;
  });
  run.train(false);
  CHECK(refused_at == 1);
  CHECK(contains(err, "run folder " + run.dir() + " is in use by pid " + std::to_string(::getpid())));
  CHECK(file_text(fs::path(run.dir()) / "lock").empty());  // emptied on release
  CHECK(error_of([&] { RunLock after(run.dir()); }).empty());
  // A run that fails (a folder with checkpoints, no --resume) releases it too.
  CHECK(contains(error_of([&] { Run(cfg).train(false); }), "already holds checkpoints"));
  CHECK(error_of([&] { RunLock after(run.dir()); }).empty());
}

TEST_CASE("run folder: a planted symbolic link is never written through") {
  TempDir tmp("links");
  const fs::path target = tmp.path / "precious.txt";
  std::ofstream(target) << "precious\n";

  SUBCASE("config.toml: the run replaces the link with the file") {
    fs::create_directories(tmp.path / "run");
    fs::create_symlink(target, tmp.path / "run" / "config.toml");
    Run run(tiny_config(tmp.path, "run", 2));
    run.train(false);
    CHECK(file_text(target) == "precious\n");
    CHECK_FALSE(fs::is_symlink(tmp.path / "run" / "config.toml"));
    CHECK(contains(file_text(tmp.path / "run" / "config.toml"), "d_model = 16"));
  }
  SUBCASE("train.log, lock and latest: the run refuses, naming the link") {
    for (const std::string name : {"train.log", "lock", "latest"}) {
      CAPTURE(name);
      const fs::path dir = tmp.path / ("run_" + name), own_target = tmp.path / (name + ".txt");
      std::ofstream(own_target) << "precious\n";
      fs::create_directories(dir);
      fs::create_symlink(own_target, dir / name);
      const std::string err = error_of([&] { Run(tiny_config(tmp.path, dir.filename().string(), 2)).train(true); });
      CHECK(contains(err, (dir / name).string()));
      CHECK(contains(err, "is a symbolic link, which rpb does not follow"));
      CHECK(file_text(own_target) == "precious\n");
      CHECK_FALSE(fs::exists(dir / "step_00000002.h5"));
    }
  }
  SUBCASE("a temp file: created exclusively, never opened through a link under its name") {
    const fs::path file = tmp.path / "out.txt";
    fs::create_symlink(target, tmp.path / (".out.txt.tmp." + std::to_string(::getpid())));
    write_file_atomically(file.string(), "new\n");
    CHECK(file_text(target) == "precious\n");
    CHECK(file_text(file) == "new\n");
  }
}

TEST_CASE("run folder: checkpoints beside a missing, empty or broken `latest` are never overwritten") {
  TempDir tmp("guard");
  const fs::path dir = tmp.path / "run";
  Run(tiny_config(tmp.path, "run", 6, 2)).train(false);
  // The newest checkpoint is damaged: the newest intact one is step 4.
  const std::string step4 = (dir / "step_00000004.h5").string(), step6 = (dir / "step_00000006.h5").string();
  fs::resize_file(step6, fs::file_size(step6) / 2);
  const std::map<std::string, std::function<void()>> cases = {
      {"missing", [&] { fs::remove(dir / "latest"); }},
      {"empty", [&] { std::ofstream(dir / "latest") << ""; }},
      {"a folder", [&] { fs::create_directory(dir / "latest"); }},
      {"naming ../escape.h5", [&] { std::ofstream(dir / "latest") << "../escape.h5\n"; }},
      {"naming config.toml", [&] { std::ofstream(dir / "latest") << "config.toml\n"; }},
      {"naming a missing file", [&] { std::ofstream(dir / "latest") << "step_00000099.h5\n"; }},
      {"naming a damaged file", [&] { std::ofstream(dir / "latest") << "step_00000006.h5\n"; }},
  };
  for (const auto& c : cases) {  // not a structured binding: clang 14 cannot capture one (CAPTURE)
    const std::string& what = c.first;
    CAPTURE(what);
    fs::remove_all(dir / "latest");
    c.second();
    const auto before = listing(dir);
    const RunConfig other = tiny_config(tmp.path, "run", 6, 2, {"model.d_model=32"});
    const std::string fresh = error_of([&] { Run(other).train(false); });
    CHECK(contains(fresh, dir.string() + " already holds checkpoints (3 checkpoint files, the newest "
                                         "step_00000006.h5"));
    const std::string resume = error_of([&] { Run(tiny_config(tmp.path, "run", 6, 2)).train(true); });
    CHECK(contains(resume, "the newest intact checkpoint is " + step4 + ": continue from it with `rpb train <config> "
                           "--resume-from " + step4 + "`"));
    auto after = listing(dir);
    after.erase("lock");
    auto expected = before;
    expected.erase("lock");
    CHECK(after == expected);
  }
  // What the user is told to do: continue from step 4, which rewrites step 6 and points `latest` at it.
  fs::remove_all(dir / "latest");
  const CommandResult r =
      run_rpb(tiny_command(tmp.path, "run", 6, "--resume-from " + step4 + " --set run.checkpoint_every=2"));
  CHECK_MESSAGE(r.code == 0, r.out);
  CHECK(read_latest(dir.string()) == step6);
  CHECK(load_checkpoint(step6).step == 6);
  // --resume-from takes only a checkpoint of the run's own folder.
  const fs::path elsewhere = tmp.path / "step_00000004.h5";
  fs::copy_file(step4, elsewhere);
  CHECK(contains(error_of([&] { Run(tiny_config(tmp.path, "run", 6, 2)).train(false, elsewhere.string()); }),
                 "--resume-from " + elsewhere.string() +
                     " is not a checkpoint file (step_<step>.h5) of the run folder " + dir.string()));
}

TEST_CASE("run folder: --resume on a folder with no checkpoint and no (or an empty) `latest` starts the run") {
  TempDir tmp("new");
  fs::create_directories(tmp.path / "run");
  std::ofstream(tmp.path / "run" / "latest") << "";
  const TrainSummary s = Run(tiny_config(tmp.path, "run", 2)).train(true);
  CHECK_FALSE(s.resumed);
  CHECK(s.step == 2);
}

TEST_CASE("latest: read_latest refuses a name that leads out of the run folder") {
  TempDir tmp("latest");
  for (const std::string name : {"../escape.h5", "sub/step_00000001.h5", "..", ".", "/etc/passwd", "a\x01.h5"}) {
    CAPTURE(name);
    std::ofstream(tmp.path / "latest") << name << "\n";
    CHECK(contains(error_of([&] { read_latest(tmp.path.string()); }), "which is not a bare file name in"));
  }
  fs::remove(tmp.path / "latest");
  fs::create_directory(tmp.path / "latest");
  CHECK(contains(error_of([&] { read_latest(tmp.path.string()); }), "latest: is a folder, not a regular file"));
}

TEST_CASE("latest: a `latest` holding anything but a checkpoint's name is refused, saying what it holds") {
  TempDir tmp("latest_json");
  const fs::path dir = tmp.path / "run";
  Run(tiny_config(tmp.path, "run", 2)).train(false);
  for (const std::string text : {"{\"checkpoint\": \"step_00000002.h5\", \"step\": 2}", "config.toml", "step_2.h5"}) {
    CAPTURE(text);
    std::ofstream(dir / "latest") << text << "\n";
    CHECK(contains(error_of([&] { read_latest(dir.string()); }),
                   "latest: holds \"" + text + "\"; expected the name of a checkpoint file of its run folder "
                   "(step_<step>.h5, as step_00000100.h5), on one line"));
    const auto before = listing(dir);
    for (const std::string command : {"eval", "inspect", "generate --prompt 1"}) {
      const CommandResult r = run_rpb(command + " " + dir.string());
      CHECK(r.code == 1);
      CHECK(contains(r.out, "expected the name of a checkpoint file of its run folder"));
      CHECK(!contains(r.out, "no such file"));  // not read as a file name
    }
    CHECK(listing(dir) == before);
  }
}

TEST_CASE("run folder: a run removes the temp files interrupted saves left, and nothing else") {
  TempDir tmp("stale");
  const fs::path dir = tmp.path / "run";
  Run(tiny_config(tmp.path, "run", 2)).train(false);
  const std::vector<std::string> stale = {".step_00000002.h5.tmp.999999", ".latest.tmp.12345", ".config.toml.tmp.1",
                                          ".step_123456789.h5.tmp.77", ".metrics.csv.tmp.8"};
  const std::vector<std::string> kept = {".notes.tmp.123",      ".step_00000002.h5.tmp.12a", "step_00000002.h5.tmp.1",
                                         ".config.toml.tmp.",  ".train.log.tmp.5",          ".latest.tmp.1.bak",
                                         "notes.txt"};
  for (const std::string& f : stale) std::ofstream(dir / f) << "partial";
  for (const std::string& f : kept) std::ofstream(dir / f) << "mine";
  fs::create_directory(dir / ".latest.tmp.42");  // a folder is never removed
  Run(tiny_config(tmp.path, "run", 3)).train(true, {}, {.extend = true});
  for (const std::string& f : stale) CHECK_MESSAGE(!fs::exists(dir / f), f);
  for (const std::string& f : kept) CHECK_MESSAGE(file_text(dir / f) == "mine", f);
  CHECK(fs::is_directory(dir / ".latest.tmp.42"));
  CHECK(contains(file_text(dir / "train.log"),
                 "removed 5 stale temp file(s) of interrupted saves: .config.toml.tmp.1, .latest.tmp.12345, "
                 ".metrics.csv.tmp.8, .step_00000002.h5.tmp.999999, .step_123456789.h5.tmp.77"));
}

TEST_CASE("run folder: train.log holds every line logged before a kill -9") {
  TempDir tmp("log");
  const fs::path out = tmp.path / "child.txt", log = tmp.path / "run" / "train.log";
  const pid_t child = spawn_rpb(tiny_args(tmp.path, "run", 1000000), out.string());
  // The terminal (here a file) gets each line after train.log does.
  auto logged_steps = [&] {
    std::vector<std::string> lines;
    std::istringstream in(file_text(out));
    for (std::string line; std::getline(in, line);)
      if (contains(line, "] step ")) lines.push_back(line.substr(line.find("] step ")));
    return lines;
  };
  const bool ran = wait_for([&] { return logged_steps().size() >= 20; });
  kill_child(child);
  REQUIRE_MESSAGE(ran, file_text(out));
  const std::vector<std::string> shown = logged_steps();
  const std::string kept = file_text(log);
  CHECK(contains(kept, "run run: t5 on"));
  for (const std::string& line : shown) CHECK_MESSAGE(contains(kept, line), line);
}

TEST_CASE("run folder: a resumed checkpoint's step must lie in [0, run.steps]") {
  TempDir tmp("steps");
  const fs::path dir = tmp.path / "run";
  Run(tiny_config(tmp.path, "run", 4)).train(false);
  const std::string file = (dir / "step_00000004.h5").string();
  const Checkpoint good = load_checkpoint(file);
  for (const int64_t step : {int64_t{-1}, std::numeric_limits<int64_t>::max(), int64_t{5}}) {
    CAPTURE(step);
    Checkpoint c = good;
    c.step = step;
    save_checkpoint(file, c);
    const std::string err = error_of([&] { Run(tiny_config(tmp.path, "run", 4)).train(true); });
    // A negative step is damage the reader refuses itself; a step past run.steps is the run's to refuse.
    const std::string message = step < 0 ? "checkpoint " + file + ": attribute step of / is -1; a step is never negative"
                                         : "checkpoint " + file + ": step " + std::to_string(step) +
                                               " is outside [0, run.steps = 4]";
    CHECK(contains(err, message));
    CHECK(contains(error_of([&] { Run(tiny_config(tmp.path, "run", 4)).train(false, file); }), message));
  }
  save_checkpoint(file, good);
  const TrainSummary s = Run(tiny_config(tmp.path, "run", 4)).train(true);  // step 4 of 4: nothing to do
  CHECK(s.resumed);
  CHECK(s.step == 4);
}

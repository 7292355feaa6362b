// Faults: runs survive kill -9 at random moments, a full disk during a save, and non-finite values.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <hdf5.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "run_checks.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/run/latest.h"
#include "train/run/run_folder.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace rpb;
using rpb::testing::TempDir;
using rpb::testing::check_same_bits;
using rpb::testing::temp_files;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::file_text;
using rpb::testing::run_rpb;
using rpb::testing::spawn_rpb;

namespace {


struct Size {
  int64_t d_model = 16, layers = 1, d_ff = 32, batch = 4, length = 16;
};

// A small run with dropout on (the dropout generator's state matters for resuming).
std::string fault_config(const fs::path& out, int64_t steps, int64_t checkpoint_every, const Size& z = {},
                         const std::string& on_nonfinite = "stop") {
  std::ostringstream os;
  os << "[run]\nname = \"run\"\nout_dir = \"" << out.string() << "\"\nsteps = " << steps << "\nbatch = " << z.batch
     << "\nlength = " << z.length << "\nlog_every = 5\ncheckpoint_every = " << checkpoint_every
     << "\neval_multipliers = [1, 2]\neval_tokens = 256\non_nonfinite = \"" << on_nonfinite << "\"\n"
     << "[model]\nd_model = " << z.d_model << "\nheads = 2\nlayers = " << z.layers << "\nd_ff = " << z.d_ff
     << "\ndropout = 0.1\n"
     << "[position]\nscheme = \"t5\"\nnum_buckets = 8\nmax_distance = 64\nmax_positions = " << z.length << "\n"
     << "[task]\nkind = \"markov\"\nvocab = 5\norder = 1\ntrain_tokens = 8192\neval_tokens = 2048\n"
     << "[optim]\nlr = 1e-2\nschedule = \"cosine\"\nwarmup_steps = 2\n"
     << "[[optim.group]]\npattern = \"*pos.*\"\nweight_decay = 0.0\n"
     << "[sweep]\nmethods = [\"t5\", \"learned\"]\nseeds = [0]\n";
  return os.str();
}

fs::path write_text(const fs::path& file, const std::string& text) {
  std::ofstream(file) << text;
  return file;
}

// The latest pointer names a real checkpoint (never a temp file) that loads; every step_*.h5 that
// changed since the last call loads too. One CHECK per call, listing every problem. Returns the
// latest step (-1: no `latest`); `loaded` counts the files loaded.
int64_t check_run_folder(const fs::path& dir, std::map<std::string, std::string>& seen, int& loaded) {
  std::vector<std::string> problems;
  int64_t step = -1;
  const std::string latest = read_latest(dir.string());
  if (!latest.empty()) {
    const std::string name = fs::path(latest).filename().string();
    if (name.rfind("step_", 0) != 0 || name.find(".tmp.") != std::string::npos)
      problems.push_back("latest names " + name);
    const std::string err = error_of([&] { step = load_checkpoint(latest).step; });
    if (!err.empty()) problems.push_back("latest: " + err);
    ++loaded;
  }
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step_", 0) != 0 || e.path().extension() != ".h5") continue;
    struct stat st{};
    if (::stat(e.path().c_str(), &st) != 0) continue;
    const std::string id = std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
                           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    if (seen[name] == id) continue;
    seen[name] = id;
    const std::string err = error_of([&] { load_checkpoint(e.path().string()); });
    if (!err.empty()) problems.push_back("a checkpoint under its final name fails to load: " + err);
    ++loaded;
  }
  std::string all;
  for (const std::string& p : problems) all += "\n  " + p;
  CHECK_MESSAGE(problems.empty(), all);
  return step;
}

const Tensor& param_named(const Checkpoint& c, const std::string& name) {
  for (const auto& [n, t] : c.params)
    if (n == name) return t;
  FAIL("no parameter ", name);
  return c.params.front().second;
}

}  // namespace

TEST_CASE("faults: 30 kill -9 at random moments leave only loadable checkpoints, the resumed run is bit-identical") {
  TempDir tmp("kill");
  // A step takes ~5 ms and a checkpoint (fsync) ~10 ms, so kills land in the start-up, in steps
  // and in checkpoint writes, and 30 kills rarely get the run to its end. Checkpoints every 3
  // steps, log rows every 5: rows logged after the last checkpoint are lost with the process.
  const Size z{32, 2, 64, 8, 32};
  const fs::path cfg = write_text(tmp.path / "kill.toml", fault_config(tmp.path, 400, 3, z));
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_rpb("train " + cfg.string() + " --set run.name=reference");
  REQUIRE_MESSAGE(r.code == 0, r.out);
  const double reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const fs::path dir = tmp.path / "killed";
  std::mt19937 gen(20240607);
  std::uniform_int_distribution<int> delay_ms(5, 150);
  std::map<std::string, std::string> seen;
  int loaded = 0;
  // A run rewrites config.toml once it has loaded its checkpoint, just before its first step: a kill
  // that leaves it untouched landed in the start-up.
  auto config_mtime = [&] {
    struct stat st{};
    return ::stat((dir / "config.toml").c_str(), &st) == 0 ? std::to_string(st.st_mtim.tv_sec) + "." +
                                                                 std::to_string(st.st_mtim.tv_nsec)
                                                           : std::string();
  };
  // A kill between the first checkpoint's rename and the first `latest` leaves a checkpoint and no `latest`,
  // which --resume refuses (naming the checkpoint); the run then goes on with --resume-from it, as a user would.
  int without_latest = 0;
  auto train_args = [&] {
    std::vector<std::string> args = {"train", cfg.string(), "--resume", "--set", "run.name=killed"};
    const std::vector<CheckpointFile> files = checkpoint_files(dir.string());
    if (!files.empty() && !fs::exists(dir / "latest")) {
      args[2] = "--resume-from=" + files.front().path;
      ++without_latest;
    }
    return args;
  };
  int in_checkpoint = 0, in_latest = 0, in_startup = 0, in_steps = 0, after_finish = 0;
  int64_t last_step = -1;
  for (int i = 0; i < 30; ++i) {
    CAPTURE(i);
    const int delay = delay_ms(gen);
    const std::string config_before = config_mtime();
    const pid_t pid = spawn_rpb(train_args());
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    ::kill(pid, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    if (WIFEXITED(status)) {
      CHECK_MESSAGE(WEXITSTATUS(status) == 0, "rpb train exited with ", WEXITSTATUS(status));
      ++after_finish;
    } else {
      REQUIRE(WIFSIGNALED(status));
      const std::string suffix = ".tmp." + std::to_string(pid);
      bool ckpt = false, ptr = false;
      if (fs::exists(dir))
        for (const std::string& f : temp_files(dir)) {
          if (f.size() < suffix.size() || f.compare(f.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
          (f.rfind(".latest", 0) == 0 ? ptr : ckpt) = true;
        }
      ckpt ? ++in_checkpoint : ptr ? ++in_latest : config_mtime() == config_before ? ++in_startup : ++in_steps;
    }
    if (fs::exists(dir)) last_step = std::max(last_step, check_run_folder(dir, seen, loaded));
  }
  const std::size_t stale = fs::exists(dir) ? temp_files(dir).size() : 0;
  MESSAGE("kill -9 x30 (reference run ", reference_seconds, " s): ", in_checkpoint, " during a checkpoint write, ",
          in_latest, " during the `latest` write, ", in_startup, " during start-up, ", in_steps, " during steps, ",
          after_finish, " after the run had finished; latest step after the kills ", last_step, "/400; ", stale,
          " stale temp files left; ", loaded, " checkpoint loads; ", without_latest, " starts without a `latest`");

  const pid_t last = spawn_rpb(train_args(), (tmp.path / "last.txt").string());
  int status = 0;
  REQUIRE(::waitpid(last, &status, 0) == last);
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), file_text(tmp.path / "last.txt"));
  check_run_folder(dir, seen, loaded);
  CHECK(temp_files(dir).empty());  // the last run removed what the killed ones left
  const Checkpoint ref = load_checkpoint(read_latest((tmp.path / "reference").string()));
  const Checkpoint got = load_checkpoint(read_latest(dir.string()));
  CHECK(got.step == 400);
  check_same_bits(ref.params, got.params, "/params");
  check_same_bits(ref.buffers, got.buffers, "/buffers");
  check_same_bits(ref.optim.tensors, got.optim.tensors, "/optim");
  CHECK(ref.optim.step == got.optim.step);
  CHECK(ref.rng == got.rng);
  REQUIRE(ref.metrics.size() == got.metrics.size());
  for (std::size_t i = 0; i < ref.metrics.size(); ++i) {
    CAPTURE(ref.metrics[i].step);
    CHECK(ref.metrics[i].step == got.metrics[i].step);
    CHECK(std::bit_cast<uint64_t>(ref.metrics[i].loss) == std::bit_cast<uint64_t>(got.metrics[i].loss));
  }
}

TEST_CASE("faults: resuming a finished run takes no step and leaves its checkpoint and `latest` alone") {
  TempDir tmp("finished");
  const std::string text = fault_config(tmp.path, 10, 5);
  Run first(parse_config(text, "f.toml"));
  first.train(false);
  const std::string latest = read_latest(first.dir());
  const Checkpoint before = load_checkpoint(latest);
  Run again(parse_config(text, "f.toml"));
  const TrainSummary s = again.train(true);
  CHECK(s.resumed);
  CHECK(s.step == 10);
  CHECK(read_latest(again.dir()) == latest);
  CHECK_FALSE(fs::exists(fs::path(again.dir()) / "step_00000000.h5"));
  const Checkpoint after = load_checkpoint(read_latest(again.dir()));
  CHECK(after.step == 10);
  check_same_bits(before.params, after.params, "/params");
  // And once more: a second resume still starts from step 10, not from scratch.
  CHECK(Run(parse_config(text, "f.toml")).train(true).step == 10);
  CHECK(load_checkpoint(read_latest(again.dir())).metrics.size() == before.metrics.size());
}

namespace {

// After a failed save at step 10: the error was reported, no temp file remains, `latest` still
// names step 5, which loads, and no step-10 checkpoint exists.
void check_failed_save(const fs::path& dir) {
  CHECK(temp_files(dir).empty());
  CHECK(read_latest(dir.string()) == (dir / "step_00000005.h5").string());
  CHECK(load_checkpoint((dir / "step_00000005.h5").string()).step == 5);
  CHECK_FALSE(fs::exists(dir / "step_00000010.h5"));
}

// HDF5 files this process still has open: a failed save must not leave one behind (HDF5 1.10
// crashes at exit closing a file whose close failed).
ssize_t open_hdf5_files() { return H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_FILE); }

struct Tmpfs {
  fs::path at;
  bool mounted = false;
  Tmpfs(const fs::path& p, const std::string& options) : at(p) {
    fs::create_directories(at);
    mounted = ::mount("tmpfs", at.c_str(), "tmpfs", 0, options.c_str()) == 0;
    if (!mounted) MESSAGE("cannot mount a tmpfs (", std::strerror(errno), "): the RLIMIT_FSIZE test covers the case");
  }
  ~Tmpfs() {
    if (mounted) ::umount2(at.c_str(), MNT_DETACH);
  }
};

// Fills the file system holding `file` with it until a write fails, then gives `leave` bytes back.
void fill_disk(const fs::path& file, off_t leave) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  std::vector<char> chunk(4096, 'x');
  off_t size = 0;
  for (;;) {
    const ssize_t n = ::write(fd, chunk.data(), chunk.size());
    if (n <= 0) break;
    size += n;
  }
  REQUIRE(::ftruncate(fd, size > leave ? size - leave : 0) == 0);
  ::close(fd);
}

}  // namespace

TEST_CASE("faults: a save on a full disk (tmpfs) fails with an error and leaves the previous checkpoint") {
  TempDir tmp("tmpfs");
  Tmpfs fs_(tmp.path / "mnt", "size=2m");
  if (!fs_.mounted) return;
  const ssize_t hdf5_open_before = open_hdf5_files();
  const std::string text = fault_config(fs_.at, 10, 0);
  Run(parse_config(text, "full.toml", {"run.steps=5"})).train(false);
  const fs::path dir = fs_.at / "run";
  // Room for the run's log and the start of the HDF5 file, not for the whole checkpoint (~66 KB).
  fill_disk(fs_.at / "filler", 16 * 1024);
  const std::string err = error_of([&] { Run(parse_config(text, "full.toml")).train(true, {}, {.extend = true}); });
  MESSAGE("full disk: ", err);
  CHECK(contains(err, "step_00000010.h5"));
  CHECK(contains(err, "No space left on device"));
  check_failed_save(dir);
  CHECK(open_hdf5_files() == hdf5_open_before);

  // Nothing left at all: writing `latest` fails, and the old pointer stays.
  fill_disk(fs_.at / "filler2", 0);
  const std::string err2 = error_of([&] { write_latest(dir.string(), "step_00000010.h5"); });
  CHECK(contains(err2, "No space left on device"));
  check_failed_save(dir);

  // With space again the run resumes from step 5 and completes.
  fs::remove(fs_.at / "filler");
  fs::remove(fs_.at / "filler2");
  CHECK(Run(parse_config(text, "full.toml")).train(true, {}, {.extend = true}).step == 10);
  CHECK(load_checkpoint(read_latest(dir.string())).step == 10);
  CHECK(temp_files(dir).empty());
}

TEST_CASE("faults: a save past RLIMIT_FSIZE fails with an error and leaves the previous checkpoint") {
  TempDir tmp("fsize");
  const fs::path cfg = write_text(tmp.path / "fsize.toml", fault_config(tmp.path, 10, 0));
  auto r = run_rpb("train " + cfg.string() + " --set run.steps=5");
  REQUIRE_MESSAGE(r.code == 0, r.out);
  const fs::path dir = tmp.path / "run";
  const fs::path log = tmp.path / "out.txt";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Files may not grow past 32 KB (a checkpoint is ~66 KB); write() then fails with EFBIG.
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{32 * 1024, 32 * 1024};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    ::execl(RPB_BINARY, RPB_BINARY, "train", cfg.c_str(), "--resume", "--extend", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  const std::string out = file_text(log);
  const auto at = out.find("[error]");
  MESSAGE("RLIMIT_FSIZE: ", at == std::string::npos ? out : out.substr(at));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(contains(out, "step_00000010.h5"));
  CHECK(contains(out, "File too large"));
  check_failed_save(dir);
  r = run_rpb("train " + cfg.string() + " --resume --extend");
  CHECK(r.code == 0);
  CHECK(load_checkpoint(read_latest(dir.string())).step == 10);
}

TEST_CASE("faults: an extrapolate sweep killed during its second run resumes without redoing the first") {
  TempDir tmp("sweep");
  const fs::path cfg = write_text(tmp.path / "sweep.toml", fault_config(tmp.path, 200, 10));
  const fs::path root = tmp.path / "sweep" / "markov";
  const fs::path second = root / "learned" / "seed0";
  const pid_t pid = spawn_rpb({"extrapolate", cfg.string(), "--set", "run.name=sweep", "--set", "sweep.figures=false"});
  // Kill it once the second method's run has written its first checkpoint.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(second / "latest") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ::kill(pid, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE_MESSAGE(WIFSIGNALED(status), "the sweep finished before it could be killed");
  const int64_t killed_at = load_checkpoint(read_latest(second.string())).step;
  CHECK(killed_at < 200);

  auto listing = [](const fs::path& d) {
    std::map<std::string, std::string> m;
    for (const auto& e : fs::directory_iterator(d)) {
      struct stat st{};
      ::stat(e.path().c_str(), &st);
      m[e.path().filename().string()] = std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
                                         std::to_string(st.st_mtim.tv_nsec);
    }
    return m;
  };
  const auto first_before = listing(root / "t5" / "seed0");
  CHECK(first_before.count("step_00000200.h5") == 1);

  const auto r = run_rpb("extrapolate " + cfg.string() + " --set run.name=sweep --set sweep.figures=false");
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK(contains(r.out, "markov / t5 / seed 0: finished earlier, reusing"));
  CHECK(contains(r.out, "markov / learned / seed 0: training in"));
  CHECK(contains(r.out, "| T5 bias | "));
  CHECK(contains(r.out, "| Learned PE | "));
  // The first run's folder is untouched (train.log included); the second resumed where it was killed.
  auto first_after = listing(root / "t5" / "seed0");
  CHECK(first_after == first_before);
  CHECK(contains(file_text(second / "train.log"), "steps " + std::to_string(killed_at) + "..200"));
  CHECK(load_checkpoint(read_latest(second.string())).step == 200);
}

namespace {

// A run trained to step 4 whose checkpoint then holds huge finite values (+-3e38) in one attention weight: they pass
// the check of a resumed checkpoint (a NaN is refused, train/checkpoint/checkpoint_finite.h) and overflow step 5's loss.
std::string overflowing_run(const fs::path& out, const std::string& on_nonfinite, const std::string& param) {
  const std::string text = fault_config(out, 4, 0, {}, on_nonfinite);
  Run run(parse_config(text, "nan.toml"));
  run.train(false);
  const std::string file = read_latest(run.dir());
  Checkpoint c = load_checkpoint(file);
  bool found = false;
  for (auto& [name, t] : c.params)
    if (name == param) {
      for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = i % 2 ? -3e38f : 3e38f;
      found = true;
    }
  REQUIRE(found);
  save_checkpoint(file, c);
  return text;
}

}  // namespace

TEST_CASE("faults: on_nonfinite = skip leaves parameters and optimizer state bitwise unchanged and logs it") {
  TempDir tmp("skip");
  const std::string param = "blocks.0.attn.qkv.weight";
  // After step 4 (and its checkpoint), a NaN in one attention weight: step 5's loss is NaN.
  Run run(parse_config(fault_config(tmp.path, 5, 4, {}, "skip"), "nan.toml"));
  run.on_step([&](int64_t done) {
    if (done != 4) return;
    for (const auto& [name, t] : run.model().named_parameters())
      if (name == param) t.mutable_data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  });
  const TrainSummary s = run.train(false);
  Checkpoint before = load_checkpoint((fs::path(run.dir()) / "step_00000004.h5").string());
  for (auto& [name, t] : before.params)
    if (name == param) t.mutable_data<float>()[3] = std::numeric_limits<float>::quiet_NaN();  // as the model held it
  CHECK_FALSE(s.stopped_non_finite);
  CHECK(s.step == 5);
  const Checkpoint after = load_checkpoint(read_latest(run.dir()));
  CHECK(after.step == 5);
  CHECK(std::isnan(param_named(after, param).to_vector()[3]));
  check_same_bits(before.params, after.params, "/params");
  check_same_bits(before.buffers, after.buffers, "/buffers");
  check_same_bits(before.optim.tensors, after.optim.tensors, "/optim");
  CHECK(before.optim.step == after.optim.step);
  REQUIRE(!after.metrics.empty());
  CHECK(after.metrics.back().step == 5);
  CHECK(std::isfinite(after.metrics.back().loss));  // the mean of steps 1 to 4: step 5's NaN is left out
  const std::string log = file_text(fs::path(run.dir()) / "train.log");
  CHECK(contains(log, "step 5: non-finite value in the loss (parameter " + param + " holds a NaN or an Inf)"));
  CHECK(contains(log, "step skipped"));
}

TEST_CASE("faults: on_nonfinite = stop makes rpb train exit non-zero, naming the step, the last checkpoint stays") {
  TempDir tmp("stop");
  const std::string param = "blocks.0.attn.qkv.weight";
  const fs::path cfg = write_text(tmp.path / "nan.toml", overflowing_run(tmp.path, "stop", param));
  const fs::path dir = tmp.path / "run";
  const std::string latest = read_latest(dir.string());
  const auto r = run_rpb("train " + cfg.string() + " --resume --extend --set run.steps=8");
  CHECK(r.code == 1);
  CHECK(contains(r.out, "step 5: non-finite value in the loss"));
  CHECK(contains(r.out, "run stopped"));
  CHECK(contains(r.out, "training stopped at step 4"));
  CHECK(read_latest(dir.string()) == latest);
  CHECK_FALSE(fs::exists(dir / "step_00000005.h5"));
  CHECK_FALSE(fs::exists(dir / "step_00000008.h5"));
}

TEST_CASE("faults: a NaN in one gradient under a finite loss is skipped, or stops the run, naming the parameter") {
  const std::string param = "blocks.0.mlp.fc1.weight";
  for (const std::string mode : {"skip", "stop"}) {
    INFO("on_nonfinite = ", mode);
    TempDir tmp("grad_" + mode);
    const std::string text = fault_config(tmp.path, 4, 1, {}, mode);
    {
      Run first(parse_config(text, "nan.toml"));
      first.train(false);
    }
    Run run(parse_config(text, "nan.toml", {"run.steps=6"}));
    int64_t injected = 0;
    run.on_gradients([&](int64_t step, const std::vector<optim::NamedParam>& params) {
      if (step != 5) return;
      for (const auto& p : params)
        if (p.name == param) {
          p.param.grad().mutable_data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
          ++injected;
        }
    });
    const TrainSummary s = run.train(true, {}, {.extend = true});
    CHECK(injected == 1);
    const fs::path dir = run.dir();
    const std::string log = file_text(dir / "train.log");
    CHECK(contains(log, "step 5: non-finite value in the gradient of " + param));
    const Checkpoint step4 = load_checkpoint((dir / "step_00000004.h5").string());
    if (mode == "skip") {
      CHECK(contains(log, "step skipped"));
      CHECK(s.step == 6);
      CHECK_FALSE(s.stopped_non_finite);
      // Step 5 changed nothing it trains; step 6 trained again.
      const Checkpoint step5 = load_checkpoint((dir / "step_00000005.h5").string());
      check_same_bits(step4.params, step5.params, "/params");
      check_same_bits(step4.optim.tensors, step5.optim.tensors, "/optim");
      CHECK(std::isfinite(step5.metrics.back().loss));
      const Checkpoint step6 = load_checkpoint((dir / "step_00000006.h5").string());
      CHECK(param_named(step6, param).to_vector() != param_named(step4, param).to_vector());
    } else {
      CHECK(contains(log, "run stopped"));
      CHECK(s.stopped_non_finite);
      CHECK(s.step == 4);
      CHECK(read_latest(dir.string()) == (dir / "step_00000004.h5").string());
      CHECK_FALSE(fs::exists(dir / "step_00000005.h5"));
    }
  }
}

// Softmax on float32 logits of ±1e4, ±88.7 and ±3e38, and fully -inf rows (zeros, finite zero
// gradients) are covered in tests/test_ops_activations.cpp ("softmax is stable for huge float32
// logits", "a fully -inf row gives zeros and a finite zero gradient").

// The rpb binary on damaged checkpoints and misused command lines: `inspect`, `eval` and
// `train --resume` exit 1 with one error line on stderr that names the file (and the dataset
// where one is at fault), print nothing on stdout, and never let HDF5 print its own diagnostics;
// usage errors exit 2 naming what was wrong.
#include <doctest/doctest.h>
#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "core/ops.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/run/latest.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace rpb;
using namespace rpb::testing;  // TempDir, contains, error_of, run_rpb

namespace {

// A 4-step t5 run with one checkpoint (about 66 KB); `out` is its out_dir.
std::string run_config(const fs::path& out) {
  return "[run]\nout_dir = \"" + out.string() + "\"\n" + R"(name = "run"
steps = 4
batch = 4
length = 16
log_every = 2
eval_multipliers = [1, 2]
eval_tokens = 128
[model]
d_model = 16
heads = 2
layers = 1
d_ff = 32
[position]
scheme = "t5"
num_buckets = 8
max_distance = 32
[task]
kind = "markov"
vocab = 5
order = 1
train_tokens = 2048
eval_tokens = 1024
)";
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

struct Outcome {
  int code;
  std::string out, err;
};

// `rpb <args>` with stdout and stderr apart. run_rpb appends "2>&1"; after "; exit $?" that
// redirection applies to `exit` alone, so stderr stays in its own file.
Outcome rpb_apart(const std::string& args, const fs::path& err_file) {
  const auto r = run_rpb(args + " 2>" + err_file.string() + "; exit $?");
  return {r.code, r.out, read_text(err_file)};
}

// What must never reach stderr: HDF5's error stack dump, sanitizer reports, an uncaught exception.
void check_clean_stderr(const std::string& err) {
  // ".cpp:": a source location, which only --verbose shows (at debug level).
  for (const char* bad : {"HDF5-DIAG", "Sanitizer", "runtime error", "terminate called", "unexpected error", ".cpp:"})
    CHECK_MESSAGE(!contains(err, bad), "stderr holds \"", bad, "\"");
}

// A trained run whose checkpoint a test then damages: <dir>/run.toml, and <dir>/run/step_00000004.h5,
// which <dir>/run/latest names. (Each test trains its own: run.out_dir is part of the config a
// resume compares, so a copied folder would be refused for that alone.)
struct TrainedRun {
  fs::path dir, config, file;
  Checkpoint checkpoint;
};

TrainedRun train_run(const fs::path& dir, const std::vector<std::string>& overrides = {}) {
  fs::create_directories(dir);
  TrainedRun r{dir, dir / "run.toml", dir / "run" / "step_00000004.h5", {}};
  std::ofstream(r.config) << run_config(dir);
  Run(parse_config(run_config(dir), r.config.string(), overrides)).train(false);
  REQUIRE(read_latest((dir / "run").string()) == r.file.string());
  r.checkpoint = load_checkpoint(r.file.string());
  return r;
}

// inspect, eval and train --resume on c.file: exit 1, nothing on stdout, and one error line on
// stderr naming the file and every entry of `names`.
void check_rejected(const TrainedRun& c, const std::vector<std::string>& names) {
  for (const std::string& command : {"inspect " + c.file.string(), "eval " + c.file.string(),
                                     "train " + c.config.string() + " --resume --extend --set run.steps=8"}) {
    CAPTURE(command);
    const Outcome r = rpb_apart(command, c.dir / "stderr.txt");
    CAPTURE(r.err);
    CHECK(r.code == 1);
    CHECK(r.out.empty());
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(contains(r.err, "[error] checkpoint " + c.file.string() + ": "));
    for (const std::string& name : names) CHECK(contains(r.err, name));
    check_clean_stderr(r.err);
  }
}

// Opens an HDF5 file for writing, hands it to `edit` and closes it.
void edit_hdf5(const fs::path& file, const std::function<void(hid_t)>& edit) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  REQUIRE(f >= 0);
  edit(f);
  REQUIRE(H5Fclose(f) >= 0);
}

Tensor& param(Checkpoint& c, const std::string& name) {
  for (auto& [n, t] : c.params)
    if (n == name) return t;
  FAIL("no parameter ", name);
  return c.params.front().second;
}

// Every value a checkpoint holds, as bytes: two checkpoints are bit-identical when these are equal.
std::string contents(const Checkpoint& c) {
  std::ostringstream os;
  auto bytes = [&](const void* p, std::size_t n) { os.write(static_cast<const char*>(p), static_cast<std::streamsize>(n)); };
  auto tensors = [&](const nn::NamedTensors& ts) {
    for (const auto& [name, t] : ts) {
      os << name << t.shape() << dtype_name(t.dtype());
      bytes(t.raw_data(), static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()));
    }
  };
  os << c.step << c.config_text << c.library_version << c.optim.kind << c.optim.step << c.optim.groups;
  tensors(c.params);
  tensors(c.buffers);
  tensors(c.optim.tensors);
  for (const auto& [name, v] : c.optim.scalars) os << name, bytes(&v, sizeof v);
  for (const auto& [name, s] : c.rng) os << name, bytes(s.data(), sizeof s);
  for (const auto& [name, v] : c.counters) os << name << v;
  for (const MetricsRow& m : c.metrics) bytes(&m, sizeof m);
  return os.str();
}

// Where each dataset's raw bytes lie in a checkpoint file.
struct Extent {
  std::string dataset;
  haddr_t offset;
  hsize_t bytes;
};

std::vector<Extent> dataset_extents(const fs::path& file, const Checkpoint& c) {
  std::vector<std::string> names;
  for (const auto& [n, t] : c.params) names.push_back("/params/" + n);
  for (const auto& [n, t] : c.buffers) names.push_back("/buffers/" + n);
  for (const auto& [n, t] : c.optim.tensors) names.push_back("/optim/" + n);
  for (const auto& [n, s] : c.rng) names.push_back("/rng/" + n);
  for (const char* n : {"step", "loss", "lr", "grad_norm", "tokens_per_sec"}) names.push_back(std::string("/metrics/") + n);
  std::vector<Extent> out;
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(f >= 0);
  for (const std::string& name : names) {
    const hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
    REQUIRE(d >= 0);
    out.push_back({name, H5Dget_offset(d), H5Dget_storage_size(d)});
    H5Dclose(d);
  }
  H5Fclose(f);
  return out;
}

}  // namespace

TEST_CASE("damaged checkpoints: truncated at 0, 96, the middle and size-1 bytes") {
  TempDir tmp("cut");
  for (const int at : {0, 1, 2, 3}) {
    const TrainedRun c = train_run(tmp.path / std::to_string(at));
    const auto size = fs::file_size(c.file);
    const std::uintmax_t keep = std::vector<std::uintmax_t>{0, 96, size / 2, size - 1}[at];
    CAPTURE(keep);
    fs::resize_file(c.file, keep);
    check_rejected(c, {"cannot open as HDF5 (truncated or not an HDF5 file)"});
  }
}

TEST_CASE("damaged checkpoints: random bit flips are reported, naming the dataset they hit, or change nothing") {
  TempDir tmp("flip");
  std::mt19937_64 gen(20261122);
  int reported = 0, harmless = 0;
  for (int i = 0; i < 12; ++i) {
    const TrainedRun c = train_run(tmp.path / std::to_string(i));
    const std::vector<Extent> extents = dataset_extents(c.file, c.checkpoint);
    const auto offset = static_cast<std::streamoff>(gen() % fs::file_size(c.file));
    const int bit = static_cast<int>(gen() % 8);
    CAPTURE(offset);
    CAPTURE(bit);
    {
      std::fstream io(c.file, std::ios::in | std::ios::out | std::ios::binary);
      char byte = 0;
      io.seekg(offset);
      io.read(&byte, 1);
      byte = static_cast<char>(byte ^ (1 << bit));
      io.seekp(offset);
      io.write(&byte, 1);
      REQUIRE(io.good());
    }
    std::string hit;
    for (const Extent& e : extents)
      if (static_cast<haddr_t>(offset) >= e.offset && static_cast<haddr_t>(offset) < e.offset + e.bytes) hit = e.dataset;
    // A flip the reader lets through must have landed in bytes no value depends on (HDF5 free space).
    Checkpoint loaded;
    const std::string error = error_of([&] { loaded = load_checkpoint(c.file.string()); });
    if (error.empty()) {
      ++harmless;
      CHECK(hit.empty());
      CHECK(contents(loaded) == contents(c.checkpoint));
      const Outcome r = rpb_apart("inspect " + c.file.string(), c.dir / "stderr.txt");
      CHECK(r.code == 0);
      check_clean_stderr(r.err);
      continue;
    }
    ++reported;
    if (hit.empty()) check_rejected(c, {});
    else check_rejected(c, {"dataset " + hit + ": CRC-32 mismatch"});
  }
  MESSAGE("bit flips: ", reported, " reported, ", harmless, " in free space (the loaded checkpoint is bit-identical)");
  CHECK(reported >= 9);  // about 90% of a checkpoint's bytes hold data or checksummed metadata
}

TEST_CASE("damaged checkpoints: a missing dataset, a wrong shape and a wrong dtype name the dataset") {
  TempDir tmp("dataset");
  const std::string qkv = "blocks.0.attn.qkv.weight";
  const TrainedRun c = train_run(tmp.path / "run");
  Checkpoint damaged = c.checkpoint;
  const Tensor weight = param(damaged, qkv);
  const Shape shape = weight.shape();
  REQUIRE(shape.size() == 2);
  const std::string expected = "dataset /params/" + qkv + ": expected shape " + shape.to_string() + " float32, found ";

  SUBCASE("a missing parameter") {
    std::erase_if(damaged.params, [&](const auto& p) { return p.first == qkv; });
    save_checkpoint(c.file.string(), damaged);
    check_rejected(c, {"dataset /params/" + qkv + " is missing (expected shape " + shape.to_string() + " float32)"});
  }
  SUBCASE("a missing metrics column") {
    edit_hdf5(c.file, [](hid_t f) { REQUIRE(H5Ldelete(f, "/metrics/loss", H5P_DEFAULT) >= 0); });
    check_rejected(c, {"dataset /metrics/loss is missing"});
  }
  SUBCASE("a wrong shape") {
    param(damaged, qkv) = rpb::reshape(weight, {shape[1], shape[0]});
    save_checkpoint(c.file.string(), damaged);
    check_rejected(c, {expected + Shape{shape[1], shape[0]}.to_string() + " float32"});
  }
  SUBCASE("a wrong dtype") {
    param(damaged, qkv) = weight.to(DType::f64);
    save_checkpoint(c.file.string(), damaged);
    check_rejected(c, {expected + shape.to_string() + " float64"});
  }
}

TEST_CASE("damaged checkpoints: another architecture's parameters and another format version") {
  TempDir tmp("arch");
  SUBCASE("the parameters of another model under this run's config") {
    const TrainedRun c = train_run(tmp.path / "run");
    const TrainedRun other = train_run(tmp.path / "other", {"model.d_model=32", "position.scheme=alibi"});
    Checkpoint mixed = c.checkpoint;
    const std::string qkv = "blocks.0.attn.qkv.weight";
    const Shape want = param(mixed, qkv).shape();
    mixed.params = other.checkpoint.params;
    mixed.optim = other.checkpoint.optim;
    save_checkpoint(c.file.string(), mixed);
    REQUIRE(want != param(mixed, qkv).shape());
    check_rejected(c, {"dataset /params/pos.t5.table is missing",
                       "dataset /params/" + qkv + ": expected shape " + want.to_string() +
                           " float32, found " + param(mixed, qkv).shape().to_string() + " float32"});
  }
  SUBCASE("another format version") {
    const TrainedRun c = train_run(tmp.path / "run");
    edit_hdf5(c.file, [](hid_t f) {
      const hid_t a = H5Aopen_by_name(f, "/", "format_version", H5P_DEFAULT, H5P_DEFAULT);
      REQUIRE(a >= 0);
      const int next = kCheckpointFormatVersion + 1;
      CHECK(H5Awrite(a, H5T_NATIVE_INT, &next) >= 0);
      H5Aclose(a);
    });
    check_rejected(c, {"format version 2 is not supported (this rpb reads 1)"});
  }
  SUBCASE("train --resume on a run folder holding another run's checkpoint") {
    const TrainedRun c = train_run(tmp.path / "run");
    const TrainedRun other = train_run(tmp.path / "other", {"model.d_model=32"});
    fs::copy_file(other.file, c.file, fs::copy_options::overwrite_existing);
    const Outcome r = rpb_apart("train " + c.config.string() + " --resume", c.dir / "stderr.txt");
    CAPTURE(r.err);
    CHECK(r.code == 1);
    CHECK(r.out.empty());
    CHECK(contains(r.err, "the config differs from the one " + c.file.string() + " was trained with"));
    check_clean_stderr(r.err);
  }
}

TEST_CASE("CLI misuse: unknown subcommands, options and arguments exit 2 naming them, missing files exit 1") {
  TempDir tmp("misuse");
  const std::string ckpt = train_run(tmp.path / "run").file.string(), missing = (tmp.path / "missing.h5").string();
  const fs::path cfg = tmp.path / "run" / "run.toml";
  const std::string missing_toml = (tmp.path / "missing.toml").string();
  struct Case {
    std::string args, message;
    int code;
  };
  // Usage errors exit 2. A length that is not a multiple of the train length is refused by eval itself, and a
  // missing file is a run error in the same style as a damaged one: exit 1.
  const std::vector<Case> cases = {
      {"evaluate " + ckpt, "unknown subcommand 'evaluate'", 2},
      {"--bogus", "unknown option '--bogus'", 2},
      {"inspect " + ckpt + " --bogus", "The following argument was not expected: --bogus", 2},
      {"eval " + ckpt + " --length 32", "The following arguments were not expected: 32 --length", 2},
      {"train " + cfg.string() + " --resum", "The following argument was not expected: --resum", 2},
      {"train " + cfg.string() + " extra.toml", "The following argument was not expected: extra.toml", 2},
      {"inspect", "checkpoint is required", 2},
      {"train", "config is required", 2},
      {"eval " + ckpt + " --lengths 0", "--lengths: Value 0 not in range", 2},
      {"eval " + ckpt + " --lengths 16,24", "length 24 is not a positive multiple of the train length 16", 1},
      {"inspect " + missing, "[error] checkpoint " + missing + ": no such file", 1},
      {"eval " + missing, "[error] checkpoint " + missing + ": no such file", 1},
      {"extrapolate " + missing_toml, "[error] config " + missing_toml + ": no such file", 1},
      {"train " + tmp.path.string(), "[error] config " + tmp.path.string() + ": is a folder, not a regular file", 1},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const Outcome r = rpb_apart(c.args, tmp.path / "stderr.txt");
    CAPTURE(r.err);
    CHECK(r.code == c.code);
    CHECK(r.out.empty());
    CHECK(contains(r.err, c.message));
    check_clean_stderr(r.err);
  }
}

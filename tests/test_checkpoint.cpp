// HDF5 checkpoints: bit-exact round trips, the file layout, damage detection, atomic saves.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <numbers>
#include <sstream>
#include <string>

#include "hostile_files.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/crc32.h"
#include "train/io/version.h"
#include "train/run/latest.h"

namespace fs = std::filesystem;
using rpb::Checkpoint;
using rpb::DType;
using rpb::Tensor;
using rpb::testing::TempDir;
using rpb::testing::contains;
using rpb::testing::error_of;

using rpb::testing::open_hdf5_objects;

namespace {


/// Runs f with file descriptor 2 redirected to a file; returns what was written to stderr.
std::string stderr_of(const std::function<void()>& f) {
  char name[] = "/tmp/rpb_test_ckpt_stderr_XXXXXX";
  const int fd = ::mkstemp(name);
  REQUIRE(fd >= 0);
  std::fflush(stderr);
  const int saved = ::dup(2);
  ::dup2(fd, 2);
  try {
    f();
  } catch (...) {
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    ::close(fd);
    ::unlink(name);
    throw;
  }
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  ::close(fd);
  std::ifstream in(name);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(name);
  return text.str();
}


bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return std::memcmp(a.raw_data(), b.raw_data(), a.numel() * rpb::dtype_size(a.dtype())) == 0;
}

bool same_named(const rpb::nn::NamedTensors& a, const rpb::nn::NamedTensors& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first || !same_bits(a[i].second, b[i].second)) return false;
  return true;
}

bool same_double_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

Tensor f32(const rpb::Shape& shape, float start) {
  std::vector<float> v(shape.numel());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + 0.1f * static_cast<float>(i) - 1.3e-3f * i * i;
  return Tensor::from_vector(shape, v);
}

/// A checkpoint exercising every field with awkward values.
Checkpoint sample_checkpoint() {
  Checkpoint c;
  c.step = 123456789012345;
  c.config_text = "# run\n[model]\nname = \"swin \\\"tiny\\\"\"\nlayers = 4\n\n[train]\nlr = 3e-4\t# tab\n"
                  "note = 'single' and \"double\" quotes, ünïcödé\n";
  c.library_version = "9.8.7-test";
  Tensor weight = f32({2, 3, 4, 5}, -1.0f);
  weight.mutable_data<float>()[0] = -0.0f;
  weight.mutable_data<float>()[1] = std::numeric_limits<float>::denorm_min();
  weight.mutable_data<float>()[2] = std::numeric_limits<float>::infinity();
  weight.mutable_data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  c.params = {
      {"blocks.0.attn.qkv.weight", weight},
      {"blocks.0.attn.qkv.bias", f32({6}, 0.5f)},
      {"head.scale", Tensor::scalar(0.1, DType::f64)},
      {"embed.ids", Tensor::indices({3}, {-1, std::numeric_limits<int64_t>::max(), 42})},
      {"empty.weight", Tensor::zeros({0, 3})},
      {"a.b", Tensor::from_vector<double>({2, 2}, {1.0 / 3.0, -2e-300, 1e300, std::numbers::pi})},
  };
  c.buffers = {{"pos.t5.table", f32({4, 2}, 3.0f)}, {"step.counter", Tensor::scalar(7, DType::i64)}};
  c.optim.kind = "adamw";
  c.optim.step = 99;
  c.optim.scalars = {{"lr", 0.1}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"weight_decay", 0.05}};
  c.optim.groups = "decay: *.weight\nno_decay: *.bias, *.scale\n";
  c.optim.tensors = {
      {"exp_avg/blocks.0.attn.qkv.weight", f32({2, 3, 4, 5}, 0.25f)},
      {"exp_avg/head.scale", Tensor::scalar(-0.5, DType::f64)},
      {"exp_avg_sq/blocks.0.attn.qkv.weight", f32({2, 3, 4, 5}, 0.75f)},
      {"momentum", f32({2}, 1.0f)},
  };
  c.rng = {{"data", {1, 0xFFFFFFFFFFFFFFFFull, 0x8000000000000000ull, 12345}},
           {"dropout", {0xDEADBEEFCAFEF00Dull, 2, 3, 4}}};
  c.counters = {{"data_cursor", 9876543210}, {"epoch", -1}, {"a.dotted.counter", 0}};
  c.metrics = {{1, 10.5, 1e-4, 2.25, 12345.5},
               {2, 1.0 / 3.0, 3e-4, std::numeric_limits<double>::infinity(), 0.0},
               {100, std::nan(""), -0.0, 1e-300, 1e300}};
  return c;
}

void require_equal(const Checkpoint& a, const Checkpoint& b) {
  CHECK(a.step == b.step);
  CHECK(a.config_text == b.config_text);
  CHECK(a.library_version == b.library_version);
  CHECK(same_named(a.params, b.params));
  CHECK(same_named(a.buffers, b.buffers));
  CHECK(a.optim.kind == b.optim.kind);
  CHECK(a.optim.step == b.optim.step);
  REQUIRE(a.optim.scalars.size() == b.optim.scalars.size());
  for (std::size_t i = 0; i < a.optim.scalars.size(); ++i) {
    CHECK(a.optim.scalars[i].first == b.optim.scalars[i].first);
    CHECK(same_double_bits(a.optim.scalars[i].second, b.optim.scalars[i].second));
  }
  CHECK(a.optim.groups == b.optim.groups);
  CHECK(same_named(a.optim.tensors, b.optim.tensors));
  CHECK(a.rng == b.rng);
  CHECK(a.counters == b.counters);
  REQUIRE(a.metrics.size() == b.metrics.size());
  for (std::size_t i = 0; i < a.metrics.size(); ++i) {
    CHECK(a.metrics[i].step == b.metrics[i].step);
    CHECK(same_double_bits(a.metrics[i].loss, b.metrics[i].loss));
    CHECK(same_double_bits(a.metrics[i].lr, b.metrics[i].lr));
    CHECK(same_double_bits(a.metrics[i].grad_norm, b.metrics[i].grad_norm));
    CHECK(same_double_bits(a.metrics[i].tokens_per_sec, b.metrics[i].tokens_per_sec));
  }
}

/// The file offset of a dataset's raw data.
haddr_t data_offset(const std::string& file, const std::string& dataset) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(f >= 0);
  const hid_t d = H5Dopen2(f, dataset.c_str(), H5P_DEFAULT);
  REQUIRE(d >= 0);
  const haddr_t offset = H5Dget_offset(d);
  H5Dclose(d);
  H5Fclose(f);
  return offset;
}

void flip_byte(const std::string& file, std::uintmax_t offset) {
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(io.good());
  io.seekg(static_cast<std::streamoff>(offset));
  char byte = 0;
  io.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x10);
  io.seekp(static_cast<std::streamoff>(offset));
  io.write(&byte, 1);
  REQUIRE(io.good());
}

}  // namespace

TEST_CASE("checkpoint: crc32_ieee gives the standard check value") {
  CHECK(rpb::crc32_ieee("123456789", 9) == 0xCBF43926u);
  CHECK(rpb::crc32_ieee("", 0) == 0u);
  // Continuing over a second part equals one pass over the whole.
  CHECK(rpb::crc32_ieee("6789", 4, rpb::crc32_ieee("12345", 5)) == 0xCBF43926u);
  CHECK(rpb::crc32_ieee("123456788", 9) != 0xCBF43926u);
}

TEST_CASE("checkpoint: round trip of every field is bit-exact") {
  TempDir dir;
  const std::string path = dir.file("step_000100.h5");
  const Checkpoint saved = sample_checkpoint();
  rpb::save_checkpoint(path, saved);
  CHECK(open_hdf5_objects() == 0);
  CHECK(dir.entries() == std::vector<std::string>{"step_000100.h5"});
  const Checkpoint loaded = rpb::load_checkpoint(path);
  CHECK(open_hdf5_objects() == 0);
  require_equal(saved, loaded);
  // Saving what was loaded reproduces it again (overwriting the file in place).
  rpb::save_checkpoint(path, loaded);
  require_equal(saved, rpb::load_checkpoint(path));
}

TEST_CASE("checkpoint: an empty checkpoint round-trips and records the library version") {
  TempDir dir;
  const std::string path = dir.file("empty.h5");
  Checkpoint c;
  rpb::save_checkpoint(path, c);
  const Checkpoint loaded = rpb::load_checkpoint(path);
  CHECK(loaded.library_version == rpb::version());
  c.library_version = rpb::version();
  require_equal(c, loaded);
}

TEST_CASE("checkpoint: a config longer than 64 KiB round-trips") {
  TempDir dir;
  const std::string path = dir.file("big.h5");
  Checkpoint c;
  for (int i = 0; i < 20000; ++i) c.config_text += "key_" + std::to_string(i) + " = \"v\"\n";
  REQUIRE(c.config_text.size() > 200000);
  rpb::save_checkpoint(path, c);
  CHECK(rpb::load_checkpoint(path).config_text == c.config_text);
}

TEST_CASE("checkpoint: the file layout is what h5py and h5dump users see") {
  TempDir dir;
  const std::string path = dir.file("layout.h5");
  rpb::save_checkpoint(path, sample_checkpoint());
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(f >= 0);
  // Dotted names are flat datasets directly under /params.
  const hid_t params = H5Gopen2(f, "/params", H5P_DEFAULT);
  REQUIRE(params >= 0);
  CHECK(H5Lexists(params, "blocks.0.attn.qkv.weight", H5P_DEFAULT) > 0);
  H5Gclose(params);
  const hid_t w = H5Dopen2(f, "/params/blocks.0.attn.qkv.weight", H5P_DEFAULT);
  REQUIRE(w >= 0);
  const hid_t wt = H5Dget_type(w);
  CHECK(H5Tequal(wt, H5T_NATIVE_FLOAT) > 0);
  H5Tclose(wt);
  const hid_t ws = H5Dget_space(w);
  hsize_t dims[8] = {};
  CHECK(H5Sget_simple_extent_ndims(ws) == 4);
  H5Sget_simple_extent_dims(ws, dims, nullptr);
  CHECK((dims[0] == 2 && dims[1] == 3 && dims[2] == 4 && dims[3] == 5));
  H5Sclose(ws);
  const hid_t crc = H5Aopen(w, "crc32", H5P_DEFAULT);
  REQUIRE(crc >= 0);
  const hid_t ct = H5Aget_type(crc);
  CHECK(H5Tget_class(ct) == H5T_INTEGER);
  CHECK(H5Tget_size(ct) == 4);
  CHECK(H5Tget_sign(ct) == H5T_SGN_NONE);
  H5Tclose(ct);
  H5Aclose(crc);
  H5Dclose(w);
  // 0-D tensors are scalar dataspaces; float64 and int64 keep their types.
  const hid_t s = H5Dopen2(f, "/params/head.scale", H5P_DEFAULT);
  const hid_t ss = H5Dget_space(s);
  CHECK(H5Sget_simple_extent_type(ss) == H5S_SCALAR);
  const hid_t st = H5Dget_type(s);
  CHECK(H5Tequal(st, H5T_NATIVE_DOUBLE) > 0);
  H5Tclose(st);
  H5Sclose(ss);
  H5Dclose(s);
  const hid_t ids = H5Dopen2(f, "/params/embed.ids", H5P_DEFAULT);
  const hid_t it = H5Dget_type(ids);
  CHECK(H5Tequal(it, H5T_NATIVE_INT64) > 0);
  H5Tclose(it);
  H5Dclose(ids);
  // Optimizer state nests by its "/" parts; rng states are uint64 (4); metrics are 1-D columns.
  CHECK(H5Lexists(f, "/optim/exp_avg", H5P_DEFAULT) > 0);
  CHECK(H5Lexists(f, "/optim/exp_avg_sq/blocks.0.attn.qkv.weight", H5P_DEFAULT) > 0);
  CHECK(H5Lexists(f, "/buffers/pos.t5.table", H5P_DEFAULT) > 0);
  CHECK(H5Lexists(f, "/rng/dropout", H5P_DEFAULT) > 0);
  CHECK(H5Lexists(f, "/metrics/tokens_per_sec", H5P_DEFAULT) > 0);
  CHECK(H5Aexists_by_name(f, "/optim", "lr", H5P_DEFAULT) > 0);
  CHECK(H5Aexists_by_name(f, "/state", "data_cursor", H5P_DEFAULT) > 0);
  // Root attributes: format_version as an int, strings fixed-length UTF-8.
  int format = 0;
  const hid_t fv = H5Aopen_by_name(f, "/", "format_version", H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(fv >= 0);
  H5Aread(fv, H5T_NATIVE_INT, &format);
  CHECK(format == rpb::kCheckpointFormatVersion);
  H5Aclose(fv);
  for (const char* name : {"rpb_version", "commit", "config", "created"}) {
    const hid_t a = H5Aopen_by_name(f, "/", name, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(a >= 0);
    const hid_t t = H5Aget_type(a);
    CHECK(H5Tget_class(t) == H5T_STRING);
    CHECK(H5Tis_variable_str(t) > 0);  // h5py reads str, not bytes
    CHECK(H5Tget_cset(t) == H5T_CSET_UTF8);
    CHECK(H5Aexists_by_name(f, "/", (std::string(name) + ".crc32").c_str(), H5P_DEFAULT) > 0);
    if (std::string(name) == "created") {
      char* chars = nullptr;
      H5Aread(a, t, &chars);
      const std::string text = chars;
      H5free_memory(chars);
      CHECK(text.size() == 20);  // 2024-05-01T12:34:56Z
      CHECK(text[10] == 'T');
      CHECK(text.back() == 'Z');
    }
    if (std::string(name) == "commit") {  // the build's commit (train/io/version.h)
      char* chars = nullptr;
      H5Aread(a, t, &chars);
      CHECK(std::string(chars) == rpb::build_commit());
      H5free_memory(chars);
    }
    H5Tclose(t);
    H5Aclose(a);
  }
  H5Fclose(f);
  CHECK(open_hdf5_objects() == 0);
}

TEST_CASE("checkpoint: h5dump reads the file and lists /params") {
  if (std::system("command -v h5dump >/dev/null 2>&1") != 0) {
    MESSAGE("h5dump is not on PATH (Debian package hdf5-tools): skipping the h5dump check");
    return;
  }
  TempDir dir;
  const std::string path = dir.file("dump.h5");
  rpb::save_checkpoint(path, sample_checkpoint());
  const std::string out = dir.file("dump.txt");
  CHECK(std::system(("h5dump -H '" + path + "' > '" + out + "' 2>&1").c_str()) == 0);
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(contains(text.str(), "GROUP \"params\""));
  CHECK(contains(text.str(), "DATASET \"blocks.0.attn.qkv.weight\""));
}

TEST_CASE("checkpoint: check_params names the file, the dataset, expected and found") {
  const std::string path = "/runs/x/step_000100.h5";
  Checkpoint c;
  c.params = {{"x", Tensor::zeros({3, 2})}, {"y", Tensor::zeros({4})}, {"z", Tensor::zeros({2}, DType::f64)}};
  const rpb::nn::NamedTensors model = {
      {"x", Tensor::zeros({3, 2})}, {"y", Tensor::zeros({4})}, {"z", Tensor::zeros({2}, DType::f64)}};
  CHECK(error_of([&] { rpb::check_params(c, model, path); }).empty());

  SUBCASE("wrong shape") {
    const rpb::nn::NamedTensors m = {{"x", Tensor::zeros({2, 3})}, model[1], model[2]};
    const std::string e = error_of([&] { rpb::check_params(c, m, path); });
    CHECK(contains(e, "checkpoint /runs/x/step_000100.h5: dataset /params/x: expected shape [2, 3] float32, "
                      "found [3, 2] float32"));
  }
  SUBCASE("wrong dtype") {
    const rpb::nn::NamedTensors m = {model[0], model[1], {"z", Tensor::zeros({2})}};
    const std::string e = error_of([&] { rpb::check_params(c, m, path); });
    CHECK(contains(e, path));
    CHECK(contains(e, "dataset /params/z: expected shape [2] float32, found [2] float64"));
  }
  SUBCASE("missing") {
    rpb::nn::NamedTensors m = model;
    m.emplace_back("blocks.1.mlp.fc1.weight", Tensor::zeros({8, 4}));
    const std::string e = error_of([&] { rpb::check_params(c, m, path); });
    CHECK(contains(e, path));
    CHECK(contains(e, "dataset /params/blocks.1.mlp.fc1.weight is missing (expected shape [8, 4] float32)"));
  }
  SUBCASE("unexpected extra parameter") {
    const rpb::nn::NamedTensors m = {model[0], model[2]};
    const std::string e = error_of([&] { rpb::check_params(c, m, path); });
    CHECK(contains(e, path));
    CHECK(contains(e, "dataset /params/y is not a parameter of the model (found [4] float32)"));
  }
  SUBCASE("several problems are all listed") {
    const rpb::nn::NamedTensors m = {{"x", Tensor::zeros({2, 3})}, {"w", Tensor::zeros({1})}};
    const std::string e = error_of([&] { rpb::check_params(c, m, path); });
    CHECK(contains(e, "/params/x: expected"));
    CHECK(contains(e, "/params/w is missing"));
    CHECK(contains(e, "/params/y is not a parameter"));
    CHECK(contains(e, "/params/z is not a parameter"));
  }
}

TEST_CASE("checkpoint: truncated and foreign files give a clean error naming the file") {
  TempDir dir;
  const std::string good = dir.file("good.h5");
  rpb::save_checkpoint(good, sample_checkpoint());
  const auto size = fs::file_size(good);
  REQUIRE(size > 1000);
  for (const std::uintmax_t keep : {std::uintmax_t{0}, std::uintmax_t{96}, size / 2, size - 1}) {
    CAPTURE(keep);
    const std::string bad = dir.file("cut_" + std::to_string(keep) + ".h5");
    fs::copy_file(good, bad);
    fs::resize_file(bad, keep);
    std::string e;
    const std::string err = stderr_of([&] { e = error_of([&] { rpb::load_checkpoint(bad); }); });
    CHECK(contains(e, "checkpoint " + bad + ": cannot open as HDF5 (truncated or not an HDF5 file)"));
    CHECK(err.empty());
    CHECK(open_hdf5_objects() == 0);
  }
  SUBCASE("a text file") {
    const std::string text = dir.file("config.toml");
    std::ofstream(text) << "[model]\nname = \"x\"\n";
    std::string e;
    CHECK(stderr_of([&] { e = error_of([&] { rpb::load_checkpoint(text); }); }).empty());
    CHECK(contains(e, "checkpoint " + text + ": cannot open as HDF5"));
  }
  SUBCASE("a missing file") {
    const std::string e = error_of([&] { rpb::load_checkpoint(dir.file("nope.h5")); });
    CHECK(contains(e, "checkpoint " + dir.file("nope.h5") + ": no such file"));
  }
}

TEST_CASE("checkpoint: a flipped bit inside tensor data fails the CRC check") {
  TempDir dir;
  const std::string path = dir.file("flip.h5");
  for (const std::string dataset : {"/params/blocks.0.attn.qkv.weight", "/params/embed.ids",
                                    "/optim/exp_avg_sq/blocks.0.attn.qkv.weight", "/rng/data", "/metrics/loss"}) {
    CAPTURE(dataset);
    rpb::save_checkpoint(path, sample_checkpoint());
    CHECK(error_of([&] { rpb::load_checkpoint(path); }).empty());
    const haddr_t offset = data_offset(path, dataset);
    REQUIRE(offset != HADDR_UNDEF);
    flip_byte(path, offset + 13);
    std::string e;
    const std::string err = stderr_of([&] { e = error_of([&] { rpb::load_checkpoint(path); }); });
    CHECK(contains(e, "checkpoint " + path + ": dataset " + dataset + ": CRC-32 mismatch"));
    CHECK(err.empty());
    CHECK(open_hdf5_objects() == 0);
  }
}

TEST_CASE("checkpoint: another format version is refused") {
  TempDir dir;
  const std::string path = dir.file("v7.h5");
  rpb::save_checkpoint(path, sample_checkpoint());
  {
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(f >= 0);
    const hid_t a = H5Aopen_by_name(f, "/", "format_version", H5P_DEFAULT, H5P_DEFAULT);
    const int seven = 7;
    CHECK(H5Awrite(a, H5T_NATIVE_INT, &seven) >= 0);
    H5Aclose(a);
    H5Fclose(f);
  }
  const std::string e = error_of([&] { rpb::load_checkpoint(path); });
  CHECK(contains(e, "checkpoint " + path + ": format version 7 is not supported (this rpb reads 1)"));
  CHECK(open_hdf5_objects() == 0);

  // An HDF5 file that rpb did not write.
  const std::string other = dir.file("other.h5");
  {
    const hid_t f = H5Fcreate(other.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(f >= 0);
    H5Fclose(f);
  }
  CHECK(contains(error_of([&] { rpb::load_checkpoint(other); }),
                 "checkpoint " + other + ": not an rpb checkpoint (the root attribute format_version is missing)"));
}

TEST_CASE("checkpoint: unsupported dtypes and missing groups name the dataset") {
  TempDir dir;
  const std::string path = dir.file("odd.h5");
  rpb::save_checkpoint(path, sample_checkpoint());
  {
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(f >= 0);
    const hsize_t n = 2;
    const hid_t space = H5Screate_simple(1, &n, nullptr);
    const hid_t d = H5Dcreate2(f, "/params/int32.thing", H5T_NATIVE_INT32, space, H5P_DEFAULT, H5P_DEFAULT,
                               H5P_DEFAULT);
    REQUIRE(d >= 0);
    H5Dclose(d);
    H5Sclose(space);
    H5Fclose(f);
  }
  CHECK(contains(error_of([&] { rpb::load_checkpoint(path); }),
                 "checkpoint " + path + ": dataset /params/int32.thing: dtype int32 is not supported"));
  {
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(f >= 0);
    H5Ldelete(f, "/params/int32.thing", H5P_DEFAULT);
    H5Ldelete(f, "/metrics", H5P_DEFAULT);
    H5Fclose(f);
  }
  CHECK(contains(error_of([&] { rpb::load_checkpoint(path); }), "checkpoint " + path + ": group /metrics is missing"));
  CHECK(open_hdf5_objects() == 0);
}

TEST_CASE("checkpoint: a failed save leaves the previous file intact and no temp file") {
  TempDir dir;
  const std::string path = dir.file("step_000010.h5");
  const Checkpoint first = sample_checkpoint();
  rpb::save_checkpoint(path, first);

  SUBCASE("failure in the middle of writing (an invalid name after valid datasets)") {
    Checkpoint second = sample_checkpoint();
    second.step = 20;
    second.params.emplace_back("bad/name", Tensor::zeros({2}));
    std::string e;
    CHECK(stderr_of([&] { e = error_of([&] { rpb::save_checkpoint(path, second); }); }).empty());
    CHECK(contains(e, "checkpoint " + path + ": invalid name \"bad/name\" under /params"));
  }
  SUBCASE("duplicate names") {
    Checkpoint second = sample_checkpoint();
    second.params.push_back(second.params[0]);
    CHECK(contains(error_of([&] { rpb::save_checkpoint(path, second); }),
                   "dataset /params/blocks.0.attn.qkv.weight is written twice"));
  }
  SUBCASE("reserved optimizer scalar name") {
    Checkpoint second = sample_checkpoint();
    second.optim.scalars.emplace_back("step", 1.0);
    CHECK(contains(error_of([&] { rpb::save_checkpoint(path, second); }), "optimizer scalar \"step\""));
  }
  SUBCASE("the temp file cannot be created") {
    // A non-empty folder squats on the temp file's name.
    const fs::path squat = dir.path / (".step_000010.h5.tmp." + std::to_string(::getpid()));
    fs::create_directories(squat / "inside");
    std::string e;
    CHECK(stderr_of([&] { e = error_of([&] { rpb::save_checkpoint(path, sample_checkpoint()); }); }).empty());
    CHECK(contains(e, "checkpoint " + path + ": cannot create temp file"));
    fs::remove_all(squat);
  }
  SUBCASE("the final name is a folder: the rename fails") {
    const std::string folder = dir.file("taken.h5");
    fs::create_directories(fs::path(folder) / "inside");
    CHECK(contains(error_of([&] { rpb::save_checkpoint(folder, sample_checkpoint()); }),
                   "checkpoint " + folder + ": cannot rename"));
    fs::remove_all(folder);
  }
  SUBCASE("the folder does not exist") {
    const std::string nowhere = dir.file("missing/step.h5");
    CHECK(contains(error_of([&] { rpb::save_checkpoint(nowhere, sample_checkpoint()); }),
                   "checkpoint " + nowhere + ": folder " + dir.file("missing") + " does not exist"));
  }
  CHECK(open_hdf5_objects() == 0);
  CHECK(dir.entries() == std::vector<std::string>{"step_000010.h5"});
  require_equal(first, rpb::load_checkpoint(path));
}

TEST_CASE("checkpoint: write_latest and read_latest") {
  TempDir dir;
  const std::string run = dir.path.string();
  CHECK(rpb::read_latest(run).empty());
  rpb::write_latest(run, "step_00000100.h5");
  CHECK(rpb::read_latest(run) == (dir.path / "step_00000100.h5").string());
  rpb::write_latest(run, "step_00000200.h5");
  CHECK(rpb::read_latest(run) == (dir.path / "step_00000200.h5").string());
  CHECK(dir.entries() == std::vector<std::string>{"latest"});
  std::ifstream in(dir.path / "latest");
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(content == "step_00000200.h5\n");

  CHECK(contains(error_of([&] { rpb::write_latest(run, "../escape.h5"); }), "is not a bare file name"));
  CHECK(contains(error_of([&] { rpb::write_latest(run, ""); }), "is not a bare file name"));
  CHECK(contains(error_of([&] { rpb::write_latest(run, "config.toml"); }), "\"config.toml\" is not the name of a "
                                                                           "checkpoint file of its run folder"));
  CHECK(contains(error_of([&] { rpb::write_latest(dir.file("gone"), "step_00000001.h5"); }),
                 "folder " + dir.file("gone") + " does not exist"));
  CHECK(rpb::read_latest(run) == (dir.path / "step_00000200.h5").string());
  CHECK(rpb::read_latest(dir.file("gone")).empty());
}

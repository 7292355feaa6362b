// rpb/train/checkpoint/checkpoint.cpp: the HDF5 checkpoint format (see checkpoint.h for the layout): saving and
// loading; /metrics is checkpoint_metrics.cpp, the parameters checked against a model checkpoint_params.cpp. The HDF5
// glue underneath (handles, attributes, datasets, the in-memory file) is train/checkpoint/hdf5_util.h.
#include "train/checkpoint/checkpoint.h"

#include "core/autograd.h"

#include <hdf5.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "core/text.h"
#include "train/checkpoint/checkpoint_metrics.h"
#include "train/checkpoint/hdf5_guard.h"
#include "train/checkpoint/hdf5_util.h"
#include "train/config/memory.h"
#include "train/io/atomic_file.h"
#include "train/io/input_file.h"
#include "train/io/provenance.h"
#include "train/io/sha256.h"
#include "train/io/version.h"

namespace rpb {


namespace {

using namespace hdf5;

// ------------------------------------------------------------- writing ----

void write_tensor(hid_t parent, const std::string& name, const std::string& full, const Tensor& t,
                  const std::string& op) {
  CKPT_CHECK(t.defined(), "dataset ", full, ": the tensor is undefined");
  write_dataset(parent, name, full, native_type(t.dtype()), t.shape(), t.raw_data(),
                static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()), op);
}

void write_tensor_group(hid_t file, const std::string& group_name, const nn::NamedTensors& tensors,
                        const std::string& op) {
  const std::string where = "/" + group_name;
  Hid group = create_group(file, group_name, where, op);
  for (const auto& [name, t] : tensors) {
    check_link_name(name, where, op);
    write_tensor(group.get(), name, where + "/" + name, t, op);
  }
}

/// The root attributes: format_version, rpb_version, commit, config, config_digest (when known), step, created.
void write_root_attrs(hid_t root, const Checkpoint& c, const std::string& op) {
  write_attr(root, "format_version", H5T_NATIVE_INT, kCheckpointFormatVersion, "/", op);
  write_string_attr(root, "rpb_version", c.library_version.empty() ? version() : c.library_version, "/", op);
  write_string_attr(root, "commit", c.commit.empty() ? build_commit() : c.commit, "/", op);
  write_string_attr(root, "config", c.config_text, "/", op);
  if (!c.config_digest.empty()) write_string_attr(root, "config_digest", c.config_digest, "/", op);
  write_attr(root, "step", H5T_NATIVE_INT64, c.step, "/", op);
  write_string_attr(root, "created", utc_now_iso8601(), "/", op);
}

/// /optim: its attributes (kind, step, groups, then the hyper-parameters) and its tensors.
void write_optim(hid_t root, const optim::OptimizerState& s, const std::string& op) {
  Hid optim = create_group(root, "optim", "/optim", op);
  write_string_attr(optim.get(), "kind", s.kind, "/optim", op);
  write_attr(optim.get(), "step", H5T_NATIVE_INT64, s.step, "/optim", op);
  write_string_attr(optim.get(), "groups", s.groups, "/optim", op);
  for (const auto& [name, value] : s.scalars) {
    CKPT_CHECK(name != "kind" && name != "step" && name != "groups" && !name.empty(), "optimizer scalar \"", name,
               "\": the name is empty or reserved (kind, step, groups are /optim's own attributes)");
    CKPT_CHECK(H5Aexists(optim.get(), name.c_str()) == 0, "optimizer scalar ", name, " is written twice");
    write_attr(optim.get(), name, H5T_NATIVE_DOUBLE, value, "/optim", op);
  }
  for (const auto& [name, t] : s.tensors) {
    const std::size_t slash = name.rfind('/');
    const std::string leaf = slash == std::string::npos ? name : name.substr(slash + 1);
    const std::string dir = slash == std::string::npos ? "" : name.substr(0, slash);
    Hid group = ensure_groups(optim.get(), "/optim", dir, op);
    check_link_name(leaf, "/optim/" + dir, op);
    write_tensor(group.get(), leaf, "/optim/" + name, t, op);
  }
}

void write_rng(hid_t root, const std::vector<std::pair<std::string, Generator::State>>& states,
               const std::string& op) {
  Hid rng = create_group(root, "rng", "/rng", op);
  for (const auto& [name, state] : states) {
    check_link_name(name, "/rng", op);
    write_dataset(rng.get(), name, "/rng/" + name, H5T_NATIVE_UINT64, Shape{4}, state.data(), sizeof state, op);
  }
}

void write_counters(hid_t root, const std::vector<std::pair<std::string, int64_t>>& counters, const std::string& op) {
  Hid state = create_group(root, "state", "/state", op);
  for (const auto& [name, value] : counters) {
    CKPT_CHECK(!name.empty() && H5Aexists(state.get(), name.c_str()) == 0, "counter \"", name,
               "\" is empty or written twice");
    write_attr(state.get(), name, H5T_NATIVE_INT64, value, "/state", op);
  }
}

/// /data (DataIdentity) when there is one: the text's digest, and the byte of each id (kjv) or the tokenizer (text).
void write_data_identity(hid_t root, const DataIdentity& d, const std::string& op) {
  if (d.empty()) return;
  Hid data = create_group(root, "data", "/data", op);
  write_string_attr(data.get(), "text_sha256", d.text_sha256, "/data", op);
  if (!d.tokenizer.empty()) {
    write_string_attr(data.get(), "tokenizer", d.tokenizer.kind, "/data", op);
    const std::string& m = d.tokenizer.model;
    if (!m.empty())
      write_dataset(data.get(), "tokenizer_model", "/data/tokenizer_model", H5T_NATIVE_UINT8,
                    Shape{static_cast<int64_t>(m.size())}, m.data(), m.size(), op);
    return;
  }
  std::vector<int64_t> bytes;
  for (const char ch : d.vocab) bytes.push_back(static_cast<unsigned char>(ch));
  write_dataset(data.get(), "vocab", "/data/vocab", H5T_NATIVE_INT64, Shape{static_cast<int64_t>(bytes.size())},
                bytes.data(), bytes.size() * sizeof(int64_t), op);
}

// Builds the checkpoint as an HDF5 file in memory and returns the bytes of the closed file;
// save_checkpoint writes them itself (memory_file_image says why HDF5 never writes to disk).
std::vector<char> hdf5_image(const std::string& file_path, const Checkpoint& c, const std::string& op) {
  std::size_t bytes = 0;
  for (const nn::NamedTensors* group : {&c.params, &c.buffers, &c.optim.tensors})
    for (const auto& [name, t] : *group) bytes += static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype());
  const auto fill = [&](hid_t file) {
    Hid root = must(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose, op, "cannot open group /");
    write_root_attrs(root.get(), c, op);
    write_tensor_group(root.get(), "params", c.params, op);
    write_tensor_group(root.get(), "buffers", c.buffers, op);
    write_optim(root.get(), c.optim, op);
    write_rng(root.get(), c.rng, op);
    write_counters(root.get(), c.counters, op);
    write_metrics(root.get(), c.metrics, op);
    write_data_identity(root.get(), c.data, op);
  };
  return memory_file_image(file_path, bytes, fill, op);
}

// ------------------------------------------------------------- reading ----
//
// A checkpoint is untrusted input (people share them): every object is opened through a SafeReader
// (hard links only, each object once, data stored inside the file, sizes checked before allocating),
// and every name read from the file enters messages through printable().

/// "<where>/<name>" for messages, with the name read from the file made printable.
std::string child_path(const std::string& where, const std::string& name) {
  return where + "/" + printable(name);
}

Tensor read_tensor(const SafeReader& r, hid_t dset, const std::string& full) {
  const std::string& op = r.op();
  Hid type = must(H5Dget_type(dset), H5Tclose, op, "cannot read the type of " + full);
  const H5T_class_t cls = H5Tget_class(type.get());
  const std::size_t size = H5Tget_size(type.get());
  DType dtype = DType::f32;
  if (cls == H5T_FLOAT && size == 4) dtype = DType::f32;
  else if (cls == H5T_FLOAT && size == 8) dtype = DType::f64;
  else if (cls == H5T_INTEGER && size == 8 && H5Tget_sign(type.get()) == H5T_SGN_2) dtype = DType::i64;
  else RPB_FAIL(op.c_str(), "dataset ", full, ": dtype ", type_name(type.get()),
                " is not supported (rpb reads float32, float64 and int64)");
  const DatasetExtent e = r.extent(dset, dtype_size(dtype), full);
  Tensor t = Tensor::empty(e.shape, dtype);
  read_dataset(dset, full, native_type(dtype), t.raw_mutable_data(), e.numel * dtype_size(dtype), op);
  return t;
}

nn::NamedTensors read_tensor_group(SafeReader& r, hid_t root, const std::string& group_name) {
  const std::string where = "/" + group_name;
  Hid group = r.open_group(root, group_name, where);
  nn::NamedTensors out;
  for (const std::string& name : link_names(group.get(), where, r.op())) {
    const std::string full = child_path(where, name);
    Hid dset = r.open_dataset(group.get(), name, full);
    out.emplace_back(name, read_tensor(r, dset.get(), full));
  }
  return out;
}

/// Depth-first over /optim's subgroups: "exp_avg/blocks.0.w" for /optim/exp_avg/blocks.0.w.
void read_optim_tensors(SafeReader& r, hid_t group, const std::string& prefix, const std::string& where, int depth,
                        nn::NamedTensors& out) {
  const std::string& op = r.op();
  CKPT_CHECK(depth < 32, "group ", where, " is nested too deeply");
  for (const std::string& name : link_names(group, where, op)) {
    const std::string full = child_path(where, name);
    Hid obj = r.open_object(group, name, full);
    const H5I_type_t kind = H5Iget_type(obj.get());
    if (kind == H5I_GROUP) read_optim_tensors(r, obj.get(), prefix + name + "/", full, depth + 1, out);
    else if (kind == H5I_DATASET) out.emplace_back(prefix + name, read_tensor(r, obj.get(), full));
    else RPB_FAIL(op.c_str(), full, " is neither a group nor a dataset");
  }
}

/// The root attributes, format_version first (any other version is refused before anything else is read).
void read_root_attrs(hid_t root, Checkpoint& c, const std::string& op) {
  CKPT_CHECK(H5Aexists(root, "format_version") > 0,
             "not an rpb checkpoint (the root attribute format_version is missing)");
  const int64_t format = read_int_attr(root, "format_version", "/", op);
  CKPT_CHECK(format == kCheckpointFormatVersion, "format version ", format, " is not supported (this rpb reads ",
             kCheckpointFormatVersion, ")");
  c.library_version = read_string_attr(root, "rpb_version", "/", op);
  if (H5Aexists(root, "commit") > 0) c.commit = read_string_attr(root, "commit", "/", op);
  c.config_text = read_string_attr(root, "config", "/", op);
  if (H5Aexists(root, "config_digest") > 0) c.config_digest = read_string_attr(root, "config_digest", "/", op);
  c.step = read_int_attr(root, "step", "/", op);
  check_step(c.step, "attribute step of /", op);
}

optim::OptimizerState read_optim(SafeReader& r, hid_t root) {
  const std::string& op = r.op();
  optim::OptimizerState s;
  Hid optim = r.open_group(root, "optim", "/optim");
  s.kind = read_string_attr(optim.get(), "kind", "/optim", op);
  s.step = read_int_attr(optim.get(), "step", "/optim", op);
  check_step(s.step, "attribute step of /optim", op);
  s.groups = read_string_attr(optim.get(), "groups", "/optim", op);
  for (const std::string& name : attr_names(optim.get(), "/optim", op)) {
    if (name == "kind" || name == "step" || name == "groups" || name.ends_with(kStringCrcSuffix)) continue;
    s.scalars.emplace_back(name,
                           read_attr<double>(optim.get(), name, H5T_FLOAT, H5T_NATIVE_DOUBLE, "a float", "/optim", op));
  }
  read_optim_tensors(r, optim.get(), "", "/optim", 0, s.tensors);
  return s;
}

std::vector<std::pair<std::string, Generator::State>> read_rng(SafeReader& r, hid_t root) {
  const std::string& op = r.op();
  std::vector<std::pair<std::string, Generator::State>> states;
  Hid rng = r.open_group(root, "rng", "/rng");
  for (const std::string& name : link_names(rng.get(), "/rng", op)) {
    const std::string full = child_path("/rng", name);
    Hid dset = r.open_dataset(rng.get(), name, full);
    Hid type = must(H5Dget_type(dset.get()), H5Tclose, op, "cannot read the type of " + full);
    const DatasetExtent e = r.extent(dset.get(), sizeof(uint64_t), full);
    CKPT_CHECK(H5Tget_class(type.get()) == H5T_INTEGER && H5Tget_size(type.get()) == 8 &&
                   H5Tget_sign(type.get()) == H5T_SGN_NONE && e.shape == Shape{4},
               "dataset ", full, ": expected shape [4] uint64, found ", e.shape, " ", type_name(type.get()));
    Generator::State state{};
    read_dataset(dset.get(), full, H5T_NATIVE_UINT64, state.data(), sizeof state, op);
    states.emplace_back(name, state);
  }
  return states;
}

std::vector<std::pair<std::string, int64_t>> read_counters(SafeReader& r, hid_t root) {
  std::vector<std::pair<std::string, int64_t>> counters;
  Hid state = r.open_group(root, "state", "/state");
  for (const std::string& name : attr_names(state.get(), "/state", r.op()))
    counters.emplace_back(name, read_int_attr(state.get(), name, "/state", r.op()));
  return counters;
}

/// /data, when the file has it: a vocabulary of 1 to 256 distinct bytes (its size checked before it is read) and a
/// digest of 64 hex digits.
DataIdentity read_data_identity(SafeReader& r, hid_t root) {
  const std::string& op = r.op();
  DataIdentity d;
  if (H5Lexists(root, "data", H5P_DEFAULT) <= 0) return d;
  Hid data = r.open_group(root, "data", "/data");
  d.text_sha256 = read_string_attr(data.get(), "text_sha256", "/data", op);
  CKPT_CHECK(is_sha256_hex(d.text_sha256),
             "attribute text_sha256 of /data: expected 64 lowercase hex digits, found \"", printable(d.text_sha256, 80),
             "\"");
  if (H5Aexists(data.get(), "tokenizer") > 0) {  // a text run: its tokenizer, parsed (every size checked) on load
    d.tokenizer.kind = read_string_attr(data.get(), "tokenizer", "/data", op);
    const bool stored = H5Lexists(data.get(), "tokenizer_model", H5P_DEFAULT) > 0;
    if (stored) {
      Hid dset = r.open_dataset(data.get(), "tokenizer_model", "/data/tokenizer_model");
      Hid type = must(H5Dget_type(dset.get()), H5Tclose, op, "cannot read the type of /data/tokenizer_model");
      const DatasetExtent e = r.extent(dset.get(), 1, "/data/tokenizer_model");
      CKPT_CHECK(H5Tget_class(type.get()) == H5T_INTEGER && H5Tget_size(type.get()) == 1 && e.shape.size() == 1 &&
                     e.numel >= 1 && e.numel <= data::kMaxTokenizerModelBytes,
                 "dataset /data/tokenizer_model: expected 1 to ", data::kMaxTokenizerModelBytes,
                 " bytes (uint8), found ", e.shape, " ", type_name(type.get()));
      d.tokenizer.model.resize(e.numel);
      read_dataset(dset.get(), "/data/tokenizer_model", H5T_NATIVE_UINT8, d.tokenizer.model.data(), e.numel, op);
    }
    try {
      data::load_tokenizer(d.tokenizer, "/data/tokenizer_model");
    } catch (const Error& e) {
      // No dataset is written for a tokenizer without a model (bytes): one that needs a model and has none says so.
      const std::vector<std::string> kinds = data::tokenizer_names();
      CKPT_CHECK(stored || std::find(kinds.begin(), kinds.end(), d.tokenizer.kind) == kinds.end(),
                 "dataset /data/tokenizer_model is missing: attribute tokenizer of /data names a ",
                 printable(d.tokenizer.kind, 40), " tokenizer, which is stored with its model");
      CKPT_CHECK(false, e.message());
    }
    return d;
  }
  CKPT_CHECK(H5Lexists(data.get(), "vocab", H5P_DEFAULT) > 0, "dataset /data/vocab is missing");
  Hid dset = r.open_dataset(data.get(), "vocab", "/data/vocab");
  Hid type = must(H5Dget_type(dset.get()), H5Tclose, op, "cannot read the type of /data/vocab");
  const DatasetExtent e = r.extent(dset.get(), sizeof(int64_t), "/data/vocab");
  CKPT_CHECK(H5Tget_class(type.get()) == H5T_INTEGER && H5Tget_size(type.get()) == 8 && e.shape.size() == 1 &&
                 e.numel >= 1 && e.numel <= 256,
             "dataset /data/vocab: expected 1 to 256 int64 values (a byte per id), found ", e.shape, " ",
             type_name(type.get()));
  std::vector<int64_t> bytes(e.numel);
  read_dataset(dset.get(), "/data/vocab", H5T_NATIVE_INT64, bytes.data(), e.numel * sizeof(int64_t), op);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    CKPT_CHECK(bytes[i] >= 0 && bytes[i] <= 255 && (i == 0 || bytes[i] > bytes[i - 1]), "dataset /data/vocab: entry ",
               i, " is ", bytes[i], "; expected increasing bytes in [0, 255]");
    d.vocab.push_back(static_cast<char>(bytes[i]));
  }
  return d;
}

// The bytes of the checkpoint file `path`, as load_checkpoint documents: read_input_file up to the memory limit.
std::string read_checkpoint_bytes(const std::string& path, bool in_run_folder) {
  const MemoryBudget& budget = memory_budget();
  InputOptions o;
  o.what = "checkpoint";
  o.max_bytes = budget.bytes ? budget.bytes : kMaxCheckpointBytes;
  o.limit_source = budget.bytes ? "the memory limit (" + budget.source + ")"
                                : "the most rpb reads of a checkpoint without a memory limit";
  o.in_run_folder = in_run_folder;
  return read_input_file(path, o);
}

/// Everything under the root group, in the order the layout lists it.
Checkpoint read_layout(hid_t file, const std::string& op) {
  Checkpoint c;
  SafeReader r(file, op);
  Hid root = r.open_root();
  read_root_attrs(root.get(), c, op);
  c.params = read_tensor_group(r, root.get(), "params");
  c.buffers = read_tensor_group(r, root.get(), "buffers");
  c.optim = read_optim(r, root.get());
  c.rng = read_rng(r, root.get());
  c.counters = read_counters(r, root.get());
  c.metrics = read_metrics(r, root.get());
  c.data = read_data_identity(r, root.get());
  return c;
}

}  // namespace

// ------------------------------------------------------------ public API ----

std::string save_checkpoint(const std::string& path, const Checkpoint& c, FileDigest digest) {
  const std::string op = "checkpoint " + path;
  QuietHdf5 quiet;
  const std::vector<char> image = hdf5_image(path, c, op);
  const std::string_view bytes(image.data(), image.size());
  write_file_atomically(path, bytes, op);
  return digest == FileDigest::sha256 ? sha256_hex(bytes) : std::string();
}

Checkpoint load_checkpoint(const std::string& path, bool in_run_folder, FileDigest digest) {
  const std::string op = "checkpoint " + path;
  std::string bytes = read_checkpoint_bytes(path, in_run_folder);
  QuietHdf5 quiet;
  Checkpoint c;
  {
    Hid file = open_file_image(bytes, op);
    c = read_layout(file.get(), op);
    must_ok(file.close(), op, "cannot close the file");
  }
  if (digest == FileDigest::sha256) c.file_sha256 = sha256_hex(bytes);
  return c;
}

}  // namespace rpb

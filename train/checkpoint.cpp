// rpb/train/checkpoint.cpp: the HDF5 checkpoint format (see checkpoint.h for the layout).
#include "train/checkpoint.h"

#include "train/atomic_file.h"

#include "core/autograd.h"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "train/version.h"

namespace rpb {

namespace fs = std::filesystem;

// HDF5 1.10 can keep internal state of a file after an object header fails its checksum (every handle
// rpb opened is closed); its shutdown at exit then loops and prints "HDF5: infinite loop closing
// library" on stderr. rpb never has HDF5 write a file (saves go through an in-memory image, see
// hdf5_image; loads are read-only), so that shutdown has nothing to flush: it is skipped.
[[maybe_unused]] static const herr_t kNoHdf5Shutdown = H5dont_atexit();

// ---------------------------------------------------------------- CRC-32 ----

namespace {
constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();
}  // namespace

uint32_t crc32_ieee(const void* data, std::size_t bytes, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < bytes; ++i) crc = kCrcTable[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

namespace {

// ------------------------------------------------------- HDF5 plumbing ----

/// Owns one HDF5 handle and closes it with the matching H5?close.
class Hid {
 public:
  using Closer = herr_t (*)(hid_t);
  Hid() = default;
  Hid(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), closer_(o.closer_) {}
  Hid& operator=(Hid&& o) noexcept {
    if (this != &o) {
      close();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      closer_ = o.closer_;
    }
    return *this;
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  ~Hid() { close(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  /// Closes now; returns the closer's status (0 when there was nothing to close).
  herr_t close() {
    herr_t status = 0;
    if (id_ >= 0) status = closer_(id_);
    id_ = H5I_INVALID_HID;
    return status;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

/// Turns off HDF5's printing of its error stack for the current scope (we report our own errors).
class QuietHdf5 {
 public:
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

/// The innermost message of HDF5's current error stack ("truncated file: eof = 96, ..."), or "".
std::string hdf5_reason() {
  std::string reason;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
        if (e->desc && *e->desc) *static_cast<std::string*>(out) = e->desc;
        return 0;
      },
      &reason);
  return reason.empty() ? "" : " (HDF5: " + reason + ")";
}

// Every check below throws "checkpoint <file>: ..." through RPB_CHECK; `op` is that prefix.
#define CKPT_CHECK(cond, ...) RPB_CHECK(cond, op.c_str(), __VA_ARGS__)

/// Wraps a new HDF5 handle, throwing (with HDF5's reason) when creating it failed.
Hid must(hid_t id, Hid::Closer closer, const std::string& op, const std::string& what) {
  CKPT_CHECK(id >= 0, what, hdf5_reason());
  return Hid(id, closer);
}

void must_ok(herr_t status, const std::string& op, const std::string& what) {
  CKPT_CHECK(status >= 0, what, hdf5_reason());
}

hid_t native_type(DType d) {
  switch (d) {
    case DType::f32: return H5T_NATIVE_FLOAT;
    case DType::f64: return H5T_NATIVE_DOUBLE;
    case DType::i64: return H5T_NATIVE_INT64;
  }
  return H5T_NATIVE_FLOAT;
}

/// "float32", "int64", "uint64", "string", ... for messages.
std::string type_name(hid_t type) {
  const std::string bits = std::to_string(8 * H5Tget_size(type));
  switch (H5Tget_class(type)) {
    case H5T_FLOAT: return "float" + bits;
    case H5T_INTEGER: return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + bits;
    case H5T_STRING: return "string";
    default: return "HDF5 type class " + std::to_string(static_cast<int>(H5Tget_class(type)));
  }
}

/// Property lists that make groups remember the creation order of their links and attributes,
/// so that everything loads back in the order it was saved.
Hid ordered_plist(hid_t cls, const std::string& op) {
  Hid p = must(H5Pcreate(cls), H5Pclose, op, "cannot create a property list");
  const unsigned flags = H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED;
  must_ok(H5Pset_link_creation_order(p.get(), flags), op, "cannot set link creation order");
  must_ok(H5Pset_attr_creation_order(p.get(), flags), op, "cannot set attribute creation order");
  return p;
}

Hid file_access_plist(const std::string& op) {
  Hid fapl = must(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, op, "cannot create a property list");
  // Attributes larger than 64 KiB (a long config) need the 1.8 object header format.
  must_ok(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST), op, "cannot set format bounds");
  // Closing the file fails if any object in it is still open: a leaked handle shows up as an error.
  must_ok(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_SEMI), op, "cannot set file close degree");
#if H5_VERSION_GE(1, 10, 7)
  must_ok(H5Pset_file_locking(fapl.get(), true, true), op, "cannot set file locking");
#endif
  return fapl;
}

// ------------------------------------------------------------- writing ----

/// A link name inside one group: non-empty, no '/', not ".".
void check_link_name(const std::string& name, const std::string& where, const std::string& op) {
  CKPT_CHECK(!name.empty() && name.find('/') == std::string::npos && name != ".", "invalid name \"", name,
             "\" under ", where, " (names must be non-empty, without '/', and not \".\")");
}

Hid create_group(hid_t parent, const std::string& name, const std::string& full, const std::string& op) {
  Hid gcpl = ordered_plist(H5P_GROUP_CREATE, op);
  return must(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose, op,
              "cannot create group " + full);
}

Hid scalar_space(const std::string& op) { return must(H5Screate(H5S_SCALAR), H5Sclose, op, "cannot create dataspace"); }

template <typename T>
void write_attr(hid_t obj, const std::string& name, hid_t type, const T& value, const std::string& where,
                const std::string& op) {
  Hid space = scalar_space(op);
  Hid attr = must(H5Acreate2(obj, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose, op,
                  "cannot create attribute " + name + " on " + where);
  must_ok(H5Awrite(attr.get(), type, &value), op, "cannot write attribute " + name + " on " + where);
}

/// A fixed-length, NUL-terminated UTF-8 string attribute.
void write_string_attr(hid_t obj, const std::string& name, const std::string& value, const std::string& where,
                       const std::string& op) {
  Hid type = must(H5Tcopy(H5T_C_S1), H5Tclose, op, "cannot create string type");
  must_ok(H5Tset_size(type.get(), value.size() + 1), op, "cannot size string type");
  must_ok(H5Tset_strpad(type.get(), H5T_STR_NULLTERM), op, "cannot set string padding");
  must_ok(H5Tset_cset(type.get(), H5T_CSET_UTF8), op, "cannot set string charset");
  Hid space = scalar_space(op);
  Hid attr = must(H5Acreate2(obj, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose, op,
                  "cannot create attribute " + name + " on " + where);
  must_ok(H5Awrite(attr.get(), type.get(), value.c_str()), op, "cannot write attribute " + name + " on " + where);
}

/// A dataset of `dims` (empty: a scalar dataspace) holding `bytes` bytes at `data`, plus its "crc32".
void write_dataset(hid_t parent, const std::string& name, const std::string& full, hid_t type, const Shape& dims,
                   const void* data, std::size_t bytes, const std::string& op) {
  CKPT_CHECK(H5Lexists(parent, name.c_str(), H5P_DEFAULT) == 0, "dataset ", full, " is written twice (duplicate name)");
  std::array<hsize_t, kMaxDims> extents{};
  for (int i = 0; i < dims.size(); ++i) extents[i] = static_cast<hsize_t>(dims[i]);
  Hid space = dims.empty() ? scalar_space(op)
                           : must(H5Screate_simple(dims.size(), extents.data(), nullptr), H5Sclose, op,
                                  "cannot create dataspace for " + full);
  Hid dset = must(H5Dcreate2(parent, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                  H5Dclose, op, "cannot create dataset " + full);
  if (bytes > 0)
    must_ok(H5Dwrite(dset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), op, "cannot write dataset " + full);
  const uint32_t crc = crc32_ieee(data, bytes);
  write_attr(dset.get(), "crc32", H5T_NATIVE_UINT32, crc, full, op);
}

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

/// Opens (creating when absent) the group at `path` ("exp_avg" or "a/b") under `root`.
Hid ensure_groups(hid_t root, const std::string& root_path, const std::string& path, const std::string& op) {
  Hid current = must(H5Gopen2(root, ".", H5P_DEFAULT), H5Gclose, op, "cannot open group " + root_path);
  std::string full = root_path;
  std::size_t start = 0;
  while (start < path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string part = path.substr(start, end - start);
    check_link_name(part, full, op);
    full += "/" + part;
    const htri_t exists = H5Lexists(current.get(), part.c_str(), H5P_DEFAULT);
    if (exists > 0) {
      current = must(H5Gopen2(current.get(), part.c_str(), H5P_DEFAULT), H5Gclose, op,
                     "cannot open group " + full + " (a dataset has that name)");
    } else {
      current = create_group(current.get(), part, full, op);
    }
    start = end + 1;
  }
  return current;
}

std::string iso_time_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The in-memory file's buffer, handed over by HDF5's core driver through file image callbacks:
// `bytes` receives its first `keep` bytes when the file closes.
struct MemoryImage {
  std::size_t capacity = 0;
  std::size_t keep = 0;
  std::vector<char> bytes;
};

void* image_malloc(std::size_t n, H5FD_file_image_op_t, void* u) {
  void* p = std::malloc(n);
  if (p) static_cast<MemoryImage*>(u)->capacity = n;
  return p;
}
void* image_memcpy(void* dst, const void* src, std::size_t n, H5FD_file_image_op_t, void*) {
  return std::memcpy(dst, src, n);
}
void* image_realloc(void* p, std::size_t n, H5FD_file_image_op_t, void* u) {
  void* q = std::realloc(p, n);
  if (q) static_cast<MemoryImage*>(u)->capacity = n;
  return q;
}
herr_t image_free(void* p, H5FD_file_image_op_t op, void* u) {
  auto* m = static_cast<MemoryImage*>(u);
  if (p && op == H5FD_FILE_IMAGE_OP_FILE_CLOSE) {
    const char* c = static_cast<const char*>(p);
    m->bytes.assign(c, c + std::min(m->keep, m->capacity));
    m->bytes.resize(m->keep, 0);  // space allocated at the end but never written reads as zeros
  }
  std::free(p);
  return 0;
}
void* image_udata_copy(void* u) { return u; }
herr_t image_udata_free(void*) { return 0; }

// Builds the checkpoint as an HDF5 file in memory (the core driver, no backing store) and returns
// the bytes of the closed file; save_checkpoint writes them itself. HDF5 never writes to disk here:
// when its own write fails (a full disk, EFBIG), H5Fclose fails too and leaves the file open inside
// the library (holding the deleted temp file's space), which then crashes at exit (H5F__close_cb
// from H5_term_library, HDF5 1.10). The bytes are taken at close rather than with
// H5Fget_file_image, which clears the superblock's status flags without updating its checksum.
std::vector<char> hdf5_image(const std::string& file_path, const Checkpoint& c, const std::string& op) {
  Hid fcpl = ordered_plist(H5P_FILE_CREATE, op);
  Hid fapl = file_access_plist(op);
  std::size_t bytes = 0;
  for (const nn::NamedTensors* group : {&c.params, &c.buffers, &c.optim.tensors})
    for (const auto& [name, t] : *group) bytes += static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype());
  must_ok(H5Pset_fapl_core(fapl.get(), bytes + (std::size_t{1} << 16), /*backing_store=*/0), op,
          "cannot set the in-memory file driver");
  MemoryImage image;
  H5FD_file_image_callbacks_t callbacks = {image_malloc, image_memcpy,     image_realloc, image_free,
                                           image_udata_copy, image_udata_free, &image};
  must_ok(H5Pset_file_image_callbacks(fapl.get(), &callbacks), op, "cannot set the file image callbacks");
  Hid file = must(H5Fcreate(file_path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()), H5Fclose, op,
                  "cannot create the in-memory file for " + file_path);
  {
    Hid root = must(H5Gopen2(file.get(), "/", H5P_DEFAULT), H5Gclose, op, "cannot open group /");
    write_attr(root.get(), "format_version", H5T_NATIVE_INT, kCheckpointFormatVersion, "/", op);
    write_string_attr(root.get(), "rpb_version", c.library_version.empty() ? version() : c.library_version, "/", op);
    write_string_attr(root.get(), "config", c.config_text, "/", op);
    write_attr(root.get(), "step", H5T_NATIVE_INT64, c.step, "/", op);
    write_string_attr(root.get(), "created", iso_time_now(), "/", op);

    write_tensor_group(root.get(), "params", c.params, op);
    write_tensor_group(root.get(), "buffers", c.buffers, op);

    Hid optim = create_group(root.get(), "optim", "/optim", op);
    write_string_attr(optim.get(), "kind", c.optim.kind, "/optim", op);
    write_attr(optim.get(), "step", H5T_NATIVE_INT64, c.optim.step, "/optim", op);
    write_string_attr(optim.get(), "groups", c.optim.groups, "/optim", op);
    for (const auto& [name, value] : c.optim.scalars) {
      CKPT_CHECK(name != "kind" && name != "step" && name != "groups" && !name.empty(), "optimizer scalar \"", name,
                 "\": the name is empty or reserved (kind, step, groups are /optim's own attributes)");
      CKPT_CHECK(H5Aexists(optim.get(), name.c_str()) == 0, "optimizer scalar ", name, " is written twice");
      write_attr(optim.get(), name, H5T_NATIVE_DOUBLE, value, "/optim", op);
    }
    for (const auto& [name, t] : c.optim.tensors) {
      const std::size_t slash = name.rfind('/');
      const std::string leaf = slash == std::string::npos ? name : name.substr(slash + 1);
      const std::string dir = slash == std::string::npos ? "" : name.substr(0, slash);
      Hid group = ensure_groups(optim.get(), "/optim", dir, op);
      check_link_name(leaf, "/optim/" + dir, op);
      write_tensor(group.get(), leaf, "/optim/" + name, t, op);
    }

    Hid rng = create_group(root.get(), "rng", "/rng", op);
    for (const auto& [name, state] : c.rng) {
      check_link_name(name, "/rng", op);
      write_dataset(rng.get(), name, "/rng/" + name, H5T_NATIVE_UINT64, Shape{4}, state.data(), sizeof state, op);
    }

    Hid state = create_group(root.get(), "state", "/state", op);
    for (const auto& [name, value] : c.counters) {
      CKPT_CHECK(!name.empty() && H5Aexists(state.get(), name.c_str()) == 0, "counter \"", name,
                 "\" is empty or written twice");
      write_attr(state.get(), name, H5T_NATIVE_INT64, value, "/state", op);
    }

    Hid metrics = create_group(root.get(), "metrics", "/metrics", op);
    const std::size_t n = c.metrics.size();
    std::vector<int64_t> steps(n);
    std::array<std::vector<double>, 4> columns;
    for (auto& col : columns) col.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const MetricsRow& r = c.metrics[i];
      steps[i] = r.step;
      columns[0][i] = r.loss;
      columns[1][i] = r.lr;
      columns[2][i] = r.grad_norm;
      columns[3][i] = r.tokens_per_sec;
    }
    const Shape dims{static_cast<int64_t>(n)};
    write_dataset(metrics.get(), "step", "/metrics/step", H5T_NATIVE_INT64, dims, steps.data(), n * 8, op);
    const char* names[4] = {"loss", "lr", "grad_norm", "tokens_per_sec"};
    for (int k = 0; k < 4; ++k)
      write_dataset(metrics.get(), names[k], std::string("/metrics/") + names[k], H5T_NATIVE_DOUBLE, dims,
                    columns[k].data(), n * 8, op);
  }
  must_ok(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), op, "cannot flush the in-memory file");
  const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);  // the end of the file (its EOA)
  CKPT_CHECK(size > 0, "cannot get the size of the in-memory file", hdf5_reason());
  image.keep = static_cast<std::size_t>(size);
  must_ok(file.close(), op, "cannot close the in-memory file");
  CKPT_CHECK(image.bytes.size() == image.keep, "the in-memory file's bytes were not handed over at close");
  // Closing gives the free space at the end back: the superblock (version 2 or 3, 8-byte addresses, as
  // the 1.8+ format bounds write it) then records a smaller end of file than `keep`, and the bytes past
  // it are never read. Dropping them makes every byte count: a file cut short by one byte fails to open.
  std::vector<char>& b = image.bytes;
  if (b.size() >= 48 && std::memcmp(b.data(), "\x89HDF\r\n\x1a\n", 8) == 0 && (b[8] == 2 || b[8] == 3) && b[9] == 8) {
    uint64_t eof = 0;
    for (int i = 7; i >= 0; --i) eof = eof << 8 | static_cast<unsigned char>(b[28 + i]);  // little-endian
    if (eof >= 48 && eof < b.size()) b.resize(eof);
  }
  return std::move(image.bytes);
}

// Writes `bytes` to a new file `path`; the error names the file and the errno text.
void write_bytes(const std::string& path, const std::vector<char>& bytes, const std::string& op) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CKPT_CHECK(fd >= 0, "cannot create temp file ", path, ": ", std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      ::close(fd);
      RPB_FAIL(op.c_str(), "cannot write temp file ", path, " (", done, " of ", bytes.size(),
               " bytes written): ", std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  CKPT_CHECK(::close(fd) == 0, "cannot close temp file ", path, ": ", std::strerror(errno));
}

// ------------------------------------------------------------- reading ----

/// Where an attribute or link iteration can follow creation order (files rpb writes) or falls back to names.
H5_index_t order_index(hid_t group) {
  Hid gcpl(H5Gget_create_plist(group), H5Pclose);
  unsigned links = 0, attrs = 0;
  if (!gcpl.valid() || H5Pget_link_creation_order(gcpl.get(), &links) < 0 ||
      H5Pget_attr_creation_order(gcpl.get(), &attrs) < 0)
    return H5_INDEX_NAME;
  return (links & H5P_CRT_ORDER_INDEXED) && (attrs & H5P_CRT_ORDER_INDEXED) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
}

std::vector<std::string> link_names(hid_t group, const std::string& where, const std::string& op) {
  H5G_info_t info{};
  must_ok(H5Gget_info(group, &info), op, "cannot list group " + where);
  const H5_index_t index = order_index(group);
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t len = H5Lget_name_by_idx(group, ".", index, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    CKPT_CHECK(len >= 0, "cannot list group ", where, hdf5_reason());
    std::string name(static_cast<std::size_t>(len) + 1, '\0');
    H5Lget_name_by_idx(group, ".", index, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(len));
    names.push_back(std::move(name));
  }
  return names;
}

std::vector<std::string> attr_names(hid_t group, const std::string& where, const std::string& op) {
  std::vector<std::string> names;
  hsize_t idx = 0;
  const herr_t status = H5Aiterate2(
      group, order_index(group), H5_ITER_INC, &idx,
      [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
        static_cast<std::vector<std::string>*>(out)->emplace_back(name);
        return 0;
      },
      &names);
  must_ok(status, op, "cannot list the attributes of " + where);
  return names;
}

Hid open_group(hid_t parent, const std::string& name, const std::string& full, const std::string& op) {
  CKPT_CHECK(H5Lexists(parent, name.c_str(), H5P_DEFAULT) > 0, "group ", full, " is missing");
  return must(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), H5Gclose, op, "cannot open group " + full);
}

Hid open_attr(hid_t obj, const std::string& name, const std::string& where, const std::string& op) {
  CKPT_CHECK(H5Aexists(obj, name.c_str()) > 0, "attribute ", name, " of ", where, " is missing");
  Hid attr =
      must(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose, op, "cannot open attribute " + name + " of " + where);
  Hid space = must(H5Aget_space(attr.get()), H5Sclose, op, "cannot read attribute " + name + " of " + where);
  CKPT_CHECK(H5Sget_simple_extent_npoints(space.get()) == 1, "attribute ", name, " of ", where,
             " holds more than one value");
  return attr;
}

/// Reads a one-value numeric attribute of HDF5 class `cls`, converted to `mem_type`.
template <typename T>
T read_attr(hid_t obj, const std::string& name, H5T_class_t cls, hid_t mem_type, const char* expected,
            const std::string& where, const std::string& op) {
  Hid attr = open_attr(obj, name, where, op);
  Hid type = must(H5Aget_type(attr.get()), H5Tclose, op, "cannot read attribute " + name + " of " + where);
  CKPT_CHECK(H5Tget_class(type.get()) == cls, "attribute ", name, " of ", where, ": expected ", expected, ", found ",
             type_name(type.get()));
  T value{};
  must_ok(H5Aread(attr.get(), mem_type, &value), op, "cannot read attribute " + name + " of " + where);
  return value;
}

int64_t read_int_attr(hid_t obj, const std::string& name, const std::string& where, const std::string& op) {
  return read_attr<int64_t>(obj, name, H5T_INTEGER, H5T_NATIVE_INT64, "an integer", where, op);
}

/// A fixed- or variable-length string attribute (h5py writes variable-length ones).
std::string read_string_attr(hid_t obj, const std::string& name, const std::string& where, const std::string& op) {
  Hid attr = open_attr(obj, name, where, op);
  Hid type = must(H5Aget_type(attr.get()), H5Tclose, op, "cannot read attribute " + name + " of " + where);
  CKPT_CHECK(H5Tget_class(type.get()) == H5T_STRING, "attribute ", name, " of ", where, ": expected a string, found ",
             type_name(type.get()));
  Hid mem = must(H5Tcopy(H5T_C_S1), H5Tclose, op, "cannot create string type");
  H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
  if (H5Tis_variable_str(type.get()) > 0) {
    must_ok(H5Tset_size(mem.get(), H5T_VARIABLE), op, "cannot size string type");
    char* text = nullptr;
    must_ok(H5Aread(attr.get(), mem.get(), &text), op, "cannot read attribute " + name + " of " + where);
    std::string value = text ? text : "";
    H5free_memory(text);
    return value;
  }
  const std::size_t size = H5Tget_size(type.get());
  must_ok(H5Tset_size(mem.get(), size), op, "cannot size string type");
  H5Tset_strpad(mem.get(), H5Tget_strpad(type.get()));
  std::string value(size + 1, '\0');
  must_ok(H5Aread(attr.get(), mem.get(), value.data()), op, "cannot read attribute " + name + " of " + where);
  value.resize(std::strlen(value.c_str()));
  return value;
}

/// The dataset's shape (a scalar dataspace gives []).
Shape dataset_shape(hid_t dset, const std::string& full, const std::string& op) {
  Hid space = must(H5Dget_space(dset), H5Sclose, op, "cannot read the dataspace of " + full);
  const H5S_class_t cls = H5Sget_simple_extent_type(space.get());
  if (cls == H5S_SCALAR) return Shape{};
  CKPT_CHECK(cls == H5S_SIMPLE, "dataset ", full, " has no data (null dataspace)");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  CKPT_CHECK(rank >= 0 && rank <= kMaxDims, "dataset ", full, " has ", rank, " dimensions, rpb supports at most ",
             kMaxDims);
  std::array<hsize_t, kMaxDims> dims{};
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return Shape(dims.begin(), dims.begin() + rank);
}

/// Reads the whole dataset as `mem_type` into `out` (`bytes` long) and checks its CRC-32.
void read_dataset(hid_t dset, const std::string& full, hid_t mem_type, void* out, std::size_t bytes,
                  const std::string& op) {
  if (bytes > 0) {
    const hsize_t stored = H5Dget_storage_size(dset);
    CKPT_CHECK(stored >= bytes, "dataset ", full, " stores ", stored, " bytes, its shape needs ", bytes);
    must_ok(H5Dread(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out), op, "cannot read dataset " + full);
  }
  const auto stored_crc = read_attr<uint32_t>(dset, "crc32", H5T_INTEGER, H5T_NATIVE_UINT32, "uint32", full, op);
  const uint32_t crc = crc32_ieee(out, bytes);
  if (crc != stored_crc) {
    char detail[64];
    std::snprintf(detail, sizeof detail, "stored 0x%08x, computed 0x%08x", stored_crc, crc);
    RPB_FAIL(op.c_str(), "dataset ", full, ": CRC-32 mismatch (", detail, "): the data is damaged");
  }
}

/// Element count of `shape`, refusing counts whose byte size would overflow (a damaged dataspace).
std::size_t checked_numel(const Shape& shape, std::size_t elem, const std::string& full, const std::string& op) {
  std::size_t n = 1;
  for (int64_t d : shape) {
    CKPT_CHECK(d >= 0 && (d == 0 || n <= (SIZE_MAX / elem) / static_cast<std::size_t>(d)), "dataset ", full,
               ": shape ", shape, " is too large");
    n *= static_cast<std::size_t>(d);
  }
  return n;
}

Tensor read_tensor(hid_t dset, const std::string& full, const std::string& op) {
  Hid type = must(H5Dget_type(dset), H5Tclose, op, "cannot read the type of " + full);
  const H5T_class_t cls = H5Tget_class(type.get());
  const std::size_t size = H5Tget_size(type.get());
  DType dtype = DType::f32;
  if (cls == H5T_FLOAT && size == 4) dtype = DType::f32;
  else if (cls == H5T_FLOAT && size == 8) dtype = DType::f64;
  else if (cls == H5T_INTEGER && size == 8 && H5Tget_sign(type.get()) == H5T_SGN_2) dtype = DType::i64;
  else RPB_FAIL(op.c_str(), "dataset ", full, ": dtype ", type_name(type.get()),
                " is not supported (rpb reads float32, float64 and int64)");
  const Shape shape = dataset_shape(dset, full, op);
  const std::size_t n = checked_numel(shape, dtype_size(dtype), full, op);
  Tensor t = Tensor::empty(shape, dtype);
  read_dataset(dset, full, native_type(dtype), t.raw_mutable_data(), n * dtype_size(dtype), op);
  return t;
}

/// Opens a dataset child of `group`, refusing a group of that name.
Hid open_dataset(hid_t group, const std::string& name, const std::string& full, const std::string& op) {
  Hid obj = must(H5Oopen(group, name.c_str(), H5P_DEFAULT), H5Oclose, op, "cannot open " + full);
  CKPT_CHECK(H5Iget_type(obj.get()) == H5I_DATASET, full, " is not a dataset");
  return obj;
}

nn::NamedTensors read_tensor_group(hid_t root, const std::string& group_name, const std::string& op) {
  const std::string where = "/" + group_name;
  Hid group = open_group(root, group_name, where, op);
  nn::NamedTensors out;
  for (const std::string& name : link_names(group.get(), where, op)) {
    const std::string full = where + "/" + name;
    Hid dset = open_dataset(group.get(), name, full, op);
    out.emplace_back(name, read_tensor(dset.get(), full, op));
  }
  return out;
}

/// Depth-first over /optim's subgroups: "exp_avg/blocks.0.w" for /optim/exp_avg/blocks.0.w.
void read_optim_tensors(hid_t group, const std::string& prefix, const std::string& where, int depth,
                        nn::NamedTensors& out, const std::string& op) {
  CKPT_CHECK(depth < 32, "group ", where, " is nested too deeply");
  for (const std::string& name : link_names(group, where, op)) {
    const std::string full = where + "/" + name;
    Hid obj = must(H5Oopen(group, name.c_str(), H5P_DEFAULT), H5Oclose, op, "cannot open " + full);
    const H5I_type_t kind = H5Iget_type(obj.get());
    if (kind == H5I_GROUP) read_optim_tensors(obj.get(), prefix + name + "/", full, depth + 1, out, op);
    else if (kind == H5I_DATASET) out.emplace_back(prefix + name, read_tensor(obj.get(), full, op));
    else RPB_FAIL(op.c_str(), full, " is neither a group nor a dataset");
  }
}

/// A 1-D dataset of `n` values of `cls` (its length is checked against the other columns).
template <typename T>
std::vector<T> read_column(hid_t metrics, const char* name, H5T_class_t cls, hid_t mem_type, std::size_t* n,
                           const std::string& op) {
  const std::string full = std::string("/metrics/") + name;
  CKPT_CHECK(H5Lexists(metrics, name, H5P_DEFAULT) > 0, "dataset ", full, " is missing");
  Hid dset = open_dataset(metrics, name, full, op);
  Hid type = must(H5Dget_type(dset.get()), H5Tclose, op, "cannot read the type of " + full);
  CKPT_CHECK(H5Tget_class(type.get()) == cls, "dataset ", full, ": expected ", type_name(mem_type), ", found ",
             type_name(type.get()));
  const Shape shape = dataset_shape(dset.get(), full, op);
  CKPT_CHECK(shape.size() == 1, "dataset ", full, ": expected a 1-D dataset, found shape ", shape);
  const std::size_t len = checked_numel(shape, sizeof(T), full, op);
  if (*n == SIZE_MAX) *n = len;
  CKPT_CHECK(len == *n, "dataset ", full, ": expected shape [", *n, "] like /metrics/step, found ", shape);
  std::vector<T> values(len);
  read_dataset(dset.get(), full, mem_type, values.data(), len * sizeof(T), op);
  return values;
}

}  // namespace

// ------------------------------------------------------------ public API ----

void save_checkpoint(const std::string& path, const Checkpoint& c) {
  const std::string op = "checkpoint " + path;
  QuietHdf5 quiet;
  replace_file_atomically(path, [&](const std::string& tmp) { write_bytes(tmp, hdf5_image(tmp, c, op), op); }, op);
}

Checkpoint load_checkpoint(const std::string& path) {
  const std::string op = "checkpoint " + path;
  std::error_code ec;
  CKPT_CHECK(fs::exists(path, ec), "no such file");
  CKPT_CHECK(fs::is_regular_file(path, ec), "not a regular file");
  QuietHdf5 quiet;
  Hid fapl = file_access_plist(op);
  const hid_t file_id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  CKPT_CHECK(file_id >= 0, "cannot open as HDF5 (truncated or not an HDF5 file)", hdf5_reason());
  Hid file(file_id, H5Fclose);

  Checkpoint c;
  {
    Hid root = must(H5Gopen2(file.get(), "/", H5P_DEFAULT), H5Gclose, op, "cannot open group /");
    CKPT_CHECK(H5Aexists(root.get(), "format_version") > 0,
               "not an rpb checkpoint (the root attribute format_version is missing)");
    const int64_t format = read_int_attr(root.get(), "format_version", "/", op);
    CKPT_CHECK(format == kCheckpointFormatVersion, "format version ", format, " is not supported (this rpb reads ",
               kCheckpointFormatVersion, ")");
    c.library_version = read_string_attr(root.get(), "rpb_version", "/", op);
    c.config_text = read_string_attr(root.get(), "config", "/", op);
    c.step = read_int_attr(root.get(), "step", "/", op);

    c.params = read_tensor_group(root.get(), "params", op);
    c.buffers = read_tensor_group(root.get(), "buffers", op);

    Hid optim = open_group(root.get(), "optim", "/optim", op);
    c.optim.kind = read_string_attr(optim.get(), "kind", "/optim", op);
    c.optim.step = read_int_attr(optim.get(), "step", "/optim", op);
    c.optim.groups = read_string_attr(optim.get(), "groups", "/optim", op);
    for (const std::string& name : attr_names(optim.get(), "/optim", op)) {
      if (name == "kind" || name == "step" || name == "groups") continue;
      c.optim.scalars.emplace_back(
          name, read_attr<double>(optim.get(), name, H5T_FLOAT, H5T_NATIVE_DOUBLE, "a float", "/optim", op));
    }
    read_optim_tensors(optim.get(), "", "/optim", 0, c.optim.tensors, op);

    Hid rng = open_group(root.get(), "rng", "/rng", op);
    for (const std::string& name : link_names(rng.get(), "/rng", op)) {
      const std::string full = "/rng/" + name;
      Hid dset = open_dataset(rng.get(), name, full, op);
      Hid type = must(H5Dget_type(dset.get()), H5Tclose, op, "cannot read the type of " + full);
      const Shape shape = dataset_shape(dset.get(), full, op);
      CKPT_CHECK(H5Tget_class(type.get()) == H5T_INTEGER && H5Tget_size(type.get()) == 8 &&
                     H5Tget_sign(type.get()) == H5T_SGN_NONE && shape == Shape{4},
                 "dataset ", full, ": expected shape [4] uint64, found ", shape, " ", type_name(type.get()));
      Generator::State state{};
      read_dataset(dset.get(), full, H5T_NATIVE_UINT64, state.data(), sizeof state, op);
      c.rng.emplace_back(name, state);
    }

    Hid state = open_group(root.get(), "state", "/state", op);
    for (const std::string& name : attr_names(state.get(), "/state", op))
      c.counters.emplace_back(name, read_int_attr(state.get(), name, "/state", op));

    Hid metrics = open_group(root.get(), "metrics", "/metrics", op);
    std::size_t n = SIZE_MAX;
    const auto steps = read_column<int64_t>(metrics.get(), "step", H5T_INTEGER, H5T_NATIVE_INT64, &n, op);
    const auto loss = read_column<double>(metrics.get(), "loss", H5T_FLOAT, H5T_NATIVE_DOUBLE, &n, op);
    const auto lr = read_column<double>(metrics.get(), "lr", H5T_FLOAT, H5T_NATIVE_DOUBLE, &n, op);
    const auto grad_norm = read_column<double>(metrics.get(), "grad_norm", H5T_FLOAT, H5T_NATIVE_DOUBLE, &n, op);
    const auto tps = read_column<double>(metrics.get(), "tokens_per_sec", H5T_FLOAT, H5T_NATIVE_DOUBLE, &n, op);
    for (std::size_t i = 0; i < n; ++i) c.metrics.push_back({steps[i], loss[i], lr[i], grad_norm[i], tps[i]});
  }
  must_ok(file.close(), op, "cannot close the file");
  return c;
}

void check_params(const Checkpoint& c, const nn::NamedTensors& expected, const std::string& path) {
  const std::string op = "checkpoint " + path;
  auto describe = [](const Tensor& t) {  // "[2, 3] float32"
    std::ostringstream os;
    os << t.shape() << " " << dtype_name(t.dtype());
    return os.str();
  };
  std::map<std::string, const Tensor*> found;
  for (const auto& [name, t] : c.params) found.emplace(name, &t);
  std::vector<std::string> problems;
  std::map<std::string, bool> wanted;
  for (const auto& [name, t] : expected) {
    wanted[name] = true;
    const auto it = found.find(name);
    if (it == found.end()) {
      problems.push_back("dataset /params/" + name + " is missing (expected shape " + describe(t) + ")");
    } else if (it->second->shape() != t.shape() || it->second->dtype() != t.dtype()) {
      problems.push_back("dataset /params/" + name + ": expected shape " + describe(t) + ", found " +
                         describe(*it->second));
    }
  }
  for (const auto& [name, t] : c.params)
    if (!wanted.count(name))
      problems.push_back("dataset /params/" + name + " is not a parameter of the model (found " + describe(t) + ")");
  if (problems.empty()) return;
  constexpr std::size_t kShown = 20;
  std::string message;
  for (std::size_t i = 0; i < problems.size() && i < kShown; ++i) message += (i ? "; " : "") + problems[i];
  if (problems.size() > kShown) message += "; and " + std::to_string(problems.size() - kShown) + " more";
  RPB_FAIL(op.c_str(), message);
}

void load_parameters(const Checkpoint& c, nn::Module& model, const std::string& path) {
  check_params(c, model.named_parameters(), path);
  NoGradGuard no_grad;
  for (const auto& [name, t] : model.named_parameters())
    for (const auto& [cname, ct] : c.params)
      if (cname == name) t.copy_(ct);
  for (const auto& [name, t] : model.named_buffers(true))
    for (const auto& [cname, ct] : c.buffers)
      if (cname == name) t.copy_(ct);
}

void write_latest(const std::string& run_dir, const std::string& file_name) {
  const fs::path latest = fs::path(run_dir) / "latest";
  const std::string op = "checkpoint pointer " + latest.string();
  CKPT_CHECK(!file_name.empty() && file_name.find('/') == std::string::npos &&
                 file_name.find('\n') == std::string::npos,
             "\"", file_name, "\" is not a bare file name inside ", run_dir);
  write_file_atomically(latest.string(), file_name + "\n");
}

std::string read_latest(const std::string& run_dir) {
  const fs::path latest = fs::path(run_dir) / "latest";
  std::error_code ec;
  if (!fs::exists(latest, ec)) return "";
  std::ifstream in(latest);
  const std::string op = "checkpoint pointer " + latest.string();
  CKPT_CHECK(in.good(), "cannot read the file");
  std::string name;
  std::getline(in, name);
  while (!name.empty() && (name.back() == '\r' || name.back() == ' ' || name.back() == '\t')) name.pop_back();
  if (name.empty()) return "";
  return (fs::path(run_dir) / name).string();
}

}  // namespace rpb

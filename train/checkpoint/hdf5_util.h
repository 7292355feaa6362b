// rpb/train/checkpoint/hdf5_util.h: HDF5 handles, errors, attributes, datasets and in-memory files.
//
// Internal to train/: the glue under train/checkpoint/checkpoint.cpp, not part of rpb's API (users include
// train/checkpoint/checkpoint.h). Every function takes `op`, the prefix of its error messages
// ("checkpoint <file>"), and throws rpb::Error "<op>: <what>" through RPB_CHECK, with HDF5's own
// reason appended where it gives one. Nothing here prints HDF5's error stack as long as a
// QuietHdf5 is alive.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "core/text.h"

// Every check of the checkpoint code throws "checkpoint <file>: ..." through RPB_CHECK; `op` is that
// prefix and must be in scope.
#define CKPT_CHECK(cond, ...) RPB_CHECK(cond, op.c_str(), __VA_ARGS__)

namespace rpb::hdf5 {

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

/// The innermost message of HDF5's current error stack as " (HDF5: truncated file: eof = 96, ...)",
/// or "" when the stack holds none.
std::string hdf5_reason();

/// Wraps a new HDF5 handle, throwing "<op>: <what>" (with HDF5's reason) when creating it failed.
Hid must(hid_t id, Hid::Closer closer, const std::string& op, const std::string& what);

/// Throws "<op>: <what>" (with HDF5's reason) when an HDF5 call returned a negative status.
void must_ok(herr_t status, const std::string& op, const std::string& what);

/// The native HDF5 type of a tensor dtype.
hid_t native_type(DType d);

/// "float32", "int64", "uint64", "string", ... for messages.
std::string type_name(hid_t type);

/// Property lists that make groups remember the creation order of their links and attributes,
/// so that everything loads back in the order it was saved. `cls` is H5P_FILE_CREATE or H5P_GROUP_CREATE.
Hid ordered_plist(hid_t cls, const std::string& op);

/// The file access property list of every file rpb opens or creates: the 1.8+ object header format,
/// a close that fails while any object is still open, and file locking where HDF5 has it.
Hid file_access_plist(const std::string& op);

// ------------------------------------------------------------- writing ----

/// A link name inside one group: non-empty, no '/', not "." (writing, and reading a name from a file).
/// `where` is the group's path.
void check_link_name(const std::string& name, const std::string& where, const std::string& op);

/// Creates the group `name` (full path `full`, for messages) under `parent`, keeping creation order.
Hid create_group(hid_t parent, const std::string& name, const std::string& full, const std::string& op);

/// A scalar dataspace.
Hid scalar_space(const std::string& op);

/// A scalar attribute `name` of HDF5 type `type` on `obj` (whose path `where` messages name).
template <typename T>
void write_attr(hid_t obj, const std::string& name, hid_t type, const T& value, const std::string& where,
                const std::string& op) {
  Hid space = scalar_space(op);
  Hid attr = must(H5Acreate2(obj, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose, op,
                  "cannot create attribute " + name + " on " + where);
  must_ok(H5Awrite(attr.get(), type, &value), op, "cannot write attribute " + name + " on " + where);
}

/// The longest string attribute rpb writes or reads, in bytes (a config is a small TOML file): a reader
/// refuses a longer one before allocating for it (a variable-length one by its descriptor: train/checkpoint/hdf5_vlen.h).
inline constexpr std::size_t kMaxStringAttrBytes = std::size_t{1} << 20;

/// What a string attribute's CRC-32 attribute adds to its name ("config" -> "config.crc32").
inline constexpr const char* kStringCrcSuffix = ".crc32";

/// A variable-length UTF-8 string attribute (h5py reads it as str) and beside it the uint32 attribute
/// `name` + kStringCrcSuffix, the crc32_ieee of its bytes; refuses a value longer than kMaxStringAttrBytes.
void write_string_attr(hid_t obj, const std::string& name, const std::string& value, const std::string& where,
                       const std::string& op);

/// A dataset of `dims` (empty: a scalar dataspace) holding `bytes` bytes at `data`, plus its "crc32"
/// (crc32_ieee of those bytes, a uint32 attribute). Refuses a name `parent` already holds.
void write_dataset(hid_t parent, const std::string& name, const std::string& full, hid_t type, const Shape& dims,
                   const void* data, std::size_t bytes, const std::string& op);

/// Opens (creating when absent) the group at `path` ("exp_avg" or "a/b") under `root`.
Hid ensure_groups(hid_t root, const std::string& root_path, const std::string& path, const std::string& op);

// ----------------------------------------------------- in-memory files ----

/// Creates the HDF5 file `file_path` in memory (HDF5's core driver, no backing store: nothing is
/// written to disk), with creation-ordered groups and file_access_plist's settings, runs fill(file),
/// closes the file and returns its bytes, ready to be written out as they are. `data_bytes` (about
/// how much data fill writes) sizes the memory HDF5 grows the file by. Handles fill opens must be
/// closed when it returns.
std::vector<char> memory_file_image(const std::string& file_path, std::size_t data_bytes,
                                    const std::function<void(hid_t file)>& fill, const std::string& op);

/// Opens `bytes` (a whole HDF5 file, read by the caller) read-only as an in-memory file (the core driver, with
/// file_access_plist's settings), without copying them: `bytes` must stay alive and unchanged until the file is
/// closed. No file on disk is opened, so what is read is exactly the bytes the caller read. Throws "<op>: cannot
/// open as HDF5 (truncated or not an HDF5 file)" with HDF5's reason.
Hid open_file_image(std::string& bytes, const std::string& op);

// ------------------------------------------------------------- reading ----
//
// In messages, `where` and `full` are paths the caller has made printable (rpb::printable() on each
// name read from the file); attribute names are passed through printable() here. Objects are opened
// through SafeReader (train/checkpoint/hdf5_guard.h), which refuses links, layouts and sizes that would take a
// read outside the file.

/// Where an attribute or link iteration can follow creation order (files rpb writes) or falls back to names.
H5_index_t order_index(hid_t group);

/// The names of `group`'s links, in creation order when the group tracks it (else by name); each passes
/// check_link_name, so that no name read from a file is resolved as a path.
std::vector<std::string> link_names(hid_t group, const std::string& where, const std::string& op);

/// The names of `group`'s attributes, in creation order when the group tracks it (else by name).
std::vector<std::string> attr_names(hid_t group, const std::string& where, const std::string& op);

/// Opens the attribute `name` of `obj`, which must exist and hold exactly one value.
Hid open_attr(hid_t obj, const std::string& name, const std::string& where, const std::string& op);

/// Reads a one-value numeric attribute of HDF5 class `cls`, converted to `mem_type`; `expected` ("an
/// integer") names the class in messages.
template <typename T>
T read_attr(hid_t obj, const std::string& name, H5T_class_t cls, hid_t mem_type, const char* expected,
            const std::string& where, const std::string& op) {
  Hid attr = open_attr(obj, name, where, op);
  const std::string what = "attribute " + printable(name) + " of " + where;
  Hid type = must(H5Aget_type(attr.get()), H5Tclose, op, "cannot read " + what);
  CKPT_CHECK(H5Tget_class(type.get()) == cls, what, ": expected ", expected, ", found ", type_name(type.get()));
  T value{};
  must_ok(H5Aread(attr.get(), mem_type, &value), op, "cannot read " + what);
  return value;
}

/// A one-value integer attribute, as int64.
int64_t read_int_attr(hid_t obj, const std::string& name, const std::string& where, const std::string& op);

/// A fixed- or variable-length string attribute (h5py writes variable-length ones) of at most
/// kMaxStringAttrBytes bytes, checked against its CRC-32 attribute when it has one.
std::string read_string_attr(hid_t obj, const std::string& name, const std::string& where, const std::string& op);

/// The dataset's shape (a scalar dataspace gives []).
Shape dataset_shape(hid_t dset, const std::string& full, const std::string& op);

/// Reads the whole dataset as `mem_type` into `out` (`bytes` long) and checks its CRC-32. `bytes` comes
/// from SafeReader::extent (hdf5_guard.h), which checked that the data is all in the file.
void read_dataset(hid_t dset, const std::string& full, hid_t mem_type, void* out, std::size_t bytes,
                  const std::string& op);

/// Element count of `shape`, refusing counts whose byte size would overflow (a damaged dataspace).
std::size_t checked_numel(const Shape& shape, std::size_t elem, const std::string& full, const std::string& op);

}  // namespace rpb::hdf5

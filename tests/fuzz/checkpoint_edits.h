// tests/fuzz/checkpoint_edits.h: the hostile edits of fuzz_checkpoint's link/storage mode.
//
// The fuzz input chooses edits of a valid checkpoint (opened read-write with the HDF5 C API), each
// aimed at one object of it:
//   edit := target kind args...
//   target   1 byte, an index into `objects` (its datasets and groups)
//   kind     1 byte, mod 10:
//     0 a soft link to another object (args: 1 byte, which)
//     1 an external link (args: 1 byte, which file: the template, a FIFO, a missing file, the file itself)
//     2 a hard link to another object: a shared object, or a cycle when it is an ancestor (args: 1 byte)
//     3-7 a new dataset, contiguous / compact / chunked / external storage / virtual (args: see new_dataset)
//     8 a string attribute of / or /optim (config, kind, groups, rpb_version; fixed or variable length)
//     9 an int64 attribute of / or /optim (step) or a /state counter
// HDF5 refusing an edit (a missing parent, an impossible layout) is fine: the next edit follows.
// Nothing here writes outside the input file: external storage is declared, never written.
#pragma once

#include <hdf5.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "train/checkpoint/crc32.h"

namespace fuzz {

/// The input bytes, consumed front to back; zeros once they run out.
struct Bytes {
  const uint8_t* p;
  std::size_t n;
  uint8_t next() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  bool empty() const { return n == 0; }
};

/// Closes an HDF5 handle when it goes.
struct Id {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Id() {
    if (id >= 0) close(id);
  }
};

/// The files an edit may point outside the input file at.
struct Targets {
  std::string template_file;  // a valid checkpoint
  std::string fifo;           // opening it blocks until a writer comes
  std::string missing;        // no such file
  std::string self;           // the input file itself
};

/// The objects of the template checkpoint an edit may aim at (full paths), datasets and groups.
using Objects = std::vector<std::string>;

/// A declared extent: small (0-127) or a power of two up to 2^62.
inline hsize_t extent_of(uint8_t b) { return b < 128 ? b : hsize_t{1} << ((b - 128) % 63); }

/// The file type of a new dataset.
inline hid_t type_of(uint8_t b) {
  const hid_t types[] = {H5T_IEEE_F32LE, H5T_IEEE_F64LE, H5T_STD_I64LE, H5T_STD_U64LE,
                         H5T_STD_I8LE,   H5T_IEEE_F32BE, H5T_STD_I32LE, H5T_C_S1};
  return types[b % 8];
}

/// The creation property list of a new dataset of `dims` with `storage` (0 contiguous, 1 compact,
/// 2 chunked, 3 external, 4 virtual); args: 1 flags byte (bit 0 early allocation, bit 1 deflate,
/// bits 2-3 the external or virtual source).
inline hid_t dcpl_for(int storage, const std::vector<hsize_t>& dims, hsize_t bytes, hid_t space, uint8_t flags,
                      const Targets& t, const std::string& source) {
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  const std::string files[4] = {t.template_file, t.fifo, "/dev/zero", t.missing};
  const std::string& file = files[(flags >> 2) % 4];
  if ((flags & 1) && bytes <= (1u << 20)) H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
  if (storage == 1) H5Pset_layout(dcpl, H5D_COMPACT);
  if (storage == 2 && !dims.empty()) {
    std::vector<hsize_t> chunk(dims.size());
    for (std::size_t i = 0; i < dims.size(); ++i) chunk[i] = std::clamp<hsize_t>(dims[i], 1, 64);
    H5Pset_chunk(dcpl, static_cast<int>(dims.size()), chunk.data());
    if (flags & 2) H5Pset_deflate(dcpl, 1);
  }
  if (storage == 3) H5Pset_external(dcpl, file.c_str(), 0, std::max<hsize_t>(bytes, 1));
  if (storage == 4) H5Pset_virtual(dcpl, space, file == "/dev/zero" ? "." : file.c_str(), source.c_str(), space);
  return dcpl;
}

/// Replaces `target` by a new dataset; args: type, rank (0-3), an extent byte per dimension, the
/// dcpl_for flags, data flags (bit 0 write data, when at most 64 KiB; bit 1 a wrong CRC).
inline void new_dataset(hid_t file, const std::string& target, int storage, Bytes& in, const Targets& t,
                        const Objects& objects) {
  const hid_t type = type_of(in.next());
  std::vector<hsize_t> dims(in.next() % 4);
  hsize_t numel = 1;  // saturates at 2^62: "too large to hold"
  for (hsize_t& d : dims) {
    d = extent_of(in.next());
    numel = d != 0 && numel > (hsize_t{1} << 62) / d ? hsize_t{1} << 62 : numel * d;
  }
  const hsize_t bytes = numel >= (hsize_t{1} << 40) ? hsize_t{1} << 62 : numel * H5Tget_size(type);
  const uint8_t flags = in.next(), data_flags = in.next();
  const std::string& source = objects[in.next() % objects.size()];
  if (H5Ldelete(file, target.c_str(), H5P_DEFAULT) < 0) return;
  Id space{dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
           H5Sclose};
  Id dcpl{dcpl_for(storage, dims, bytes, space.id, flags, t, source), H5Pclose};
  Id dset{H5Dcreate2(file, target.c_str(), type, space.id, H5P_DEFAULT, dcpl.id, H5P_DEFAULT), H5Dclose};
  if (dset.id < 0) return;
  std::vector<uint8_t> data;
  if ((data_flags & 1) && storage < 3 && bytes <= (1u << 16)) {
    data.resize(bytes);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = in.empty() ? static_cast<uint8_t>(i) : in.next();
    H5Dwrite(dset.id, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
  }
  uint32_t crc = rpb::crc32_ieee(data.data(), data.size()) ^ ((data_flags & 2) ? 1u : 0u);
  Id scalar{H5Screate(H5S_SCALAR), H5Sclose};
  Id attr{H5Acreate2(dset.id, "crc32", H5T_NATIVE_UINT32, scalar.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  H5Awrite(attr.id, H5T_NATIVE_UINT32, &crc);
}

/// Replaces a string attribute; args: which (object and name), variable length or not, a length byte,
/// then that many bytes of text (a long one repeats them).
inline void string_attr(hid_t file, Bytes& in) {
  const char* names[] = {"config", "rpb_version", "kind", "groups"};
  const uint8_t which = in.next();
  const char* name = names[which % 4];
  const bool variable = in.next() & 1;
  const uint8_t len = in.next();
  std::string text;
  for (int i = 0; i < len; ++i) text += static_cast<char>(in.next());
  if (which & 0x80) text = std::string(std::size_t{1} << 20, 'x') + text;  // just over the 1 MiB rpb reads
  Id obj{H5Oopen(file, which % 4 < 2 ? "/" : "/optim", H5P_DEFAULT), H5Oclose};
  if (obj.id < 0) return;
  H5Adelete(obj.id, name);
  Id type{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(type.id, variable ? H5T_VARIABLE : text.size() + 1);
  Id space{H5Screate(H5S_SCALAR), H5Sclose};
  Id attr{H5Acreate2(obj.id, name, type.id, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  const char* c = text.c_str();
  H5Awrite(attr.id, type.id, variable ? static_cast<const void*>(&c) : c);
}

/// Writes an int64 attribute; args: which (/ step, /optim step, a new /state counter), then 8 bytes.
inline void int_attr(hid_t file, Bytes& in) {
  const uint8_t which = in.next() % 3;
  int64_t value = 0;
  for (int i = 0; i < 8; ++i) value = static_cast<int64_t>(static_cast<uint64_t>(value) << 8 | in.next());
  const char* paths[] = {"/", "/optim", "/state"};
  const char* name = which == 2 ? "fuzz\x1b[2J" : "step";
  Id obj{H5Oopen(file, paths[which], H5P_DEFAULT), H5Oclose};
  if (obj.id < 0) return;
  H5Adelete(obj.id, name);
  Id space{H5Screate(H5S_SCALAR), H5Sclose};
  Id attr{H5Acreate2(obj.id, name, H5T_STD_I64LE, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  H5Awrite(attr.id, H5T_NATIVE_INT64, &value);
}

/// Applies one edit (see the top of this file).
inline void apply_edit(hid_t file, Bytes& in, const Targets& t, const Objects& objects) {
  const std::string& target = objects[in.next() % objects.size()];
  const int kind = in.next() % 10;
  if (kind == 8) return string_attr(file, in);
  if (kind == 9) return int_attr(file, in);
  if (kind >= 3) return new_dataset(file, target, kind - 3, in, t, objects);
  const uint8_t arg = in.next();
  const std::string& other = objects[arg % objects.size()];
  if (H5Ldelete(file, target.c_str(), H5P_DEFAULT) < 0) return;
  if (kind == 0) H5Lcreate_soft(other.c_str(), file, target.c_str(), H5P_DEFAULT, H5P_DEFAULT);
  if (kind == 2) H5Lcreate_hard(file, other.c_str(), file, target.c_str(), H5P_DEFAULT, H5P_DEFAULT);
  if (kind == 1) {
    const std::string files[4] = {t.template_file, t.fifo, t.missing, t.self};
    H5Lcreate_external(files[(arg >> 4) % 4].c_str(), other.c_str(), file, target.c_str(), H5P_DEFAULT, H5P_DEFAULT);
  }
}

}  // namespace fuzz

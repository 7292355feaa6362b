// rpb/train/checkpoint/hdf5_util.cpp: HDF5 glue of the checkpoint code (see hdf5_util.h).
#include "train/checkpoint/hdf5_util.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/text.h"
#include "train/checkpoint/crc32.h"
#include "train/checkpoint/hdf5_vlen.h"

namespace rpb::hdf5 {

// HDF5 1.10 can keep internal state of a file after an object header fails its checksum (every handle
// rpb opened is closed); its shutdown at exit then loops and prints "HDF5: infinite loop closing
// library" on stderr. rpb never has HDF5 write a file (saves go through an in-memory image, see
// memory_file_image; loads are read-only), so that shutdown has nothing to flush: it is skipped.
// This file is linked into every binary that reads or writes a checkpoint (checkpoint.cpp calls it).
[[maybe_unused]] static const herr_t kNoHdf5Shutdown = H5dont_atexit();

// ------------------------------------------------------- HDF5 plumbing ----

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

std::string type_name(hid_t type) {
  const std::string bits = std::to_string(8 * H5Tget_size(type));
  switch (H5Tget_class(type)) {
    case H5T_FLOAT: return "float" + bits;
    case H5T_INTEGER: return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + bits;
    case H5T_STRING: return "string";
    default: return "HDF5 type class " + std::to_string(static_cast<int>(H5Tget_class(type)));
  }
}

Hid ordered_plist(hid_t cls, const std::string& op) {
  Hid p = must(H5Pcreate(cls), H5Pclose, op, "cannot create a property list");
  const unsigned flags = H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED;
  must_ok(H5Pset_link_creation_order(p.get(), flags), op, "cannot set link creation order");
  must_ok(H5Pset_attr_creation_order(p.get(), flags), op, "cannot set attribute creation order");
  // Attributes stay in the object header (HDF5 moves more than 8 to dense storage), where the reader checks a
  // variable-length string's length before HDF5 reads it (train/checkpoint/hdf5_vlen.h).
  must_ok(H5Pset_attr_phase_change(p.get(), 1024, 1024), op, "cannot keep attributes compact");
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

void check_link_name(const std::string& name, const std::string& where, const std::string& op) {
  CKPT_CHECK(!name.empty() && name.find('/') == std::string::npos && name != ".", "invalid name \"", printable(name),
             "\" under ", where, " (names must be non-empty, without '/', and not \".\")");
}

Hid create_group(hid_t parent, const std::string& name, const std::string& full, const std::string& op) {
  Hid gcpl = ordered_plist(H5P_GROUP_CREATE, op);
  return must(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose, op,
              "cannot create group " + full);
}

Hid scalar_space(const std::string& op) { return must(H5Screate(H5S_SCALAR), H5Sclose, op, "cannot create dataspace"); }

void write_string_attr(hid_t obj, const std::string& name, const std::string& value, const std::string& where,
                       const std::string& op) {
  CKPT_CHECK(value.size() <= kMaxStringAttrBytes, "attribute ", name, " of ", where, " is ", value.size(),
             " bytes long, more than the ", kMaxStringAttrBytes, " a checkpoint holds");
  Hid type = must(H5Tcopy(H5T_C_S1), H5Tclose, op, "cannot create string type");
  must_ok(H5Tset_size(type.get(), H5T_VARIABLE), op, "cannot size string type");
  must_ok(H5Tset_cset(type.get(), H5T_CSET_UTF8), op, "cannot set string charset");
  Hid space = scalar_space(op);
  Hid attr = must(H5Acreate2(obj, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose, op,
                  "cannot create attribute " + name + " on " + where);
  const char* text = value.c_str();
  must_ok(H5Awrite(attr.get(), type.get(), &text), op, "cannot write attribute " + name + " on " + where);
  // The text lives in the global heap, which HDF5 does not checksum (the object header is).
  write_attr(obj, name + kStringCrcSuffix, H5T_NATIVE_UINT32, crc32_ieee(value.data(), value.size()), where, op);
}

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

// ----------------------------------------------------- in-memory files ----

namespace {

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

// Closing gives the free space at the end back: the superblock (version 2 or 3, 8-byte addresses, as
// the 1.8+ format bounds write it) then records a smaller end of file than `keep`, and the bytes past
// it are never read. Dropping them makes every byte count: a file cut short by one byte fails to open.
void trim_to_superblock_eof(std::vector<char>& b) {
  if (b.size() >= 48 && std::memcmp(b.data(), "\x89HDF\r\n\x1a\n", 8) == 0 && (b[8] == 2 || b[8] == 3) && b[9] == 8) {
    uint64_t eof = 0;
    for (int i = 7; i >= 0; --i) eof = eof << 8 | static_cast<unsigned char>(b[28 + i]);  // little-endian
    if (eof >= 48 && eof < b.size()) b.resize(eof);
  }
}

}  // namespace

// The file lives in memory (the core driver, no backing store) and the caller writes its bytes
// itself. HDF5 never writes to disk here: when its own write fails (a full disk, EFBIG), H5Fclose
// fails too and leaves the file open inside the library (holding the deleted temp file's space),
// which then crashes at exit (H5F__close_cb from H5_term_library, HDF5 1.10). The bytes are taken at
// close rather than with H5Fget_file_image, which clears the superblock's status flags without
// updating its checksum.
std::vector<char> memory_file_image(const std::string& file_path, std::size_t data_bytes,
                                    const std::function<void(hid_t file)>& fill, const std::string& op) {
  Hid fcpl = ordered_plist(H5P_FILE_CREATE, op);
  Hid fapl = file_access_plist(op);
  must_ok(H5Pset_fapl_core(fapl.get(), data_bytes + (std::size_t{1} << 16), /*backing_store=*/0), op,
          "cannot set the in-memory file driver");
  MemoryImage image;
  H5FD_file_image_callbacks_t callbacks = {image_malloc, image_memcpy,     image_realloc, image_free,
                                           image_udata_copy, image_udata_free, &image};
  must_ok(H5Pset_file_image_callbacks(fapl.get(), &callbacks), op, "cannot set the file image callbacks");
  Hid file = must(H5Fcreate(file_path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()), H5Fclose, op,
                  "cannot create the in-memory file for " + file_path);
  fill(file.get());
  must_ok(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), op, "cannot flush the in-memory file");
  const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);  // the end of the file (its EOA)
  CKPT_CHECK(size > 0, "cannot get the size of the in-memory file", hdf5_reason());
  image.keep = static_cast<std::size_t>(size);
  must_ok(file.close(), op, "cannot close the in-memory file");
  CKPT_CHECK(image.bytes.size() == image.keep, "the in-memory file's bytes were not handed over at close");
  trim_to_superblock_eof(image.bytes);
  return std::move(image.bytes);
}

namespace {

// A read-only file image that HDF5 uses in place: every "allocation" of the image's size is the caller's buffer,
// every copy into it a no-op and every free nothing (as H5LTopen_file_image's DONT_COPY and DONT_RELEASE do), so
// the bytes are held once, however often HDF5 copies the property list that carries them. The user data is the
// caller's std::string, which outlives the file.
void* shared_malloc(std::size_t n, H5FD_file_image_op_t, void* u) {
  auto* s = static_cast<std::string*>(u);
  return n == s->size() ? s->data() : nullptr;
}
void* shared_memcpy(void* dst, const void* src, std::size_t n, H5FD_file_image_op_t, void*) {
  return dst == src ? dst : std::memcpy(dst, src, n);
}
void* shared_realloc(void*, std::size_t, H5FD_file_image_op_t, void*) { return nullptr; }  // read-only
herr_t shared_free(void*, H5FD_file_image_op_t, void*) { return 0; }

// The name HDF5 gives the in-memory file. The core driver refuses to open an image under the name of a file that
// exists (and opens that name to find out): this one can never exist (/dev/null is no folder).
constexpr const char* kImageName = "/dev/null/rpb-file-image";

}  // namespace

Hid open_file_image(std::string& bytes, const std::string& op) {
  CKPT_CHECK(!bytes.empty(), "cannot open as HDF5 (truncated or not an HDF5 file): the file is empty");
  Hid fapl = file_access_plist(op);
  must_ok(H5Pset_fapl_core(fapl.get(), std::size_t{1} << 16, /*backing_store=*/0), op,
          "cannot set the in-memory file driver");
  H5FD_file_image_callbacks_t callbacks = {shared_malloc, shared_memcpy, shared_realloc, shared_free,
                                           image_udata_copy, image_udata_free, &bytes};
  must_ok(H5Pset_file_image_callbacks(fapl.get(), &callbacks), op, "cannot set the file image callbacks");
  must_ok(H5Pset_file_image(fapl.get(), bytes.data(), bytes.size()), op, "cannot set the file image");
  const hid_t file = H5Fopen(kImageName, H5F_ACC_RDONLY, fapl.get());
  CKPT_CHECK(file >= 0, "cannot open as HDF5 (truncated or not an HDF5 file)", hdf5_reason());
  return Hid(file, H5Fclose);
}

// ------------------------------------------------------------- reading ----

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
    check_link_name(name, where, op);  // "a/x" would be resolved as a path, through whatever link "a" is
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

Hid open_attr(hid_t obj, const std::string& name, const std::string& where, const std::string& op) {
  const std::string shown = printable(name);
  CKPT_CHECK(H5Aexists(obj, name.c_str()) > 0, "attribute ", shown, " of ", where, " is missing");
  Hid attr =
      must(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose, op, "cannot open attribute " + shown + " of " + where);
  Hid space = must(H5Aget_space(attr.get()), H5Sclose, op, "cannot read attribute " + shown + " of " + where);
  CKPT_CHECK(H5Sget_simple_extent_npoints(space.get()) == 1, "attribute ", shown, " of ", where,
             " holds more than one value");
  return attr;
}

int64_t read_int_attr(hid_t obj, const std::string& name, const std::string& where, const std::string& op) {
  return read_attr<int64_t>(obj, name, H5T_INTEGER, H5T_NATIVE_INT64, "an integer", where, op);
}

std::string read_string_attr(hid_t obj, const std::string& name, const std::string& where, const std::string& op) {
  Hid attr = open_attr(obj, name, where, op);
  const std::string what = "attribute " + printable(name) + " of " + where;
  Hid type = must(H5Aget_type(attr.get()), H5Tclose, op, "cannot read " + what);
  CKPT_CHECK(H5Tget_class(type.get()) == H5T_STRING, what, ": expected a string, found ", type_name(type.get()));
  const auto too_long = [&](std::size_t bytes) {
    RPB_FAIL(op.c_str(), what, " is ", bytes, " bytes long, more than the ", kMaxStringAttrBytes, " rpb reads");
  };
  Hid mem = must(H5Tcopy(H5T_C_S1), H5Tclose, op, "cannot create string type");
  H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
  std::string value;
  if (H5Tis_variable_str(type.get()) > 0) {
    // HDF5 sizes (and zeroes) its buffers by the length the descriptor claims: checked in the file first.
    if (const std::size_t bytes = vlen_string_length(obj, name, what, op); bytes > kMaxStringAttrBytes) too_long(bytes);
    must_ok(H5Tset_size(mem.get(), H5T_VARIABLE), op, "cannot size string type");
    char* text = nullptr;
    must_ok(H5Aread(attr.get(), mem.get(), &text), op, "cannot read " + what);
    value = text ? text : "";
    H5free_memory(text);
  } else {
    // The declared size, checked before allocating; one byte more holds the NUL of a full-length value.
    const std::size_t size = H5Tget_size(type.get());
    if (size > kMaxStringAttrBytes + 1) too_long(size);
    must_ok(H5Tset_size(mem.get(), size), op, "cannot size string type");
    H5Tset_strpad(mem.get(), H5Tget_strpad(type.get()));
    value.assign(size + 1, '\0');
    must_ok(H5Aread(attr.get(), mem.get(), value.data()), op, "cannot read " + what);
    value.resize(std::strlen(value.c_str()));
  }
  if (value.size() > kMaxStringAttrBytes) too_long(value.size());
  const std::string crc_name = name + kStringCrcSuffix;
  if (H5Aexists(obj, crc_name.c_str()) > 0) {  // rpb writes one; a string h5py wrote has none
    const auto stored = read_attr<uint32_t>(obj, crc_name, H5T_INTEGER, H5T_NATIVE_UINT32, "an integer", where, op);
    const uint32_t computed = crc32_ieee(value.data(), value.size());
    CKPT_CHECK(stored == computed, what, ": CRC-32 mismatch (stored ", stored, ", computed ", computed,
               "): the file is damaged, or the string was changed without its ", crc_name, " attribute");
  }
  return value;
}

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

void read_dataset(hid_t dset, const std::string& full, hid_t mem_type, void* out, std::size_t bytes,
                  const std::string& op) {
  if (bytes > 0)
    must_ok(H5Dread(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out), op, "cannot read dataset " + full);
  const auto stored_crc = read_attr<uint32_t>(dset, "crc32", H5T_INTEGER, H5T_NATIVE_UINT32, "uint32", full, op);
  const uint32_t crc = crc32_ieee(out, bytes);
  if (crc != stored_crc) {
    char detail[64];
    std::snprintf(detail, sizeof detail, "stored 0x%08x, computed 0x%08x", stored_crc, crc);
    RPB_FAIL(op.c_str(), "dataset ", full, ": CRC-32 mismatch (", detail, "): the data is damaged");
  }
}

std::size_t checked_numel(const Shape& shape, std::size_t elem, const std::string& full, const std::string& op) {
  std::size_t n = 1;
  for (int64_t d : shape) {
    CKPT_CHECK(d >= 0 && (d == 0 || n <= (SIZE_MAX / elem) / static_cast<std::size_t>(d)), "dataset ", full,
               ": shape ", shape, " is too large");
    n *= static_cast<std::size_t>(d);
  }
  return n;
}

}  // namespace rpb::hdf5

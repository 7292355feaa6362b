// rpb/train/checkpoint/hdf5_guard.cpp: the checks that keep reading an untrusted HDF5 file inside it (see hdf5_guard.h).
#include "train/checkpoint/hdf5_guard.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/text.h"

namespace rpb::hdf5 {

namespace {

// A link value (a soft link's path, an external link's file and path) longer than this is not read:
// the message says how long it is instead.
constexpr std::size_t kMaxLinkValue = 4096;

// The target of a soft or external link, printable: "/y" or "other.h5:/y".
std::string link_target(hid_t parent, const std::string& name, const H5L_info_t& info) {
  const std::size_t size = info.u.val_size;
  if (size > kMaxLinkValue) return "a target of " + std::to_string(size) + " bytes";
  std::vector<char> value(size + 1, '\0');  // the extra NUL ends a value that lacks one
  if (H5Lget_val(parent, name.c_str(), value.data(), size, H5P_DEFAULT) < 0) return "an unreadable target";
  if (info.type == H5L_TYPE_SOFT) return printable(value.data());
  unsigned flags = 0;
  const char* file = nullptr;
  const char* path = nullptr;
  if (H5Lunpack_elink_val(value.data(), size, &flags, &file, &path) < 0 || !file || !path)
    return "an unreadable target";
  return printable(file) + ":" + printable(path);
}

// The external files a dataset's raw data is kept in, printable: "secret.bin" or "a.bin and 2 more".
std::string external_files(hid_t dcpl, int count) {
  char name[256] = {};
  off_t offset = 0;
  hsize_t size = 0;
  std::string first = "an unreadable name";
  if (H5Pget_external(dcpl, 0, sizeof name - 1, name, &offset, &size) >= 0) first = printable(name);
  return count == 1 ? first : first + " and " + std::to_string(count - 1) + " more";
}

// The filters of a dataset's pipeline, printable and comma-separated ("deflate, shuffle"), or "".
std::string filter_names(hid_t dcpl, const std::string& full, const std::string& op) {
  const int n = H5Pget_nfilters(dcpl);
  CKPT_CHECK(n >= 0, "cannot read the filters of dataset ", full, hdf5_reason());
  std::string names;
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t nvalues = 0;
    char name[256] = {};
    const H5Z_filter_t id =
        H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &nvalues, nullptr, sizeof name - 1, name, &config);
    names += (i ? ", " : "") + (name[0] ? printable(name) : "filter " + std::to_string(id));
  }
  return names;
}

}  // namespace

void check_hard_link(hid_t parent, const std::string& name, const std::string& full, const std::string& op) {
  H5L_info_t info{};
  must_ok(H5Lget_info(parent, name.c_str(), &info, H5P_DEFAULT), op, "cannot read the link " + full);
  switch (info.type) {
    case H5L_TYPE_HARD:
      return;
    case H5L_TYPE_SOFT:
      RPB_FAIL(op.c_str(), full, " is a soft link (to ", link_target(parent, name, info),
               "); rpb follows only hard links");
    case H5L_TYPE_EXTERNAL:
      RPB_FAIL(op.c_str(), full, " is an external link (to ", link_target(parent, name, info),
               "); rpb reads only objects inside the file");
    default:
      RPB_FAIL(op.c_str(), full, " is a user-defined link (type ", static_cast<int>(info.type),
               "); rpb follows only hard links");
  }
}

void check_dataset_layout(hid_t dset, const std::string& full, const std::string& op) {
  Hid dcpl = must(H5Dget_create_plist(dset), H5Pclose, op, "cannot read the storage properties of dataset " + full);
  const H5D_layout_t layout = H5Pget_layout(dcpl.get());
  CKPT_CHECK(layout != H5D_VIRTUAL, "dataset ", full,
             " is a virtual dataset (its data lives in other datasets or files); rpb reads only data stored "
             "inside the file");
  const int external = H5Pget_external_count(dcpl.get());
  CKPT_CHECK(external >= 0, "cannot read the storage properties of dataset ", full, hdf5_reason());
  CKPT_CHECK(external == 0, "dataset ", full, " keeps its data in an external file (",
             external_files(dcpl.get(), external), "); rpb reads only data stored inside the file");
  const std::string filters = filter_names(dcpl.get(), full, op);
  if (layout == H5D_CHUNKED || !filters.empty()) {
    const std::string what = layout != H5D_CHUNKED ? "filtered (" + filters + ")"
                             : filters.empty()     ? "chunked"
                                                   : "chunked and filtered (" + filters + ")";
    RPB_FAIL(op.c_str(), "dataset ", full, " is ", what,
             "; rpb reads contiguous and compact datasets (what rpb and h5py write by default): re-save it "
             "without chunking or compression");
  }
  CKPT_CHECK(layout == H5D_CONTIGUOUS || layout == H5D_COMPACT, "dataset ", full, " has an unknown storage layout (",
             static_cast<int>(layout), ")");
}

SafeReader::SafeReader(hid_t file, std::string op) : file_(file), op_(std::move(op)) {
  must_ok(H5Fget_filesize(file_, &file_size_), op_, "cannot get the size of the file");
}

Hid SafeReader::open_root() {
  Hid root = must(H5Gopen2(file_, "/", H5P_DEFAULT), H5Gclose, op_, "cannot open group /");
  visit(root.get(), "/");
  return root;
}

Hid SafeReader::open_object(hid_t parent, const std::string& name, const std::string& full) {
  check_hard_link(parent, name, full, op_);
  Hid obj = must(H5Oopen(parent, name.c_str(), H5P_DEFAULT), H5Oclose, op_, "cannot open " + full);
  visit(obj.get(), full);
  if (H5Iget_type(obj.get()) == H5I_DATASET) check_dataset_layout(obj.get(), full, op_);
  return obj;
}

Hid SafeReader::open_group(hid_t parent, const std::string& name, const std::string& full) {
  const std::string& op = op_;
  CKPT_CHECK(H5Lexists(parent, name.c_str(), H5P_DEFAULT) > 0, "group ", full, " is missing");
  Hid group = open_object(parent, name, full);
  CKPT_CHECK(H5Iget_type(group.get()) == H5I_GROUP, full, " is not a group");
  return group;
}

Hid SafeReader::open_dataset(hid_t parent, const std::string& name, const std::string& full) {
  const std::string& op = op_;
  Hid dset = open_object(parent, name, full);
  CKPT_CHECK(H5Iget_type(dset.get()) == H5I_DATASET, full, " is not a dataset");
  return dset;
}

DatasetExtent SafeReader::extent(hid_t dset, std::size_t mem_elem, const std::string& full) const {
  const std::string& op = op_;
  Hid type = must(H5Dget_type(dset), H5Tclose, op, "cannot read the type of " + full);
  const std::size_t file_elem = H5Tget_size(type.get());
  CKPT_CHECK(file_elem > 0, "cannot read the type of ", full, hdf5_reason());
  DatasetExtent e;
  e.shape = dataset_shape(dset, full, op);
  e.numel = checked_numel(e.shape, std::max(file_elem, mem_elem), full, op);
  const std::size_t need = e.numel * file_elem;
  const hsize_t stored = H5Dget_storage_size(dset);
  CKPT_CHECK(stored == need, "dataset ", full, " stores ", stored, " bytes, its shape ", e.shape, " ",
             type_name(type.get()), " needs ", need,
             stored == 0 ? " (its data was never written: it would read as fill values)" : "");
  const haddr_t offset = H5Dget_offset(dset);  // HADDR_UNDEF for compact storage and for no storage
  CKPT_CHECK(offset == HADDR_UNDEF || (offset <= file_size_ && need <= file_size_ - offset), "dataset ", full, ": its ",
             need, " bytes at offset ", offset, " lie past the end of the file (", file_size_, " bytes)");
  return e;
}

void SafeReader::visit(hid_t obj, const std::string& full) {
  H5O_info_t info{};
  must_ok(H5Oget_info2(obj, &info, H5O_INFO_BASIC), op_, "cannot read the object header of " + full);
  const auto [first, added] = seen_.emplace(info.addr, full);
  const std::string& op = op_;
  CKPT_CHECK(added, full, " is the same object as ", first->second,
             " (hard links that make a cycle or share an object); rpb reads each object once");
}

}  // namespace rpb::hdf5

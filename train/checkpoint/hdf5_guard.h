// rpb/train/checkpoint/hdf5_guard.h: opening the objects of an HDF5 file that may be hostile (issue 13).
//
// Internal to train/, beside train/checkpoint/hdf5_util.h. People share checkpoints, so a checkpoint is untrusted
// input: reading one must have no side effects, follow nothing outside the file, never hang, and check
// every size before allocating. A SafeReader opens the objects of one file so that:
//  - only hard links are followed: soft, external and user-defined links are refused by name, before
//    anything behind them is opened (an external link to a FIFO would block in open(2));
//  - every object is opened at most once: hard links that make a cycle, or that share a group or a
//    dataset, are refused, so no nesting makes the reader loop or take exponential time;
//  - a dataset's data lies inside the file: virtual datasets, external raw storage, chunked and filtered
//    layouts are refused when the dataset is opened (before its dataspace is read, which for a virtual
//    dataset opens its sources), and its stored bytes must equal what its shape declares and lie within
//    the file's size before the caller allocates a buffer for them.
// Messages name the object; names from the file appear in them through rpb::printable() (callers pass
// `full` paths built that way).
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <map>
#include <string>

#include "core/shape.h"
#include "train/checkpoint/hdf5_util.h"

namespace rpb::hdf5 {

/// Throws "<op>: <full> is a soft link (to /y); rpb follows only hard links" (likewise "an external
/// link (to other.h5:/y); rpb reads only objects inside the file" and "a user-defined link (type 70)")
/// unless the link `name` of `parent` is a hard link. Nothing behind the link is opened.
void check_hard_link(hid_t parent, const std::string& name, const std::string& full, const std::string& op);

/// Throws unless dataset `dset` keeps its data inside the file in a layout rpb reads: contiguous or
/// compact, without filters, without external raw storage, not virtual. Reads only its creation
/// property list.
void check_dataset_layout(hid_t dset, const std::string& full, const std::string& op);

/// The shape of a dataset and its element count, checked against the bytes the file stores for it.
struct DatasetExtent {
  Shape shape;
  std::size_t numel = 0;
};

/// Opens the objects of one file, read-only, under the rules above.
class SafeReader {
 public:
  /// `file` is an open file; `op` ("checkpoint <path>") prefixes every message.
  SafeReader(hid_t file, std::string op);

  const std::string& op() const { return op_; }

  /// The root group "/", recorded as opened.
  Hid open_root();

  /// The group or dataset behind the hard link `name` of `parent` (full path `full`), recorded as
  /// opened; a dataset's layout has passed check_dataset_layout.
  Hid open_object(hid_t parent, const std::string& name, const std::string& full);

  /// open_object for a group: "group <full> is missing" when `parent` has no such link.
  Hid open_group(hid_t parent, const std::string& name, const std::string& full);

  /// open_object for a dataset (the caller checks that the link exists).
  Hid open_dataset(hid_t parent, const std::string& name, const std::string& full);

  /// The shape and element count of `dset` (opened by open_dataset), after checking that neither the
  /// count times `mem_elem` (the size of the elements the caller reads into) nor times the stored
  /// element size overflows, that the file stores exactly count x stored element size bytes for it
  /// (fewer, e.g. none allocated, would read fill values) and, for contiguous storage, that those bytes
  /// lie within the file. A buffer of numel x mem_elem bytes is then no larger than the file.
  DatasetExtent extent(hid_t dset, std::size_t mem_elem, const std::string& full) const;

 private:
  /// Records the object `obj`, refusing one already opened under another path.
  void visit(hid_t obj, const std::string& full);

  hid_t file_;
  std::string op_;
  hsize_t file_size_ = 0;
  std::map<haddr_t, std::string> seen_;  // object header address -> the path it was first opened by
};

}  // namespace rpb::hdf5

// rpb/train/checkpoint/hdf5_vlen.h: the length of a variable-length string attribute, read from the file before HDF5 reads
// the string (internal to train/, beside train/checkpoint/hdf5_guard.h).
//
// HDF5 sizes its buffers for a variable-length string by the length its descriptor in the file claims, and zeroes
// them, before it reads the string: a 2 KiB file whose descriptor claims 4 GB made HDF5 1.10.8 allocate 7.6 GB.
// The descriptor lives in the attribute message of the object header; this reads it there (object header
// versions 1 and 2, with continuation chunks), checks that the global heap object it names holds exactly that
// many bytes, and returns the length, so the caller refuses a long string before HDF5 allocates anything.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <string>

namespace rpb::hdf5 {

/// The byte length of the scalar variable-length string attribute `name` of `obj` (the caller has checked that
/// it is one), as its descriptor in the file states it. Throws rpb::Error "<op>: <what> ..." when the attribute
/// is not found in the object header (dense attribute storage is refused), when the header or the global heap
/// is malformed, or when the heap object's size differs from the descriptor's length. Reads only bytes inside
/// the file (sec2 and core drivers) and allocates at most one header chunk or heap collection at a time.
std::size_t vlen_string_length(hid_t obj, const std::string& name, const std::string& what, const std::string& op);

}  // namespace rpb::hdf5

// Variable-length string attributes from untrusted files (train/checkpoint/hdf5_vlen.h): their length is read from the
// descriptor in the file and checked against the global heap before HDF5 sizes a buffer by it.
#include <doctest/doctest.h>
#include <hdf5.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test_util.h"
#include "train/checkpoint/hdf5_util.h"

using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::TempDir;

namespace {

const std::string kText = "hello world config";  // 18 bytes

/// A file with HDF5's earliest format (version 1 object headers, no checksums, as h5py writes by default) whose
/// root holds the variable-length string attribute "config" = kText, and `extra` fixed-length attributes.
void write_file(const std::string& path, int extra) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(file >= 0);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(file, "config", type, space, H5P_DEFAULT, H5P_DEFAULT);
  const char* text = kText.c_str();
  REQUIRE(H5Awrite(attr, type, &text) >= 0);
  H5Aclose(attr);
  for (int i = 0; i < extra; ++i) {
    const hid_t a = H5Acreate2(file, ("n" + std::to_string(i)).c_str(), H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(H5Awrite(a, H5T_NATIVE_INT, &i) >= 0);
    H5Aclose(a);
  }
  H5Sclose(space);
  H5Tclose(type);
  REQUIRE(H5Fclose(file) >= 0);
}

/// Sets the length in the descriptor of kText (length, global heap address, object index 1) to `length`.
void patch_length(const std::string& path, uint32_t length) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const std::string bytes(b.begin(), b.end());
  const std::size_t heap = bytes.find("GCOL");
  REQUIRE(heap != std::string::npos);
  std::string descriptor(16, '\0');
  const uint32_t old_length = static_cast<uint32_t>(kText.size()), index = 1;
  const uint64_t address = heap;
  std::memcpy(descriptor.data(), &old_length, 4);  // little-endian, as the file (x86)
  std::memcpy(descriptor.data() + 4, &address, 8);
  std::memcpy(descriptor.data() + 12, &index, 4);
  const std::size_t at = bytes.find(descriptor);
  REQUIRE(at != std::string::npos);
  std::memcpy(b.data() + at, &length, 4);
  std::ofstream(path, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
}

std::string read_config(const std::string& path) {
  rpb::hdf5::QuietHdf5 quiet;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(file >= 0);
  std::string value;
  const std::string error = error_of([&] { value = rpb::hdf5::read_string_attr(file, "config", "/", "file"); });
  H5Fclose(file);
  return error.empty() ? value : "error: " + error;
}

}  // namespace

TEST_CASE("hdf5 vlen: a variable-length string whose descriptor lies about its length is refused unread") {
  TempDir dir("vlen");
  const std::string path = dir.file("a.h5");
  write_file(path, 0);
  CHECK(read_config(path) == kText);  // a version 1 object header
  // 4 GB claimed for 18 bytes: HDF5 1.10.8 would allocate and zero 2 x 4 GB before reading them.
  patch_length(path, 4000000000u);
  CHECK(contains(read_config(path), "error: file: attribute config of / (a variable-length string): its header "
                                    "data claims 4000000000 bytes but the heap holds 18"));
  // Fewer bytes claimed than the heap object holds: HDF5 would copy the object past its buffer.
  write_file(path, 0);
  patch_length(path, 5);
  CHECK(contains(read_config(path), "claims 5 bytes but the heap holds 18"));
}

TEST_CASE("hdf5 vlen: a variable-length string in dense attribute storage is refused") {
  TempDir dir("vlen_dense");
  const std::string path = dir.file("dense.h5");
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  H5Fclose(file);
  {
    // 9 attributes: more than HDF5's default 8 compact ones.
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    const hid_t attr = H5Acreate2(f, "config", type, space, H5P_DEFAULT, H5P_DEFAULT);
    const char* text = kText.c_str();
    REQUIRE(H5Awrite(attr, type, &text) >= 0);
    H5Aclose(attr);
    for (int i = 0; i < 8; ++i) {
      const hid_t a = H5Acreate2(f, ("n" + std::to_string(i)).c_str(), H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT);
      H5Awrite(a, H5T_NATIVE_INT, &i);
      H5Aclose(a);
    }
    H5Tclose(type);
    H5Sclose(space);
    H5Fclose(f);
  }
  CHECK(contains(read_config(path), "error: file: attribute config of / is kept in dense attribute storage; rpb reads "
                                    "variable-length strings only from the object header"));
}

TEST_CASE("hdf5 vlen: attributes after a continuation chunk are found") {
  TempDir dir("vlen_cont");
  const std::string path = dir.file("c.h5");
  write_file(path, 0);
  {
    // Attributes added later go to a continuation chunk; the string is then re-written there.
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t space = H5Screate(H5S_SCALAR);
    for (int i = 0; i < 6; ++i) {
      const hid_t a = H5Acreate2(f, ("later" + std::to_string(i)).c_str(), H5T_NATIVE_DOUBLE, space, H5P_DEFAULT,
                                 H5P_DEFAULT);
      const double v = i;
      H5Awrite(a, H5T_NATIVE_DOUBLE, &v);
      H5Aclose(a);
    }
    H5Adelete(f, "config");
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    const hid_t attr = H5Acreate2(f, "config", type, space, H5P_DEFAULT, H5P_DEFAULT);
    const std::string longer = kText + " and more text, long enough to need space of its own";
    const char* text = longer.c_str();
    H5Awrite(attr, type, &text);
    H5Aclose(attr);
    H5Tclose(type);
    H5Sclose(space);
    H5Fclose(f);
  }
  CHECK(read_config(path) == kText + " and more text, long enough to need space of its own");
}

// tests/hostile_files.h: hostile checkpoints made in a test with the HDF5 C API (a valid checkpoint from
// save_checkpoint, then edited), and a load run in a forked child that a hang or a large allocation
// cannot take the test run down with.
#pragma once

#include <doctest/doctest.h>
#include <fcntl.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/crc32.h"

// libhdf5 exports its metadata checksum (Jenkins' lookup3) without declaring it in a public header;
// rewrite_object_header needs it to re-checksum an object header it edited.
extern "C" uint32_t H5_checksum_metadata(const void* data, std::size_t len, uint32_t initval);

namespace rpb::testing {

/// Open HDF5 objects of any file in this process (0 when every handle was closed).
inline ssize_t open_hdf5_objects() { return H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL); }

/// A small valid checkpoint: /params/w [2, 3] and /params/b [3] (float32), a buffer, AdamW moments in
/// /optim/exp_avg and /optim/exp_avg_sq, one rng state, a counter and three metrics rows (steps 1 to 3).
inline Checkpoint small_checkpoint() {
  Checkpoint c;
  c.step = 3;
  c.config_text = "[run]\nsteps = 3\n";
  c.params = {{"w", Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
              {"b", Tensor::from_vector<float>({3}, {0.5f, -0.5f, 0.25f})}};
  c.buffers = {{"buf", Tensor::from_vector<float>({2}, {7, 8})}};
  c.optim.kind = "adamw";
  c.optim.step = 3;
  c.optim.scalars = {{"lr", 0.1}};
  c.optim.tensors = {
      {"exp_avg/w", Tensor::zeros({2, 3})}, {"exp_avg/b", Tensor::zeros({3})}, {"exp_avg_sq/w", Tensor::zeros({2, 3})}};
  c.rng = {{"data", {1, 2, 3, 4}}};
  c.counters = {{"cursor", 7}};
  c.metrics = {{1, 3.0, 0.1, 1.0, 100.0}, {2, 2.0, 0.1, 1.0, 100.0}, {3, 1.0, 0.1, 1.0, 100.0}};
  return c;
}

/// Saves small_checkpoint() as dir/name and returns its path.
inline std::string saved_checkpoint(const TempDir& dir, const std::string& name) {
  const std::string path = dir.file(name);
  save_checkpoint(path, small_checkpoint());
  return path;
}

/// Opens `path` read-write with HDF5 (the 1.8+ format, as rpb writes: attributes over 64 KiB need it),
/// hands the file to `edit` and closes it.
inline void edit_hdf5(const std::string& path, const std::function<void(hid_t file)>& edit) {
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl);
  H5Pclose(fapl);
  REQUIRE(file >= 0);
  edit(file);
  REQUIRE(H5Fclose(file) >= 0);
}

/// The start of the message load_checkpoint(path) throws to refuse for `what`: "checkpoint <path>:
/// <what> [" (the source location follows), so that `contains` matches the whole reason.
inline std::string refusal(const std::string& path, const std::string& what) {
  return "checkpoint " + path + ": " + what + " [";
}

/// Replaces the dataset `name` by a new one of `type` and `dims` made with `dcpl`, holding `data`
/// when not null, with the "crc32" attribute `crc`.
inline void replace_dataset(hid_t file, const std::string& name, hid_t type, const std::vector<hsize_t>& dims,
                            hid_t dcpl, const void* data, uint32_t crc) {
  REQUIRE(H5Ldelete(file, name.c_str(), H5P_DEFAULT) >= 0);
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t dset = H5Dcreate2(file, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  REQUIRE(dset >= 0);
  if (data) REQUIRE(H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  const hid_t scalar = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(dset, "crc32", H5T_NATIVE_UINT32, scalar, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(H5Awrite(attr, H5T_NATIVE_UINT32, &crc) >= 0);
  H5Aclose(attr);
  H5Sclose(scalar);
  H5Dclose(dset);
  H5Sclose(space);
}

/// /params/w's values as small_checkpoint() saves them, and their CRC.
inline const std::vector<float>& w_values() {
  static const std::vector<float> v = {1, 2, 3, 4, 5, 6};
  return v;
}
inline uint32_t w_crc() { return crc32_ieee(w_values().data(), w_values().size() * sizeof(float)); }

/// An object header's first chunk in a file's bytes: messages from `messages` to `end`, the checksum at `end`.
struct HeaderChunk {
  std::size_t start, messages, end;
  bool creation_order;  // each message carries a 2-byte creation order
};

/// Edits the first chunk of the object header of `object` (version 2, as rpb writes it) in the file's
/// bytes with `edit`, then puts the chunk's checksum right: a file no HDF5 call would write.
inline void rewrite_object_header(const std::string& path, const std::string& object,
                                  const std::function<void(std::vector<unsigned char>&, const HeaderChunk&)>& edit) {
  haddr_t header = HADDR_UNDEF;
  {
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t o = H5Oopen(f, object.c_str(), H5P_DEFAULT);
    H5O_info_t info{};
    REQUIRE(H5Oget_info2(o, &info, H5O_INFO_BASIC) >= 0);
    header = info.addr;
    H5Oclose(o);
    H5Fclose(f);
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  HeaderChunk c{header, 0, 0, false};
  REQUIRE((std::memcmp(&b[c.start], "OHDR", 4) == 0 && b[c.start + 4] == 2));
  const unsigned flags = b[c.start + 5];
  c.messages = c.start + 6 + ((flags & 0x20) ? 16 : 0) + ((flags & 0x10) ? 4 : 0);
  const int width = 1 << (flags & 3);
  uint64_t size = 0;
  for (int i = width - 1; i >= 0; --i) size = size << 8 | b[c.messages + i];
  c.messages += width;
  c.end = c.messages + size;
  c.creation_order = flags & 0x04;
  REQUIRE(c.end + 4 <= b.size());
  edit(b, c);
  const uint32_t sum = H5_checksum_metadata(&b[c.start], c.end - c.start, 0);
  for (int i = 0; i < 4; ++i) b[c.end + i] = static_cast<unsigned char>(sum >> (8 * i));
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

/// Moves the data of the contiguous dataset `dataset` to file address `addr` (its layout message's
/// address): data where no HDF5 call would put it.
inline void move_data_address(const std::string& path, const std::string& dataset, uint64_t addr) {
  rewrite_object_header(path, dataset, [&](std::vector<unsigned char>& b, const HeaderChunk& c) {
    bool moved = false;
    for (std::size_t m = c.messages; m + 4 <= c.end;) {
      const unsigned type = b[m], size = b[m + 1] | b[m + 2] << 8;
      const std::size_t body = m + 4 + (c.creation_order ? 2 : 0);
      if (type == 8 && b[body] == 3 && b[body + 1] == 1) {  // layout message version 3, contiguous
        for (int i = 0; i < 8; ++i) b[body + 2 + i] = static_cast<unsigned char>(addr >> (8 * i));
        moved = true;
      }
      m = body + size;
    }
    REQUIRE(moved);
  });
}

/// Renames the link `from` of `group` to `to` (as long) in the group's object header, where HDF5 keeps
/// the links of a small group: a name no HDF5 call would write ("a/x").
inline void rename_link_in_file(const std::string& path, const std::string& group, const std::string& from,
                                const std::string& to) {
  REQUIRE(from.size() == to.size());
  rewrite_object_header(path, group, [&](std::vector<unsigned char>& b, const HeaderChunk& c) {
    const auto at = std::search(b.begin() + static_cast<std::ptrdiff_t>(c.messages),
                                b.begin() + static_cast<std::ptrdiff_t>(c.end), from.begin(), from.end());
    REQUIRE(at != b.begin() + static_cast<std::ptrdiff_t>(c.end));
    std::copy(to.begin(), to.end(), at);
  });
}

/// What a forked child running a load reported.
struct ChildRun {
  bool finished = false;      // false: it was killed (by the alarm, or it crashed)
  std::string error;          // the rpb::Error message, or "no error", or "other exception: ..."
  long memory_growth_kb = 0;  // its peak resident memory during the load less its resident memory before
};

/// A field of /proc/self/status in kB ("VmRSS:", "VmHWM:").
inline long status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(field.size()));
  return -1;
}

/// Runs `load` in a forked child killed after `seconds` (a reader that hangs fails the test instead of
/// hanging it), and measures how much resident memory the load took at its peak.
inline ChildRun in_child(const std::function<void()>& load, unsigned seconds = 10) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::alarm(seconds);
    std::ofstream("/proc/self/clear_refs") << "5";  // resets the peak resident size (VmHWM)
    const long before = status_kb("VmRSS:");
    std::string text = "no error";
    try {
      load();
    } catch (const Error& e) {
      text = e.what();
    } catch (const std::exception& e) {
      text = std::string("other exception: ") + e.what();
    }
    text = std::to_string(status_kb("VmHWM:") - before) + "\n" + text;
    for (std::size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(fds[1], text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  ChildRun r;
  r.finished = WIFEXITED(status) && WEXITSTATUS(status) == 0 && out.find('\n') != std::string::npos;
  if (r.finished) {
    r.memory_growth_kb = std::stol(out.substr(0, out.find('\n')));
    r.error = out.substr(out.find('\n') + 1);
  }
  return r;
}

}  // namespace rpb::testing

// rpb/train/checkpoint/hdf5_vlen.cpp: a variable-length string attribute's length from its descriptor (see hdf5_vlen.h).
// Layouts from the HDF5 file format specification (version 3.0): object header prefixes and messages (IV.A),
// the attribute message (IV.A.2.m), the continuation message (IV.A.2.q) and the global heap (III.E).
#include "train/checkpoint/hdf5_vlen.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/text.h"
#include "train/checkpoint/hdf5_util.h"

namespace rpb::hdf5 {

namespace {

using Bytes = std::vector<unsigned char>;

constexpr int kMaxChunks = 1024;  // header chunks followed through continuation messages
constexpr unsigned kContinuation = 0x10, kAttribute = 0x0c, kAttributeInfo = 0x15;

uint64_t le(const unsigned char* p, std::size_t n) {
  uint64_t v = 0;
  for (std::size_t i = n; i-- > 0;) v = v << 8 | p[i];
  return v;
}

std::size_t pad8(std::size_t n) { return (n + 7) / 8 * 8; }

// The bytes of one open file (sec2 or core driver), bounds-checked against its size.
class FileBytes {
 public:
  FileBytes(hid_t obj, const std::string& what, const std::string& op) : what_(what), op_(op) {
    file_ = Hid(H5Iget_file_id(obj), H5Fclose);
    CKPT_CHECK(file_.get() >= 0, "cannot find the file of ", what);
    Hid fcpl = must(H5Fget_create_plist(file_.get()), H5Pclose, op, "cannot read the file's creation properties");
    must_ok(H5Pget_sizes(fcpl.get(), &sizeof_addr, &sizeof_size), op, "cannot read the file's address size");
    must_ok(H5Pget_userblock(fcpl.get(), &base_), op, "cannot read the file's user block size");
    must_ok(H5Fget_filesize(file_.get(), &size_), op, "cannot get the size of the file");
    Hid fapl = must(H5Fget_access_plist(file_.get()), H5Pclose, op, "cannot read the file's access properties");
    const hid_t driver = H5Pget_driver(fapl.get());
    void* handle = nullptr;
    must_ok(H5Fget_vfd_handle(file_.get(), fapl.get(), &handle), op, "cannot get the file's handle");
    if (driver == H5FD_SEC2) fd_ = *static_cast<int*>(handle);
    else if (driver == H5FD_CORE) mem_ = *static_cast<const unsigned char**>(handle);
    else fail("is in a file opened through a driver rpb cannot check (only sec2 and core)");
    CKPT_CHECK(sizeof_addr <= 8 && sizeof_size <= 8, what, ": the file's addresses are wider than 8 bytes");
  }

  // `n` bytes at address `addr` (relative to the base address), refused unless inside the file.
  Bytes read(uint64_t addr, uint64_t n) const {
    if (addr > size_ || base_ > size_ - addr || n > size_ - base_ - addr) fail("points past the end of the file");
    Bytes out(n);
    const uint64_t at = base_ + addr;
    if (mem_) {
      if (n) std::memcpy(out.data(), mem_ + at, n);
    } else if (pread(fd_, out.data(), n, static_cast<off_t>(at)) != static_cast<ssize_t>(n)) {
      fail("cannot be read from the file");
    }
    return out;
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw Error(op_ + ": " + what_ + " (a variable-length string): its header data " + why);
  }

  std::size_t sizeof_addr = 8, sizeof_size = 8;

 private:
  std::string what_, op_;
  Hid file_;
  hsize_t base_ = 0, size_ = 0;
  int fd_ = -1;
  const unsigned char* mem_ = nullptr;
};

// A region of header messages still to walk.
struct Chunk {
  uint64_t addr, size;
  bool v2, first;
  bool order;  // v2: each message carries its creation order (2 bytes after its flags)
};

struct Descriptor {
  bool found = false, dense = false;
  uint64_t length = 0, heap = 0, index = 0;
};

// The descriptor of attribute `name` when message `data` is its attribute message.
void match_attribute(const Bytes& m, std::size_t at, std::size_t size, const std::string& name, const FileBytes& f,
                     Descriptor& d) {
  if (size < 8) f.fail("holds a truncated attribute message");
  const unsigned char* p = m.data() + at;
  const unsigned version = p[0];
  if (version < 1 || version > 3) f.fail("holds an attribute message of unknown version " + std::to_string(version));
  const std::size_t name_size = le(p + 2, 2), dt_size = le(p + 4, 2), ds_size = le(p + 6, 2);
  std::size_t pos = version == 3 ? 9 : 8;
  const auto field = [&](std::size_t n) { return version == 1 ? pad8(n) : n; };
  if (pos + field(name_size) > size) f.fail("holds a truncated attribute message");
  const std::string found(reinterpret_cast<const char*>(p + pos), name_size);
  if (std::string(found.c_str()) != name) return;
  pos += field(name_size) + field(dt_size) + field(ds_size);
  if (pos + 8 + f.sizeof_addr > size) f.fail("holds a truncated attribute message");
  d.found = true;
  d.length = le(p + pos, 4);
  d.heap = le(p + pos + 4, f.sizeof_addr);
  d.index = le(p + pos + 4 + f.sizeof_addr, 4);
}

// The messages of one chunk: attribute messages are matched, continuations queued.
void walk_chunk(const FileBytes& f, const Chunk& c, const std::string& name, std::vector<Chunk>& todo, Descriptor& d) {
  Bytes m = f.read(c.addr, c.size);
  std::size_t at = 0, end = m.size();
  if (c.v2 && !c.first) {
    if (m.size() < 8 || std::memcmp(m.data(), "OCHK", 4) != 0) f.fail("has a continuation chunk without OCHK");
    at = 4, end = m.size() - 4;  // the checksum closes the chunk
  }
  const std::size_t header = c.v2 ? (c.order ? 6 : 4) : 8;  // type, size, flags (v1: and 3 reserved bytes)
  while (end - at >= header) {
    const unsigned type = c.v2 ? m[at] : static_cast<unsigned>(le(&m[at], 2));
    const std::size_t size = le(&m[at + (c.v2 ? 1 : 2)], 2);
    at += header;
    if (size > end - at) f.fail("holds a message longer than its chunk");
    if (type == kAttribute) match_attribute(m, at, size, name, f, d);
    if (type == kAttributeInfo) d.dense = true;
    if (type == kContinuation) {
      if (size < f.sizeof_addr + f.sizeof_size) f.fail("holds a truncated continuation message");
      todo.push_back({le(&m[at], f.sizeof_addr), le(&m[at + f.sizeof_addr], f.sizeof_size), c.v2, false, c.order});
    }
    if (d.found) return;
    at += size;
  }
}

// The first chunk of the header at `addr`.
Chunk first_chunk(const FileBytes& f, uint64_t addr) {
  const Bytes prefix = f.read(addr, 6);
  if (std::memcmp(prefix.data(), "OHDR", 4) != 0) {
    if (prefix[0] != 1) f.fail("has an object header of unknown version " + std::to_string(prefix[0]));
    const Bytes v1 = f.read(addr, 16);  // version, reserved, messages, references, chunk size, padding
    return {addr + 16, le(&v1[8], 4), false, true, false};
  }
  if (prefix[4] != 2) f.fail("has an object header of unknown version " + std::to_string(prefix[4]));
  const unsigned flags = prefix[5];
  uint64_t at = addr + 6 + (flags & 0x20 ? 16 : 0) + (flags & 0x10 ? 4 : 0);
  const std::size_t width = std::size_t{1} << (flags & 3);
  const uint64_t size = le(f.read(at, width).data(), width);
  return {at + width, size, true, true, (flags & 0x04) != 0};
}

// Checks that global heap object `index` of the collection at `heap` holds exactly `length` bytes.
void check_heap_object(const FileBytes& f, uint64_t heap, uint64_t index, uint64_t length) {
  const Bytes head = f.read(heap, 8 + f.sizeof_size);
  if (std::memcmp(head.data(), "GCOL", 4) != 0 || head[4] != 1) f.fail("names a global heap that is not one");
  const uint64_t size = le(&head[8], f.sizeof_size);
  const Bytes c = f.read(heap, size);
  const std::size_t object_header = 8 + f.sizeof_size;
  for (std::size_t at = 8 + f.sizeof_size; c.size() - at >= object_header;) {
    const uint64_t id = le(&c[at], 2), bytes = le(&c[at + 8], f.sizeof_size);
    if (id == 0) break;  // the free space closes the collection
    if (id == index) {
      if (bytes != length)
        f.fail("claims " + std::to_string(length) + " bytes but the heap holds " + std::to_string(bytes));
      return;
    }
    if (bytes > c.size() - at - object_header) break;
    at += object_header + pad8(bytes);
  }
  f.fail("names a global heap object that is missing");
}

}  // namespace

std::size_t vlen_string_length(hid_t obj, const std::string& name, const std::string& what, const std::string& op) {
  const FileBytes f(obj, what, op);
  H5O_info_t info{};
  must_ok(H5Oget_info2(obj, &info, H5O_INFO_BASIC), op, "cannot read the object header of " + what);
  std::vector<Chunk> todo{first_chunk(f, info.addr)};
  Descriptor d;
  for (int n = 0; !todo.empty() && !d.found; ++n) {
    if (n == kMaxChunks) f.fail("spans more than " + std::to_string(kMaxChunks) + " chunks");
    const Chunk c = todo.back();
    todo.pop_back();
    walk_chunk(f, c, name, todo, d);
  }
  if (!d.found && d.dense)
    throw Error(op + ": " + what + " is kept in dense attribute storage; rpb reads variable-length strings only "
                "from the object header");
  if (!d.found) f.fail("holds no attribute message of that name");
  check_heap_object(f, d.heap, d.index, d.length);
  return d.length;
}

}  // namespace rpb::hdf5

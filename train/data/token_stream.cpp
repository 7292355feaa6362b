// rpb/train/data/token_stream.cpp: see token_stream.h.
#include "train/data/token_stream.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/text.h"
#include "train/io/input_file.h"
#include "train/io/no_follow.h"

namespace rpb::data {

TokenStream::TokenStream(std::vector<int32_t> ids) {
  auto held = std::make_shared<const std::vector<int32_t>>(std::move(ids));
  i32_ = held->data();
  size_ = static_cast<int64_t>(held->size());
  owner_ = std::move(held);
}

TokenStream TokenStream::map_file(const std::string& path, int width, int64_t vocab) {
  RPB_CHECK(width == 2 || width == 4, "token file", printable(path), ": ids of ", width, " bytes; expected 2 or 4");
  const std::string op = "token file " + printable(path);
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW));
  RPB_CHECK(fd.get() >= 0, op.c_str(), "cannot open the file: ", std::strerror(errno));
  struct stat st{};
  RPB_CHECK(::fstat(fd.get(), &st) == 0, op.c_str(), "cannot stat the file: ", std::strerror(errno));
  if (const std::string kind = mode_kind(st.st_mode); !kind.empty())
    RPB_FAIL(op.c_str(), "is ", kind, ", not a regular file");
  const auto bytes = static_cast<std::size_t>(st.st_size);
  RPB_CHECK(bytes % static_cast<std::size_t>(width) == 0, op.c_str(), "holds ", bytes, " bytes, not a whole number of ",
            width, "-byte ids");
  TokenStream s;
  s.size_ = static_cast<int64_t>(bytes / static_cast<std::size_t>(width));
  s.mapped_ = true;
  if (bytes == 0) return s;
  void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd.get(), 0);
  RPB_CHECK(p != MAP_FAILED, op.c_str(), "cannot map the file: ", std::strerror(errno));
  s.owner_ = std::shared_ptr<const void>(p, [bytes](const void* q) { ::munmap(const_cast<void*>(q), bytes); });
  if (width == 2) s.u16_ = static_cast<const uint16_t*>(p);
  else s.i32_ = static_cast<const int32_t*>(p);
  for (int64_t i = 0; i < s.size_; ++i) {
    const int32_t id = s[i];
    RPB_CHECK(id >= 0 && id < vocab, op.c_str(), "id ", i, " is ", id, ", outside the vocabulary of ", vocab,
              " (a damaged cache: delete the file and rpb writes it again)");
  }
  return s;
}

bool operator==(const TokenStream& a, const TokenStream& b) {
  if (a.size_ != b.size_) return false;
  for (int64_t i = 0; i < a.size_; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

void TokenStream::copy_to(int64_t begin, int64_t end, int64_t* out) const {
  if (u16_) std::copy(u16_ + begin, u16_ + end, out);
  else std::copy(i32_ + begin, i32_ + end, out);
}

std::vector<int32_t> TokenStream::to_vector(int64_t begin, int64_t end) const {
  if (end < 0) end = size_;
  std::vector<int32_t> out(static_cast<std::size_t>(end - begin));
  for (int64_t i = begin; i < end; ++i) out[static_cast<std::size_t>(i - begin)] = (*this)[i];
  return out;
}

}  // namespace rpb::data

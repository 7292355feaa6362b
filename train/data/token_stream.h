// rpb/train/data/token_stream.h: a read-only stream of token ids, held in memory or memory-mapped from a token file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rpb::data {

/// The ids of a task's split: int32 in memory (the generated tasks, kjv, a text task evaluated), or a token file
/// mapped read-only (a text task's cached splits, train/data/token_cache.h): 16-bit ids when the vocabulary fits,
/// else 32-bit, little-endian. Copies share the data. A mapped stream's pages are the file's (the kernel may drop
/// and reread them), not anonymous memory.
class TokenStream {
 public:
  TokenStream() = default;
  /// In memory (implicit: a task fills its streams with vectors).
  TokenStream(std::vector<int32_t> ids);  // NOLINT(google-explicit-constructor)
  /// Maps the `width`-byte (2 or 4) little-endian ids of file `path` (opened without following a link; a regular file
  /// whose size is a multiple of `width`), and checks every id lies in [0, vocab): rpb::Error names the file and the
  /// first id out of range.
  static TokenStream map_file(const std::string& path, int width, int64_t vocab);

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int32_t operator[](int64_t i) const { return u16_ ? static_cast<int32_t>(u16_[i]) : i32_[i]; }
  /// Ids [begin, end) as int64 into `out` (a tensor's data).
  void copy_to(int64_t begin, int64_t end, int64_t* out) const;
  /// Ids [begin, end) (end -1: to the end).
  std::vector<int32_t> to_vector(int64_t begin = 0, int64_t end = -1) const;
  /// True when mapped from a file.
  bool mapped() const { return mapped_; }
  /// The same ids, however held.
  friend bool operator==(const TokenStream& a, const TokenStream& b);
  friend bool operator==(const TokenStream& a, const std::vector<int32_t>& b) { return a == TokenStream(b); }

 private:
  std::shared_ptr<const void> owner_;  // the vector or the mapping
  const int32_t* i32_ = nullptr;
  const uint16_t* u16_ = nullptr;
  int64_t size_ = 0;
  bool mapped_ = false;
};

}  // namespace rpb::data

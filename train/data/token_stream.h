// rpb/train/data/token_stream.h: a read-only stream of token ids held in memory, 16 or 32 bits an id.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rpb::data {

/// The bytes an id takes in a token file or a stream of `vocab` ids: 2 when the vocabulary fits 16 bits, else 4.
inline int token_width(int64_t vocab) { return vocab <= 65536 ? 2 : 4; }

/// The ids of a task's split, held in memory: int32 (the generated tasks, kjv), or uint16 when the vocabulary fits
/// (a text task's splits: TokenStreamBuilder, and the verified ids of its token cache, train/data/token_cache.h).
/// Copies share the data.
class TokenStream {
 public:
  TokenStream() = default;
  /// Implicit: a task fills its streams with vectors.
  TokenStream(std::vector<int32_t> ids);   // NOLINT(google-explicit-constructor)
  TokenStream(std::vector<uint16_t> ids);  // NOLINT(google-explicit-constructor)

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int32_t operator[](int64_t i) const { return u16_ ? static_cast<int32_t>(u16_[i]) : i32_[i]; }
  /// Ids [begin, end) as int64 into `out` (a tensor's data).
  void copy_to(int64_t begin, int64_t end, int64_t* out) const;
  /// Ids [begin, end) (end -1: to the end).
  std::vector<int32_t> to_vector(int64_t begin = 0, int64_t end = -1) const;
  /// The bytes its ids take (2 or 4 an id).
  int64_t bytes() const { return size_ * (u16_ ? 2 : 4); }
  /// The same ids, however held.
  friend bool operator==(const TokenStream& a, const TokenStream& b);
  friend bool operator==(const TokenStream& a, const std::vector<int32_t>& b) { return a == TokenStream(b); }

 private:
  std::shared_ptr<const void> owner_;  // the vector
  const int32_t* i32_ = nullptr;
  const uint16_t* u16_ = nullptr;
  int64_t size_ = 0;
};

/// Ids appended a piece at a time, held as token_width(vocab) says (so a text task's streams take 2 bytes an id).
class TokenStreamBuilder {
 public:
  explicit TokenStreamBuilder(int64_t vocab) : wide_(token_width(vocab) == 4) {}
  void append(const std::vector<int32_t>& ids);
  /// The stream of every id appended; the builder is left empty.
  TokenStream finish();

 private:
  bool wide_;
  std::vector<int32_t> i32_;
  std::vector<uint16_t> u16_;
};

}  // namespace rpb::data

// rpb/train/data/token_stream.cpp: see token_stream.h.
#include "train/data/token_stream.h"

#include <algorithm>

namespace rpb::data {

TokenStream::TokenStream(std::vector<int32_t> ids) {
  auto held = std::make_shared<const std::vector<int32_t>>(std::move(ids));
  i32_ = held->data();
  size_ = static_cast<int64_t>(held->size());
  owner_ = std::move(held);
}

TokenStream::TokenStream(std::vector<uint16_t> ids) {
  auto held = std::make_shared<const std::vector<uint16_t>>(std::move(ids));
  u16_ = held->data();
  size_ = static_cast<int64_t>(held->size());
  owner_ = std::move(held);
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

void TokenStreamBuilder::append(const std::vector<int32_t>& ids) {
  if (wide_) i32_.insert(i32_.end(), ids.begin(), ids.end());
  else u16_.insert(u16_.end(), ids.begin(), ids.end());  // every id is below the vocabulary, which fits 16 bits
}

TokenStream TokenStreamBuilder::finish() {
  TokenStream s = wide_ ? TokenStream(std::move(i32_)) : TokenStream(std::move(u16_));
  i32_ = {};
  u16_ = {};
  return s;
}

}  // namespace rpb::data

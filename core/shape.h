// rpb/core/shape.h: tensor shapes with inline storage (no heap allocation).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>

#include "core/error.h"

namespace rpb {

/// The most dimensions a tensor may have. The design asks for 5-D; Swin's
/// window partition views a (B, H, W, C) grid as 6-D before its permute.
inline constexpr int kMaxDims = 8;

/// A tensor shape: up to kMaxDims extents, stored inline.
///
/// @code
/// rpb::Shape s{2, 3, 4};
/// CHECK(s.size() == 3);
/// CHECK(s.numel() == 24);
/// CHECK(s.to_string() == "[2, 3, 4]");
/// CHECK(s.axis(-1) == 2);
/// @endcode
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  template <typename It>
  Shape(It first, It last) {
    for (; first != last; ++first) push_back(static_cast<int64_t>(*first));
  }

  int size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t operator[](int i) const { return d_[i]; }
  int64_t& operator[](int i) { return d_[i]; }
  const int64_t* begin() const { return d_.data(); }
  const int64_t* end() const { return d_.data() + n_; }
  int64_t* begin() { return d_.data(); }
  int64_t* end() { return d_.data() + n_; }
  int64_t back() const { return d_[n_ - 1]; }

  void push_back(int64_t v);
  void insert(int pos, int64_t v);
  void erase(int pos);

  /// Product of the extents (1 for a 0-D shape).
  int64_t numel() const;
  /// Resolves a possibly negative axis (-1 is the last) into [0, size()); throws when out of range.
  int axis(int a) const;
  std::string to_string() const;

  friend bool operator==(const Shape& a, const Shape& b);
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  std::array<int64_t, kMaxDims> d_{};
  int n_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

/// Row-major strides of a contiguous shape, in elements.
Shape contiguous_strides(const Shape& s);

/// The numpy broadcast of two shapes; throws naming `op` and both shapes when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
/// The strides (in elements) of a contiguous tensor of shape `in` over the index space of `out`, numpy's
/// broadcasting aligned at the last axis: 0 along every axis `in` is broadcast over. Throws naming "broadcast" when
/// `in` does not broadcast to `out`.
Shape broadcast_strides(const Shape& in, const Shape& out);

}  // namespace rpb

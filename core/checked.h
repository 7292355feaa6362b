// rpb/core/checked.h: integer arithmetic on sizes that throws instead of overflowing.
#pragma once

#include <cstdint>
#include <limits>

#include "core/error.h"

namespace rpb {

/// a * b for non-negative sizes; throws rpb::Error "<op>: <what> overflows: a x b" when it exceeds int64.
///
/// @code
/// CHECK(rpb::checked_mul(int64_t{1} << 20, 1 << 10, "test", "elements") == int64_t{1} << 30);
/// CHECK_THROWS(rpb::checked_mul(int64_t{1} << 40, int64_t{1} << 30, "test", "elements"));
/// @endcode
inline int64_t checked_mul(int64_t a, int64_t b, const char* op, const char* what) {
  int64_t r = 0;
  RPB_CHECK(a >= 0 && b >= 0 && !__builtin_mul_overflow(a, b, &r), op, what, " overflows: ", a, " x ", b);
  return r;
}

/// a + b for non-negative sizes, likewise.
inline int64_t checked_add(int64_t a, int64_t b, const char* op, const char* what) {
  int64_t r = 0;
  RPB_CHECK(a >= 0 && b >= 0 && !__builtin_add_overflow(a, b, &r), op, what, " overflows: ", a, " + ", b);
  return r;
}

/// a * b, or INT64_MAX when it overflows: for estimates, where a size past int64 is simply too large (the caller
/// compares it against a budget and names its key).
inline int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}

/// a + b, or INT64_MAX when it overflows, likewise.
inline int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}

}  // namespace rpb

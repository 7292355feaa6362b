// tests/test_util.h: small helpers shared by the test files.
#pragma once

#include <functional>
#include <string>

#include "core/error.h"

namespace rpb::testing {

/// The message of the rpb::Error that f throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace rpb::testing

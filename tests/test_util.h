// tests/test_util.h: small helpers shared by the test files.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

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

/// A matrix written out row by row in a test.
using Matrix = std::vector<std::vector<double>>;

/// The elements of m in row-major order.
inline std::vector<double> flat(const Matrix& m) {
  std::vector<double> v;
  for (const auto& row : m) v.insert(v.end(), row.begin(), row.end());
  return v;
}

/// Exit code and combined stdout+stderr of one `rpb` command (the built binary).
struct CommandResult {
  int code;
  std::string out;
};

inline CommandResult run_rpb(const std::string& args) {
  const std::string cmd = std::string(RPB_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), static_cast<int>(buf.size()), p)) out += buf.data();
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace rpb::testing

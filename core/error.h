// rpb/core/error.h: the one throwing check of the library.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace rpb {

/// Every error rpb raises. The message reads "<op>: <what> [<file>:<line>]".
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <typename... Args>
[[noreturn]] void throw_error(const char* file, int line, const char* op, const Args&... args) {
  std::ostringstream os;
  os << op << ": ";
  (os << ... << args);
  os << " [" << file << ":" << line << "]";
  throw Error(os.str());
}
}  // namespace detail

}  // namespace rpb

/// RPB_CHECK(cond, op, parts...): throws rpb::Error naming the op, the message
/// built from `parts` (shapes print as [2, 3]) and file:line when cond is false.
///
/// @code
/// bool thrown = false;
/// try { RPB_CHECK(1 + 1 == 3, "arith", "expected ", 3, " got ", 2); }
/// catch (const rpb::Error& e) { thrown = std::string(e.what()).rfind("arith: expected 3 got 2 [", 0) == 0; }
/// CHECK(thrown);
/// @endcode
#define RPB_CHECK(cond, op, ...)                                                \
  do {                                                                          \
    if (!(cond)) ::rpb::detail::throw_error(__FILE__, __LINE__, op, __VA_ARGS__); \
  } while (0)

/// RPB_FAIL(op, parts...): throws unconditionally.
#define RPB_FAIL(op, ...) ::rpb::detail::throw_error(__FILE__, __LINE__, op, __VA_ARGS__)

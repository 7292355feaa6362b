// rpb/core/error.h: the one throwing check of the library.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace rpb {

/// Every error rpb raises. what() reads "<op>: <what> [<file>:<line>]" when the error comes from RPB_CHECK;
/// message() is the same without the source location, which is for developers: the CLI prints message() and
/// logs location() at debug level (`rpb --verbose`).
class Error : public std::runtime_error {
 public:
  /// An error with no source location (message() == what()).
  explicit Error(const std::string& message) : std::runtime_error(message), message_(message) {}
  /// An error raised at `location` ("file.cpp:123"): what() appends " [<location>]" to `message`.
  Error(const std::string& message, std::string location)
      : std::runtime_error(message + " [" + location + "]"), message_(message), location_(std::move(location)) {}
  /// What went wrong, for the user: no source location.
  const std::string& message() const { return message_; }
  /// Where in rpb's sources the error was raised ("../train/trainer.cpp:145"); empty when unknown.
  const std::string& location() const { return location_; }

 private:
  std::string message_, location_;
};

/// An invalid option value: carries the field at fault and the bare complaint, so that a caller maps the
/// field to what the user typed (a config key and its line, a command-line flag) without reading the message.
class OptionError : public Error {
 public:
  /// `message` reads like Error's; `field` names the option ("num_buckets") and `detail` is the complaint
  /// without the op or the source location ("num_buckets 7 must be even ...").
  OptionError(const std::string& message, std::string location, std::string field, std::string detail)
      : Error(message, std::move(location)), field_(std::move(field)), detail_(std::move(detail)) {}
  const std::string& field() const { return field_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string field_, detail_;
};

/// A mistake on the command line that rpb detects only when it runs (an output flag naming a file rpb must not
/// replace, a data file that is not the one a checkpoint was trained on): the CLI prints message() and exits 2,
/// like a usage error CLI11 finds while parsing.
class UsageError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <typename... Args>
[[noreturn]] void throw_error(const char* file, int line, const char* op, const Args&... args) {
  throw Error(std::string(op) + ": " + concat(args...), std::string(file) + ":" + std::to_string(line));
}

template <typename... Args>
[[noreturn]] void throw_option_error(const char* file, int line, const char* op, const char* field,
                                     const Args&... args) {
  const std::string what = concat(args...);
  throw OptionError(std::string(op) + ": " + what, std::string(file) + ":" + std::to_string(line), field, what);
}
}  // namespace detail

}  // namespace rpb

/// RPB_CHECK(cond, op, parts...): throws rpb::Error naming the op, the message
/// built from `parts` (shapes print as [2, 3]) and file:line when cond is false.
///
/// @code
/// bool thrown = false;
/// try { RPB_CHECK(1 + 1 == 3, "arith", "expected ", 3, " got ", 2); }
/// catch (const rpb::Error& e) {
///   thrown = std::string(e.what()).rfind("arith: expected 3 got 2 [", 0) == 0;
///   CHECK(e.message() == "arith: expected 3 got 2");          // what the CLI prints
///   CHECK(!e.location().empty());                              // "<file>:<line>" of the check
/// }
/// CHECK(thrown);
/// @endcode
#define RPB_CHECK(cond, op, ...)                                                \
  do {                                                                          \
    if (!(cond)) ::rpb::detail::throw_error(__FILE__, __LINE__, op, __VA_ARGS__); \
  } while (0)

/// RPB_FAIL(op, parts...): throws unconditionally.
#define RPB_FAIL(op, ...) ::rpb::detail::throw_error(__FILE__, __LINE__, op, __VA_ARGS__)

/// RPB_CHECK_OPTION(cond, op, field, parts...): RPB_CHECK for an option value, throwing rpb::OptionError that
/// names `field` (a string literal: the option's name) besides the message.
///
/// @code
/// try { RPB_CHECK_OPTION(7 % 2 == 0, "t5", "num_buckets", "num_buckets ", 7, " must be even"); }
/// catch (const rpb::OptionError& e) { CHECK(e.field() == "num_buckets"); CHECK(e.detail() == "num_buckets 7 must be even"); }
/// @endcode
#define RPB_CHECK_OPTION(cond, op, field, ...)                                                 \
  do {                                                                                         \
    if (!(cond)) ::rpb::detail::throw_option_error(__FILE__, __LINE__, op, field, __VA_ARGS__); \
  } while (0)

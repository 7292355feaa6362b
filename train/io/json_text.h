// rpb/train/io/json_text.h: the JSON files rpb writes (eval records, the sweep's results.json, `rpb bias --json`)
// and reads back. Every one is built as an nlohmann::ordered_json object (members keep the order they are added
// in) and printed by nlohmann: strings escaped, doubles as the shortest text that reads back to the same double.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rpb {

/// A JSON value as rpb builds and reads it.
using Json = nlohmann::ordered_json;

/// `v` as a JSON number, or null when it is nullopt or not finite (JSON has no NaN or Inf).
Json json_number(const std::optional<double>& v);

/// A file's text: `value` indented by 2 spaces, one member or element a line, and a final newline.
std::string json_text(const Json& value);

/// Parses `text`, the bytes of `source` (e.g. "eval record /runs/t5/eval/step_00000600-8192.json"). Throws
/// rpb::Error "<source>: not valid JSON: <where and why>" for text that is not one JSON value, and
/// "<source>: nested deeper than 32 arrays and objects" for a deeper one (rpb's files nest 8 at most).
Json parse_json(const std::string& text, const std::string& source);

/// A JSON value being read from a file (untrusted): each accessor checks the type it expects and throws
/// rpb::Error naming the file, the key and what it found:
///   "eval record /r/eval/a.json: key lengths[1].nll: expected a number or null, found a string".
class JsonIn {
 public:
  /// The root value of `source` (what the file is and its path, as parse_json's).
  JsonIn(const Json& value, std::string source) : value_(&value), source_(std::move(source)) {}

  /// The member `key` of an object (missing: "key <key> is missing").
  JsonIn operator[](const std::string& key) const;
  /// Element `i` of an array (i < size()).
  JsonIn operator[](std::size_t i) const;
  /// The element count of an array.
  std::size_t size() const;
  /// Whether the member `key` is in the object.
  bool has(const std::string& key) const;
  /// The member names of an object, in order.
  std::vector<std::string> keys() const;
  /// The value itself, for a reader that takes several types (each accessor still checks the one it reads).
  const Json& json() const { return *value_; }

  bool is_null() const { return value_->is_null(); }
  std::string string() const;
  /// A string, or "" for null.
  std::string string_or_empty() const;
  int64_t int64() const;
  uint64_t uint64() const;
  bool boolean() const;
  /// A number, or nullopt for null.
  std::optional<double> optional_number() const;
  /// A number, or NaN for null (a double rpb wrote as null because it was not finite).
  double number_or_nan() const;

  /// Throws rpb::Error "<source>: key <key>: <message>".
  [[noreturn]] void fail(const std::string& message) const;

 private:
  JsonIn(const Json& value, std::string source, std::string key)
      : value_(&value), source_(std::move(source)), key_(std::move(key)) {}
  // Throws unless the value is of the type `expected` names.
  void expect(bool ok, const char* expected) const;

  const Json* value_;
  std::string source_;  // "eval record <path>"
  std::string key_;     // "lengths[1].nll"; "" at the root
};

/// Reads the regular file `path` (at most `max_bytes` bytes, train/io/input_file.h) and parses it; `what` starts
/// every message ("eval record"). Throws rpb::Error as read_input_file and parse_json do.
Json read_json_file(const std::string& path, const std::string& what, std::size_t max_bytes);

}  // namespace rpb

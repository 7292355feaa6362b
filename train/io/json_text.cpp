// rpb/train/io/json_text.cpp: see json_text.h.
#include "train/io/json_text.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "train/io/input_file.h"

namespace rpb {

namespace {

constexpr int kMaxDepth = 32;

// What a JSON value is, for messages: "a string", "an object", ...
std::string kind(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number with a fraction or an exponent";
    default: return "a binary value";
  }
}

}  // namespace

Json json_number(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

std::string json_text(const Json& value) { return value.dump(2) + "\n"; }

Json parse_json(const std::string& text, const std::string& source) {
  const auto depth_bound = [&](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= kMaxDepth)
      throw Error(source + ": nested deeper than " + std::to_string(kMaxDepth) + " arrays and objects");
    return true;
  };
  try {
    return Json::parse(text, depth_bound);
  } catch (const Json::exception& e) {
    // nlohmann's message: "[json.exception.parse_error.101] parse error at line 3, column 5: ...".
    const std::string what = e.what();
    const auto at = what.find("] ");
    throw Error(source + ": not valid JSON: " + (at == std::string::npos ? what : what.substr(at + 2)));
  }
}

JsonIn JsonIn::operator[](const std::string& key) const {
  expect(value_->is_object(), "an object");
  const std::string where = key_.empty() ? key : key_ + "." + key;
  const auto it = value_->find(key);
  if (it == value_->end()) throw Error(source_ + ": key " + where + " is missing");
  return JsonIn(*it, source_, where);
}

JsonIn JsonIn::operator[](std::size_t i) const {
  expect(value_->is_array(), "an array");
  if (i >= value_->size()) fail("element " + std::to_string(i) + " asked of " + std::to_string(value_->size()));
  return JsonIn((*value_)[i], source_, key_ + "[" + std::to_string(i) + "]");
}

std::size_t JsonIn::size() const {
  expect(value_->is_array(), "an array");
  return value_->size();
}

bool JsonIn::has(const std::string& key) const {
  expect(value_->is_object(), "an object");
  return value_->contains(key);
}

std::vector<std::string> JsonIn::keys() const {
  expect(value_->is_object(), "an object");
  std::vector<std::string> out;
  for (const auto& item : value_->items()) out.push_back(item.key());
  return out;
}

std::string JsonIn::string() const {
  expect(value_->is_string(), "a string");
  return value_->get<std::string>();
}

std::string JsonIn::string_or_empty() const {
  expect(value_->is_string() || value_->is_null(), "a string or null");
  return value_->is_null() ? std::string() : value_->get<std::string>();
}

int64_t JsonIn::int64() const {
  expect(value_->is_number_integer(), "an integer");
  if (value_->is_number_unsigned() && value_->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    fail("expected an integer below 2^63, found " + value_->dump());
  return value_->get<int64_t>();
}

uint64_t JsonIn::uint64() const {
  expect(value_->is_number_unsigned(), "an integer of at least 0");
  return value_->get<uint64_t>();
}

bool JsonIn::boolean() const {
  expect(value_->is_boolean(), "true or false");
  return value_->get<bool>();
}

std::optional<double> JsonIn::optional_number() const {
  expect(value_->is_number() || value_->is_null(), "a number or null");
  return value_->is_null() ? std::nullopt : std::optional<double>(value_->get<double>());
}

double JsonIn::number_or_nan() const {
  return optional_number().value_or(std::numeric_limits<double>::quiet_NaN());
}

void JsonIn::fail(const std::string& message) const {
  throw Error(source_ + ": " + (key_.empty() ? std::string() : "key " + key_ + ": ") + message);
}

void JsonIn::expect(bool ok, const char* expected) const {
  if (!ok) fail(std::string("expected ") + expected + ", found " + kind(*value_));
}

Json read_json_file(const std::string& path, const std::string& what, std::size_t max_bytes) {
  InputOptions options;
  options.what = what;
  options.max_bytes = max_bytes;
  return parse_json(read_input_file(path, options), what + " " + path);
}

}  // namespace rpb

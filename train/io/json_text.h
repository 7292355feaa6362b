// rpb/train/io/json_text.h: the pieces of the JSON files rpb writes (eval records, the sweep's results.json).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rpb {

/// `text` as a JSON string literal, quotes included: `"` and `\` escaped, control bytes as \u00XX (a"b and a newline
/// give "a\"b\u000a").
std::string json_string(std::string_view text);

/// `v` as a JSON number with `digits` significant digits (17 round-trips a double), or null when it is nullopt or
/// not finite (JSON has no NaN or Inf).
std::string json_number(const std::optional<double>& v, int digits = 17);

}  // namespace rpb

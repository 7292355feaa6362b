#include "train/io/json_text.h"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace rpb {

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_number(const std::optional<double>& v, int digits) {
  if (!v || !std::isfinite(*v)) return "null";
  std::ostringstream os;
  os << std::setprecision(digits) << *v;
  return os.str();
}

}  // namespace rpb

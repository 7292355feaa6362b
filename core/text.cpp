#include "core/text.h"

#include <algorithm>
#include <cstdio>

#include "core/unicode.h"

namespace rpb {

namespace {

// The text of one byte that is written as an escape.
void append_escape(std::string& out, unsigned char c) {
  if (c == '\n') out += "\\n";
  else if (c == '\t') out += "\\t";
  else if (c == '\r') out += "\\r";
  else {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    out += buf;
  }
}

// The first `end` bytes of `text`, escaped: control bytes, DEL, the characters of invisible_category (the C1
// controls, U+009B being a terminal's CSI; format characters such as U+202E, which reorders what follows it; line
// and paragraph separators) and bytes outside valid UTF-8
// always; backslashes when `backslash`; newlines and tabs unless `keep_lines`.
std::string escape(std::string_view text, std::size_t end, bool backslash, bool keep_lines) {
  std::string out;
  out.reserve(end + 16);
  std::size_t i = 0;
  while (i < end) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      if (c == '\\' && backslash) out += "\\\\";
      else out += static_cast<char>(c);
      ++i;
    } else if (keep_lines && (c == '\n' || c == '\t')) {
      out += static_cast<char>(c);
      ++i;
    } else if (const std::size_t n = c >= 0x80 ? utf8_sequence(text, i) : 0;
               n > 0 && i + n <= end && !invisible_category(decode_utf8(text, i, n))) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      append_escape(out, c);
      ++i;
    }
  }
  return out;
}

std::string cut_note(std::size_t end, std::size_t size) {
  return end < size ? "... (" + std::to_string(size) + " bytes)" : "";
}

}  // namespace

std::string printable(std::string_view text, std::size_t max_bytes) {
  const std::size_t end = std::min(text.size(), max_bytes);
  return escape(text, end, true, false) + cut_note(end, text.size());
}

std::string terminal_text(std::string_view text, std::size_t max_bytes) {
  const std::size_t end = std::min(text.size(), max_bytes);
  return escape(text, end, false, true) + cut_note(end, text.size());
}

int edit_distance(std::string_view a, std::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest(std::string_view word, const std::vector<std::string>& known) {
  std::string best;
  int best_distance = 1 << 30;
  for (const std::string& k : known)
    if (const int d = edit_distance(word, k); d < best_distance) best_distance = d, best = k;
  if (best.empty() || best_distance > std::max<int>(2, static_cast<int>(word.size()) / 3)) return "";
  return best;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += separator;
    out += parts[i];
  }
  return out;
}

}  // namespace rpb

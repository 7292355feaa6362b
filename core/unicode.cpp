// rpb/core/unicode.cpp: see unicode.h.
#include "core/unicode.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>

namespace rpb {

namespace {

struct Range {
  char32_t first, last;
  const char* category;
};

// Every code point of the general categories Cc, Cf, Zl and Zp, from Unicode 14.0.0's data, generated once with
//   python3 -c 'import unicodedata as u; print([(c, u.category(chr(c))) for c in range(0x110000)
//               if u.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp")])'
// and merged into ranges of consecutive code points of one category. Sorted; ranges do not overlap.
constexpr Range kInvisible[] = {
    {0x0000, 0x001F, "Cc"},   {0x007F, 0x009F, "Cc"},   {0x00AD, 0x00AD, "Cf"},   {0x0600, 0x0605, "Cf"},
    {0x061C, 0x061C, "Cf"},   {0x06DD, 0x06DD, "Cf"},   {0x070F, 0x070F, "Cf"},   {0x0890, 0x0891, "Cf"},
    {0x08E2, 0x08E2, "Cf"},   {0x180E, 0x180E, "Cf"},   {0x200B, 0x200F, "Cf"},   {0x2028, 0x2028, "Zl"},
    {0x2029, 0x2029, "Zp"},   {0x202A, 0x202E, "Cf"},   {0x2060, 0x2064, "Cf"},   {0x2066, 0x206F, "Cf"},
    {0xFEFF, 0xFEFF, "Cf"},   {0xFFF9, 0xFFFB, "Cf"},   {0x110BD, 0x110BD, "Cf"}, {0x110CD, 0x110CD, "Cf"},
    {0x13430, 0x13438, "Cf"}, {0x1BCA0, 0x1BCA3, "Cf"}, {0x1D173, 0x1D17A, "Cf"}, {0xE0001, 0xE0001, "Cf"},
    {0xE0020, 0xE007F, "Cf"},
};

std::string hex(unsigned value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*X", digits, value);
  return buf;
}

}  // namespace

namespace {

// How many bytes of s[i..] agree with a well-formed UTF-8 sequence of 2 to 4 bytes, which needs `want` bytes (0 when
// s[i] cannot start one: an ASCII byte, a continuation byte, 0xc0, 0xc1, 0xf5..0xff). The sequence is whole when the
// count is `want`; less is Unicode's maximal subpart of an ill-formed one (at least its first byte).
std::size_t utf8_matched(std::string_view s, std::size_t i, std::size_t& want) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  want = 0;
  if (c >= 0xc2 && c <= 0xdf) {
    want = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    want = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    want = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  std::size_t k = 1;
  for (; k < want && i + k < s.size(); ++k) {
    if (byte(i + k) < lo || byte(i + k) > hi) break;
    lo = 0x80;  // the third and fourth bytes: any continuation byte
    hi = 0xbf;
  }
  return k;
}

}  // namespace

std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  std::size_t want = 0;
  const std::size_t k = utf8_matched(s, i, want);
  return want > 0 && k == want ? want : 0;
}

std::string replace_invalid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    if (static_cast<unsigned char>(bytes[i]) < 0x80) {
      out += bytes[i++];
      continue;
    }
    std::size_t want = 0;
    const std::size_t k = utf8_matched(bytes, i, want);
    if (want > 0 && k == want) out.append(bytes.substr(i, k));
    else out += "\xef\xbf\xbd";  // U+FFFD REPLACEMENT CHARACTER for the maximal subpart
    i += std::max<std::size_t>(k, 1);
  }
  return out;
}

char32_t decode_utf8(std::string_view s, std::size_t i, std::size_t n) {
  const auto byte = [&](std::size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k])); };
  if (n == 1) return byte(0);
  char32_t c = byte(0) & (0x7f >> n);
  for (std::size_t k = 1; k < n; ++k) c = (c << 6) | (byte(k) & 0x3f);
  return c;
}

const char* invisible_category(char32_t c) {
  const auto* it = std::upper_bound(std::begin(kInvisible), std::end(kInvisible), c,
                                    [](char32_t v, const Range& r) { return v < r.first; });
  if (it == std::begin(kInvisible)) return nullptr;
  --it;
  return c <= it->last ? it->category : nullptr;
}

std::string name_character_problem(std::string_view name) {
  std::size_t i = 0;
  while (i < name.size()) {
    const auto b = static_cast<unsigned char>(name[i]);
    const std::size_t n = b < 0x80 ? 1 : utf8_sequence(name, i);
    if (n == 0) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02x", b);
      return "invalid UTF-8 (byte " + std::string(byte) + " at byte " + std::to_string(i) + ")";
    }
    const char32_t c = decode_utf8(name, i, n);
    if (const char* category = invisible_category(c)) {
      const std::string code = "U+" + hex(static_cast<unsigned>(c), 4);
      const std::string cat(category);
      if (cat == "Cc") return "a control character (" + code + ")";
      const char* what = cat == "Cf"   ? "a format character"
                         : cat == "Zl" ? "a line separator"
                                       : "a paragraph separator";
      return std::string(what) + " (" + code + ", category " + cat + ")";
    }
    i += n;
  }
  return "";
}

}  // namespace rpb

// rpb/core/unicode.h: decoding UTF-8 and the characters that may not appear in a name rpb makes a file or a
// folder of (controls, and the invisible format and separator characters that make a name read differently from
// what it is, such as U+202E RIGHT-TO-LEFT OVERRIDE).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rpb {

/// The length of the valid UTF-8 sequence of 2 to 4 bytes starting at s[i] (no overlong forms, no surrogates,
/// nothing past U+10FFFF), or 0 when s[i] does not start one (an ASCII byte included).
std::size_t utf8_sequence(std::string_view s, std::size_t i);

/// `bytes` as UTF-8 text: each maximal subpart of an ill-formed sequence (the longest start of a well-formed one, or
/// a single byte that starts none) replaced by U+FFFD REPLACEMENT CHARACTER, as Unicode recommends and Python's
/// bytes.decode("utf-8", errors="replace") does; valid UTF-8 passes unchanged.
///
/// @code
/// CHECK(rpb::replace_invalid_utf8("caf\xc3\xa9") == "caf\xc3\xa9");
/// CHECK(rpb::replace_invalid_utf8("\xd3n") == "\xef\xbf\xbdn");           // a lead byte without its continuation
/// CHECK(rpb::replace_invalid_utf8("\xe2\x82!") == "\xef\xbf\xbd!");       // one U+FFFD for a cut sequence
/// CHECK(rpb::replace_invalid_utf8("\xc0\x80") == "\xef\xbf\xbd\xef\xbf\xbd");  // an overlong form: byte by byte
/// @endcode
std::string replace_invalid_utf8(std::string_view bytes);

/// The code point of the valid UTF-8 sequence of `n` bytes (1 to 4, as utf8_sequence measured it) at s[i].
char32_t decode_utf8(std::string_view s, std::size_t i, std::size_t n);

/// The Unicode general category of `c` when it is one that a name must not hold: "Cc" (a control: U+0000..U+001F,
/// U+007F..U+009F), "Cf" (a format character: U+200B ZERO WIDTH SPACE, U+202E RIGHT-TO-LEFT OVERRIDE, U+FEFF, ...),
/// "Zl" (U+2028 LINE SEPARATOR) or "Zp" (U+2029 PARAGRAPH SEPARATOR); nullptr for any other code point.
const char* invisible_category(char32_t c);

/// What makes `name` unfit for a file or folder name rpb makes, as a message says it, or "" when nothing does:
/// "a control character (U+001B)", "a format character (U+202E, category Cf)", "a line separator (U+2028, category
/// Zl)", "invalid UTF-8 (byte 0xff at byte 3)". The first such character is named.
///
/// @code
/// CHECK(rpb::name_character_problem("t5_seed0") == "");
/// CHECK(rpb::name_character_problem("caf\xc3\xa9") == "");  // letters of any script pass
/// CHECK(rpb::name_character_problem("run\xe2\x80\xae") == "a format character (U+202E, category Cf)");
/// CHECK(rpb::name_character_problem("a\x1b") == "a control character (U+001B)");
/// CHECK(rpb::name_character_problem("a\xff") == "invalid UTF-8 (byte 0xff at byte 1)");
/// @endcode
std::string name_character_problem(std::string_view name);

}  // namespace rpb

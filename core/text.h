// rpb/core/text.h: user-controlled text made safe to print.
//
// Names and values that come from files or command lines (a dataset name in a checkpoint, a --set value,
// a run name) can hold terminal escape sequences, NUL bytes or megabytes of text. Every message that
// quotes such text passes it through printable() first.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rpb {

/// `text` with every byte a terminal would act on written as an escape (\n, \t, \r, \\, \xNN for the other control
/// bytes, DEL, the C1 controls U+0080..U+009F, the format and separator characters of invisible_category
/// (core/unicode.h: U+202E RIGHT-TO-LEFT OVERRIDE, U+200B, U+2028, ...) and bytes that are not part of valid UTF-8),
/// cut after `max_bytes` input bytes with "... (N bytes)" appended. Valid UTF-8 letters pass unchanged.
///
/// @code
/// CHECK(rpb::printable("step\x1b[2J") == "step\\x1b[2J");
/// CHECK(rpb::printable("a\nb") == "a\\nb");
/// CHECK(rpb::printable(std::string(300, 'x'), 4) == "xxxx... (300 bytes)");
/// CHECK(rpb::printable("pos\xc3\xa9") == "pos\xc3\xa9");
/// @endcode
std::string printable(std::string_view text, std::size_t max_bytes = 200);

/// A whole message made safe for a terminal, the last line of defence before it is printed: like printable(),
/// but newlines and tabs stay (a message keeps its lines) and backslashes stay single (the parts of the message
/// that already went through printable() read the same). Cut after `max_bytes` bytes with "... (N bytes)".
///
/// @code
/// CHECK(rpb::terminal_text("bad\x1b[2J\nsecond line") == "bad\\x1b[2J\nsecond line");
/// CHECK(rpb::terminal_text("already \\x1b escaped") == "already \\x1b escaped");
/// CHECK(rpb::terminal_text("csi \xc2\x9b") == "csi \\xc2\\x9b");
/// @endcode
std::string terminal_text(std::string_view text, std::size_t max_bytes = 8192);

/// Levenshtein distance (insertions, deletions and substitutions of bytes), for did-you-mean suggestions.
int edit_distance(std::string_view a, std::string_view b);

/// The word of `known` closest to `word` by edit_distance, when it is close enough to be what was meant
/// (at most max(2, |word| / 3) edits); "" otherwise. Ties go to the first in `known`.
///
/// @code
/// CHECK(rpb::closest("alibii", {"t5", "alibi", "rope"}) == "alibi");
/// CHECK(rpb::closest("transformer", {"t5", "alibi"}).empty());
/// @endcode
std::string closest(std::string_view word, const std::vector<std::string>& known);

/// `parts` with `separator` between each two, for lists in messages and help texts.
///
/// @code
/// CHECK(rpb::join({"markov", "lag", "kjv"}, ", ") == "markov, lag, kjv");
/// CHECK(rpb::join({}, ", ").empty());
/// @endcode
std::string join(const std::vector<std::string>& parts, std::string_view separator);

}  // namespace rpb

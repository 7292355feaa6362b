// rpb/train/data/passkey_prompt.cpp: a passkey_text prompt as the task's ids (see passkey_prompt.h).
#include "train/data/passkey_prompt.h"

#include "core/error.h"
#include "core/text.h"
#include "train/data/passkey.h"
#include "train/data/tokenizer.h"

namespace rpb::data {

namespace {

// The end of the run of ASCII digits at `i` in `s`.
std::size_t digits_end(const std::string& s, std::size_t i) {
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  return i;
}

// Checks the digits after a marker at byte `at` as the task lays a sample out (PasskeyLayout): the key marker
// once, followed by exactly `digits` digits; the query marker once, after the key block, followed by at most `digits`
// (the start of the answer).
void check_marker(int64_t marker, std::size_t at, int64_t found, int64_t digits, bool key_seen) {
  const std::string name = passkey_marker_text(marker);
  const std::string where = name + " at byte " + std::to_string(at);
  if (marker == kPasskeyKeyMarker) {
    RPB_CHECK(!key_seen, "--prompt", "a second ", where, "; expected one key block (", name, " and the key's ",
              digits, " digits)");
    RPB_CHECK(found == digits, "--prompt", where, " is followed by ", found, " digits; expected the key's ", digits,
              " (task.passkey_digits of the checkpoint's run)");
    return;
  }
  const std::string key = passkey_marker_text(kPasskeyKeyMarker);
  RPB_CHECK(key_seen, "--prompt", where, " asks for the key, and no ", key, " block comes before it; expected ", key,
            " and its ", digits, " digits earlier in the prompt");
  RPB_CHECK(found <= digits, "--prompt", where, " is followed by ", found, " digits; expected at most the key's ",
            digits, " (the start of the answer)");
}

}  // namespace

std::vector<int64_t> encode_passkey_prompt(const Tokenizer& tokenizer, const std::string& prompt,
                                           int64_t digits) {
  RPB_CHECK(!prompt.empty(), "--prompt", "expected some text, found an empty prompt");
  const int64_t base = tokenizer.vocab();
  std::vector<int64_t> ids;
  bool key_seen = false;
  std::size_t i = 0;
  while (i < prompt.size()) {
    std::size_t next = std::string::npos;
    int64_t marker = 0;
    for (const int64_t m : {kPasskeyKeyMarker, kPasskeyQueryMarker})
      if (const std::size_t at = prompt.find(passkey_marker_text(m), i); at < next) next = at, marker = m;
    const std::string text = prompt.substr(i, next == std::string::npos ? std::string::npos : next - i);
    for (const int32_t id : tokenizer.encode(text)) ids.push_back(id);
    if (next == std::string::npos) break;
    const std::size_t first = next + std::string(passkey_marker_text(marker)).size();
    i = digits_end(prompt, first);
    check_marker(marker, next, static_cast<int64_t>(i - first), digits, key_seen);
    ids.push_back(base + marker);
    for (std::size_t d = first; d < i; ++d) ids.push_back(base + (prompt[d] - '0'));
    key_seen = key_seen || marker == kPasskeyKeyMarker;
    RPB_CHECK(marker != kPasskeyQueryMarker || i == prompt.size(), "--prompt", "\"",
              printable(prompt.substr(i), 40), "\" follows ", passkey_marker_text(marker), " at byte ", next,
              "; expected the prompt to end with the query and at most the answer's first digits (the model "
              "generates the rest)");
  }
  return ids;
}

}  // namespace rpb::data

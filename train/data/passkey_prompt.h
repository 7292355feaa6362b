// rpb/train/data/passkey_prompt.h: a passkey_text prompt written as text, with the key and the question marked, encoded
// as the task's ids (`rpb generate --prompt` on a passkey_text checkpoint).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rpb::data {

class Tokenizer;

/// The ids of a passkey_text prompt: its text encoded by `tokenizer`, each "<key>" and "<query>"
/// (passkey_marker_text) the task's marker id, and the digits right after a marker the task's digit ids (the key, or
/// the start of an answer); the task's ids follow the tokenizer's (PasskeyTask). The markers must be laid out as the
/// task's samples lay them out for a key of `digits` digits (PasskeyLayout): at most one "<key>", followed by exactly
/// `digits` digits; at most one "<query>", after the key block, followed by at most `digits` digits and nothing
/// else. Throws rpb::Error naming --prompt (the flag that gave it), the marker and its byte for any other prompt, and
/// for an empty one.
std::vector<int64_t> encode_passkey_prompt(const Tokenizer& tokenizer, const std::string& prompt, int64_t digits);

}  // namespace rpb::data

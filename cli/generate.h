// rpb/cli/generate.h: `rpb generate`, tokens from a trained checkpoint (KV-cache decoding, nn/generate.h).
#pragma once

#include "cli/commands.h"

namespace rpb {

/// What `rpb generate` was asked.
struct GenerateRequest {
  std::string checkpoint;  // a checkpoint file, a run folder (its `latest`) or a run folder's `latest` file
  std::string prompt;      // kjv, text, passkey_text: text; markov, lag, passkey: token ids separated by spaces or commas
  int64_t tokens = 64;     // new tokens
  double temperature = 1.0;
  int64_t top_k = 0;
  uint64_t seed = 0;
  bool no_cache = false;   // recompute the whole sequence per token (for comparison)
  std::string kjv_path;    // kjv runs: the text whose characters are the vocabulary ("": the default path)
  bool other_text = false; // kjv runs: a text other than the training text is intended (train/checkpoint/data_identity.h)
};

/// Generates from the checkpoint: kjv prints text (prompt and new characters, control bytes escaped), markov and lag
/// print token ids, all on stdout; the speed goes to stderr. A bad --prompt returns 2 (a usage error) after saying
/// why on stderr; other errors throw rpb::Error. Reads the checkpoint (and the kjv text) only; writes nothing.
int cmd_generate(const GenerateRequest& request);

/// Adds `rpb generate`'s arguments to `cmd` (the registry's row in cli/commands.cpp).
CommandRunner add_generate_command(CLI::App& cmd);

/// The token ids of a markov or lag prompt: decimal ids separated by spaces and/or commas, each in [0, vocab).
/// Throws rpb::Error naming --prompt, the offending word and the vocabulary.
std::vector<int64_t> parse_token_prompt(const std::string& prompt, int64_t vocab);

namespace data {
class Tokenizer;
}

/// The ids of a passkey_text prompt: its text encoded by `tokenizer`, each "<key>" and "<query>"
/// (data::passkey_marker_text) the task's marker id, and the digits right after a marker the task's digit ids (the
/// key, or the start of an answer); the task's ids follow the tokenizer's (data::PasskeyTask). The markers must be
/// laid out as the task's samples lay them out for a key of `digits` digits (data::PasskeyLayout): at most one
/// "<key>", followed by exactly `digits` digits; at most one "<query>", after the key block, followed by at most
/// `digits` digits and nothing else. Throws rpb::Error naming --prompt, the marker and its byte for any other
/// prompt, and for an empty one.
std::vector<int64_t> encode_passkey_prompt(const data::Tokenizer& tokenizer, const std::string& prompt,
                                           int64_t digits);

}  // namespace rpb

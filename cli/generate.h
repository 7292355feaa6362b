// rpb/cli/generate.h: `rpb generate`, tokens from a trained checkpoint (KV-cache decoding, nn/generate.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/command.h"

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

}  // namespace rpb

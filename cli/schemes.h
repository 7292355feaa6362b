// rpb/cli/schemes.h: `rpb schemes`, the registered position schemes and their options, from the registry
// (nn/position/scheme.h) and the option descriptors (nn/position/options.h): what other languages' copies of the
// registry (python/rpb_torch.py) and the tests that check them read.
#pragma once

#include <nlohmann/json.hpp>

#include <iostream>

#include "cli/command.h"

namespace rpb {

/// The registry as JSON:
///   {"schemes": [{"name", "dims" (the dims it runs at: [1], [2] or [1, 2]), "kind", "label", "color" ("#rrggbb"),
///                 "marker" (a matplotlib marker; "color" is the scheme's colour in figures), "description",
///                 "per_layer", "row_table", "embedding" (its own recipe: "gpt2" or "scaled"), "window_bias" (or
///                 null), "length_option" (or null), "options": [the keys it reads]}, ...],
///    "options": [{"key", "table" ("position" or "grid"), "type" ("integer", "real", "boolean", "choice"),
///                 "default", "min", "max", "min_open", "max_open" (integers and reals), "choices" (a choice),
///                 "doc", "loaded" (false: only initialisation reads it), "bias_flag" (or null), "schemes"}, ...],
///    "tasks": [{"name", "dims", "algorithmic" (its L0, PositionOptions::train_length, counts a sample's tokens,
///               not run.length)}, ...]}
/// in the registry's, the descriptors' and the task registry's orders.
nlohmann::ordered_json schemes_json();

/// Prints the schemes and their options as text, or with `json` schemes_json() on one line; returns 0.
int run_schemes_command(bool json, std::ostream& out = std::cout);

/// Adds `rpb schemes`'s options to `cmd` (the registry's row in cli/commands.cpp).
CommandRunner add_schemes_command(CLI::App& cmd);

}  // namespace rpb

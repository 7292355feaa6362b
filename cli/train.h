// rpb/cli/train.h: `rpb train`, one run trained from a TOML config, then evaluated.
#pragma once

#include <string>
#include <vector>

#include "cli/command.h"

namespace rpb {

/// Trains the run `config_path` describes (with `overrides` applied), then evaluates it. `resume` continues
/// from the run folder's `latest`, a non-empty `resume_from` from that checkpoint file (see Run::train); `extend`
/// (--extend) lets a resumed run have another run.steps, `overwrite` (--overwrite) moves a folder holding another
/// run aside (StartOptions); a non-empty `init_from` (--init-from) sets run.init_from: a fine-tune starting from
/// that checkpoint's parameters (Run::train).
int cmd_train(const std::string& config_path, bool resume, const std::string& resume_from,
              const std::vector<std::string>& overrides, bool extend = false, bool overwrite = false,
              const std::string& init_from = "");

/// Adds `rpb train`'s arguments to `cmd` (the registry's row in cli/commands.cpp).
CommandRunner add_train_command(CLI::App& cmd);

}  // namespace rpb

// rpb/cli/common_options.h: the arguments several subcommands share: the checkpoint, --max-memory, --device and
// --overwrite.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace rpb {

/// The positional argument `checkpoint` (a checkpoint file, a run folder or a run folder's `latest`), required,
/// bound to `value`.
void add_checkpoint_argument(CLI::App& cmd, std::string& value);

/// --max-memory SIZE, on every command that builds a model, bound to `value`.
void add_memory_option(CLI::App& cmd, std::string& value);
/// Sets the memory budget from --max-memory's `value`, or from the available memory when it is empty.
void apply_memory_option(const std::string& value);

/// --device cpu|cuda, bound to `value`: run.device (train, extrapolate: an override of the config; eval: where to
/// evaluate); `what` is its help.
void add_device_option(CLI::App& cmd, std::string& value, const std::string& what);
/// The --set override --device stands for, appended to `overrides` (after the user's --set, so it wins); nothing
/// when `device` is empty.
void apply_device_option(const std::string& device, std::vector<std::string>& overrides);

/// --overwrite, on the commands that train, bound to `value`.
void add_overwrite_option(CLI::App& cmd, bool& value);

}  // namespace rpb

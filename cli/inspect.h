// rpb/cli/inspect.h: `rpb inspect`, a readable report of a checkpoint.
#pragma once

#include <ostream>
#include <string>

namespace rpb {

/// Prints the checkpoint's step, config, metrics summary, every parameter's name, shape and
/// statistics, and each learned position table per head against relative distance (a table
/// and a text bar plot).
void inspect_checkpoint(const std::string& file, std::ostream& out);

}  // namespace rpb

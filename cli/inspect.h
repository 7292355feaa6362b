// rpb/cli/inspect.h: `rpb inspect`, a readable report of a checkpoint.
#pragma once

#include <ostream>
#include <string>

#include "cli/command.h"

namespace rpb {

/// Prints the checkpoint's step, the digest of its stored config recomputed beside the config_digest it stored
/// (a mismatch, a config edited after the checkpoint was written, is flagged "MISMATCH" and warned about on
/// stderr), its config, metrics summary, every parameter's name, shape and statistics, and each learned position
/// table per head against relative distance (a table and a text bar plot). With `plot_path`, first draws each head's
/// bias into that file (draw_bias, cli/plot_bias.h: python/rpb_plot/) and says so at the end; a `plot_path` that
/// train/run/output_file.h refuses (the checkpoint itself, a device, a file of a run folder) or that is no .pdf,
/// .png or .svg is refused before the checkpoint is read. `plot_flag` names the flag in messages ("--plot", or its
/// alias "--svg").
void inspect_checkpoint(const std::string& file, std::ostream& out, const std::string& plot_path = "",
                        const std::string& plot_flag = "--plot");

/// `rpb inspect`: the report of the checkpoint `checkpoint` names (a file, a run folder or its `latest`) on stdout,
/// inspect_checkpoint's, with `plot_path` and `plot_flag` as it takes them; returns 0.
int cmd_inspect(const std::string& checkpoint, const std::string& plot_path = "",
                const std::string& plot_flag = "--plot");

/// Adds `rpb inspect`'s arguments to `cmd` (the registry's row in cli/commands.cpp).
CommandRunner add_inspect_command(CLI::App& cmd);

}  // namespace rpb

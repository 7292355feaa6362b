// rpb/cli/inspect.h: `rpb inspect`, a readable report of a checkpoint.
#pragma once

#include <ostream>
#include <string>

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

}  // namespace rpb

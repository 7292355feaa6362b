// rpb/cli/python_runner.h: drawing a figure with python/rpb_plot/ (matplotlib), from a plot request.
//
// rpb writes the request (the JSON object python/rpb_plot/ describes: "format" "rpb-plot-1", "kind",
// "outputs", "styles" and the block of its kind) to a file without a name (memfd) and runs
// `<python> <dir>/rpb_plot -` with it as standard input, without a shell (posix_spawn, argv as a vector). The Python
// is $RPB_PYTHON, else /usr/bin/python3 (Debian's, with Debian's python3-matplotlib), else python3 on PATH; the
// module's folder is $RPB_PYTHON_DIR, else the source tree's python/ (compiled in). The module saves each figure
// into a temp file in its output's folder (atomic_temp_path; the output's "direct": the module makes no temp file
// of its own, and its messages name the output's "name", the path asked for) that rpb renames over the output once
// the module succeeded, so an output is either the new figure or untouched; temp files of plots that were killed
// are removed before the next one of the same output (remove_dead_temp_files). Exit codes of the module: 0 done, 2 a
// bad request, 3 matplotlib is missing, else a failure.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/error.h"
#include "train/run/output_file.h"

namespace rpb {

/// No figure can be drawn here: no Python, or matplotlib is missing (the module's exit code 3, with the module's own
/// message, which says how to install it). A sweep warns with it and goes on; `rpb plot` and `inspect --plot` fail
/// with it.
class PlotUnavailable : public Error {
 public:
  using Error::Error;
};

/// The Python that draws: $RPB_PYTHON when set and not empty (a bare name is looked up on $PATH), else
/// /usr/bin/python3 when it is executable, else the first executable python3 on $PATH; "" when there is none.
std::string plot_python();

/// The folder of the rpb_plot package: $RPB_PYTHON_DIR when set and not empty, else the source tree's python/.
std::string plot_module_dir();

/// The figure format of `path` by its extension: "pdf", "png" or "svg" (any case). Throws rpb::UsageError naming
/// `flag` for another extension or none.
std::string figure_format(const std::string& path, const std::string& flag);

/// The "styles" block of a request: {"schemes": [...]}, the schemes of `rpb schemes --json` (cli/schemes.h
/// schemes_json: "name", "label", "dims" ([1], [2] or [1, 2]), "color", "marker", ...) in the registry's order.
nlohmann::ordered_json plot_styles();

/// One figure file a request writes.
struct PlotOutput {
  std::string path;  // the final path (figure_format names its format)
  /// Checked by check_output_file before the module runs and again before the rename; null for files rpb manages
  /// itself (the sweep's results.svg in its sweep folder).
  const OutputOptions* rules = nullptr;
};

/// Draws `request` (its "format", "kind", "styles" and kind block set; "outputs" is filled in here) into `outputs`:
/// checks each output (PlotOutput::rules), runs the module, and renames each temp file over its output. The module's
/// own messages (stderr and stdout) go to rpb's stderr when it succeeds and into the error when it fails. Throws
/// PlotUnavailable without Python or matplotlib, rpb::Error when the module is missing or fails (naming its exit
/// code and its last message lines); every temp file is removed on failure.
void draw_figures(nlohmann::ordered_json request, const std::vector<PlotOutput>& outputs);

}  // namespace rpb

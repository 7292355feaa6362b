// rpb/cli/commands.h: the subcommands of `rpb`, in one registry that main, --help and the message for an
// unknown subcommand read; and the bodies of `rpb train`, `eval`, `extrapolate` and `inspect`.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rpb {

/// What runs a parsed subcommand: returns the exit code; errors are thrown as rpb::Error (main reports
/// them and exits 1).
using CommandRunner = std::function<int()>;

/// One subcommand of `rpb`. Adding one: a function that adds its options and returns its runner (in the
/// command's own file) and a row of commands().
struct Command {
  const char* name;
  const char* help;
  /// Adds the command's arguments and options to `cmd`, bound to state the returned runner owns.
  CommandRunner (*add)(CLI::App& cmd);
};

/// Every subcommand, in the order `rpb --help` lists them.
const std::vector<Command>& commands();

/// --max-memory SIZE, on every command that builds a model, bound to `value`.
void add_memory_option(CLI::App& cmd, std::string& value);
/// Sets the memory budget from --max-memory's `value`, or from the available memory when it is empty.
void apply_memory_option(const std::string& value);

/// Trains the run `config_path` describes (with `overrides` applied), then evaluates it. `resume` continues
/// from the run folder's `latest`, a non-empty `resume_from` from that checkpoint file (see Run::train); `extend`
/// (--extend) lets a resumed run have another run.steps, `overwrite` (--overwrite) moves a folder holding another
/// run aside (StartOptions); a non-empty `init_from` (--init-from) sets run.init_from: a fine-tune starting from
/// that checkpoint's parameters (Run::train).
int cmd_train(const std::string& config_path, bool resume, const std::string& resume_from,
              const std::vector<std::string>& overrides, bool extend = false, bool overwrite = false,
              const std::string& init_from = "");
/// Perplexity of a checkpoint at `lengths` (empty: the config's multiples of the train length). A kjv run reads
/// the text at `kjv_path` ("": the default path), never the path stored in the checkpoint.
int cmd_eval(const std::string& checkpoint, const std::vector<int64_t>& lengths, const std::string& kjv_path = "");
/// The perplexity-vs-length sweep: trains or reuses every run, prints the table, writes results.*. With `overwrite`
/// (--overwrite), a run folder trained with another config is moved aside and the run trained afresh.
int cmd_extrapolate(const std::string& config_path, const std::vector<std::string>& overrides, bool overwrite = false);
/// A readable report of a checkpoint; with `plot_path`, its bias drawn there (`plot_flag`: "--plot" or "--svg").
int cmd_inspect(const std::string& checkpoint, const std::string& plot_path = "",
                const std::string& plot_flag = "--plot");

}  // namespace rpb

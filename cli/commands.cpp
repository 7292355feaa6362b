// rpb/cli/commands.cpp: the subcommand registry, a row per command; it includes every command's header, and no
// header of cli/ includes it (cli/command.h declares the table).
#include "cli/command.h"

#include "cli/bias.h"
#include "cli/demo.h"
#include "cli/eval.h"
#include "cli/extrapolate.h"
#include "cli/generate.h"
#include "cli/inspect.h"
#include "cli/plot.h"
#include "cli/results.h"
#include "cli/schemes.h"
#include "cli/train.h"

namespace rpb {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"demo", "Train a small MLP on two spirals with rpb's autograd engine", add_demo_command},
      {"bias", "Print a position scheme's bucket/index matrix, or its bias if it is fixed", add_bias_command},
      {"schemes", "List the position schemes and their options (defaults, limits), from the registry",
       add_schemes_command},
      {"train", "Train a model from a TOML config (checkpoints in its run folder)", add_train_command},
      {"eval", "Perplexity of a checkpoint at several lengths (recorded in its run folder's eval/; a long one shows its progress on stderr)", add_eval_command},
      {"generate", "Generate tokens from a checkpoint (KV-cache decoding)", add_generate_command},
      {"extrapolate", "Train every position scheme and print perplexity against length", add_extrapolate_command},
      {"inspect", "Report a checkpoint: config, metrics, parameters, bias tables", add_inspect_command},
      {"plot", "Draw runs' training curves (their metrics.csv) or a sweep's figure (its results.json) with matplotlib",
       add_plot_command},
      {"results", "Print a sweep's tables again from its results.json (markdown, or LaTeX as results.tex)",
       add_results_command},
  };
  return table;
}

}  // namespace rpb

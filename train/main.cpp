// build/rpb: the command-line interface.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "core/error.h"
#include "nn/position.h"
#include "train/bias_cmd.h"
#include "train/commands.h"
#include "train/demo.h"
#include "train/version.h"

int main(int argc, char** argv) {
  // Errors and progress go to stderr; stdout carries only results (tables, reports, JSON).
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("", std::make_shared<spdlog::sinks::stderr_color_sink_mt>()));
  CLI::App app{"rpb: train and study relative-position-bias attention"};
  app.set_version_flag("--version", std::string("rpb ") + rpb::version());
  app.require_subcommand(1);

  rpb::DemoOptions demo;
  CLI::App* demo_cmd = app.add_subcommand("demo", "Train a small MLP on two spirals with rpb's autograd engine");
  demo_cmd->add_option("--steps", demo.steps, "SGD steps")->check(CLI::Range(1, 100000000));
  demo_cmd->add_option("--hidden", demo.hidden, "hidden width")->check(CLI::Range(1, 65536));
  demo_cmd->add_option("--lr", demo.lr, "learning rate")->check(CLI::Range(1e-12, 1e3));
  demo_cmd->add_option("--seed", demo.seed, "random seed");
  demo_cmd->add_option("--log-every", demo.log_every, "steps between progress lines (0: none)")->check(CLI::Range(0, 100000000));

  rpb::BiasOptions bias;
  CLI::App* bias_cmd =
      app.add_subcommand("bias", "Print a position scheme's bucket/index matrix, or its bias if it is fixed");
  std::string schemes;
  for (const std::string& n : rpb::nn::scheme_names(1)) schemes += (schemes.empty() ? "" : " | ") + n;
  bias_cmd->add_option("--scheme", bias.scheme, schemes);
  bias_cmd->add_option("--num-buckets", bias.num_buckets, "t5: number of buckets");
  bias_cmd->add_option("--max-distance", bias.max_distance, "t5: distance where the log buckets end");
  bias_cmd->add_flag("--causal", bias.causal, "t5: causal buckets (bidirectional without this flag)");
  bias_cmd->add_option("--query-length", bias.query_length, "number of queries (rows)");
  bias_cmd->add_option("--key-length", bias.key_length, "number of keys (columns)");
  bias_cmd->add_option("--query-offset", bias.query_offset, "position of the first query (a KV cache's length)");
  bias_cmd->add_option("--heads", bias.heads, "attention heads");
  bias_cmd->add_option("--max-relative-position", bias.max_relative_position, "shaw: clipping distance K");
  bias_cmd->add_option("--lambda", bias.lambda, "log_decay: the decay strength");
  bias_cmd->add_flag("--json", bias.json, "print one JSON object");

  std::string config_path, checkpoint_path;
  std::vector<std::string> overrides;
  bool resume = false;
  CLI::App* train_cmd = app.add_subcommand("train", "Train a model from a TOML config (checkpoints in its run folder)");
  train_cmd->add_option("config", config_path, "configs/*.toml")->required()->check(CLI::ExistingFile);
  train_cmd->add_flag("--resume", resume, "continue the run from its latest checkpoint");
  train_cmd->add_option("--set", overrides, "override a config key: --set model.d_model=256 (repeatable)");

  std::vector<int64_t> lengths;
  CLI::App* eval_cmd = app.add_subcommand("eval", "Perplexity of a checkpoint at several lengths");
  eval_cmd->add_option("checkpoint", checkpoint_path, "a checkpoint .h5 file")->required()->check(CLI::ExistingFile);
  eval_cmd->add_option("--lengths", lengths, "comma-separated lengths (multiples of the train length)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));

  CLI::App* extrapolate_cmd =
      app.add_subcommand("extrapolate", "Train every position scheme and print perplexity against length");
  extrapolate_cmd->add_option("config", config_path, "configs/extrapolation*.toml")->required()->check(CLI::ExistingFile);
  extrapolate_cmd->add_option("--set", overrides, "override a config key (repeatable)");

  CLI::App* inspect_cmd = app.add_subcommand("inspect", "Report a checkpoint: config, metrics, parameters, bias tables");
  inspect_cmd->add_option("checkpoint", checkpoint_path, "a checkpoint .h5 file")->required()->check(CLI::ExistingFile);

  // Name an unknown subcommand, or an unknown option before the subcommand, instead of CLI11's
  // generic "A subcommand is required".
  if (argc > 1) {
    const std::string first = argv[1];
    std::string known;
    bool found = first == "-h" || first == "--help" || first == "--version";
    for (CLI::App* sub : app.get_subcommands({})) {
      found |= sub->check_name(first);
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found) {
      std::cerr << "rpb: unknown " << (first[0] == '-' ? "option" : "subcommand") << " '" << first
                << "' (usage: rpb <subcommand> [options]; subcommands: " << known << ")\n"
                << "Run with --help for more information.\n";
      return 2;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and the usage hint
    return 2;     // usage errors exit 2
  }

  try {
    if (*train_cmd) return rpb::cmd_train(config_path, resume, overrides);
    if (*eval_cmd) return rpb::cmd_eval(checkpoint_path, lengths);
    if (*extrapolate_cmd) return rpb::cmd_extrapolate(config_path, overrides);
    if (*inspect_cmd) return rpb::cmd_inspect(checkpoint_path);
    if (*bias_cmd) return rpb::run_bias_command(bias, std::cout);  // 2 on a bad option value
    if (*demo_cmd) {
      const rpb::DemoResult r = rpb::run_demo(demo);
      spdlog::info("demo done: loss {:.4f} -> {:.4f}, training accuracy {:.1f}%", r.initial_loss, r.final_loss,
                   100.0 * r.accuracy);
      return r.accuracy > 0.5 ? 0 : 1;
    }
  } catch (const rpb::Error& e) {
    spdlog::error("{}", e.what());
    return 1;
  } catch (const std::exception& e) {
    spdlog::error("unexpected error: {}", e.what());
    return 1;
  }
  return 0;
}

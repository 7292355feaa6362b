// build/rpb: the command-line interface.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <iostream>

#include "core/error.h"
#include "train/demo.h"
#include "train/version.h"

int main(int argc, char** argv) {
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

  // Name an unknown subcommand instead of CLI11's generic "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (CLI::App* sub : app.get_subcommands({})) {
      found |= sub->check_name(argv[1]);
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found) {
      std::cerr << "rpb: unknown subcommand '" << argv[1] << "' (expected one of: " << known << ")\n"
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

// build/rpb: the command-line interface. The subcommands are the registry of cli/commands.h.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <map>
#include <new>

#include "cli/command_line.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/text.h"
#include "train/config/memory.h"
#include "train/dist/distributed.h"
#include "train/interrupt.h"
#include "train/io/version.h"

namespace {

// An unknown subcommand, or an unknown option before the subcommand, is named (instead of CLI11's generic "A
// subcommand is required"); returns true when the first argument after the global flags (-v) is fine.
bool first_argument_known(int argc, char** argv) {
  int i = 1;
  while (i < argc && (std::string(argv[i]) == "-v" || std::string(argv[i]) == "--verbose")) ++i;  // global flags
  if (i >= argc) return true;
  const std::string first = argv[i];
  if (first == "-h" || first == "--help" || first == "--version") return true;
  std::string known;
  for (const rpb::Command& c : rpb::commands()) {
    if (first == c.name) return true;
    known += (known.empty() ? "" : ", ") + std::string(c.name);
  }
  std::cerr << "rpb: unknown " << (first[0] == '-' ? "option" : "subcommand") << " '" << rpb::printable(first)
            << "' (usage: rpb <subcommand> [options]; subcommands: " << known << ")\n"
            << "Run with --help for more information.\n";
  return false;
}

// "rpb 0.1.0 (MPI: Open MPI v4.1.4)" or "rpb 0.1.0 (built without MPI: one process)".
std::string version_line() {
  const std::string mpi = rpb::dist::built_with_mpi() ? "MPI: " + rpb::dist::library_version()
                                                       : "built without MPI: one process";
  return std::string("rpb ") + rpb::version() + " (" + mpi + ")";
}

// Under MPI, a rank whose command failed ends the whole job (the others may be waiting for it in a collective);
// its message names the rank. Alone, it returns `code`.
int finish(int code) {
  if (code != 0 && code != 130 && code != 138 && code != 143 && rpb::dist::size() > 1) rpb::dist::abort(code);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  rpb::set_command_line(argc, argv);         // before MPI_Init may take its own arguments out
  const rpb::dist::Session mpi(argc, argv);  // MPI only when an MPI launcher started this process
  // Errors and progress go to stderr; stdout carries only results (tables, reports, JSON). Under MPI with more
  // than one rank, each line names its rank.
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("", std::make_shared<spdlog::sinks::stderr_color_sink_mt>()));
  if (rpb::dist::size() > 1)
    spdlog::set_pattern(fmt::format("[%Y-%m-%d %H:%M:%S.%e] [rank {}/{}] [%^%l%$] %v", rpb::dist::rank(),
                                    rpb::dist::size()));
  CLI::App app{"rpb: train and study relative-position-bias attention"};
  app.set_version_flag("--version", version_line());
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "log debug messages, and where in rpb's sources an error was raised");
  app.footer(
      "Exit status: 0 done; 1 the run failed (a bad config, file or checkpoint, a run error); 2 usage error (the "
      "command line); 130 / 143 interrupted by SIGINT / SIGTERM, 138 by SIGUSR1 (the run saved a checkpoint: resume "
      "it; under mpirun send SIGUSR1, which mpirun forwards to every rank).");
  app.require_subcommand(1);
  // CLI11 quotes the arguments it rejects: escaped like every message that reaches the terminal.
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return rpb::terminal_text(CLI::FailureMessage::simple(a, e));
  });
  std::map<const CLI::App*, rpb::CommandRunner> runners;
  for (const rpb::Command& c : rpb::commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    runners[sub] = c.add(*sub);
  }
  if (!first_argument_known(argc, argv)) return 2;

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

  if (verbose) spdlog::set_level(spdlog::level::debug);
  try {
    for (const auto& [sub, run] : runners)
      if (*sub) return finish(run());
  } catch (const rpb::Interrupted& e) {
    return e.exit_code();  // the run has logged where it stopped and how to resume
  } catch (const rpb::Error& e) {
    // The last line of defence: whatever user text a message quotes, no control byte reaches the terminal.
    spdlog::error("{}", rpb::terminal_text(e.message()));
    if (!e.location().empty()) spdlog::debug("raised at {}", e.location());
    return finish(dynamic_cast<const rpb::UsageError*>(&e) ? 2 : 1);  // usage errors exit 2
  } catch (const std::bad_alloc&) {
    // An allocation the memory estimate did not foresee (or a limit it cannot see, such as ulimit -v): named by
    // the estimate's largest part and its key.
    spdlog::error("{}", rpb::terminal_text(rpb::out_of_memory_message()));
    return finish(1);
  } catch (const std::exception& e) {
    spdlog::error("unexpected error: {}", rpb::terminal_text(e.what()));
    return finish(1);
  }
  return 0;
}

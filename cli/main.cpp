// build/rpb: the command-line interface. The subcommands are the registry of cli/commands.h.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <iostream>
#include <map>
#include <new>
#include <sstream>

#include "cli/command_line.h"
#include "train/io/provenance.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/text.h"
#include "train/config/memory.h"
#include "train/dist/distributed.h"
#include "train/interrupt.h"
#include "train/io/version.h"
#include "train/run/log_format.h"

namespace {

// An unknown subcommand, or an unknown option before the subcommand, is named (instead of CLI11's generic "A
// subcommand is required"); returns "" when the first argument after the global flags (-v) is fine, else the
// message (its lines end with '\n').
std::string unknown_first_argument(int argc, char** argv) {
  int i = 1;
  while (i < argc && (std::string(argv[i]) == "-v" || std::string(argv[i]) == "--verbose")) ++i;  // global flags
  if (i >= argc) return "";
  const std::string first = argv[i];
  if (first == "-h" || first == "--help" || first == "--version") return "";
  std::string known;
  for (const rpb::Command& c : rpb::commands()) {
    if (first == c.name) return "";
    known += (known.empty() ? "" : ", ") + std::string(c.name);
  }
  return "rpb: unknown " + std::string(first[0] == '-' ? "option" : "subcommand") + " '" + rpb::printable(first) +
         "' (usage: rpb <subcommand> [options]; subcommands: " + known + ")\nRun with --help for more information.\n";
}

// "rpb 0.1.0 (MPI: Open MPI v4.1.4)" or "rpb 0.1.0 (built without MPI: one process)".
std::string version_line() {
  const std::string mpi = rpb::dist::built_with_mpi() ? "MPI: " + rpb::dist::library_version()
                                                       : "built without MPI: one process";
  return std::string("rpb ") + rpb::version() + " (" + mpi + ")";
}

// How long a rank whose command failed or stopped waits for the other ranks to end too (rpb::dist::settle_ending)
// before it ends the job with MPI_Abort: ranks that meet an error alike (a config, a run folder) arrive within
// moments of each other.
constexpr std::chrono::seconds kSettleWait{10};

// 130, 138, 143: a run stopped by SIGINT, SIGUSR1 or SIGTERM after saving its checkpoint (train/interrupt.h).
bool is_stop(int code) { return code == 130 || code == 138 || code == 143; }

void log_error(const std::string& message, const std::string& location) {
  if (message.empty()) return;
  spdlog::error("{}", message);
  if (!location.empty()) spdlog::debug("raised at {}", location);
}

// Rank 0, after every rank ended (`s`): the message of each rank once (the same error met by every rank is printed
// once; a different one names its rank), and what a clean stop of every rank exits with.
void report_settled(const rpb::dist::Settled& s, const std::string& location, int code) {
  log_error(s.messages[0], location);
  for (std::size_t r = 1; r < s.messages.size(); ++r)
    if (!s.messages[r].empty() && s.messages[r] != s.messages[0]) spdlog::error("rank {}: {}", r, s.messages[r]);
  if (code == 0 && std::any_of(s.codes.begin(), s.codes.end(), is_stop))
    spdlog::info("every rank stopped cleanly: exit status 0 (under mpirun any other status reads as an aborted job; "
                 "the run's log above says how to resume it)");
}

// The exit status of this process once its command ended with `code` (0: done) and `message` (printed here; ""
// when the command printed its own). Alone: `code`. Under MPI with more than one rank, the ranks settle: when
// every rank has ended (an error they all met alike, a stop they all made, or done), rank 0 prints the messages
// and all exit through MPI_Finalize with the same status: the largest error code, else 0 (a clean stop exits 0,
// as Open MPI's mpirun reports a job with any non-zero status as aborted). A rank that failed alone (the others
// wait for it in a collective, or work on) prints its message, naming its rank, and ends the job (MPI_Abort).
int end_command(int code, const std::string& message, const std::string& location = "") {
  if (rpb::dist::size() <= 1) {
    log_error(message, location);
    return code;
  }
  std::signal(SIGUSR1, SIG_IGN);  // a stop forwarded by mpirun: a rank whose command has ended has nothing to save
  const rpb::dist::Settled s = rpb::dist::settle_ending(code, message, kSettleWait);
  if (!s.every_rank) {
    log_error(message, location);
    rpb::dist::abort(code);
  }
  int status = 0;
  for (const int c : s.codes)
    if (!is_stop(c)) status = std::max(status, c);
  if (rpb::dist::rank() == 0) report_settled(s, location, status);
  return status;
}

// A usage error found before the command runs (`text`, as CLI11 words it): printed as it is by one process; under
// MPI through end_command, so that it is printed once, and one rank's mistake (mpirun's MPMD form) ends the job.
int usage_error(const std::string& text) {
  if (rpb::dist::size() <= 1) {
    std::cerr << text;
    return 2;
  }
  std::string message = text;
  while (!message.empty() && message.back() == '\n') message.pop_back();
  return end_command(2, message);
}

}  // namespace

int main(int argc, char** argv) {
  rpb::set_process_command({argv, argv + argc});         // before MPI_Init may take its own arguments out
  const rpb::dist::Session mpi(argc, argv);  // MPI only when an MPI launcher started this process
  // Errors and progress go to stderr; stdout carries only results (tables, reports, JSON). Under MPI with more
  // than one rank, each line names its rank.
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("", std::make_shared<spdlog::sinks::stderr_color_sink_mt>()));
  spdlog::set_pattern(rpb::log_pattern(rpb::dist::rank(), rpb::dist::size(), /*colour=*/true));
  CLI::App app{"rpb: train and study relative-position-bias attention"};
  app.set_version_flag("--version", version_line());
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "log debug messages, and where in rpb's sources an error was raised");
  app.footer(
      "Exit status: 0 done; 1 the run failed (a bad config, file or checkpoint, a run error); 2 usage error (the "
      "command line); 130 / 143 interrupted by SIGINT / SIGTERM, 138 by SIGUSR1 (the run saved a checkpoint: resume "
      "it; under mpirun send SIGUSR1, which mpirun forwards to every rank: when every rank stops cleanly, all exit 0, "
      "as mpirun reports any other status as an aborted job).");
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
  if (const std::string unknown = unknown_first_argument(argc, argv); !unknown.empty()) return usage_error(unknown);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    app.exit(e, out, err);  // the message and the usage hint
    return usage_error(err.str() + out.str());  // usage errors exit 2
  }

  if (verbose) spdlog::set_level(spdlog::level::debug);
  int code = 0;
  std::string message, location;  // what the command failed with; printed by end_command
  try {
    for (const auto& [sub, run] : runners)
      if (*sub) {
        code = run();
        break;
      }
  } catch (const rpb::Interrupted& e) {
    code = e.exit_code();  // the run has logged where it stopped and how to resume
  } catch (const rpb::Error& e) {
    // The last line of defence: whatever user text a message quotes, no control byte reaches the terminal.
    message = rpb::terminal_text(e.message());
    location = e.location();
    code = dynamic_cast<const rpb::UsageError*>(&e) ? 2 : 1;  // usage errors exit 2
  } catch (const std::bad_alloc&) {
    // An allocation the memory estimate did not foresee (or a limit it cannot see, such as ulimit -v): named by
    // the estimate's largest part and its key.
    message = rpb::terminal_text(rpb::out_of_memory_message());
    code = 1;
  } catch (const std::exception& e) {
    message = "unexpected error: " + rpb::terminal_text(e.what());
    code = 1;
  }
  return end_command(code, message, location);
}

// build/rpb: the command-line interface. The subcommands are the registry of cli/command.h.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <new>
#include <optional>
#include <sstream>

#include "cli/command_line.h"
#include "train/io/provenance.h"
#include "cli/command.h"
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

// "rpb 0.1.0 (MPI: Open MPI v4.1.4; CUDA 13.0 (sm_90))" or "rpb 0.1.0 (built without MPI: one process; CUDA not in
// this build)". It says what the build holds and does not start a GPU (one is asked for only when a command uses it).
std::string version_line() {
  const std::string mpi = rpb::dist::built_with_mpi() ? "MPI: " + rpb::dist::library_version()
                                                       : "built without MPI: one process";
  return std::string("rpb ") + rpb::version() + " (" + mpi + "; " + rpb::cuda_build_description() + ")";
}

// How long a rank whose command failed or stopped waits for the other ranks to end too (rpb::dist::settle_ending)
// before it ends the job with MPI_Abort: ranks that meet an error alike (a config, a run folder) arrive within
// moments of each other. RPB_SETTLE_WAIT_S, when set, replaces the default (settle_wait()).
std::chrono::milliseconds g_settle_wait{10'000};

// RPB_SETTLE_WAIT_S: seconds in [0.1, 600], or the default when unset.
std::chrono::milliseconds settle_wait() {
  const char* env = std::getenv("RPB_SETTLE_WAIT_S");
  if (env == nullptr) return g_settle_wait;
  char* end = nullptr;
  const double s = std::strtod(env, &end);
  RPB_CHECK(end != env && *end == '\0' && s >= 0.1 && s <= 600, "mpi",
            "RPB_SETTLE_WAIT_S must be a number of seconds in [0.1, 600], got '", rpb::printable(env), "'");
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
}

// 130, 138, 143: a run stopped by SIGINT, SIGUSR1 or SIGTERM after saving its checkpoint (train/interrupt.h).
bool is_stop(int code) { return code == 130 || code == 138 || code == 143; }

void log_error(const std::string& message, const std::string& location) {
  if (message.empty()) return;
  spdlog::error("{}", message);
  if (!location.empty()) spdlog::debug("raised at {}", location);
}

// "rank 2" or "ranks 0, 3".
std::string rank_list(const std::vector<std::size_t>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

// Rank 0, after every rank ended (`s`): each distinct message once (one every rank met as it is, any other naming
// its ranks), and what a clean stop exits with.
void report_settled(const rpb::dist::Settled& s, const std::string& location, int code) {
  std::vector<std::string> distinct;
  for (const std::string& m : s.messages)
    if (!m.empty() && std::find(distinct.begin(), distinct.end(), m) == distinct.end()) distinct.push_back(m);
  for (const std::string& m : distinct) {
    std::vector<std::size_t> ranks;
    for (std::size_t r = 0; r < s.messages.size(); ++r)
      if (s.messages[r] == m) ranks.push_back(r);
    if (ranks.size() == s.messages.size()) log_error(m, location);
    else if (ranks[0] == 0) log_error(rank_list(ranks) + ": " + m, location);
    else spdlog::error("{}: {}", rank_list(ranks), m);
  }
  std::vector<std::size_t> stopped;
  for (std::size_t r = 0; r < s.codes.size(); ++r)
    if (is_stop(s.codes[r])) stopped.push_back(r);
  if (code != 0 || stopped.empty()) return;
  const std::string who = stopped.size() == s.codes.size() ? "every rank stopped cleanly"
                                                           : rank_list(stopped) + " stopped cleanly, the others finished";
  spdlog::info("{}: exit status 0 (under mpirun any other status reads as an aborted job; the run's log above says "
               "how to resume it)",
               who);
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
  const rpb::dist::Settled s = rpb::dist::settle_ending(code, message, g_settle_wait);
  if (!s.every_rank) {
    log_error(message, location);
    if (code != 0)
      spdlog::error("the other ranks did not end within {:g} s; ending the job (MPI_Abort)",
                    std::chrono::duration<double>(g_settle_wait).count());
    else
      spdlog::error("MPI failed while the ranks settled their ending; ending the job (MPI_Abort)");
    rpb::dist::abort(code != 0 ? code : 1);  // MPI_Abort(0) could end the job with status 0
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
  std::optional<rpb::dist::Session> mpi;  // MPI only when an MPI launcher started this process
  try {
    mpi.emplace(argc, argv);
    // mpirun forwards SIGUSR1 to every rank: from here on a rank records it, and a run stops at its next step.
    if (rpb::dist::size() > 1) rpb::record_sigusr1();
  } catch (const rpb::Error& e) {  // MPI did not start: this rank ends the job rather than leave the others waiting
    std::cerr << "rpb: " << rpb::terminal_text(e.message()) << "\n";
    rpb::dist::abort(1);
  }
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
  } catch (const CLI::Success& e) {  // --help, --help-all, --version: printed by rank 0 alone
    return rpb::dist::rank() == 0 ? app.exit(e) : e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    app.exit(e, out, err);  // the message and the usage hint
    return usage_error(err.str() + out.str());  // usage errors exit 2
  }

  if (verbose) spdlog::set_level(spdlog::level::debug);
  int code = 0;
  std::string message, location;  // what the command failed with; printed by end_command
  try {
    g_settle_wait = settle_wait();
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

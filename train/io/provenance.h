// rpb/train/io/provenance.h: where a result came from: the rpb that made it (version, git commit), the command
// line it ran and when. results.json, results.csv and eval records carry it (train/sweep/results.h,
// train/run/eval_record.h); checkpoints carry the commit beside rpb_version (train/checkpoint/checkpoint.h).
#pragma once

#include <string>
#include <vector>

#include "train/io/json_text.h"

namespace rpb {

/// The provenance block of a results file or an eval record.
struct Provenance {
  std::string rpb_version;  // version() of the rpb that wrote the file: "0.1.0"
  std::string commit;       // its build_commit(): 40 hex digits, "-dirty" appended, or "unknown"
  std::string command;      // the command line as run, shell-quoted words ("build/rpb extrapolate my.toml"); "" when
                            // rpb runs as a library (no command line was set)
  std::string date;         // when the file was written: ISO 8601 UTC to the second, "2025-01-31T12:34:56Z"
  /// True for the provenance of a file written before rpb recorded one (every field empty).
  bool empty() const { return rpb_version.empty() && commit.empty() && command.empty() && date.empty(); }
};

/// The provenance of a file written now by this rpb: version(), build_commit(), process_command() shell-quoted
/// (shell_command) and utc_now_iso8601().
Provenance current_provenance();

/// The provenance as JSON, members in this order:
///   {"rpb_version": "0.1.0", "commit": "<40 hex>[-dirty]" | "unknown", "command": "build/rpb extrapolate x.toml",
///    "date": "2025-01-31T12:34:56Z"}
Json provenance_object(const Provenance& p);
/// The provenance `in` holds (an object of provenance_object's four strings). Throws rpb::Error naming the key
/// for a missing member or one of another type.
Provenance provenance_from_json(const JsonIn& in);

/// The names of provenance_object's members, in order: what results.csv's provenance columns are called and what
/// scripts/same_results.sh ignores when it compares two builds.
inline constexpr const char* kProvenanceFields[] = {"rpb_version", "commit", "command", "date"};

/// Remembers the words the process was started with (cli/main.cpp sets them before parsing, argv[0] as typed; empty when rpb runs as a library);
/// process_command() returns them (empty until set).
void set_process_command(std::vector<std::string> argv);
const std::vector<std::string>& process_command();

/// `word` as one POSIX shell word: as it is when it holds only letters, digits and _./=,:@+-, else in single quotes
/// (a quote inside written '\'').
std::string shell_word(const std::string& word);
/// The words, each shell_word, joined by spaces.
std::string shell_command(const std::vector<std::string>& words);

/// The current time in UTC as ISO 8601 to the second, "2025-01-31T12:34:56Z": the one date format of rpb's files
/// (a checkpoint's "created", a provenance's "date").
std::string utc_now_iso8601();

}  // namespace rpb

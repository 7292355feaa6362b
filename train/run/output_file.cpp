// rpb/train/run/output_file.cpp: see output_file.h.
#include "train/run/output_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "core/text.h"
#include "train/data/task_registry.h"
#include "train/io/atomic_file.h"
#include "train/io/input_file.h"
#include "train/run/run_folder.h"

namespace fs = std::filesystem;

namespace rpb {

namespace {

// Whether `dir` holds an entry named `name`, whatever it is (lstat: a dangling link counts).
bool holds(const fs::path& dir, const std::string& name) {
  struct stat st{};
  return ::lstat((dir / name).c_str(), &st) == 0;
}

bool looks_like_run_folder(const fs::path& dir) {
  return holds(dir, kConfigFileName) || holds(dir, kLatestFileName) || holds(dir, kLockFileName) ||
         !checkpoint_files(dir.string()).empty();
}

bool looks_like_sweep_folder(const fs::path& dir) {
  if (holds(dir, kResultsJsonName) || holds(dir, kResultsCsvName)) return true;
  const std::vector<std::string> kinds = data::task_names();
  return std::any_of(kinds.begin(), kinds.end(), [&](const std::string& k) {
    std::error_code ec;
    return fs::is_directory(dir / k, ec);
  });
}

// What the file `name` is to rpb in a run folder ("a checkpoint", "the checkpoint pointer `latest`"), or "" when
// rpb does not manage that name. The temp files are ".<name>.tmp.<digits>" (train/io/atomic_file.h).
std::string run_file_role(const std::string& name) {
  if (is_checkpoint_name(name)) return "a checkpoint";
  if (name == kLatestFileName) return "the checkpoint pointer";
  if (name == kLockFileName) return "the run lock";
  if (name == kConfigFileName) return "the run's config";
  if (name == kTrainLogFileName) return "the training log";
  if (name == kMetricsFileName) return "the metrics file";
  if (name == "eval") return "the folder of evaluation records";
  if (atomic_temp_target(name)) return "the temp file of an atomic write";
  return "";
}

// The files `rpb extrapolate` writes into its sweep folder (train/sweep/results.cpp write_results).
bool is_sweep_result_name(const std::string& name) {
  const auto figure = std::find(std::begin(kSweepFigureNames), std::end(kSweepFigureNames), name);
  return name == kResultsCsvName || name == kResultsJsonName || name == kResultsTexName ||
         figure != std::end(kSweepFigureNames);
}

// Why rpb may not write `name` in the real folder `dir`, or "".
std::string managed_reason(const fs::path& dir, const std::string& name) {
  if (const std::string role = run_file_role(name); !role.empty() && looks_like_run_folder(dir))
    return "is " + role + " in the run folder " + printable(dir.string()) + " (rpb manages the files of a run folder)";
  if (is_sweep_result_name(name) && looks_like_sweep_folder(dir))
    return "is a result file of the sweep folder " + printable(dir.string()) + ", which `rpb extrapolate` writes";
  for (fs::path a = dir; a.has_relative_path(); a = a.parent_path())
    if (a.filename() == "eval" && looks_like_run_folder(a.parent_path()))
      return "is inside " + printable(a.string()) + ", the evaluation records of a run folder (rpb manages the files "
             "of a run folder)";
  return "";
}

}  // namespace

void check_output_file(const std::string& path, const OutputOptions& o) {
  const auto refuse = [&](const std::string& why) {
    throw UsageError(o.flag + " " + printable(path) + ": " + why + "; nothing written");
  };
  const fs::path p(path);
  const std::string name = p.filename().string();
  if (path.empty() || name.empty() || name == "." || name == "..")
    refuse("names a folder, expected a file name");
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode))
      refuse("is a symbolic link; rpb neither writes through a link nor replaces one: name the file itself");
    if (const std::string kind = mode_kind(st.st_mode); !kind.empty())
      refuse("is " + kind + ", not a regular file; rpb writes only regular files");
    for (const OutputOptions::Input& in : o.inputs) {
      struct stat is{};
      if (!in.path.empty() && ::stat(in.path.c_str(), &is) == 0 && is.st_dev == st.st_dev && is.st_ino == st.st_ino)
        refuse("is the " + in.what + " this command reads (" + printable(in.path) + ")");
    }
  } else if (errno != ENOENT) {
    refuse(std::string("cannot check it: ") + std::strerror(errno));
  }
  const fs::path parent = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  std::error_code ec;
  const fs::path dir = fs::canonical(parent, ec);
  if (ec || !fs::is_directory(dir, ec)) refuse("folder " + printable(parent.string()) + " does not exist");
  if (const std::string why = managed_reason(dir, name); !why.empty()) refuse(why);
}

void write_output_file(const std::string& path, std::string_view content, const OutputOptions& options) {
  check_output_file(path, options);
  write_file_atomically(path, content, options.flag + " " + printable(path));
}

}  // namespace rpb

#include "train/run/checkpoint_path.h"

#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "core/text.h"
#include "train/io/no_follow.h"
#include "train/run/latest.h"
#include "train/run/run_folder.h"

namespace fs = std::filesystem;

namespace rpb {

namespace {

bool is_regular_file_here(const fs::path& p) {
  std::error_code ec;
  return fs::symlink_status(p, ec).type() == fs::file_type::regular;
}

// The folder a path's file lives in ("." for a bare name).
fs::path folder_of(const fs::path& file) {
  const fs::path parent = file.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

}  // namespace

bool is_run_folder(const std::string& dir) {
  return is_regular_file_here(fs::path(dir) / kConfigFileName) && is_regular_file_here(fs::path(dir) / kLatestFileName);
}

CheckpointRef resolve_checkpoint(const std::string& arg) {
  const fs::path p(arg);
  std::error_code ec;
  std::string dir;
  if (fs::is_directory(p, ec)) dir = arg;
  else if (p.filename() == kLatestFileName) dir = folder_of(p).string();
  if (dir.empty()) {
    const std::string parent = folder_of(p).string();
    if (!is_run_folder(parent)) return {arg, ""};  // a file elsewhere (a shared one): the user's to link
    check_own_file(arg, "checkpoint");
    return {arg, parent};
  }
  const std::string file = read_latest(dir);
  RPB_CHECK(!file.empty(), "checkpoint", printable(arg), ": ", printable(dir),
            " has no `latest` checkpoint pointer (or an empty one): expected a run folder with a checkpoint, or a "
            "checkpoint file");
  check_own_file(file, "checkpoint");
  return {file, is_run_folder(dir) ? dir : ""};
}

}  // namespace rpb

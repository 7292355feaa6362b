// rpb/train/run/resume_point.cpp: see resume_point.h.
#include "train/run/resume_point.h"

#include <sys/stat.h>

#include <filesystem>

#include "core/error.h"
#include "train/io/no_follow.h"
#include "train/run/latest.h"
#include "train/run/run_folder.h"

namespace fs = std::filesystem;

namespace rpb {

namespace {

// What the folder's `latest` is, for a message: "" when there is none or it is empty.
std::string describe_latest(const std::string& run_dir) {
  struct stat st{};
  if (::lstat((fs::path(run_dir) / kLatestFileName).c_str(), &st) != 0) return "";
  if (S_ISLNK(st.st_mode)) return "`latest` (a symbolic link)";
  if (S_ISDIR(st.st_mode)) return "`latest` (a folder)";
  if (!S_ISREG(st.st_mode)) return "`latest` (not a regular file)";
  if (st.st_nlink != 1) return "`latest` (a file with another hard link)";
  try {
    const std::string file = read_latest(run_dir);
    return file.empty() ? "" : "`latest` naming " + fs::path(file).filename().string();
  } catch (const Error&) {
    return "`latest` (naming no checkpoint file of the folder)";
  }
}

// The checkpoint files of the folder, for a message: "3 checkpoint files, the newest step_00000030.h5".
std::string describe_checkpoints(const std::vector<CheckpointFile>& files) {
  if (files.empty()) return "";
  const std::string newest = fs::path(files.front().path).filename().string();
  if (files.size() == 1) return newest;
  return std::to_string(files.size()) + " checkpoint files, the newest " + newest;
}

// What to do when `latest` cannot be resumed from: the newest checkpoint file that loads, to pass to
// --resume-from, or what to do when none does.
std::string advice(const std::string& run_dir, const std::vector<CheckpointFile>& files) {
  for (const CheckpointFile& f : files) {
    try {
      load_own_checkpoint(f.path, "train");
    } catch (const Error&) {
      continue;
    }
    return "the newest intact checkpoint is " + f.path + ": continue from it with `rpb train <config> --resume-from " +
           f.path + "` (which also points `latest` at it)";
  }
  if (files.empty())
    return "the folder holds no checkpoint file: remove " + (fs::path(run_dir) / kLatestFileName).string() +
           " to start the run afresh, or choose another run.name";
  return "no checkpoint file in " + run_dir +
         " loads: move them away to start the run afresh, or choose another run.name";
}

}  // namespace

Checkpoint load_own_checkpoint(const std::string& file, const std::string& op, FileDigest digest) {
  check_own_file(file, op);                    // the message names the op
  return load_checkpoint(file, true, digest);  // and the descriptor read is checked again: no file swapped in since
}

std::string run_folder_checkpoints(const std::string& run_dir) {
  std::string what = describe_checkpoints(checkpoint_files(run_dir));
  const std::string latest = describe_latest(run_dir);
  if (!latest.empty()) what += (what.empty() ? "" : "; ") + latest;
  return what;
}

void check_new_run_folder(const std::string& run_dir) {
  const std::string what = run_folder_checkpoints(run_dir);
  RPB_CHECK(what.empty(), "train", run_dir, " already holds checkpoints (", what,
            "); use --resume to continue it, choose another run.name, or pass --overwrite to move the folder aside "
            "(nothing is deleted) and start afresh");
}

std::optional<ResumePoint> resume_point(const std::string& run_dir, FileDigest digest) {
  const std::vector<CheckpointFile> files = checkpoint_files(run_dir);
  std::string latest, problem;
  try {
    latest = read_latest(run_dir);
  } catch (const Error& e) {
    problem = e.message();
  }
  if (problem.empty() && latest.empty()) {
    if (files.empty()) return std::nullopt;  // a new run
    const bool exists = fs::exists(fs::symlink_status(fs::path(run_dir) / kLatestFileName));
    problem = "train: run folder " + run_dir + " holds checkpoints (" + describe_checkpoints(files) + ") but " +
              (exists ? "its `latest` is empty" : "no `latest`");
  } else if (problem.empty()) {  // read_latest refused what is not a checkpoint's name
    try {
      return ResumePoint{latest, load_own_checkpoint(latest, "train", digest)};
    } catch (const Error& e) {
      problem = e.message() + " (the checkpoint `latest` names)";
    }
  }
  throw Error(problem + "; " + advice(run_dir, files));
}

ResumePoint explicit_resume_point(const std::string& run_dir, const std::string& file, FileDigest digest) {
  const fs::path p(file);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  RPB_CHECK(is_checkpoint_name(p.filename().string()) && fs::equivalent(dir, run_dir, ec), "train", "--resume-from ",
            file, " is not a checkpoint file (step_<step>.h5) of the run folder ", run_dir);
  const std::string path = (fs::path(run_dir) / p.filename()).string();
  return {path, load_own_checkpoint(path, "train", digest)};
}

}  // namespace rpb

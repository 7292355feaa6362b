// rpb/train/run/latest.cpp: the run folder's `latest` pointer (see latest.h).
#include "train/run/latest.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "core/error.h"
#include "core/text.h"
#include "train/io/atomic_file.h"
#include "train/io/input_file.h"
#include "train/run/run_folder.h"

namespace rpb {

namespace fs = std::filesystem;

namespace {

// The most bytes a `latest` is read to: a name and a newline, with room to spare.
constexpr std::size_t kMaxPointerBytes = 4096;

// What a `latest` holds, for messages.
constexpr const char* kWhatLatestHolds =
    "the name of a checkpoint file of its run folder (step_<step>.h5, as step_00000100.h5), on one line";

// A file name that stays inside its folder: not empty, not "." or "..", no "/" and no control byte.
bool is_bare_file_name(const std::string& name) {
  const auto leaves = [](char c) { return c == '/' || static_cast<unsigned char>(c) < 0x20; };
  return !name.empty() && name != "." && name != ".." && std::none_of(name.begin(), name.end(), leaves);
}

}  // namespace

void write_latest(const std::string& run_dir, const std::string& file_name) {
  const fs::path latest = fs::path(run_dir) / kLatestFileName;
  const std::string op = "checkpoint pointer " + latest.string();
  RPB_CHECK(is_bare_file_name(file_name), op.c_str(), "\"", printable(file_name), "\" is not a bare file name inside ",
            run_dir);
  RPB_CHECK(is_checkpoint_name(file_name), op.c_str(), "\"", printable(file_name), "\" is not ", kWhatLatestHolds);
  write_file_atomically(latest.string(), file_name + "\n");
}

std::string read_latest(const std::string& run_dir) {
  const fs::path latest = fs::path(run_dir) / kLatestFileName;
  struct stat st{};
  if (::lstat(latest.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) return "";
  const std::string op = "checkpoint pointer " + latest.string();
  InputOptions pointer;
  pointer.what = "checkpoint pointer";
  pointer.max_bytes = kMaxPointerBytes;
  pointer.in_run_folder = true;
  const std::string bytes = read_input_file(latest.string(), pointer);
  std::string name(bytes.begin(), std::find(bytes.begin(), bytes.end(), '\n'));
  while (!name.empty() && (name.back() == '\r' || name.back() == ' ' || name.back() == '\t')) name.pop_back();
  if (name.empty()) return "";
  RPB_CHECK(is_bare_file_name(name), op.c_str(), "names \"", printable(name), "\", which is not a bare file name in ",
            run_dir, " (a checkpoint pointer never leads out of its folder)");
  RPB_CHECK(is_checkpoint_name(name), op.c_str(), "holds \"", printable(name), "\"; expected ", kWhatLatestHolds);
  return (fs::path(run_dir) / name).string();
}

}  // namespace rpb

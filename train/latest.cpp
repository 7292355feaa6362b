// rpb/train/latest.cpp: the run folder's `latest` pointer (see latest.h).
#include "train/latest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/text.h"
#include "train/atomic_file.h"
#include "train/no_follow.h"

namespace rpb {

namespace fs = std::filesystem;

namespace {

// A file name that stays inside its folder: not empty, not "." or "..", no "/" and no control byte.
bool is_bare_file_name(const std::string& name) {
  const auto leaves = [](char c) { return c == '/' || static_cast<unsigned char>(c) < 0x20; };
  return !name.empty() && name != "." && name != ".." && std::none_of(name.begin(), name.end(), leaves);
}

}  // namespace

void write_latest(const std::string& run_dir, const std::string& file_name) {
  const fs::path latest = fs::path(run_dir) / "latest";
  const std::string op = "checkpoint pointer " + latest.string();
  RPB_CHECK(is_bare_file_name(file_name), op.c_str(), "\"", printable(file_name), "\" is not a bare file name inside ",
            run_dir);
  write_file_atomically(latest.string(), file_name + "\n");
}

std::string read_latest(const std::string& run_dir) {
  const fs::path latest = fs::path(run_dir) / "latest";
  struct stat st{};
  if (::lstat(latest.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) return "";
  const std::string op = "checkpoint pointer " + latest.string();
  FileDescriptor fd = open_no_follow(latest.string(), O_RDONLY, op);
  char buf[4096];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  RPB_CHECK(n >= 0, op.c_str(), "cannot read the file: ", std::strerror(errno));
  std::string name(buf, static_cast<std::size_t>(n));
  name = name.substr(0, name.find('\n'));
  while (!name.empty() && (name.back() == '\r' || name.back() == ' ' || name.back() == '\t')) name.pop_back();
  if (name.empty()) return "";
  RPB_CHECK(is_bare_file_name(name), op.c_str(), "names \"", printable(name), "\", which is not a bare file name in ",
            run_dir, " (a checkpoint pointer never leads out of its folder)");
  return (fs::path(run_dir) / name).string();
}

}  // namespace rpb

// rpb/train/latest.cpp: the run folder's `latest` pointer (see latest.h).
#include "train/latest.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "train/atomic_file.h"

namespace rpb {

namespace fs = std::filesystem;

void write_latest(const std::string& run_dir, const std::string& file_name) {
  const fs::path latest = fs::path(run_dir) / "latest";
  const std::string op = "checkpoint pointer " + latest.string();
  RPB_CHECK(!file_name.empty() && file_name.find('/') == std::string::npos &&
                file_name.find('\n') == std::string::npos,
            op.c_str(), "\"", file_name, "\" is not a bare file name inside ", run_dir);
  write_file_atomically(latest.string(), file_name + "\n");
}

std::string read_latest(const std::string& run_dir) {
  const fs::path latest = fs::path(run_dir) / "latest";
  std::error_code ec;
  if (!fs::exists(latest, ec)) return "";
  std::ifstream in(latest);
  const std::string op = "checkpoint pointer " + latest.string();
  RPB_CHECK(in.good(), op.c_str(), "cannot read the file");
  std::string name;
  std::getline(in, name);
  while (!name.empty() && (name.back() == '\r' || name.back() == ' ' || name.back() == '\t')) name.pop_back();
  if (name.empty()) return "";
  return (fs::path(run_dir) / name).string();
}

}  // namespace rpb

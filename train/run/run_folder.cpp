// rpb/train/run/run_folder.cpp: see run_folder.h.
#include "train/run/run_folder.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "core/text.h"
#include "train/io/atomic_file.h"
#include "train/io/input_file.h"

namespace fs = std::filesystem;

namespace rpb {

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// Whether `name` ends with `suffix`.
bool ends_with(const std::string& name, const std::string& suffix) {
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Whether `name` is ".<target>.tmp.<digits>" for a file rpb writes atomically in a run folder.
bool is_stale_temp_name(const std::string& name) {
  const std::optional<std::string> target = atomic_temp_target(name);
  return target && (*target == kLatestFileName || *target == kConfigFileName || *target == kMetricsFileName ||
                    is_checkpoint_name(*target));
}

}  // namespace

std::string checkpoint_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08lld.h5", static_cast<long long>(step));
  return buf;
}

bool is_checkpoint_name(const std::string& name) {
  return name.size() >= 5 + 8 + 3 && name.rfind("step_", 0) == 0 && ends_with(name, ".h5") &&
         all_digits(name.substr(5, name.size() - 8));
}

void create_run_folder(const std::string& out_dir, const std::string& run_dir) {
  const fs::path run = fs::path(run_dir).lexically_normal();
  fs::path part;
  for (const fs::path& component : run) {
    part /= component;
    std::error_code ec;
    const fs::file_status st = fs::status(part, ec);  // follows links: a link to a folder is a folder
    if (ec || !fs::exists(st) || fs::is_directory(st)) continue;
    const std::string what = non_regular_kind(part.string());
    const std::string is = " is " + (what.empty() ? std::string("a regular file") : what) + ", not a folder";
    if (part == run)
      throw Error("run folder " + printable(run_dir) + ":" + is + " (run.name names a folder in run.out_dir)");
    throw Error("run.out_dir " + printable(out_dir) + ": " + printable(part.string()) + is);
  }
  std::error_code ec;
  fs::create_directories(run, ec);
  if (ec)
    throw Error("run.out_dir " + printable(out_dir) + ": cannot create the run folder " + printable(run_dir) + ": " +
                ec.message());
}

std::vector<CheckpointFile> checkpoint_files(const std::string& run_dir) {
  std::vector<CheckpointFile> files;
  std::error_code ec;
  for (fs::directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_checkpoint_name(name)) continue;
    const std::string digits = name.substr(5, name.size() - 8);
    // More digits than an int64 holds sort after every other step.
    const int64_t step = digits.size() > 18 ? INT64_MAX : std::stoll(digits);
    files.push_back({step, it->path().string()});
  }
  std::sort(files.begin(), files.end(), [](const CheckpointFile& a, const CheckpointFile& b) {
    return a.step != b.step ? a.step > b.step : a.path > b.path;
  });
  return files;
}

std::vector<std::string> remove_stale_temp_files(const std::string& run_dir) {
  std::vector<fs::path> stale;
  std::error_code ec;
  for (fs::directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (is_stale_temp_name(it->path().filename().string()) &&
        it->symlink_status(type_ec).type() != fs::file_type::directory)
      stale.push_back(it->path());
  }
  std::vector<std::string> removed;
  for (const fs::path& p : stale)
    if (fs::remove(p, ec)) removed.push_back(p.filename().string());  // unlinks a link, never its target
  std::sort(removed.begin(), removed.end());
  return removed;
}

std::string move_run_aside(const std::string& run_dir) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  const std::string base = fs::path(run_dir).lexically_normal().string() + ".old-" + stamp;
  std::string to = base;
  for (int i = 2; fs::exists(fs::symlink_status(to)); ++i) to = base + "-" + std::to_string(i);
  std::error_code ec;
  fs::rename(run_dir, to, ec);
  if (ec) throw Error("--overwrite: cannot move the run folder " + run_dir + " aside to " + to + ": " + ec.message());
  return to;
}

}  // namespace rpb

// rpb/train/io/atomic_file.cpp: see atomic_file.h.
#include "train/io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "train/io/no_follow.h"

namespace fs = std::filesystem;

namespace rpb {

namespace {

// fsyncs the folder `dir`.
void fsync_folder(const fs::path& dir, const std::string& op) {
  const int fd = ::open(dir.c_str(), O_CLOEXEC | O_RDONLY | O_DIRECTORY);
  RPB_CHECK(fd >= 0, op.c_str(), "cannot open ", dir.string(), " to fsync it: ", std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot fsync a folder (EINVAL); the rename is then as durable as they make it.
  RPB_CHECK(rc == 0 || err == EINVAL, op.c_str(), "cannot fsync ", dir.string(), ": ", std::strerror(err));
}

}  // namespace

bool live_process(const std::string& digits) {
  if (digits.empty() || digits[0] == '0') return true;
  if (digits.size() > 9) return false;  // past any pid_t (pid_max is at most 2^22)
  const long pid = std::stol(digits);
  if (pid <= 0) return false;  // kill(0, 0) would ask about this process group
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

std::optional<std::string> atomic_temp_target(const std::string& name) {
  const std::size_t at = name.rfind(".tmp.");
  if (name.size() < 2 || name[0] != '.' || at == std::string::npos) return {};
  const std::string digits = name.substr(at + 5);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
    return {};
  return name.substr(1, at - 1);
}

std::vector<std::string> remove_dead_temp_files(const std::string& path) {
  const fs::path p(path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string target = p.filename().string();
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code type_ec;
    if (atomic_temp_target(name) != target || it->symlink_status(type_ec).type() == fs::file_type::directory ||
        live_process(name.substr(name.rfind(".tmp.") + 5)))
      continue;
    if (::unlink(it->path().c_str()) == 0) removed.push_back(name);  // a link: unlinked, never its target
  }
  return removed;
}

// The temp file is created exclusively and without following links (O_CREAT|O_EXCL|O_NOFOLLOW), so a file or a
// link planted under its name is never written through. Its name carries this process's pid, so a file already
// under it is a leftover of a dead process that had the same pid: it is unlinked first.
void write_file_atomically(const std::string& path, std::string_view content, const std::string& op) {
  const fs::path final_path(path);
  RPB_CHECK(!final_path.filename().empty(), op.c_str(), "the path names no file");
  fs::path dir = final_path.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  RPB_CHECK(fs::is_directory(dir, ec), op.c_str(), "folder ", dir.string(), " does not exist");
  remove_dead_temp_files(path);  // of writes of `path` that were killed
  const fs::path tmp = atomic_temp_path(path);
  ::unlink(tmp.c_str());
  FileDescriptor fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  RPB_CHECK(fd.get() >= 0, op.c_str(), "cannot create temp file ", tmp.string(), ": ", std::strerror(errno));
  try {
    write_all(fd.get(), content, tmp.string(), op);
    RPB_CHECK(::fsync(fd.get()) == 0, op.c_str(), "cannot fsync ", tmp.string(), ": ", std::strerror(errno));
    RPB_CHECK(fd.close() == 0, op.c_str(), "cannot close ", tmp.string(), ": ", std::strerror(errno));
    RPB_CHECK(::rename(tmp.c_str(), final_path.c_str()) == 0, op.c_str(), "cannot rename ", tmp.string(),
              " over it: ", std::strerror(errno));
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  fsync_folder(dir, op);
}

void write_file_atomically(const std::string& path, std::string_view content) {
  write_file_atomically(path, content, "write " + path);
}

std::string atomic_temp_path(const std::string& path) {
  const fs::path p(path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  std::string name = ".";
  name += p.filename().string();
  name += ".tmp.";
  name += std::to_string(::getpid());
  return (dir / name).string();
}

void commit_temp_file(const std::string& tmp, const std::string& path, const std::string& op) {
  std::error_code ec;
  try {
    // O_NOFOLLOW: a link planted under the temp name is refused, never renamed over `path`.
    FileDescriptor fd(::open(tmp.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    RPB_CHECK(fd.get() >= 0, op.c_str(), "cannot open ", tmp, ": ", std::strerror(errno));
    struct stat st{};
    RPB_CHECK(::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode), op.c_str(), tmp, " is not a regular file");
    RPB_CHECK(::fsync(fd.get()) == 0, op.c_str(), "cannot fsync ", tmp, ": ", std::strerror(errno));
    RPB_CHECK(::rename(tmp.c_str(), path.c_str()) == 0, op.c_str(), "cannot rename ", tmp, " over it: ",
              std::strerror(errno));
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  const fs::path dir = fs::path(path).parent_path();
  fsync_folder(dir.empty() ? fs::path(".") : dir, op);
}

}  // namespace rpb

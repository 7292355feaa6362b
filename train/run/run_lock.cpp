// rpb/train/run/run_lock.cpp: see run_lock.h.
#include "train/run/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "core/error.h"
#include "train/run/run_folder.h"

namespace rpb {

namespace {

// The pid the holder wrote into the lock file `path`, or "" when there is none (yet, or the file is gone): the
// holder writes it right after taking the lock, so a few short waits cover the moment between the two.
std::string holder_pid(const std::string& path) {
  const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) return "";
  for (int attempt = 0; attempt < 50; ++attempt) {
    char buf[32] = {};
    const ssize_t n = ::pread(fd.get(), buf, sizeof buf - 1, 0);
    std::string pid;
    for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i) pid += buf[i];
    if (!pid.empty() && n > 0 && buf[pid.size()] == '\n') return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return "";
}

}  // namespace

RunLock::RunLock(const std::string& run_dir) {
  const std::string path = (std::filesystem::path(run_dir) / kLockFileName).string();
  const std::string op = "train";
  folder_ = FileDescriptor(::open(run_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (folder_.get() < 0) {
    const int err = errno;
    // O_NOFOLLOW with O_DIRECTORY: a link to a folder fails with ENOTDIR (or ELOOP on some kernels).
    std::error_code ec;
    RPB_CHECK(!(err == ELOOP || (err == ENOTDIR && std::filesystem::is_symlink(run_dir, ec))), op.c_str(),
              "run folder ", run_dir, " is a symbolic link, which rpb does not follow");
    RPB_FAIL(op.c_str(), "cannot open the run folder ", run_dir, " to lock it: ", std::strerror(err));
  }
  if (::flock(folder_.get(), LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    RPB_CHECK(err == EWOULDBLOCK, op.c_str(), "cannot lock the run folder ", run_dir, ": ", std::strerror(err));
    const std::string pid = holder_pid(path);
    RPB_FAIL(op.c_str(), "run folder ", run_dir, " is in use by ", pid.empty() ? "another process" : "pid " + pid,
             " (an rpb train or extrapolate writing in it); wait for it to end, or choose another run.name");
  }
  pid_file_ = open_own_file(path, O_RDWR | O_CREAT, "run lock " + path);
  RPB_CHECK(::ftruncate(pid_file_.get(), 0) == 0, op.c_str(), "cannot write ", path, ": ", std::strerror(errno));
  write_all(pid_file_.get(), std::to_string(::getpid()) + "\n", path, "run lock " + path);
}

RunLock::~RunLock() {
  // A failed truncate leaves a stale pid in the lock file, which misleads no one: the folder's lock is what counts.
  if (pid_file_.get() < 0) return;
  [[maybe_unused]] const int rc = ::ftruncate(pid_file_.get(), 0);
}  // then folder_ closes, which releases the lock

}  // namespace rpb

// rpb/train/run_lock.cpp: see run_lock.h.
#include "train/run_lock.h"

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
#include "train/no_follow.h"

namespace rpb {

namespace {

// The pid the holder wrote into the lock file, or "" when there is none yet: the holder writes it right
// after taking the lock, so a few short waits cover the moment between the two.
std::string holder_pid(int fd) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    std::string pid;
    for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i) pid += buf[i];
    if (!pid.empty() && n > 0 && buf[pid.size()] == '\n') return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return "";
}

}  // namespace

RunLock::RunLock(const std::string& run_dir) {
  const std::string path = (std::filesystem::path(run_dir) / kFileName).string();
  const std::string op = "train";
  FileDescriptor fd = open_no_follow(path, O_RDWR | O_CREAT, "run lock " + path);
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    RPB_CHECK(err == EWOULDBLOCK, op.c_str(), "cannot lock ", path, ": ", std::strerror(err));
    const std::string pid = holder_pid(fd.get());
    RPB_FAIL(op.c_str(), "run folder ", run_dir, " is in use by ", pid.empty() ? "another process" : "pid " + pid,
             " (an rpb train or extrapolate writing in it); wait for it to end, or choose another run.name");
  }
  const std::string line = std::to_string(::getpid()) + "\n";
  RPB_CHECK(::ftruncate(fd.get(), 0) == 0, op.c_str(), "cannot write ", path, ": ", std::strerror(errno));
  write_all(fd.get(), line, path, "run lock " + path);
  fd_ = fd.release();  // the lock lives as long as this descriptor stays open
}

RunLock::~RunLock() {
  if (fd_ < 0) return;
  // A failed truncate leaves a stale pid in an unlocked file, which misleads no one: the lock is what counts.
  [[maybe_unused]] const int rc = ::ftruncate(fd_, 0);
  ::close(fd_);  // releases the lock
}

}  // namespace rpb


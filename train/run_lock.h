// rpb/train/run_lock.h: one process at a time in a run folder.
#pragma once

#include <string>

namespace rpb {

/// An exclusive advisory lock (flock) on the run folder's lock file `<run_dir>/lock`, held from construction
/// until destruction: while one Run trains (steps, checkpoints, `latest`, config.toml, train.log) no other rpb
/// process can train in the same folder. The lock file holds the holder's pid (one line, for the message
/// another process gets); it is emptied on release and never removed (removing a lock file lets two
/// processes lock two different files under one name). The kernel releases the lock when the holder dies, so
/// a killed run never leaves the folder locked.
///
/// The lock file is opened with O_NOFOLLOW: a symbolic link, a folder or anything else that is not a
/// regular file under that name is refused, never written through.
class RunLock {
 public:
  /// Takes the lock on `run_dir` (which must exist) without waiting. Throws rpb::Error "train: run folder
  /// <run_dir> is in use by pid <N> ..." when another open lock holds it, or naming the lock file when it
  /// cannot be opened (a symbolic link, not a regular file, no permission).
  explicit RunLock(const std::string& run_dir);
  /// Empties the lock file and releases the lock.
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

  /// The name of the lock file inside a run folder.
  static constexpr const char* kFileName = "lock";

 private:
  int fd_ = -1;
};

}  // namespace rpb

// rpb/train/run/run_lock.h: one process at a time in a run folder.
#pragma once

#include <string>

#include "train/io/no_follow.h"

namespace rpb {

/// An exclusive advisory lock (flock) on the run folder itself, held from construction until destruction: while
/// one Run trains (steps, checkpoints, `latest`, config.toml, train.log) no other rpb process can train in the
/// same folder. The lock is taken on a descriptor of the folder (opened O_DIRECTORY|O_NOFOLLOW), not on a file in
/// it, so nothing done to the folder's files voids it: deleting or replacing `lock` does not let a second process
/// in. The kernel releases the lock when the holder dies, so a killed run never leaves the folder locked. Renaming
/// the folder (--overwrite moves it aside) keeps the lock on the renamed folder; the folder made afresh under the
/// old name is a new one, locked anew.
///
/// The folder's file `lock` holds the holder's pid (one line), for the message another process gets only; it is
/// emptied on release. It is opened with open_own_file: a symbolic link, a file with another hard link or
/// anything but a regular file under that name is refused, never written through.
class RunLock {
 public:
  /// Takes the lock on `run_dir` (which must exist) without waiting. Throws rpb::Error "train: run folder
  /// <run_dir> is in use by pid <N> ..." ("by another process" when `lock` holds no pid) when another RunLock
  /// holds it, or naming the folder or the lock file when it cannot be opened (a symbolic link, not a regular
  /// file or folder, another hard link, no permission).
  explicit RunLock(const std::string& run_dir);
  /// Empties the lock file and releases the lock.
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  FileDescriptor folder_;    // the run folder, flocked
  FileDescriptor pid_file_;  // its `lock` file, holding this process's pid
};

}  // namespace rpb

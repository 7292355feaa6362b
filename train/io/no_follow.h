// rpb/train/io/no_follow.h: opening files in a run folder without following symbolic links.
//
// A run folder may hold files that rpb did not put there. Every file rpb opens in one goes through
// open_no_follow, so a symbolic link planted under a name rpb uses (config.toml, train.log, latest, lock, a
// temp file) is refused instead of being written, truncated or read through.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <string_view>

namespace rpb {

/// A file descriptor owned by one object: closed when it goes (errors of that close are ignored; call
/// close() to see them).
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor();
  FileDescriptor(FileDescriptor&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  FileDescriptor& operator=(FileDescriptor&& o) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  int get() const { return fd_; }
  /// Hands the descriptor over to the caller, who closes it; this object then holds none.
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  /// Closes the descriptor; returns close(2)'s result (0, or -1 with errno set).
  int close();

 private:
  int fd_ = -1;
};

/// Opens `path` with open(2) `flags` plus O_NOFOLLOW and O_CLOEXEC (and `mode` when flags create it), and
/// checks that it is a regular file. Throws rpb::Error naming `op` and the path when it cannot be opened:
/// "<path> is a symbolic link, which rpb does not follow" for a link under that name, "<path> is not a
/// regular file" for a folder, a FIFO or a device (a FIFO is never waited on), or the system's reason.
/// With O_CREAT|O_EXCL in `flags` an existing file (a link included) fails with EEXIST.
FileDescriptor open_no_follow(const std::string& path, int flags, const std::string& op, mode_t mode = 0644);

/// Why a file of a run folder whose status is `st` (lstat(2) of its name, or fstat(2) of a descriptor opened with
/// O_NOFOLLOW) is not one rpb made: "is a symbolic link, which rpb does not follow in a run folder", "has 2 hard
/// links; a file of a run folder is rpb's own and has one (another name shares its data)"; "" when it is one (or
/// is no link and not a regular file: the readers refuse those themselves, naming what they are).
std::string foreign_file_problem(const struct stat& st);

/// Throws rpb::Error "<what>: <path> <foreign_file_problem>" when `path` (in a run folder, a link not followed) is
/// a symbolic link or a file with another hard link; returns when it is rpb's own, or missing (the reader that
/// comes next says so). For a file read by path afterwards (a checkpoint `latest` names): a file swapped between
/// this check and the read is not seen.
void check_own_file(const std::string& path, const std::string& what);

/// open_no_follow for a file rpb writes or appends to in a run folder (train.log, `lock`): also refuses, naming
/// `path`, a file with another hard link, whose other name (outside the folder, maybe) would be written through.
FileDescriptor open_own_file(const std::string& path, int flags, const std::string& op, mode_t mode = 0644);

/// Writes all of `bytes` to `fd` (retrying short writes and EINTR); throws rpb::Error naming `op` and `path`
/// with the system's reason ("No space left on device") when a write fails.
void write_all(int fd, std::string_view bytes, const std::string& path, const std::string& op);

}  // namespace rpb

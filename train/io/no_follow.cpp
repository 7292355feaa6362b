// rpb/train/io/no_follow.cpp: see no_follow.h.
#include "train/io/no_follow.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace rpb {

FileDescriptor::~FileDescriptor() { close(); }

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

int FileDescriptor::close() {
  if (fd_ < 0) return 0;
  const int rc = ::close(fd_);
  fd_ = -1;
  return rc;
}

FileDescriptor open_no_follow(const std::string& path, int flags, const std::string& op, mode_t mode) {
  // O_NONBLOCK: opening a FIFO for writing would otherwise wait for a reader. It is cleared again below.
  FileDescriptor fd(::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode));
  if (fd.get() < 0) {
    const int err = errno;
    RPB_CHECK(err != ELOOP, op.c_str(), path, " is a symbolic link, which rpb does not follow");
    RPB_CHECK(err != ENXIO && err != EISDIR, op.c_str(), path, " is not a regular file");
    RPB_FAIL(op.c_str(), "cannot open ", path, ": ", std::strerror(err));
  }
  struct stat st{};
  RPB_CHECK(::fstat(fd.get(), &st) == 0, op.c_str(), "cannot stat ", path, ": ", std::strerror(errno));
  RPB_CHECK(S_ISREG(st.st_mode), op.c_str(), path, " is not a regular file");
  const int fl = ::fcntl(fd.get(), F_GETFL);
  RPB_CHECK(fl >= 0 && ::fcntl(fd.get(), F_SETFL, fl & ~O_NONBLOCK) == 0, op.c_str(), "cannot set up ", path, ": ",
            std::strerror(errno));
  return fd;
}

std::string foreign_file_problem(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "is a symbolic link, which rpb does not follow in a run folder";
  if (S_ISREG(st.st_mode) && st.st_nlink != 1)
    return "has " + std::to_string(st.st_nlink) +
           " hard links; a file of a run folder is rpb's own and has one (another name shares its data)";
  return "";
}

void check_own_file(const std::string& path, const std::string& what) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return;
  const std::string problem = foreign_file_problem(st);
  RPB_CHECK(problem.empty(), what.c_str(), path, " ", problem);
}

FileDescriptor open_own_file(const std::string& path, int flags, const std::string& op, mode_t mode) {
  FileDescriptor fd = open_no_follow(path, flags, op, mode);
  struct stat st{};
  RPB_CHECK(::fstat(fd.get(), &st) == 0, op.c_str(), "cannot stat ", path, ": ", std::strerror(errno));
  const std::string problem = foreign_file_problem(st);
  RPB_CHECK(problem.empty(), op.c_str(), path, " ", problem);
  return fd;
}

void write_all(int fd, std::string_view bytes, const std::string& path, const std::string& op) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    const int err = n < 0 ? errno : ENOSPC;
    RPB_CHECK(n > 0, op.c_str(), "cannot write ", path, " (", done, " of ", bytes.size(), " bytes written): ",
              std::strerror(err));
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace rpb

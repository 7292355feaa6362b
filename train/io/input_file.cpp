// rpb/train/io/input_file.cpp: see input_file.h.
#include "train/io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/text.h"
#include "train/io/no_follow.h"

namespace rpb {

std::string mode_kind(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

std::string non_regular_kind(const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return "";
  return mode_kind(st.st_mode);
}

std::string read_input_file(const std::string& path, const InputOptions& o) {
  std::string op = o.what;  // appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on a + " " + b
  op += ' ';
  op += printable(path);
  // O_NONBLOCK: opening a FIFO does not wait for a writer (and reading one is refused below, before any read).
  const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (o.in_run_folder ? O_NOFOLLOW : 0);
  FileDescriptor fd(::open(path.c_str(), flags));
  if (fd.get() < 0) {
    const int err = errno;
    RPB_CHECK(err != ENOENT, op.c_str(), "no such file");
    RPB_CHECK(!(err == ELOOP && o.in_run_folder), op.c_str(), "is a symbolic link, which rpb does not follow in a run folder");
    RPB_FAIL(op.c_str(), "cannot open the file: ", std::strerror(err));
  }
  struct stat st{};
  RPB_CHECK(::fstat(fd.get(), &st) == 0, op.c_str(), "cannot stat the file: ", std::strerror(errno));
  if (const std::string kind = mode_kind(st.st_mode); !kind.empty())
    RPB_FAIL(op.c_str(), "is ", kind, ", not a regular file; rpb reads only regular files");
  if (o.in_run_folder)
    if (const std::string problem = foreign_file_problem(st); !problem.empty()) RPB_FAIL(op.c_str(), problem);
  std::string bytes;
  // The reported size is a hint only (files under /proc report 0): the bound is on the bytes read.
  const std::size_t hint = st.st_size > 0 ? static_cast<std::size_t>(st.st_size) : 0;
  if (hint <= o.max_bytes) bytes.reserve(hint);
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    RPB_CHECK(n >= 0, op.c_str(), "cannot read the file (", bytes.size(), " bytes read): ", std::strerror(errno));
    if (n == 0) break;
    if (bytes.size() + static_cast<std::size_t>(n) > o.max_bytes)
      RPB_FAIL(op.c_str(), "is larger than ", o.max_bytes, " bytes",
               o.limit_source.empty() ? std::string() : ", " + o.limit_source,
               "; rpb stopped reading it there");
    bytes.append(buf, static_cast<std::size_t>(n));
  }
  return bytes;
}

}  // namespace rpb

#include "train/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace fs = std::filesystem;

namespace rpb {

namespace {

void fsync_path(const fs::path& p, bool directory, const std::string& op) {
  const int fd = ::open(p.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  RPB_CHECK(fd >= 0, op.c_str(), "cannot open ", p.string(), " to fsync it: ", std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot fsync a folder (EINVAL); the rename is then as durable as they make it.
  RPB_CHECK(rc == 0 || (directory && err == EINVAL), op.c_str(), "cannot fsync ", p.string(), ": ", std::strerror(err));
}

}  // namespace

void replace_file_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write,
                             const std::string& op) {
  const fs::path final_path(path);
  RPB_CHECK(!final_path.filename().empty(), op.c_str(), "the path names no file");
  fs::path dir = final_path.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  RPB_CHECK(fs::is_directory(dir, ec), op.c_str(), "folder ", dir.string(), " does not exist");
  const fs::path tmp = dir / ("." + final_path.filename().string() + ".tmp." + std::to_string(::getpid()));
  try {
    write(tmp.string());
    fsync_path(tmp, false, op);
    RPB_CHECK(::rename(tmp.c_str(), final_path.c_str()) == 0, op.c_str(), "cannot rename ", tmp.string(),
              " over it: ", std::strerror(errno));
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  fsync_path(dir, true, op);
}

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string op = "write " + path;
  replace_file_atomically(
      path,
      [&](const std::string& tmp) {
        const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        RPB_CHECK(fd >= 0, op.c_str(), "cannot create ", tmp, ": ", std::strerror(errno));
        std::size_t done = 0;
        while (done < content.size()) {
          const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) {
            const int err = errno;
            ::close(fd);
            RPB_FAIL(op.c_str(), "cannot write ", tmp, ": ", std::strerror(err));
          }
          done += static_cast<std::size_t>(n);
        }
        RPB_CHECK(::close(fd) == 0, op.c_str(), "cannot close ", tmp, ": ", std::strerror(errno));
      },
      op);
}

}  // namespace rpb

// rpb/train/run/log_file_sink.h: a run's train.log, written line by line.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <memory>
#include <mutex>
#include <string>

#include "train/io/no_follow.h"

namespace rpb {

/// A spdlog sink that appends each formatted message to a file with one write(2) as it is logged: nothing
/// waits in a buffer, so a process killed with SIGKILL loses no line it has logged (the kernel holds it).
/// The file is opened O_WRONLY|O_APPEND|O_CREAT|O_NOFOLLOW|O_CLOEXEC (open_own_file): a symbolic link under
/// its name, or a file with another hard link (a name outside the folder sharing its data), is refused, never
/// appended through. A failed write throws rpb::Error naming the file (spdlog
/// reports errors of its sinks on stderr and carries on).
class LogFileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  /// Opens (creating, mode 0644) `path` for appending; throws rpb::Error naming it when it cannot.
  explicit LogFileSink(const std::string& path);

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}  // every message has reached the kernel already

 private:
  std::string path_;
  FileDescriptor fd_;
};

}  // namespace rpb

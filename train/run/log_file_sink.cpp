// rpb/train/run/log_file_sink.cpp: see log_file_sink.h.
#include "train/run/log_file_sink.h"

#include <fcntl.h>

#include <string_view>

namespace rpb {

LogFileSink::LogFileSink(const std::string& path)
    : path_(path), fd_(open_own_file(path, O_WRONLY | O_APPEND | O_CREAT, "train log " + path)) {}

void LogFileSink::sink_it_(const spdlog::details::log_msg& msg) {
  spdlog::memory_buf_t line;
  formatter_->format(msg, line);
  write_all(fd_.get(), std::string_view(line.data(), line.size()), path_, "train log " + path_);
}

}  // namespace rpb

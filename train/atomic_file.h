// rpb/train/atomic_file.h: files that are either wholly written or not there at all.
#pragma once

#include <functional>
#include <string>

namespace rpb {

/// Runs write(tmp) on a temp file in `path`'s folder, fsyncs it, renames it over `path` and
/// fsyncs the folder, so a crash leaves either the old file or the new one, never a partial
/// file under the final name. On failure the temp file is removed, `path` is untouched, and
/// the rpb::Error names `op`.
void replace_file_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write,
                             const std::string& op);

/// replace_file_atomically with `content` as the file's bytes.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace rpb

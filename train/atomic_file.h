// rpb/train/atomic_file.h: files that are either wholly written or not there at all.
#pragma once

#include <functional>
#include <string>

namespace rpb {

/// Runs write(tmp) on a temp file ".<name>.tmp.<pid>" in `path`'s folder, fsyncs it, renames it
/// over `path` and fsyncs the folder, so a crash leaves either the old file or the new one, never
/// a partial file under the final name. The temp file is created empty before write(tmp) runs,
/// exclusively and without following links (O_CREAT|O_EXCL|O_NOFOLLOW; a leftover under the name,
/// which carries this process's pid, is unlinked first), so nothing planted under its name is
/// written through; the rename replaces whatever is at `path` (a symbolic link included) instead of
/// writing through it. On failure the temp file is removed, `path` is untouched, and the rpb::Error
/// names `op`. A process killed mid-write leaves its temp file: remove_stale_temp_files
/// (train/run_folder.h) clears those of a run folder.
void replace_file_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write,
                             const std::string& op);

/// replace_file_atomically with `content` as the file's bytes.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace rpb

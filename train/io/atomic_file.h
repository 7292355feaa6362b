// rpb/train/io/atomic_file.h: files that are either wholly written or not there at all.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rpb {

/// Writes `content` to a temp file ".<name>.tmp.<pid>" in `path`'s folder, fsyncs it, renames it over `path`
/// and fsyncs the folder, so a crash leaves either the old file or the new one, never a partial file under the
/// final name. The temp file is created exclusively and without following links (O_CREAT|O_EXCL|O_NOFOLLOW; a
/// leftover under the name, which carries this process's pid, is unlinked first), so nothing planted under its
/// name is written through; the rename replaces whatever is at `path` (a symbolic link included) instead of
/// writing through it. On failure the temp file is removed, `path` is untouched, and the rpb::Error names `op`
/// ("No space left on device" and the like from the system). A process killed mid-write leaves its temp file: each
/// write first removes those of `path` whose process is gone (remove_dead_temp_files), and a run clears its run
/// folder's (remove_stale_temp_files, train/run/run_folder.h).
void write_file_atomically(const std::string& path, std::string_view content, const std::string& op);

/// The same with the op "write <path>".
void write_file_atomically(const std::string& path, std::string_view content);

/// The temp file write_file_atomically uses for `path`: ".<name>.tmp.<pid>" in `path`'s folder (a name the output
/// rules and remove_stale_temp_files know). For a file another program writes (a figure the plotting module saves).
std::string atomic_temp_path(const std::string& path);

/// The name of the file an atomic write is making when `name` is its temp file ".<name>.tmp.<pid digits>"
/// (atomic_temp_path), else nullopt.
std::optional<std::string> atomic_temp_target(const std::string& name);

/// Whether `digits`, the pid in a temp file's or folder's name, may be a live process of this machine: kill(pid, 0)
/// succeeds, or fails only for permission. Digits with a leading zero are no pid rpb wrote (std::to_string): such a
/// name is not rpb's, and counts as live.
bool live_process(const std::string& digits);

/// Removes the temp files ".<name>.tmp.<pid>" that atomic writes of `path` (atomic_temp_path: this file's, a figure
/// the plotting module wrote for it) left in its folder when their process was killed: those whose pid is no live
/// process (kill(pid, 0) fails with ESRCH; a pid past pid_t, or 0, is none; digits with a leading zero are no pid
/// rpb wrote, and such a file is left). A folder under such a name is left, and so is a live process's temp file,
/// whoever it belongs to; a link is unlinked, never its target. Returns the names removed. A process on another
/// machine sharing the folder is not seen: its write in progress would fail, not corrupt `path`.
std::vector<std::string> remove_dead_temp_files(const std::string& path);

/// The second half of an atomic write another program did into `tmp` (atomic_temp_path(path)): checks that `tmp` is
/// a regular file (not a link: lstat), fsyncs it, renames it over `path` and fsyncs the folder. On failure `tmp` is
/// removed and the rpb::Error names `op`.
void commit_temp_file(const std::string& tmp, const std::string& path, const std::string& op);

}  // namespace rpb

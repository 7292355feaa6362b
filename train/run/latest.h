// rpb/train/run/latest.h: a run folder's `latest` file, which names its newest checkpoint.
#pragma once

#include <string>

namespace rpb {

/// Atomically points the run folder's `latest` file at `file_name` (a bare name inside run_dir,
/// e.g. "step_000100.h5"), with the same temp-file, fsync and rename steps as save_checkpoint.
/// Throws rpb::Error for a name that is not bare (empty, ".", "..", or holding "/" or a control byte) or not a
/// checkpoint name (train/run/run_folder.h is_checkpoint_name).
void write_latest(const std::string& run_dir, const std::string& file_name);

/// The full path run_dir/<name> that `latest` names, or "" when run_dir holds no `latest` file
/// (or an empty one). Does not check that the named checkpoint exists; load_checkpoint will.
/// Reads `latest` with read_input_file (train/io/input_file.h, in_run_folder: at most 4096 bytes). Throws
/// rpb::Error naming the pointer when `latest` is a symbolic link (it is never followed), a file with
/// another hard link, a folder or another non-regular file, cannot be read, or names anything but a bare
/// file name in run_dir ("/", ".", ".." or a control byte in it): the pointer never leads out of its folder; and
/// when it names anything but a checkpoint file name (step_<step>.h5: not config.toml, not a line of JSON), saying
/// what `latest` holds.
std::string read_latest(const std::string& run_dir);

}  // namespace rpb

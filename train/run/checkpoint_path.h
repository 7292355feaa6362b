// rpb/train/run/checkpoint_path.h: what a command line names as a checkpoint (`rpb eval`, `generate`, `inspect`): a checkpoint
// file, a run folder (its `latest`), or a run folder's `latest` file, and the run folder it belongs to, if any.
#pragma once

#include <string>

namespace rpb {

/// A checkpoint named on a command line, resolved.
struct CheckpointRef {
  std::string file;     // the checkpoint file to read
  std::string run_dir;  // the run folder of ours holding it (is_run_folder), or "" for a file elsewhere (a shared one)
};

/// Whether `dir` is a run folder rpb made: it holds `config.toml` and `latest` as regular files (not links).
bool is_run_folder(const std::string& dir);

/// Resolves `arg`: a folder is read through its `latest` (read_latest: never followed out of the folder); a file
/// named `latest` is read as that pointer; anything else is the checkpoint file itself. Throws rpb::Error naming
/// `arg` for a folder without a `latest` (or an empty one) and for a pointer that is a link, a folder or names a
/// non-bare file; and naming the checkpoint when it is a file of a run folder (named by `latest`, or by `arg` in a
/// run folder) that is a symbolic link or has another hard link (check_own_file: a link to another run's
/// checkpoint is not this run's). Reads only: nothing is written, and the checkpoint itself is not opened.
CheckpointRef resolve_checkpoint(const std::string& arg);

}  // namespace rpb

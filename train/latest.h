// rpb/train/latest.h: a run folder's `latest` file, which names its newest checkpoint.
#pragma once

#include <string>

namespace rpb {

/// Atomically points the run folder's `latest` file at `file_name` (a bare name inside run_dir,
/// e.g. "step_000100.h5"), with the same temp-file, fsync and rename steps as save_checkpoint.
void write_latest(const std::string& run_dir, const std::string& file_name);

/// The full path run_dir/<name> that `latest` names, or "" when run_dir holds no `latest` file
/// (or an empty one). Does not check that the named checkpoint exists; load_checkpoint will.
std::string read_latest(const std::string& run_dir);

}  // namespace rpb

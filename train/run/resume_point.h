// rpb/train/run/resume_point.h: what a run folder lets `rpb train` do: start a new run, or resume from which checkpoint.
#pragma once

#include <optional>
#include <string>

#include "train/checkpoint/checkpoint.h"

namespace rpb {

/// A checkpoint to resume a run from: the file and what it holds.
struct ResumePoint {
  std::string file;
  Checkpoint checkpoint;
};

/// The checkpoint file `file` of a run folder, loaded (load_checkpoint), once check_own_file (train/io/no_follow.h)
/// has found it to be rpb's own: a symbolic link (to another run's checkpoint, say) or a file with another hard
/// link is refused, "<op>: <file> is a symbolic link, which rpb does not follow in a run folder". `digest`: whether
/// Checkpoint::file_sha256 is filled (load_checkpoint).
Checkpoint load_own_checkpoint(const std::string& file, const std::string& op, FileDigest digest = FileDigest::none);

/// What `run_dir` holds of a run, for a message: its checkpoint files ("3 checkpoint files, the newest
/// step_00000030.h5") and its `latest` ("`latest` naming step_00000030.h5"); "" when a new run may start there.
std::string run_folder_checkpoints(const std::string& run_dir);

/// The guard of `rpb train` without --resume: throws rpb::Error "train: <run_dir> already holds checkpoints
/// (...)" naming what is there when the folder holds any checkpoint file (step_*.h5, whatever `latest`
/// says) or a `latest` that is not empty (a pointer, a folder, a link). Returns when a new run may start.
void check_new_run_folder(const std::string& run_dir);

/// The checkpoint `rpb train --resume` continues from: the one `latest` names, loaded. nullopt when the
/// folder holds no checkpoint file and no `latest` (or an empty one): the run starts at step 0.
/// Throws rpb::Error when the folder holds checkpoint files but no valid `latest` (missing, empty, a
/// folder, a link, naming a missing or damaged file, a link, a file with another hard link, or a name that
/// is not a checkpoint file of the folder), or when `latest` names a checkpoint that does not load. The message says what is wrong with
/// `latest` (for a damaged file, load_checkpoint's message comes first) and names the newest intact
/// checkpoint (the highest step that loads) to pass to --resume-from, or says that none loads. `digest`: whether the
/// checkpoint loaded has its Checkpoint::file_sha256 (the others tried for the advice never do).
std::optional<ResumePoint> resume_point(const std::string& run_dir, FileDigest digest = FileDigest::none);

/// The checkpoint `rpb train --resume-from <file>` continues from: `file`, which must be a checkpoint file
/// (step_*.h5) of `run_dir` itself, loaded (load_own_checkpoint). Throws rpb::Error naming `file` when it is not
/// one or is not rpb's own (a link, another hard link), or load_checkpoint's error when it does not load. `digest` as
/// for resume_point.
ResumePoint explicit_resume_point(const std::string& run_dir, const std::string& file,
                                  FileDigest digest = FileDigest::none);

}  // namespace rpb

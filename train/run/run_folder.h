// rpb/train/run/run_folder.h: the files of a run folder: their names, checkpoint names, the checkpoints there, stale temp
// files; and the names of the result files of a sweep's folder.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rpb {

/// The files of a run folder besides its checkpoints (checkpoint_name) and its evaluation records.
inline constexpr const char* kConfigFileName = "config.toml";  // the config trained, after its digest line
inline constexpr const char* kLatestFileName = "latest";       // the name of the newest checkpoint (train/run/latest.h)
inline constexpr const char* kMetricsFileName = "metrics.csv";  // the logged rows (train/run/metrics_csv.h)
inline constexpr const char* kTrainLogFileName = "train.log";   // the run's log, every level
inline constexpr const char* kLockFileName = "lock";           // the pid of the RunLock's holder (train/run/run_lock.h)

/// The result files `rpb extrapolate` writes into its sweep folder: the table (train/sweep/results.h write_results)
/// and the figures (cli/plot_request.h draw_sweep_figures: results.<format> for sweep.figures; attention.svg is
/// what sweeps wrote before). Named here, below train/sweep, for train/run/output_file.h, which refuses to write over
/// them.
inline constexpr const char* kResultsCsvName = "results.csv";
inline constexpr const char* kResultsJsonName = "results.json";
inline constexpr const char* kResultsTexName = "results.tex";  // train/sweep/results_tex.h
inline constexpr const char* kSweepFigureNames[] = {"results.svg", "results.pdf", "results.png", "attention.svg"};

/// The file name of the checkpoint at `step`: "step_" + the step in 8 or more digits + ".h5"
/// ("step_00000100.h5").
std::string checkpoint_name(int64_t step);

/// Whether `name` is a checkpoint name as checkpoint_name writes it: "step_", 8 or more digits, ".h5".
bool is_checkpoint_name(const std::string& name);

/// Creates the run folder `run_dir` = `out_dir`/<name> and the folders above it when missing. A part of the path
/// that exists and is not a folder is refused by name: rpb::Error "run.out_dir <out_dir>: <part> is a regular file,
/// not a folder" (or "run folder <run_dir>: is ..." when the run folder itself is the file), as is a folder the
/// system cannot create (its reason).
void create_run_folder(const std::string& out_dir, const std::string& run_dir);

/// One checkpoint file of a run folder.
struct CheckpointFile {
  int64_t step;      // the step its name says
  std::string path;  // run_dir/name
};

/// Every entry of `run_dir` with a checkpoint name (whatever it is: a file, a link, a folder), newest
/// (highest step in the name) first; none when the folder does not exist.
std::vector<CheckpointFile> checkpoint_files(const std::string& run_dir);

/// Removes the temp files that rpb's atomic writes leave in `run_dir` when a process dies mid-write:
/// ".<name>.tmp.<pid digits>" where <name> is a checkpoint name, "latest", "config.toml" or "metrics.csv" (and is
/// not a folder); nothing else is touched. Returns the names removed. Call it only while holding the folder's
/// RunLock, when no live rpb process can be writing one of them.
std::vector<std::string> remove_stale_temp_files(const std::string& run_dir);

/// Moves the run folder `run_dir` aside (what --overwrite does; nothing is deleted): renames it to
/// "<run_dir>.old-<UTC time, 20261123T183000Z>", or "...Z-2", "...Z-3" when that name is taken, and returns the
/// new name. Throws rpb::Error naming both paths when the rename fails.
std::string move_run_aside(const std::string& run_dir);

}  // namespace rpb

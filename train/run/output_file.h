// rpb/train/run/output_file.h: writing the file a command-line flag names (`inspect --plot`, `eval --out`, `plot
// --out`, and any later flag that writes a file), so that no such flag destroys a file it was not asked to make.
//
// The output is written atomically (write_file_atomically: a temp file renamed over the path) and only as a
// regular file. Refused, with rpb::UsageError (exit 2) naming the flag, the path and the reason, before anything
// is written:
//   - a path that is not a regular file: a device node, a FIFO, a socket, a folder, and a symbolic link (rpb does
//     not write through links, nor replace them: name the file itself);
//   - one of the command's input files (the checkpoint, a text it reads), compared by device and inode, so a hard
//     link or another spelling of the same path is caught;
//   - a file rpb manages in a run folder: a checkpoint (step_*.h5), `latest`, `lock`, `config.toml`, `train.log`,
//     `metrics.csv`, `eval` and anything under `eval/`, and the temp files of atomic writes (".<name>.tmp.<pid>");
//     and a sweep folder's results.csv, results.json, results.tex and figures (results.svg, results.pdf, results.png,
//     attention.svg).
// A folder is taken for a run folder when it holds an entry (of any kind) named `config.toml`, `latest` or `lock`,
// or one with a checkpoint name: the lock and config.toml are the first files a run writes, so a run that has not
// saved a checkpoint yet is covered, and `latest` and the checkpoints stay one when config.toml is gone. A folder is
// taken for a sweep folder when it holds results.json or results.csv, or a folder named after a task kind (a
// sweep's runs live in <sweep>/<task>/<method>/seed<k>). The folder is the real one (links in the path resolved).
// An existing regular file anywhere else is replaced, as compilers and `curl -o` do.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rpb {

/// The flag that names an output file and the files its command reads.
struct OutputOptions {
  /// The flag, as messages name it: "--plot", "--out".
  std::string flag;
  /// A file the command reads: what it is ("checkpoint", "kjv text") and its path as given.
  struct Input {
    std::string what, path;
  };
  /// The command's input files; one that does not exist is skipped.
  std::vector<Input> inputs;
};

/// Throws rpb::UsageError "<flag> <path>: <reason>; nothing written" when `path` may not be written, as the
/// header describes; also when its folder does not exist. Cheap (a few stat calls; a folder is listed only when the
/// name is one rpb manages): call it before the command's expensive work, so a refused flag costs nothing.
///
/// @code
/// const rpb::OutputOptions svg{"--svg", {}};
/// CHECK_THROWS_WITH_AS(rpb::check_output_file("/dev/null", svg),
///                      doctest::Contains("--svg /dev/null: is a character device"), rpb::UsageError);
/// CHECK_THROWS_WITH_AS(rpb::check_output_file("/", svg), doctest::Contains("names a folder"), rpb::UsageError);
/// @endcode
void check_output_file(const std::string& path, const OutputOptions& options);

/// check_output_file (again: the path may have changed since the command checked it), then writes `content` to
/// `path` atomically (write_file_atomically). Errors of the write itself (a full disk) are rpb::Error.
void write_output_file(const std::string& path, std::string_view content, const OutputOptions& options);

}  // namespace rpb

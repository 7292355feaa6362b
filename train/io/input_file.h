// rpb/train/io/input_file.h: reading a file rpb is given (a config, a text, a checkpoint, a run folder's `latest`)
// so that no input can hang, exhaust memory or be swapped between a check and the read.
//
// The file is opened once, non-blocking (a FIFO is never waited on), checked on the open descriptor to be a
// regular file (a FIFO, a device, a socket or a folder is refused, naming what it is), and read through that same
// descriptor, at most `max_bytes` bytes: the bound is on the bytes actually read, not on the size the file reports
// (files under /proc report 0), so no file is ever read past its bound.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace rpb {

/// How a file is read: what it is (for messages) and how much of it may be read.
struct InputOptions {
  /// What the file is, starting the message of every error: "config", "checkpoint", "task.kjv_path".
  std::string what;
  /// The most bytes read; a file holding more is refused, naming the bound (and `limit_source`, when set).
  std::size_t max_bytes = 0;
  /// Where `max_bytes` comes from, for the message: "the memory limit (--max-memory 8G)"; "" for a fixed bound.
  std::string limit_source;
  /// A file rpb manages in a run folder: a symbolic link at `path` is refused instead of followed, and so is a
  /// file with another hard link (a file outside the folder that shares its data).
  bool in_run_folder = false;
};

/// Reads the regular file `path` whole and returns its bytes, as the header describes. Throws rpb::Error starting "<what> <path>: " for a
/// missing file ("no such file"), one that cannot be opened (the system's reason), one that is not a regular file
/// ("is a FIFO, not a regular file"), one larger than `max_bytes`, and, with `in_run_folder`, a symbolic link or a
/// file with more than one hard link.
///
/// @code
/// const std::string path = (std::filesystem::temp_directory_path() / "rpb_input_file_example.toml").string();
/// { std::ofstream(path) << "[run]\nsteps = 10\n"; }
/// rpb::InputOptions config;
/// config.what = "config";
/// config.max_bytes = 1 << 20;
/// CHECK(rpb::read_input_file(path, config) == "[run]\nsteps = 10\n");
/// config.max_bytes = 4;
/// CHECK_THROWS_WITH_AS(rpb::read_input_file(path, config), doctest::Contains("larger than 4 bytes"), rpb::Error);
/// CHECK_THROWS_WITH_AS(rpb::read_input_file("/dev/null", config),
///                      doctest::Contains("is a character device, not a regular file"), rpb::Error);
/// std::filesystem::remove(path);
/// @endcode
std::string read_input_file(const std::string& path, const InputOptions& options);

/// What a file of mode `mode` (stat's st_mode) is when it is not a regular file, as the messages say it: "a FIFO",
/// "a folder", "a character device", "a block device", "a socket", "a symbolic link", else "not a regular file"; ""
/// for a regular file.
std::string mode_kind(mode_t mode);

/// mode_kind of the file at `path` (lstat: a link is not followed); "" for a regular file or no file.
std::string non_regular_kind(const std::string& path);

}  // namespace rpb

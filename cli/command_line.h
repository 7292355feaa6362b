// rpb/cli/command_line.h: the command that resumes an interrupted run (printed after a signal), which repeats the
// command line rpb was started with (train/io/provenance.h process_command).
#pragma once

#include <string>
#include <vector>

namespace rpb {

/// The command that goes on with an interrupted run: `argv` as typed (argv[0] included), each word shell-quoted,
/// without --overwrite (the folder it moved aside is gone; the run now in it is the one to continue), and for `train`
/// without --resume-from and its value and with --resume appended (once); prefixed with "mpirun -np <ranks>" when
/// `ranks` > 1. Control bytes escaped for the terminal (terminal_text()). {"./rpb", "train", "my run.toml",
/// "--max-memory", "2G"} gives "./rpb train 'my run.toml' --max-memory 2G --resume".
std::string resume_command(const std::vector<std::string>& argv, bool train, int ranks);

/// The command that goes on with an interrupted `rpb <verb> <config> [--set ...]` (train, extrapolate): resume_command
/// of the command line as it was run (process_command), or, when rpb runs as a library, of one made of the
/// arguments; for this process's MPI ranks (train/dist/distributed.h).
std::string resume_hint(const std::string& verb, const std::string& config, const std::vector<std::string>& overrides);

}  // namespace rpb

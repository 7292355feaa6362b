// rpb/cli/command_line.h: the command line rpb was started with, and the command that resumes an interrupted run
// (printed after a signal), which repeats it.
#pragma once

#include <string>
#include <vector>

namespace rpb {

/// Remembers argv (main calls it before parsing): command_line() returns it.
void set_command_line(int argc, char** argv);
/// The words rpb was started with, argv[0] as typed; empty when rpb runs as a library (tests call cmd_train).
const std::vector<std::string>& command_line();

/// The command that goes on with an interrupted run: `argv` as typed (argv[0] included), each word shell-quoted,
/// without --overwrite (the folder it moved aside is gone; the run now in it is the one to continue), and for `train`
/// without --resume-from and its value and with --resume appended (once); prefixed with "mpirun -np <ranks>" when
/// `ranks` > 1. Control bytes escaped for the terminal (terminal_text()). {"./rpb", "train", "my run.toml",
/// "--max-memory", "2G"} gives "./rpb train 'my run.toml' --max-memory 2G --resume".
std::string resume_command(const std::vector<std::string>& argv, bool train, int ranks);

}  // namespace rpb

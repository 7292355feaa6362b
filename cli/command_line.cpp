// rpb/cli/command_line.cpp: see command_line.h.
#include "cli/command_line.h"

#include "core/text.h"

namespace rpb {

namespace {

std::vector<std::string>& stored_command_line() {
  static std::vector<std::string> argv;
  return argv;
}

// `arg` as one shell word: as it is when it holds only letters, digits and _./=,:@+-, else in single quotes.
std::string shell_word(const std::string& arg) {
  const bool plain = !arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                           "0123456789_./=,:@+-") == std::string::npos;
  if (plain) return arg;
  std::string q = "'";
  for (const char ch : arg) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

}  // namespace

void set_command_line(int argc, char** argv) { stored_command_line().assign(argv, argv + argc); }

const std::vector<std::string>& command_line() { return stored_command_line(); }

std::string resume_command(const std::vector<std::string>& argv, bool train, int ranks) {
  std::string c = ranks > 1 ? "mpirun -np " + std::to_string(ranks) : std::string();
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (i > 0 && a == "--overwrite") continue;
    if (i > 0 && train && a == "--resume") continue;  // appended at the end
    if (i > 0 && train && a == "--resume-from") {
      ++i;  // and its value
      continue;
    }
    if (i > 0 && train && a.rfind("--resume-from=", 0) == 0) continue;
    c += (c.empty() ? "" : " ") + shell_word(a);
  }
  if (train) c += " --resume";
  return terminal_text(c, 1000);  // control bytes escaped; a backslash stays one, as the shell reads it
}

}  // namespace rpb

// rpb/cli/command_line.cpp: see command_line.h.
#include "cli/command_line.h"

#include "core/text.h"
#include "train/dist/distributed.h"
#include "train/io/provenance.h"

namespace rpb {

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

std::string resume_hint(const std::string& verb, const std::string& config,
                        const std::vector<std::string>& overrides) {
  std::vector<std::string> argv = process_command();
  if (argv.empty()) {
    argv = {"rpb", verb, config};
    for (const std::string& o : overrides) argv.insert(argv.end(), {"--set", o});
  }
  return resume_command(argv, verb == "train", dist::size());
}

}  // namespace rpb

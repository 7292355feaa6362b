// rpb/cli/python_runner.cpp: see python_runner.h.
#include "cli/python_runner.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "cli/schemes.h"
#include "core/text.h"
#include "train/io/atomic_file.h"
#include "train/io/no_follow.h"

extern char** environ;

namespace fs = std::filesystem;

namespace rpb {

namespace {

#ifndef RPB_PYTHON_SOURCE_DIR
#define RPB_PYTHON_SOURCE_DIR "python"
#endif

constexpr std::size_t kKeptOutput = 16384;  // the module's last bytes of output kept for messages

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool executable(const std::string& path) {
  struct stat st{};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The first executable `name` in the folders of $PATH, or "".
std::string on_path(const std::string& name) {
  const std::string path = env("PATH");
  for (std::size_t at = 0; at <= path.size();) {
    const std::size_t end = std::min(path.find(':', at), path.size());
    const std::string dir = path.substr(at, end - at);
    if (const std::string candidate = (fs::path(dir.empty() ? "." : dir) / name).string(); executable(candidate))
      return candidate;
    at = end + 1;
  }
  return "";
}

// The last lines of the module's output, at most a few, escaped for the terminal.
std::string last_lines(const std::string& text, std::size_t lines = 6) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  std::size_t at = t.size();
  for (std::size_t n = 0; n < lines && at != std::string::npos && at > 0; ++n) at = t.rfind('\n', at - 1);
  return terminal_text(at == std::string::npos ? t : t.substr(at + 1), 4000);
}

// A file holding `text` without a name (memfd_create), for the module to read as its standard input: nothing is
// left on disk whatever ends rpb, and no message names a temp file.
FileDescriptor request_input(const std::string& text) {
  FileDescriptor fd(::memfd_create("rpb-plot-request", MFD_CLOEXEC));
  RPB_CHECK(fd.get() >= 0, "plot", "cannot create the plot request: ", std::strerror(errno));
  write_all(fd.get(), text, "the plot request", "plot");
  RPB_CHECK(::lseek(fd.get(), 0, SEEK_SET) == 0, "plot", "cannot rewind the plot request: ", std::strerror(errno));
  return fd;
}

// Runs argv with `input` as its standard input and stdout and stderr into one pipe; returns the wait status and the
// output (its last kKeptOutput bytes).
std::pair<int, std::string> run_captured(const std::vector<std::string>& args, const FileDescriptor& input) {
  int fds[2];
  RPB_CHECK(::pipe2(fds, O_CLOEXEC) == 0, "plot", "cannot create a pipe: ", std::strerror(errno));
  FileDescriptor read_end(fds[0]), write_end(fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, input.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  RPB_CHECK(rc == 0, "plot", "cannot run ", args[0], ": ", std::strerror(rc));
  write_end.close();
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > 2 * kKeptOutput) out.erase(0, out.size() - kKeptOutput);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (out.size() > kKeptOutput) out.erase(0, out.size() - kKeptOutput);
  return {status, out};
}

void remove_all(const std::vector<std::string>& paths) {
  std::error_code ec;
  for (const std::string& p : paths) fs::remove(p, ec);
}

}  // namespace

std::string plot_python() {
  if (const std::string p = env("RPB_PYTHON"); !p.empty()) {
    if (p.find('/') != std::string::npos) return p;
    const std::string found = on_path(p);  // a bare name: found on PATH
    return found.empty() ? p : found;
  }
  if (executable("/usr/bin/python3")) return "/usr/bin/python3";
  return on_path("python3");
}

std::string plot_module_dir() {
  const std::string dir = env("RPB_PYTHON_DIR");
  return dir.empty() ? std::string(RPB_PYTHON_SOURCE_DIR) : dir;
}

std::string figure_format(const std::string& path, const std::string& flag) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".pdf" || ext == ".png" || ext == ".svg") return ext.substr(1);
  throw UsageError(flag + " " + printable(path) + ": expected a file name ending in .pdf, .png or .svg (the figure's " +
                   "format), found " + (ext.empty() ? std::string("no extension") : "\"" + printable(ext) + "\""));
}

nlohmann::ordered_json plot_styles() { return {{"schemes", schemes_json().at("schemes")}}; }

void draw_figures(nlohmann::ordered_json request, const std::vector<PlotOutput>& outputs) {
  const std::string python = plot_python();
  if (python.empty())
    throw PlotUnavailable("no Python to draw with (RPB_PYTHON, /usr/bin/python3, python3 on PATH): install python3 "
                          "and python3-matplotlib (scripts/deps.sh does)");
  if (!executable(python)) throw PlotUnavailable("RPB_PYTHON " + printable(python) + ": not an executable file");
  // The package folder runs as a script (its __main__.py): `<python> <dir>/rpb_plot <request>`.
  const std::string module = (fs::path(plot_module_dir()) / "rpb_plot").string();
  struct stat st{};
  if (::stat((module + "/__main__.py").c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw PlotUnavailable("the plotting package " + printable(module) +
                          " is missing (set RPB_PYTHON_DIR to the folder holding rpb_plot/)");
  std::vector<std::string> temps;
  request["outputs"] = nlohmann::ordered_json::array();
  for (const PlotOutput& o : outputs) {
    if (o.rules) check_output_file(o.path, *o.rules);
    const std::string format = figure_format(o.path, o.rules ? o.rules->flag : std::string("figure"));
    remove_dead_temp_files(o.path);  // of plots and writes of o.path that were killed
    temps.push_back(fs::absolute(atomic_temp_path(o.path)).string());
    ::unlink(temps.back().c_str());  // a leftover of a dead process with this pid
    // The module writes the temp file itself ("direct": no temp file of its own, which a kill would leave under a
    // name of Python's), and names the output in its messages.
    request["outputs"].push_back({{"path", temps.back()}, {"format", format}, {"direct", true},
                                  {"name", fs::absolute(o.path).string()}});
  }
  const auto [status, output] = run_captured({python, module, "-"}, request_input(request.dump(1)));
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code != 0) {
    remove_all(temps);
    if (code == 3)  // the module's own message says how to install matplotlib
      throw PlotUnavailable(output.empty() ? "matplotlib is missing (" + printable(module) + " exited with code 3)"
                                           : last_lines(output));
    const std::string how = code < 0 ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                     : "exited with code " + std::to_string(code) +
                                           (code == 2 ? " (a bad request)" : "");
    throw Error("plot: " + printable(python) + " " + printable(module) + " " + how +
                (output.empty() ? std::string() : ":\n" + last_lines(output)));
  }
  if (!output.empty()) std::cerr << terminal_text(output);
  try {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].rules) check_output_file(outputs[i].path, *outputs[i].rules);  // it may have changed meanwhile
      commit_temp_file(temps[i], outputs[i].path, "plot " + printable(outputs[i].path));
    }
  } catch (...) {
    remove_all(temps);
    throw;
  }
}

}  // namespace rpb

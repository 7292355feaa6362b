// The CLI's messages and the config's guarantees: no source path without -v, a --set value's error names the
// --set, optim.grad_clip = 0 trains unclipped, run.out_dir naming a file is named, names with invisible Unicode
// characters are refused, the resume hint repeats the command line, and duplicate or unbounded lists are refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iterator>
#include <sstream>
#include <fstream>
#include <string>
#include <vector>

#include "cli/command_line.h"
#include "core/text.h"
#include "core/unicode.h"
#include "test_util.h"
#include "train/config/config.h"
#include "train/run/run_folder.h"

namespace rpb::cli_messages_tests {

namespace fs = std::filesystem;
using testing::contains;
using testing::run_rpb;
using testing::TempDir;

// The message of parsing `text` (source "F") with `overrides`; "" when it parses.
std::string config_message(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    parse_config(text, "F", overrides);
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

// The message of the rpb::Error `f` throws ("" when none).
std::string error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

// The fields of one CSV line.
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, ',');) out.push_back(f);
  return out;
}

// `rpb train configs/t5.toml` with the tiny run's overrides (<dir>/<name>, `steps` steps) and `extra` ones.
testing::CommandResult train_tiny(const TempDir& dir, const std::string& name, int64_t steps,
                                  const std::vector<std::string>& extra = {}) {
  std::string args = std::string("train ") + RPB_SOURCE_DIR + "/configs/t5.toml";
  std::vector<std::string> overrides = testing::tiny_t5_overrides(dir.path, name, steps);
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  for (const std::string& o : overrides) args += " --set '" + o + "'";
  return run_rpb(args);
}

TEST_CASE("messages: an error in a --set value names the --set, not the config file") {
  CHECK(config_message("[run]\nsteps = 10\n", {"run=5"}) ==
        "--set run=5: run = 5: expected a table [run], found an integer");
  CHECK(config_message("", {"run.eval_multipliers=[1, 0]"}) ==
        "--set run.eval_multipliers=[1, 0]: run.eval_multipliers = 0: expected an integer in [1, 1024]");
  CHECK(config_message("", {"sweep.tasks=[\"markov\", \"nope\"]"}).rfind("--set sweep.tasks=", 0) == 0);
  CHECK(config_message("", {"optim.group=5"}).rfind("--set optim.group=5: optim.group: expected", 0) == 0);
  CHECK(config_message("", {"newtable.key=1"}).rfind("--set newtable.key=1: unknown key", 0) == 0);
  // A value from the file still names the file and its line.
  CHECK(config_message("[run]\neval_multipliers = [1, 0]\n").rfind("F:2:", 0) == 0);
}

TEST_CASE("messages: duplicate seeds, tasks, methods and multipliers are refused, and lists are bounded") {
  CHECK(config_message("[sweep]\nseeds = [0, 0]\n") ==
        "F:2:13: sweep.seeds = 0: listed twice (elements 1 and 2); expected each value once");
  CHECK(contains(config_message("[sweep]\ntasks = [\"markov\", \"lag\", \"markov\"]\n"),
                 "sweep.tasks = \"markov\": listed twice (elements 1 and 3)"));
  CHECK(contains(config_message("[sweep]\nmethods = [\"t5\", \"alibi\", \"t5\"]\n"),
                 "sweep.methods = \"t5\": listed twice (elements 1 and 3)"));
  CHECK(contains(config_message("[run]\neval_multipliers = [1, 2, 2]\n"),
                 "F:2:27: run.eval_multipliers = 2: listed twice (elements 2 and 3)"));
  CHECK(contains(config_message("[run]\neval_every = 5\nvalid_multipliers = [1, 1]\n"),
                 "run.valid_multipliers = 1: listed twice"));
  CHECK(contains(config_message("", {"sweep.seeds=[3, 3]"}), "--set sweep.seeds=[3, 3]: sweep.seeds = 3: listed twice"));

  std::string seeds = "[sweep]\nseeds = [0";
  for (std::size_t s = 1; s <= run_limits::kMaxSweepSeeds; ++s) seeds += ", " + std::to_string(s);
  CHECK(contains(config_message(seeds + "]\n"), "sweep.seeds = ["));
  CHECK(contains(config_message(seeds + "]\n"), "expected at most 1000 integers, found 1001"));
  std::string multipliers = "[run]\neval_multipliers = [1";
  for (int m = 2; m <= 65; ++m) multipliers += ", " + std::to_string(m);
  CHECK(contains(config_message(multipliers + "]\n"), "run.eval_multipliers = ["));
  CHECK(contains(config_message(multipliers + "]\n"), "expected at most 64 integers, found 65"));
  std::string many = "[sweep]\nmethods = [\"t5\", \"alibi\", \"rope\", \"sinusoidal\", \"t5@max_distance=64\"]\nseeds = [0";
  for (int s = 1; s < 1000; ++s) many += ", " + std::to_string(s);
  CHECK(contains(config_message(many + "]\n"),
                 "sweep.seeds = ["));
  CHECK(contains(config_message(many + "]\n"), "5 methods x 1 tasks x 1000 seeds make 5000 runs; expected at most "
                                               "4096 runs in one sweep"));
}

TEST_CASE("messages: names holding controls or Unicode format and separator characters are refused") {
  CHECK(invisible_category(0x202E) == std::string("Cf"));
  CHECK(invisible_category(0x2028) == std::string("Zl"));
  CHECK(invisible_category(0x2029) == std::string("Zp"));
  CHECK(invisible_category(0x0085) == std::string("Cc"));
  CHECK(invisible_category(0xE0041) == std::string("Cf"));  // a tag character, at the table's end
  CHECK(invisible_category(0xE0080) == nullptr);
  CHECK(invisible_category(U'e') == nullptr);
  CHECK(invisible_category(0x00E9) == nullptr);
  for (const char* c : {"\\u202e", "\\u200b", "\\u2028", "\\u2029", "\\ufeff", "\\u0085", "\\u0007"}) {
    CAPTURE(c);
    const std::string name = std::string("run") + c + "txt.";
    CHECK(contains(config_message("[run]\nname = \"" + name + "\"\n"), "run.name = \""));
    CHECK(contains(config_message("[run]\nname = \"" + name + "\"\n"), "expected a folder name"));
    CHECK(contains(config_message("[run]\nout_dir = \"" + name + "\"\n"), "expected a path"));
    CHECK(contains(config_message("[sweep]\nmethods = [\"t5@max_distance=6" + std::string(c) + "4\"]\n"),
                   "a method names a run folder"));
  }
  CHECK(contains(config_message("[run]\nname = \"ab\\u202ecd\"\n"),
                 "found a format character (U+202E, category Cf)"));
  CHECK(contains(config_message("[run]\nname = \"ab\\u2028\"\n"), "found a line separator (U+2028, category Zl)"));
  // Messages quote such text escaped: the override cannot reorder what a terminal shows.
  CHECK(!contains(config_message("[run]\nname = \"ab\\u202ecd\"\n"), "\xe2\x80\xae"));
  CHECK(printable("a\xe2\x80\xae" "b") == "a\\xe2\\x80\\xaeb");
  CHECK(config_message("[run]\nname = \"r\\u00e9sum\\u00e9-\\u4e2d\"\n").empty());  // letters of any script pass
}

TEST_CASE("messages: the resume hint repeats the command line as it was run") {
  CHECK(resume_command({"/opt/x/rpb", "-v", "train", "my run.toml", "--max-memory", "2G", "--set", "run.steps=10"},
                       true, 1) == "/opt/x/rpb -v train 'my run.toml' --max-memory 2G --set run.steps=10 --resume");
  CHECK(resume_command({"./rpb", "train", "c.toml", "--resume-from", "r/step_00000005.h5", "--overwrite"}, true, 1) ==
        "./rpb train c.toml --resume");
  CHECK(resume_command({"./rpb", "train", "c.toml", "--resume", "--extend"}, true, 4) ==
        "mpirun -np 4 ./rpb train c.toml --extend --resume");
  CHECK(resume_command({"rpb", "extrapolate", "s.toml", "--set", "sweep.seeds=[0, 1]"}, false, 1) ==
        "rpb extrapolate s.toml --set 'sweep.seeds=[0, 1]'");
  CHECK(resume_command({"rpb", "train", "it's.toml"}, true, 1) == "rpb train 'it'\\''s.toml' --resume");
  CHECK(resume_command({"rpb", "train", "a\x1b[2J.toml"}, true, 1) == "rpb train 'a\\x1b[2J.toml' --resume");
}

TEST_CASE("messages: grad_clip = 0 trains unclipped, run.out_dir naming a file is named, no source path without -v") {
  TempDir tmp("cli_messages");
  // optim.grad_clip = 0 is "no clipping": the run trains and logs the gradient norm.
  const auto unclipped = train_tiny(tmp, "noclip", 3, {"optim.grad_clip=0.0"});
  REQUIRE_MESSAGE(unclipped.code == 0, unclipped.out);
  CHECK(!contains(unclipped.out, "max_norm"));
  std::ifstream csv(tmp.path / "noclip" / "metrics.csv");
  std::string header, row;
  std::getline(csv, header);
  std::getline(csv, row);
  const std::vector<std::string> names = fields(header);
  const auto column = std::find(names.begin(), names.end(), "grad_norm") - names.begin();
  REQUIRE(column < static_cast<std::ptrdiff_t>(names.size()));
  CHECK(std::stod(fields(row).at(static_cast<std::size_t>(column))) > 0);

  // run.out_dir naming a regular file, and a file where the run folder would be.
  const std::string file = tmp.file("afile");
  std::ofstream(file) << "mine";
  const auto r = run_rpb(std::string("train ") + RPB_SOURCE_DIR + "/configs/t5.toml --set run.out_dir='\"" + file +
                         "\"' --set run.steps=2 --set optim.warmup_steps=1");
  CHECK(r.code == 1);
  CHECK(contains(r.out, "run.out_dir " + file + ": " + file + " is a regular file, not a folder"));
  CHECK(!contains(r.out, "unexpected error"));
  CHECK(contains(error_message([&] { create_run_folder(tmp.path.string(), file); }),
                 "run folder " + file + ": is a regular file, not a folder"));
  CHECK(testing::file_text(file) == "mine");

  // Errors re-raised by eval and generate carry the message alone; -v logs where it was raised.
  const auto trained = train_tiny(tmp, "run", 2);
  REQUIRE_MESSAGE(trained.code == 0, trained.out);
  const std::string run = (tmp.path / "run").string();
  const auto prompt = run_rpb("generate " + run + " --prompt 'x 1'");
  CHECK(prompt.code == 2);
  CHECK(contains(prompt.out, "--prompt: expected token ids in [0, 5)"));
  CHECK(!contains(prompt.out, ".cpp:"));
  CHECK(contains(run_rpb("-v generate " + run + " --prompt 'x 1'").out, "raised at "));
  const auto records = [&] { return std::distance(fs::directory_iterator(tmp.path / "run" / "eval"), {}); };
  const auto before = records();
  const auto lengths = run_rpb("eval " + run + " --lengths 16,16");
  CHECK(lengths.code == 2);
  CHECK(contains(lengths.out, "eval --lengths: 16 is listed twice; expected each length once"));
  CHECK(records() == before);  // refused before anything was evaluated or recorded
}

}  // namespace rpb::cli_messages_tests

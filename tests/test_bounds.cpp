// Issue 13, bounds everywhere: every size key of a config has an upper bound, the evaluation lengths are checked
// against the held-out stream before training, run names and folders are checked, and user text reaches the
// terminal escaped and cut. Each case is a named error (key or flag, the value, the expected range) in well under
// a second.
#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/inspect.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/config/config.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace rpb;
using namespace rpb::testing;  // TempDir, contains, error_of, run_rpb

namespace {

// The error of parsing `text` (source "F", so locations read "F:line:column").
std::string config_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return error_of([&] { parse_config(text, "F", overrides); });
}

bool has_control_byte(const std::string& s) {
  for (const char ch : s)
    if (const auto b = static_cast<unsigned char>(ch); (b < 0x20 && b != '\n') || b == 0x7f) return true;
  return false;
}

}  // namespace

TEST_CASE("config: every size key has an upper bound, named with the value and the range") {
  struct Case {
    const char* table;
    const char* key;
    const char* value;
    const char* range;
  };
  const std::vector<Case> cases{
      {"run", "steps", "1099511627777", "[1, 1099511627776]"},
      {"run", "batch", "65537", "[1, 65536]"},
      {"run", "length", "1048576", "[1, 65536]"},
      {"run", "log_every", "9223372036854775807", "[1, 1099511627776]"},
      {"run", "checkpoint_every", "1099511627777", "[0, 1099511627776]"},
      {"run", "eval_tokens", "9223372036854775807", "[1, 4294967296]"},
      {"run", "eval_batch", "65537", "[1, 65536]"},
      {"model", "d_model", "65537", "[1, 65536]"},
      {"model", "heads", "1025", "[1, 1024]"},
      {"model", "layers", "1025", "[1, 1024]"},
      {"model", "d_ff", "1048577", "[1, 1048576]"},
      {"task", "vocab", "65537", "[2, 65536]"},
      {"task", "train_tokens", "9223372036854775807", "[2, 4294967296]"},
      {"task", "eval_tokens", "4294967297", "[2, 4294967296]"},
      {"grid", "window", "257", "[1, 256]"},
      {"grid", "eval_window", "257", "[0, 256]"},
      {"grid", "max_side", "65537", "[1, 65536]"},
      {"grid", "cpb_hidden", "65537", "[1, 65536]"},
      {"position", "num_buckets", "65537", "[2, 65536]"},
      {"position", "max_distance", "2305843009213693952", "[1, 1099511627776]"},  // 2^61
      {"position", "max_relative_position", "9223372036854775807", "[1, 1048576]"},
      {"position", "max_positions", "16777217", "[1, 16777216]"},
      {"optim", "warmup_steps", "1099511627777", "[0, 1099511627776]"},
  };
  for (const Case& c : cases) {
    const std::string key = std::string(c.table) + "." + c.key;
    CAPTURE(key);
    std::ostringstream text;
    text << "[" << c.table << "]\n" << c.key << " = " << c.value << "\n";
    const std::string e = config_error(text.str());
    CHECK(e.rfind("F:2:", 0) == 0);
    CHECK(contains(e, key + " = " + c.value + ": expected an integer in " + c.range));
  }
  CHECK(contains(config_error("[run]\neval_multipliers = [1, 1025]\n"),
                 "run.eval_multipliers = 1025: expected an integer in [1, 1024]"));
  // At the limits, a config is valid.
  CHECK(config_error("[position]\nscheme = \"t5\"\nmax_distance = 1099511627776\n").empty());
  CHECK(config_error("[run]\nlength = 4096\neval_multipliers = [1, 16]\neval_tokens = 65536\n"
                     "[task]\neval_tokens = 65537\n").empty());
}

TEST_CASE("config: the evaluation lengths are checked against the held-out stream before training") {
  // Default multipliers [1, 2, 4, 8, 16] at length 64: the longest evaluation reads 1024 tokens.
  CHECK(config_error("[task]\neval_tokens = 1000\n") ==
        "F: run.eval_multipliers: the longest evaluation length 16 x run.length 64 = 1024 needs 1025 held-out "
        "tokens; the markov test stream has task.eval_tokens = 1000");
  CHECK(config_error("[run]\neval_multipliers = [1, 32]\n[task]\nkind = \"lag\"\neval_tokens = 2048\n") ==
        "F:2:20: run.eval_multipliers = [ 1, 32 ]: the longest evaluation length 32 x run.length 64 = 2048 needs 2049 "
        "held-out tokens; the lag test stream has task.eval_tokens = 2048");
  CHECK(config_error("[run]\neval_tokens = 512\n") ==
        "F:1:1: run.eval_multipliers: the longest evaluation length 16 x run.length 64 = 1024 scores at least 1024 "
        "tokens, over run.eval_tokens = 512");
  CHECK(contains(config_error("[run]\neval_multipliers = [1, 3, 4]\n"),
                 "multiplier 3 does not divide the largest, 4: every length must score the same tokens"));
  // kjv's test stream is its test books: only run.eval_tokens is known up front.
  CHECK(config_error("[task]\nkind = \"kjv\"\neval_tokens = 100\n").empty());
  CHECK(contains(config_error("[task]\nkind = \"kjv\"\n[run]\neval_tokens = 100\n"), "over run.eval_tokens = 100"));
  // A sweep checks every task it runs, not only [task]'s.
  CHECK(contains(config_error("[task]\nkind = \"kjv\"\neval_tokens = 100\n[sweep]\ntasks = [\"kjv\", \"lag\"]\n"),
                 "the lag test stream has task.eval_tokens = 100"));
  // The longest sequence: tokens, or the cells of a grid whose side is the length.
  CHECK(contains(config_error("[run]\nlength = 8192\neval_tokens = 200000\n[task]\neval_tokens = 200000\n"),
                 "run.eval_multipliers: the longest evaluation length 16 x run.length 8192 = 131072: expected at "
                 "most 65536 positions per sequence"));
  CHECK(contains(config_error("[task]\nkind = \"grid2d\"\n[run]\nlength = 300\n"),
                 "run.length = 300: a 300 x 300 grid has 90000 cells; expected at most 65536 (a side of at most 256)"));
  CHECK(contains(config_error("[task]\nkind = \"grid2d\"\n[run]\nlength = 64\n"),
                 "16 x run.length 64 = 1024 (a grid of 1048576 cells): expected at most 65536 cells per sequence"));
  CHECK(config_error("[task]\nkind = \"grid2d\"\n[run]\nlength = 16\n").empty());
}

TEST_CASE("config: run.name is one folder name and run.out_dir a path, without control characters") {
  const std::string folder = "expected a folder name (one path component: not '.' or '..', no '/', no control, format "
                             "or separator characters, at most 200 bytes), found ";
  CHECK(config_error("[run]\nname = \"a\\u0000b\"\n") == "F:2:8: run.name = \"a\\x00b\": " + folder +
                                                              "a control character (U+0000)");
  CHECK(config_error("[run]\nname = \"\\u001b[2J\"\n") == "F:2:8: run.name = \"\\x1b[2J\": " + folder +
                                                               "a control character (U+001B)");
  CHECK(contains(config_error("[run]\nname = \"" + std::string(300, 'x') + "\"\n"),
                 "run.name = \"" + std::string(200, 'x') + "... (300 bytes)\": " + folder + "300 bytes"));
  CHECK(contains(config_error("[run]\nname = \"a/b\"\n"), folder + "a '/'"));
  CHECK(contains(config_error("[run]\nname = \"..\"\n"), folder + "'..'"));
  CHECK(contains(config_error("[run]\nname = \"\"\n"), folder + "an empty name"));
  CHECK(config_error("[run]\nname = \"" + std::string(200, 'x') + "\"\n").empty());
  CHECK(config_error("[run]\nname = \"r\xc3\xa9sum\xc3\xa9\"\n").empty());  // UTF-8 letters are fine

  const std::string path = "expected a path (no control, format or separator characters, at most 4096 bytes), found ";
  CHECK(contains(config_error("[run]\nout_dir = \"" + std::string(5000, 'd') + "\"\n"), path + "5000 bytes"));
  CHECK(contains(config_error("[run]\nout_dir = \"a\\nb\"\n"), "run.out_dir = \"a\\nb\": " + path +
                                                                    "a control character (U+000A)"));
  CHECK(contains(config_error("[task]\nkind = \"kjv\"\nkjv_path = \"k\\u001bjv.txt\"\n"),
                 "task.kjv_path = \"k\\x1bjv.txt\": " + path + "a control character (U+001B)"));
}

TEST_CASE("config errors quote user text escaped and cut") {
  // A 100 KB --set value: the message stays short and says how long the value was.
  const std::string big(100000, 'x');
  std::string e = config_error("", {"run.name=\"" + big + "\""});
  CHECK(e.size() < 1000);
  CHECK(contains(e, "--set run.name=\"xxx"));
  CHECK(contains(e, "... (100011 bytes): run.name = \"xxx"));
  CHECK(contains(e, "... (100000 bytes)\": expected a folder name"));
  e = config_error("", {"run.steps=[" + big});  // not TOML: the error quotes the spec, cut
  CHECK(e.size() < 1000);
  CHECK(contains(e, "... (100011 bytes): the value is not TOML"));
  // Escape sequences in values, keys and file names come out escaped.
  CHECK(contains(config_error("[position]\nscheme = \"\\u001b[2J\"\n"),
                 "position.scheme = \"\\x1b[2J\": expected one of"));
  CHECK(contains(config_error("[run]\n\"\\u001b]0;owned\\u0007\" = 1\n"), "unknown key run.\\x1b]0;owned\\x07"));
  CHECK(contains(config_error("", {"run.\x1b[2J=1"}), "--set run.\\x1b[2J=1: unknown key run.\\x1b[2J"));
  CHECK(contains(config_error("[sweep]\nmethods = [\"t5\\u001b[2J\"]\n"), "\"t5\\x1b[2J\": expected one of"));
  CHECK(error_of([] { load_config("/nonexistent/a\x1b[2J.toml"); }).rfind(
            "config /nonexistent/a\\x1b[2J.toml: no such file", 0) == 0);
  for (const std::string& m : {config_error("[run]\nname = \"\\u001b[2J\"\n"), config_error("", {"run.\x1b[2J=1"})})
    CHECK(!has_control_byte(m));
}

TEST_CASE("rpb: what reaches the terminal carries no control bytes") {
  const std::string esc = "\"$(printf 'x\\033[2J\\033]0;owned\\007')\"";  // ESC [ 2 J, and an OSC title
  for (const std::string& args : {esc,                             // an unknown subcommand
                                  "bias --heads " + esc,           // CLI11's conversion error
                                  "bias --scheme " + esc,          // an unknown scheme
                                  "inspect /nonexistent/" + esc,   // a file name in a library error
                                  "train /nonexistent/" + esc}) {  // a config file name
    CAPTURE(args);
    const auto r = run_rpb(args);
    CHECK(r.code != 0);
    CHECK(contains(r.out, "x\\x1b[2J\\x1b]0;owned\\x07"));
    CHECK(!has_control_byte(r.out));
  }
}

TEST_CASE("rpb inspect escapes what the checkpoint says about itself") {
  TempDir tmp("bounds_inspect");
  const std::string text = "[run]\nname = \"tiny\"\nout_dir = \"" + tmp.path.string() +
                           "\"\nsteps = 2\nbatch = 2\nlength = 8\nlog_every = 1\neval_multipliers = [1]\n"
                           "eval_tokens = 64\n[model]\nd_model = 8\nheads = 2\nlayers = 1\nd_ff = 16\n"
                           "[task]\nvocab = 5\norder = 1\ntrain_tokens = 512\neval_tokens = 256\n";
  Run run(parse_config(text, "tiny.toml"));
  run.train(false);
  Checkpoint c = load_checkpoint((fs::path(run.dir()) / "step_00000002.h5").string());
  c.library_version = "0.1\x1b[2J";
  c.optim.kind = "adamw\x1b]0;owned\x07";
  const std::string crafted = tmp.file("crafted.h5");
  save_checkpoint(crafted, c);
  std::ostringstream out;
  inspect_checkpoint(crafted, out);
  CHECK(contains(out.str(), "rpb 0.1\\x1b[2J"));
  CHECK(contains(out.str(), "optimizer adamw at step"));  // as configured, not the stored kind
  CHECK(!has_control_byte(out.str()));
}

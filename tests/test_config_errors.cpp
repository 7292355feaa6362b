// Out-of-range config values, read from a real file: each message is exactly
// "<file>:<line>:<column>: <key> = <value>: <what was expected>".
#include <doctest/doctest.h>

#include <fstream>

#include "config_errors.h"
#include "test_util.h"
#include "train/config/config.h"

using namespace rpb;
using namespace rpb::testing;  // TempDir, error_of

TEST_CASE("config range errors name file:line:column, the key, the value and what was expected") {
  // lr <= 0
  CHECK(config_file_error("[optim]\nlr = 0.0\n") == "F:2:6: optim.lr = 0.0: expected a value in (0, 1000]");
  CHECK(config_file_error("[optim]\nlr = -3e-4\n") == "F:2:6: optim.lr = -3e-04: expected a value in (0, 1000]");
  // dropout outside [0, 1)
  CHECK(config_file_error("[model]\ndropout = -0.1\n") == "F:2:11: model.dropout = -0.1: expected a value in [0, 1)");
  CHECK(config_file_error("[model]\n\ndropout = 1\n") == "F:3:11: model.dropout = 1: expected a value in [0, 1)");
  // heads that do not divide d_model
  CHECK(config_file_error("[model]\nd_model = 64\nheads = 6\n") ==
        "F:3:9: model.heads = 6: heads 6 must divide model.d_model 64");
  // t5: max_distance not above max_exact (num_buckets / 2 for the causal buckets of a language model)
  CHECK(config_file_error("[position]\nscheme = \"t5\"\nnum_buckets = 32\nmax_distance = 16\n") ==
        "F:4:16: position.max_distance = 16: invalid for scheme t5: max_distance 16 must be above max_exact 16 "
        "(num_buckets/2)");
  // The language model's t5 buckets are causal, where an odd num_buckets is valid; the bidirectional
  // check (an even num_buckets) is reached through `rpb bias` (tests/test_bias_cmd.cpp).
  CHECK(config_file_error("[position]\nscheme = \"t5\"\nnum_buckets = 31\nmax_distance = 128\n").empty());
  // lengths <= 0
  CHECK(config_file_error("[run]\nlength = -8\n") == "F:2:10: run.length = -8: expected an integer in [1, 65536]");
  CHECK(config_file_error("[run]\nbatch = 0\n") == "F:2:9: run.batch = 0: expected an integer in [1, 65536]");
  CHECK(config_file_error("[run]\neval_multipliers = [1, 2, 0]\n") ==
        "F:2:27: run.eval_multipliers = 0: expected an integer in [1, 1024]");
  CHECK(config_file_error("[task]\nkind = \"lag\"\nlag = 0\n") == "F:3:7: task.lag = 0: expected an integer in [1, 1048576]");
  // A learned table shorter than the train length
  CHECK(config_file_error("[run]\nlength = 64\n[position]\nscheme = \"learned\"\nmax_positions = 32\n") ==
        "F:5:17: position.max_positions = 32: the learned table needs at least run.length = 64 positions, got 32");
  // Nothing is coerced: a float where an integer is expected, a string where a number is.
  CHECK(config_file_error("[model]\nlayers = 2.0\n") ==
        "F:2:10: model.layers = 2.0: expected an integer in [1, 1024], found a float");
  CHECK(config_file_error("[optim]\nlr = \"1e-3\"\n") == "F:2:6: optim.lr = \"1e-3\": expected a number, found a string");
}

TEST_CASE("config: checking the position options of a huge model allocates nothing") {
  // Validation used to build the scheme with its tables: 4 TiB (learned), 8 GiB (shaw), and a
  // 65536 x 1024 t5 table drawn at random. Each is a valid config; none may take time or memory.
  for (const char* text : {"[model]\nd_model = 65536\nheads = 1\n[position]\nscheme = \"learned\"\nmax_positions = 16777216\n",
                           "[model]\nd_model = 1024\nheads = 1024\n[position]\nscheme = \"shaw\"\nmax_relative_position = 1048576\n",
                           "[model]\nd_model = 1024\nheads = 1024\n[position]\nscheme = \"t5\"\nnum_buckets = 65536\nmax_distance = 100000\n"}) {
    CAPTURE(text);
    CHECK(config_file_error(text).empty());
  }
  // Sizes still keep what makes them valid or not.
  CHECK(config_file_error("[model]\nd_model = 63\nheads = 1\n[position]\nscheme = \"sinusoidal\"\n") ==
        "F:5:10: position.scheme = \"sinusoidal\": invalid for scheme sinusoidal: d_model 63 must be even and at least 2 "
        "(sin and cos per frequency)");
}

TEST_CASE("a check on two keys names the --set override that set the other key") {
  TempDir tmp("config_errors");
  const std::string path = tmp.file("run.toml");
  std::ofstream(path) << "[optim]\nschedule = \"cosine\"\nwarmup_steps = 50\n[model]\nd_model = 64\nheads = 4\n";
  CHECK(error_of([&] { load_config(path, {"run.steps=10"}); }) ==
        path + ":3:16: optim.warmup_steps = 50: expected fewer warm-up steps than run.steps = 10 (set by --set "
               "run.steps=10)");
  CHECK(error_of([&] { load_config(path, {"model.d_model=63"}); }) ==
        path + ":6:9: model.heads = 4: heads 4 must divide model.d_model 63 (set by --set model.d_model=63)");
  // Set in the file, the other key is not blamed on an override.
  CHECK(error_of([&] { load_config(path, {"model.heads=5"}); }) ==
        "--set model.heads=5: model.heads = 5: heads 5 must divide model.d_model 64");
}

TEST_CASE("a mistyped value gets a did-you-mean over the values, not the keys") {
  CHECK(config_file_error("[position]\nscheme = \"alibii\"\n") ==
        "F:2:10: position.scheme = \"alibii\": expected one of learned, sinusoidal, rope, t5, shaw, log_decay, kerple_power, alibi, xpos, "
        "fire, none (did you mean \"alibi\"?)");
  CHECK(config_file_error("[sweep]\nmethods = [\"rope\", \"t55\"]\n") ==
        "F:2:11: sweep.methods = [ 'rope', 't55' ]: \"t55\": expected one of learned sinusoidal rope t5 shaw log_decay kerple_power alibi xpos fire none (1-D "
        "task) (did you mean \"t5\"?)");
  CHECK(config_file_error("[optim]\nkind = \"adamv\"\n") ==
        "F:2:8: optim.kind = \"adamv\": expected one of adamw, adam, sgd (did you mean \"adamw\"?)");
  CHECK(config_file_error("[position]\nscheme = \"transformer\"\n").find("did you mean") == std::string::npos);
}

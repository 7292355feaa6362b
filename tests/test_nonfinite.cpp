// Numbers are never silently wrong (issue 24): a checkpoint with non-finite parameters or optimizer state is
// refused by eval, generate and train --resume(-from), naming the dataset and its first index, and listed by
// inspect; an evaluation whose result is not finite is an error.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "hostile_files.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/checkpoint_finite.h"

namespace fs = std::filesystem;

namespace rpb_test_nonfinite {

using rpb::testing::CommandResult;
using rpb::testing::contains;
using rpb::testing::run_rpb;
using rpb::testing::TempDir;

// A 10-step t5 run in <dir>/nf with checkpoints at steps 5 and 10; returns its config arguments.
std::string train_tiny(const TempDir& dir) {
  std::string args = std::string(RPB_SOURCE_DIR) + "/configs/t5.toml";
  for (const std::string& o : rpb::testing::tiny_t5_overrides(dir.path, "nf", 10, 5)) args += " --set '" + o + "'";
  REQUIRE(run_rpb("train " + args).code == 0);
  return args;
}

// Rewrites the checkpoint `file` with `edit` applied to it, through rpb's own writer (every CRC right, as anyone
// editing a file with h5py and fixing the CRC would leave it).
void rewrite(const std::string& file, const std::function<void(rpb::Checkpoint&)>& edit) {
  rpb::Checkpoint c = rpb::load_checkpoint(file);
  edit(c);
  rpb::save_checkpoint(file, c);
}

rpb::Tensor& param(rpb::Checkpoint& c, const std::string& name) {
  for (auto& [n, t] : c.params)
    if (n == name) return t;
  FAIL("no parameter " << name);
  throw;
}

}  // namespace rpb_test_nonfinite

using namespace rpb_test_nonfinite;

TEST_CASE("non-finite checkpoint values: named by dataset, first index and count") {
  rpb::Checkpoint c = rpb::testing::small_checkpoint();
  CHECK(rpb::non_finite_datasets(c).empty());
  CHECK_NOTHROW(rpb::check_finite(c, "ck.h5"));
  c.params[0].second.mutable_data<float>()[5] = std::nanf("");               // w [2, 3]: index [1, 2]
  c.optim.tensors[1].second.mutable_data<float>()[0] = -INFINITY;            // exp_avg/b [3]
  c.optim.tensors[1].second.mutable_data<float>()[2] = INFINITY;
  const std::vector<rpb::NonFiniteDataset> bad = rpb::non_finite_datasets(c);
  REQUIRE(bad.size() == 2);
  CHECK(bad[0].line() == "/params/w[1, 2] is nan (1 of 6 values non-finite)");
  CHECK(bad[1].line() == "/optim/exp_avg/b[0] is -inf (2 of 3 values non-finite)");
  const std::string msg = rpb::testing::error_of([&] { rpb::check_finite(c, "ck.h5"); });
  CHECK(contains(msg, "checkpoint ck.h5: /params/w[1, 2] is nan (1 of 6 values non-finite); and 1 more dataset; "));
  CHECK(contains(msg, "`rpb inspect ck.h5` lists every non-finite dataset"));
}

TEST_CASE("eval, generate and train --resume-from refuse a checkpoint with one NaN parameter, inspect lists it") {
  TempDir dir("nonfinite");
  const std::string args = train_tiny(dir);
  const std::string run = (dir.path / "nf").string(), last = run + "/step_00000010.h5", mid = run + "/step_00000005.h5";
  for (const std::string& file : {last, mid})
    rewrite(file, [](rpb::Checkpoint& c) { param(c, "blocks.0.ln1.weight").mutable_data<float>()[3] = std::nanf(""); });
  const std::string named = "/params/blocks.0.ln1.weight[3] is nan (1 of 16 values non-finite)";

  const CommandResult eval = run_rpb("eval " + run + " --no-record");
  CHECK(eval.code == 1);
  CHECK(contains(eval.out, "checkpoint " + last + ": " + named));
  CHECK_FALSE(contains(eval.out, ".cpp:"));  // no source path without -v
  const CommandResult gen = run_rpb("generate " + run + " --prompt 1 --tokens 4");
  CHECK(gen.code == 1);
  CHECK(contains(gen.out, named));
  const CommandResult resume = run_rpb("train " + args + " --resume-from " + mid);
  CHECK(resume.code == 1);
  CHECK(contains(resume.out, "checkpoint " + mid + ": " + named));

  const CommandResult inspect = run_rpb("inspect " + run);
  CHECK(inspect.code == 0);
  CHECK(contains(inspect.out, "non-finite values in 1 dataset (eval, generate and train --resume refuse this "
                              "checkpoint):\n  " + named));
}

TEST_CASE("an evaluation whose result is not finite is an error naming the length") {
  TempDir dir("nonfinite_eval");
  train_tiny(dir);
  const std::string run = (dir.path / "nf").string();
  CHECK(contains(run_rpb("inspect " + run).out, "non-finite values: none"));
  // Finite parameters whose logits overflow: a final layer norm's gains near float32's largest give inf - inf.
  rewrite(run + "/step_00000010.h5", [](rpb::Checkpoint& c) {
    rpb::Tensor& g = param(c, "ln_f.weight");
    for (int64_t i = 0; i < g.numel(); ++i) g.mutable_data<float>()[i] = (i % 2 ? -3e38f : 3e38f);
  });
  const CommandResult eval = run_rpb("eval " + run + " --no-record");
  CHECK(eval.code == 1);
  CHECK(contains(eval.out, "eval: the mean NLL at length 16 is nan: the model's outputs are not finite numbers"));
  CHECK_FALSE(contains(eval.out, "| 16 |"));  // no table with a nan in it
}

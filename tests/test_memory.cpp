// train/config/memory.h and train/checkpoint/stored_model.h: the memory estimate against measured peaks, the budget that refuses
// runs up front, and checkpoints whose stored config describes another model.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>

#include "cli/eval.h"
#include "cli/inspect.h"
#include "core/tensor.h"
#include "test_util.h"
#include "train/checkpoint/stored_model.h"
#include "train/config/memory.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace rpb;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::TempDir;

namespace {

std::string small_config(const fs::path& out, const std::string& extra = "") {
  return "[run]\nname = \"mem\"\nout_dir = \"" + out.string() +
         "\"\nsteps = 3\nbatch = 4\nlength = 32\nlog_every = 1\neval_multipliers = [1, 4]\neval_tokens = 512\n"
         "eval_batch = 4\n[model]\nd_model = 32\nheads = 4\nlayers = 2\nd_ff = 64\n[position]\nscheme = \"t5\"\n"
         "[task]\nkind = \"markov\"\nvocab = 8\norder = 1\ntrain_tokens = 8192\neval_tokens = 4096\n[optim]\n"
         "warmup_steps = 1\n" + extra;
}

// Restores the budget a test changed.
struct BudgetGuard {
  MemoryBudget saved = memory_budget();
  ~BudgetGuard() { set_memory_budget(saved); }
};

}  // namespace

TEST_CASE("the memory estimate bounds the tensor storage a run holds, and is not far above it") {
  TempDir tmp("memory");
  // Each case changes what dominates: fused and reference attention, dropout masks, an untied head, grids with
  // windows and with global attention, SGD without moments.
  for (const std::string n : {"fused", "reference", "dropout", "untied", "grid_swin", "grid_reference", "sgd"}) {
    INFO("case: ", n);
    std::vector<std::string> sets = {"run.name=\"" + n + "\""};
    if (n == "reference" || n == "grid_reference") sets.push_back("model.fused_attention=false");
    if (n == "dropout") sets.push_back("model.dropout=0.1");
    if (n == "untied") sets.push_back("model.tie_head=false");
    if (n == "sgd") sets.push_back("optim.kind=\"sgd\"");
    if (n.rfind("grid", 0) == 0) {
      sets.insert(sets.end(), {"task.kind=\"grid2d\"", "run.length=8", "run.eval_multipliers=[1, 2]",
                               "task.eval_tokens=4096", "grid.window=4"});
      sets.push_back(n == "grid_swin" ? "position.scheme=\"swin\"" : "position.scheme=\"alibi2d\"");
    }
    const RunConfig cfg = parse_config(small_config(tmp.path), "small.toml", sets);
    const std::size_t before = live_memory_bytes();
    reset_peak_memory();
    std::size_t estimate = 0;
    {
      Run run(cfg);
      estimate = estimate_memory(cfg, vocab_bound(cfg)).total();
      run.train(false);
      run.evaluate();
    }
    const std::size_t peak = peak_memory_bytes() - before;
    INFO("peak ", peak, " bytes, estimate ", estimate);
    CHECK(peak <= estimate);
    CHECK(estimate <= 4 * peak);
  }
}

TEST_CASE("a run too large for the budget is refused before anything is built, naming the key") {
  BudgetGuard guard;
  TempDir tmp("memory_budget");
  set_memory_budget({64 << 20, "--max-memory 64M"});
  const std::size_t before = live_memory_bytes();
  reset_peak_memory();
  const std::string big_model = error_of([&] {
    Run run(parse_config(small_config(tmp.path), "small.toml",
                         {"model.d_model=4096", "model.d_ff=16384", "model.layers=64", "model.heads=16"}));
  });
  CHECK(contains(big_model, "model.d_model: the run needs about "));
  CHECK(contains(big_model, "more than the memory limit of 64.0 MiB (--max-memory 64M)"));
  CHECK(contains(big_model, "raise --max-memory"));
  const std::string big_batch =
      error_of([&] { Run run(parse_config(small_config(tmp.path), "small.toml", {"run.batch=65536"})); });
  CHECK(contains(big_batch, "run.batch: the run needs about "));
  const std::string big_table = error_of([&] {
    Run run(parse_config(small_config(tmp.path), "small.toml", {"task.vocab=64", "task.order=6"}));
  });
  CHECK(contains(big_table, "task.order: the run needs"));
  // Every size at its config bound: the estimate saturates instead of overflowing, and still names a key.
  const std::string corner = error_of([&] {
    Run run(parse_config(small_config(tmp.path), "small.toml",
                         {"model.d_model=65536", "model.heads=1024", "model.layers=1024", "model.d_ff=1048576",
                          "run.batch=65536", "run.length=65536", "run.eval_multipliers=[1]", "run.eval_tokens=65537",
                          "task.eval_tokens=65537", "model.fused_attention=false"}));
  });
  CHECK(contains(corner, ": the run needs about "));
  CHECK(contains(corner, "EiB"));
  CHECK(peak_memory_bytes() - before < (1 << 20));  // refused before building
  CHECK(!fs::exists(tmp.path / "mem"));
}

TEST_CASE("the memory estimate names the key whose value makes the model large, for its weights and its training") {
  TempDir tmp("memory_key");
  const std::map<std::string, std::vector<std::string>> cases = {
      {"model.d_model", {"model.d_model=65536"}},  // 2 layers: d_model's doing, not the layers'
      {"model.layers", {"model.layers=1024"}},
      {"model.d_ff", {"model.d_ff=1048576"}},
      {"model.d_model", {"model.d_model=4096", "model.d_ff=4096", "model.layers=8"}},
      {"model.layers", {"model.d_model=256", "model.layers=1024"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.second);
    const RunConfig cfg = parse_config(small_config(tmp.path), "small.toml", c.second);
    const MemoryEstimate e = estimate_memory(cfg, vocab_bound(cfg));
    CHECK(e.weights.key == c.first);
    CHECK(e.training.key == c.first);  // gradients and Adam's moments are the parameters' size again
  }
}

TEST_CASE("the budget caps tensor storage: an allocation past it is refused before it is made") {
  BudgetGuard guard;
  set_memory_budget({live_memory_bytes() + (8 << 20), "test"});
  const std::string msg = error_of([] { Tensor::empty({1 << 20, 64}, DType::f32); });
  CHECK(contains(msg, "storage: allocating 268435456 bytes"));
  CHECK(contains(msg, "over the memory limit"));
  CHECK(contains(error_of([] { Tensor::empty({int64_t{1} << 40, int64_t{1} << 30}, DType::f32); }), "overflows"));
  set_memory_budget({});
  CHECK(memory_limit() == 0);
}

TEST_CASE("memory sizes on the command line") {
  CHECK(parse_memory_size("512M", "--max-memory") == (std::size_t{512} << 20));
  CHECK(parse_memory_size("8G", "--max-memory") == (std::size_t{8} << 30));
  CHECK(parse_memory_size("1.5GiB", "--max-memory") == (std::size_t{3} << 29));
  CHECK(parse_memory_size("4096", "--max-memory") == 4096);
  CHECK(parse_memory_size("2kb", "--max-memory") == 2048);
  for (const char* bad : {"", "G", "-1G", "8X", "1e30", "nan", "8 G"})
    CHECK(contains(error_of([&] { parse_memory_size(bad, "--max-memory"); }), "--max-memory: expected a size"));
  CHECK(format_bytes(64 << 20) == "64.0 MiB");
  CHECK(format_bytes(1536) == "1.50 KiB");
  CHECK(available_memory() > 0);
}

TEST_CASE("a checkpoint whose stored config describes another model is refused before the model is built") {
  TempDir tmp("stored_model");
  const RunConfig cfg = parse_config(small_config(tmp.path), "small.toml");
  { Run(cfg).train(false); }
  const std::string file = (fs::path(cfg.run_dir()) / "step_00000003.h5").string();
  Checkpoint c = load_checkpoint(file);
  c.config_text = small_config(tmp.path);  // as written above, so that the subcases can edit it

  SUBCASE("a model thousands of times larger than the file") {
    BudgetGuard guard;  // without the check, the model would hit this cap, not the machine's memory
    set_memory_budget({std::size_t{1} << 30, "test"});
    c.config_text.replace(c.config_text.find("d_model = 32"), 12, "d_model = 4096");
    c.config_text.replace(c.config_text.find("layers = 2"), 10, "layers = 1024");
    const std::string crafted = tmp.file("big.h5");
    save_checkpoint(crafted, c);
    const std::size_t before = live_memory_bytes();
    reset_peak_memory();
    std::ostringstream out;
    const std::string msg = error_of([&] { inspect_checkpoint(crafted, out); });
    CHECK(contains(msg, "the stored config describes a model of "));
    CHECK(contains(msg, "d_model 4096, layers 1024"));
    CHECK(contains(msg, "far more than the "));
    CHECK(peak_memory_bytes() - before < (4 << 20));
    CHECK(contains(error_of([&] { cmd_eval(crafted, {}); }), "the stored config describes a model of "));
  }
  SUBCASE("a stored kjv_path is never created, written or read") {
    const fs::path planted = tmp.path / "planted" / "dir" / "kjv.txt";
    c.config_text.replace(c.config_text.find("kind = \"markov\""), 15,
                          "kind = \"kjv\"\nkjv_path = \"" + planted.string() + "\"");
    const std::string crafted = tmp.file("kjv.h5");
    save_checkpoint(crafted, c);
    std::ostringstream out;
    inspect_checkpoint(crafted, out);  // the model alone: the vocabulary comes from the file
    CHECK(contains(out.str(), "total "));
    const std::string missing = tmp.file("missing/kjv.txt");
    CHECK(contains(error_of([&] { cmd_eval(crafted, {}, missing); }), "does not exist"));
    CHECK(!fs::exists(tmp.path / "planted"));
    CHECK(!fs::exists(tmp.path / "missing"));
  }
  SUBCASE("a step outside [0, run.steps]") {
    for (const int64_t step : {int64_t{-1}, int64_t{4}, INT64_MAX}) {
      c.step = step;
      const std::string crafted = tmp.file("step.h5");
      save_checkpoint(crafted, c);
      std::ostringstream out;
      CHECK(contains(error_of([&] { inspect_checkpoint(crafted, out); }),
                     step < 0 ? "a step is never negative" : "is outside [0, run.steps = 3]"));
    }
  }
}

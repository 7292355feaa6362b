// A run is its config (issue 14): the effective config, its digest, and train / extrapolate refusing to continue or
// reuse a run folder trained with another config (--overwrite moves it aside, train --extend keeps the schedule).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <toml++/toml.h>

#include "nn/position/options.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/config/run_identity.h"
#include "train/run/latest.h"
#include "train/run/run_folder.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace rpb;
using namespace rpb::testing;  // TempDir, contains, error_of, file_text, run_rpb

namespace {

const std::string kSource = RPB_SOURCE_DIR;

// Every dotted key of an effective text, [sweep] aside ("optim.group.<key>" for each [[optim.group]]'s keys).
std::set<std::string> keys_of(const std::string& text) {
  std::set<std::string> keys;
  const toml::table t = toml::parse(text);
  for (auto&& [table, node] : t) {
    if (table.str() == "sweep") continue;
    for (auto&& [k, v] : *node.as_table()) {
      const std::string key = std::string(table.str()) + "." + std::string(k.str());
      if (v.is_array() && v.as_array()->is_array_of_tables())
        for (const toml::node& g : *v.as_array())
          for (auto&& [gk, gv] : *g.as_table()) keys.insert(key + "." + std::string(gk.str()));
      else keys.insert(key);
    }
  }
  return keys;
}

// `text` without the key `table.key`.
std::string without(const std::string& text, const std::string& dotted) {
  toml::table t = toml::parse(text);
  const auto dot = dotted.find('.');
  t[dotted.substr(0, dot)].as_table()->erase(dotted.substr(dot + 1));
  std::ostringstream os;
  os << t;
  return os.str();
}

// configs/t5.toml made tiny (tiny_t5_overrides), with lr 0.001 written out: the tests change it.
std::vector<std::string> identity_tiny(const fs::path& out, const std::string& name, int64_t steps) {
  std::vector<std::string> o = tiny_t5_overrides(out, name, steps);
  o.push_back("optim.lr=0.001");
  return o;
}

// The same as a shell command line: `rpb train configs/t5.toml --set ...` plus `extra`.
std::string train_command(const fs::path& out, const std::string& name, int64_t steps, const std::string& extra) {
  std::string cmd = "train " + kSource + "/configs/t5.toml";
  for (const std::string& o : identity_tiny(out, name, steps)) cmd += " --set '" + o + "'";
  return cmd + " " + extra;
}

// The folders `<dir>.old-*` next to `dir`.
std::vector<fs::path> moved_aside(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir.parent_path()))
    if (e.path().filename().string().rfind(dir.filename().string() + ".old-", 0) == 0) out.push_back(e.path());
  return out;
}

}  // namespace

TEST_CASE("effective config: every key the parser accepts, with its value, parsing it gives the same config") {
  const std::vector<std::pair<std::string, std::string>> texts = {
      {"empty", ""},
      {"t5.toml", file_text(kSource + "/configs/t5.toml")},
      {"alibi.toml", file_text(kSource + "/configs/alibi.toml")},
      {"text.toml", file_text(kSource + "/configs/text.toml")},
      {"passkey.toml", file_text(kSource + "/configs/passkey.toml")},
      {"extrapolation_2d.toml", file_text(kSource + "/configs/extrapolation_2d.toml")},
      {"grid2d swin_v2", "[task]\nkind = \"grid2d\"\n[position]\nscheme = \"swin_v2\"\n[run]\nlength = 8\n"
                         "eval_multipliers = [1, 2]\n"},
  };
  for (const auto& entry : texts) {  // not a structured binding: clang 14 cannot capture one (CAPTURE)
    const std::string& name = entry.first;
    const std::string& text = entry.second;
    CAPTURE(name);
    const RunConfig c = parse_config(text, name);
    const std::set<std::string> keys = keys_of(c.text);
    // Complete: the parser's own list of the keys it read is in the text, and nothing else is, but the keys added
    // after runs were stored, which these configs leave at their default: run.eval_stride, run.device and a
    // fine-tune's run.init_from, init_sha256 and finetune_length (written only when set: their rows' `written`,
    // train/config/config_keys.cpp) and the position options marked added (PositionOptionInfo::added).
    const std::vector<std::string> accepted = accepted_keys(text, name);
    std::set<std::string> written(accepted.begin(), accepted.end());
    for (const char* k : {"run.eval_stride", "run.device", "run.init_from", "run.init_sha256", "run.finetune_length",
                          "model.causal"})  // model.causal: written when false (a bidirectional model)
      CHECK(written.erase(k) == 1);
    // The algorithmic tasks' keys: written for those tasks only (their rows' `written`).
    for (const char* k : {"task.alphabet", "task.min_length", "task.eval_samples"}) CHECK(written.erase(k) == 1);
    // The keys of one's own corpus and its tokenizer: written for the text task only (their rows' `written`).
    if (c.task.kind != "text")
      for (const char* k : {"task.path", "task.documents", "task.valid_fraction", "task.test_fraction", "task.tokenizer",
                            "task.sentencepiece_model", "task.sentencepiece_sentences"})
        CHECK(written.erase(k) == 1);
    // Passkey retrieval's keys: written for the passkey task only (their rows' `written`).
    if (c.task.kind != "passkey")
      for (const char* k : {"task.passkey_digits", "task.passkey_samples"}) CHECK(written.erase(k) == 1);
    for (const nn::PositionOptionInfo& o : nn::position_option_table())
      if (o.added) CHECK(written.erase(std::string(o.table) + "." + o.key) == 1);
    CHECK(written == keys);
    for (const char* k : {"model.gelu", "model.tie_head", "model.attn_scale", "optim.total_steps", "run.seed",
                          "position.scheme", "task.kind"})
      CHECK_MESSAGE(keys.count(k) == 1, k);
    // A round trip: the effective text reads back as itself (every value it holds is the one the parser kept).
    const RunConfig again = parse_config(c.text, "effective");
    CHECK(again.text == c.text);
    CHECK(again.model.d_model == c.model.d_model);
    CHECK(again.model.gelu == c.model.gelu);
    CHECK(again.optim.schedule.lr == c.optim.schedule.lr);
    CHECK(again.optim.schedule.total_steps == c.optim.schedule.total_steps);
    CHECK(again.optim.adam.groups.size() == c.optim.adam.groups.size());
    CHECK(again.model.position.scheme == c.model.position.scheme);
    CHECK(config_digest(again) == config_digest(c));
  }
  // The defaults written are the defaults read: removing any one key of the all-defaults text changes nothing.
  const std::string defaults = parse_config("", "empty").text;
  for (const std::string& key : keys_of(defaults)) {
    CAPTURE(key);
    CHECK(parse_config(without(defaults, key), "one key less").text == defaults);
  }
}

TEST_CASE("config digest: stable across order, spacing, comments and non-identity keys, changes with optim.lr") {
  const std::string a = "[run]\nsteps = 10\nseed = 1\n[optim]\nlr = 0.001\n";
  const std::string b = "# a comment\n[optim]\n  lr   =   1e-3   # the rate\n\n[run]\nname = \"other\"\n"
                        "log_every = 3\nseed = 1\nsteps = 10\n[sweep]\nseeds = [4]\n";
  const std::string da = config_digest(parse_config(a, "a"));
  CHECK(da.size() == 64);
  CHECK(config_digest(parse_config(b, "b")) == da);
  const RunConfig c = parse_config(a, "a", {"optim.lr=0.01"});
  CHECK(config_digest(c) != da);
  const std::vector<ConfigChange> changes = identity_changes(parse_config(a, "a"), c);
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].line() == "optim.lr: 0.001 -> 0.01");
  // A config stored before effective configs (as written, keys missing) compares by its effective form.
  const RunConfig now = parse_config(a, "a");
  CHECK(match_run(a, "old.h5", now, false).changes.empty());
  CHECK(match_run(b, "old.h5", now, false).changes.empty());
  const std::string listed = changed_config_message("train", "out/run", "out/run/step_00000010.h5",
                                                    match_run(a, "old.h5", c, false).changes);
  CHECK(contains(listed, "the config differs from the one out/run/step_00000010.h5 was trained with:\n"
                         "  optim.lr: 0.001 -> 0.01\n"));
  CHECK(contains(listed, "--overwrite"));
  CHECK(contains(listed, "run.name"));
}

TEST_CASE("train --resume: a changed config is refused naming the keys, --overwrite moves the folder aside") {
  TempDir tmp("identity_resume");
  const fs::path dir = tmp.path / "run";
  REQUIRE(run_rpb(train_command(tmp.path, "run", 4, "")).code == 0);
  const std::string digest = config_digest(load_config(kSource + "/configs/t5.toml", identity_tiny(tmp.path, "run", 4)));
  CHECK(contains(file_text(dir / "config.toml"), "# config_digest = " + digest));
  CHECK(load_checkpoint((dir / "step_00000004.h5").string()).config_digest == digest);

  const auto changed = run_rpb(train_command(tmp.path, "run", 4, "--resume --set optim.lr=0.01"));
  CAPTURE(changed.out);
  CHECK(changed.code == 1);
  CHECK(contains(changed.out, "optim.lr: 0.001 -> 0.01"));
  CHECK(contains(changed.out, "--overwrite"));
  const auto fresh = run_rpb(train_command(tmp.path, "run", 4, "--set optim.lr=0.01"));
  CHECK(fresh.code == 1);
  CHECK(contains(fresh.out, "already holds checkpoints"));
  CHECK(contains(fresh.out, "--overwrite"));
  CHECK(moved_aside(dir).empty());

  const auto over = run_rpb(train_command(tmp.path, "run", 4, "--resume --set optim.lr=0.01 --overwrite"));
  CAPTURE(over.out);
  REQUIRE(over.code == 0);
  const std::vector<fs::path> aside = moved_aside(dir);
  REQUIRE(aside.size() == 1);
  CHECK(contains(over.out, "moved the previous run folder aside to " + aside[0].string()));
  // The old run is kept whole; the new one trained from step 0 with the new rate.
  CHECK(fs::exists(aside[0] / "step_00000004.h5"));
  CHECK(contains(file_text(aside[0] / "config.toml"), "lr = 0.001"));
  const Checkpoint now = load_checkpoint(read_latest(dir.string()));
  CHECK(contains(now.config_text, "lr = 0.01"));
  CHECK(now.metrics.front().step == 1);
  // A fresh train with --overwrite moves any run aside, whatever its config.
  REQUIRE(run_rpb(train_command(tmp.path, "run", 4, "--set optim.lr=0.01 --overwrite")).code == 0);
  CHECK(moved_aside(dir).size() == 2);
  // A second move aside in the same second gets another name.
  fs::create_directories(tmp.path / "x");
  fs::create_directories(tmp.path / "y");
  const std::string x = move_run_aside((tmp.path / "x").string());
  fs::rename(tmp.path / "y", tmp.path / "x");
  const std::string y = move_run_aside((tmp.path / "x").string());
  CHECK(x != y);
  CHECK(fs::is_directory(x));
  CHECK(fs::is_directory(y));
}

TEST_CASE("train --resume with more run.steps: refused without --extend, with it the rate stays at the floor") {
  TempDir tmp("identity_extend");
  const fs::path dir = tmp.path / "run";
  REQUIRE(run_rpb(train_command(tmp.path, "run", 6, "")).code == 0);
  const auto refused = run_rpb(train_command(tmp.path, "run", 6, "--resume --set run.steps=10"));
  CAPTURE(refused.out);
  CHECK(refused.code == 1);
  CHECK(contains(refused.out, "run.steps: 6 -> 10"));
  CHECK(!contains(refused.out, "optim.total_steps"));
  CHECK(contains(refused.out, "--extend"));

  const auto extended = run_rpb(train_command(tmp.path, "run", 6, "--resume --set run.steps=10 --extend"));
  CAPTURE(extended.out);
  REQUIRE(extended.code == 0);
  CHECK(contains(extended.out, "--extend: run.steps 6 -> 10"));
  // Resumed again as extended (no --extend needed), then extended a second time.
  CHECK(run_rpb(train_command(tmp.path, "run", 6, "--resume --set run.steps=10")).code == 0);
  REQUIRE(run_rpb(train_command(tmp.path, "run", 6, "--resume --set run.steps=12 --extend")).code == 0);

  const Checkpoint c = load_checkpoint(read_latest(dir.string()));
  CHECK(c.step == 12);
  CHECK(contains(c.config_text, "total_steps = 6"));
  CHECK(c.config_digest == config_digest(parse_stored_config(c.config_text, "stored")));
  const RunConfig cfg = parse_config(c.config_text, "stored");
  const double min_lr = cfg.optim.schedule.min_lr_ratio * cfg.optim.schedule.lr;
  REQUIRE(c.metrics.size() == 12);
  for (std::size_t i = 1; i < c.metrics.size(); ++i) {
    CAPTURE(c.metrics[i].step);
    CHECK(c.metrics[i].lr <= c.metrics[i - 1].lr);  // after the one warm-up step, it never rises
    if (c.metrics[i].step > 6) CHECK(c.metrics[i].lr == doctest::Approx(min_lr).epsilon(1e-12));
  }
  // --extend only continues a run.
  const auto alone = run_rpb(train_command(tmp.path, "other", 6, "--extend"));
  CHECK(alone.code == 1);
  CHECK(contains(alone.out, "--extend trains a run on past its run.steps: pass it with --resume or --resume-from"));
  // Shortening below the step reached stays an error.
  const auto shorter = run_rpb(train_command(tmp.path, "run", 6, "--resume --set run.steps=8 --extend"));
  CHECK(shorter.code == 1);
  CHECK(contains(shorter.out, "step 12"));
}

TEST_CASE("extrapolate: a changed config reruns nothing silently, --overwrite retrains the changed runs") {
  TempDir tmp("identity_sweep");
  std::string sets = " --set 'run.out_dir=\"" + tmp.path.string() + "\"' --set run.name=sweep"
                     " --set 'sweep.methods=[\"t5\"]' --set 'sweep.seeds=[0]' --set sweep.figures=false";
  for (const std::string& o : identity_tiny(tmp.path, "sweep", 4))
    if (o.rfind("run.out_dir", 0) != 0 && o.rfind("run.name", 0) != 0) sets += " --set '" + o + "'";
  const std::string cmd = "extrapolate " + kSource + "/configs/t5.toml" + sets;
  const fs::path run = tmp.path / "sweep" / "markov" / "t5" / "seed0";
  REQUIRE(run_rpb(cmd).code == 0);
  CHECK(contains(run_rpb(cmd).out, "finished earlier, reusing"));

  const auto changed = run_rpb(cmd + " --set optim.lr=0.01");
  CAPTURE(changed.out);
  CHECK(changed.code == 1);
  CHECK(!contains(changed.out, "reusing"));
  CHECK(contains(changed.out, "optim.lr: 0.001 -> 0.01"));
  CHECK(contains(changed.out, "--overwrite"));
  const auto longer = run_rpb(cmd + " --set run.steps=6");
  CHECK(longer.code == 1);
  CHECK(contains(longer.out, "run.steps: 4 -> 6"));
  CHECK(!contains(longer.out, "--extend"));  // a sweep never extends
  CHECK(load_checkpoint(read_latest(run.string())).step == 4);

  const auto over = run_rpb(cmd + " --set optim.lr=0.01 --overwrite");
  CAPTURE(over.out);
  REQUIRE(over.code == 0);
  CHECK(contains(over.out, "training in"));
  REQUIRE(moved_aside(run).size() == 1);
  CHECK(fs::exists(moved_aside(run)[0] / "step_00000004.h5"));
  CHECK(contains(load_checkpoint(read_latest(run.string())).config_text, "lr = 0.01"));
}

#include "train/sweep/sweep.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "core/text.h"
#include "nn/position.h"
#include "train/config/memory.h"
#include "train/config/run_identity.h"
#include "train/data/task_registry.h"
#include "train/dist/distributed.h"
#include "train/io/atomic_file.h"
#include "train/sweep/labels.h"
#include "train/sweep/work_queue.h"
#include "train/trainer.h"

namespace fs = std::filesystem;

namespace rpb {

std::vector<std::optional<double>> MethodResult::column(std::size_t j) const {
  std::vector<std::optional<double>> c;
  for (const auto& seed : ppl) c.push_back(j < seed.size() ? seed[j] : std::nullopt);
  return c;
}

std::vector<std::optional<double>> MethodResult::distance_column(std::size_t j) const {
  std::vector<std::optional<double>> c;
  for (const auto& seed : attention)
    c.push_back(j < seed.size() ? seed[j].mean_distance_overall() : std::nullopt);
  return c;
}

data::PositionLoss MethodResult::pooled_position_loss(std::size_t j) const {
  data::PositionLoss pooled;
  for (const auto& seed : position_loss)
    if (j < seed.size()) pooled += seed[j];
  return pooled;
}

const AttentionDiagnostics& MethodResult::attention_at(std::size_t s, std::size_t j) const {
  static const AttentionDiagnostics none;
  return s < attention.size() && j < attention[s].size() ? attention[s][j] : none;
}

bool any_positive(const SeedTable<int64_t>& bytes) {
  for (const auto& seed : bytes)
    if (std::any_of(seed.begin(), seed.end(), [](int64_t b) { return b > 0; })) return true;
  return false;
}

bool any_defined(const SeedTable<std::optional<double>>& values) {
  for (const auto& seed : values)
    if (std::any_of(seed.begin(), seed.end(), [](const std::optional<double>& v) { return v.has_value(); }))
      return true;
  return false;
}

std::optional<double> bits_per_byte_at(const SeedTable<std::optional<double>>& nll, const SeedTable<int64_t>& tokens,
                                       const SeedTable<int64_t>& bytes, std::size_t s, std::size_t j) {
  LengthResult r;
  r.nll = cell_or(nll, s, j, std::optional<double>());
  r.tokens = cell_or(tokens, s, j, int64_t(0));
  r.bytes = cell_or(bytes, s, j, int64_t(0));
  return r.bits_per_byte();
}

int64_t MethodResult::bytes_at(std::size_t s, std::size_t j) const { return cell_or(bytes, s, j, int64_t(0)); }

std::optional<double> MethodResult::accuracy_at(std::size_t s, std::size_t j) const {
  return cell_or(accuracy, s, j, std::optional<double>());
}

std::optional<double> MethodResult::token_accuracy_at(std::size_t s, std::size_t j) const {
  return cell_or(token_accuracy, s, j, std::optional<double>());
}

const std::vector<double>& MethodResult::depth_accuracy_at(std::size_t s, std::size_t j) const {
  static const std::vector<double> none;
  return cell_or(depth_accuracy, s, j, none);
}

int64_t MethodResult::samples_per_depth_at(std::size_t s, std::size_t j) const {
  return cell_or(samples_per_depth, s, j, int64_t(0));
}

std::optional<double> MethodResult::bits_per_byte(std::size_t s, std::size_t j) const {
  return bits_per_byte_at(nll, tokens, bytes, s, j);
}

std::vector<std::optional<double>> MethodResult::bits_per_byte_column(std::size_t j) const {
  std::vector<std::optional<double>> c;
  for (std::size_t s = 0; s < ppl.size(); ++s) c.push_back(bits_per_byte(s, j));
  return c;
}

std::vector<std::optional<double>> MethodResult::accuracy_column(std::size_t j) const {
  std::vector<std::optional<double>> c;
  for (std::size_t s = 0; s < ppl.size(); ++s) c.push_back(accuracy_at(s, j));
  return c;
}

bool MethodResult::has_bytes() const { return any_positive(bytes); }
std::vector<std::optional<double>> MethodResult::token_accuracy_column(std::size_t j) const {
  std::vector<std::optional<double>> c;
  for (std::size_t s = 0; s < token_accuracy.size(); ++s) c.push_back(token_accuracy_at(s, j));
  return c;
}

bool MethodResult::has_accuracy() const { return any_defined(accuracy); }

bool MethodResult::has_token_accuracy() const { return any_defined(token_accuracy); }

std::optional<std::pair<double, double>> mean_std(const std::vector<std::optional<double>>& v) {
  std::vector<double> x;
  for (const auto& e : v)
    if (e && std::isfinite(*e)) x.push_back(*e);
  if (x.empty()) return std::nullopt;
  double m = 0;
  for (double e : x) m += e;
  m /= static_cast<double>(x.size());
  double s = 0;
  for (double e : x) s += (e - m) * (e - m);
  s = x.size() > 1 ? std::sqrt(s / static_cast<double>(x.size() - 1)) : 0.0;
  return std::make_pair(m, s);
}

std::vector<bool> learned_seeds(const std::vector<std::vector<std::optional<double>>>& accuracy,
                                const std::vector<std::optional<double>>& trained, double threshold) {
  if (!trained.empty()) {
    RPB_CHECK(trained.size() == accuracy.size(), "sweep", trained.size(), " trained accuracies for ", accuracy.size(),
              " seeds");
    std::vector<bool> out;
    for (const auto& a : trained) out.push_back(a && *a >= threshold);
    return out;
  }
  std::vector<bool> out;
  for (const auto& seed : accuracy) out.push_back(!seed.empty() && seed.front() && *seed.front() >= threshold);
  return out;
}

std::vector<std::optional<std::pair<double, double>>> accuracy_stats(
    const std::vector<std::vector<std::optional<double>>>& accuracy, const std::vector<std::optional<double>>& trained,
    double threshold) {
  const std::vector<bool> learned = learned_seeds(accuracy, trained, threshold);
  std::size_t lengths = 0;
  for (const auto& seed : accuracy) lengths = std::max(lengths, seed.size());
  std::vector<std::optional<std::pair<double, double>>> out;
  for (std::size_t j = 0; j < lengths; ++j) {
    std::vector<std::optional<double>> column;
    for (std::size_t s = 0; s < accuracy.size(); ++s)
      if (j == 0 || learned[s]) column.push_back(j < accuracy[s].size() ? accuracy[s][j] : std::nullopt);
    out.push_back(mean_std(column));
  }
  return out;
}

namespace {

// The run of one method, task and seed: trained, or resumed, or reused when it has finished; a folder trained with
// another config is refused, or with `overwrite` moved aside (by Run::train) and the run trained afresh. `what`
// names it ("[3/72] markov / t5 / seed 0"): it starts every line the sweep, the run's training and its
// evaluation log about it (the context's prefix, "<what>:"). Returns the run's record: its folder, config digest and
// final checkpoint (with the SHA-256 of the bytes loaded or saved). `log_reuse` false: a reused run is not announced
// (a row evaluating a shared folder that its own method has just trained or reused, and announced).
SweepRunRecord train_or_reuse(Run& run, const std::string& what, bool overwrite, ProgressContext context,
                              bool log_reuse = true) {
  context.prefix = what + ":";
  const auto latest = run.latest(FileDigest::sha256);
  std::vector<ConfigChange> changes;
  if (latest) changes = match_run(latest->second.config_text, latest->first, run.config(), /*extend=*/false).changes;
  if (!changes.empty() && !overwrite)
    throw Error(changed_config_message("extrapolate", run.dir(), latest->first, changes));
  run.set_context(std::move(context));  // its prefix shows in the training's progress and the evaluation's
  if (latest && changes.empty() && latest->second.step >= run.config().steps) {
    if (log_reuse) spdlog::info("{}: finished earlier, reusing {}", what, run.dir());
    run.restore(latest->second, latest->first);
    return {run.dir(), config_digest(run.config()), fs::path(latest->first).filename().string(),
            latest->second.file_sha256};
  }
  spdlog::info("{}: training in {}", what, run.dir());
  const TrainSummary s = run.train(/*resume=*/true, {}, {.extend = false, .overwrite = overwrite});
  return {run.dir(), config_digest(run.config()), fs::path(s.checkpoint).filename().string(), s.checkpoint_sha256};
}

// The method whose runs `m` evaluates: `m` without its evaluation settings (the keys of non_identity_keys(), which
// change no trained weight: "t5@untrained=nearest" -> "t5", "xpos@xpos_scale_base=32@blockwise=true" ->
// "xpos@xpos_scale_base=32"), its text the segments written for the settings it keeps. A fine-tune is its own (its
// rope scaling trains with it, and its run.init_from names its parent).
SweepMethod trained_method(const SweepMethod& m) {
  if (m.parent()) return m;
  const std::vector<std::string> parts = m.segments();  // as parse_method read them: the scheme, then the settings
  RPB_CHECK(parts.size() == m.settings.size() + 1, "sweep", "method \"", printable(m.text), "\" has ",
            m.settings.size(), " settings and ", parts.size() - 1, " segments after its scheme");
  const std::vector<std::string>& evaluation = non_identity_keys();
  SweepMethod t{m.scheme, m.scheme, {}};
  for (std::size_t i = 0; i < m.settings.size(); ++i)
    if (std::find(evaluation.begin(), evaluation.end(), m.settings[i].key) == evaluation.end()) {
      t.text += "@" + parts[i + 1];
      t.settings.push_back(m.settings[i]);
    }
  return t;
}

// The folder of a method's runs: that of the method it evaluates (trained_method): its scheme's for a method that
// sets only evaluation keys ("swin_v2@window8", "t5@untrained=nearest"), else one of its own ("t5@max_distance=64").
std::string method_folder(const SweepMethod& m) { return trained_method(m).name(); }

// The method a fine-tune continues: the sweep method its run.init_from names, or a bare scheme of the sweep's dims
// (its runs as the sweep trains them: "rope"). Refused: a name that is neither, and a fine-tune of a fine-tune.
SweepMethod parent_method(const RunConfig& base, const SweepMethod& m) {
  const ConfigSetting* init = m.parent();
  const std::string* name = init ? std::get_if<std::string>(&init->value.value) : nullptr;
  if (name == nullptr) throw Error(base.source + ": sweep method \"" + printable(m.text) + "\": run.init_from is not a string");
  for (const SweepMethod& other : base.sweep.methods)
    if (other.text == *name) {
      if (other.parent())
        throw Error(base.source + ": sweep method \"" + printable(m.text) + "\": its run.init_from names \"" +
                    printable(*name) + "\", itself a fine-tune; a fine-tune continues a run trained from scratch");
      return other;
    }
  const std::vector<std::string> schemes = nn::scheme_names(base.dims());
  if (std::find(schemes.begin(), schemes.end(), *name) != schemes.end()) return {*name, *name, {}};
  throw Error(base.source + ": sweep method \"" + printable(m.text) + "\": run.init_from = \"" + printable(*name) +
              "\" names neither a method of sweep.methods nor a scheme; in a sweep it names the method whose run "
              "(of the same task and seed) the fine-tune continues");
}

// The run of `method` on `task` with `seed`: <out_dir>/<name>/<task>/<method folder>/seed<k>.
SweepRun sweep_run(const RunConfig& base, const std::string& task, const SweepMethod& method, uint64_t seed) {
  return {task, method, seed, (fs::path(base.run_dir()) / task / method_folder(method)).string(),
          "seed" + std::to_string(seed)};
}

// The run that trains `sr`'s folder: `sr` itself, or for a method with evaluation settings, the method it evaluates
// (trained_method), so that a shared folder trains as that method's own whichever row reaches it first, and its
// stored config holds no evaluation setting.
SweepRun training_run(const SweepRun& sr) {
  SweepRun plain = sr;
  plain.method = trained_method(sr.method);
  return plain;
}

// A sweep run's task, method and seed, as its log lines name it: "markov / t5@untrained=nearest / seed 0".
std::string run_label(const SweepRun& sr) {
  return fmt::format("{} / {} / seed {}", sr.task, sr.method.name(), sr.seed);
}

// `sr` (a fine-tune's run) with its run.init_from set to the checkpoint of its parent's run `parent`, and
// run.init_sha256 to the digest train_or_reuse has just computed of it (when known), so that the fine-tune's Run need
// not read and hash the parent again to learn its identity (it reads it only to train).
SweepRun with_parent(const SweepRun& sr, const SweepRunRecord& parent) {
  SweepRun out = sr;
  const std::string file = (fs::path(parent.folder) / parent.checkpoint).string();
  if (ConfigSetting* init = out.method.parent()) *init = {init->key, SettingValue{file}, file};
  if (!parent.checkpoint_sha256.empty()) out.method.settings.push_back(parent_pin(parent.checkpoint_sha256));
  return out;
}

// Each run folder the sweep trains, once (an evaluation-only method shares its scheme's runs), in sweep order; the
// fine-tunes aside (rank 0 trains them after their parents, in run_sweep's loop).
std::vector<SweepRun> runs_to_train(const RunConfig& base, const std::vector<std::string>& tasks) {
  std::vector<SweepRun> out;
  std::set<std::string> folders;
  for (const std::string& task : tasks)
    for (const SweepMethod& method : base.sweep.methods)
      for (uint64_t seed : base.sweep.seeds) {
        if (method.parent()) continue;
        SweepRun sr = training_run(sweep_run(base, task, method, seed));
        if (folders.insert((fs::path(sr.out_dir) / sr.name).string()).second) out.push_back(std::move(sr));
      }
  return out;
}

// The ranks of an MPI job train the sweep's runs, each whole on one rank, handed out as ranks free up
// (train/sweep/work_queue.h); every run is one process, so it is the run a single process trains.
void train_distributed(const RunConfig& base, const std::vector<std::string>& tasks, bool overwrite,
                       const std::string& resume_command) {
  const std::vector<SweepRun> runs = runs_to_train(base, tasks);
  const auto t0 = std::chrono::steady_clock::now();
  run_work_queue(static_cast<int64_t>(runs.size()), [&](int64_t i, const ServeRequests& serve) {
    const SweepRun& sr = runs[static_cast<std::size_t>(i)];
    Run run(run_config(base, sr), Parallel::this_process);
    run.on_step([&serve](int64_t) { serve(); });
    const std::string what = fmt::format("[rank {}: run {}/{}] {}", dist::rank(), i + 1, runs.size(), run_label(sr));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    train_or_reuse(run, what, overwrite, {"", 0, 0, secs, resume_command});
  });
}

// The accuracy at the train length of `trained`'s model as it was trained (a passkey run, reused or trained).
std::optional<double> train_length_accuracy(Run& trained) {
  return trained.evaluate({trained.config().length}).at(0).accuracy;
}

// Appends one seed's evaluation, a LengthResult per length, to `row`: its lengths, and a row of each [seed][length].
void add_seed(MethodResult& row, const std::vector<LengthResult>& results) {
  for (auto* v : {&row.ppl, &row.nll, &row.accuracy, &row.token_accuracy}) v->emplace_back();
  for (auto* v : {&row.tokens, &row.bytes, &row.samples_per_depth}) v->emplace_back();
  row.attention.emplace_back();
  row.depth_accuracy.emplace_back();
  row.position_loss.emplace_back();
  row.lengths.clear();
  for (const LengthResult& r : results) {
    row.ppl.back().push_back(r.perplexity());
    row.nll.back().push_back(r.nll);
    row.tokens.back().push_back(r.tokens);
    row.attention.back().push_back(r.attention);
    row.bytes.back().push_back(r.nll ? r.bytes : 0);
    row.accuracy.back().push_back(r.accuracy);
    row.token_accuracy.back().push_back(r.token_accuracy);
    row.depth_accuracy.back().push_back(r.depth_accuracy);
    row.samples_per_depth.back().push_back(r.samples_per_depth);
    row.position_loss.back().push_back(r.position_loss);
    row.lengths.push_back(r.length);
  }
}

}  // namespace

SweepResult run_sweep(const RunConfig& base, bool overwrite, const std::string& resume_command) {
  SweepResult result;
  result.name = base.name;
  result.train_length = base.length;
  result.multipliers = base.eval_multipliers;
  result.seeds = base.sweep.seeds;
  result.learned_threshold = base.sweep.learned_threshold;
  const std::vector<std::string> tasks = base.sweep.tasks.empty() ? std::vector<std::string>{base.task.kind}
                                                                  : base.sweep.tasks;
  const std::string root = base.run_dir();
  for (const std::string& task : tasks) result.task_labels[task] = task_label(base.sweep.task_labels, task);
  const std::size_t total = tasks.size() * base.sweep.methods.size() * base.sweep.seeds.size();
  // Every run's config is checked, and its memory estimated, before the first one trains.
  for (const std::string& task : tasks)
    for (const SweepMethod& method : base.sweep.methods) {
      if (method.parent()) parent_method(base, method);  // names a method or scheme of the sweep
      const RunConfig cfg = run_config(base, {task, method, 0, root, "check"});
      check_memory(estimate_memory(cfg, vocab_bound(cfg)), memory_budget(), "sweep run " + task + " / " + method.name());
    }
  if (dist::size() > 1) {
    train_distributed(base, tasks, overwrite, resume_command);
    if (dist::rank() != 0) return result;  // rank 0 gathers: it evaluates the finished runs below
  }
  std::size_t done = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& task : tasks)
    for (const SweepMethod& method : base.sweep.methods) {
      MethodResult row;
      row.task = task;
      row.method = method;
      row.learned_threshold = base.sweep.learned_threshold;
      row.label = method_label(base, method, run_config(base, sweep_run(base, task, method, base.sweep.seeds.front())));
      for (uint64_t seed : base.sweep.seeds) {
        SweepRun sr = sweep_run(base, task, method, seed);
        const std::string what = fmt::format("[{}/{}] {}", done + 1, total, run_label(sr));
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const ProgressContext context{"", static_cast<int64_t>(done), static_cast<int64_t>(total), secs, resume_command};
        if (method.parent()) {  // a fine-tune: its parent's run first (trained, resumed or reused)
          Run parent(run_config(base, training_run(sweep_run(base, task, parent_method(base, method), seed))));
          sr = with_parent(sr, train_or_reuse(parent, what + " (its parent)", overwrite, context));
        }
        Run run(run_config(base, sr));
        const bool shared = training_run(sr).method.settings.size() != sr.method.settings.size();
        if (shared) {  // the folder's own method trains or reuses it, and says which; the row then loads it quietly
          Run trainer(run_config(base, training_run(sr)));
          train_or_reuse(trainer, what, overwrite, context);
          if (data::task_info(task).retrieval) row.trained_accuracy.push_back(train_length_accuracy(trainer));
        }
        row.runs.push_back(train_or_reuse(run, what, overwrite, context, /*log_reuse=*/!shared));
        ++done;
        add_seed(row, run.evaluate());
        row.optimal_ppl = run.optimal_perplexity();
        row.position_params = nn::position_parameter_count(run.model());
        row.eval_stride = run.config().eval_stride;
      }
      result.rows.push_back(row);
    }
  return result;
}

}  // namespace rpb

// The 2-D workload: a grid model on the neighbour task, trained at side x side grids and
// evaluated on larger ones.
#include <algorithm>

#include "nn/grid_model.h"
#include "train/data/grid2d.h"
#include "train/eval_progress.h"
#include "train/workload.h"

namespace rpb {

namespace {

constexpr uint64_t kGridSamplerSalt = 0x5eed'ba7c'0000'0002ull;

class GridWorkload final : public Workload {
 public:
  explicit GridWorkload(const RunConfig& c)
      : config_(c), task_(options(c)), sampler_(c.seed ^ kGridSamplerSalt) {
    Generator init_gen(c.seed);
    model_ = std::make_unique<nn::GridModel>(model_options(c, task_.vocab()), c.grid, init_gen);
  }

  nn::Module& model() override { return *model_; }
  std::string describe() const override { return task_.describe(); }
  std::optional<double> optimal_perplexity() const override { return task_.optimal_perplexity(); }
  int64_t batch_tokens() const override { return config_.batch * config_.length * config_.length; }

  Tensor next_loss(const Shard& shard, int64_t step) override {
    Tensor x, y;
    task_.sample(config_.batch, config_.length, config_.length, sampler_, x, y);
    shard_dropout(model_->dropout_generator(), config_.seed, step, shard);
    return model_->loss(shard_rows(x, shard), shard_rows(y, shard));
  }

  void save_state(Checkpoint& c) const override {
    c.rng = {{"dropout", model_->dropout_generator().state()}, {"sampler", sampler_.state()}};
    c.counters = {{"vocab", task_.vocab()}};
  }

  void load_state(const Checkpoint& c, const std::string& file) override {
    bool have_dropout = false, have_sampler = false;
    for (const auto& [name, st] : c.rng) {
      if (name == "dropout") model_->dropout_generator().set_state(st), have_dropout = true;
      if (name == "sampler") sampler_.set_state(st), have_sampler = true;
    }
    RPB_CHECK(have_dropout && have_sampler, "checkpoint", file, ": missing /rng/dropout or /rng/sampler");
  }

  std::vector<LengthResult> evaluate(const std::vector<int64_t>& mult, data::Split split, int64_t tokens,
                                     EvalProgress* progress) override {
    RPB_CHECK(tokens == 0, "eval", "a token count (", tokens, ") applies to the 1-D tasks; grid2d scores run.eval_tokens = ",
              config_.eval_tokens, " cells at every side");
    RPB_CHECK(config_.eval_stride == 0, "eval", "run.eval_stride = ", config_.eval_stride,
              ": sliding-window evaluation scores a token stream; grid2d evaluates whole grids (expected 0)");
    model_->eval();
    const bool rewindow = config_.grid.eval_window > 0;
    if (rewindow) model_->set_window(config_.grid.eval_window);
    std::vector<LengthResult> out;
    const int64_t longest = *std::max_element(mult.begin(), mult.end()) * config_.length;
    for (std::size_t i = 0; i < mult.size(); ++i) {
      const int64_t m = mult[i];
      LengthResult r;
      r.multiplier = m;
      r.length = m * config_.length;  // the grid side
      if (model_->max_side() == 0 || r.length <= model_->max_side()) {
        Tensor x, y;
        task_.eval_grids(r.length, x, y, split, split == data::Split::valid ? config_.valid_tokens : 0);
        if (progress) progress->begin(static_cast<int64_t>(i), r.length, y.numel());
        r.nll = mean_nll(x, y, progress);
        r.tokens = y.numel();
        if (config_.eval_diagnostics && split == data::Split::test) {
          if (progress) progress->measuring_attention();
          r.attention = diagnostics(x, longest * longest);
        }
      }
      out.push_back(r);
    }
    if (rewindow) model_->set_window(config_.grid.window);
    model_->train();
    return out;
  }

 private:
  static data::Grid2DOptions options(const RunConfig& c) {
    data::Grid2DOptions o;
    o.vocab = c.task.vocab;
    o.noise = c.task.noise;
    o.seed = c.task.seed;
    o.eval_cells = c.eval_tokens;
    return o;
  }

  // The mean NLL over the evaluation grids x (N, side, side) against y.
  double mean_nll(const Tensor& x, const Tensor& y, EvalProgress* progress) const {
    NoGradGuard no_grad;
    const int64_t n = x.size(0);
    double total = 0;
    for (int64_t b = 0; b < n; b += config_.eval_batch) {
      const int64_t e = std::min(n, b + config_.eval_batch);
      const Tensor targets = slice(y, 0, b, e);
      total += model_->loss(slice(x, 0, b, e), targets).item() * static_cast<double>(e - b);
      if (progress) progress->advance(targets.numel());
    }
    return total / static_cast<double>(n);
  }

  // One forward over the first grids of x holding `sample_cells` cells (at least one grid), recorded.
  AttentionDiagnostics diagnostics(const Tensor& x, int64_t sample_cells) const {
    NoGradGuard no_grad;
    const int64_t side = x.size(1);
    const int64_t grids = std::clamp<int64_t>(sample_cells / (side * side), 1, x.size(0));
    nn::AttentionStatsRecorder recorder(model_->attention_layers(), side);
    model_->forward(slice(x, 0, 0, grids));
    return attention_diagnostics(recorder.layers());
  }

  RunConfig config_;
  data::Grid2DTask task_;
  Generator sampler_;
  std::unique_ptr<nn::GridModel> model_;
};

}  // namespace

std::unique_ptr<Workload> make_grid_workload(const RunConfig& config) { return std::make_unique<GridWorkload>(config); }

}  // namespace rpb

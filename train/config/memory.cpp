// The estimate counts tensor storage in floats per token; its factors are upper bounds of what the forward saves for
// backward (or holds at once without gradients), checked against measured peaks in tests/test_memory.cpp.
#include "train/config/memory.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>

#include "core/checked.h"
#include "core/tensor.h"
#include "core/text.h"
#include "train/config/model.h"
#include "train/data/task_registry.h"
#include "train/io/input_file.h"

namespace rpb {

namespace {

constexpr const char* kOp = "memory estimate";
constexpr int64_t kFloat = 4;  // bytes: models train in float32
constexpr int64_t kIndex = 8;  // bytes: token ids in tensors are int64

// Saturating (core/checked.h): a size past int64 is simply too large, and the budget check names its key.
constexpr int64_t kHuge = INT64_MAX;
constexpr auto mul = saturating_mul;
constexpr auto add = saturating_add;
// A count that throws on overflow (the models' parameter counts), saturated likewise.
template <typename F>
int64_t saturated(F count) {
  try {
    return count();
  } catch (const Error&) {
    return kHuge;
  }
}

// Of the keys that size the model's blocks and embedding (model.layers, model.d_model, model.d_ff), the one whose
// value makes the `parameters` many: the one that, set back to its default, leaves the fewest. d_model = 65536 in a
// model of 2 layers is d_model's doing, 1024 layers of d_model 64 the layers'. When none is above its default (none
// shrinks the count), `otherwise`.
const char* model_size_key(const RunConfig& c, int64_t vocab, int64_t parameters, const char* otherwise) {
  using Size = int64_t nn::TransformerOptions::*;
  const nn::TransformerOptions defaults;
  const char* key = otherwise;
  int64_t fewest = parameters;
  for (const auto& [name, member] : {std::pair<const char*, Size>{"model.layers", &nn::TransformerOptions::layers},
                                     {"model.d_model", &nn::TransformerOptions::d_model},
                                     {"model.d_ff", &nn::TransformerOptions::d_ff}}) {
    RunConfig reset = c;
    reset.model.*member = defaults.*member;
    if (const int64_t n = saturated([&] { return model_parameter_count(reset, vocab); }); n < fewest) {
      fewest = n;
      key = name;
    }
  }
  return key;
}

// The bulk of the model that the config sizes: the embedding (and untied or grid head), the blocks and the position
// table, with the key that sets the largest of them.
MemoryPart weights_part(const RunConfig& c, int64_t parameters, int64_t vocab) {
  const nn::TransformerOptions& m = c.model;
  const nn::PositionOptions po = c.position();
  const int64_t position = saturated([&] { return nn::scheme_info(po).parameters(po); });
  const int64_t embedding = mul(mul(vocab, m.d_model), c.dims() == 2 || !nn::ties_head(m) ? 2 : 1);
  const int64_t blocks = parameters == kHuge ? kHuge : parameters - embedding - position;
  const char* otherwise = embedding > blocks && embedding > position ? "model.d_model" : "model.layers";
  MemoryPart part{"weights", model_size_key(c, vocab, parameters, otherwise),
                  static_cast<std::size_t>(mul(parameters, kFloat))};
  if (position > blocks && position > embedding) {
    const char* option = nn::scheme_info(po).length_option;
    part.key = option && std::string(option) == "max_side" ? "grid.max_side" : "position.max_positions";
    if (!option) part.key = "position.scheme";
  }
  return part;
}

// 0 bytes unless `use` trains: only training holds gradients and optimizer state. Their size is the parameters', and
// so is their key (`weights`').
MemoryPart training_part(const RunConfig& c, int64_t parameters, const MemoryPart& weights, MemoryUse use) {
  MemoryPart part{"gradients and optimizer state", weights.key, 0};
  if (use != MemoryUse::train) return part;
  int64_t slots = 1;  // the gradient
  if (c.optim.kind == OptimizerKind::sgd)
    slots += c.optim.sgd.momentum != 0 ? 1 : 0;
  else
    slots += 2;  // Adam's two moments
  part.bytes = static_cast<std::size_t>(mul(mul(parameters, slots), kFloat));
  return part;
}

// The longest evaluation length: run.length times the largest multiplier.
int64_t longest_eval_length(const RunConfig& c) {
  return c.length * *std::max_element(c.eval_multipliers.begin(), c.eval_multipliers.end());
}

// Floats held per token by one forward through the blocks: with `grad`, everything saved for backward plus the
// gradients in flight; without, the few tensors alive at once. `keys` is the attention span of a query (T for global
// attention, the window's cells for window attention).
int64_t floats_per_token(const RunConfig& c, int64_t vocab, int64_t keys, bool grad) {
  const nn::TransformerOptions& m = c.model;
  const int64_t d = m.d_model, ff = m.d_ff, h = m.heads;
  // Fused attention keeps a max and a sum per query and head; the reference path the scores, the bias and the
  // probabilities of every key.
  const int64_t attention = m.fused_attention ? mul(4, h) : mul(mul(4, h), keys);
  if (!grad) {  // only the tensors of one block alive at once, and the logits
    return add(add(add(mul(6, d), mul(2, ff)), m.fused_attention ? mul(2, h) : mul(mul(4, h), keys)), mul(3, vocab));
  }
  int64_t layer = add(add(mul(14, d), mul(3, ff)), attention);
  if (m.dropout > 0) layer = add(layer, add(mul(3, d), ff));  // the masks
  const int64_t head = mul(4, vocab);                         // logits, log-softmax, their gradients
  return add(add(mul(m.layers + 1, layer), head), mul(4, d));
}

MemoryPart activations_part(const RunConfig& c, int64_t vocab, MemoryUse use) {
  const int64_t longest = longest_eval_length(c);
  int64_t train_tokens = 0, eval_tokens = 0, train_keys = 0, eval_keys = 0;
  if (c.dims() == 2) {
    const bool windows = nn::scheme_info(c.position()).kind == nn::PositionKind::window;
    const int64_t window = c.grid.eval_window > 0 ? std::max(c.grid.window, c.grid.eval_window) : c.grid.window;
    train_tokens = mul(c.batch, mul(c.length, c.length));
    const int64_t cells = mul(longest, longest);
    eval_tokens = mul(std::clamp<int64_t>(c.eval_tokens / cells, 1, c.eval_batch), cells);
    train_keys = windows ? mul(c.grid.window, c.grid.window) : mul(c.length, c.length);
    eval_keys = windows ? mul(window, window) : cells;
  } else {
    // A fine-tune's training length (run.finetune_length); an algorithmic task's samples hold their answers too.
    train_keys = data::sequence_tokens(c.task.kind, c.train_length(), c.model.causal);
    eval_keys = data::sequence_tokens(c.task.kind, longest, c.model.causal);
    train_tokens = mul(c.batch, train_keys);
    eval_tokens = mul(c.eval_batch, eval_keys);
  }
  if (use == MemoryUse::generate) eval_tokens = longest;  // one sequence
  const int64_t train =
      use == MemoryUse::train ? mul(mul(train_tokens, floats_per_token(c, vocab, train_keys, true)), kFloat) : 0;
  const int64_t eval = mul(mul(eval_tokens, floats_per_token(c, vocab, eval_keys, false)), kFloat);
  if (use == MemoryUse::generate)
    return {"activations of a generation forward (one sequence of the generated length)", "--tokens",
            static_cast<std::size_t>(eval)};
  if (use == MemoryUse::train && train >= eval)
    return {"activations of a training step (run.batch x the training length)", "run.batch",
            static_cast<std::size_t>(train)};
  return {
      "activations of an evaluation forward (run.eval_batch x the longest "
      "evaluation length)",
      "run.eval_multipliers", static_cast<std::size_t>(eval)};
}

MemoryPart data_part(const RunConfig& c, MemoryUse use) {
  const data::TaskOptions& t = c.task;
  MemoryPart part{"data", use == MemoryUse::train ? "task.train_tokens" : "task.eval_tokens", 0};
  if (use == MemoryUse::inspect) return part;
  // Training builds the train, valid and test streams, an evaluation the test stream alone (TaskOptions::use).
  const data::DataUse built = use == MemoryUse::train      ? data::DataUse::train
                              : use == MemoryUse::generate ? data::DataUse::generate
                                                           : data::DataUse::evaluate;
  const data::DataMemory task = data::task_info(t.kind).memory(t, built);
  const int64_t bytes = task.bytes;
  if (task.key) part.key = task.key;
  if (use == MemoryUse::generate) {  // the data that gives the vocabulary (a text), nothing else
    part.bytes = static_cast<std::size_t>(bytes);
    return part;
  }
  // Evaluation segments (inputs and targets) at every length, and a training batch of them; an algorithmic task's
  // held-out samples of one length at a time (inputs, targets and a scored flag per token).
  const data::TaskInfo& info = data::task_info(t.kind);
  const int64_t longest = longest_eval_length(c);
  const int64_t eval =
      info.algorithmic
          ? mul(mul(t.eval_samples, data::sequence_tokens(t.kind, longest, c.model.causal)), 2 * kIndex + 1)
          : mul(mul(mul(c.eval_tokens, 2), kIndex), static_cast<int64_t>(c.eval_multipliers.size()));
  if (eval > bytes) part.key = info.algorithmic ? "task.eval_samples" : "run.eval_tokens";
  const int64_t sample = data::sequence_tokens(t.kind, c.length, c.model.causal);
  const int64_t batch = use == MemoryUse::train ? mul(mul(c.batch, sample), 2 * kIndex) : 0;
  part.bytes = static_cast<std::size_t>(add(add(bytes, eval), batch));
  return part;
}

}  // namespace

std::size_t MemoryEstimate::total() const {
  std::size_t sum = 0;
  for (const MemoryPart* p : {&weights, &training, &activations, &data})
    sum = p->bytes > SIZE_MAX - sum ? SIZE_MAX : sum + p->bytes;
  return sum;
}

const MemoryPart& MemoryEstimate::largest() const {
  const MemoryPart* best = &weights;
  for (const MemoryPart* p : {&training, &activations, &data})
    if (p->bytes > best->bytes) best = p;
  return *best;
}

std::string MemoryEstimate::describe() const {
  std::ostringstream os;
  os << "about " << format_bytes(total()) << " (";
  bool first = true;
  for (const MemoryPart* p : {&weights, &training, &activations, &data}) {
    os << (first ? "" : ", ") << p->what << " " << format_bytes(p->bytes);
    first = false;
  }
  os << "; " << parameters << " parameters)";
  return os.str();
}

int64_t vocab_bound(const RunConfig& c) {
  const auto bound = data::task_info(c.task.kind).data_vocab_bound;
  return bound ? bound(c.task) : c.task.vocab;
}

MemoryEstimate estimate_memory(const RunConfig& c, int64_t vocab, MemoryUse use) {
  MemoryEstimate e;
  e.parameters = saturated([&] { return model_parameter_count(c, vocab); });
  e.weights = weights_part(c, e.parameters, vocab);
  e.training = training_part(c, e.parameters, e.weights, use);
  e.activations = use == MemoryUse::inspect ? MemoryPart{"activations", "run.eval_batch", 0}
                                            : activations_part(c, vocab, use);
  e.data = data_part(c, use);
  return e;
}

std::size_t available_memory() {
  InputOptions o;
  o.what = "memory";
  o.max_bytes = 64 << 10;  // /proc/meminfo is a few KiB
  std::string text;
  try {
    text = read_input_file("/proc/meminfo", o);
  } catch (const Error&) {
    return 0;
  }
  std::istringstream in(text);
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

std::size_t parse_memory_size(const std::string& text, const std::string& flag) {
  std::size_t pos = 0;
  double value = -1;
  try {
    value = std::stod(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  std::string unit = text.substr(pos);
  for (char& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (unit.size() == 3 && unit.substr(1) == "IB") unit = unit.substr(0, 1);
  if (unit.size() == 2 && unit[1] == 'B') unit = unit.substr(0, 1);
  const std::string units = "KMGT";
  double scale = 1;
  if (unit.size() == 1 && units.find(unit[0]) != std::string::npos)
    scale = std::pow(1024.0, static_cast<double>(units.find(unit[0]) + 1));
  else if (!unit.empty() && unit != "B")
    value = -1;
  const double bytes = value * scale;
  RPB_CHECK(pos > 0 && std::isfinite(bytes) && bytes >= 1 && bytes < 0x1p62, flag.c_str(),
            "expected a size such as 8G, 512M or 1073741824, found \"", printable(text, 40), "\"");
  return static_cast<std::size_t>(bytes);
}

std::string format_bytes(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : (v < 10 ? "%.2f %s" : "%.1f %s"), v, units[u]);
  return buf;
}

namespace {
MemoryBudget& budget_slot() {
  static MemoryBudget budget;
  return budget;
}
}  // namespace

void set_memory_budget(const MemoryBudget& budget) {
  budget_slot() = budget;
  set_memory_limit(budget.bytes);
}

const MemoryBudget& memory_budget() { return budget_slot(); }

namespace {
// The estimate check_memory saw last, and for what: out_of_memory_message() names its largest part.
struct CheckedEstimate {
  MemoryEstimate estimate;
  std::string what;
  bool set = false;
};
CheckedEstimate& checked_slot() {
  static CheckedEstimate checked;
  return checked;
}
}  // namespace

void check_memory(const MemoryEstimate& e, const MemoryBudget& budget, const std::string& what) {
  checked_slot() = {e, what, true};
  if (budget.bytes == 0 || e.total() <= budget.bytes) return;
  const MemoryPart& big = e.largest();
  RPB_FAIL(what.c_str(), big.key, ": the run needs ", e.describe(), ", more than the memory limit of ",
           format_bytes(budget.bytes), " (", budget.source, "); reduce ", big.key, " (", big.what,
           " are the largest part) or raise --max-memory");
}

std::string out_of_memory_message() {
  const CheckedEstimate& c = checked_slot();
  const MemoryBudget& budget = memory_budget();
  const std::string limit =
      budget.bytes ? "the memory limit of " + format_bytes(budget.bytes) + " (" + budget.source + ")" : "no memory limit";
  if (!c.set)
    return "out of memory before rpb estimated what the command needs (" + limit +
           "); a smaller config or input, or more memory, is needed";
  const MemoryPart& big = c.estimate.largest();
  return c.what + ": " + big.key + ": out of memory: an allocation failed although the estimate, " +
         c.estimate.describe() + ", fit " + limit + " (another limit, such as ulimit -v, may be lower); reduce " +
         big.key + " (" + big.what + " are the largest part) or give rpb more memory";
}

}  // namespace rpb

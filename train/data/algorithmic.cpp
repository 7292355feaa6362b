// rpb/train/data/algorithmic.cpp: see algorithmic.h.
#include "train/data/algorithmic.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "train/data/algorithmic_detail.h"
#include "train/data/eval_segments.h"
#include "train/data/sampling.h"

namespace rpb::data {

namespace algorithmic_detail {

std::vector<int32_t> uniform_symbols(int64_t n, int64_t alphabet, Generator& gen) {
  std::vector<int32_t> v(static_cast<std::size_t>(n));
  for (int32_t& x : v) x = static_cast<int32_t>(uniform_index(gen, static_cast<uint64_t>(alphabet)));
  return v;
}

int64_t uniform_between(Generator& gen, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(uniform_index(gen, static_cast<uint64_t>(hi - lo + 1)));
}

std::vector<std::string> numbered_names(int64_t n) {
  std::vector<std::string> names;
  for (int64_t i = 0; i < n; ++i) names.push_back(std::to_string(i));
  return names;
}

}  // namespace algorithmic_detail

namespace {

using namespace algorithmic_detail;

constexpr uint64_t kAlgorithmicHeldOutStream = 0xA160'4E59'0000'0000ull;
constexpr uint64_t kAlgorithmicBatchStream = 0xA160'0000'0000'0001ull;

}  // namespace

const char* framing_name(Framing framing) { return framing == Framing::encoder ? "encoder" : "decoder"; }

const std::vector<AlgorithmicSpec>& algorithmic_specs() {
  static const std::vector<AlgorithmicSpec> all = [] {
    std::vector<AlgorithmicSpec> v;
    for (std::vector<AlgorithmicSpec> (*family)() :
         {regular_specs, context_free_specs, context_sensitive_specs, decoder_specs})
      for (const AlgorithmicSpec& s : family()) v.push_back(s);
    return v;
  }();
  return all;
}

const AlgorithmicSpec* find_algorithmic(const std::string& kind) {
  for (const AlgorithmicSpec& s : algorithmic_specs())
    if (kind == s.name) return &s;
  return nullptr;
}

int64_t alphabet_size(const AlgorithmicSpec& spec, const TaskOptions& options) {
  if (spec.default_alphabet == 0) return static_cast<int64_t>(spec.token_names(0).size());
  return options.alphabet > 0 ? options.alphabet : spec.default_alphabet;
}

int64_t sample_length(const AlgorithmicSpec& spec, int64_t length, Framing framing) {
  if (spec.sequence) return spec.sequence_length(length);
  const int64_t in = spec.input_length ? spec.input_length(length) : length, out = spec.output_length(length);
  return framing == Framing::encoder ? in + out : in + 1 + out;
}

void frame(const AlgorithmicInstance& in, int64_t alphabet, Framing framing, AlgorithmicSample& out) {
  const auto unscored = static_cast<int32_t>(kUnscoredTarget);
  const auto n = in.input.size();
  out.inputs = in.input;
  out.targets.assign(n, unscored);
  out.scored.assign(n, 0);
  if (framing == Framing::encoder) {  // the input, then a blank per output position, its target there
    for (std::size_t k = 0; k < in.output.size(); ++k) {
      out.inputs.push_back(static_cast<int32_t>(alphabet + kBlankOffset));
      out.targets.push_back(in.output[k]);
      out.scored.push_back(static_cast<int64_t>(k) < in.scored ? 1 : 0);
    }
    return;
  }
  // The decoder: the input, the separator, the answer; each answer token and the end token predicted from the one
  // before (the separator predicts the first).
  out.inputs.push_back(static_cast<int32_t>(alphabet + kSeparatorOffset));
  for (int64_t k = 0; k < in.scored; ++k) {
    out.targets.push_back(in.output[static_cast<std::size_t>(k)]);
    out.scored.push_back(1);
    out.inputs.push_back(in.output[static_cast<std::size_t>(k)]);
  }
  out.targets.push_back(static_cast<int32_t>(alphabet + kEndOffset));
  out.scored.push_back(1);
}

void stack_samples(const std::vector<AlgorithmicSample>& samples, int64_t end_token, Tensor& inputs, Tensor& targets,
                   std::vector<uint8_t>* scored) {
  RPB_CHECK(!samples.empty(), "algorithmic", "a batch needs at least one sample");
  std::size_t t = 0;
  for (const AlgorithmicSample& s : samples) t = std::max(t, s.inputs.size());
  const auto rows = static_cast<int64_t>(samples.size()), cols = static_cast<int64_t>(t);
  inputs = Tensor::empty({rows, cols}, DType::i64);
  targets = Tensor::empty({rows, cols}, DType::i64);
  if (scored) scored->assign(samples.size() * t, 0);
  int64_t* in = inputs.mutable_data<int64_t>();
  int64_t* tg = targets.mutable_data<int64_t>();
  for (std::size_t r = 0; r < samples.size(); ++r) {
    const AlgorithmicSample& s = samples[r];
    for (std::size_t c = 0; c < t; ++c) {
      const bool real = c < s.inputs.size();
      // Padding at the end: a causal model's earlier positions never read it.
      in[r * t + c] = real ? s.inputs[c] : end_token;
      tg[r * t + c] = real ? s.targets[c] : kUnscoredTarget;
      if (scored && real) (*scored)[r * t + c] = s.scored[c];
    }
  }
}

AlgorithmicTask::AlgorithmicTask(const TaskOptions& options)
    : spec_(find_algorithmic(options.kind)), framing_(framing_of(options.causal)), eval_samples_(options.eval_samples),
      seed_(options.seed) {
  RPB_CHECK(spec_ != nullptr, "task", "task.kind ", options.kind, " is not an algorithmic task");
  const bool runs = framing_ == Framing::encoder ? spec_->encoder : spec_->decoder;
  RPB_CHECK(runs, "task", "task.kind ", options.kind, " has no ", framing_name(framing_), " framing (model.causal = ",
            framing_ == Framing::decoder ? "true" : "false", "); its literature trains it in the ",
            framing_name(spec_->literature), "'s");
  alphabet_ = alphabet_size(*spec_, options);
  RPB_CHECK(alphabet_ >= 2, "task", "task.alphabet must be at least 2, got ", alphabet_);
  RPB_CHECK(eval_samples_ >= 1, "task", "task.eval_samples must be >= 1, got ", eval_samples_);
  RPB_CHECK(options.min_length == 0 || options.min_length >= spec_->min_length, "task", "task.min_length ",
            options.min_length, " is below the shortest ", options.kind, " takes, ", spec_->min_length);
  min_length_ = options.min_length > 0 ? options.min_length : spec_->min_length;
}

std::string AlgorithmicTask::describe() const {
  std::string s = std::string(spec_->name) + ": " + spec_->summary + "; the " + framing_name(framing_) + " framing";
  if (spec_->default_alphabet > 0) s += ", " + std::to_string(alphabet_) + " symbols";
  return s + "; trained at lengths from task.min_length " + std::to_string(min_length_) + ", the loss on the " +
         (framing_ == Framing::encoder && !spec_->sequence ? "output positions" : "answer") +
         " (optimum: accuracy 1, NLL 0); held out: " + std::to_string(eval_samples_) +
         " samples at every length (seed " + std::to_string(seed_) + ")";
}

std::string AlgorithmicTask::decode(const std::vector<int32_t>& tokens) const {
  const std::vector<std::string> names = spec_->token_names(alphabet_);
  static const char* const kFraming[] = {"<blank>", "<sep>", "<end>"};
  std::string out;
  for (const int32_t t : tokens) {
    if (!out.empty()) out += ' ';
    if (t >= 0 && t < static_cast<int32_t>(names.size())) out += names[static_cast<std::size_t>(t)];
    else if (t >= alphabet_ && t < alphabet_ + kFramingTokens) out += kFraming[t - alphabet_];
    else out += "<" + std::to_string(t) + "?>";
  }
  return out;
}

void AlgorithmicTask::sample(int64_t length, Generator& gen, AlgorithmicSample& out) const {
  if (spec_->sequence) {
    spec_->sequence(length, alphabet_, gen, out);
    return;
  }
  AlgorithmicInstance instance;
  spec_->instance(length, alphabet_, gen, instance);
  frame(instance, alphabet_, framing_, out);
}

void AlgorithmicTask::held_out(Split split, int64_t length, Tensor& inputs, Tensor& targets,
                               std::vector<uint8_t>& scored) const {
  Generator gen(derive_seed(derive_seed(seed_, kAlgorithmicHeldOutStream + static_cast<uint64_t>(split)),
                            static_cast<uint64_t>(length)));
  std::vector<AlgorithmicSample> samples(static_cast<std::size_t>(eval_samples_));
  for (AlgorithmicSample& s : samples) sample(length, gen, s);
  stack_samples(samples, token(kEndOffset), inputs, targets, &scored);
}

AlgorithmicSampler::AlgorithmicSampler(const AlgorithmicTask& task, int64_t batch, int64_t max_length, uint64_t seed)
    : task_(&task), batch_(batch), max_length_(max_length), rng_(derive_seed(seed, kAlgorithmicBatchStream)) {
  RPB_CHECK(batch >= 1, "batches", "batch must be >= 1, got ", batch);
  RPB_CHECK(max_length >= task.min_length(), "batches", "run.length ", max_length, " is below task.min_length ",
            task.min_length());
}

void AlgorithmicSampler::next(Tensor& inputs, Tensor& targets) {
  const int64_t length = uniform_between(rng_, task_->min_length(), max_length_);
  std::vector<AlgorithmicSample> samples(static_cast<std::size_t>(batch_));
  for (AlgorithmicSample& s : samples) task_->sample(length, rng_, s);
  stack_samples(samples, task_->token(kEndOffset), inputs, targets, nullptr);
  ++batches_drawn_;
}

void AlgorithmicSampler::set_state(const BatchSampler::State& s) {
  RPB_CHECK(s.batches_drawn >= 0, "batches", "batches_drawn must be >= 0, got ", s.batches_drawn);
  rng_.set_state(s.rng);
  batches_drawn_ = s.batches_drawn;
}

AlgorithmicScore& AlgorithmicScore::operator+=(const AlgorithmicScore& o) {
  nll += o.nll;
  correct += o.correct;
  tokens += o.tokens;
  exact += o.exact;
  samples += o.samples;
  return *this;
}

AlgorithmicScore score_algorithmic(const Tensor& logits, const Tensor& targets, const std::vector<uint8_t>& scored,
                                   PositionLoss* by_position) {
  RPB_CHECK(logits.dim() == 3 && targets.dim() == 2 && logits.size(0) == targets.size(0) &&
                logits.size(1) == targets.size(1) && logits.dtype() == DType::f32 &&
                targets.dtype() == DType::i64 && static_cast<int64_t>(scored.size()) == targets.numel(),
            "algorithmic", "logits (B, T, V) f32, targets (B, T) i64 and B * T scored flags expected, got ",
            logits.shape(), ", ", targets.shape(), " and ", scored.size());
  const int64_t n = logits.size(0), length = logits.size(1), vocab = logits.size(2);
  const float* z = logits.data<float>();
  const int64_t* tg = targets.data<int64_t>();
  AlgorithmicScore s;
  s.samples = n;
  for (int64_t row = 0; row < n; ++row) {
    bool exact = true;
    for (int64_t pos = 0; pos < length; ++pos) {
      if (!scored[static_cast<std::size_t>(row * length + pos)]) continue;
      const float* zr = z + (row * length + pos) * vocab;
      const int64_t target = tg[row * length + pos];
      RPB_CHECK(target >= 0 && target < vocab, "algorithmic", "scored target ", target, " of sample ", row,
                " at position ", pos, " outside the vocabulary of ", vocab);
      const int64_t best = std::max_element(zr, zr + vocab) - zr;
      const double nll = token_nll(zr, vocab, target);
      s.nll += nll;
      if (by_position) by_position->add(pos, nll);
      ++s.tokens;
      if (best == target) ++s.correct;
      else exact = false;
    }
    if (exact) ++s.exact;
  }
  return s;
}

}  // namespace rpb::data

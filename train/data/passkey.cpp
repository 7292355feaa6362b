// rpb/train/data/passkey.cpp: see passkey.h.
#include "train/data/passkey.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "train/data/eval_segments.h"
#include "train/data/markov.h"
#include "train/data/sampling.h"
#include "train/data/task_registry.h"
#include "train/data/text.h"

namespace rpb::data {

namespace {

constexpr uint64_t kHeldOutStream = 0x9A55'4E59'0000'0000ull;
constexpr uint64_t kPasskeyBatchStream = 0x9A55'0000'0000'0001ull;

}  // namespace

int64_t passkey_min_length(int64_t digits) { return 2 * digits + kPasskeyDepthBins; }

std::pair<int64_t, int64_t> PasskeyLayout::bin_places(int64_t bin) const {
  const int64_t p = places();
  // The places with floor(10 q / P) == bin: ceil(bin P / 10) <= q < ceil((bin + 1) P / 10).
  const auto first = [&](int64_t b) { return (b * p + kPasskeyDepthBins - 1) / kPasskeyDepthBins; };
  return {first(bin), first(bin + 1)};
}

int64_t PasskeyLayout::bin_of(int64_t place) const { return place * kPasskeyDepthBins / places(); }

PasskeyTask::PasskeyTask(const TaskOptions& options)
    : digits_(options.passkey_digits), samples_(options.passkey_samples), seed_(options.seed), use_(options.use) {
  RPB_CHECK(digits_ >= 1, "task", "task.passkey_digits must be >= 1, got ", digits_);
  RPB_CHECK(samples_ >= 1, "task", "task.passkey_samples must be >= 1, got ", samples_);
  const TaskInfo* row = find_task(options.kind);
  text_filler_ = row && row->reads_text;
  if (text_filler_) filler_ = std::make_unique<TextTask>(options);
  else filler_ = std::make_unique<MarkovTask>(options);
  filler_vocab_ = filler_->vocab();
}

std::string PasskeyTask::describe() const {
  const std::string head = "passkey: " + std::to_string(digits_) + " digits at a uniform depth in filler from ";
  const std::string tail = ", asked for after a query at the end; the loss on the answer only (optimum: accuracy 1, "
                           "NLL 0); held out: " + std::to_string(samples_) + " samples per tenth of depth at every "
                           "length";
  if (text_filler_)
    return head + "one's own text (seed " + std::to_string(seed_) + "; " + filler_->describe() + ")" + tail;
  const auto& chain = static_cast<const MarkovTask&>(*filler_);
  return head + "an order-" + std::to_string(chain.order()) + " Markov chain over " + std::to_string(filler_vocab_) +
         " tokens (seed " + std::to_string(seed_) + "; filler streams: train " +
         stream_size_text(chain.train_stream(), use_, 0) + ", valid " +
         stream_size_text(chain.valid_stream(), use_, 1) + ", test " + stream_size_text(chain.test_stream(), use_, 2) +
         ")" + tail;
}

const char* passkey_marker_text(int64_t i) {
  RPB_CHECK(i == kPasskeyKeyMarker || i == kPasskeyQueryMarker, "passkey", "id ", i, " past the filler is not a "
            "marker (", kPasskeyKeyMarker, ": key, ", kPasskeyQueryMarker, ": query)");
  return i == kPasskeyKeyMarker ? "<key>" : "<query>";
}

std::string PasskeyTask::decode(const std::vector<int32_t>& tokens) const {
  // Pieces: a run of filler ids (as the filler task decodes them), a run of digits, a marker; Markov ids are joined
  // by spaces, text as it is.
  const auto extra = [&](std::size_t j) { return int64_t{tokens[j]} - filler_vocab_; };  // < 0: a filler id
  std::string out;
  for (std::size_t i = 0, j = 0; i < tokens.size(); i = j) {
    std::string piece;
    if (extra(i) < 0) {
      while (j < tokens.size() && extra(j) < 0) ++j;
      piece = filler_->decode(std::vector<int32_t>(tokens.begin() + static_cast<std::ptrdiff_t>(i),
                                                   tokens.begin() + static_cast<std::ptrdiff_t>(j)));
    } else if (extra(i) < kPasskeyKeyMarker) {
      for (; j < tokens.size() && extra(j) >= 0 && extra(j) < kPasskeyKeyMarker; ++j)
        piece += static_cast<char>('0' + extra(j));
    } else {
      piece = passkey_marker_text(extra(j++));
    }
    out += (out.empty() || text_filler_ ? "" : " ") + piece;
  }
  return out;
}

const TokenStream& PasskeyTask::filler_stream(Split split) const {
  return split == Split::valid ? filler_->valid_stream() : filler_->test_stream();
}

std::string PasskeyTask::filler_sizes() const {
  return text_filler_ ? "the documents task.valid_fraction and task.test_fraction send to it; a longer corpus, or "
                        "larger fractions, hold more"
                      : "task.train_tokens or task.eval_tokens";
}

void PasskeyTask::check_filler(Split split, int64_t length, const std::string& what) const {
  const int64_t need = PasskeyLayout{length, digits_}.filler();
  const auto held = static_cast<int64_t>(filler_stream(split).size());
  RPB_CHECK(held >= need, "task", what, " = ", length, " needs ", need, " filler tokens in a sample; the ",
            split == Split::valid ? "valid" : "test", " split's filler holds ", held, " (", filler_sizes(), ")");
}

int64_t PasskeyTask::sample(const TokenStream& filler, int64_t length, int64_t bin, Generator& gen,
                            int64_t* out) const {
  const PasskeyLayout lay{length, digits_};
  RPB_CHECK(length >= passkey_min_length(digits_), "task", "a passkey sample of ", digits_, " digits needs a length of "
            "at least ", passkey_min_length(digits_), " (every tenth of depth a place for the key), got ", length);
  const int64_t n_filler = lay.filler();
  RPB_CHECK(static_cast<int64_t>(filler.size()) >= n_filler, "task", "a passkey sample of length ", length, " needs ",
            n_filler, " filler tokens, the filler stream holds ", filler.size(), " (", filler_sizes(), ")");
  const auto offset = static_cast<int64_t>(uniform_index(gen, static_cast<uint64_t>(filler.size() - n_filler + 1)));
  int64_t place = 0;
  if (bin < 0) {
    place = static_cast<int64_t>(uniform_index(gen, static_cast<uint64_t>(lay.places())));
  } else {
    const auto [lo, hi] = lay.bin_places(bin);
    place = lo + static_cast<int64_t>(uniform_index(gen, static_cast<uint64_t>(hi - lo)));
  }
  std::vector<int64_t> key(static_cast<std::size_t>(digits_));
  for (int64_t& d : key) d = digit_token(static_cast<int64_t>(uniform_index(gen, 10)));
  filler.copy_to(offset, offset + place, out);
  out[place] = key_marker();
  std::copy(key.begin(), key.end(), out + place + 1);
  filler.copy_to(offset + place, offset + n_filler, out + place + 1 + digits_);
  out[lay.query()] = query_marker();
  std::copy(key.begin(), key.end(), out + lay.query() + 1);
  return place;
}

void PasskeyTask::held_out(Split split, int64_t length, Tensor& inputs, Tensor& targets) const {
  const TokenStream& filler = filler_stream(split);
  const int64_t n = kPasskeyDepthBins * samples_;
  std::vector<int64_t> tokens(static_cast<std::size_t>(n * (length + 1)));
  const uint64_t per_split = derive_seed(seed_ ^ kHeldOutStream, static_cast<uint64_t>(split));
  for (int64_t bin = 0; bin < kPasskeyDepthBins; ++bin) {
    Generator gen(derive_seed(derive_seed(per_split, static_cast<uint64_t>(length)), static_cast<uint64_t>(bin)));
    for (int64_t i = 0; i < samples_; ++i)
      sample(filler, length, bin, gen, tokens.data() + (i * kPasskeyDepthBins + bin) * (length + 1));
  }
  passkey_inputs_targets(tokens, n, length, digits_, inputs, targets);
}

void passkey_inputs_targets(const std::vector<int64_t>& tokens, int64_t rows, int64_t length, int64_t digits,
                            Tensor& inputs, Tensor& targets) {
  inputs = Tensor::empty({rows, length}, DType::i64);
  targets = Tensor::empty({rows, length}, DType::i64);
  int64_t* in = inputs.mutable_data<int64_t>();
  int64_t* tg = targets.mutable_data<int64_t>();
  const int64_t first = PasskeyLayout{length, digits}.query();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t* s = tokens.data() + r * (length + 1);
    std::copy(s, s + length, in + r * length);
    for (int64_t t = 0; t < length; ++t) tg[r * length + t] = t >= first ? s[t + 1] : kUnscoredTarget;
  }
}

PasskeyScore score_passkey(const Tensor& logits, const Tensor& targets, int64_t digits) {
  RPB_CHECK(logits.shape().size() == 3 && targets.shape().size() == 2 && logits.size(0) == targets.size(0) &&
                logits.size(1) == targets.size(1) && logits.dtype() == DType::f32 && targets.dtype() == DType::i64 &&
                digits >= 1 && digits <= targets.size(1),
            "passkey", "logits (N, L, V) f32 and targets (N, L) i64 with L >= ", digits, " expected, got ",
            logits.shape(), " and ", targets.shape());
  const int64_t n = logits.size(0), length = logits.size(1), vocab = logits.size(2);
  const float* z = logits.data<float>();
  const int64_t* tg = targets.data<int64_t>();
  PasskeyScore s;
  s.exact.assign(static_cast<std::size_t>(n), true);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t pos = length - digits; pos < length; ++pos) {
      const float* zr = z + (row * length + pos) * vocab;
      const int64_t target = tg[row * length + pos];
      RPB_CHECK(target >= 0 && target < vocab, "passkey", "answer target ", target, " of sample ", row,
                " outside the vocabulary of ", vocab);
      const int64_t best = std::max_element(zr, zr + vocab) - zr;
      const double top = zr[best];
      double sum = 0;
      for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(zr[v]) - top);
      s.nll += top + std::log(sum) - static_cast<double>(zr[target]);
      if (best != target) s.exact[static_cast<std::size_t>(row)] = false;
    }
  return s;
}

PasskeySampler::PasskeySampler(const PasskeyTask& task, int64_t batch, int64_t length, uint64_t seed)
    : task_(&task), batch_(batch), length_(length), rng_(derive_seed(seed, kPasskeyBatchStream)) {
  RPB_CHECK(batch >= 1, "batches", "batch must be >= 1, got ", batch);
  RPB_CHECK(length >= passkey_min_length(task.digits()), "batches", "a passkey sample of ", task.digits(),
            " digits needs a length of at least ", passkey_min_length(task.digits()), ", got ", length);
  const int64_t need = PasskeyLayout{length, task.digits()}.filler();
  RPB_CHECK(static_cast<int64_t>(task.filler_stream().size()) >= need, "batches", "a passkey sample of length ",
            length, " needs ", need, " filler tokens; the train split's filler holds ", task.filler_stream().size());
}

void PasskeySampler::next(Tensor& inputs, Tensor& targets) {
  std::vector<int64_t> tokens(static_cast<std::size_t>(batch_ * (length_ + 1)));
  for (int64_t b = 0; b < batch_; ++b)
    task_->sample(task_->filler_stream(), length_, -1, rng_, tokens.data() + b * (length_ + 1));
  passkey_inputs_targets(tokens, batch_, length_, task_->digits(), inputs, targets);
  ++batches_drawn_;
}

void PasskeySampler::set_state(const BatchSampler::State& s) {
  RPB_CHECK(s.batches_drawn >= 0, "batches", "batches_drawn must be >= 0, got ", s.batches_drawn);
  rng_.set_state(s.rng);
  batches_drawn_ = s.batches_drawn;
}

}  // namespace rpb::data

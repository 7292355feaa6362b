// rpb/train/data/tokenizer_sentencepiece.cpp: the sentencepiece tokenizer, through Debian's libsentencepiece (Kudo
// and Richardson 2018); the one file that includes its headers.
//
// Trained from memory (a SentenceIterator; no file is written) on a uniform sample of at most
// task.sentencepiece_sentences lines of the train split, drawn by rpb with task.seed as the corpus is read (so a
// corpus larger than memory trains it), with the settings that make decoding exact: the identity normalisation, no
// whitespace folding, no dummy prefix, and byte fallback (a character outside the pieces is encoded as its UTF-8
// bytes, so nothing becomes <unk>). Reproducible: the sample is rpb's, SentencePiece's own generator is seeded with
// task.seed, and it trains on one thread.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <unordered_map>

#include "core/error.h"
#include "core/text.h"
#include "core/rng.h"
#include "train/data/sentencepiece_model.h"
#include "train/data/sampling.h"
#include "train/data/tokenizer_detail.h"

namespace rpb::data {

namespace {


// derive_seed's stream of the sample of train lines (the tasks' streams are 0 to 3 and 0xBA7C4).
constexpr uint64_t kSentenceSampleStream = 0x5E47;

// SentencePiece's escaped space (U+2581 LOWER ONE EIGHTH BLOCK), which its pieces hold for ' '.
constexpr std::string_view kSpaceMark = "\xe2\x96\x81";

// SentencePiece's status message without the source location and condition it may start with
// ("./src/trainer_interface.cc(123) [condition] what": the what alone), quoted for a terminal.
std::string status_reason(const std::string& message) {
  const std::size_t source = message.find(".cc(");
  const std::size_t what = source == std::string::npos ? std::string::npos : message.find("] ", source);
  return "\"" + printable(what == std::string::npos ? message : message.substr(what + 2)) + "\"";
}

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // `where` names the model for errors (a checkpoint's dataset, or "the trained model").
  // The model is read field by field first (check_sentencepiece_model): SentencePiece trusts its models, and one
  // rpb does not train could crash it.
  SentencePieceTokenizer(const std::string& model, const std::string& where) {
    const SentencePieceModelFacts facts = check_sentencepiece_model(model, where);
    const auto status = processor_.LoadFromSerializedProto(model);
    RPB_CHECK(status.ok(), "tokenizer", where, ": not a SentencePiece model: SentencePiece reports ",
              status_reason(status.message()));
    const int n = processor_.GetPieceSize();
    RPB_CHECK(n == facts.pieces, "tokenizer", where, ": SentencePiece reads ", n, " pieces of the ", facts.pieces,
              " the model holds");
    bytes_.resize(static_cast<std::size_t>(n));
    for (int id = 0; id < n; ++id) {
      const std::string& piece = processor_.IdToPiece(id);
      std::string& out = bytes_[static_cast<std::size_t>(id)];
      if (processor_.IsControl(id) || processor_.IsUnknown(id)) continue;  // stands for no text
      if (processor_.IsByte(id)) {  // "<0x0A>"
        unsigned value = 0;
        RPB_CHECK(piece.size() == 6 && std::sscanf(piece.c_str(), "<0x%2X>", &value) == 1, "tokenizer", where,
                  ": byte piece ", id, " is \"", printable(piece), "\", expected <0xNN>");
        out.push_back(static_cast<char>(value));
        continue;
      }
      for (std::size_t at = 0; at < piece.size();) {
        if (piece.compare(at, kSpaceMark.size(), kSpaceMark) == 0) {
          out.push_back(' ');
          at += kSpaceMark.size();
        } else {
          out.push_back(piece[at++]);
        }
      }
    }
    model_ = model;
  }

  int64_t vocab() const override { return static_cast<int64_t>(bytes_.size()); }

  // A piece at a time (encode_piece_end): SentencePiece holds a lattice of the whole text it is handed, about a
  // hundred bytes for each of its bytes, and sums the path's score in single precision from the text's start, so a
  // long text costs gigabytes and its segmentation drifts from the best one. Each piece starts from a score of 0.
  void encode(std::string_view text, std::vector<int32_t>& out) const override {
    std::vector<int> ids;
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t end = encode_piece_end(text, at);
      const auto status = processor_.Encode(text.substr(at, end - at), &ids);
      RPB_CHECK(status.ok(), "sentencepiece tokenizer", "cannot encode the text at byte ", at,
                ": SentencePiece reports ", status_reason(status.message()));
      spell(text, at, end, ids, out);
      at = end;
    }
  }

  const std::string& token_bytes(int32_t id) const override {
    RPB_CHECK(id >= 0 && id < vocab(), "sentencepiece tokenizer", "token ", id, " outside the vocabulary of ",
              vocab());
    return bytes_[static_cast<std::size_t>(id)];
  }

  TokenizerRecord record() const override { return {"sentencepiece", model_}; }

  std::string describe() const override {
    return "sentencepiece (" + std::to_string(bytes_.size()) + " pieces, byte fallback)";
  }

 private:
  // Appends `ids`, the pieces of text[at, end), to `out`. Decoding must give the text back (bits per byte count its
  // bytes): checked, so that a text SentencePiece would change (a U+2581 of its own, which reads back as a space) is
  // refused rather than scored as another text.
  void spell(std::string_view text, std::size_t at, std::size_t end, const std::vector<int>& ids,
             std::vector<int32_t>& out) const {
    for (const int id : ids) {
      const std::string& b = bytes_[static_cast<std::size_t>(id)];
      if (text.compare(at, b.size(), b) != 0 || at + b.size() > end || (b.empty() && !processor_.IsControl(id))) {
        RPB_FAIL("sentencepiece tokenizer", "the pieces do not spell the text from byte ", at, " (",
                 character_name(text, std::min(at, text.size() - 1)), "): piece ", id, " \"",
                 printable(processor_.IdToPiece(id)), "\"; SentencePiece cannot encode this text exactly (a U+2581 "
                 "in the text reads back as a space)");
      }
      at += b.size();
      out.push_back(id);
    }
    RPB_CHECK(at == end, "sentencepiece tokenizer", "the pieces end at byte ", at, " of the text, not at ", end);
  }

  sentencepiece::SentencePieceProcessor processor_;
  std::string model_;               // the serialized ModelProto
  std::vector<std::string> bytes_;  // token_bytes of every id
};

// The lines of the train split's documents, each cut into pieces of at most kMaxSentenceBytes at character
// boundaries, empty ones skipped: a uniform sample of at most `max` of them (reservoir sampling with `gen`, so the
// corpus is read once and never held), in corpus order.
std::vector<std::string> sample_train_lines(const TokenizerCorpus& corpus, int64_t max, Generator& gen) {
  std::vector<std::pair<int64_t, std::string>> kept;  // (the line's index, the line)
  int64_t seen = 0;
  const auto offer = [&](std::string_view line) {
    if (line.empty()) return;
    const int64_t k = seen++;
    if (k < max) {
      kept.emplace_back(k, std::string(line));
    } else if (const auto j = static_cast<int64_t>(uniform_index(gen, static_cast<uint64_t>(k) + 1)); j < max) {
      kept[static_cast<std::size_t>(j)] = {k, std::string(line)};
    }
  };
  corpus.visit([&](std::string_view d, int split) {
    if (split != 0) return;
    for (std::size_t at = 0; at < d.size();) {
      std::size_t end = std::min(d.find('\n', at), d.size());
      if (end - at > static_cast<std::size_t>(kMaxSentenceBytes)) {
        end = at + static_cast<std::size_t>(kMaxSentenceBytes);
        while (end > at && (static_cast<unsigned char>(d[end]) & 0xC0) == 0x80) --end;  // not inside a character
      }
      offer(d.substr(at, end - at));
      at = end < d.size() && d[end] == '\n' ? end + 1 : end;
    }
  });
  std::sort(kept.begin(), kept.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> lines;
  lines.reserve(kept.size());
  for (auto& [k, line] : kept) lines.push_back(std::move(line));
  return lines;
}

// SentencePiece's view of the sampled lines.
class Lines final : public sentencepiece::SentenceIterator {
 public:
  explicit Lines(const std::vector<std::string>& lines) : lines_(lines) {}
  bool done() const override { return at_ >= lines_.size(); }
  void Next() override { ++at_; }
  const std::string& value() const override { return lines_[at_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& lines_;
  std::size_t at_ = 0;
};

// SentencePiece's reason for a failed training, in rpb's terms: the two failures a text meets (fewer pieces than its
// characters need, more than it supports) by their numbers; any other as status_reason gives it.
std::string training_failure(const std::string& reason) {
  int asked = 0, bound = 0;
  const std::size_t high = reason.find("Vocabulary size too high (");
  if (high != std::string::npos &&
      std::sscanf(reason.c_str() + high, "Vocabulary size too high (%d). Please set it to a value <= %d", &asked,
                  &bound) == 2)
    return "the text supports at most " + std::to_string(bound) +
           " pieces; lower task.vocab to at most that, or train on more text (task.path, "
           "task.sentencepiece_sentences)";
  const std::size_t low = reason.find("Vocabulary size is smaller than required_chars.");
  if (low != std::string::npos &&
      std::sscanf(reason.c_str() + low, "Vocabulary size is smaller than required_chars. %d vs %d", &asked,
                  &bound) == 2)
    return "a vocabulary holds <unk>, the 256 byte pieces and the sampled text's characters: " +
           std::to_string(bound) + " pieces for this text; raise task.vocab to at least that";
  return "SentencePiece's trainer reports " + status_reason(reason);
}

}  // namespace

std::unique_ptr<Tokenizer> build_sentencepiece(const TokenizerCorpus& corpus, const TokenizerOptions& options) {
  // SentencePiece's seed and log level are global: one training at a time.
  static std::mutex training;
  const std::lock_guard<std::mutex> lock(training);
  sentencepiece::SetRandomGeneratorSeed(static_cast<unsigned>(options.seed % 0xFFFFFFFFull));
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", options.model_type},
      {"vocab_size", std::to_string(options.vocab)},
      {"byte_fallback", "true"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "false"},
      {"unk_id", "0"},
      {"bos_id", "-1"},
      {"eos_id", "-1"},
      {"pad_id", "-1"},
      {"input_sentence_size", "0"},  // every line given: rpb sampled them
      {"shuffle_input_sentence", "false"},
      {"num_threads", "1"},
      {"minloglevel", "2"},  // errors come back as a status; its progress lines would flood the run's log
  };
  Generator gen(derive_seed(options.seed, kSentenceSampleStream));
  const std::vector<std::string> sample = sample_train_lines(corpus, options.max_sentences, gen);
  RPB_CHECK(!sample.empty(), "sentencepiece tokenizer", "the train split has no text to train on");
  Lines lines(sample);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &lines, &model);
  RPB_CHECK(status.ok(), "sentencepiece tokenizer", "training a ", options.model_type, " model of task.vocab = ",
            options.vocab, " pieces failed: ", training_failure(status.message()));
  return std::make_unique<SentencePieceTokenizer>(model, "the trained SentencePiece model");
}

std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& model, const std::string& where) {
  return std::make_unique<SentencePieceTokenizer>(model, where);
}

}  // namespace rpb::data

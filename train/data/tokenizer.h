// rpb/train/data/tokenizer.h: the tokenizers of the text task (task.tokenizer): bytes, chars and SentencePiece.
//
// Every tokenizer is one row of a registry (tokenizers(); train/data/tokenizer.cpp), which config validation, the
// help text and the checkpoint reader read. A tokenizer is built from the corpus once, when a run starts, and stored
// in every checkpoint of the run (TokenizerRecord, /data in train/checkpoint/checkpoint.h), so that `rpb generate`
// and `rpb inspect` need nothing but the checkpoint and `rpb eval` encodes another copy of the text as training did.
//
// Every token stands for a fixed string of bytes (token_bytes), and a text's tokens, decoded, give back its bytes
// exactly: decode(encode(text)) == text for every text the tokenizer accepts. Bits per byte count those bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rpb::data {

/// What a checkpoint stores of a tokenizer (/data, train/checkpoint/checkpoint.h).
struct TokenizerRecord {
  std::string kind;   // a registered tokenizer's name: "bytes", "chars", "sentencepiece"
  std::string model;  // its model: chars, the characters in id order (UTF-8); sentencepiece, the serialized
                      // ModelProto; bytes, "" (the 256 bytes are the vocabulary)
  bool empty() const { return kind.empty(); }
};

/// The largest tokenizer model rpb stores or reads (a SentencePiece model of 64k pieces is about 1 MB).
inline constexpr std::size_t kMaxTokenizerModelBytes = std::size_t{64} << 20;

/// Text to token ids and back.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  /// Number of token ids; every id encode() gives lies in [0, vocab()).
  virtual int64_t vocab() const = 0;
  /// Appends the ids of `text` (valid UTF-8) to `out`. A character the tokenizer cannot encode throws rpb::Error
  /// naming it and its byte offset.
  virtual void encode(std::string_view text, std::vector<int32_t>& out) const = 0;
  /// The bytes token `id` stands for ("" for a control token); an id outside [0, vocab()) throws.
  virtual const std::string& token_bytes(int32_t id) const = 0;
  /// The concatenation of the tokens' bytes: decode(encode(text)) == text.
  std::string decode(const std::vector<int32_t>& ids) const;
  /// What a checkpoint stores to rebuild this tokenizer (load_tokenizer).
  virtual TokenizerRecord record() const = 0;
  /// One line for logs: "sentencepiece (unigram, 2000 pieces)".
  virtual std::string describe() const = 0;

  std::vector<int32_t> encode(std::string_view text) const {
    std::vector<int32_t> ids;
    encode(text, ids);
    return ids;
  }
  /// The ids of `text` a piece at a time (encode_piece_end), each piece's to `sink` with the piece's bytes, so that no
  /// more than one piece's ids are held; their concatenation is encode(text).
  void encode_pieces(std::string_view text,
                     const std::function<void(const std::vector<int32_t>& ids, std::size_t bytes)>& sink) const;
};

/// The pieces rpb encodes a text in, so that the encoder's memory is bounded whatever the text: a line of at most
/// kEncodeLineBytes bytes (with its '\n') is one piece; a longer line is cut before its last space within that many
/// bytes, else before (or after the '\n' of) the first space or line end within kEncodeMaxPieceBytes, else at the last
/// character boundary within kEncodeMaxPieceBytes. Where a piece ends depends only on the text from where it starts,
/// so the pieces of a text are the same however it is handed over (whole, or a piece at a time). A SentencePiece
/// piece never spans a line end or begins its word after a space (its words begin at a space), so these cuts change
/// no id, but for a run of kEncodeMaxPieceBytes bytes without a space or line end (a character boundary there may
/// fall inside a piece).
inline constexpr std::size_t kEncodeLineBytes = 1024;
inline constexpr std::size_t kEncodeMaxPieceBytes = std::size_t{64} << 10;

/// Where the piece of `text` that starts at byte `at` (< text.size()) ends, as kEncodeLineBytes says.
std::size_t encode_piece_end(std::string_view text, std::size_t at);

/// What a tokenizer is trained with (from [task]).
struct TokenizerOptions {
  int64_t vocab = 0;                  // sentencepiece: the vocabulary size (task.vocab)
  std::string model_type = "unigram";  // sentencepiece: "unigram" or "bpe" (task.sentencepiece_model)
  int64_t max_sentences = 200000;     // sentencepiece: lines sampled from the train split (task.sentencepiece_sentences)
  uint64_t seed = 0;                  // sentencepiece: the seed of that sample and of its trainer (task.seed)
};

/// Called with each document of a corpus and its split (0 train, 1 valid, 2 test), in corpus order.
using DocumentVisitor = std::function<void(std::string_view text, int split)>;

/// The corpus a tokenizer is built from, read as it is visited (a corpus need not fit in memory): `visit(f)` calls
/// f with every document in order. A builder may visit it once.
struct TokenizerCorpus {
  std::function<void(const DocumentVisitor&)> visit;
  /// The corpus of `documents` held in memory, with their `splits`.
  static TokenizerCorpus of(const std::vector<std::string_view>& documents, const std::vector<int>& splits);
};

/// One row of the registry.
struct TokenizerInfo {
  const char* name;     // the config value (task.tokenizer)
  const char* summary;  // one line for help texts
  /// Builds the tokenizer from `corpus` (chars: the characters of every document, as kjv's vocabulary is the whole
  /// text's; sentencepiece: trained on the train split only).
  std::unique_ptr<Tokenizer> (*build)(const TokenizerCorpus& corpus, const TokenizerOptions& options);
  /// Rebuilds a stored tokenizer from its model, which is untrusted input (a checkpoint): every size is checked and
  /// every error caught, and rpb::Error names `where` ("checkpoint.h5: /data/tokenizer_model").
  std::unique_ptr<Tokenizer> (*load)(const std::string& model, const std::string& where);
};

/// Every row, in the registry's order.
const std::list<TokenizerInfo>& tokenizers();
/// The names of the tokenizers, in the registry's order.
std::vector<std::string> tokenizer_names();
/// The row named `name`; throws rpb::Error naming task.tokenizer and the choices for an unknown name.
const TokenizerInfo& tokenizer_info(const std::string& name);

/// The tokenizer `record` describes (a checkpoint's): its row's load, or rpb::Error naming `where` for an unknown kind
/// or a model that does not parse.
std::unique_ptr<Tokenizer> load_tokenizer(const TokenizerRecord& record, const std::string& where);

/// The longest prefix of `bytes` that ends on a whole UTF-8 character (at most 3 bytes are held back, and only
/// the start of a valid sequence): what a stream of tokens can print so far.
std::size_t printable_prefix(std::string_view bytes);

}  // namespace rpb::data

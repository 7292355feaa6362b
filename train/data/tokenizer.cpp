// rpb/train/data/tokenizer.cpp: the registry of tokenizers, and the bytes and chars tokenizers (SentencePiece's is
// train/data/tokenizer_sentencepiece.cpp, the one file that includes its headers).
#include "train/data/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <set>

#include "core/error.h"
#include "core/text.h"
#include "core/unicode.h"
#include "train/data/tokenizer_detail.h"

namespace rpb::data {

TokenizerCorpus TokenizerCorpus::of(const std::vector<std::string_view>& documents, const std::vector<int>& splits) {
  return {[&documents, &splits](const DocumentVisitor& f) {
    for (std::size_t i = 0; i < documents.size(); ++i) f(documents[i], splits[i]);
  }};
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (const int32_t id : ids) out += token_bytes(id);
  return out;
}

void Tokenizer::encode_pieces(
    std::string_view text, const std::function<void(const std::vector<int32_t>& ids, std::size_t bytes)>& sink) const {
  std::vector<int32_t> ids;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = encode_piece_end(text, at);
    ids.clear();
    encode(text.substr(at, end - at), ids);
    sink(ids, end - at);
    at = end;
  }
}

std::size_t encode_piece_end(std::string_view text, std::size_t at) {
  const std::size_t rest = text.size() - at;
  const std::string_view line = text.substr(at, std::min(rest, kEncodeLineBytes));
  if (const std::size_t nl = line.find('\n'); nl != std::string_view::npos) return at + nl + 1;
  if (rest <= kEncodeLineBytes) return text.size();
  // A long line: before its last space within kEncodeLineBytes (one at `at` itself would make an empty piece).
  if (const std::size_t space = text.substr(at, kEncodeLineBytes + 1).rfind(' '); space != std::string_view::npos &&
                                                                                 space > 0)
    return at + space;
  // Else the first space or line end further on, within kEncodeMaxPieceBytes.
  const std::string_view run = text.substr(at, std::min(rest, kEncodeMaxPieceBytes));
  if (const std::size_t stop = run.find_first_of(" \n", kEncodeLineBytes); stop != std::string_view::npos)
    return at + stop + (run[stop] == '\n' ? 1 : 0);
  if (rest <= kEncodeMaxPieceBytes) return text.size();
  std::size_t end = at + kEncodeMaxPieceBytes;  // a run with no space or line end: at a character boundary
  while (end > at + 1 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return end;
}

std::string character_name(std::string_view text, std::size_t at) {
  const std::size_t n = utf8_length(text, at);
  if (n == 0) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned>(static_cast<unsigned char>(text[at])));
    return std::string("byte ") + hex + " (invalid UTF-8)";
  }
  char code[16];
  std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(decode_utf8(text, at, n)));
  return std::string(code) + " (\"" + printable(text.substr(at, n)) + "\")";
}

std::size_t utf8_length(std::string_view text, std::size_t at) {
  if (static_cast<unsigned char>(text[at]) < 0x80) return 1;
  return utf8_sequence(text, at);
}

std::size_t printable_prefix(std::string_view bytes) {
  // Back up over at most 3 trailing bytes that start a UTF-8 sequence not yet complete.
  for (std::size_t back = 1; back <= 3 && back <= bytes.size(); ++back) {
    const std::size_t at = bytes.size() - back;
    const auto b = static_cast<unsigned char>(bytes[at]);
    if ((b & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const std::size_t want = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
    return want > back ? at : bytes.size();
  }
  return bytes.size();
}

namespace {

// ---------------------------------------------------------------- bytes

// Every byte is a token: id b is byte b. Any text is encodable; the vocabulary is 256 whatever the text.
class BytesTokenizer final : public Tokenizer {
 public:
  BytesTokenizer() {
    for (int b = 0; b < 256; ++b) bytes_[b] = std::string(1, static_cast<char>(b));
  }
  int64_t vocab() const override { return 256; }
  void encode(std::string_view text, std::vector<int32_t>& out) const override {
    out.reserve(out.size() + text.size());
    for (const char c : text) out.push_back(static_cast<unsigned char>(c));
  }
  const std::string& token_bytes(int32_t id) const override {
    RPB_CHECK(id >= 0 && id < 256, "bytes tokenizer", "token ", id, " outside the vocabulary of 256");
    return bytes_[id];
  }
  TokenizerRecord record() const override { return {"bytes", ""}; }
  std::string describe() const override { return "bytes (256 ids, id = byte)"; }

 private:
  std::string bytes_[256];
};

std::unique_ptr<Tokenizer> build_bytes(const TokenizerCorpus&, const TokenizerOptions&) {
  return std::make_unique<BytesTokenizer>();
}

std::unique_ptr<Tokenizer> load_bytes(const std::string& model, const std::string& where) {
  RPB_CHECK(model.empty(), "tokenizer", where, ": a bytes tokenizer has no model, found ", model.size(), " bytes");
  return std::make_unique<BytesTokenizer>();
}

// ---------------------------------------------------------------- chars

// The characters (Unicode code points) of a text, sorted by code point: id i is the i-th. A character outside the
// vocabulary cannot be encoded.
class CharsTokenizer final : public Tokenizer {
 public:
  // `chars`: distinct UTF-8 characters in increasing code point order (checked by the callers).
  explicit CharsTokenizer(std::vector<std::string> chars) : chars_(std::move(chars)) {
    std::fill(std::begin(ascii_), std::end(ascii_), -1);
    for (std::size_t i = 0; i < chars_.size(); ++i) {
      const std::string& c = chars_[i];
      if (c.size() == 1) ascii_[static_cast<unsigned char>(c[0])] = static_cast<int32_t>(i);
      else wide_.emplace_back(c, static_cast<int32_t>(i));  // sorted: code point order is UTF-8 byte order
    }
  }
  int64_t vocab() const override { return static_cast<int64_t>(chars_.size()); }
  void encode(std::string_view text, std::vector<int32_t>& out) const override {
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t n = utf8_length(text, at);
      int32_t id = -1;
      if (n == 1) {
        id = ascii_[static_cast<unsigned char>(text[at])];
      } else if (n > 1) {
        const std::string_view c = text.substr(at, n);
        const auto it = std::lower_bound(wide_.begin(), wide_.end(), c,
                                         [](const auto& e, std::string_view v) { return e.first < v; });
        if (it != wide_.end() && it->first == c) id = it->second;
      }
      RPB_CHECK(id >= 0, "chars tokenizer", "character ", character_name(text, at), " at byte ", at,
                " is not in the vocabulary of ", chars_.size(), " characters");
      out.push_back(id);
      at += n == 0 ? 1 : n;
    }
  }
  const std::string& token_bytes(int32_t id) const override {
    RPB_CHECK(id >= 0 && id < vocab(), "chars tokenizer", "token ", id, " outside the vocabulary of ", vocab());
    return chars_[static_cast<std::size_t>(id)];
  }
  TokenizerRecord record() const override {
    std::string model;
    for (const std::string& c : chars_) model += c;
    return {"chars", model};
  }
  std::string describe() const override { return "chars (" + std::to_string(chars_.size()) + " characters)"; }

 private:
  std::vector<std::string> chars_;                      // id i's character, UTF-8
  int32_t ascii_[128];                                  // the id of each ASCII character, -1 for none
  std::vector<std::pair<std::string, int32_t>> wide_;  // the longer characters and their ids, sorted
};

std::unique_ptr<Tokenizer> build_chars(const TokenizerCorpus& corpus, const TokenizerOptions&) {
  bool ascii[128] = {};
  std::set<std::string> wide;  // the characters of more than one byte, in code point order
  corpus.visit([&](std::string_view doc, int) {
    for (std::size_t at = 0; at < doc.size();) {
      const std::size_t n = utf8_length(doc, at);
      RPB_CHECK(n > 0, "chars tokenizer", "invalid UTF-8 at byte ", at, " of a document: ", character_name(doc, at));
      if (n == 1) ascii[static_cast<unsigned char>(doc[at])] = true;
      else if (wide.size() <= static_cast<std::size_t>(kMaxCharsVocab)) wide.emplace(doc.substr(at, n));
      at += n;
    }
  });
  std::vector<std::string> chars;
  for (int c = 0; c < 128; ++c)
    if (ascii[c]) chars.emplace_back(1, static_cast<char>(c));
  chars.insert(chars.end(), wide.begin(), wide.end());
  RPB_CHECK(!chars.empty(), "chars tokenizer", "the text has no characters");
  RPB_CHECK(chars.size() <= static_cast<std::size_t>(kMaxCharsVocab), "chars tokenizer", "the text has ",
            chars.size(), " distinct characters; the chars tokenizer holds at most ", kMaxCharsVocab,
            " (use task.tokenizer = \"bytes\" or \"sentencepiece\")");
  return std::make_unique<CharsTokenizer>(std::move(chars));
}

std::unique_ptr<Tokenizer> load_chars(const std::string& model, const std::string& where) {
  RPB_CHECK(!model.empty(), "tokenizer", where, ": a chars tokenizer's model holds its characters, found none");
  std::vector<std::string> chars;
  for (std::size_t at = 0; at < model.size();) {
    const std::size_t n = utf8_length(model, at);
    RPB_CHECK(n > 0, "tokenizer", where, ": invalid UTF-8 at byte ", at, " of a chars tokenizer's model");
    std::string c = model.substr(at, n);
    RPB_CHECK(chars.empty() || chars.back() < c, "tokenizer", where, ": a chars tokenizer's characters must be "
              "distinct and in increasing order; character ", chars.size(), " (", character_name(model, at),
              ") is not after the one before it");
    chars.push_back(std::move(c));
    RPB_CHECK(chars.size() <= static_cast<std::size_t>(kMaxCharsVocab), "tokenizer", where, ": more than ",
              kMaxCharsVocab, " characters in a chars tokenizer's model");
    at += n;
  }
  return std::make_unique<CharsTokenizer>(std::move(chars));
}

// ---------------------------------------------------------------- the registry

const TokenizerInfo kTokenizerRows[] = {
    // name, summary, build, load
    {"bytes", "every byte a token (256 ids)", build_bytes, load_bytes},
    {"chars", "every character (Unicode code point) of the text a token, sorted by code point", build_chars,
     load_chars},
    {"sentencepiece", "SentencePiece (unigram or BPE, task.sentencepiece_model) trained on the train split, "
                      "task.vocab pieces, bytes as fallback",
     build_sentencepiece, load_sentencepiece},
};

}  // namespace

const std::list<TokenizerInfo>& tokenizers() {
  static const std::list<TokenizerInfo> table(std::begin(kTokenizerRows), std::end(kTokenizerRows));
  return table;
}

std::vector<std::string> tokenizer_names() {
  std::vector<std::string> names;
  for (const TokenizerInfo& t : tokenizers()) names.emplace_back(t.name);
  return names;
}

const TokenizerInfo& tokenizer_info(const std::string& name) {
  for (const TokenizerInfo& t : tokenizers())
    if (name == t.name) return t;
  RPB_FAIL("tokenizer", "task.tokenizer must be one of ", join(tokenizer_names(), ", "), "; got \"", printable(name),
           "\"");
}

std::unique_ptr<Tokenizer> load_tokenizer(const TokenizerRecord& record, const std::string& where) {
  for (const TokenizerInfo& t : tokenizers())
    if (record.kind == t.name) {
      RPB_CHECK(record.model.size() <= kMaxTokenizerModelBytes, "tokenizer", where, ": a model of ",
                record.model.size(), " bytes, more than the ", kMaxTokenizerModelBytes, " rpb reads");
      return t.load(record.model, where);
    }
  RPB_FAIL("tokenizer", where, ": unknown tokenizer \"", printable(record.kind), "\" (rpb knows ",
           join(tokenizer_names(), ", "), ")");
}

}  // namespace rpb::data

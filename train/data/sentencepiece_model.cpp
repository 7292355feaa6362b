// rpb/train/data/sentencepiece_model.cpp: the bounded protobuf reader of a stored SentencePiece model, and what rpb
// asks of the model (the field numbers are sentencepiece_model.proto's).
#include "train/data/sentencepiece_model.h"

#include <bit>
#include <cmath>

#include "core/error.h"
#include "core/text.h"
#include "train/data/tokenizer_detail.h"

namespace rpb::data {

namespace {

// Protobuf's wire types; 3 and 4 open and close a group, which no SentencePiece model holds.
enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kGroupStart = 3, kGroupEnd = 4, kFixed32 = 5 };

// One field of a message: its number and wire type, and its value (a varint or fixed value, or the bytes of a
// length-delimited field).
struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t value = 0;
  std::string_view bytes;  // kLengthDelimited: the field's bytes
  std::size_t start = 0;   // the offset in the model of the field's value
};

// The fields of one message (`name`, for messages: "" for the model itself, "normalizer_spec", ...; at offset
// `offset` of the model), in order. Every length is
// checked against the bytes left in the message, so no read leaves it.
class Fields {
 public:
  Fields(std::string_view message, std::size_t offset, const std::string& where, const char* name)
      : in_(message), offset_(offset), where_(where), name_(name) {}

  // The next field into `f`; false at the message's end.
  bool next(Field& f) {
    if (at_ == in_.size()) return false;
    const std::size_t tag_at = at_;
    const uint64_t tag = varint();
    f.number = static_cast<uint32_t>(tag >> 3);
    f.wire = static_cast<uint32_t>(tag & 7);
    if (tag > 0xFFFFFFFFu || f.number == 0) fail(tag_at, "a field number of ", tag >> 3);
    if (f.wire == kGroupStart || f.wire == kGroupEnd) fail(tag_at, "a group (field ", f.number, ")");
    f.start = offset_ + at_;
    if (f.wire == kVarint) {
      f.value = varint();
    } else if (f.wire == kFixed64 || f.wire == kFixed32) {
      const std::size_t n = f.wire == kFixed64 ? 8 : 4;
      if (in_.size() - at_ < n) fail(at_, "a ", n, "-byte value past the end (", in_.size() - at_, " bytes left)");
      f.value = 0;
      for (std::size_t i = 0; i < n; ++i) f.value |= uint64_t{static_cast<unsigned char>(in_[at_ + i])} << (8 * i);
      at_ += n;
    } else if (f.wire == kLengthDelimited) {
      const std::size_t length_at = at_;
      const uint64_t n = varint();
      if (n > in_.size() - at_) fail(length_at, "a length of ", n, " past the end (", in_.size() - at_, " bytes left)");
      f.start = offset_ + at_;
      f.bytes = in_.substr(at_, static_cast<std::size_t>(n));
      at_ += static_cast<std::size_t>(n);
    } else {
      fail(tag_at, "wire type ", f.wire, " (field ", f.number, ")");
    }
    return true;
  }

  // Throws unless `f` has wire type `wire`, naming it as field `field` of this message.
  void expect(const Field& f, uint32_t wire, const char* field) const {
    static const char* const kWireNames[] = {"a varint", "a 64-bit value", "a length-delimited value", "", "",
                                             "a 32-bit value"};
    if (f.wire != wire)
      RPB_FAIL("tokenizer", where_, ": not a SentencePiece model: ", name_, *name_ ? "." : "", field, " (field ",
               f.number, ") at byte ", f.start, " is ", kWireNames[f.wire], ", expected ", kWireNames[wire]);
  }

 private:
  // A varint: at most 10 bytes, of a value that fits 64 bits.
  uint64_t varint() {
    const std::size_t start = at_;
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (at_ == in_.size()) fail(start, "a varint cut by the end");
      const auto b = static_cast<unsigned char>(in_[at_++]);
      if (shift == 63 && b > 1) fail(start, "a varint of more than 64 bits");
      v |= uint64_t{b & 0x7Fu} << shift;
      if (b < 0x80) return v;
    }
  }

  template <typename... Args>
  [[noreturn]] void fail(std::size_t at, const Args&... what) const {
    RPB_FAIL("tokenizer", where_, ": not a SentencePiece model: byte ", offset_ + at, " (in ",
             *name_ ? name_ : "the model", ") holds ", what...);
  }

  std::string_view in_;
  std::size_t at_ = 0;
  std::size_t offset_;
  const std::string& where_;
  const char* name_;
};

// NormalizerSpec's fields rpb checks, with sentencepiece_model.proto's defaults. A message given twice merges into
// one, the later value of a field winning, as protobuf reads it.
struct Normalizer {
  bool present = false;
  std::string_view name;
  std::size_t charsmap = 0, rules = 0;  // the bytes of precompiled_charsmap and normalization_rule_tsv
  bool add_dummy_prefix = true, remove_extra_whitespaces = true, escape_whitespaces = true;
};

void read_normalizer(const Field& in, const std::string& where, const char* name, Normalizer& n) {
  n.present = true;
  Fields fields(in.bytes, in.start, where, name);
  for (Field f; fields.next(f);) {
    switch (f.number) {
      case 1: fields.expect(f, kLengthDelimited, "name"); n.name = f.bytes; break;
      case 2: fields.expect(f, kLengthDelimited, "precompiled_charsmap"); n.charsmap = f.bytes.size(); break;
      case 3: fields.expect(f, kVarint, "add_dummy_prefix"); n.add_dummy_prefix = f.value != 0; break;
      case 4: fields.expect(f, kVarint, "remove_extra_whitespaces"); n.remove_extra_whitespaces = f.value != 0; break;
      case 5: fields.expect(f, kVarint, "escape_whitespaces"); n.escape_whitespaces = f.value != 0; break;
      case 6: fields.expect(f, kLengthDelimited, "normalization_rule_tsv"); n.rules = f.bytes.size(); break;
      default: break;  // a field rpb does not use
    }
  }
}

// TrainerSpec's fields rpb checks, with their defaults.
struct Trainer {
  uint64_t model_type = 1;  // UNIGRAM
  bool byte_fallback = false;
};

void read_trainer(const Field& in, const std::string& where, Trainer& t) {
  Fields fields(in.bytes, in.start, where, "trainer_spec");
  for (Field f; fields.next(f);) {
    if (f.number == 3) {
      fields.expect(f, kVarint, "model_type");
      t.model_type = f.value;
    } else if (f.number == 35) {
      fields.expect(f, kVarint, "byte_fallback");
      t.byte_fallback = f.value != 0;
    }
  }
}

// One of the pieces (ModelProto.pieces, number `index`): checked as read.
void check_piece(const Field& in, int64_t index, const std::string& where) {
  std::string_view piece;
  uint32_t score_bits = 0;
  uint64_t type = 1;  // NORMAL
  Fields fields(in.bytes, in.start, where, "pieces");
  for (Field f; fields.next(f);) {
    if (f.number == 1) {
      fields.expect(f, kLengthDelimited, "piece");
      piece = f.bytes;
    } else if (f.number == 2) {
      fields.expect(f, kFixed32, "score");
      score_bits = static_cast<uint32_t>(f.value);
    } else if (f.number == 3) {
      fields.expect(f, kVarint, "type");
      type = f.value;
    }
  }
  const std::string what = "piece " + std::to_string(index) + " (at byte " + std::to_string(in.start) + ")";
  RPB_CHECK(!piece.empty() && piece.size() <= kMaxSentencePieceBytes, "tokenizer", where, ": ", what, " is ",
            piece.size(), " bytes long; rpb reads pieces of 1 to ", kMaxSentencePieceBytes, " bytes");
  RPB_CHECK(piece.find('\0') == std::string_view::npos, "tokenizer", where, ": ", what, " \"", printable(piece, 40),
            "\" holds a NUL byte");
  const float score = std::bit_cast<float>(score_bits);
  RPB_CHECK(std::isfinite(score) && std::fabs(score) <= kMaxSentencePieceScore, "tokenizer", where, ": ", what,
            " \"", printable(piece, 40), "\" has score ", score, "; rpb reads finite scores of magnitude at most ",
            kMaxSentencePieceScore);
  RPB_CHECK(type == 1 || type == 2 || type == 6, "tokenizer", where, ": ", what, " \"", printable(piece, 40),
            "\" is of type ", type, "; rpb's models hold normal (1), unknown (2) and byte (6) pieces");
}

// What rpb asks of a normalizer it reads (`name`: normalizer_spec or denormalizer_spec): no map, no rules.
void check_no_rules(const Normalizer& n, const std::string& where, const char* name) {
  RPB_CHECK(n.charsmap == 0, "tokenizer", where, ": ", name, " carries a precompiled map of ", n.charsmap,
            " bytes; rpb reads models of the identity normalization, without one");
  RPB_CHECK(n.rules == 0, "tokenizer", where, ": ", name, " carries normalization rules (", n.rules,
            " bytes); rpb reads models of the identity normalization, without them");
}

void check_normalizer(const Normalizer& n, const std::string& where) {
  RPB_CHECK(n.name == "identity", "tokenizer", where, ": the normalizer is \"", printable(n.name, 40),
            "\"; rpb reads models of the \"identity\" normalization, which decode to the text they encode");
  check_no_rules(n, where, "the normalizer");
  RPB_CHECK(!n.add_dummy_prefix, "tokenizer", where,
            ": the normalizer adds a space before the text (add_dummy_prefix); rpb's models do not");
  RPB_CHECK(!n.remove_extra_whitespaces, "tokenizer", where,
            ": the normalizer folds runs of spaces (remove_extra_whitespaces); rpb's models keep every space");
  RPB_CHECK(n.escape_whitespaces, "tokenizer", where,
            ": the normalizer leaves spaces unescaped (escape_whitespaces off); rpb's models escape them");
}

}  // namespace

SentencePieceModelFacts check_sentencepiece_model(std::string_view model, const std::string& where) {
  SentencePieceModelFacts facts;
  Trainer trainer;
  Normalizer normalizer, denormalizer;
  Fields fields(model, 0, where, "");
  for (Field f; fields.next(f);) {
    switch (f.number) {
      case 1:
        fields.expect(f, kLengthDelimited, "pieces");
        RPB_CHECK(facts.pieces < kMaxCharsVocab, "tokenizer", where, ": more than ", kMaxCharsVocab,
                  " pieces; rpb reads 1 to ", kMaxCharsVocab);
        check_piece(f, facts.pieces++, where);
        break;
      case 2:
        fields.expect(f, kLengthDelimited, "trainer_spec");
        read_trainer(f, where, trainer);
        break;
      case 3:
        fields.expect(f, kLengthDelimited, "normalizer_spec");
        read_normalizer(f, where, "normalizer_spec", normalizer);
        break;
      case 4:
        fields.expect(f, kLengthDelimited, "self_test_data");
        RPB_CHECK(f.bytes.empty(), "tokenizer", where, ": the model carries self-test samples (", f.bytes.size(),
                  " bytes at byte ", f.start, "); rpb's models carry none");
        break;
      case 5:
        fields.expect(f, kLengthDelimited, "denormalizer_spec");
        read_normalizer(f, where, "denormalizer_spec", denormalizer);
        break;
      default: break;  // a field rpb does not use
    }
  }
  RPB_CHECK(facts.pieces >= 1, "tokenizer", where, ": a SentencePiece model of no pieces; rpb reads 1 to ",
            kMaxCharsVocab);
  RPB_CHECK(trainer.model_type == 1 || trainer.model_type == 2, "tokenizer", where, ": model type ",
            trainer.model_type, "; rpb reads unigram (1) and bpe (2) models");
  RPB_CHECK(trainer.byte_fallback, "tokenizer", where,
            ": a model without byte fallback; rpb's models encode a character outside their pieces as its bytes");
  check_normalizer(normalizer, where);
  if (denormalizer.present) check_no_rules(denormalizer, where, "the denormalizer");
  facts.model_type = trainer.model_type == 1 ? "unigram" : "bpe";
  return facts;
}

}  // namespace rpb::data

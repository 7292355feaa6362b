// rpb/train/data/sentencepiece_model.h: a stored SentencePiece model, read field by field before SentencePiece
// parses it.
//
// A stored model is untrusted input (a checkpoint's /data/tokenizer_model), and SentencePiece trusts its models: a
// precompiled normalizer map of 9 bytes it cannot walk crashes its encoder, and a piece of 256 KiB overflows the
// stack while the model loads. Debian ships no generated ModelProto header, so check_sentencepiece_model reads the
// protobuf wire format itself (varints, fixed 32- and 64-bit values, length-delimited fields; every length checked
// against the bytes left; no groups; it descends only into the messages of sentencepiece_model.proto it checks, two
// levels deep) and refuses every model that is not one rpb trains (build_sentencepiece).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rpb::data {

/// The longest piece a stored model may hold, in bytes. rpb's models hold pieces of at most 16 characters (64
/// bytes); SentencePiece's loader recurses once per byte of a unigram piece, and one of about 100 KB overflows its
/// stack.
inline constexpr std::size_t kMaxSentencePieceBytes = 1024;

/// The largest score a stored piece may have, in magnitude (rpb's models hold log-probabilities, unigram, and
/// minus the piece's rank, BPE: both far smaller).
inline constexpr float kMaxSentencePieceScore = 1e9f;

/// What check_sentencepiece_model read of a model it accepts.
struct SentencePieceModelFacts {
  int64_t pieces = 0;      // the number of pieces: the tokenizer's vocabulary
  std::string model_type;  // "unigram" or "bpe"
};

/// Reads the serialized ModelProto `model` and throws rpb::Error "tokenizer: <where>: ..." naming what it found
/// unless it is well-formed and a model as rpb trains one:
///  - 1 to 65536 pieces, each of 1 to kMaxSentencePieceBytes bytes without a NUL, of a finite score of magnitude at
///    most kMaxSentencePieceScore, and of type normal, unknown or byte;
///  - trainer_spec: model_type unigram or bpe, byte_fallback on;
///  - normalizer_spec: name "identity", neither a precompiled map nor rules, add_dummy_prefix and
///    remove_extra_whitespaces off, escape_whitespaces on (the default);
///  - denormalizer_spec, if any: neither a precompiled map nor rules;
///  - no self-test samples (SentencePiece encodes them while it loads a model).
/// Never reads past `model`'s end, whatever its bytes; its time is linear in their number.
SentencePieceModelFacts check_sentencepiece_model(std::string_view model, const std::string& where);

}  // namespace rpb::data

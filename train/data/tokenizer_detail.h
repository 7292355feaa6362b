// rpb/train/data/tokenizer_detail.h: what the tokenizer files share (internal to train/data/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "train/data/tokenizer.h"

namespace rpb::data {

/// The most ids a chars or SentencePiece tokenizer has (config.h's kMaxVocab, the largest task.vocab).
inline constexpr int64_t kMaxCharsVocab = int64_t{1} << 16;

/// The longest line SentencePiece trains on: longer lines are sampled in pieces cut at a character boundary, so that
/// the sample holds at most task.sentencepiece_sentences x this many bytes (the memory estimate's bound).
inline constexpr int64_t kMaxSentenceBytes = 512;

/// What SentencePiece's encoder holds for each byte of a piece it encodes (its lattice and nodes): about 120
/// measured (tests/test_memory_text.cpp); the memory estimate allows this many.
inline constexpr int64_t kSentencePieceEncodeBytesPerByte = 256;

/// The bytes of the UTF-8 character at text[at]: 1 for ASCII, 2 to 4 for a valid sequence, 0 for invalid UTF-8.
std::size_t utf8_length(std::string_view text, std::size_t at);

/// The character at text[at] for messages: "U+00E9 ("é")", or "byte 0xff (invalid UTF-8)".
std::string character_name(std::string_view text, std::size_t at);

/// The sentencepiece row of the registry (train/data/tokenizer_sentencepiece.cpp).
std::unique_ptr<Tokenizer> build_sentencepiece(const TokenizerCorpus& corpus, const TokenizerOptions& options);
std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& model, const std::string& where);

}  // namespace rpb::data

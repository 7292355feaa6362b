// rpb/train/data/text.h: the text task: one's own corpus (task.path, a UTF-8 file or a folder of them), split into
// train, valid and test by a stable rule on each document's content, tokenized by task.tokenizer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "train/data/corpus.h"
#include "train/data/task.h"
#include "train/data/tokenizer.h"

namespace rpb::data {

/// The text task: train, valid and test streams of the documents of each split (split_of_document), in corpus order,
/// each document tokenized on its own, a piece at a time (Tokenizer::encode_pieces), and the ids concatenated. The
/// tokenizer is built from the corpus (TokenizerInfo::build: sentencepiece from the train split alone), or, with
/// TaskOptions::stored_tokenizer, loaded from a checkpoint's record (rpb eval). The corpus is read as one snapshot
/// (Corpus), one file at a time: once for the documents' splits and the corpus digest, once to build the tokenizer
/// and once to encode it. To train (DataUse::train) with TaskOptions::token_cache set, the tokenizer and the ids go
/// to the token cache (train/data/token_cache.h) and the streams hold the ids read back from it, verified; an entry
/// already there that passes its checks is read without building or encoding anything, and one that fails them is
/// written again (the log says why). Otherwise the ids are held in memory (an evaluation holds the test split
/// alone). The streams hold 2 bytes an id when the vocabulary fits 16 bits. A task.path naming the kjv task's text
/// (kjv_text_path(""), checkpoints/data/kjv.txt) that does not exist is written first, as the kjv task writes it,
/// unless TaskOptions::generate_missing is off.
class TextTask final : public Task {
 public:
  explicit TextTask(const TaskOptions& options);
  int64_t vocab() const override { return tokenizer_->vocab(); }
  std::string describe() const override;
  std::optional<double> entropy_rate() const override { return std::nullopt; }
  std::string decode(const std::vector<int32_t>& tokens) const override { return tokenizer_->decode(tokens); }
  const Tokenizer* tokenizer() const override { return tokenizer_.get(); }
  /// corpus_sha256 of the documents read.
  const std::string& text_sha256() const { return text_sha256_; }
  /// task.path as given.
  const std::string& path() const { return path_; }
  /// What messages call path(): TaskOptions::path_key ("task.path", "eval --data").
  const std::string& path_key() const { return path_key_; }

 private:
  std::string path_, path_key_, text_sha256_, describe_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace rpb::data

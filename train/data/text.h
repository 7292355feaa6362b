// rpb/train/data/text.h: the text task: one's own corpus (task.path, a UTF-8 file or a folder of them), split into
// train, valid and test by a stable rule on each document's content, tokenized by task.tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "train/data/task.h"
#include "train/data/tokenizer.h"

namespace rpb::data {

/// The most text bytes the text task reads (the sum over its files).
inline constexpr std::size_t kMaxTextBytes = std::size_t{4} << 30;

/// One document of a corpus: its text and where it came from (for messages).
struct TextDocument {
  std::string text;
  std::string source;  // "corpus/a.txt", or "corpus/a.txt:12" (the line its block starts on) for blank_lines
};

/// The documents of task.path (TaskOptions::path) as task.documents says: every regular file of a folder (its
/// subfolders included; symbolic links, FIFOs and devices skipped, never opened), in byte order of their paths
/// relative to the folder, or the file itself; each file one document ("files"), or each run of lines that are not
/// blank one document ("blank_lines": a block's lines, each ending in '\n', and one '\n' for the blank line that ends
/// it). Every file must be valid UTF-8 (rpb::Error names the file, line and byte otherwise); empty documents are
/// dropped. At most kMaxTextBytes are read. `skipped` (optional) counts the entries of a folder that are not regular
/// files.
std::vector<TextDocument> read_documents(const std::string& path, const std::string& documents,
                                         int64_t* skipped = nullptr);

/// The bytes read_documents would read from `path` (the sizes of its regular files, links not followed); 0 when it
/// does not exist or cannot be read (read_documents then says why). For the memory estimate.
int64_t corpus_bytes(const std::string& path);

/// The split of a document by its content: u = the first 8 bytes of its SHA-256 as a big-endian integer / 2^64;
/// test (2) when u < test_fraction, valid (1) when u < test_fraction + valid_fraction, train (0) otherwise. A document
/// keeps its split whatever else the corpus holds, and equal documents share one.
int split_of_document(std::string_view text, double valid_fraction, double test_fraction);

/// The digest of a corpus (TextTask::text_sha256): the SHA-256 of its documents' SHA-256 digests (64 hex digits
/// each followed by '\n'), in order.
std::string corpus_sha256(const std::vector<TextDocument>& documents);

/// The text task: train, valid and test streams of the documents of each split (split_of_document), in corpus order,
/// each document tokenized on its own and the ids concatenated. The tokenizer is built from the corpus
/// (TokenizerInfo::build: sentencepiece from the train split alone), or, with TaskOptions::stored_tokenizer, loaded
/// from a checkpoint's record (rpb eval, rpb generate).
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

 private:
  std::string path_, text_sha256_, describe_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace rpb::data

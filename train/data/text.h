// rpb/train/data/text.h: the text task: one's own corpus (task.path, a UTF-8 file or a folder of them), split into
// train, valid and test by a stable rule on each document's content, tokenized by task.tokenizer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "train/data/task.h"
#include "train/data/tokenizer.h"

namespace rpb::data {

/// The largest file of a corpus rpb reads (each file is read whole, one at a time).
inline constexpr std::size_t kMaxTextFileBytes = std::size_t{4} << 30;

/// One document of a corpus: its text and where it came from (for messages).
struct TextDocument {
  std::string text;
  std::string source;  // "corpus/a.txt", or "corpus/a.txt:12" (the line its block starts on) for blank_lines
};

/// Called with each document of a corpus, in order.
using DocumentCallback = std::function<void(TextDocument&& document)>;

/// The documents of task.path (TaskOptions::path) as task.documents says: every regular file of a folder (its
/// subfolders included; symbolic links, FIFOs and devices skipped, never opened), in byte order of their paths
/// relative to the folder, or the file itself; each file one document ("files"), or each run of lines that are not
/// blank one document ("blank_lines": a block's lines, each ending in '\n', and one '\n' for the blank line that ends
/// it). Every file must be valid UTF-8 (rpb::Error names the file, line and byte otherwise); empty documents are
/// dropped; a corpus without a document is refused. Files are read one at a time (at most kMaxTextFileBytes each) and
/// their documents handed to `f` as they are read, so a corpus need not fit in memory. `skipped` (optional) counts the
/// entries of a folder that are not regular files.
void for_each_document(const std::string& path, const std::string& documents, const DocumentCallback& f,
                       int64_t* skipped = nullptr);

/// Every document of for_each_document, in memory.
std::vector<TextDocument> read_documents(const std::string& path, const std::string& documents,
                                         int64_t* skipped = nullptr);

/// What for_each_document would read from a corpus: its bytes and its largest file's (the sizes of its regular files,
/// links not followed); zeros when it does not exist or cannot be read (for_each_document then says why). For the
/// memory estimate.
struct CorpusSize {
  int64_t bytes = 0, largest_file = 0;
};
CorpusSize corpus_size(const std::string& path);

/// The split of a document by its content: u = the first 8 bytes of its SHA-256 as a big-endian integer / 2^64;
/// test (2) when u < test_fraction, valid (1) when u < test_fraction + valid_fraction, train (0) otherwise. A document
/// keeps its split whatever else the corpus holds, and equal documents share one.
int split_of_document(std::string_view text, double valid_fraction, double test_fraction);

/// split_of_document of a document whose SHA-256 is `hex` (64 hex digits).
int split_of_digest(const std::string& hex, double valid_fraction, double test_fraction);

/// The digest of a corpus (TextTask::text_sha256): the SHA-256 of its documents' SHA-256 digests (64 hex digits
/// each followed by '\n'), in order; added a document at a time, as the corpus is read.
class CorpusDigest {
 public:
  /// Adds the document whose SHA-256 is `document_sha256` (64 hex digits).
  void add(const std::string& document_sha256) { (digests_ += document_sha256) += '\n'; }
  /// The corpus's digest so far (64 hex digits).
  std::string hex() const;

 private:
  std::string digests_;
};

/// The CorpusDigest of `documents`.
std::string corpus_sha256(const std::vector<TextDocument>& documents);

/// The text task: train, valid and test streams of the documents of each split (split_of_document), in corpus order,
/// each document tokenized on its own and the ids concatenated. The tokenizer is built from the corpus
/// (TokenizerInfo::build: sentencepiece from the train split alone), or, with TaskOptions::stored_tokenizer, loaded
/// from a checkpoint's record (rpb eval). The corpus is read one file at a time, once for the documents' splits and
/// the corpus digest, once to build the tokenizer and once to encode it. To train (DataUse::train) with
/// TaskOptions::token_cache set, the tokenizer and the ids go to the token cache (train/data/token_cache.h) and the
/// streams map its files; an entry already there is mapped without building or encoding anything. Otherwise the ids
/// are held in memory (an evaluation holds the test split alone). A task.path naming the kjv task's text
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

 private:
  std::string path_, text_sha256_, describe_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace rpb::data

// rpb/train/data/corpus.h: one's own corpus (task.path, a UTF-8 file or a folder of them) as documents, read as one
// snapshot however many times it is read; the split rule of its documents and its digest.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "train/io/sha256.h"
#include "train/io/status_line.h"

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

/// Called with each document of a corpus, in order, and its SHA-256 (64 hex digits).
using DigestedDocumentCallback = std::function<void(TextDocument&& document, const std::string& sha256)>;

/// A corpus: the documents of task.path as task.documents says. Every regular file of a folder (its subfolders
/// included; symbolic links, FIFOs, devices and sockets skipped, never opened, and counted) in byte order of their
/// paths relative to the folder, or the file itself; each file one document ("files"), or each run of lines that are
/// not blank one document ("blank_lines": a block's lines, each ending in '\n', and one '\n' for the blank line that
/// ends it). Every file must be valid UTF-8 (rpb::Error names the file, line and byte otherwise); empty documents are
/// dropped; a corpus without a document is refused. A folder that cannot be walked whole (a subfolder rpb may not
/// read, an entry that vanishes, an I/O error) is an error naming the path, never a shorter corpus.
///
/// The corpus is one snapshot however many passes read it. The files are listed once, when it is made. The first
/// read() records, for each file, how many documents it holds and a digest of their SHA-256s; every later read()
/// reads the same files (a file added since is not seen) and checks each against that record before any of its
/// documents is handed on: a file whose documents differ, or that cannot be read any more, throws rpb::Error naming
/// it ("changed while rpb read it"). So whatever passes read, they read the same documents as the first, whose digest
/// (sha256()) a checkpoint records. Files are read one at a time (at most kMaxTextFileBytes each): a corpus need not
/// fit in memory. A pass that lasts shows its progress (documents and bytes) on a terminal and in the log.
class Corpus {
 public:
  /// Lists the files of `path`. `progress_every` is the seconds between the log lines of a pass's progress; `key`
  /// names the path in messages (what the user gave: "task.path", or `rpb eval`'s "eval --data").
  Corpus(std::string path, std::string documents, double progress_every = 10, std::string key = "task.path");

  /// One pass: every document to `f`, in order, with its SHA-256. `what` names the pass in its progress line
  /// ("encoding the text").
  void read(const DigestedDocumentCallback& f, const std::string& what);

  /// What a pass's consumer may call while it works through a document (from the thread that reads): `bytes` more of
  /// it are done, for the progress line (SentencePiece encodes a 100 MB document in about half a minute).
  void advance(int64_t bytes);

  const std::string& path() const { return path_; }
  /// The regular files read, and the entries of a folder skipped (links, FIFOs, devices, sockets).
  int64_t files() const { return static_cast<int64_t>(files_.size()); }
  int64_t skipped() const { return skipped_; }
  /// The bytes of its files, as listed.
  int64_t bytes() const { return bytes_; }
  /// The documents and their digest (corpus_sha256): known once a pass has read the corpus.
  int64_t documents() const { return documents_; }
  const std::string& sha256() const { return sha256_; }

 private:
  struct File {
    std::string path;        // as read (task.path itself, or task.path/<relative path>)
    int64_t bytes = 0;       // its size when listed (for progress)
    int64_t documents = -1;  // its documents at the first pass (-1: not read yet)
    std::string digest;      // the SHA-256 of its documents' SHA-256s, at the first pass
  };
  /// Reads `file` and hands its documents to `f`, checking them against the first pass's record (recording it in
  /// the first pass).
  void read_file(File& file, const DigestedDocumentCallback& f);

  std::string path_, documents_mode_, key_;
  double progress_every_;
  std::vector<File> files_;
  int64_t skipped_ = 0, bytes_ = 0, documents_ = 0;
  std::atomic<int64_t> read_{0}, done_{0};  // the current pass's documents, and its bytes (of the files as listed)
  StatusLine* status_ = nullptr;            // the current pass's progress line
  bool first_ = true;
  std::string sha256_;
};

/// Every document of a corpus (one pass of Corpus), to `f`. `skipped` (optional) counts the entries of a folder that
/// are not regular files.
void for_each_document(const std::string& path, const std::string& documents, const DocumentCallback& f,
                       int64_t* skipped = nullptr);

/// Every document of for_each_document, in memory.
std::vector<TextDocument> read_documents(const std::string& path, const std::string& documents,
                                         int64_t* skipped = nullptr);

/// What a Corpus would read: its bytes, its largest file's and its files (the sizes of its regular files, links not
/// followed); zeros when it does not exist or cannot be walked (Corpus then says why). For the memory estimate.
struct CorpusSize {
  int64_t bytes = 0, largest_file = 0, files = 0;
};
CorpusSize corpus_size(const std::string& path);

/// The split of a document by its content: u = the first 8 bytes of its SHA-256 as a big-endian integer / 2^64;
/// test (2) when u < test_fraction, valid (1) when u < test_fraction + valid_fraction, train (0) otherwise. A document
/// keeps its split whatever else the corpus holds, and equal documents share one.
int split_of_document(std::string_view text, double valid_fraction, double test_fraction);

/// split_of_document of a document whose SHA-256 is `hex` (64 hex digits).
int split_of_digest(const std::string& hex, double valid_fraction, double test_fraction);

/// The digest of a corpus (Corpus::sha256, TextTask::text_sha256): the SHA-256 of its documents' SHA-256 digests (64
/// hex digits each followed by '\n'), in order; added a document at a time, as the corpus is read.
class CorpusDigest {
 public:
  /// Adds the document whose SHA-256 is `document_sha256` (64 hex digits).
  void add(const std::string& document_sha256) {
    sha_.update(document_sha256);
    sha_.update("\n");
  }
  /// The corpus's digest so far (64 hex digits).
  std::string hex() const { return Sha256(sha_).hex(); }

 private:
  Sha256 sha_;
};

/// The CorpusDigest of `documents`.
std::string corpus_sha256(const std::vector<TextDocument>& documents);

}  // namespace rpb::data

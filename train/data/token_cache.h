// rpb/train/data/token_cache.h: the token cache of a text corpus: its splits' ids as memory-mapped token files.
//
// A text run that trains tokenizes its corpus once: the entry <run.out_dir>/.token_cache/<key>/ holds the tokenizer
// and each split's ids, and every later run of the same corpus and tokenizer settings (a resume, another seed or
// scheme of a sweep, another rank) maps them instead of tokenizing again (TextTask). The key is a digest of the
// corpus's digest and of every setting the ids depend on, so another text or setting never reads an entry. An entry
// is written into a temporary folder and renamed into place when complete: processes that race write their own,
// the first rename wins and the others use it.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "train/data/token_stream.h"
#include "train/data/tokenizer.h"

namespace rpb::data {

/// A complete entry: the tokenizer and the train, valid and test ids.
struct CachedSplits {
  std::unique_ptr<Tokenizer> tokenizer;
  std::array<TokenStream, 3> streams;  // train, valid, test (mapped)
};

/// The entry `key` of cache folder `dir`, or nullopt when there is none. Its files are untrusted like a checkpoint:
/// the tokenizer is parsed (load_tokenizer) and every id checked against its vocabulary; a damaged entry throws
/// rpb::Error naming the file. Neither `dir` nor the entry may be a symbolic link.
std::optional<CachedSplits> open_token_cache(const std::string& dir, const std::string& key);

/// Writes the entry `key` of `dir` as its ids are appended, split by split in any order.
class TokenCacheWriter {
 public:
  /// Creates `dir` when missing (refusing a link) and a temporary folder for the entry in it; writes the tokenizer.
  TokenCacheWriter(const std::string& dir, const std::string& key, const Tokenizer& tokenizer);
  ~TokenCacheWriter();  // removes the temporary folder unless published
  TokenCacheWriter(const TokenCacheWriter&) = delete;
  TokenCacheWriter& operator=(const TokenCacheWriter&) = delete;
  /// Appends `ids` to split `split` (0 train, 1 valid, 2 test).
  void append(int split, const std::vector<int32_t>& ids);
  /// Flushes and syncs the files and renames the folder into place; when another process published the entry first,
  /// drops this one. Then opens the entry (open_token_cache).
  CachedSplits publish();

 private:
  std::string dir_, key_, tmp_;
  int width_;             // 2 or 4 bytes per id
  std::FILE* files_[3] = {nullptr, nullptr, nullptr};
  bool published_ = false;
};

}  // namespace rpb::data

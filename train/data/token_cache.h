// rpb/train/data/token_cache.h: the token cache of a text corpus: its splits' ids, written once, verified at each use.
//
// A text run that trains tokenizes its corpus once: the entry <run.out_dir>/.token_cache/<key>/ holds the tokenizer,
// each split's ids (token files of 2 or 4 bytes an id, little-endian) and a manifest, and every later run of the same
// corpus and tokenizer settings (a resume, another seed or scheme of a sweep, another rank) reads them instead of
// tokenizing again (TextTask). The key is a digest of the key's inputs (token_cache_inputs: the corpus's digest and
// every setting the ids depend on), so another text or setting never reads an entry.
//
// An entry proves its contents. Its manifest records the key's inputs, the tokenizer file's size and SHA-256, and each
// split's number of ids and SHA-256; a use checks all of them before any id is used, reading each file once into
// memory (so the ids used are the ids checked, and a file cut or rewritten while a run holds its ids changes
// nothing: no mapping can fault), and checks every id against the tokenizer's vocabulary. An entry that fails a check
// (damaged, cut, edited, another tokenizer, written by an earlier rpb without a manifest) is not used: the caller
// rebuilds it (discard_token_cache_entry), saying why. An entry is written into a temporary folder
// (.<key>.tmp.<host>.<pid>) and renamed into place when complete: processes that race write their own, the first
// rename wins and the others use it. Temporary folders of processes of this host that are gone (a killed run) are
// removed by the next run that looks the cache up.
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
#include "train/io/sha256.h"

namespace rpb::data {

/// A verified entry: the tokenizer and the train, valid and test ids (in memory).
struct CachedSplits {
  std::unique_ptr<Tokenizer> tokenizer;
  std::array<TokenStream, 3> streams;  // train, valid, test
};

/// What looking up an entry found.
struct TokenCacheLookup {
  std::optional<CachedSplits> entry;  // the verified entry; nullopt when there is none or it failed a check
  std::string stale;                  // why the entry there was not used ("" when it was, or when there was none)
};

/// The entry's key for `inputs` (the text of everything the ids depend on): 32 hex digits of its SHA-256.
std::string token_cache_key(const std::string& inputs);

/// The entry of cache folder `dir` for `inputs`, verified as the header says; an entry whose manifest records more
/// than `max_ids` ids in all (the corpus's bytes: no tokenizer makes more ids than bytes) is refused before any is
/// read. Neither `dir` nor the entry may be a symbolic link (rpb::Error: rpb does not follow it); every other fault of
/// an entry is reported in `stale`. Removes the temporary folders in `dir` of this host's processes that are gone.
TokenCacheLookup open_token_cache(const std::string& dir, const std::string& inputs, int64_t max_ids);

/// Removes the entry of `dir` for `inputs` (one that failed its checks), so that it can be written again; throws
/// rpb::Error naming the entry when it cannot be removed.
void discard_token_cache_entry(const std::string& dir, const std::string& inputs);

/// Writes the entry of `dir` for `inputs` as its ids are appended, split by split in any order.
class TokenCacheWriter {
 public:
  /// Creates `dir` when missing (refusing a link) and a temporary folder for the entry; writes the tokenizer.
  TokenCacheWriter(const std::string& dir, const std::string& inputs, const Tokenizer& tokenizer);
  ~TokenCacheWriter();  // removes the temporary folder unless published
  TokenCacheWriter(const TokenCacheWriter&) = delete;
  TokenCacheWriter& operator=(const TokenCacheWriter&) = delete;
  /// Appends `ids` to split `split` (0 train, 1 valid, 2 test).
  void append(int split, const std::vector<int32_t>& ids);
  /// Writes the manifest, syncs the files and renames the folder into place; when another process published the
  /// entry first, drops this one. Then reads the entry back, verified (open_token_cache): a failure throws.
  CachedSplits publish();

 private:
  std::string dir_, inputs_, key_, tmp_, tokenizer_sha256_;
  int width_;  // 2 or 4 bytes an id
  int64_t tokenizer_bytes_ = 0;
  std::FILE* files_[3] = {nullptr, nullptr, nullptr};
  int64_t counts_[3] = {0, 0, 0};
  Sha256 digests_[3];
  bool published_ = false;
};

}  // namespace rpb::data

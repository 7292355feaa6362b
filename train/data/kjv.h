// rpb/train/data/kjv.h: the kjv task: the King James Bible as characters (Debian's bible-kjv), split by book.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/data/task.h"

namespace rpb::data {

/// The kjv text a task with `kjv_path` (TaskOptions::kjv_path) reads: the path, or checkpoints/data/kjv.txt when it
/// is empty.
std::string kjv_text_path(const std::string& kjv_path);

/// The largest kjv text rpb reads (the KJV is 4.3 MB); the memory estimate's data part for kjv holds one this large.
inline constexpr std::size_t kMaxKjvTextBytes = std::size_t{12} << 20;

/// Character-level King James Bible. The cached text (TaskOptions::kjv_path) holds one verse per
/// line without its reference, books separated by one empty line; when missing it is produced
/// with `bible` (Debian package bible-kjv, text in bible-kjv-text) and written atomically.
/// Split by book, no overlap: book index b (0 = Genesis .. 65 = Revelation) goes to valid when
/// b % 10 == 4, to test when b % 10 == 9, to train otherwise. A split's stream is its books'
/// verses in canonical order, each followed by '\n'. Vocabulary: the distinct bytes of the
/// whole text (verses and '\n'), sorted, id = rank.
/// The text is read through train/io/input_file.h (a regular file of at most kMaxKjvTextBytes; a FIFO or a device is
/// refused by name).
class KjvTask final : public Task {
 public:
  explicit KjvTask(const TaskOptions& options);
  int64_t vocab() const override { return static_cast<int64_t>(chars_.size()); }
  std::string describe() const override;
  std::optional<double> entropy_rate() const override { return std::nullopt; }
  std::string decode(const std::vector<int32_t>& tokens) const override;
  /// Text to ids; a character outside the vocabulary is an error naming it.
  std::vector<int32_t> encode(const std::string& text) const;

  /// The sorted characters; id i is chars()[i].
  const std::string& chars() const { return chars_; }
  /// 0 train, 1 valid, 2 test, for every book in canonical order.
  const std::vector<int>& book_splits() const { return book_split_; }
  /// Where the cached text lives.
  const std::string& path() const { return path_; }
  /// The SHA-256 (64 hex digits) of the text as the splits read it: the books' verses, each followed by '\n', one
  /// empty line between books. For a text rpb wrote (generate_kjv_text) it is the file's own digest (sha256sum); a
  /// checkpoint records it to tell its training text from another (train/checkpoint/data_identity.h).
  const std::string& text_sha256() const { return text_sha256_; }
  /// The split of book index b under the rule above.
  static int split_of_book(int64_t b) { return b % 10 == 4 ? 1 : b % 10 == 9 ? 2 : 0; }

 private:
  std::string path_, chars_, text_sha256_;
  std::vector<int> book_split_;
  int32_t id_of_[256];
};

/// Produces the cached KJV text at `path` (one verse per line, books separated by an empty line)
/// by running `bible`; writes to a temporary file and renames it into place. Throws when the
/// program is missing (naming the Debian package) or its output cannot be parsed.
void generate_kjv_text(const std::string& path);

}  // namespace rpb::data

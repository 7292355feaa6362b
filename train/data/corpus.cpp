// rpb/train/data/corpus.cpp: see corpus.h.
#include "train/data/corpus.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/text.h"
#include "train/data/tokenizer_detail.h"
#include "train/io/input_file.h"

namespace fs = std::filesystem;

namespace rpb::data {

namespace {

// A folder's regular files (their paths relative to it, in byte order, and sizes) and its other entries.
struct Listing {
  std::vector<std::pair<std::string, int64_t>> files;
  int64_t skipped = 0;
};

// Walks folder `root` whole, or throws naming the path that could not be read: a subfolder rpb may not read, an
// entry that vanished, an I/O error. Links, FIFOs, devices and sockets are counted in `skipped`, never opened;
// subfolders are walked (a link to a folder is a link).
Listing list_folder(const fs::path& root, const std::string& key) {
  Listing out;
  std::vector<fs::path> folders{root};
  const auto check = [&key](const std::error_code& ec, const fs::path& p, const char* doing) {
    RPB_CHECK(!ec, "text", key, ": cannot ", doing, " ", printable(p.string()), ": ", ec.message(),
              " (rpb reads every file of a corpus or none: make it readable, or move it out of the folder)");
  };
  while (!folders.empty()) {
    const fs::path folder = std::move(folders.back());
    folders.pop_back();
    std::error_code ec;
    fs::directory_iterator it(folder, ec);
    check(ec, folder, "read the folder");
    for (const fs::directory_iterator end; it != end;) {
      const fs::path p = it->path();
      const fs::file_status st = it->symlink_status(ec);
      check(ec, p, "read");
      if (fs::is_directory(st)) {
        folders.push_back(p);
      } else if (fs::is_regular_file(st)) {
        const auto size = static_cast<int64_t>(fs::file_size(p, ec));
        check(ec, p, "read the size of");
        out.files.emplace_back(p.lexically_relative(root).string(), size);
      } else {
        ++out.skipped;
      }
      it.increment(ec);
      check(ec, folder, "read the folder");
    }
  }
  std::sort(out.files.begin(), out.files.end());
  return out;
}

// Where byte `at` of `text` is, for messages: "line 3, byte 17".
std::string line_of(std::string_view text, std::size_t at) {
  const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + at, '\n'));
  const std::size_t start = text.rfind('\n', at == 0 ? 0 : at - 1);
  const std::size_t column = start == std::string_view::npos || at == 0 ? at : at - start - 1;
  return "line " + std::to_string(line) + ", byte " + std::to_string(column + 1);
}

// Refuses a text that is not valid UTF-8, naming the file and where.
void check_utf8(std::string_view text, const std::string& file, const std::string& key) {
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t n = utf8_length(text, at);
    RPB_CHECK(n > 0, "text", key, ": ", printable(file), " is not UTF-8 text: ", character_name(text, at), " at ",
              line_of(text, at), " (the text task reads UTF-8; convert the file, e.g. with iconv)");
    at += n;
  }
}

bool blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

// The documents of one file's text.
std::vector<TextDocument> documents_of(std::string&& text, const std::string& file, bool blank_lines) {
  std::vector<TextDocument> out;
  if (!blank_lines) {
    if (!text.empty()) out.push_back({std::move(text), file});
    return out;
  }
  std::string block;
  std::size_t line_no = 0, block_line = 0;
  const auto finish = [&] {
    if (!block.empty()) out.push_back({block + "\n", file + ":" + std::to_string(block_line)});
    block.clear();
  };
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (blank(line)) {
      finish();
      continue;
    }
    if (block.empty()) block_line = line_no;
    (block += line) += '\n';
  }
  finish();
  return out;
}

std::string megabytes(int64_t bytes) { return fmt::format("{:.1f}", static_cast<double>(bytes) / 1e6); }

}  // namespace

Corpus::Corpus(std::string path, std::string documents, double progress_every, std::string key)
    : path_(std::move(path)), documents_mode_(std::move(documents)), key_(std::move(key)),
      progress_every_(progress_every) {
  RPB_CHECK(documents_mode_ == "files" || documents_mode_ == "blank_lines", "text", "task.documents must be "
            "\"files\" or \"blank_lines\"; got \"", printable(documents_mode_), "\"");
  RPB_CHECK(!path_.empty(), "text", key_, " is not set: the text task reads a UTF-8 file or a folder of them");
  struct stat st{};
  RPB_CHECK(::stat(path_.c_str(), &st) == 0, "text", key_, " ", printable(path_), ": ", std::strerror(errno));
  if (S_ISDIR(st.st_mode)) {
    Listing l = list_folder(path_, key_);
    skipped_ = l.skipped;
    for (auto& [rel, bytes] : l.files) files_.push_back({(fs::path(path_) / rel).string(), bytes, -1, ""});
  } else {
    files_.push_back({path_, static_cast<int64_t>(st.st_size), -1, ""});  // read_input_file refuses what is not a file
  }
  for (const File& f : files_) bytes_ += f.bytes;
}

void Corpus::read_file(File& file, const DigestedDocumentCallback& f) {
  InputOptions in;
  in.what = key_;
  in.max_bytes = kMaxTextFileBytes;
  in.limit_source = "the most rpb reads of one file of a text corpus (a larger corpus is several files)";
  const std::string changed = key_ + " " + printable(file.path) + " changed while rpb read it";
  std::string text;
  try {
    text = read_input_file(file.path, in);
  } catch (const Error& e) {
    if (first_) throw;
    throw Error("text: " + changed + ": " + e.message());
  }
  check_utf8(text, file.path, key_);
  std::vector<TextDocument> docs = documents_of(std::move(text), file.path, documents_mode_ == "blank_lines");
  std::vector<std::string> digests;
  digests.reserve(docs.size());
  Sha256 of_file;
  for (const TextDocument& d : docs) {
    digests.push_back(sha256_hex(d.text));
    of_file.update(digests.back());
  }
  const std::string digest = of_file.hex();
  const auto count = static_cast<int64_t>(docs.size());
  if (file.documents < 0) {
    file.documents = count;
    file.digest = digest;
  } else {
    RPB_CHECK(count == file.documents && digest == file.digest, "text", changed, ": it held ", file.documents,
              " documents when first read and holds ", count, count == file.documents ? " other ones" : "", " now; "
              "rpb reads a corpus several times (its splits and digest, the tokenizer, the ids) and needs the same "
              "text each time: rerun once the corpus no longer changes (nothing made from it is kept)");
  }
  const int64_t start = done_;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const int64_t before = done_, size = static_cast<int64_t>(docs[i].text.size());
    f(std::move(docs[i]), digests[i]);
    ++read_;
    done_ = std::min(before + size, start + file.bytes);  // whatever advance() said
  }
  done_ = start + file.bytes;
}

void Corpus::advance(int64_t bytes) {
  done_ += bytes;
  if (status_) status_->poke();
}

void Corpus::read(const DigestedDocumentCallback& f, const std::string& what) {
  read_ = 0;
  done_ = 0;
  const int64_t total_documents = first_ ? -1 : documents_;
  const auto started = std::chrono::steady_clock::now();
  const std::string name = printable(path_);
  StatusLine status(
      *spdlog::default_logger(),
      [&] {
        const int64_t d = read_, b = std::min<int64_t>(done_, bytes_);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        return fmt::format("text {}: {}: {}{} documents, {}/{} MB ({:.0f}%), elapsed {}", name, what, d,
                           total_documents < 0 ? "" : "/" + std::to_string(total_documents), megabytes(b),
                           megabytes(bytes_), bytes_ > 0 ? 100.0 * static_cast<double>(b) / static_cast<double>(bytes_)
                                                         : 100.0,
                           format_duration(secs));
      },
      progress_every_);
  status_ = &status;
  struct Done {
    StatusLine*& status;
    ~Done() { status = nullptr; }
  } done{status_};
  CorpusDigest digest;
  for (File& file : files_) {
    read_file(file, [&](TextDocument&& d, const std::string& sha) {
      if (first_) digest.add(sha);
      f(std::move(d), sha);
    });
    status.poke();
  }
  if (first_) {
    RPB_CHECK(read_ > 0, "text", key_, " ", printable(path_), " holds no text (", files_.size(), " files",
              skipped_ ? ", " + std::to_string(skipped_) + " links or special files skipped" : std::string(), ")");
    documents_ = read_;
    sha256_ = digest.hex();
    first_ = false;
  }
}

void for_each_document(const std::string& path, const std::string& documents, const DocumentCallback& f,
                       int64_t* skipped) {
  Corpus corpus(path, documents);
  if (skipped) *skipped = corpus.skipped();
  corpus.read([&](TextDocument&& d, const std::string&) { f(std::move(d)); }, "reading");
}

std::vector<TextDocument> read_documents(const std::string& path, const std::string& documents, int64_t* skipped) {
  std::vector<TextDocument> out;
  for_each_document(path, documents, [&](TextDocument&& d) { out.push_back(std::move(d)); }, skipped);
  return out;
}

CorpusSize corpus_size(const std::string& path) {
  struct stat st{};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return {};
  if (!S_ISDIR(st.st_mode)) {
    const int64_t n = S_ISREG(st.st_mode) ? static_cast<int64_t>(st.st_size) : 0;
    return {n, n, 1};
  }
  CorpusSize size;
  try {
    for (const auto& [rel, n] : list_folder(path, "task.path").files) {
      size.bytes += n;
      size.largest_file = std::max(size.largest_file, n);
      ++size.files;
    }
  } catch (const Error&) {
    return {};  // Corpus says why the folder cannot be read
  }
  return size;
}

int split_of_document(std::string_view text, double valid_fraction, double test_fraction) {
  return split_of_digest(sha256_hex(text), valid_fraction, test_fraction);
}

int split_of_digest(const std::string& hex, double valid_fraction, double test_fraction) {
  const uint64_t x = std::stoull(hex.substr(0, 16), nullptr, 16);
  const double u = static_cast<double>(x >> 11) * 0x1.0p-53;  // the top 53 bits: exact in a double, in [0, 1)
  return u < test_fraction ? 2 : u < test_fraction + valid_fraction ? 1 : 0;
}

std::string corpus_sha256(const std::vector<TextDocument>& documents) {
  CorpusDigest digest;
  for (const TextDocument& d : documents) digest.add(sha256_hex(d.text));
  return digest.hex();
}

}  // namespace rpb::data

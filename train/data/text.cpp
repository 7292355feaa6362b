// rpb/train/data/text.cpp: the text task (one's own corpus): reading the documents, the split rule, the streams.
#include "train/data/text.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "core/text.h"
#include "train/data/token_cache.h"
#include "train/data/tokenizer_detail.h"
#include "train/io/input_file.h"
#include "train/io/sha256.h"

namespace fs = std::filesystem;

namespace rpb::data {

namespace {

// The regular files of folder `root`, their paths relative to it in byte order; links, FIFOs, devices and sockets
// are counted in `skipped` and never opened; subfolders are walked (a link to a folder is not).
std::vector<std::string> folder_files(const std::string& root, int64_t& skipped) {
  std::vector<std::string> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
  RPB_CHECK(!ec, "text", "task.path ", printable(root), ": cannot read the folder: ", ec.message());
  for (; it != end; it.increment(ec)) {
    RPB_CHECK(!ec, "text", "task.path ", printable(root), ": cannot read the folder: ", ec.message());
    const fs::file_status st = it->symlink_status(ec);
    RPB_CHECK(!ec, "text", "task.path ", printable(it->path().string()), ": ", ec.message());
    if (fs::is_directory(st)) continue;  // walked by the iterator (a link to a folder is a link, not a folder)
    if (!fs::is_regular_file(st)) {
      ++skipped;
      continue;
    }
    files.push_back(it->path().lexically_relative(root).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Where byte `at` of `text` is, for messages: "line 3, byte 17".
std::string line_of(std::string_view text, std::size_t at) {
  const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + at, '\n'));
  const std::size_t start = text.rfind('\n', at == 0 ? 0 : at - 1);
  const std::size_t column = start == std::string_view::npos || at == 0 ? at : at - start - 1;
  return "line " + std::to_string(line) + ", byte " + std::to_string(column + 1);
}

// Refuses a text that is not valid UTF-8, naming the file and where.
void check_utf8(std::string_view text, const std::string& file) {
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t n = utf8_length(text, at);
    RPB_CHECK(n > 0, "text", "task.path: ", printable(file), " is not UTF-8 text: ", character_name(text, at), " at ",
              line_of(text, at), " (the text task reads UTF-8; convert the file, e.g. with iconv)");
    at += n;
  }
}

bool blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

// The documents of one file's text, to `f`.
void add_documents(std::string&& text, const std::string& file, bool blank_lines, const DocumentCallback& f) {
  if (!blank_lines) {
    if (!text.empty()) f({std::move(text), file});
    return;
  }
  std::string block;
  std::size_t line_no = 0, block_line = 0;
  const auto finish = [&] {
    if (!block.empty()) f({block + "\n", file + ":" + std::to_string(block_line)});
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
}

}  // namespace

void for_each_document(const std::string& path, const std::string& documents, const DocumentCallback& f,
                       int64_t* skipped) {
  RPB_CHECK(documents == "files" || documents == "blank_lines", "text", "task.documents must be \"files\" or "
            "\"blank_lines\"; got \"", printable(documents), "\"");
  RPB_CHECK(!path.empty(), "text", "task.path is not set: the text task reads a UTF-8 file or a folder of them");
  struct stat st{};
  RPB_CHECK(::stat(path.c_str(), &st) == 0, "text", "task.path ", printable(path), ": ", std::strerror(errno));
  std::vector<std::string> files;
  int64_t others = 0;
  const bool folder = S_ISDIR(st.st_mode);
  if (folder) files = folder_files(path, others);
  else files.push_back("");  // the file itself (read_input_file refuses what is not a regular file)
  if (skipped) *skipped = others;
  int64_t count = 0;
  const DocumentCallback counted = [&](TextDocument&& d) {
    ++count;
    f(std::move(d));
  };
  for (const std::string& rel : files) {
    const std::string file = folder ? (fs::path(path) / rel).string() : path;
    InputOptions in;
    in.what = "task.path";
    in.max_bytes = kMaxTextFileBytes;
    in.limit_source = "the most rpb reads of one file of a text corpus (a larger corpus is several files)";
    std::string text = read_input_file(file, in);
    check_utf8(text, file);
    add_documents(std::move(text), file, documents == "blank_lines", counted);
  }
  RPB_CHECK(count > 0, "text", "task.path ", printable(path), " holds no text (", files.size(), " files",
            others ? ", " + std::to_string(others) + " links or special files skipped" : std::string(), ")");
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
    return {n, n};
  }
  CorpusSize size;
  int64_t skipped = 0;
  try {
    for (const std::string& rel : folder_files(path, skipped)) {
      std::error_code ec;
      const auto n = static_cast<int64_t>(fs::file_size(fs::path(path) / rel, ec));
      if (ec) continue;
      size.bytes += n;
      size.largest_file = std::max(size.largest_file, n);
    }
  } catch (const Error&) {
    return size;  // for_each_document says why the folder cannot be read
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

std::string CorpusDigest::hex() const { return sha256_hex(digests_); }

std::string corpus_sha256(const std::vector<TextDocument>& documents) {
  CorpusDigest digest;
  for (const TextDocument& d : documents) digest.add(sha256_hex(d.text));
  return digest.hex();
}

namespace {

const char* const kSplitNames[3] = {"train", "valid", "test"};

// The entry of the token cache that holds `options`' splits of the corpus of digest `text_sha256`: a digest of
// everything the ids depend on.
std::string token_cache_key(const TaskOptions& o, const std::string& text_sha256) {
  std::ostringstream os;
  os.precision(17);
  os << "rpb-text-tokens-1\n" << text_sha256 << "\n" << o.documents << "\n" << o.valid_fraction << "\n"
     << o.test_fraction << "\n" << o.tokenizer << "\n";
  if (o.tokenizer == "sentencepiece")
    os << o.vocab << "\n" << o.sentencepiece_model << "\n" << o.sentencepiece_sentences << "\n" << o.seed << "\n";
  return sha256_hex(os.str()).substr(0, 32);
}

// The first pass over a corpus, one file at a time: each document's split, the splits' counts and bytes, and the
// corpus's digest (corpus_sha256).
struct CorpusSplits {
  std::vector<int> splits;  // of each document, in corpus order
  int64_t count[3] = {}, bytes[3] = {}, skipped = 0;
  std::string text_sha256;
};

CorpusSplits split_corpus(const TaskOptions& options) {
  CorpusSplits c;
  CorpusDigest digest;
  for_each_document(
      options.path, options.documents,
      [&](TextDocument&& d) {
        const std::string hex = sha256_hex(d.text);
        digest.add(hex);
        const int s = split_of_digest(hex, options.valid_fraction, options.test_fraction);
        ++c.count[s];
        c.bytes[s] += static_cast<int64_t>(d.text.size());
        c.splits.push_back(s);
      },
      &c.skipped);
  c.text_sha256 = digest.hex();
  for (int s = 0; s < 3; ++s)
    RPB_CHECK(c.count[s] > 0, "text", "task.path ", printable(options.path), ": the ", kSplitNames[s], " split has no ",
              "document (", c.splits.size(), " documents: ", c.count[0], " train, ", c.count[1], " valid, ", c.count[2],
              " test, by task.valid_fraction = ", options.valid_fraction, " and task.test_fraction = ",
              options.test_fraction, "); a corpus needs more documents (task.documents = \"blank_lines\" makes each "
              "paragraph one), or larger fractions");
  return c;
}

}  // namespace

TextTask::TextTask(const TaskOptions& options) : path_(options.path) {
  // The KJV text the kjv task writes from Debian's bible-kjv: written here too when it is missing, so that a text
  // config on it runs on a fresh machine (not when a checkpoint is read: TaskOptions::generate_missing).
  if (options.generate_missing && options.path == kjv_text_path("") && !std::filesystem::exists(options.path))
    generate_kjv_text(options.path);
  const CorpusSplits c = split_corpus(options);
  const std::vector<int>& splits = c.splits;
  text_sha256_ = c.text_sha256;
  // Each later pass reads the corpus again and hands every document to `f` with its split.
  const auto visit = [&](const std::function<void(const TextDocument&, int)>& f) {
    std::size_t i = 0;
    for_each_document(options.path, options.documents, [&](TextDocument&& d) {
      RPB_CHECK(i < splits.size(), "text", "task.path ", printable(options.path), " changed while rpb read it");
      f(d, splits[i++]);
    });
    RPB_CHECK(i == splits.size(), "text", "task.path ", printable(options.path), " changed while rpb read it");
  };
  // Every document's ids to `sink`, the test split alone for an evaluation.
  const auto encode = [&](const std::function<void(int, const std::vector<int32_t>&)>& sink) {
    std::vector<int32_t> ids;
    visit([&](const TextDocument& d, int split) {
      if (options.use != DataUse::train && split != 2) return;
      ids.clear();
      try {
        tokenizer_->encode(d.text, ids);
      } catch (const Error& e) {
        throw Error("text: " + printable(d.source) + ": " + e.message());
      }
      sink(split, ids);
    });
  };
  const bool cached = options.use == DataUse::train && !options.token_cache.empty() && !options.stored_tokenizer;
  const std::string key = cached ? token_cache_key(options, text_sha256_) : "";
  std::optional<CachedSplits> entry = cached ? open_token_cache(options.token_cache, key) : std::nullopt;
  const bool reused = entry.has_value();
  if (!entry) {
    if (options.stored_tokenizer) {
      tokenizer_ = load_tokenizer(*options.stored_tokenizer, "the checkpoint's tokenizer");
    } else {
      const TokenizerOptions t{options.vocab, options.sentencepiece_model, options.sentencepiece_sentences,
                               options.seed};
      const TokenizerCorpus corpus{[&](const DocumentVisitor& f) {
        visit([&](const TextDocument& d, int split) { f(d.text, split); });
      }};
      tokenizer_ = tokenizer_info(options.tokenizer).build(corpus, t);
    }
    if (cached) {
      TokenCacheWriter writer(options.token_cache, key, *tokenizer_);
      encode([&](int split, const std::vector<int32_t>& ids) { writer.append(split, ids); });
      entry = writer.publish();
    } else {
      std::vector<int32_t> streams[3];  // train, valid, test
      encode([&](int split, const std::vector<int32_t>& ids) {
        streams[split].insert(streams[split].end(), ids.begin(), ids.end());
      });
      train_ = std::move(streams[0]);
      valid_ = std::move(streams[1]);
      test_ = std::move(streams[2]);
    }
  }
  if (entry) {
    tokenizer_ = std::move(entry->tokenizer);
    train_ = entry->streams[0];
    valid_ = entry->streams[1];
    test_ = entry->streams[2];
  }
  std::ostringstream os;
  os << "text: " << splits.size() << " documents (" << options.documents << ") from " << printable(options.path);
  if (c.skipped) os << " (" << c.skipped << " links or special files skipped)";
  os << ", sha256 " << text_sha256_ << "; tokenizer " << tokenizer_->describe() << "; split by each document's "
     << "SHA-256 (valid " << options.valid_fraction << ", test " << options.test_fraction << "):";
  const TokenStream* streams[3] = {&train_, &valid_, &test_};
  for (int s = 0; s < 3; ++s)
    os << (s ? ";" : "") << " " << kSplitNames[s] << " " << c.count[s] << " documents, " << c.bytes[s] << " bytes, "
       << streams[s]->size() << " tokens";
  if (cached)
    os << "; ids " << (reused ? "mapped from" : "written to") << " the token cache "
       << printable((fs::path(options.token_cache) / key).string());
  describe_ = os.str();
}

std::string TextTask::describe() const { return describe_; }

}  // namespace rpb::data

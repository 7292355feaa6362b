// rpb/train/data/text.cpp: the text task (one's own corpus): reading the documents, the split rule, the streams.
#include "train/data/text.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "core/text.h"
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

// The documents of one file's text.
void add_documents(const std::string& text, const std::string& file, bool blank_lines,
                   std::vector<TextDocument>& out) {
  if (!blank_lines) {
    if (!text.empty()) out.push_back({text, file});
    return;
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
}

}  // namespace

std::vector<TextDocument> read_documents(const std::string& path, const std::string& documents, int64_t* skipped) {
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
  std::vector<TextDocument> out;
  std::size_t total = 0;
  for (const std::string& rel : files) {
    const std::string file = folder ? (fs::path(path) / rel).string() : path;
    InputOptions in;
    in.what = "task.path";
    in.max_bytes = kMaxTextBytes - total;
    in.limit_source = "what is left of the " + std::to_string(kMaxTextBytes >> 30) + " GiB rpb reads of a text corpus";
    const std::string text = read_input_file(file, in);
    total += text.size();
    check_utf8(text, file);
    add_documents(text, file, documents == "blank_lines", out);
  }
  RPB_CHECK(!out.empty(), "text", "task.path ", printable(path), " holds no text (", files.size(), " files",
            others ? ", " + std::to_string(others) + " links or special files skipped" : std::string(), ")");
  return out;
}

int64_t corpus_bytes(const std::string& path) {
  struct stat st{};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return 0;
  if (!S_ISDIR(st.st_mode)) return S_ISREG(st.st_mode) ? static_cast<int64_t>(st.st_size) : 0;
  int64_t total = 0, skipped = 0;
  try {
    for (const std::string& rel : folder_files(path, skipped)) {
      std::error_code ec;
      const auto size = fs::file_size(fs::path(path) / rel, ec);
      if (!ec) total += static_cast<int64_t>(size);
    }
  } catch (const Error&) {
    return total;  // read_documents says why the folder cannot be read
  }
  return total;
}

int split_of_document(std::string_view text, double valid_fraction, double test_fraction) {
  const std::string hex = sha256_hex(text);
  const uint64_t x = std::stoull(hex.substr(0, 16), nullptr, 16);
  const double u = static_cast<double>(x >> 11) * 0x1.0p-53;  // the top 53 bits: exact in a double, in [0, 1)
  return u < test_fraction ? 2 : u < test_fraction + valid_fraction ? 1 : 0;
}

std::string corpus_sha256(const std::vector<TextDocument>& documents) {
  std::string digests;
  digests.reserve(documents.size() * 65);
  for (const TextDocument& d : documents) (digests += sha256_hex(d.text)) += '\n';
  return sha256_hex(digests);
}

TextTask::TextTask(const TaskOptions& options) : path_(options.path) {
  int64_t skipped = 0;
  const std::vector<TextDocument> docs = read_documents(options.path, options.documents, &skipped);
  text_sha256_ = corpus_sha256(docs);
  std::vector<std::string_view> views;
  std::vector<int> splits;
  int64_t count[3] = {}, bytes[3] = {};
  for (const TextDocument& d : docs) {
    views.emplace_back(d.text);
    splits.push_back(split_of_document(d.text, options.valid_fraction, options.test_fraction));
    ++count[splits.back()];
    bytes[splits.back()] += static_cast<int64_t>(d.text.size());
  }
  static const char* const kSplit[3] = {"train", "valid", "test"};
  for (int s = 0; s < 3; ++s)
    RPB_CHECK(count[s] > 0, "text", "task.path ", printable(options.path), ": the ", kSplit[s], " split has no ",
              "document (", docs.size(), " documents: ", count[0], " train, ", count[1], " valid, ", count[2],
              " test, by task.valid_fraction = ", options.valid_fraction, " and task.test_fraction = ",
              options.test_fraction, "); a corpus needs more documents (task.documents = \"blank_lines\" makes each "
              "paragraph one), or larger fractions");
  if (options.stored_tokenizer) {
    tokenizer_ = load_tokenizer(*options.stored_tokenizer, "the checkpoint's tokenizer");
  } else {
    const TokenizerOptions t{options.vocab, options.sentencepiece_model, options.sentencepiece_sentences,
                             options.seed};
    tokenizer_ = tokenizer_info(options.tokenizer).build({views, splits}, t);
  }
  std::vector<int32_t> streams[3];  // train, valid, test
  for (std::size_t i = 0; i < docs.size(); ++i) {
    if (options.use != DataUse::train && splits[i] != 2) continue;  // evaluation reads the test split alone
    try {
      tokenizer_->encode(docs[i].text, streams[splits[i]]);
    } catch (const Error& e) {
      throw Error("text: " + printable(docs[i].source) + ": " + e.message());
    }
  }
  train_ = std::move(streams[0]);
  valid_ = std::move(streams[1]);
  test_ = std::move(streams[2]);
  std::ostringstream os;
  os << "text: " << docs.size() << " documents (" << options.documents << ") from " << printable(options.path);
  if (skipped) os << " (" << skipped << " links or special files skipped)";
  os << ", sha256 " << text_sha256_ << "; tokenizer " << tokenizer_->describe() << "; split by each document's "
     << "SHA-256 (valid " << options.valid_fraction << ", test " << options.test_fraction << "): train " << count[0]
     << " documents, " << bytes[0] << " bytes, " << train_.size() << " tokens; valid " << count[1] << ", " << bytes[1]
     << " bytes, " << valid_.size() << " tokens; test " << count[2] << ", " << bytes[2] << " bytes, " << test_.size()
     << " tokens";
  describe_ = os.str();
}

std::string TextTask::describe() const { return describe_; }

}  // namespace rpb::data

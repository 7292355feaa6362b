// rpb/train/data/kjv.cpp: the kjv task: the King James Bible as characters (Debian's bible-kjv), split by book.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string_view>

#include "core/error.h"
#include "core/text.h"
#include "train/data/kjv.h"
#include "train/io/input_file.h"
#include "train/io/sha256.h"

namespace fs = std::filesystem;

namespace rpb::data {

namespace {

const char* const kBookNames[66] = {
    "Genesis",       "Exodus",        "Leviticus",    "Numbers",         "Deuteronomy",     "Joshua",
    "Judges",        "Ruth",          "1 Samuel",     "2 Samuel",        "1 Kings",         "2 Kings",
    "1 Chronicles",  "2 Chronicles",  "Ezra",         "Nehemiah",        "Esther",          "Job",
    "Psalms",        "Proverbs",      "Ecclesiastes", "Song of Solomon", "Isaiah",          "Jeremiah",
    "Lamentations",  "Ezekiel",       "Daniel",       "Hosea",           "Joel",            "Amos",
    "Obadiah",       "Jonah",         "Micah",        "Nahum",           "Habakkuk",        "Zephaniah",
    "Haggai",        "Zechariah",     "Malachi",      "Matthew",         "Mark",            "Luke",
    "John",          "Acts",          "Romans",       "1 Corinthians",   "2 Corinthians",   "Galatians",
    "Ephesians",     "Philippians",   "Colossians",   "1 Thessalonians", "2 Thessalonians", "1 Timothy",
    "2 Timothy",     "Titus",         "Philemon",     "Hebrews",         "James",           "1 Peter",
    "2 Peter",       "1 John",        "2 John",       "3 John",          "Jude",            "Revelation"};

std::string book_name(size_t b, size_t num_books) {
  return num_books == 66 ? kBookNames[b] : "book " + std::to_string(b);
}

/// The full path of `name` on PATH, or "" when it is not there.
std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::stringstream ss(dirs);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    const fs::path p = fs::path(dir) / name;
    std::error_code ec;
    if (fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

// The SHA-256 of the books as KjvTask::text_sha256 documents: the text they were read from, in rpb's layout.
std::string books_sha256(const std::vector<std::vector<std::string_view>>& books) {
  std::string text;
  for (std::size_t b = 0; b < books.size(); ++b) {
    if (b > 0) text += '\n';
    for (const std::string_view verse : books[b]) (text += verse) += '\n';
  }
  return sha256_hex(text);
}

const char* kDefaultKjvPath = "checkpoints/data/kjv.txt";
const char* kBibleRange = "Gen1:1-Rev22:21";

}  // namespace

// ---------------------------------------------------------------- kjv

void generate_kjv_text(const std::string& path) {
  const std::string bible = find_program("bible");
  RPB_CHECK(!bible.empty(), "kjv",
            "the `bible` program is not installed: install the Debian packages bible-kjv and bible-kjv-text "
            "(apt-get install -y bible-kjv bible-kjv-text, or scripts/deps.sh); it is needed to create ",
            path);
  const std::string cmd = "'" + bible + "' -f -m 8000 \"" + kBibleRange + "\" </dev/null";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  RPB_CHECK(pipe != nullptr, "kjv", "cannot run ", cmd);
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = ::pclose(pipe);
  RPB_CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "kjv", "`", cmd, "` failed (status ",
            status, ")");

  // Each line: "<book><chapter>:<verse> <text>", the book an optional digit and letters (Ge, 1Sm, SSol).
  std::ostringstream text;
  std::string line, book;
  std::istringstream in(out);
  int64_t lineno = 0, books = 0, verses = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    size_t i = 0;
    if (std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
    const size_t letters = i;
    while (i < line.size() && std::isalpha(static_cast<unsigned char>(line[i]))) ++i;
    const size_t name_end = i;
    const size_t chapter = i;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
    bool ok = name_end > letters && i > chapter && i < line.size() && line[i] == ':';
    if (ok) {
      const size_t verse = ++i;
      while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
      ok = i > verse && i < line.size() && line[i] == ' ';
    }
    RPB_CHECK(ok, "kjv", "unexpected line ", lineno, " from `", cmd, "`: \"", line.substr(0, 80),
              "\" (expected \"<book><chapter>:<verse> <text>\")");
    std::string verse_text = line.substr(i + 1);
    while (!verse_text.empty() && std::isspace(static_cast<unsigned char>(verse_text.back()))) verse_text.pop_back();
    const std::string name = line.substr(0, name_end);
    if (name != book) {
      if (books > 0) text << '\n';  // an empty line between books
      book = name;
      ++books;
    }
    text << verse_text << '\n';
    ++verses;
  }
  RPB_CHECK(books == 66, "kjv", "`", cmd, "` printed ", books, " books (", verses,
            " verses); expected the 66 books of the KJV");

  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    RPB_CHECK(f.good(), "kjv", "cannot write ", tmp);
    const std::string s = text.str();
    f.write(s.data(), static_cast<std::streamsize>(s.size()));
    f.close();
    RPB_CHECK(!f.fail(), "kjv", "writing ", tmp, " failed");
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp);
    RPB_FAIL("kjv", "cannot rename ", tmp, " to ", path, ": ", ec.message());
  }
}

std::string kjv_text_path(const std::string& kjv_path) { return kjv_path.empty() ? kDefaultKjvPath : kjv_path; }

KjvTask::KjvTask(const TaskOptions& options) : path_(kjv_text_path(options.kjv_path)) {
  if (!fs::exists(path_)) {
    RPB_CHECK(options.generate_missing, "kjv", "the task's text ", printable(path_), " does not exist (`rpb train` ",
              "with a kjv config writes it; or pass --kjv-path FILE)");
    generate_kjv_text(path_);
  }
  InputOptions in;
  in.what = "kjv text";
  in.max_bytes = kMaxKjvTextBytes;
  in.limit_source = "the most rpb reads of a kjv text (the memory estimate's data part holds one this large)";
  const std::string text = read_input_file(path_, in);

  // Books are runs of non-empty lines separated by empty lines.
  std::vector<std::vector<std::string_view>> books;
  bool new_book = true;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (line.empty()) {
      new_book = true;
      continue;
    }
    if (new_book) books.emplace_back();
    new_book = false;
    books.back().push_back(line);
  }
  RPB_CHECK(books.size() >= 10, "kjv", "task.kjv_path = \"", path_, "\" holds ", books.size(),
            " books (separated by empty lines); need at least 10 so that valid and test get one each");

  text_sha256_ = books_sha256(books);

  bool seen[256] = {};
  seen[static_cast<unsigned char>('\n')] = true;
  for (const auto& b : books)
    for (const auto& v : b)
      for (char c : v) seen[static_cast<unsigned char>(c)] = true;
  std::fill(std::begin(id_of_), std::end(id_of_), -1);
  for (int c = 0; c < 256; ++c)
    if (seen[c]) {
      id_of_[c] = static_cast<int32_t>(chars_.size());
      chars_.push_back(static_cast<char>(c));
    }

  std::vector<int32_t> ids[3];  // train, valid, test
  std::vector<int32_t>* splits[3] = {&ids[0], &ids[1], &ids[2]};
  for (size_t b = 0; b < books.size(); ++b) {
    const int split = split_of_book(static_cast<int64_t>(b));
    book_split_.push_back(split);
    std::vector<int32_t>& out = *splits[split];
    for (const auto& v : books[b]) {
      for (char c : v) out.push_back(id_of_[static_cast<unsigned char>(c)]);
      out.push_back(id_of_[static_cast<unsigned char>('\n')]);
    }
  }
  train_ = std::move(ids[0]);
  valid_ = std::move(ids[1]);
  test_ = std::move(ids[2]);
}

std::string KjvTask::decode(const std::vector<int32_t>& tokens) const {
  std::string s;
  s.reserve(tokens.size());
  for (int32_t t : tokens) {
    RPB_CHECK(t >= 0 && t < vocab(), "kjv.decode", "token ", t, " outside the vocabulary of ", vocab());
    s.push_back(chars_[t]);
  }
  return s;
}

std::vector<int32_t> KjvTask::encode(const std::string& text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size());
  for (char c : text) {
    const int32_t id = id_of_[static_cast<unsigned char>(c)];
    RPB_CHECK(id >= 0, "kjv.encode", "character code ", static_cast<int>(static_cast<unsigned char>(c)),
              " is not in the KJV vocabulary");
    ids.push_back(id);
  }
  return ids;
}

std::string KjvTask::describe() const {
  std::ostringstream os;
  os << "kjv: character-level King James Bible from " << path_ << ", vocab " << vocab()
     << " characters; split by book index b (0 = Genesis): valid when b % 10 == 4 (";
  for (int which : {1, 2}) {
    bool first = true;
    for (size_t b = 0; b < book_split_.size(); ++b)
      if (book_split_[b] == which) {
        os << (first ? "" : ", ") << book_name(b, book_split_.size());
        first = false;
      }
    os << (which == 1 ? "), test when b % 10 == 9 (" : "), train otherwise; ");
  }
  os << "train " << train_.size() << ", valid " << valid_.size() << ", test " << test_.size() << " characters";
  return os.str();
}

}  // namespace rpb::data

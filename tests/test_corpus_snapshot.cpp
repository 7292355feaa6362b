// One's own corpus read as one snapshot (train/data/corpus.h): a file that changes between the passes over it, a
// folder rpb may not read whole, and the progress a pass shows.
#include <doctest/doctest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "hostile_files.h"
#include "test_util.h"
#include "train/data/corpus.h"
#include "train/data/task_registry.h"

namespace fs = std::filesystem;
using namespace rpb;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::TempDir;

namespace corpus_snapshot_test {

void put_corpus_file(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

// A folder of `n` files of two paragraphs each.
fs::path paragraph_corpus(const TempDir& dir, int n) {
  const fs::path corpus = dir.path / "corpus";
  for (int i = 0; i < n; ++i)
    put_corpus_file(corpus / ("doc" + std::to_string(100 + i) + ".txt"),
          "Paragraph one of file " + std::to_string(i) + ".\n\nParagraph two, " + std::to_string(i * 7) + ".\n");
  return corpus;
}

// Every log line to `lines`, and `hook` called with each (the thread that logs it reading the corpus, or its
// status line's).
class CorpusHookSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit CorpusHookSink(std::function<void(const std::string&)> hook) : hook_(std::move(hook)) {}
  std::vector<std::string> lines;

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    lines.emplace_back(msg.payload.data(), msg.payload.size());
    hook_(lines.back());
  }
  void flush_() override {}

 private:
  std::function<void(const std::string&)> hook_;
};

// Sets a default logger with `sink` while it lives.
struct ScopedDefaultLogger {
  std::shared_ptr<spdlog::logger> before = spdlog::default_logger();
  explicit ScopedDefaultLogger(std::shared_ptr<spdlog::sinks::sink> sink) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", std::move(sink)));
  }
  ~ScopedDefaultLogger() { spdlog::set_default_logger(before); }
};

}  // namespace corpus_snapshot_test

using namespace corpus_snapshot_test;

TEST_CASE("corpus: every later pass checks each file against the first, and a change is an error naming it") {
  TempDir dir("corpus_snapshot");
  const fs::path corpus = paragraph_corpus(dir, 3);
  data::Corpus c(corpus.string(), "blank_lines");
  std::vector<std::string> first;
  c.read([&](data::TextDocument&& d, const std::string& sha) {
    CHECK(sha == sha256_hex(d.text));
    first.push_back(d.text);
  }, "reading");
  CHECK(c.documents() == 6);
  CHECK(c.sha256() == data::corpus_sha256(data::read_documents(corpus.string(), "blank_lines")));
  // An unchanged corpus reads the same; a file added since is not seen (the files were listed once).
  put_corpus_file(corpus / "doc099.txt", "A file that came later.\n");
  std::vector<std::string> again;
  c.read([&](data::TextDocument&& d, const std::string&) { again.push_back(d.text); }, "reading");
  CHECK(again == first);
  // The same number of documents, other text: refused before any document of that file is handed on.
  put_corpus_file(corpus / "doc101.txt", "Paragraph one of file 1!\n\nParagraph two, 7.\n");
  std::vector<std::string> seen;
  const std::string changed = error_of([&] {
    c.read([&](data::TextDocument&& d, const std::string&) { seen.push_back(d.text); }, "encoding");
  });
  CHECK(contains(changed, "task.path " + (corpus / "doc101.txt").string() + " changed while rpb read it: it held 2 "
                                                                             "documents when first read and holds 2 "
                                                                             "other ones now"));
  CHECK(seen.size() == 2);  // doc100.txt's only
  // A file that vanished is a change too.
  fs::remove(corpus / "doc102.txt");
  put_corpus_file(corpus / "doc101.txt", "Paragraph one of file 1.\n\nParagraph two, 7.\n");
  CHECK(contains(error_of([&] { c.read([](data::TextDocument&&, const std::string&) {}, "encoding"); }),
                 (corpus / "doc102.txt").string() + " changed while rpb read it: task.path"));
}

TEST_CASE("corpus: a text task whose corpus changes between its passes stops naming the file and writes no cache "
          "entry") {
  TempDir dir("corpus_changes");
  const fs::path corpus = paragraph_corpus(dir, 8);
  data::TaskOptions o;
  o.kind = "text";
  o.path = corpus.string();
  o.documents = "blank_lines";
  o.tokenizer = "chars";
  o.valid_fraction = 0.3;
  o.test_fraction = 0.3;
  o.token_cache = (dir.path / "cache").string();
  o.progress_every_s = 0;  // a log line after every file: the hook below runs between two files of a pass
  const fs::path second = corpus / "doc101.txt";
  bool rewritten = false;
  const auto sink = std::make_shared<CorpusHookSink>([&](const std::string& line) {
    if (!rewritten && contains(line, ": encoding: ")) {  // the writer has begun the entry
      put_corpus_file(second, "Paragraph one of file 1!\n\nParagraph two, 7.\n");  // the same number of documents
      rewritten = true;
    }
  });
  {
    const ScopedDefaultLogger logger(sink);
    const std::string error = error_of([&] { data::make_task(o); });
    CHECK(contains(error, "task.path " + second.string() + " changed while rpb read it"));
    CHECK(contains(error, "nothing made from it is kept"));
  }
  REQUIRE(rewritten);
  CHECK(fs::is_empty(dir.path / "cache"));  // no entry, and the writer's temporary folder is gone
  // Each pass showed its progress: documents and bytes.
  std::string reading;
  for (const std::string& l : sink->lines)
    if (contains(l, ": reading its documents: ")) reading = l;
  CHECK(contains(reading, "text " + corpus.string() + ": reading its documents: 16 documents, 0.0/0.0 MB (100%)"));
  // Unchanged, the same task builds.
  CHECK(data::make_task(o)->train_stream().size() > 0);
}

TEST_CASE("corpus: a folder that cannot be walked whole is an error naming the path, never a shorter corpus") {
  TempDir dir("corpus_unreadable");
  ::chmod(dir.path.c_str(), 0755);  // the unprivileged child below may enter it
  const fs::path corpus = paragraph_corpus(dir, 4);
  put_corpus_file(corpus / "private" / "notes.txt", "A file in a folder the reader may not open.\n");
  ::chmod((corpus / "private").c_str(), 0700);
  // As an unprivileged user (root reads everything: the child drops to nobody).
  const testing::ChildRun r = testing::in_child([&] {
    if (::geteuid() == 0) REQUIRE(::setuid(65534) == 0);
    data::read_documents(corpus.string(), "blank_lines");
  });
  REQUIRE(r.finished);
  CHECK(contains(r.error, "task.path: cannot read the folder " + (corpus / "private").string() +
                              ": Permission denied (rpb reads every file of a corpus or none"));
  // What the memory estimate reads of it says nothing rather than something short.
  const testing::ChildRun size = testing::in_child([&] {
    if (::geteuid() == 0) REQUIRE(::setuid(65534) == 0);
    if (data::corpus_size(corpus.string()).bytes != 0) throw Error("a partial size");
  });
  CHECK(size.error == "no error");
}

TEST_CASE("corpus: a pass shows its progress within a document, as the encoder goes") {
  TempDir dir("corpus_progress");
  const fs::path corpus = dir.path / "corpus";
  std::string big;  // one paragraph of 1 MB: the first document
  while (big.size() < 1000000) big += "In the beginning God created the heaven and the earth.\n";
  put_corpus_file(corpus / "a.txt", big);
  std::string small;
  for (int i = 0; i < 40; ++i) small += "Paragraph " + std::to_string(i) + ".\n\n";
  put_corpus_file(corpus / "b.txt", small);
  data::TaskOptions o;
  o.kind = "text";
  o.path = corpus.string();
  o.documents = "blank_lines";
  o.tokenizer = "chars";
  o.valid_fraction = 0.2;
  o.test_fraction = 0.2;
  o.progress_every_s = 0;  // a line at every piece encoded
  const auto sink = std::make_shared<CorpusHookSink>([](const std::string&) {});
  {
    const ScopedDefaultLogger logger(sink);
    data::make_task(o);
  }
  // Lines of the encoding pass before its first document is done: "0/41 documents, 0.5/1.0 MB (50%)".
  int inside = 0;
  for (const std::string& l : sink->lines)
    if (contains(l, ": encoding: 0/41 documents, ") && !contains(l, " 0.0/")) ++inside;
  CHECK(inside > 0);
}

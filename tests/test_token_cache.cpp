// The token cache proves its contents (train/data/token_cache.h): an entry damaged, cut, edited or made by another
// tokenizer is written again, saying why, and never trained on; the ids a run holds are its own (a file cut under
// it changes nothing); the temporary folders of killed runs go.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hostile_files.h"
#include "test_util.h"
#include "train/data/task_registry.h"
#include "train/data/token_cache.h"
#include "train/data/tokenizer.h"

namespace fs = std::filesystem;
using namespace rpb;
using rpb::testing::contains;
using rpb::testing::TempDir;

namespace token_cache_test {

std::string cache_file_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void put_cache_file(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

// A corpus of 40 documents with the chars tokenizer, its token cache in dir/cache, and its ids as the task makes them
// without a cache.
struct CachedCorpus {
  TempDir dir{"token_cache"};
  data::TaskOptions options;
  std::unique_ptr<data::Task> reference;
  fs::path entry;  // the entry the first run wrote

  CachedCorpus() {
    for (int i = 0; i < 40; ++i)
      put_cache_file(dir.path / "c" / ("doc" + std::to_string(100 + i) + ".txt"),
            "Document " + std::to_string(i) + ": some text \xc3\xa9.\n");
    options.kind = "text";
    options.path = (dir.path / "c").string();
    options.tokenizer = "chars";
    options.valid_fraction = 0.2;
    options.test_fraction = 0.2;
    reference = data::make_task(options);
    options.token_cache = (dir.path / "cache").string();
    CHECK(contains(data::make_task(options)->describe(), "ids written to the token cache"));
    for (const auto& e : fs::directory_iterator(dir.path / "cache")) entry = e.path();
  }

  // Builds the task again: its entry is written again, for `why`, and its ids are the reference's.
  void rebuilt_for(const std::string& why) const {
    const auto task = data::make_task(options);
    CHECK_MESSAGE(contains(task->describe(), "(written again: " + why), task->describe());
    CHECK(task->train_stream() == reference->train_stream());
    CHECK(task->valid_stream() == reference->valid_stream());
    CHECK(task->test_stream() == reference->test_stream());
    CHECK(contains(data::make_task(options)->describe(), "read from the token cache"));  // sound again
  }
};

}  // namespace token_cache_test

using namespace token_cache_test;

TEST_CASE("token cache: an entry whose files differ from its manifest is written again, never used") {
  CachedCorpus c;
  const fs::path test = c.entry / "test.u16", train = c.entry / "train.u16";
  const auto test_ids = static_cast<std::size_t>(c.reference->test_stream().size());
  SUBCASE("a split cut to half its size") {
    fs::resize_file(test, test_ids);  // 2 bytes an id: half the ids
    c.rebuilt_for("token file " + test.string() + ": holds " + std::to_string(test_ids) + " bytes; its manifest "
                  "records " + std::to_string(test_ids) + " ids of 2 bytes");
  }
  SUBCASE("ids overwritten with ids inside the vocabulary") {
    std::string bytes = cache_file_bytes(test);
    std::fill(bytes.begin(), bytes.end(), '\0');  // every id 0
    put_cache_file(test, bytes);
    c.rebuilt_for("token file " + test.string() + ": its ids have SHA-256 ");
  }
  SUBCASE("a train split shuffled") {
    std::vector<uint16_t> ids(static_cast<std::size_t>(c.reference->train_stream().size()));
    std::ifstream(train, std::ios::binary).read(reinterpret_cast<char*>(ids.data()), 2 * static_cast<long>(ids.size()));
    std::reverse(ids.begin(), ids.end());
    std::ofstream(train, std::ios::binary)
        .write(reinterpret_cast<const char*>(ids.data()), 2 * static_cast<long>(ids.size()));
    c.rebuilt_for("token file " + train.string() + ": its ids have SHA-256 ");
  }
  SUBCASE("the tokenizer replaced by another valid one") {
    std::string tokenizer = cache_file_bytes(c.entry / "tokenizer");
    const std::size_t newline = tokenizer.find('\n');
    REQUIRE(tokenizer[newline + 1] == '\n');
    tokenizer[newline + 1] = '\t';  // id 0 stands for a tab, not a line end
    put_cache_file(c.entry / "tokenizer", tokenizer);
    CHECK(data::load_tokenizer({"chars", tokenizer.substr(newline + 1)}, "t")->vocab() == c.reference->vocab());
    c.rebuilt_for("token cache: " + (c.entry / "tokenizer").string() + ": ");
    CHECK(contains(data::make_task(c.options)->describe(), "read from the token cache"));
  }
  SUBCASE("a manifest recording more ids than the corpus has bytes: refused before anything is read") {
    std::string manifest = cache_file_bytes(c.entry / "manifest.json");
    const std::string ids = "\"ids\": " + std::to_string(c.reference->train_stream().size());
    REQUIRE(manifest.find(ids) != std::string::npos);
    manifest.replace(manifest.find(ids), ids.size(), "\"ids\": 1099511627776");  // 2^40: 2 TiB of ids
    put_cache_file(c.entry / "manifest.json", manifest);
    c.rebuilt_for("token cache: " + (c.entry / "manifest.json").string() + ": records 109951162");  // 2^40 and more
  }
  SUBCASE("no manifest: an entry of an earlier rpb, or one cut short") {
    fs::remove(c.entry / "manifest.json");
    c.rebuilt_for("token cache: " + c.entry.string() + " has no manifest.json");
  }
  SUBCASE("a manifest of other inputs, or not a manifest") {
    std::string manifest = cache_file_bytes(c.entry / "manifest.json");
    manifest.replace(manifest.find("chars"), 5, "bytes");
    put_cache_file(c.entry / "manifest.json", manifest);
    c.rebuilt_for("token cache: " + (c.entry / "manifest.json").string() + ": the entry was written for other inputs");
    put_cache_file(c.entry / "manifest.json", "{\"format\": 7}");
    c.rebuilt_for("token cache: " + (c.entry / "manifest.json").string() + ": not a manifest rpb writes");
    put_cache_file(c.entry / "manifest.json", "[[[[[[[[");
    c.rebuilt_for("token cache: " + (c.entry / "manifest.json").string() + ": not a manifest rpb writes");
  }
}

TEST_CASE("token cache: the ids a run holds are read into memory, so a file cut under the run changes nothing") {
  CachedCorpus c;
  const auto task = data::make_task(c.options);
  REQUIRE(contains(task->describe(), "read from the token cache"));
  for (const char* split : {"train.u16", "valid.u16", "test.u16"}) fs::resize_file(c.entry / split, 0);
  // A mapping of the cut files would fault here (SIGBUS).
  CHECK(task->train_stream() == c.reference->train_stream());
  CHECK(task->test_stream() == c.reference->test_stream());
}

TEST_CASE("token cache: the next run removes the temporary folders of this host's processes that are gone, only those") {
  CachedCorpus c;
  const fs::path cache = c.dir.path / "cache";
  std::string host;  // as the writer names its temporary folder: .<key>.tmp.<host>.<pid>
  {
    const auto tokenizer = data::load_tokenizer({"bytes", ""}, "t");
    const data::TokenCacheWriter writer(cache.string(), "other inputs", *tokenizer);
    for (const auto& e : fs::directory_iterator(cache)) {
      const std::string name = e.path().filename().string();
      const std::string pid = "." + std::to_string(::getpid());
      if (contains(name, ".tmp.") && name.size() > pid.size() &&
          name.compare(name.size() - pid.size(), pid.size(), pid) == 0)
        host = name.substr(name.find(".tmp.") + 5, name.size() - pid.size() - name.find(".tmp.") - 5);
    }
  }
  REQUIRE(!host.empty());
  const pid_t gone = ::fork();  // a pid no process holds
  if (gone == 0) ::_exit(0);
  REQUIRE(::waitpid(gone, nullptr, 0) == gone);
  const std::string dead = std::to_string(gone);
  const std::vector<std::string> removed = {".k.tmp." + host + "." + dead, ".k.tmp." + dead,
                                            ".k.stale." + host + "." + dead};
  const std::vector<std::string> kept = {".k.tmp.elsewhere." + dead, ".k.tmp." + host + ".1", "k.tmp." + dead,
                                         ".k.tmp." + host + ".x" + dead};
  for (const auto& names : {removed, kept})
    for (const std::string& name : names) put_cache_file(cache / name / "train.u16", "ab");
  REQUIRE(contains(data::make_task(c.options)->describe(), "read from the token cache"));  // a run that writes nothing
  for (const std::string& name : removed) CHECK_MESSAGE(!fs::exists(cache / name), name);
  for (const std::string& name : kept) CHECK_MESSAGE(fs::exists(cache / name), name);
}

TEST_CASE("token cache: an entry that fails its checks and cannot be removed stops the run, naming it") {
  CachedCorpus c;
  ::chmod(c.dir.path.c_str(), 0755);  // the unprivileged child below reads the corpus and the cache, writes nothing
  fs::resize_file(c.entry / "test.u16", 2);
  const testing::ChildRun r = testing::in_child([&] {
    if (::geteuid() == 0) REQUIRE(::setuid(65534) == 0);
    data::make_task(c.options);
  });
  REQUIRE(r.finished);
  CHECK(contains(r.error, "token cache: cannot remove the damaged entry " + c.entry.string() + ": Permission denied "
                          "(delete it, and rpb writes it again)"));
}

// rpb/train/data/token_cache.cpp: see token_cache.h.
#include "train/data/token_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/text.h"
#include "train/io/input_file.h"

namespace fs = std::filesystem;

namespace rpb::data {

namespace {

const char* const kCacheSplitNames[3] = {"train", "valid", "test"};

// The file of split `s` with ids of `width` bytes.
std::string split_file(const std::string& folder, int s, int width) {
  return (fs::path(folder) / (std::string(kCacheSplitNames[s]) + (width == 2 ? ".u16" : ".i32"))).string();
}

// What is at `path` when it is neither missing nor a folder (lstat: a link is a link), else "".
std::string not_a_folder(const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return "";
  return S_ISDIR(st.st_mode) ? "" : mode_kind(st.st_mode);
}

int width_of(int64_t vocab) { return vocab <= 65536 ? 2 : 4; }

}  // namespace

std::optional<CachedSplits> open_token_cache(const std::string& dir, const std::string& key) {
  const std::string folder = (fs::path(dir) / key).string();
  for (const std::string& p : {dir, folder})
    if (const std::string kind = not_a_folder(p); !kind.empty())
      RPB_FAIL("token cache", printable(p), " is ", kind, ", not a folder; rpb does not follow it");
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return std::nullopt;
  InputOptions in;
  in.what = "token cache tokenizer";
  in.max_bytes = kMaxTokenizerModelBytes + 64;
  in.in_run_folder = true;  // no link followed
  const std::string stored = read_input_file((fs::path(folder) / "tokenizer").string(), in);
  const std::size_t newline = stored.find('\n');
  RPB_CHECK(newline != std::string::npos, "token cache", printable(folder), "/tokenizer: expected its kind, a newline "
            "and its model");
  CachedSplits c;
  c.tokenizer = load_tokenizer({stored.substr(0, newline), stored.substr(newline + 1)}, folder + "/tokenizer");
  const int width = width_of(c.tokenizer->vocab());
  for (int s = 0; s < 3; ++s) c.streams[static_cast<std::size_t>(s)] = TokenStream::map_file(split_file(folder, s, width), width, c.tokenizer->vocab());
  return c;
}

TokenCacheWriter::TokenCacheWriter(const std::string& dir, const std::string& key, const Tokenizer& tokenizer)
    : dir_(dir), key_(key), width_(width_of(tokenizer.vocab())) {
  if (const std::string kind = not_a_folder(dir); !kind.empty())
    RPB_FAIL("token cache", printable(dir), " is ", kind, ", not a folder; rpb does not follow it");
  std::error_code ec;
  fs::create_directories(dir, ec);
  RPB_CHECK(!ec, "token cache", "cannot create ", printable(dir), ": ", ec.message());
  tmp_ = (fs::path(dir) / ("." + key + ".tmp." + std::to_string(::getpid()))).string();
  fs::remove_all(tmp_, ec);  // left by an earlier process of this pid
  RPB_CHECK(::mkdir(tmp_.c_str(), 0755) == 0, "token cache", "cannot create ", printable(tmp_), ": ",
            std::strerror(errno));
  const TokenizerRecord r = tokenizer.record();
  const std::string text = r.kind + "\n" + r.model;
  std::FILE* t = std::fopen((fs::path(tmp_) / "tokenizer").c_str(), "wbx");
  RPB_CHECK(t && std::fwrite(text.data(), 1, text.size(), t) == text.size() && std::fclose(t) == 0, "token cache",
            "cannot write ", printable(tmp_), "/tokenizer: ", std::strerror(errno));
  for (int s = 0; s < 3; ++s) {
    files_[s] = std::fopen(split_file(tmp_, s, width_).c_str(), "wbx");
    RPB_CHECK(files_[s] != nullptr, "token cache", "cannot create ", printable(split_file(tmp_, s, width_)), ": ",
              std::strerror(errno));
  }
}

TokenCacheWriter::~TokenCacheWriter() {
  for (std::FILE*& f : files_)
    if (f) std::fclose(f);
  if (!published_) {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }
}

void TokenCacheWriter::append(int split, const std::vector<int32_t>& ids) {
  std::FILE* f = files_[split];
  bool ok = true;
  if (width_ == 2) {
    std::vector<uint16_t> narrow(ids.begin(), ids.end());
    ok = std::fwrite(narrow.data(), 2, narrow.size(), f) == narrow.size();
  } else {
    ok = std::fwrite(ids.data(), 4, ids.size(), f) == ids.size();
  }
  RPB_CHECK(ok, "token cache", "cannot write ", printable(split_file(tmp_, split, width_)), ": ", std::strerror(errno));
}

CachedSplits TokenCacheWriter::publish() {
  for (int s = 0; s < 3; ++s) {
    std::FILE* f = files_[s];
    files_[s] = nullptr;
    const bool ok = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
    const int err = errno;
    const bool closed = std::fclose(f) == 0;
    RPB_CHECK(ok && closed, "token cache", "cannot write ", printable(split_file(tmp_, s, width_)), ": ",
              std::strerror(err));
  }
  const std::string folder = (fs::path(dir_) / key_).string();
  if (::rename(tmp_.c_str(), folder.c_str()) == 0) {
    published_ = true;
    if (const int d = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); d >= 0) {
      ::fsync(d);
      ::close(d);
    }
  } else {
    RPB_CHECK(errno == EEXIST || errno == ENOTEMPTY, "token cache", "cannot rename ", printable(tmp_), " to ",
              printable(folder), ": ", std::strerror(errno));
  }
  std::optional<CachedSplits> c = open_token_cache(dir_, key_);
  RPB_CHECK(c.has_value(), "token cache", printable(folder), " vanished after it was written");
  return std::move(*c);
}

}  // namespace rpb::data

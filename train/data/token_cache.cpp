// rpb/train/data/token_cache.cpp: see token_cache.h.
#include "train/data/token_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <type_traits>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/text.h"
#include "train/io/atomic_file.h"
#include "train/io/input_file.h"
#include "train/io/no_follow.h"

namespace fs = std::filesystem;

namespace rpb::data {

namespace {

const char* const kCacheSplitNames[3] = {"train", "valid", "test"};
constexpr const char* kManifest = "manifest.json";
constexpr const char* kManifestFormat = "rpb-token-cache-1";
constexpr std::size_t kMaxManifestBytes = std::size_t{1} << 20;  // the key's inputs are a few hundred bytes

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

void refuse_link(const std::string& path) {
  if (const std::string kind = not_a_folder(path); !kind.empty())
    RPB_FAIL("token cache", printable(path), " is ", kind, ", not a folder; rpb does not follow it");
}

// This host's name as it appears in temporary folders' names: letters, digits, '-' and '_' ("host" when unknown).
std::string host_tag() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "host";
  std::string tag(name);
  for (char& c : tag)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '_';
  return tag;
}

// The pid of a temporary folder of this host (".<key>.tmp.<host>.<pid>", ".<key>.stale.<host>.<pid>", or an earlier
// rpb's ".<key>.tmp.<pid>"), or "" when `name` is not one.
std::string temp_folder_pid(const std::string& name, const std::string& host) {
  if (name.empty() || name[0] != '.') return "";
  for (const char* kind : {".tmp.", ".stale."}) {
    const std::size_t at = name.find(kind);
    if (at == std::string::npos) continue;
    std::string rest = name.substr(at + std::strlen(kind));
    const std::size_t dot = rest.rfind('.');
    if (dot != std::string::npos) {  // <host>.<pid>
      if (rest.substr(0, dot) != host) return "";
      rest = rest.substr(dot + 1);
    }
    return !rest.empty() && rest.find_first_not_of("0123456789") == std::string::npos ? rest : "";
  }
  return "";
}

// Removes the temporary folders in `dir` of this host's processes that are gone (a run killed while it wrote an
// entry, or removed a damaged one).
void remove_dead_temps(const std::string& dir, const std::string& host) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string pid = temp_folder_pid(name, host);
    if (pid.empty() || live_process(pid)) continue;
    std::error_code removed;
    fs::remove_all(it->path(), removed);
    if (!removed)
      spdlog::info("token cache {}: removed {}, left by process {}, which is gone", printable(dir), printable(name),
                   pid);
  }
}

// The ids of token file `path`, read once through one descriptor into memory and checked: `count` ids of `width`
// bytes (the size checked before anything is read), whose bytes have SHA-256 `sha256`, each in [0, vocab).
TokenStream read_token_file(const std::string& path, int width, int64_t count, const std::string& sha256,
                            int64_t vocab) {
  const std::string op = "token file " + printable(path);
  FileDescriptor fd = open_no_follow(path, O_RDONLY | O_NONBLOCK | O_NOCTTY, op);
  struct stat st{};
  RPB_CHECK(::fstat(fd.get(), &st) == 0, op.c_str(), "cannot stat the file: ", std::strerror(errno));
  const auto bytes = static_cast<int64_t>(st.st_size);
  RPB_CHECK(count >= 0 && bytes / width == count && bytes % width == 0, op.c_str(), "holds ", bytes,
            " bytes; its manifest records ", count, " ids of ", width, " bytes (", count * width, " bytes)");
  std::vector<uint16_t> u16(width == 2 ? static_cast<std::size_t>(count) : 0);
  std::vector<int32_t> i32(width == 4 ? static_cast<std::size_t>(count) : 0);
  char* data = width == 2 ? reinterpret_cast<char*>(u16.data()) : reinterpret_cast<char*>(i32.data());
  Sha256 digest;
  for (int64_t done = 0; done < bytes;) {
    const ssize_t n = ::read(fd.get(), data + done, static_cast<std::size_t>(std::min<int64_t>(bytes - done, 1 << 24)));
    if (n < 0 && errno == EINTR) continue;
    RPB_CHECK(n >= 0, op.c_str(), "cannot read the file: ", std::strerror(errno));
    RPB_CHECK(n > 0, op.c_str(), "ended after ", done, " of its ", bytes, " bytes while rpb read it");
    digest.update(data + done, static_cast<std::size_t>(n));
    done += n;
  }
  char more = 0;
  RPB_CHECK(::read(fd.get(), &more, 1) == 0, op.c_str(), "grew past its ", bytes, " bytes while rpb read it");
  const std::string found = digest.hex();
  RPB_CHECK(found == sha256, op.c_str(), "its ids have SHA-256 ", found, "; its manifest records ", sha256,
            " (the file was changed after it was written)");
  TokenStream s = width == 2 ? TokenStream(std::move(u16)) : TokenStream(std::move(i32));
  for (int64_t i = 0; i < s.size(); ++i)
    RPB_CHECK(s[i] >= 0 && s[i] < vocab, op.c_str(), "id ", i, " is ", s[i], ", outside the vocabulary of ", vocab);
  return s;
}

// The manifest of `folder`, parsed: rpb::Error when it is missing, too large or not what rpb writes.
nlohmann::json read_manifest(const std::string& folder) {
  const std::string file = (fs::path(folder) / kManifest).string();
  RPB_CHECK(fs::exists(fs::symlink_status(file)), "token cache", printable(folder), " has no ", kManifest,
            " (an entry written by an earlier rpb, or cut short)");
  InputOptions in;
  in.what = "token cache manifest";
  in.max_bytes = kMaxManifestBytes;
  in.in_run_folder = true;  // no link followed
  const std::string text = read_input_file(file, in);
  nlohmann::json m = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const auto format = m.is_object() ? m.find("format") : m.end();
  RPB_CHECK(m.is_object() && format != m.end() && *format == kManifestFormat, "token cache", printable(file),
            ": not a manifest rpb writes (expected an object with \"format\": \"", kManifestFormat, "\")");
  return m;
}

// A string, or an integer >= 0, of the manifest; rpb::Error naming the file otherwise.
template <typename T>
T field(const nlohmann::json& object, const char* key, const std::string& file) {
  const auto it = object.find(key);
  if constexpr (std::is_same_v<T, std::string>) {
    RPB_CHECK(it != object.end() && it->is_string(), "token cache", printable(file), ": \"", key,
              "\" is missing or not a string");
    return it->template get<std::string>();
  } else {
    RPB_CHECK(it != object.end() && it->is_number_unsigned(), "token cache", printable(file), ": \"", key,
              "\" is missing or not a count");
    return it->template get<T>();
  }
}

// The entry at `folder`, every file checked against its manifest, and its ids counted before any is read.
CachedSplits verify_entry(const std::string& folder, const std::string& inputs, int64_t max_ids) {
  const nlohmann::json m = read_manifest(folder);
  const std::string file = (fs::path(folder) / kManifest).string();
  RPB_CHECK(field<std::string>(m, "inputs", file) == inputs, "token cache", printable(file),
            ": the entry was written for other inputs than its key's (",
            printable(field<std::string>(m, "inputs", file), 200), ")");
  InputOptions in;
  in.what = "token cache tokenizer";
  in.max_bytes = kMaxTokenizerModelBytes + 64;
  in.in_run_folder = true;  // no link followed
  const std::string tokenizer_file = (fs::path(folder) / "tokenizer").string();
  const std::string stored = read_input_file(tokenizer_file, in);
  const std::string tokenizer_sha = sha256_hex(stored);
  const auto recorded_bytes = field<uint64_t>(m, "tokenizer_bytes", file);
  const auto recorded_sha = field<std::string>(m, "tokenizer_sha256", file);
  RPB_CHECK(stored.size() == recorded_bytes && tokenizer_sha == recorded_sha, "token cache", printable(tokenizer_file),
            ": ", stored.size(), " bytes of SHA-256 ", tokenizer_sha, "; the manifest records the tokenizer that made "
            "the ids, of ", recorded_bytes, " bytes and SHA-256 ", printable(recorded_sha, 64));
  const std::size_t newline = stored.find('\n');
  RPB_CHECK(newline != std::string::npos, "token cache", printable(tokenizer_file), ": expected its kind, a newline "
            "and its model");
  CachedSplits c;
  c.tokenizer = load_tokenizer({stored.substr(0, newline), stored.substr(newline + 1)}, tokenizer_file);
  const int width = token_width(c.tokenizer->vocab());
  const auto splits = m.find("splits");
  RPB_CHECK(splits != m.end() && splits->is_object(), "token cache", printable(file), ": \"splits\" is missing");
  uint64_t counts[3] = {}, total = 0;
  for (int s = 0; s < 3; ++s) {
    const auto split = splits->find(kCacheSplitNames[s]);
    RPB_CHECK(split != splits->end() && split->is_object(), "token cache", printable(file), ": split \"",
              kCacheSplitNames[s], "\" is missing");
    counts[s] = field<uint64_t>(*split, "ids", file);
    total += std::min<uint64_t>(counts[s], uint64_t{1} << 62);
  }
  RPB_CHECK(total <= static_cast<uint64_t>(max_ids), "token cache", printable(file), ": records ", total, " ids; the "
            "corpus gives at most ", max_ids, " (one an input byte)");
  for (int s = 0; s < 3; ++s)
    c.streams[static_cast<std::size_t>(s)] =
        read_token_file(split_file(folder, s, width), width, static_cast<int64_t>(counts[s]),
                        field<std::string>((*splits)[kCacheSplitNames[s]], "sha256", file), c.tokenizer->vocab());
  return c;
}

// Writes `text` to the new file `path` (which must not exist), synced.
void write_new_file(const std::string& path, const std::string& text) {
  FileDescriptor fd = open_no_follow(path, O_WRONLY | O_CREAT | O_EXCL, "token cache");
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    RPB_CHECK(n > 0, "token cache", "cannot write ", printable(path), ": ", std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  RPB_CHECK(::fsync(fd.get()) == 0 && fd.close() == 0, "token cache", "cannot write ", printable(path), ": ",
            std::strerror(errno));
}

}  // namespace

std::string token_cache_key(const std::string& inputs) { return sha256_hex(inputs).substr(0, 32); }

TokenCacheLookup open_token_cache(const std::string& dir, const std::string& inputs, int64_t max_ids) {
  const std::string folder = (fs::path(dir) / token_cache_key(inputs)).string();
  refuse_link(dir);
  refuse_link(folder);
  std::error_code ec;
  if (fs::is_directory(dir, ec)) remove_dead_temps(dir, host_tag());
  if (!fs::is_directory(folder, ec)) return {};
  try {
    return {verify_entry(folder, inputs, max_ids), ""};
  } catch (const Error& e) {
    return {std::nullopt, e.message()};
  } catch (const nlohmann::json::exception& e) {
    return {std::nullopt, "token cache " + printable(folder) + "/" + kManifest + ": " + e.what()};
  }
}

void discard_token_cache_entry(const std::string& dir, const std::string& inputs) {
  const std::string folder = (fs::path(dir) / token_cache_key(inputs)).string();
  refuse_link(folder);
  const std::string aside =
      (fs::path(dir) / ("." + token_cache_key(inputs) + ".stale." + host_tag() + "." + std::to_string(::getpid())))
          .string();
  if (::rename(folder.c_str(), aside.c_str()) != 0) {
    RPB_CHECK(errno == ENOENT, "token cache", "cannot remove the damaged entry ", printable(folder), ": ",
              std::strerror(errno), " (delete it, and rpb writes it again)");
    return;  // another process removed it
  }
  std::error_code ec;
  fs::remove_all(aside, ec);
  RPB_CHECK(!ec, "token cache", "cannot remove the damaged entry ", printable(aside), ": ", ec.message(),
            " (delete it, and rpb writes it again)");
}

TokenCacheWriter::TokenCacheWriter(const std::string& dir, const std::string& inputs, const Tokenizer& tokenizer)
    : dir_(dir), inputs_(inputs), key_(token_cache_key(inputs)), width_(token_width(tokenizer.vocab())) {
  refuse_link(dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  RPB_CHECK(!ec, "token cache", "cannot create ", printable(dir), ": ", ec.message());
  tmp_ = (fs::path(dir) / ("." + key_ + ".tmp." + host_tag() + "." + std::to_string(::getpid()))).string();
  fs::remove_all(tmp_, ec);  // left by an earlier process of this pid
  RPB_CHECK(::mkdir(tmp_.c_str(), 0755) == 0, "token cache", "cannot create ", printable(tmp_), ": ",
            std::strerror(errno));
  const TokenizerRecord r = tokenizer.record();
  const std::string text = r.kind + "\n" + r.model;
  write_new_file((fs::path(tmp_) / "tokenizer").string(), text);
  tokenizer_bytes_ = static_cast<int64_t>(text.size());
  tokenizer_sha256_ = sha256_hex(text);
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
    const std::vector<uint16_t> narrow(ids.begin(), ids.end());
    ok = std::fwrite(narrow.data(), 2, narrow.size(), f) == narrow.size();
    digests_[split].update(narrow.data(), 2 * narrow.size());
  } else {
    ok = std::fwrite(ids.data(), 4, ids.size(), f) == ids.size();
    digests_[split].update(ids.data(), 4 * ids.size());
  }
  counts_[split] += static_cast<int64_t>(ids.size());
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
  nlohmann::json m = {{"format", kManifestFormat},
                      {"inputs", inputs_},
                      {"tokenizer_bytes", tokenizer_bytes_},
                      {"tokenizer_sha256", tokenizer_sha256_},
                      {"splits", nlohmann::json::object()}};
  for (int s = 0; s < 3; ++s)
    m["splits"][kCacheSplitNames[s]] = {{"ids", counts_[s]}, {"sha256", digests_[s].hex()}};
  write_new_file((fs::path(tmp_) / kManifest).string(), m.dump(1) + "\n");
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
  TokenCacheLookup c = open_token_cache(dir_, inputs_, counts_[0] + counts_[1] + counts_[2]);
  RPB_CHECK(c.entry.has_value(), "token cache", printable(folder), c.stale.empty() ? " vanished after it was written"
                                                                                   : " fails its checks after it was "
                                                                                     "written: " + c.stale);
  return std::move(*c.entry);
}

}  // namespace rpb::data

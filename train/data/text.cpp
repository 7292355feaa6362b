// rpb/train/data/text.cpp: the text task (one's own corpus): reading the documents, the split rule, the streams.
#include "train/data/text.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/text.h"
#include "train/data/token_cache.h"
#include "train/data/token_stream.h"
#include "train/data/tokenizer_detail.h"
#include "train/io/sha256.h"
#include "train/data/kjv.h"

namespace fs = std::filesystem;

namespace rpb::data {

namespace {

const char* const kSplitNames[3] = {"train", "valid", "test"};

// The inputs of the token cache's entry that holds `options`' splits of the corpus of digest `text_sha256`:
// everything the ids depend on. Version 2: SentencePiece encodes a text a piece at a time (encode_piece_end), where
// version 1 handed it each document whole.
std::string token_cache_inputs(const TaskOptions& o, const std::string& text_sha256) {
  std::ostringstream os;
  os.precision(17);
  os << "rpb-text-tokens-2\n" << text_sha256 << "\n" << o.documents << "\n" << o.valid_fraction << "\n"
     << o.test_fraction << "\n" << o.tokenizer << "\n";
  if (o.tokenizer == "sentencepiece")
    os << o.vocab << "\n" << o.sentencepiece_model << "\n" << o.sentencepiece_sentences << "\n" << o.seed << "\n";
  return os.str();
}

// What the first pass over a corpus counts: each split's documents and bytes.
struct SplitCounts {
  int64_t count[3] = {}, bytes[3] = {};
};

SplitCounts count_splits(Corpus& corpus, const TaskOptions& options) {
  SplitCounts c;
  corpus.read(
      [&](TextDocument&& d, const std::string& sha) {
        const int s = split_of_digest(sha, options.valid_fraction, options.test_fraction);
        ++c.count[s];
        c.bytes[s] += static_cast<int64_t>(d.text.size());
      },
      "reading its documents");
  for (int s = 0; s < 3; ++s)
    RPB_CHECK(c.count[s] > 0, "text", options.path_key, " ", printable(options.path), ": the ", kSplitNames[s],
              " split has no document (", corpus.documents(), " documents: ", c.count[0], " train, ", c.count[1],
              " valid, ", c.count[2], " test, by task.valid_fraction = ", options.valid_fraction,
              " and task.test_fraction = ", options.test_fraction, "); a corpus needs more documents ",
              "(task.documents = \"blank_lines\" makes each paragraph one), or larger fractions");
  return c;
}

// The verified entry of token cache `dir` for `inputs`, or nullopt: when there is none, or when it fails its checks,
// which the log and `rebuilt` say, and the entry is removed to be written again.
std::optional<CachedSplits> cached_splits(const std::string& dir, const std::string& inputs, int64_t max_ids,
                                          std::string& rebuilt) {
  TokenCacheLookup found = open_token_cache(dir, inputs, max_ids);
  if (!found.stale.empty()) {
    rebuilt = found.stale;
    spdlog::warn("token cache {}: not used, written again: {}",
                 printable((fs::path(dir) / token_cache_key(inputs)).string()), rebuilt);
    discard_token_cache_entry(dir, inputs);
  }
  return std::move(found.entry);
}

}  // namespace

TextTask::TextTask(const TaskOptions& options) : path_(options.path), path_key_(options.path_key) {
  // The KJV text the kjv task writes from Debian's bible-kjv: written here too when it is missing, so that a text
  // config on it runs on a fresh machine (not when a checkpoint is read: TaskOptions::generate_missing).
  if (options.generate_missing && options.path == kjv_text_path("") && !std::filesystem::exists(options.path))
    generate_kjv_text(options.path);
  Corpus corpus(options.path, options.documents, options.progress_every_s, options.path_key);
  const SplitCounts c = count_splits(corpus, options);
  text_sha256_ = corpus.sha256();
  // Each later pass reads the same snapshot again and hands every document to `f` with its split.
  const auto visit = [&](const std::function<void(const TextDocument&, int)>& f, const std::string& what) {
    corpus.read([&](TextDocument&& d, const std::string& sha) {
      f(d, split_of_digest(sha, options.valid_fraction, options.test_fraction));
    }, what);
  };
  // Every document's ids to `sink`, a piece at a time; the test split alone for an evaluation.
  const auto encode = [&](const std::function<void(int, const std::vector<int32_t>&)>& sink) {
    visit([&](const TextDocument& d, int split) {
      if (!builds_split(options.use, split)) return;
      try {
        tokenizer_->encode_pieces(d.text, [&](const std::vector<int32_t>& ids, std::size_t bytes) {
          sink(split, ids);
          corpus.advance(static_cast<int64_t>(bytes));
        });
      } catch (const Error& e) {
        throw Error("text: " + printable(d.source) + ": " + e.message());
      }
    }, "encoding");
  };
  const bool cached = options.use == DataUse::train && !options.token_cache.empty() && !options.stored_tokenizer;
  const std::string inputs = cached ? token_cache_inputs(options, text_sha256_) : "";
  std::string rebuilt;  // why the cache's entry was written again
  std::optional<CachedSplits> entry =
      cached ? cached_splits(options.token_cache, inputs, corpus.bytes(), rebuilt) : std::nullopt;
  const bool reused = entry.has_value();
  if (!entry) {
    if (options.stored_tokenizer) {
      tokenizer_ = load_tokenizer(*options.stored_tokenizer, "the checkpoint's tokenizer");
    } else {
      const TokenizerOptions t{options.vocab, options.sentencepiece_model, options.sentencepiece_sentences,
                               options.seed};
      const TokenizerCorpus sample{[&](const DocumentVisitor& f) {
        visit([&](const TextDocument& d, int split) { f(d.text, split); }, "building the tokenizer");
      }};
      tokenizer_ = tokenizer_info(options.tokenizer).build(sample, t);
    }
    if (cached) {
      TokenCacheWriter writer(options.token_cache, inputs, *tokenizer_);
      encode([&](int split, const std::vector<int32_t>& ids) { writer.append(split, ids); });
      entry = writer.publish();
    } else {
      std::vector<TokenStreamBuilder> streams(3, TokenStreamBuilder(tokenizer_->vocab()));  // train, valid, test
      encode([&](int split, const std::vector<int32_t>& ids) { streams[static_cast<std::size_t>(split)].append(ids); });
      train_ = streams[0].finish();
      valid_ = streams[1].finish();
      test_ = streams[2].finish();
    }
  }
  if (entry) {
    tokenizer_ = std::move(entry->tokenizer);
    train_ = entry->streams[0];
    valid_ = entry->streams[1];
    test_ = entry->streams[2];
  }
  std::ostringstream os;
  os << "text: " << corpus.documents() << " documents (" << options.documents << ") from " << printable(options.path);
  if (corpus.skipped()) os << " (" << corpus.skipped() << " links or special files skipped)";
  os << ", sha256 " << text_sha256_ << "; tokenizer " << tokenizer_->describe() << "; split by each document's "
     << "SHA-256 (valid " << options.valid_fraction << ", test " << options.test_fraction << "):";
  const TokenStream* streams[3] = {&train_, &valid_, &test_};
  for (int s = 0; s < 3; ++s)
    os << (s ? ";" : "") << " " << kSplitNames[s] << " " << c.count[s] << " documents, " << c.bytes[s] << " bytes, "
       << stream_size_text(*streams[s], options.use, s);
  if (cached) {
    os << "; ids " << (reused ? "read from" : "written to") << " the token cache "
       << printable((fs::path(options.token_cache) / token_cache_key(inputs)).string())
       << (reused ? " and verified" : "");
    if (!rebuilt.empty()) os << " (written again: " << rebuilt << ")";
  }
  describe_ = os.str();
}

std::string TextTask::describe() const { return describe_; }

}  // namespace rpb::data

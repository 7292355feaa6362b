// rpb/train/data/task_registry.cpp: the one table of tasks, and what reads it in train/data.
//
// Adding a task: its file train/data/<name>.cpp (a data::Task for a token task), one row of the table below, and its
// tests (a golden case in tests/test_task_registry.cpp, which fails for a registered task without one).
#include "train/data/task_registry.h"

#include <algorithm>
#include <iterator>

#include "core/checked.h"
#include "core/error.h"
#include "core/text.h"
#include "train/data/passkey.h"
#include "train/data/text.h"
#include "train/data/token_stream.h"
#include "train/data/tokenizer_detail.h"
#include "train/data/kjv.h"
#include "train/data/lag.h"
#include "train/data/markov.h"

namespace rpb::data {

namespace {

// Saturating (core/checked.h): the memory estimate reads a size past int64 as too large, and names its key.
constexpr auto mul = saturating_mul;
constexpr auto add = saturating_add;

// The int32 streams a generated token task builds: train, valid and test to train, the test stream to evaluate (a
// generation builds none: the callers return first).
int64_t stream_bytes(const TaskOptions& t, DataUse use) {
  return mul(use == DataUse::train ? add(t.train_tokens, mul(2, t.eval_tokens)) : t.eval_tokens, 4);
}

DataMemory markov_memory(const TaskOptions& t, DataUse use) {
  if (use == DataUse::generate) return {};
  DataMemory m{stream_bytes(t, use)};
  int64_t states = 1;
  for (int64_t i = 0; i < t.order; ++i) states = mul(states, t.vocab);
  const int64_t table = mul(mul(states, t.vocab), 8);  // float64 transition table
  if (table > m.bytes) m.key = "task.order";
  m.bytes = add(m.bytes, table);
  return m;
}

DataMemory lag_memory(const TaskOptions& t, DataUse use) {
  if (use == DataUse::generate) return {};
  return {stream_bytes(t, use)};
}

// The text (at most kMaxKjvTextBytes; the KJV is 4.3 MB) and its splits' ids (int32), and some slack; every use reads
// the whole text.
DataMemory kjv_memory(const TaskOptions&, DataUse) {
  return {static_cast<int64_t>(5 * kMaxKjvTextBytes) + (int64_t{4} << 20)};
}

// The table T of (V + 1)^2 entries, for every use (rpb generate refuses a 2-D task before it estimates); the grids
// themselves are sized with the evaluation's segments.
DataMemory grid2d_memory(const TaskOptions& t, DataUse) { return {mul(mul(t.vocab + 1, t.vocab + 1), 8)}; }

int64_t kjv_vocab_bound(const TaskOptions&) { return 256; }
int64_t passkey_vocab_bound(const TaskOptions& t) { return t.vocab + kPasskeyExtraTokens; }
int64_t text_vocab_bound(const TaskOptions& t) {
  if (t.tokenizer == "sentencepiece") return t.vocab;
  return t.tokenizer == "bytes" ? 256 : kMaxCharsVocab;
}
int64_t passkey_text_vocab_bound(const TaskOptions& t) { return text_vocab_bound(t) + kPasskeyExtraTokens; }

// The text task's anonymous memory (train/data/text.h): one file at a time, held with its documents while they are
// read (two copies), and a record of each file (corpus.h); the encoder's working memory for one piece
// (kEncodeMaxPieceBytes: SentencePiece's lattice, kSentencePieceEncodeBytesPerByte for each byte, and the piece's
// ids); to train, SentencePiece's sample of lines (at most task.sentencepiece_sentences of at most
// kMaxSentenceBytes, and never more than the corpus) times what its trainer holds per sampled byte (about 18
// measured for unigram on a 96 MB corpus; 32 allowed), and every split's ids, read from the token cache into memory
// (token_width bytes an id, at most one id per byte of the corpus); to evaluate, the test split's ids (at most one
// per byte of the corpus's test fraction, twice over: its vector grows as the text is encoded); a generation reads
// no text.
DataMemory text_memory(const TaskOptions& t, DataUse use) {
  if (use == DataUse::generate) return {};
  const CorpusSize size = corpus_size(t.path);
  int64_t bytes = add(mul(size.largest_file, 2), int64_t{16} << 20);
  bytes = add(bytes, mul(size.files, 512));
  const auto piece = static_cast<int64_t>(kEncodeMaxPieceBytes);
  bytes = add(bytes, mul(piece, t.tokenizer == "sentencepiece" ? kSentencePieceEncodeBytesPerByte + 4 : 4));
  if (use == DataUse::train && t.tokenizer == "sentencepiece")
    bytes = add(bytes, mul(std::min(size.bytes, mul(t.sentencepiece_sentences, kMaxSentenceBytes)), 32));
  const int64_t width = token_width(text_vocab_bound(t));
  const int64_t test = mul(static_cast<int64_t>(static_cast<double>(size.bytes) * t.test_fraction) + 1, 2 * width);
  return {add(bytes, use == DataUse::train ? std::max(mul(size.bytes, width), test) : test), "task.path"};
}

std::unique_ptr<Task> make_markov(const TaskOptions& o) { return std::make_unique<MarkovTask>(o); }
std::unique_ptr<Task> make_lag(const TaskOptions& o) { return std::make_unique<LagTask>(o); }
std::unique_ptr<Task> make_kjv(const TaskOptions& o) { return std::make_unique<KjvTask>(o); }
std::unique_ptr<Task> make_text(const TaskOptions& o) { return std::make_unique<TextTask>(o); }
std::unique_ptr<Task> make_passkey(const TaskOptions& o) { return std::make_unique<PasskeyTask>(o); }
std::unique_ptr<Task> make_algorithmic(const TaskOptions& o) {
  return std::make_unique<AlgorithmicTask>(o);
}

// An algorithmic task's ids: its alphabet and the framing tokens. Its held-out samples are drawn one length at a time;
// config/memory.cpp counts them beside the activations.
int64_t algorithmic_vocab_bound(const TaskOptions& t) {
  const AlgorithmicSpec* spec = find_algorithmic(t.kind);
  return spec ? alphabet_size(*spec, t) + kFramingTokens : t.vocab;
}
DataMemory algorithmic_memory(const TaskOptions&, DataUse) { return {}; }

// The built-in rows. Their order is the order of every list of names (config choices, help, sweep folders);
// register_task adds after them.
const TaskInfo kBuiltIn[] = {
    // name, dims, summary, make, data_vocab_bound, memory, held_out, reads_text, text_key, text_path,
    // stores_tokenizer, retrieval
    {"markov", 1, "a random order-k Markov chain of tokens (task.order, task.concentration); exact entropy rate",
     make_markov, nullptr, markov_memory, HeldOut::eval_tokens, false},
    {"lag", 1, "x_t copies x_{t-lag} except with probability task.noise; exact entropy rate", make_lag, nullptr,
     lag_memory, HeldOut::eval_tokens, false},
    {"kjv", 1, "the King James Bible by character (task.kjv_path), split by book", make_kjv, kjv_vocab_bound,
     kjv_memory, HeldOut::data, true, "task.kjv_path", &TaskOptions::kjv_path, false},
    {"text", 1, "one's own UTF-8 text (task.path: a file or a folder), split by document content, tokenized by "
     "task.tokenizer", make_text, text_vocab_bound, text_memory, HeldOut::data, true, "task.path", &TaskOptions::path,
     true},
    {"passkey", 1, "a key of task.passkey_digits digits hidden at a uniform depth in Markov filler, asked for at the "
     "end; accuracy per length and depth", make_passkey, passkey_vocab_bound, markov_memory, HeldOut::samples, false,
     nullptr, nullptr, false, true},
    {"passkey_text", 1, "passkey retrieval with filler from one's own text (task.path, tokenized by task.tokenizer); "
     "accuracy per length and depth", make_passkey, passkey_text_vocab_bound, text_memory, HeldOut::samples, true,
     "task.path", &TaskOptions::path, true, true},
    {"grid2d", 2, "grids whose targets read a table of each cell's left and upper neighbours; exact entropy", nullptr,
     nullptr, grid2d_memory, HeldOut::grids, false},
};

// The rows of the algorithmic tasks, one per spec, in algorithmic_specs()'s order.
std::vector<TaskInfo> algorithmic_rows() {
  std::vector<TaskInfo> out;
  for (const AlgorithmicSpec& s : algorithmic_specs()) {
    TaskInfo row{s.name, 1, s.summary, make_algorithmic, algorithmic_vocab_bound, algorithmic_memory,
                 HeldOut::instances, false};
    row.algorithmic = &s;
    out.push_back(row);
  }
  return out;
}

// The registry: the built-in rows and the algorithmic tasks', then those register_task added.
std::list<TaskInfo>& rows() {
  static std::list<TaskInfo> table = [] {
    std::list<TaskInfo> t(std::begin(kBuiltIn), std::end(kBuiltIn));
    for (const TaskInfo& row : algorithmic_rows()) t.push_back(row);
    return t;
  }();
  return table;
}

std::size_t registered_rows() { return std::size(kBuiltIn) + algorithmic_specs().size(); }

}  // namespace

const std::list<TaskInfo>& tasks() { return rows(); }

std::vector<std::string> task_names(int64_t dims) {
  std::vector<std::string> names;
  for (const TaskInfo& t : rows())
    if (dims == 0 || t.dims == dims) names.emplace_back(t.name);
  return names;
}

std::vector<std::string> task_names_with(bool TaskInfo::*flag) {
  std::vector<std::string> names;
  for (const TaskInfo& t : rows())
    if (t.*flag) names.emplace_back(t.name);
  return names;
}

const TaskInfo* find_task(const std::string& name) {
  for (const TaskInfo& t : rows())
    if (name == t.name) return &t;
  return nullptr;
}

const TaskInfo& task_info(const std::string& name) {
  const TaskInfo* t = find_task(name);
  if (!t) {
    const std::string near = closest(name, task_names());
    RPB_FAIL("task", "task.kind must be one of ", join(task_names(), ", "), "; got \"", printable(name), "\"",
             near.empty() ? "" : " (did you mean \"" + near + "\"?)");
  }
  return *t;
}

std::string task_help() {
  std::size_t width = 0;
  for (const TaskInfo& t : rows()) width = std::max(width, std::string(t.name).size());
  std::string out;
  for (const TaskInfo& t : rows())
    out += "  " + std::string(t.name) + std::string(width + 2 - std::string(t.name).size(), ' ') + t.summary +
           (t.dims == 2 ? " (2-D)" : "") + "\n";
  return out;
}

const TaskInfo& register_task(const TaskInfo& row) {
  RPB_CHECK(row.name && !find_task(row.name), "register_task", "task '", row.name ? row.name : "(null)",
            "' is already registered");
  RPB_CHECK(row.dims == 1 || row.dims == 2, "register_task", "task '", row.name, "': dims ", row.dims,
            " must be 1 or 2");
  rows().push_back(row);
  return rows().back();
}

void remove_task(const std::string& name) {
  std::list<TaskInfo>& table = rows();
  auto it = std::next(table.begin(), static_cast<std::ptrdiff_t>(registered_rows()));
  for (; it != table.end(); ++it)
    if (name == it->name) {
      table.erase(it);
      return;
    }
  RPB_FAIL("remove_task", "no task '", printable(name), "' was registered by register_task");
}

// ---- what train/data/task.h reads of the registry

int64_t task_dims(const std::string& kind) {
  const TaskInfo* t = find_task(kind);
  return t ? t->dims : 1;
}

int64_t sequence_tokens(const std::string& kind, int64_t length, bool causal) {
  const TaskInfo* t = find_task(kind);
  return t && t->algorithmic ? sample_length(*t->algorithmic, length, framing_of(causal)) : length;
}

std::unique_ptr<Task> make_task(const TaskOptions& options) {
  const TaskInfo* t = find_task(options.kind);
  if (!t || !t->make) {
    RPB_FAIL("task", "task.kind must be one of ", join(task_names(1), ", "), "; got \"", options.kind, "\"",
             t ? " (a 2-D task: the grid workload builds it)" : "");
  }
  return t->make(options);
}

}  // namespace rpb::data

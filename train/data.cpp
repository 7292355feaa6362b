// rpb/train/data.cpp: token sources, training batches and evaluation segments.
#include "train/data.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <sstream>

namespace fs = std::filesystem;

namespace rpb::data {

namespace {

/// An independent seed for stream `id` of a source seeded with `seed` (splitmix64 finalizer).
uint64_t derive_seed(uint64_t seed, uint64_t id) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (id + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Stream ids of derive_seed.
constexpr uint64_t kTableStream = 0, kTrainStream = 1, kValidStream = 2, kTestStream = 3, kBatchStream = 0xBA7C4;

/// Index drawn from a probability row by inversion; never returns a zero-probability index.
int32_t sample_row(const double* p, int64_t n, Generator& g) {
  const double u = g.uniform();
  double c = 0;
  int32_t last = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] <= 0) continue;
    c += p[i];
    last = static_cast<int32_t>(i);
    if (u < c) return last;
  }
  return last;  // u beyond the rounded total
}

double xlogx(double x) { return x > 0 ? x * std::log(x) : 0.0; }

void check_tokens(const TaskOptions& o) {
  RPB_CHECK(o.train_tokens >= 2, "task", "task.train_tokens must be >= 2, got ", o.train_tokens);
  RPB_CHECK(o.eval_tokens >= 2, "task", "task.eval_tokens must be >= 2, got ", o.eval_tokens);
}

void check_vocab(const TaskOptions& o) {
  RPB_CHECK(o.vocab >= 2 && o.vocab <= std::numeric_limits<int32_t>::max(), "task",
            "task.vocab must be in [2, 2147483647], got ", o.vocab);
}

std::string fmt(double x, int precision = 4) {
  std::ostringstream os;
  os << std::setprecision(precision) << x;
  return os.str();
}

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

const char* kDefaultKjvPath = "checkpoints/data/kjv.txt";
const char* kBibleRange = "Gen1:1-Rev22:21";

}  // namespace

// ---------------------------------------------------------------- random helpers

uint64_t uniform_index(Generator& gen, uint64_t n) {
  RPB_CHECK(n >= 1, "uniform_index", "n must be >= 1, got ", n);
  const uint64_t threshold = (0 - n) % n;  // 2^64 mod n: values below it would bias the low residues
  for (;;) {
    const uint64_t r = gen.next_u64();
    if (r >= threshold) return r % n;
  }
}

double sample_log_gamma(double shape, Generator& gen) {
  RPB_CHECK(shape > 0 && std::isfinite(shape), "gamma", "shape must be positive and finite, got ", shape);
  if (shape < 1) {
    const double u = 1.0 - gen.uniform();  // (0, 1]
    return sample_log_gamma(shape + 1, gen) + std::log(u) / shape;
  }
  // Marsaglia & Tsang (2000), "A simple method for generating gamma variables".
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = gen.normal();
    double v = 1.0 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = 1.0 - gen.uniform();
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) return std::log(d * v);
    if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return std::log(d * v);
  }
}

std::vector<double> sample_dirichlet(int64_t k, double concentration, Generator& gen) {
  RPB_CHECK(k >= 1, "dirichlet", "k must be >= 1, got ", k);
  std::vector<double> p(static_cast<size_t>(k));
  double mx = -std::numeric_limits<double>::infinity();
  for (auto& x : p) {
    x = sample_log_gamma(concentration, gen);
    mx = std::max(mx, x);
  }
  double sum = 0;
  for (auto& x : p) sum += (x = std::exp(x - mx));
  for (auto& x : p) x /= sum;
  return p;
}

// ---------------------------------------------------------------- Task

std::optional<double> Task::optimal_perplexity() const {
  const auto h = entropy_rate();
  if (!h) return std::nullopt;
  return std::exp(*h);
}

std::string Task::decode(const std::vector<int32_t>& tokens) const {
  std::string s;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(tokens[i]);
  }
  return s;
}

const std::vector<std::string>& task_kinds() {
  static const std::vector<std::string> kinds{"markov", "lag", "kjv", "grid2d"};
  return kinds;
}

int64_t task_dims(const std::string& kind) { return kind == "grid2d" ? 2 : 1; }

std::unique_ptr<Task> make_task(const TaskOptions& options) {
  if (options.kind == "markov") return std::make_unique<MarkovTask>(options);
  if (options.kind == "lag") return std::make_unique<LagTask>(options);
  if (options.kind == "kjv") return std::make_unique<KjvTask>(options);
  RPB_FAIL("task", "task.kind must be one of markov, lag, kjv; got \"", options.kind, "\"");
}

// ---------------------------------------------------------------- Markov

MarkovTask::MarkovTask(const TaskOptions& options) : opt_(options) {
  RPB_CHECK(options.concentration > 0 && std::isfinite(options.concentration), "task",
            "task.concentration must be positive and finite, got ", options.concentration);
  validate(options);
  Generator g(derive_seed(options.seed, kTableStream));
  table_.resize(static_cast<size_t>(states_ * vocab_));
  for (int64_t s = 0; s < states_; ++s) {
    const std::vector<double> row = sample_dirichlet(vocab_, options.concentration, g);
    std::copy(row.begin(), row.end(), table_.begin() + s * vocab_);
  }
  finish(options);
}

MarkovTask::MarkovTask(const TaskOptions& options, std::vector<double> table) : opt_(options) {
  validate(options);
  RPB_CHECK(static_cast<int64_t>(table.size()) == states_ * vocab_, "task",
            "a Markov table for vocab ", vocab_, " and order ", order_, " needs ", states_ * vocab_,
            " probabilities, got ", table.size());
  for (int64_t s = 0; s < states_; ++s) {
    double sum = 0;
    for (int64_t x = 0; x < vocab_; ++x) {
      const double p = table[s * vocab_ + x];
      RPB_CHECK(p >= 0 && std::isfinite(p), "task", "Markov table row ", s, " holds ", p);
      sum += p;
    }
    RPB_CHECK(std::abs(sum - 1) < 1e-9, "task", "Markov table row ", s, " sums to ", sum, ", not 1");
  }
  table_ = std::move(table);
  finish(options);
}

void MarkovTask::validate(const TaskOptions& o) {
  check_vocab(o);
  RPB_CHECK(o.order >= 1, "task", "task.order must be >= 1, got ", o.order);
  check_tokens(o);
  vocab_ = o.vocab;
  order_ = o.order;
  int64_t s = 1;
  for (int64_t i = 0; i < o.order; ++i) {
    RPB_CHECK(s <= (int64_t{1} << 20) / o.vocab, "task", "task.vocab^task.order must be <= 1048576 states, got ",
              o.vocab, "^", o.order);
    s *= o.vocab;
  }
  RPB_CHECK(s * o.vocab <= (int64_t{1} << 24), "task",
            "the Markov table (task.vocab^(task.order+1)) must hold <= 16777216 entries, got ", o.vocab, "^",
            o.order + 1, " = ", s * o.vocab);
  states_ = s;
}

void MarkovTask::finish(const TaskOptions& o) {
  // Stationary distribution of the state chain by power iteration, in double.
  std::vector<double> pi(static_cast<size_t>(states_), 1.0 / static_cast<double>(states_)), next(pi.size());
  double diff = 1;
  int64_t it = 0;
  const int64_t max_iter = 200000;
  for (; it < max_iter && diff >= 1e-14; ++it) {
    std::fill(next.begin(), next.end(), 0.0);
    for (int64_t s = 0; s < states_; ++s) {
      const double ps = pi[s];
      const double* row = &table_[s * vocab_];
      const int64_t base = (s * vocab_) % states_;
      for (int64_t x = 0; x < vocab_; ++x) next[base + x] += ps * row[x];
    }
    double sum = 0;
    for (double v : next) sum += v;
    diff = 0;
    for (int64_t s = 0; s < states_; ++s) {
      next[s] /= sum;
      diff += std::abs(next[s] - pi[s]);
    }
    pi.swap(next);
  }
  RPB_CHECK(diff < 1e-10, "task", "the Markov chain's stationary distribution did not converge (L1 change ", diff,
            " after ", it, " iterations); task.concentration = ", o.concentration, " may be too small");
  pi_ = std::move(pi);

  entropy_ = 0;
  for (int64_t s = 0; s < states_; ++s) {
    double h = 0;
    for (int64_t x = 0; x < vocab_; ++x) h -= xlogx(table_[s * vocab_ + x]);
    entropy_ += pi_[s] * h;
  }

  auto sample = [&](uint64_t id, int64_t n) {
    Generator g(derive_seed(o.seed, id));
    std::vector<int32_t> out;
    out.reserve(static_cast<size_t>(n));
    int64_t s = sample_row(pi_.data(), states_, g);
    for (int64_t i = 0, p = states_ / vocab_; i < order_ && static_cast<int64_t>(out.size()) < n; ++i, p /= vocab_)
      out.push_back(static_cast<int32_t>((s / p) % vocab_));
    while (static_cast<int64_t>(out.size()) < n) {
      const int32_t x = sample_row(&table_[s * vocab_], vocab_, g);
      out.push_back(x);
      s = next_state(s, x);
    }
    return out;
  };
  train_ = sample(kTrainStream, o.train_tokens);
  valid_ = sample(kValidStream, o.eval_tokens);
  test_ = sample(kTestStream, o.eval_tokens);
}

std::string MarkovTask::describe() const {
  std::ostringstream os;
  os << "markov: order-" << order_ << " chain over " << vocab_ << " tokens (" << states_
     << " states), Dirichlet concentration " << opt_.concentration << ", seed " << opt_.seed << "; entropy rate "
     << fmt(entropy_) << " nats/token (optimal perplexity " << fmt(std::exp(entropy_)) << "); train "
     << train_.size() << ", valid " << valid_.size() << ", test " << test_.size()
     << " tokens (independent runs from the stationary distribution)";
  return os.str();
}

// ---------------------------------------------------------------- lag

LagTask::LagTask(const TaskOptions& options) : opt_(options) {
  check_vocab(options);
  RPB_CHECK(options.lag >= 1, "task", "task.lag must be >= 1, got ", options.lag);
  RPB_CHECK(options.noise >= 0 && options.noise <= 1, "task", "task.noise must be in [0, 1], got ", options.noise);
  check_tokens(options);
  const double v = static_cast<double>(options.vocab);
  const double r = options.noise / v;
  entropy_ = -xlogx(1 - options.noise + r) - (v - 1) * xlogx(r);

  auto sample = [&](uint64_t id, int64_t n) {
    Generator g(derive_seed(options.seed, id));
    std::vector<int32_t> out(static_cast<size_t>(n));
    const uint64_t V = static_cast<uint64_t>(options.vocab);
    for (int64_t t = 0; t < n; ++t) {
      if (t < options.lag || g.uniform() < options.noise)
        out[t] = static_cast<int32_t>(uniform_index(g, V));
      else
        out[t] = out[t - options.lag];
    }
    return out;
  };
  train_ = sample(kTrainStream, options.train_tokens);
  valid_ = sample(kValidStream, options.eval_tokens);
  test_ = sample(kTestStream, options.eval_tokens);
}

std::string LagTask::describe() const {
  std::ostringstream os;
  os << "lag: x_t = x_{t-" << opt_.lag << "} with probability " << 1 - opt_.noise << ", else uniform over "
     << opt_.vocab << " tokens; seed " << opt_.seed << "; entropy rate " << fmt(entropy_)
     << " nats/token (optimal perplexity " << fmt(std::exp(entropy_)) << "); train " << train_.size() << ", valid "
     << valid_.size() << ", test " << test_.size() << " tokens";
  return os.str();
}

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

KjvTask::KjvTask(const TaskOptions& options) : path_(options.kjv_path.empty() ? kDefaultKjvPath : options.kjv_path) {
  if (!fs::exists(path_)) generate_kjv_text(path_);
  std::ifstream f(path_, std::ios::binary);
  RPB_CHECK(f.good(), "kjv", "cannot read task.kjv_path = \"", path_, "\"");

  // Books are runs of non-empty lines separated by empty lines.
  std::vector<std::vector<std::string>> books;
  std::string line;
  bool new_book = true;
  while (std::getline(f, line)) {
    if (line.empty()) {
      new_book = true;
      continue;
    }
    if (new_book) books.emplace_back();
    new_book = false;
    books.back().push_back(std::move(line));
  }
  RPB_CHECK(books.size() >= 10, "kjv", "task.kjv_path = \"", path_, "\" holds ", books.size(),
            " books (separated by empty lines); need at least 10 so that valid and test get one each");

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

  std::vector<int32_t>* splits[3] = {&train_, &valid_, &test_};
  for (size_t b = 0; b < books.size(); ++b) {
    const int split = split_of_book(static_cast<int64_t>(b));
    book_split_.push_back(split);
    std::vector<int32_t>& out = *splits[split];
    for (const auto& v : books[b]) {
      for (char c : v) out.push_back(id_of_[static_cast<unsigned char>(c)]);
      out.push_back(id_of_[static_cast<unsigned char>('\n')]);
    }
  }
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

// ---------------------------------------------------------------- batches

BatchSampler::BatchSampler(const std::vector<int32_t>& stream, int64_t batch, int64_t length, uint64_t seed)
    : stream_(&stream), batch_(batch), length_(length), rng_(derive_seed(seed, kBatchStream)) {
  RPB_CHECK(batch >= 1, "batches", "batch must be >= 1, got ", batch);
  RPB_CHECK(length >= 1, "batches", "length must be >= 1, got ", length);
  RPB_CHECK(static_cast<int64_t>(stream.size()) >= length + 1, "batches", "a window of length ", length,
            " needs a stream of at least ", length + 1, " tokens, got ", stream.size());
}

void BatchSampler::next(Tensor& inputs, Tensor& targets) {
  const std::vector<int32_t>& s = *stream_;
  const uint64_t offsets = s.size() - static_cast<uint64_t>(length_);  // valid starts: [0, size - L - 1]
  inputs = Tensor::empty({batch_, length_}, DType::i64);
  targets = Tensor::empty({batch_, length_}, DType::i64);
  int64_t* in = inputs.mutable_data<int64_t>();
  int64_t* tg = targets.mutable_data<int64_t>();
  for (int64_t b = 0; b < batch_; ++b) {
    const size_t off = static_cast<size_t>(uniform_index(rng_, offsets));
    for (int64_t j = 0; j < length_; ++j) {
      in[b * length_ + j] = s[off + j];
      tg[b * length_ + j] = s[off + j + 1];
    }
  }
  ++batches_drawn_;
}

void BatchSampler::set_state(const State& s) {
  RPB_CHECK(s.batches_drawn >= 0, "batches", "batches_drawn must be >= 0, got ", s.batches_drawn);
  rng_.set_state(s.rng);
  batches_drawn_ = s.batches_drawn;
}

// ---------------------------------------------------------------- evaluation

EvalPlan make_eval_plan(int64_t stream_tokens, int64_t train_length, const std::vector<int64_t>& multipliers,
                        int64_t max_tokens) {
  RPB_CHECK(train_length >= 1, "eval", "train_length must be >= 1, got ", train_length);
  RPB_CHECK(!multipliers.empty(), "eval", "need at least one length multiplier");
  RPB_CHECK(max_tokens >= 1, "eval", "max_tokens must be >= 1, got ", max_tokens);
  int64_t largest = 0;
  for (int64_t m : multipliers) {
    RPB_CHECK(m >= 1, "eval", "every length multiplier must be >= 1, got ", m);
    RPB_CHECK(m <= std::numeric_limits<int64_t>::max() / train_length, "eval", "multiplier ", m,
              " x train_length ", train_length, " overflows");
    largest = std::max(largest, m);
  }
  for (int64_t m : multipliers)
    RPB_CHECK(largest % m == 0, "eval", "length multiplier ", m, " does not divide the largest multiplier ", largest,
              ": the lengths could not all score the same tokens");
  const int64_t lmax = largest * train_length;
  const int64_t avail = std::min(max_tokens, stream_tokens - 1);
  const int64_t n = avail >= lmax ? avail / lmax * lmax : 0;
  RPB_CHECK(n > 0, "eval", "the largest length ", lmax, " (", largest, " x ", train_length, ") needs at least ",
            lmax + 1, " held-out tokens and max_tokens >= ", lmax, "; got a stream of ", stream_tokens,
            " tokens and max_tokens ", max_tokens);
  EvalPlan plan{train_length, {}, n};
  for (int64_t m : multipliers) plan.lengths.push_back(m * train_length);
  return plan;
}

std::vector<EvalSegments> make_eval_segments(const std::vector<int32_t>& stream, int64_t train_length,
                                             const std::vector<int64_t>& multipliers, int64_t max_tokens) {
  const EvalPlan plan =
      make_eval_plan(static_cast<int64_t>(stream.size()), train_length, multipliers, max_tokens);
  std::vector<EvalSegments> out;
  for (int64_t l : plan.lengths) {
    const int64_t segs = plan.tokens_scored / l;
    EvalSegments e{l, Tensor::empty({segs, l}, DType::i64), Tensor::empty({segs, l}, DType::i64)};
    int64_t* in = e.inputs.mutable_data<int64_t>();
    int64_t* tg = e.targets.mutable_data<int64_t>();
    for (int64_t i = 0; i < plan.tokens_scored; ++i) {  // row-major (segment s, position j) is i = s*l + j
      in[i] = stream[i];
      tg[i] = stream[i + 1];
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace rpb::data

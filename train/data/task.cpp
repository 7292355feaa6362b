// rpb/train/data/task.cpp: the token tasks: the Markov and lag sources, and sampling helpers.
#include "train/data/task.h"

#include "train/data/data_detail.h"

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

using namespace detail;

namespace {

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

bool builds_split(DataUse use, int split) { return use == DataUse::train || split == 2; }

std::string stream_size_text(const TokenStream& stream, DataUse use, int split) {
  return builds_split(use, split) ? std::to_string(stream.size()) + " tokens" : "not built";
}

std::string Task::decode(const std::vector<int32_t>& tokens) const {
  std::string s;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(tokens[i]);
  }
  return s;
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
  if (o.use == DataUse::train) {
    train_ = sample(kTrainStream, o.train_tokens);
    valid_ = sample(kValidStream, o.eval_tokens);
  }
  test_ = sample(kTestStream, o.eval_tokens);
}

std::string MarkovTask::describe() const {
  std::ostringstream os;
  os << "markov: order-" << order_ << " chain over " << vocab_ << " tokens (" << states_
     << " states), Dirichlet concentration " << opt_.concentration << ", seed " << opt_.seed << "; entropy rate "
     << fmt(entropy_) << " nats/token (optimal perplexity " << fmt(std::exp(entropy_)) << "); train "
     << opt_.train_tokens << ", valid " << opt_.eval_tokens << ", test " << opt_.eval_tokens
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
  if (options.use == DataUse::train) {
    train_ = sample(kTrainStream, options.train_tokens);
    valid_ = sample(kValidStream, options.eval_tokens);
  }
  test_ = sample(kTestStream, options.eval_tokens);
}

std::string LagTask::describe() const {
  std::ostringstream os;
  os << "lag: x_t = x_{t-" << opt_.lag << "} with probability " << 1 - opt_.noise << ", else uniform over "
     << opt_.vocab << " tokens; seed " << opt_.seed << "; entropy rate " << fmt(entropy_)
     << " nats/token (optimal perplexity " << fmt(std::exp(entropy_)) << "); train " << opt_.train_tokens << ", valid "
     << opt_.eval_tokens << ", test " << opt_.eval_tokens << " tokens";
  return os.str();
}

}  // namespace rpb::data

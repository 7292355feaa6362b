// rpb/train/data/markov.cpp: the markov task: its table, stationary distribution, entropy rate and streams.
#include "train/data/markov.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "train/data/data_detail.h"
#include "train/data/sampling.h"

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

}  // namespace

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
  sample_streams(o, sample);
}

std::string MarkovTask::describe() const {
  std::ostringstream os;
  os << "markov: order-" << order_ << " chain over " << vocab_ << " tokens (" << states_
     << " states), Dirichlet concentration " << opt_.concentration << ", seed " << opt_.seed << "; entropy rate "
     << short_number(entropy_) << " nats/token (optimal perplexity " << short_number(std::exp(entropy_)) << "); train "
     << opt_.train_tokens << ", valid " << opt_.eval_tokens << ", test " << opt_.eval_tokens
     << " tokens (independent runs from the stationary distribution)";
  return os.str();
}

}  // namespace rpb::data

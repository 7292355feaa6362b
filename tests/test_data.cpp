// Token sources, training batches and evaluation segments (train/data/task.h, markov.h, lag.h, kjv.h, sampling.h,
// batch_sampler.h, eval_segments.h).
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "test_util.h"
#include "train/data/batch_sampler.h"
#include "train/data/eval_segments.h"
#include "train/data/kjv.h"
#include "train/data/lag.h"
#include "train/data/markov.h"
#include "train/data/sampling.h"
#include "train/data/task.h"

using namespace rpb;
using namespace rpb::data;
using rpb::testing::TempDir;
using rpb::testing::contains;
using rpb::testing::error_of;
namespace fs = std::filesystem;

namespace {

TaskOptions small(const std::string& kind) {
  TaskOptions o;
  o.kind = kind;
  o.train_tokens = 20000;
  o.eval_tokens = 5000;
  return o;
}


/// Solves pi P = pi, sum pi = 1 by Gaussian elimination (independent of the task's power iteration).
std::vector<double> solve_stationary(const std::vector<double>& P, int64_t n) {
  // Rows: (P^T - I) pi = 0 with the last equation replaced by sum pi = 1.
  std::vector<std::vector<double>> a(n, std::vector<double>(n + 1, 0.0));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) a[i][j] = P[j * n + i] - (i == j ? 1.0 : 0.0);
  for (int64_t j = 0; j < n; ++j) a[n - 1][j] = 1.0;
  a[n - 1][n] = 1.0;
  for (int64_t c = 0; c < n; ++c) {
    int64_t piv = c;
    for (int64_t r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[piv][c])) piv = r;
    std::swap(a[c], a[piv]);
    for (int64_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int64_t k = c; k <= n; ++k) a[r][k] -= f * a[c][k];
    }
  }
  std::vector<double> pi(n);
  for (int64_t i = 0; i < n; ++i) pi[i] = a[i][n] / a[i][i];
  return pi;
}

/// Relative closeness: |a - b| <= eps * max(|a|, |b|) (doctest's default scale of 1 would make it absolute for small values).
doctest::Approx rel(double value, double eps) { return doctest::Approx(value).epsilon(eps).scale(0); }

}  // namespace

TEST_CASE("data: task options are validated and errors name the option and the value") {
  auto err = [](auto edit) {
    TaskOptions o = small("markov");
    edit(o);
    return error_of([&] { make_task(o); });
  };
  CHECK(contains(err([](TaskOptions& o) { o.kind = "fibonacci"; }),
                 "task.kind must be one of markov, lag, kjv, text, passkey, passkey_text, parity_check"));
  CHECK(contains(err([](TaskOptions& o) { o.kind = "fibonacci"; }), "flip_flop; got \"fibonacci\""));
  CHECK(contains(err([](TaskOptions& o) { o.order = 0; }), "task.order must be >= 1, got 0"));
  CHECK(contains(err([](TaskOptions& o) { o.vocab = 1; }), "task.vocab must be in [2, 2147483647], got 1"));
  CHECK(contains(err([](TaskOptions& o) { o.concentration = 0; }), "task.concentration must be positive and finite, got 0"));
  CHECK(contains(err([](TaskOptions& o) { o.order = 6; }), "task.vocab^task.order must be <= 1048576 states, got 16^6"));
  CHECK(contains(err([](TaskOptions& o) { o.train_tokens = 1; }), "task.train_tokens must be >= 2, got 1"));
  CHECK(contains(err([](TaskOptions& o) { o.eval_tokens = 0; }), "task.eval_tokens must be >= 2, got 0"));
  CHECK(contains(err([](TaskOptions& o) { o.kind = "lag"; o.lag = 0; }), "task.lag must be >= 1, got 0"));
  CHECK(contains(err([](TaskOptions& o) { o.kind = "lag"; o.noise = 1.5; }), "task.noise must be in [0, 1], got 1.5"));
  CHECK(err([](TaskOptions& o) { o.kind = "lag"; o.order = 0; }).empty());  // markov-only options are not checked
  // A hand-set table must fit and be a distribution.
  TaskOptions o = small("markov");
  o.vocab = 2;
  o.order = 1;
  CHECK(contains(error_of([&] { MarkovTask(o, {0.5, 0.5, 1.0}); }), "needs 4 probabilities, got 3"));
  CHECK(contains(error_of([&] { MarkovTask(o, {0.5, 0.5, 0.7, 0.7}); }), "row 1 sums to 1.4"));
}

TEST_CASE("data: streams are deterministic from the options, the seed changes them") {
  for (const std::string kind : {"markov", "lag"}) {
    CAPTURE(kind);
    TaskOptions o = small(kind);
    const auto a = make_task(o), b = make_task(o);
    CHECK(a->train_stream() == b->train_stream());
    CHECK(a->valid_stream() == b->valid_stream());
    CHECK(a->test_stream() == b->test_stream());
    CHECK(a->train_stream().size() == 20000);
    CHECK(a->valid_stream().size() == 5000);
    CHECK(a->test_stream().size() == 5000);
    CHECK(a->valid_stream() != a->test_stream());  // independent runs
    CHECK(a->valid_stream() != a->train_stream().to_vector(0, 5000));
    for (const auto* s : {&a->train_stream(), &a->valid_stream(), &a->test_stream()})
      for (int32_t t : s->to_vector()) REQUIRE((t >= 0 && t < a->vocab()));
    o.seed = 1;
    const auto c = make_task(o);
    CHECK(c->train_stream() != a->train_stream());
    CHECK(c->test_stream() != a->test_stream());
    CHECK(a->optimal_perplexity().value() == doctest::Approx(std::exp(a->entropy_rate().value())));
    CHECK(contains(a->describe(), kind + ":"));
    CHECK(a->decode({3, 1}) == "3 1");
  }
  // The Markov table is the seed's too.
  TaskOptions o = small("markov");
  MarkovTask a(o);
  o.seed = 7;
  MarkovTask b(o);
  CHECK(a.table() != b.table());
  CHECK(a.entropy_rate() != b.entropy_rate());
}

TEST_CASE("markov: entropy rate and stationary distribution of a hand-set two-token chain") {
  TaskOptions o = small("markov");
  o.vocab = 2;
  o.order = 1;
  MarkovTask t(o, {0.9, 0.1, 0.3, 0.7});
  // pi_0 * 0.1 = pi_1 * 0.3  =>  pi = (0.75, 0.25).
  REQUIRE(t.stationary().size() == 2);
  CHECK(t.stationary()[0] == rel(0.75, 1e-12));
  CHECK(t.stationary()[1] == rel(0.25, 1e-12));
  const double h = 0.75 * -(0.9 * std::log(0.9) + 0.1 * std::log(0.1)) + 0.25 * -(0.3 * std::log(0.3) + 0.7 * std::log(0.7));
  CHECK(t.entropy_rate().value() == rel(h, 1e-12));
  // Streams start from the stationary distribution: over many seeds the first token is 0 with probability 0.75.
  TaskOptions tiny = o;
  tiny.train_tokens = tiny.eval_tokens = 2;
  int zeros = 0;
  for (uint64_t seed = 0; seed < 4000; ++seed) {
    tiny.seed = seed;
    zeros += MarkovTask(tiny, {0.9, 0.1, 0.3, 0.7}).train_stream()[0] == 0;
  }
  CHECK(zeros / 4000.0 == rel(0.75, 0.04));
  // A deterministic row contributes nothing (0 log 0 = 0).
  MarkovTask d(o, {0.0, 1.0, 0.5, 0.5});  // 0 -> 1 always; pi = (1/3, 2/3)
  CHECK(d.stationary()[0] == rel(1.0 / 3, 1e-12));
  CHECK(d.entropy_rate().value() == rel(2.0 / 3 * std::log(2.0), 1e-12));
}

TEST_CASE("markov: entropy rate of a generated order-2 chain equals a brute-force block-entropy difference") {
  // For a chain started from its stationary distribution H(X_n | X_1..X_{n-1}) = H_n - H_{n-1} is
  // exactly the entropy rate once n > k; enumerate every sequence of the vocab 2, order 2 chain.
  TaskOptions o = small("markov");
  o.vocab = 2;
  o.order = 2;
  o.seed = 3;
  MarkovTask t(o);
  REQUIRE(t.num_states() == 4);
  const auto& P = t.table();
  // State-to-state matrix and an independently solved stationary distribution.
  std::vector<double> S(16, 0.0);
  for (int64_t s = 0; s < 4; ++s)
    for (int32_t x = 0; x < 2; ++x) S[s * 4 + t.next_state(s, x)] += P[s * 2 + x];
  const std::vector<double> pi = solve_stationary(S, 4);
  for (int64_t s = 0; s < 4; ++s) CHECK(t.stationary()[s] == rel(pi[s], 1e-10));

  auto block_entropy = [&](int n) {  // entropy of (state, next n tokens)
    double h = 0;
    for (int64_t s0 = 0; s0 < 4; ++s0)
      for (int64_t seq = 0; seq < (int64_t{1} << n); ++seq) {
        double p = pi[s0];
        int64_t s = s0;
        for (int i = 0; i < n; ++i) {
          const int32_t x = static_cast<int32_t>((seq >> i) & 1);
          p *= P[s * 2 + x];
          s = t.next_state(s, x);
        }
        if (p > 0) h -= p * std::log(p);
      }
    return h;
  };
  const double brute = block_entropy(12) - block_entropy(11);
  CHECK(t.entropy_rate().value() == rel(brute, 1e-9));
  CHECK(t.entropy_rate().value() > 0.01);
  CHECK(t.entropy_rate().value() < std::log(2.0));
}

TEST_CASE("markov: stationary distribution sums to 1 and is invariant under the chain") {
  MarkovTask t(small("markov"));  // vocab 16, order 2: 256 states
  const auto& pi = t.stationary();
  REQUIRE(static_cast<int64_t>(pi.size()) == 256);
  double sum = 0;
  for (double p : pi) {
    CHECK(p > 0);
    sum += p;
  }
  CHECK(sum == rel(1.0, 1e-13));
  std::vector<double> next(pi.size(), 0.0);
  for (int64_t s = 0; s < t.num_states(); ++s)
    for (int32_t x = 0; x < 16; ++x) next[t.next_state(s, x)] += pi[s] * t.table()[s * 16 + x];
  double l1 = 0;
  for (size_t s = 0; s < pi.size(); ++s) l1 += std::abs(next[s] - pi[s]);
  CHECK(l1 < 1e-13);
  // Rows are distributions.
  for (int64_t s = 0; s < t.num_states(); ++s) {
    double r = 0;
    for (int32_t x = 0; x < 16; ++x) r += t.table()[s * 16 + x];
    CHECK(r == rel(1.0, 1e-12));
  }
}

TEST_CASE("markov: entropy rate matches the empirical NLL of a 200k-token sample") {
  for (const double conc : {0.5, 0.1}) {
    CAPTURE(conc);
    TaskOptions o = small("markov");
    o.concentration = conc;
    o.train_tokens = 200000;
    MarkovTask t(o);
    const auto& x = t.train_stream();
    int64_t s = 0;
    for (int64_t i = 0; i < 2; ++i) s = t.next_state(s, x[i]);  // the first k tokens are the start state
    double nll = 0;
    for (int64_t i = 2; i < x.size(); ++i) {
      nll -= std::log(t.table()[s * 16 + x[i]]);
      s = t.next_state(s, x[i]);
    }
    nll /= static_cast<double>(x.size() - 2);
    CHECK(nll == rel(t.entropy_rate().value(), 0.01));
  }
  // Lower concentration, lower entropy.
  TaskOptions lo = small("markov"), hi = small("markov");
  lo.concentration = 0.1;
  hi.concentration = 5;
  CHECK(MarkovTask(lo).entropy_rate().value() < MarkovTask(hi).entropy_rate().value());
  CHECK(MarkovTask(hi).entropy_rate().value() < std::log(16.0));
}

TEST_CASE("data: Gamma and Dirichlet sampler moments") {
  Generator g(5);
  for (const double a : {0.3, 1.0, 2.5}) {
    CAPTURE(a);
    const int n = 40000;
    double m = 0, m2 = 0;
    for (int i = 0; i < n; ++i) {
      const double x = std::exp(sample_log_gamma(a, g));
      m += x;
      m2 += x * x;
    }
    m /= n;
    const double var = m2 / n - m * m;
    CHECK(m == rel(a, 0.03));    // E = a
    CHECK(var == rel(a, 0.08));  // Var = a
  }
  const int64_t V = 4;
  const double c = 0.5;
  const int n = 20000;
  std::vector<double> mean(V, 0.0), sq(V, 0.0);
  for (int i = 0; i < n; ++i) {
    const auto p = sample_dirichlet(V, c, g);
    double sum = 0;
    for (int64_t k = 0; k < V; ++k) {
      CHECK_MESSAGE(p[k] >= 0, "component ", k);
      sum += p[k];
      mean[k] += p[k] / n;
      sq[k] += p[k] * p[k] / n;
    }
    REQUIRE(sum == rel(1.0, 1e-12));
  }
  const double var = (1.0 / V) * (1 - 1.0 / V) / (V * c + 1);  // 0.0625
  for (int64_t k = 0; k < V; ++k) {
    CHECK(mean[k] == rel(1.0 / V, 0.03));
    CHECK(sq[k] - mean[k] * mean[k] == rel(var, 0.05));
  }
  // Tiny concentrations stay finite and normalized (log-space Gamma).
  const auto p = sample_dirichlet(8, 1e-3, g);
  double sum = 0;
  for (double x : p) sum += x;
  CHECK(sum == doctest::Approx(1.0));
  CHECK(contains(error_of([&] { sample_log_gamma(0.0, g); }), "shape must be positive and finite, got 0"));
  // uniform_index hits every value of a small range about equally.
  std::vector<int> counts(3, 0);
  for (int i = 0; i < 30000; ++i) ++counts[uniform_index(g, 3)];
  for (int cnt : counts) CHECK(cnt == rel(10000, 0.03));
}

TEST_CASE("lag: entropy formula, copy fraction and empirical NLL") {
  TaskOptions o = small("lag");
  o.train_tokens = 1 << 20;
  LagTask t(o);  // vocab 16, lag 8, noise 0.1
  const double V = 16, q = 1 - 0.1 + 0.1 / V, r = 0.1 / V;
  CHECK(t.entropy_rate().value() == rel(-q * std::log(q) - (V - 1) * r * std::log(r), 1e-12));
  const auto& x = t.train_stream();
  int64_t same = 0;
  double nll = 0;
  for (int64_t i = 8; i < x.size(); ++i) {
    const bool eq = x[i] == x[i - 8];
    same += eq;
    nll -= std::log(eq ? q : r);
  }
  const double n = static_cast<double>(x.size() - 8);
  CHECK(same / n == rel(q, 0.003));
  CHECK(nll / n == rel(t.entropy_rate().value(), 0.01));
  // Not a copy at any other offset.
  int64_t same7 = 0;
  for (int64_t i = 7; i < x.size(); ++i) same7 += x[i] == x[i - 7];
  CHECK(same7 / n < 0.1);
  // Edge cases of the formula.
  o.noise = 0;
  CHECK(LagTask(o).entropy_rate().value() == 0.0);
  o.noise = 1;
  o.vocab = 2;
  CHECK(LagTask(o).entropy_rate().value() == doctest::Approx(std::log(2.0)));
}

TEST_CASE("batch: targets are inputs shifted by one and a restored state reproduces the next batches") {
  std::vector<int32_t> ids(1000);
  for (int i = 0; i < 1000; ++i) ids[i] = i;  // token = position, so a window shows its offset
  const TokenStream stream(ids);
  BatchSampler s(stream, 4, 16, 42);
  Tensor in, tg;
  s.next(in, tg);
  REQUIRE(in.shape() == Shape{4, 16});
  REQUIRE(tg.shape() == Shape{4, 16});
  CHECK(in.dtype() == DType::i64);
  CHECK(tg.dtype() == DType::i64);
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t j = 0; j < 16; ++j) {
      CHECK(tg.at({b, j}) == in.at({b, j}) + 1);
      if (j) CHECK(in.at({b, j}) == in.at({b, j - 1}) + 1);
    }
  // Fresh tensors: the previous batch is not overwritten.
  const std::vector<double> first = in.to_vector();
  for (int i = 0; i < 2; ++i) s.next(in, tg);
  Tensor kept = in;
  const BatchSampler::State saved = s.state();
  CHECK(saved.batches_drawn == 3);
  std::vector<std::vector<double>> after;
  for (int i = 0; i < 5; ++i) {
    s.next(in, tg);
    after.push_back(in.to_vector());
    after.push_back(tg.to_vector());
  }
  CHECK(kept.to_vector() != after[0]);
  BatchSampler t(stream, 4, 16, 999);
  t.set_state(saved);
  CHECK(t.state().batches_drawn == 3);
  for (int i = 0; i < 5; ++i) {
    t.next(in, tg);
    CHECK(in.to_vector() == after[2 * i]);
    CHECK(tg.to_vector() == after[2 * i + 1]);
  }
  CHECK(t.state().batches_drawn == 8);
  // Another seed, other windows.
  BatchSampler u(stream, 4, 16, 43);
  u.next(in, tg);
  CHECK(in.to_vector() != first);
  // Offsets are uniform over every valid start, the last one included: [0, size - L - 1].
  std::vector<int32_t> short_ids(19);
  for (int i = 0; i < 19; ++i) short_ids[i] = i;
  const TokenStream shortstream(short_ids);
  BatchSampler w(shortstream, 8, 16, 1);
  std::vector<int> seen(3, 0);
  for (int i = 0; i < 300; ++i) {
    w.next(in, tg);
    for (int64_t b = 0; b < 8; ++b) {
      const auto off = static_cast<int64_t>(in.at({b, 0}));
      REQUIRE((off >= 0 && off <= 2));
      ++seen[off];
    }
  }
  for (int c : seen) CHECK(c == rel(800, 0.15));
  CHECK(contains(error_of([&] { BatchSampler(shortstream, 2, 19, 0); }),
                 "a window of length 19 needs a stream of at least 20 tokens, got 19"));
  CHECK(contains(error_of([&] { BatchSampler(shortstream, 0, 4, 0); }), "batch must be >= 1, got 0"));
}

TEST_CASE("eval: every length scores the same held-out tokens, each exactly once") {
  std::vector<int32_t> stream(1000);
  for (int i = 0; i < 1000; ++i) stream[i] = i;
  const std::vector<int64_t> mult{1, 2, 4, 8, 16};
  auto segs = make_eval_segments(stream, 8, mult, 100000);
  REQUIRE(segs.size() == 5);
  const int64_t N = 896;  // 7 x 128 <= 999
  CHECK(make_eval_plan(1000, 8, mult, 100000).tokens_scored == N);
  CHECK(make_eval_plan(1000, 8, mult, 100000).lengths == std::vector<int64_t>{8, 16, 32, 64, 128});
  std::set<int64_t> expected;
  for (int64_t i = 1; i <= N; ++i) expected.insert(i);
  for (size_t k = 0; k < segs.size(); ++k) {
    const auto& e = segs[k];
    const int64_t l = 8 * mult[k];
    CAPTURE(l);
    CHECK(e.length == l);
    REQUIRE(e.inputs.shape() == Shape{N / l, l});
    REQUIRE(e.targets.shape() == Shape{N / l, l});
    const auto in = e.inputs.to_vector(), tg = e.targets.to_vector();
    std::multiset<int64_t> scored(tg.begin(), tg.end());
    CHECK(scored.size() == static_cast<size_t>(N));
    CHECK(std::set<int64_t>(scored.begin(), scored.end()) == expected);  // same set, and with size N: each once
    for (int64_t s = 0; s < N / l; ++s)
      for (int64_t j = 0; j < l; ++j) {
        REQUIRE(in[s * l + j] == s * l + j);      // inputs stream[s*l + j]
        REQUIRE(tg[s * l + j] == s * l + j + 1);  // targets stream[s*l + j + 1]
      }
  }
  // max_tokens caps N (to a multiple of the largest length).
  CHECK(make_eval_plan(1000, 8, mult, 300).tokens_scored == 256);
  CHECK(make_eval_segments(stream, 8, mult, 300)[0].targets.size(0) == 32);
  // The tightest fit: the largest length + 1 tokens.
  CHECK(make_eval_plan(129, 8, mult, 100000).tokens_scored == 128);
  CHECK(contains(error_of([&] { make_eval_plan(128, 8, mult, 100000); }),
                 "the largest length 128 (16 x 8) needs at least 129 held-out tokens"));
  CHECK(contains(error_of([&] { make_eval_plan(1000, 8, mult, 100); }), "max_tokens 100"));
  CHECK(contains(error_of([&] { make_eval_plan(1000, 8, {1, 0, 4}, 1000); }),
                 "every length multiplier must be >= 1, got 0"));
  CHECK(contains(error_of([&] { make_eval_plan(1000, 8, {1, 3, 4}, 1000); }),
                 "length multiplier 3 does not divide the largest multiplier 4"));
  CHECK(contains(error_of([&] { make_eval_plan(1000, 0, {1}, 1000); }), "train_length must be >= 1, got 0"));
  CHECK(contains(error_of([&] { make_eval_segments(std::vector<int32_t>(3), 8, {1}, 1000); }),
                 "got a stream of 3 tokens"));
}

TEST_CASE("eval: segments of a real held-out stream match the stream") {
  const auto task = make_task(small("lag"));
  const auto& st = task->test_stream();  // 5000 tokens
  const auto segs = make_eval_segments(st, 16, {1, 4}, 4096);
  REQUIRE(segs.size() == 2);
  CHECK(segs[0].inputs.size(0) == 256);
  CHECK(segs[1].inputs.size(0) == 64);
  for (const auto& e : segs) {
    const auto in = e.inputs.to_vector(), tg = e.targets.to_vector();
    for (size_t i = 0; i < in.size(); ++i) {
      REQUIRE(in[i] == st[i]);
      REQUIRE(tg[i] == st[i + 1]);
    }
  }
}

TEST_CASE("kjv: splits, vocabulary and decoding from a hand-made cached text") {
  TempDir dir("kjv_synthetic");
  const fs::path file = dir.path / "kjv.txt";
  {
    std::ofstream f(file);
    for (int b = 0; b < 12; ++b) {
      if (b) f << "\n";
      f << "Book " << char('A' + b) << " one.\n" << "Book " << char('A' + b) << " two!\n";
    }
  }
  TaskOptions o;
  o.kind = "kjv";
  o.kjv_path = file.string();
  const auto task = make_task(o);
  const auto& k = dynamic_cast<const KjvTask&>(*task);
  CHECK(k.book_splits() == std::vector<int>{0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0});
  CHECK(k.decode(k.valid_stream().to_vector()) == "Book E one.\nBook E two!\n");
  CHECK(k.decode(k.test_stream().to_vector()) == "Book J one.\nBook J two!\n");
  const std::string train = k.decode(k.train_stream().to_vector());
  CHECK(train.rfind("Book A one.\nBook A two!\nBook B one.\n", 0) == 0);
  CHECK(!contains(train, "Book E"));
  CHECK(!contains(train, "Book J"));
  CHECK(train.size() == 10 * 24);
  // Vocabulary: the distinct characters, sorted: '\n', ' ', '!', '.', A-L, e, k, n, o, t, w.
  CHECK(k.chars() == "\n !.ABCDEFGHIJKLeknotw");
  CHECK(k.vocab() == 22);
  CHECK(!k.entropy_rate().has_value());
  CHECK(!k.optimal_perplexity().has_value());
  CHECK(k.encode("Book") == std::vector<int32_t>{5, 19, 19, 17});
  CHECK(k.decode(k.encode("Lo tone!")) == "Lo tone!");
  CHECK(contains(error_of([&] { k.encode("x"); }), "character code 120 is not in the KJV vocabulary"));
  CHECK(contains(k.describe(), "valid when b % 10 == 4 (book 4)"));
  // Too few books to split.
  {
    std::ofstream f(dir.path / "short.txt");
    f << "one\n\ntwo\n";
  }
  o.kjv_path = (dir.path / "short.txt").string();
  CHECK(contains(error_of([&] { make_task(o); }), "holds 2 books"));
}

TEST_CASE("kjv: a missing `bible` program names the Debian package to install") {
  TempDir dir("kjv_nobible");
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  ::setenv("PATH", dir.path.c_str(), 1);  // an empty directory: no `bible` on PATH
  const std::string msg = error_of([&] { generate_kjv_text((dir.path / "kjv.txt").string()); });
  ::setenv("PATH", saved.c_str(), 1);
  CHECK(contains(msg, "`bible` program is not installed"));
  CHECK(contains(msg, "bible-kjv"));
  CHECK(!fs::exists(dir.path / "kjv.txt"));
}

TEST_CASE("kjv: the text is produced with `bible`, cached, and split by book") {
  if (std::system("command -v bible >/dev/null 2>&1") != 0) {
    MESSAGE("skipped: the `bible` program (Debian package bible-kjv) is not installed");
    return;
  }
  TempDir dir("kjv_real");
  TaskOptions o;
  o.kind = "kjv";
  o.kjv_path = (dir.path / "sub" / "kjv.txt").string();
  const auto t0 = std::chrono::steady_clock::now();
  const auto task = make_task(o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto& k = dynamic_cast<const KjvTask&>(*task);
  MESSAGE("kjv: generated and loaded in ", secs, " s; ", k.describe());
  REQUIRE(fs::exists(o.kjv_path));
  for (const auto& e : fs::directory_iterator(dir.path / "sub")) CHECK(e.path().filename() == "kjv.txt");  // no temp left

  // Independent expectation from the raw `bible` output: per split, the characters of its books' verses + '\n'.
  FILE* p = ::popen("bible -f -m 8000 \"Gen1:1-Rev22:21\" </dev/null", "r");
  REQUIRE(p != nullptr);
  std::string raw;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) raw.append(buf, n);
  ::pclose(p);
  std::vector<std::string> books;
  size_t expected[3] = {0, 0, 0}, lines = 0;
  std::string first_verse[3];
  std::set<char> chars{'\n'};
  size_t pos = 0;
  while (pos < raw.size()) {
    size_t end = raw.find('\n', pos);
    if (end == std::string::npos) end = raw.size();
    std::string line = raw.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    REQUIRE(sp != std::string::npos);
    std::string name = line.substr(0, sp);
    name = name.substr(0, name.find_first_of("0123456789", 1));
    if (books.empty() || books.back() != name) books.push_back(name);
    std::string text = line.substr(sp + 1);
    while (!text.empty() && text.back() == ' ') text.pop_back();
    const int split = (books.size() - 1) % 10 == 4 ? 1 : (books.size() - 1) % 10 == 9 ? 2 : 0;
    if (first_verse[split].empty()) first_verse[split] = text;
    expected[split] += text.size() + 1;
    chars.insert(text.begin(), text.end());
    ++lines;
  }
  CHECK(books.size() == 66);
  CHECK(lines == 31102);
  CHECK(k.train_stream().size() == expected[0]);
  CHECK(k.valid_stream().size() == expected[1]);
  CHECK(k.test_stream().size() == expected[2]);
  CHECK(static_cast<size_t>(k.vocab()) == chars.size());
  CHECK(k.vocab() >= 60);
  CHECK(k.vocab() <= 80);
  // Each split starts with its first book: Genesis, Deuteronomy, 2 Samuel.
  const auto head = [&](const TokenStream& s, size_t len) {
    return k.decode(s.to_vector(0, static_cast<int64_t>(len)));
  };
  CHECK(head(k.train_stream(), 37) == "In the beginning God created the heav");
  CHECK(first_verse[1].rfind("These be the words which Moses spake", 0) == 0);
  CHECK(head(k.valid_stream(), first_verse[1].size()) == first_verse[1]);
  CHECK(first_verse[2].rfind("Now it came to pass after the death of Saul", 0) == 0);
  CHECK(head(k.test_stream(), first_verse[2].size()) == first_verse[2]);
  // Disjoint by book: a valid-only and a test-only phrase never appear in train.
  const std::string train = k.decode(k.train_stream().to_vector());
  CHECK(!contains(train, first_verse[1]));
  CHECK(!contains(train, first_verse[2]));
  CHECK(contains(k.describe(), "valid when b % 10 == 4 (Deuteronomy, Ezra, Lamentations, Habakkuk, Romans, 2 Timothy, Jude), test when b % 10 == 9 (2 Samuel, Proverbs, Amos, Matthew, Philippians, 1 Peter)"));
  // decode(encode) round-trips.
  const std::string sample = train.substr(100000, 2000);
  CHECK(k.decode(k.encode(sample)) == sample);
  CHECK(k.encode(k.decode(k.test_stream().to_vector())) == k.test_stream());

  // Cached: a second task reads the file without rewriting it.
  const auto mtime = fs::last_write_time(o.kjv_path);
  const auto again = make_task(o);
  CHECK(fs::last_write_time(o.kjv_path) == mtime);
  CHECK(again->train_stream() == k.train_stream());
  CHECK(again->test_stream() == k.test_stream());
}

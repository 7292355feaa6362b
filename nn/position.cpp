// rpb/nn/position.cpp: the position schemes of nn/position.h and their reference functions.
//
// Shared conventions:
//   - Queries sit at positions q_offset .. q_offset + q_len - 1, keys at 0 .. k_len - 1 (a KV cache
//     passes the cached length as q_offset), so row r of a bias or index belongs to query position
//     i = q_offset + r and column c to key position j = c.
//   - Additive biases are (heads, q_len, k_len); table lookups are
//     permute(index_select(table, index), {2, 0, 1}), so a table's gradient is the scatter-add (the
//     per-row sum) of the score gradient over every (query, key) pair that picked that row.
//   - Each scheme's outputs take the dtype of its own parameters or buffers, so Module::to(f64)
//     turns the whole scheme to float64 (gradient checks). Integer indices are computed exactly and
//     constant tables (distances, cos/sin, sinusoids) in double, then stored in that dtype.
#include "nn/position.h"

#include "nn/last_value_cache.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <mutex>

#include "core/ops.h"
#include "nn/init.h"

namespace rpb::nn {

namespace {

const char* kind_name(PositionKind k) {
  switch (k) {
    case PositionKind::none: return "none";
    case PositionKind::absolute: return "absolute";
    case PositionKind::additive_bias: return "additive_bias";
    case PositionKind::rotary: return "rotary";
  }
  return "?";
}

// A tensor of `shape` holding `values` (computed in double), stored in `dtype`.
Tensor from_doubles(const Shape& shape, const std::vector<double>& values, DType dtype) {
  Tensor t = Tensor::from_vector<double>(shape, values);
  return dtype == DType::f64 ? t : t.to(dtype);
}

void check_lengths(const char* op, int64_t q_len, int64_t k_len, int64_t q_offset) {
  RPB_CHECK(q_len >= 1, op, "q_len ", q_len, " must be at least 1 (the number of query positions)");
  RPB_CHECK(k_len >= 1, op, "k_len ", k_len, " must be at least 1 (the number of key positions)");
  RPB_CHECK(q_offset >= 0, op, "q_offset ", q_offset,
            " must be at least 0 (the position of the first query, e.g. the KV-cache length)");
}

// ---- T5 buckets ----

void check_t5(const char* op, bool bidirectional, int64_t num_buckets, int64_t max_distance) {
  if (bidirectional)
    RPB_CHECK(num_buckets >= 4 && num_buckets % 2 == 0, op, "num_buckets ", num_buckets,
              " must be even and at least 4 for bidirectional buckets (half per direction, a quarter exact)");
  else
    RPB_CHECK(num_buckets >= 2, op, "num_buckets ", num_buckets, " must be at least 2 for causal buckets");
  // bidirectional: (num_buckets / 2) / 2 == num_buckets / 4 for every integer num_buckets.
  const int64_t max_exact = bidirectional ? num_buckets / 4 : num_buckets / 2;
  RPB_CHECK(max_distance > max_exact, op, "max_distance ", max_distance, " must be above max_exact ", max_exact,
            bidirectional ? " (num_buckets/4)" : " (num_buckets/2)");
}

// HF `_relative_position_bucket` with the arguments already checked. `log_span` is
// float(log(double(max_distance) / max_exact)), which torch holds as a Python float.
int64_t t5_bucket_unchecked(int64_t relative_position, bool bidirectional, int64_t num_buckets, float log_span) {
  int64_t ret = 0;
  int64_t n = 0;
  if (bidirectional) {
    num_buckets /= 2;
    if (relative_position > 0) ret += num_buckets;  // key after query: the upper half
    n = relative_position < 0 ? -relative_position : relative_position;
  } else {
    n = relative_position < 0 ? -relative_position : 0;  // -min(rp, 0): every future key is bucket 0
  }
  const int64_t max_exact = num_buckets / 2;
  if (n < max_exact) return ret + n;
  // Only here, where n >= max_exact >= 1, is the log finite: torch computes log(0) = -inf for the small
  // offsets and discards it with `where`, but casting -inf to an integer is undefined behaviour in C++.
  // float32 as torch: log(n.float() / max_exact) / log_span * (num_buckets - max_exact), truncated.
  const float scaled = std::log(static_cast<float>(n) / static_cast<float>(max_exact)) / log_span *
                       static_cast<float>(num_buckets - max_exact);
  const int64_t large = max_exact + static_cast<int64_t>(scaled);
  return ret + std::min(large, num_buckets - 1);
}

float t5_log_span(bool bidirectional, int64_t num_buckets, int64_t max_distance) {
  const int64_t max_exact = bidirectional ? num_buckets / 4 : num_buckets / 2;
  return static_cast<float>(std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact)));
}

// ---- shared state of the schemes ----


// (1, q_len, k_len) table of f(|i - j|) with i = q_offset + row, j = column, in `dtype`.
template <typename F>
Tensor distance_table(int64_t q_len, int64_t k_len, int64_t q_offset, DType dtype, F&& f) {
  std::vector<double> v(static_cast<std::size_t>(q_len * k_len));
  // |i - j| takes at most q_offset + q_len + k_len values: evaluate f once per distance.
  std::vector<double> by_distance(static_cast<std::size_t>(q_offset + q_len + k_len));
  for (std::size_t d = 0; d < by_distance.size(); ++d) by_distance[d] = f(static_cast<double>(d));
  for (int64_t r = 0; r < q_len; ++r)
    for (int64_t c = 0; c < k_len; ++c) {
      const int64_t i = q_offset + r;
      v[static_cast<std::size_t>(r * k_len + c)] = by_distance[static_cast<std::size_t>(i > c ? i - c : c - i)];
    }
  return from_doubles({1, q_len, k_len}, v, dtype);
}

// (1, q_len + k_len - 1) row of f(r) over the relative positions r = key - query of relative_bias(),
// entry m holding r = m - (q_offset + q_len - 1), in `dtype`.
template <typename F>
Tensor offset_row(int64_t q_len, int64_t k_len, int64_t q_offset, DType dtype, F&& f) {
  std::vector<double> v(static_cast<std::size_t>(q_len + k_len - 1));
  for (std::size_t m = 0; m < v.size(); ++m) v[m] = f(static_cast<int64_t>(m) - (q_offset + q_len - 1));
  return from_doubles({1, static_cast<int64_t>(v.size())}, v, dtype);
}

// ---- the schemes ----

/// t5 and shaw: a learned (rows, heads) table read at a per-(query, key) row index, so the
/// table's gradient is the per-row sum of the score gradients (index_select's scatter-add).
class TableScheme : public PositionScheme {
 public:
  TableScheme(const PositionOptions& o, int64_t rows, Generator& gen)
      : o_(o), table(register_parameter("table", Tensor::zeros({rows, o.heads}))) {
    init::normal_(table, gen, o.init_std);
  }
  PositionKind kind() const override { return PositionKind::additive_bias; }

  Tensor index(int64_t q_len, int64_t k_len, int64_t q_offset) const override {
    return cached_index(q_len, k_len, q_offset).clone();
  }
  Tensor bias(int64_t q_len, int64_t k_len, int64_t q_offset) const override {
    const Tensor idx = cached_index(q_len, k_len, q_offset);  // (q, k) i64
    return permute(index_select(table, idx), {2, 0, 1});      // (q, k, H) -> (H, q, k)
  }
  Tensor relative_bias(int64_t q_len, int64_t k_len, int64_t q_offset) const override {
    check_lengths(name().c_str(), q_len, k_len, q_offset);
    const Tensor rows = rel_cache_.get({q_len, k_len, q_offset}, [&] {
      std::vector<int64_t> v(static_cast<std::size_t>(q_len + k_len - 1));
      for (std::size_t m = 0; m < v.size(); ++m) v[m] = row_of(static_cast<int64_t>(m) - (q_offset + q_len - 1));
      return Tensor::indices({static_cast<int64_t>(v.size())}, v);
    });                                                   // (R) i64: the table row of each offset
    return permute(index_select(table, rows), {1, 0});  // (R, H) -> (H, R)
  }

 protected:
  /// The (q_len, k_len) i64 row index; computed once per (q_len, k_len, q_offset).
  virtual Tensor make_index(int64_t q_len, int64_t k_len, int64_t q_offset) const = 0;
  /// The table row of relative position key - query; make_index's rows, one offset at a time.
  virtual int64_t row_of(int64_t relative_position) const = 0;
  PositionOptions o_;

 private:
  Tensor cached_index(int64_t q_len, int64_t k_len, int64_t q_offset) const {
    check_lengths(name().c_str(), q_len, k_len, q_offset);
    return cache_.get({q_len, k_len, q_offset, static_cast<int64_t>(DType::i64)}, [&] { return make_index(q_len, k_len, q_offset); });
  }
  LastValueCache cache_, rel_cache_;

 public:
  Tensor table;  // (rows, heads)
};

/// t5: a learned (num_buckets, heads) table indexed by the HF bucket of key - query.
class T5Scheme final : public TableScheme {
 public:
  T5Scheme(const PositionOptions& o, Generator& gen) : TableScheme(o, o.num_buckets, gen) {}
  std::string name() const override { return "t5"; }

 private:
  Tensor make_index(int64_t q_len, int64_t k_len, int64_t q_offset) const override {
    return t5_buckets(q_len, k_len, q_offset, !o_.causal, o_.num_buckets, o_.max_distance);
  }
  int64_t row_of(int64_t relative_position) const override {
    return t5_bucket(relative_position, !o_.causal, o_.num_buckets, o_.max_distance);
  }
};

/// shaw: a learned (2K+1, heads) scalar table indexed by clip(key - query, -K, K) + K.
class ShawScheme final : public TableScheme {
 public:
  ShawScheme(const PositionOptions& o, Generator& gen) : TableScheme(o, 2 * o.max_relative_position + 1, gen) {}
  std::string name() const override { return "shaw"; }

 private:
  Tensor make_index(int64_t q_len, int64_t k_len, int64_t q_offset) const override {
    return shaw_index(q_len, k_len, q_offset, o_.max_relative_position);
  }
  int64_t row_of(int64_t relative_position) const override {
    const int64_t K = o_.max_relative_position;
    return std::clamp<int64_t>(relative_position, -K, K) + K;
  }
};

/// log_decay: B[h,i,j] = -lambda_h * log(1 + |i - j|) (seed 001; KERPLE-log with a = 1). A fixed lambda
/// is a non-persistent buffer (rebuilt from the options); a learnable one is a parameter per head.
class LogDecayScheme final : public PositionScheme {
 public:
  explicit LogDecayScheme(const PositionOptions& o) : o_(o) {}
  PositionKind kind() const override { return PositionKind::additive_bias; }
  std::string name() const override { return "log_decay"; }

  Tensor bias(int64_t q_len, int64_t k_len, int64_t q_offset) const override {
    check_lengths("log_decay", q_len, k_len, q_offset);
    const Tensor neg_log = cache_.get({q_len, k_len, q_offset, static_cast<int64_t>(lambda.dtype())}, [&] {
      return distance_table(q_len, k_len, q_offset, lambda.dtype(), [](double d) { return -std::log1p(d); });
    });  // (1, q, k): -log(1 + |i - j|)
    // A recorded mul, so a learnable lambda receives sum over (i, j) of -log(1 + |i - j|) * dL/dB[h, i, j].
    return mul(reshape(lambda, {o_.heads, 1, 1}), neg_log);  // (H, q, k)
  }
  Tensor relative_bias(int64_t q_len, int64_t k_len, int64_t q_offset) const override {
    check_lengths("log_decay", q_len, k_len, q_offset);
    const Tensor neg_log = rel_cache_.get({q_len, k_len, q_offset, static_cast<int64_t>(lambda.dtype())}, [&] {
      return offset_row(q_len, k_len, q_offset, lambda.dtype(),
                        [](int64_t r) { return -std::log1p(static_cast<double>(r < 0 ? -r : r)); });
    });                                                   // (1, R): -log(1 + |r|)
    return mul(reshape(lambda, {o_.heads, 1}), neg_log);  // (H, R)
  }

 private:
  PositionOptions o_;
  LastValueCache cache_, rel_cache_;

 public:
  Tensor lambda = o_.learnable_lambda
                      ? register_parameter("lambda", Tensor::full({o_.heads}, o_.lambda))  // (H)
                      : register_buffer("lambda", Tensor::full({o_.heads}, o_.lambda), /*persistent=*/false);
};

/// alibi: B[h,i,j] = -m_h * |i - j|, symmetric (the x-transformers bidirectional form; under a causal
/// mask it equals fairseq's +m_h * j up to a per-row shift, which softmax ignores). Not scaled by 1/sqrt(d).
class AlibiScheme final : public PositionScheme {
 public:
  explicit AlibiScheme(const PositionOptions& o) : o_(o) {}
  PositionKind kind() const override { return PositionKind::additive_bias; }
  std::string name() const override { return "alibi"; }

  Tensor bias(int64_t q_len, int64_t k_len, int64_t q_offset) const override {
    check_lengths("alibi", q_len, k_len, q_offset);
    const Tensor neg_dist = cache_.get({q_len, k_len, q_offset, static_cast<int64_t>(slopes.dtype())}, [&] {
      return distance_table(q_len, k_len, q_offset, slopes.dtype(), [](double d) { return -d; });
    });  // (1, q, k): -|i - j|
    return mul(reshape(slopes, {o_.heads, 1, 1}), neg_dist);  // (H, q, k)
  }
  Tensor relative_bias(int64_t q_len, int64_t k_len, int64_t q_offset) const override {
    check_lengths("alibi", q_len, k_len, q_offset);
    const Tensor neg_dist = rel_cache_.get({q_len, k_len, q_offset, static_cast<int64_t>(slopes.dtype())}, [&] {
      return offset_row(q_len, k_len, q_offset, slopes.dtype(),
                        [](int64_t r) { return -static_cast<double>(r < 0 ? -r : r); });
    });                                                    // (1, R): -|r|
    return mul(reshape(slopes, {o_.heads, 1}), neg_dist);  // (H, R)
  }

 private:
  PositionOptions o_;
  LastValueCache cache_, rel_cache_;

 public:
  // Fixed by the head count, so not saved in checkpoints.
  Tensor slopes = register_buffer("slopes", from_doubles({o_.heads}, alibi_slopes(o_.heads), DType::f32),
                                  /*persistent=*/false);  // (H)
};

/// sinusoidal: Vaswani et al.'s fixed table, added to the token embeddings.
class SinusoidalScheme final : public PositionScheme {
 public:
  explicit SinusoidalScheme(const PositionOptions& o) : o_(o) {}
  PositionKind kind() const override { return PositionKind::absolute; }
  std::string name() const override { return "sinusoidal"; }

  Tensor embed(int64_t length, int64_t offset) const override {
    RPB_CHECK(length >= 1, "sinusoidal", "length ", length, " must be at least 1");
    RPB_CHECK(offset >= 0, "sinusoidal", "offset ", offset, " must be at least 0");
    return sinusoidal_table(length, o_.d_model, offset, inv_freq.dtype());  // (length, d_model)
  }

 private:
  PositionOptions o_;

  static std::vector<double> frequencies(int64_t d) {
    std::vector<double> f(static_cast<std::size_t>(d / 2));
    for (int64_t i = 0; i < d / 2; ++i) f[i] = std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    return f;
  }

 public:
  // 10000^(-2i/d): not needed by embed(), which computes in double, but held as a (non-persistent)
  // buffer so that Module::to(dtype) sets the dtype of the embeddings.
  Tensor inv_freq = register_buffer("inv_freq", from_doubles({o_.d_model / 2}, frequencies(o_.d_model), DType::f32),
                                    /*persistent=*/false);  // (d_model / 2)
};

/// learned: a (max_positions, d_model) table added to the token embeddings.
class LearnedScheme final : public PositionScheme {
 public:
  LearnedScheme(const PositionOptions& o, Generator& gen) : o_(o) { init::normal_(table, gen, o.init_std); }
  PositionKind kind() const override { return PositionKind::absolute; }
  std::string name() const override { return "learned"; }

  Tensor embed(int64_t length, int64_t offset) const override {
    RPB_CHECK(length >= 1, "learned", "length ", length, " must be at least 1");
    RPB_CHECK(offset >= 0, "learned", "offset ", offset, " must be at least 0");
    const int64_t last = offset + length - 1;
    RPB_CHECK(last < o_.max_positions, "learned", "position ", last, " is beyond the table of ", o_.max_positions,
              " positions (max_positions); this scheme cannot extrapolate");
    std::vector<int64_t> pos(static_cast<std::size_t>(length));
    for (int64_t p = 0; p < length; ++p) pos[p] = offset + p;
    return index_select(table, Tensor::indices({length}, pos));  // (length, d_model)
  }

 private:
  PositionOptions o_;

 public:
  Tensor table = register_parameter("table", Tensor::zeros({o_.max_positions, o_.d_model}));  // (max_positions, d_model)
};

/// rope: x * cos + rotate_half(x) * sin (HF LLaMA / GPT-NeoX): the two halves of the last axis are
/// rotated as pairs (x[k], x[k + d/2]) by the angle p * inv_freq[k], so cos and sin repeat the
/// frequencies for both halves.
class RopeScheme final : public PositionScheme {
 public:
  explicit RopeScheme(const PositionOptions& o) : o_(o) {}
  PositionKind kind() const override { return PositionKind::rotary; }
  std::string name() const override { return "rope"; }

  Tensor rotate(const Tensor& x, int64_t offset) const override {
    RPB_CHECK(x.defined(), "rope", "x is undefined");
    RPB_CHECK(x.dim() >= 2 && x.size(-1) == o_.head_dim, "rope", "x ", x.shape(),
              " must end in (T, head_dim) with head_dim ", o_.head_dim, " (expected (B, heads, T, head_dim))");
    RPB_CHECK(x.dtype() == inv_freq.dtype(), "rope", "x is ", dtype_name(x.dtype()), " but the scheme is ",
              dtype_name(inv_freq.dtype()), " (convert one with Module::to)");
    RPB_CHECK(offset >= 0, "rope", "offset ", offset, " must be at least 0");
    const int64_t t = x.size(-2), half = o_.head_dim / 2;
    RPB_CHECK(t >= 1, "rope", "x ", x.shape(), " has no positions (T = 0)");
    const Tensor cos_t = cos_cache_.get({t, o_.head_dim, offset, static_cast<int64_t>(x.dtype())}, [&] { return table(t, offset, false); });
    const Tensor sin_t = sin_cache_.get({t, o_.head_dim, offset, static_cast<int64_t>(x.dtype())}, [&] { return table(t, offset, true); });
    const std::vector<Tensor> halves = split(x, {half, half}, -1);   // x1, x2: (..., T, d/2)
    const Tensor rotated = concat({neg(halves[1]), halves[0]}, -1);  // rotate_half(x) = (-x2, x1)
    return add(mul(x, cos_t), mul(rotated, sin_t));                  // (..., T, d)
  }

 private:
  // (T, head_dim) cos or sin of (offset + t) * inv_freq[k mod d/2]. As HF, the angle is formed in the
  // scheme's dtype (float32 positions times float32 frequencies), its cos/sin then rounded to that dtype.
  Tensor table(int64_t t, int64_t offset, bool sine) const {
    const int64_t d = o_.head_dim, half = d / 2;
    const std::vector<double> f = inv_freq.to_vector();
    std::vector<double> v(static_cast<std::size_t>(t * d));
    const bool single = inv_freq.dtype() == DType::f32;
    for (int64_t r = 0; r < t; ++r)
      for (int64_t k = 0; k < half; ++k) {
        double value;
        if (single) {
          const float angle = static_cast<float>(offset + r) * static_cast<float>(f[k]);
          value = sine ? std::sin(angle) : std::cos(angle);
        } else {
          const double angle = static_cast<double>(offset + r) * f[k];
          value = sine ? std::sin(angle) : std::cos(angle);
        }
        v[static_cast<std::size_t>(r * d + k)] = v[static_cast<std::size_t>(r * d + k + half)] = value;
      }
    return from_doubles({t, d}, v, inv_freq.dtype());
  }

  static std::vector<double> frequencies(int64_t d, double base) {
    std::vector<double> f(static_cast<std::size_t>(d / 2));
    for (int64_t i = 0; i < d / 2; ++i) f[i] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    return f;
  }

  PositionOptions o_;
  LastValueCache cos_cache_, sin_cache_;  // keyed (T, head_dim, offset, dtype)

 public:
  // base^(-2i/head_dim), i = 0 .. head_dim/2 - 1 (computed in double, then rounded to the dtype).
  Tensor inv_freq = register_buffer("inv_freq", from_doubles({o_.head_dim / 2}, frequencies(o_.head_dim, o_.rope_base),
                                                             DType::f32),
                                    /*persistent=*/false);  // (head_dim / 2)
};

/// none: no position information.
class NoneScheme final : public PositionScheme {
 public:
  PositionKind kind() const override { return PositionKind::none; }
  std::string name() const override { return "none"; }
};

std::string joined_names() {
  std::string s;
  for (const std::string& n : position_scheme_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

void validate(const PositionOptions& o) {
  const auto& names = position_scheme_names();
  RPB_CHECK(std::find(names.begin(), names.end(), o.scheme) != names.end(), "position",
            "unknown scheme '", o.scheme, "' (expected one of: ", joined_names(), ")");
  const char* s = o.scheme.c_str();
  RPB_CHECK(o.heads >= 1, s, "heads ", o.heads, " must be at least 1");
  if (o.scheme == "t5") {
    check_t5(s, !o.causal, o.num_buckets, o.max_distance);
  } else if (o.scheme == "shaw") {
    RPB_CHECK(o.max_relative_position >= 1, s, "max_relative_position ", o.max_relative_position,
              " must be at least 1 (K: offsets are clipped to [-K, K])");
  } else if (o.scheme == "log_decay") {
    RPB_CHECK(std::isfinite(o.lambda), s, "lambda ", o.lambda, " must be finite");
  } else if (o.scheme == "sinusoidal") {
    RPB_CHECK(o.d_model >= 1 && o.d_model % 2 == 0, s, "d_model ", o.d_model,
              " must be even and at least 2 (sin and cos per frequency)");
  } else if (o.scheme == "learned") {
    RPB_CHECK(o.d_model >= 1, s, "d_model ", o.d_model, " must be at least 1");
    RPB_CHECK(o.max_positions >= 1, s, "max_positions ", o.max_positions, " must be at least 1");
  } else if (o.scheme == "rope") {
    RPB_CHECK(o.head_dim >= 2 && o.head_dim % 2 == 0, s, "head_dim ", o.head_dim,
              " must be even and at least 2 (rotate_half pairs the two halves)");
    RPB_CHECK(std::isfinite(o.rope_base) && o.rope_base > 0, s, "rope_base ", o.rope_base, " must be positive");
  }
  if (o.scheme == "t5" || o.scheme == "shaw" || o.scheme == "learned")
    RPB_CHECK(std::isfinite(o.init_std) && o.init_std >= 0, s, "init_std ", o.init_std,
              " must be finite and non-negative");
}

}  // namespace

// ---- PositionScheme defaults: a scheme only answers for its own kind ----

Tensor PositionScheme::embed(int64_t length, int64_t offset) const {
  RPB_FAIL("position", "scheme '", name(), "' (kind ", kind_name(kind()),
           ") has no embed(): only absolute schemes (learned, sinusoidal) add embeddings to the tokens");
}

Tensor PositionScheme::bias(int64_t q_len, int64_t k_len, int64_t q_offset) const {
  RPB_FAIL("position", "scheme '", name(), "' (kind ", kind_name(kind()),
           ") has no bias(): only additive-bias schemes (t5, shaw, log_decay, alibi) add to the scores");
}

Tensor PositionScheme::rotate(const Tensor& x, int64_t offset) const {
  RPB_FAIL("position", "scheme '", name(), "' (kind ", kind_name(kind()),
           ") has no rotate(): only rotary schemes (rope) rotate queries and keys");
}

Tensor PositionScheme::index(int64_t q_len, int64_t k_len, int64_t q_offset) const { return Tensor(); }

Tensor PositionScheme::relative_bias(int64_t q_len, int64_t k_len, int64_t q_offset) const { return Tensor(); }

const std::vector<std::string>& position_scheme_names() {
  static const std::vector<std::string> names{"learned", "sinusoidal", "rope", "t5",
                                              "shaw",    "log_decay",  "alibi", "none"};
  return names;
}

std::shared_ptr<PositionScheme> make_position_scheme(const PositionOptions& options, Generator& gen) {
  validate(options);
  const std::string& s = options.scheme;
  if (s == "t5") return std::make_shared<T5Scheme>(options, gen);
  if (s == "shaw") return std::make_shared<ShawScheme>(options, gen);
  if (s == "log_decay") return std::make_shared<LogDecayScheme>(options);
  if (s == "alibi") return std::make_shared<AlibiScheme>(options);
  if (s == "sinusoidal") return std::make_shared<SinusoidalScheme>(options);
  if (s == "learned") return std::make_shared<LearnedScheme>(options, gen);
  if (s == "rope") return std::make_shared<RopeScheme>(options);
  return std::make_shared<NoneScheme>();  // "none": validate() accepted the name
}

// ---- reference functions ----

int64_t t5_bucket(int64_t relative_position, bool bidirectional, int64_t num_buckets, int64_t max_distance) {
  check_t5("t5_bucket", bidirectional, num_buckets, max_distance);
  RPB_CHECK(relative_position != std::numeric_limits<int64_t>::min(), "t5_bucket", "relative_position ",
            relative_position, " has no absolute value in int64");
  return t5_bucket_unchecked(relative_position, bidirectional, num_buckets,
                             t5_log_span(bidirectional, num_buckets, max_distance));
}

Tensor t5_buckets(int64_t q_len, int64_t k_len, int64_t q_offset, bool bidirectional, int64_t num_buckets,
                  int64_t max_distance) {
  check_lengths("t5_buckets", q_len, k_len, q_offset);
  check_t5("t5_buckets", bidirectional, num_buckets, max_distance);
  const float log_span = t5_log_span(bidirectional, num_buckets, max_distance);
  // relative position = key - query = c - (q_offset + r) spans [lo, k_len - 1] with lo = -(q_offset + q_len - 1):
  // bucket each of those q_offset + q_len + k_len - 1 values once, then fill the (q, k) matrix.
  const int64_t lo = -(q_offset + q_len - 1);
  std::vector<int64_t> by_offset(static_cast<std::size_t>(k_len - lo));
  for (int64_t rp = lo; rp < k_len; ++rp)
    by_offset[static_cast<std::size_t>(rp - lo)] = t5_bucket_unchecked(rp, bidirectional, num_buckets, log_span);
  std::vector<int64_t> v(static_cast<std::size_t>(q_len * k_len));
  for (int64_t r = 0; r < q_len; ++r)
    for (int64_t c = 0; c < k_len; ++c)
      v[static_cast<std::size_t>(r * k_len + c)] = by_offset[static_cast<std::size_t>(c - (q_offset + r) - lo)];
  return Tensor::indices({q_len, k_len}, v);
}

// tensor2tensor `_generate_relative_positions_matrix`: distance_mat[i][j] = j - i (key - query), clipped to
// [-K, K] and shifted by K. Seed 002's prose table shows i - j, but its code (and tensor2tensor) compute
// j - i; we follow the code, which is also T5's sign.
Tensor shaw_index(int64_t q_len, int64_t k_len, int64_t q_offset, int64_t max_relative_position) {
  check_lengths("shaw_index", q_len, k_len, q_offset);
  const int64_t k = max_relative_position;
  RPB_CHECK(k >= 1, "shaw_index", "max_relative_position ", k, " must be at least 1");
  std::vector<int64_t> v(static_cast<std::size_t>(q_len * k_len));
  for (int64_t r = 0; r < q_len; ++r)
    for (int64_t c = 0; c < k_len; ++c)
      v[static_cast<std::size_t>(r * k_len + c)] = std::clamp(c - (q_offset + r), -k, k) + k;
  return Tensor::indices({q_len, k_len}, v);
}

// Seed 004 (the Swin index in 1-D): coords[:, None] - coords[None, :] is query - key, shifted by n - 1.
Tensor relative_index_1d(int64_t n) {
  RPB_CHECK(n >= 1, "relative_index_1d", "n ", n, " must be at least 1");
  std::vector<int64_t> v(static_cast<std::size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) v[static_cast<std::size_t>(i * n + j)] = i - j + n - 1;
  return Tensor::indices({n, n}, v);
}

namespace {
// get_slopes_power_of_2(n): start = 2^(-2^-(log2(n) - 3)) = 2^(-8/n), slopes start * start^i.
std::vector<double> alibi_slopes_power_of_2(int64_t n) {
  const double start = std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(n)) - 3.0)));
  const double ratio = start;
  std::vector<double> s;
  for (int64_t i = 0; i < n; ++i) s.push_back(start * std::pow(ratio, static_cast<double>(i)));
  return s;
}
}  // namespace

// The paper's get_slopes: a power of two n gets the geometric sequence 2^(-8/n), 2^(-16/n), ..., 2^-8;
// otherwise the c = 2^floor(log2 n) slopes of get_slopes(c) are followed by the first n - c of every
// other slope of get_slopes(2c) (the interleaved ones, which fall between the first c).
std::vector<double> alibi_slopes(int64_t heads) {
  RPB_CHECK(heads >= 1, "alibi_slopes", "heads ", heads, " must be at least 1");
  const int64_t c = static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(heads)));
  if (c == heads) return alibi_slopes_power_of_2(heads);
  std::vector<double> s = alibi_slopes_power_of_2(c);
  const std::vector<double> finer = alibi_slopes(2 * c);
  for (int64_t i = 0; i < heads - c; ++i) s.push_back(finer[static_cast<std::size_t>(2 * i)]);  // [0::2][:n-c]
  return s;
}

// Vaswani et al. (interleaved): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d)).
Tensor sinusoidal_table(int64_t length, int64_t d, int64_t offset, DType dtype) {
  RPB_CHECK(length >= 1, "sinusoidal_table", "length ", length, " must be at least 1");
  RPB_CHECK(d >= 2 && d % 2 == 0, "sinusoidal_table", "d ", d, " must be even and at least 2");
  RPB_CHECK(offset >= 0, "sinusoidal_table", "offset ", offset, " must be at least 0");
  RPB_CHECK(dtype != DType::i64, "sinusoidal_table", "dtype must be float32 or float64, got ", dtype_name(dtype));
  std::vector<double> v(static_cast<std::size_t>(length * d));
  for (int64_t i = 0; i < d / 2; ++i) {
    const double denom = std::pow(10000.0, 2.0 * static_cast<double>(i) / static_cast<double>(d));
    for (int64_t r = 0; r < length; ++r) {
      const double angle = static_cast<double>(offset + r) / denom;
      v[static_cast<std::size_t>(r * d + 2 * i)] = std::sin(angle);
      v[static_cast<std::size_t>(r * d + 2 * i + 1)] = std::cos(angle);
    }
  }
  return from_doubles({length, d}, v, dtype);
}

}  // namespace rpb::nn

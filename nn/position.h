// rpb/nn/position.h: the position schemes, each behind one interface.
//
// Conventions, as their references compute them (each is also written where it is implemented):
//   t5         HF transformers `_relative_position_bucket`: relative position = key - query;
//              bidirectional: half the buckets per sign, key after query in the upper half;
//              causal: every future key in bucket 0; exact below max_exact = num_buckets/4
//              (bidirectional) or /2 (causal); log spacing to max_distance in float32; clamp
//              to the last bucket. Learned (num_buckets, heads) table, init normal std 0.02.
//   shaw       tensor2tensor `_generate_relative_positions_matrix`: key - query clipped to
//              [-K, K], shifted by K; a (2K+1, heads) scalar table (seed 002).
//   log_decay  B[i,j] = -lambda * log(1 + |i - j|) (seed 001); lambda fixed, or learnable per
//              head (KERPLE-log with a = 1).
//   alibi      B[h,i,j] = -m_h * |i - j| with the paper's get_slopes (interleaved for
//              head counts that are not a power of two); not scaled by 1/sqrt(d).
//   sinusoidal Vaswani et al.: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(...),
//              added to the token embeddings.
//   learned    a (max_positions, d_model) table added to the token embeddings; positions
//              past the table are an error.
//   rope       rotary embeddings on Q and K (HF/GPT-NeoX rotate_half convention,
//              inv_freq = base^(-2i/d)).
//   none       no position information.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/rng.h"
#include "nn/module.h"

namespace rpb::nn {

/// How a scheme enters the model.
enum class PositionKind {
  none,           // nothing
  absolute,       // embed(): added to the token embeddings
  additive_bias,  // bias(): added to the attention scores before softmax
  rotary          // rotate(): applied to queries and keys
};

struct PositionOptions {
  std::string scheme = "t5";  // learned | sinusoidal | rope | t5 | shaw | log_decay | alibi | none
  int64_t heads = 1;
  int64_t d_model = 0;   // absolute schemes
  int64_t head_dim = 0;  // rope
  bool causal = true;    // t5 buckets: causal or bidirectional
  int64_t num_buckets = 32;             // t5
  int64_t max_distance = 128;           // t5
  int64_t max_relative_position = 16;   // shaw: K
  double lambda = 0.3;                  // log_decay
  bool learnable_lambda = false;        // log_decay
  int64_t max_positions = 512;          // learned
  double rope_base = 10000.0;           // rope
  double init_std = 0.02;               // learned tables (t5, shaw, learned)
};

/// The names make_position_scheme accepts.
const std::vector<std::string>& position_scheme_names();

/// One position scheme. Queries sit at positions q_offset .. q_offset + q_len - 1 and keys at
/// 0 .. k_len - 1 (a KV cache sets q_offset to the cached length).
class PositionScheme : public Module {
 public:
  virtual PositionKind kind() const = 0;
  virtual std::string name() const = 0;
  /// absolute: (length, d_model) embeddings of positions offset .. offset + length - 1.
  virtual Tensor embed(int64_t length, int64_t offset) const;
  /// additive_bias: (heads, q_len, k_len).
  virtual Tensor bias(int64_t q_len, int64_t k_len, int64_t q_offset) const;
  /// additive_bias schemes whose bias depends only on key - query (t5, shaw, log_decay, alibi): the
  /// (heads, q_len + k_len - 1) vector the fused attention kernel reads (core/ops.h fused_attention),
  /// entry m holding the bias at key - query = m - (q_offset + q_len - 1). Differentiable in the
  /// scheme's parameters. Undefined for schemes without such a form.
  virtual Tensor relative_bias(int64_t q_len, int64_t k_len, int64_t q_offset) const;
  /// rotary: x (B, heads, T, head_dim) rotated for positions offset .. offset + T - 1.
  virtual Tensor rotate(const Tensor& x, int64_t offset) const;
  /// Table-indexed schemes (t5, shaw): the (q_len, k_len) i64 row index into the table; undefined otherwise.
  virtual Tensor index(int64_t q_len, int64_t k_len, int64_t q_offset) const;
  /// True when the scheme has trained parameters.
  bool learned() const { return parameter_count() > 0; }
};

/// Builds the scheme `options.scheme`, initialising its tables from `gen`; an unknown name or a
/// bad option throws an rpb::Error that names the option.
std::shared_ptr<PositionScheme> make_position_scheme(const PositionOptions& options, Generator& gen);

// ---- the reference functions, exposed for tests and `rpb bias` ----

/// HF transformers `_relative_position_bucket` for one relative position (key - query).
int64_t t5_bucket(int64_t relative_position, bool bidirectional, int64_t num_buckets, int64_t max_distance);
/// (q_len, k_len) i64 buckets of key - query for queries at q_offset...
Tensor t5_buckets(int64_t q_len, int64_t k_len, int64_t q_offset, bool bidirectional, int64_t num_buckets,
                  int64_t max_distance);
/// (q_len, k_len) i64: clip(key - query, -K, K) + K.
Tensor shaw_index(int64_t q_len, int64_t k_len, int64_t q_offset, int64_t max_relative_position);
/// Seed 004's 1-D index (n, n): query - key + n - 1, in [0, 2n - 2] (the Swin convention in 1-D).
Tensor relative_index_1d(int64_t n);
/// The ALiBi paper's get_slopes(heads).
std::vector<double> alibi_slopes(int64_t heads);
/// (length, d) sinusoidal embeddings of positions offset .. offset + length - 1.
Tensor sinusoidal_table(int64_t length, int64_t d, int64_t offset = 0, DType dtype = DType::f32);

}  // namespace rpb::nn

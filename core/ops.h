// rpb/core/ops.h: the differentiable primitives (see core/registry.h for the table).
//
// Each op checks its inputs (throwing rpb::Error that names the op and the shapes),
// computes its forward in float32 or float64, and, when an input requires grad
// and grad mode is on, records one tape node whose rule sits next to the forward
// in core/ops/<family>.cpp.
#pragma once

#include <memory>
#include <vector>

#include "core/autograd.h"
#include "core/tensor.h"

namespace rpb {

class Generator;  // core/rng.h

// ---- elementwise.cpp: numpy broadcasting ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& x);
/// x + s
Tensor add_scalar(const Tensor& x, double s);
/// x * s
Tensor mul_scalar(const Tensor& x, double s);
/// x ^ p (elementwise, real exponent; x must be positive where p is not an integer).
Tensor pow(const Tensor& x, double p);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& x, double s);
Tensor operator+(double s, const Tensor& x);
Tensor operator-(const Tensor& x, double s);
Tensor operator-(double s, const Tensor& x);
Tensor operator*(const Tensor& x, double s);
Tensor operator*(double s, const Tensor& x);
Tensor operator/(const Tensor& x, double s);
Tensor operator/(double s, const Tensor& x);

// ---- unary.cpp ----
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
enum class GeluApprox { erf, tanh };
/// GELU: x * Phi(x) (erf form, exact) or the tanh approximation of GPT-2/BERT.
Tensor gelu(const Tensor& x, GeluApprox approx = GeluApprox::erf);

// ---- matmul.cpp: BLAS-backed ----
/// op(a) @ op(b) where op transposes the last two axes when the flag is set.
/// 2-D @ 2-D, or batched: leading (batch) axes broadcast numpy-style, and a 2-D
/// operand is shared by every batch entry. Shapes (..., M, K) @ (..., K, N) -> (..., M, N).
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
/// A fully connected layer, x @ weight^T + bias: x (..., in), weight (out, in) as torch lays it out, bias (out)
/// or undefined; -> (..., out). Fused: the bias seeds the product's output rows instead of being added after it,
/// which saves a pass over the output and BLAS's zeroing of it. Equal to add(matmul(x, weight, false, true), bias)
/// to rounding (tests/test_ops_matmul_index.cpp).
///
/// @code
/// const rpb::Tensor x = rpb::Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
/// const rpb::Tensor w = rpb::Tensor::from_vector<float>({1, 3}, {1, 0, -1});
/// const rpb::Tensor b = rpb::Tensor::from_vector<float>({1}, {10});
/// CHECK(rpb::linear(x, w, b).to_vector() == std::vector<double>{8, 8});  // 1 - 3 + 10, 4 - 6 + 10
/// @endcode
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// ---- reduce.cpp ----
/// Sum over `axes` (all when empty); keepdim keeps them as size 1.
Tensor sum(const Tensor& x, std::vector<int> axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, std::vector<int> axes = {}, bool keepdim = false);
/// Maximum over `axes`. The gradient goes to the first maximal element of each reduced group.
Tensor max(const Tensor& x, std::vector<int> axes = {}, bool keepdim = false);

// ---- layout.cpp ----
/// A view with a new shape (one extent may be -1). Shares storage with x.
Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape);
/// Axes reordered: out.shape[i] = x.shape[perm[i]]. Copies into a contiguous tensor.
Tensor permute(const Tensor& x, const std::vector<int>& perm);
/// Swaps two axes (a permute).
Tensor transpose(const Tensor& x, int a, int b);
/// Joins tensors of equal shape but for `axis`.
Tensor concat(const std::vector<Tensor>& xs, int axis);
/// Elements [start, end) along `axis` (negative indices count from the end).
Tensor slice(const Tensor& x, int axis, int64_t start, int64_t end);
/// Consecutive slices of the given sizes along `axis` (their sum must be the extent).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int axis);

// ---- index.cpp ----
/// Rows of `table` picked by the i64 `index`: out[i...] = table[index[i...]],
/// shape index.shape + table.shape[1:]. Embedding and bias-table lookup;
/// the backward scatter-adds into the table (repeated indices sum).
Tensor index_select(const Tensor& table, const Tensor& index);
/// torch.gather: out[..., i, ...] = x[..., index[..., i, ...], ...] along `axis`;
/// index has x's rank and out has index's shape. Backward scatter-adds.
Tensor gather(const Tensor& x, int axis, const Tensor& index);

// ---- select.cpp ----
/// x where mask is zero, `value` where it is non-zero; mask broadcasts to x.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
/// a where cond is non-zero, else b; all three broadcast.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// ---- softmax.cpp: numerically stable; a row that is all -inf gives zeros and zero gradient ----
Tensor softmax(const Tensor& x, int axis = -1);
Tensor log_softmax(const Tensor& x, int axis = -1);

// ---- norm.cpp ----
/// Layer normalization over the last axis, fused: saves mean and rstd for backward.
/// weight and bias (shape [x.size(-1)]) may be undefined tensors.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);

// ---- dropout.cpp ----
/// Zeroes each element with probability p and scales the rest by 1/(1-p), drawing
/// from `gen`; identity when !training or p == 0.
Tensor dropout(const Tensor& x, double p, Generator& gen, bool training = true);

// ---- attention.cpp: fused attention with a relative-position bias ----
/// Where queries and keys sit, for the causal mask of fused_attention, and how its inputs are laid out.
struct AttentionSpec {
  double scale = 1.0;     // multiplies q k^T; the bias is added after it, unscaled
  bool causal = false;    // key j is masked for query i when j > q_offset + i
  int64_t q_offset = 0;   // queries sit at q_offset .. q_offset + Tq - 1, keys at 0 .. Tk - 1
  /// false: q (B, H, Tq, dh), k and v (B, H, Tk, dh), output (B, H, Tq, dh).
  /// true: q is a fused projection (B, T, 3, H, dh) holding q, k and v (k and v undefined, Tq = Tk = T), as
  /// reshaping a (B, T, 3d) qkv Linear gives, and the output is (B, T, H, dh), as the output projection reads
  /// it: no permutes or slices on either side.
  bool packed_qkv = false;
  /// Blockwise causal attention (xPos's evaluation, Sun et al. 2022, section 3.3) when > 0, with `causal`: the query
  /// at position p attends only keys from block_first_key(p, block) on, its own block p / block and the one
  /// before; key tiles wholly before that are skipped, so the work is O(Tq block). 0: every earlier key.
  int64_t block = 0;
};

/// The first key the query at position `p` may attend under blockwise causal attention with blocks of `block`
/// (AttentionSpec::block): the start of the block before its own, (p / block - 1) block, or 0 (also for block 0).
inline int64_t block_first_key(int64_t p, int64_t block) {
  return block > 0 && p / block > 0 ? (p / block - 1) * block : 0;
}

class BiasTiles;

/// An additive attention bias that depends on a (query, key) pair only through their relative position: one
/// value per head and per offset that can occur, in `table` (H, R). Where the tokens sit decides R and the
/// column a pair reads:
///   a line (`grid` empty): query rows i = 0 .. Tq - 1 and key rows j = 0 .. Tk - 1 (the positions of the
///     AttentionSpec); R = Tq + Tk - 1 and pair (i, j) reads column j - i + Tq - 1, so column m holds the bias
///     at key - query = m - (q_offset + Tq - 1);
///   a lattice (`grid` = (n_0, ..., n_{d-1})): Tq == Tk == n_0 ... n_{d-1} tokens are its cells in raster order
///     (the last axis fastest); R = (2 n_0 - 1) ... (2 n_{d-1} - 1) and a pair whose offset key - query is
///     (o_0, ..., o_{d-1}) reads column sum_a (o_a + n_a - 1) * prod_{b > a} (2 n_b - 1).
///   a line at explicit positions (`positions` set, randomized positions: Ruoss et al. 2023): Tq == Tk tokens, token
///     t at positions[t] (ascending, distinct, from 0 up), q_offset 0; with S = positions.back() + 1, R = 2 S - 1
///     and pair (i, j) reads column positions[j] - positions[i] + S - 1: the table over the offsets of a line of S
///     positions, read at the pairs' offsets. No CUDA kernel reads it (the composite path does, nn/attention.h).
///
/// A bias that is no table over offsets (FIRE's depends on the query's position past its threshold) comes as
/// `tiles` instead: computed by the kernel tile by tile where it reads it, in O(Tq + Tk) memory, on a line only.
struct RelativeBias {
  RelativeBias() = default;
  /// A bias over a line (`grid` empty) or a lattice; a Tensor converts to a line bias.
  RelativeBias(Tensor table, std::vector<int64_t> grid = {}) : table(std::move(table)), grid(std::move(grid)) {}
  /// A bias over a line computed tile by tile.
  explicit RelativeBias(std::shared_ptr<const BiasTiles> tiles) : tiles(std::move(tiles)) {}
  bool defined() const { return table.defined() || tiles != nullptr; }

  Tensor table;               // (H, R)
  std::vector<int64_t> grid;  // the lattice's extents, outermost first; empty for a line
  std::vector<int64_t> positions;  // a line's explicit positions (Tq of them); empty: 0 .. Tq - 1
  std::shared_ptr<const BiasTiles> tiles;  // instead of `table`: a bias computed where it is read
};

/// A bias f_h(u[|i - j|] / w[i - q_offset]) with f_h piecewise linear in its argument: FIRE's (Li et al. 2023), as
/// plain arrays, the form the CUDA kernel computes in its tiles (a BiasTiles' ratio_form()).
struct PiecewiseRatioBias {
  bool single = true;              // the ratio u / w is taken in float (else double)
  std::vector<double> u;           // (distances): per |i - j|
  std::vector<double> w;           // (q_len): per query row
  std::vector<double> kinks;       // (K) ascending
  std::vector<double> slope;       // (2K + 1, heads): d f_h / dx per bucket (segments 0 .. K, then the kinks)
  std::vector<double> intercept;   // (K + 1, heads): per segment
  std::vector<double> du;          // (distances): d u / d c, read by the gradient (empty without one)
};

/// An additive bias over a line that fused_attention computes tile by tile instead of reading a table (see
/// RelativeBias). A bias that learns names its parameters(): fused_attention then passes it the loss's gradient
/// with respect to each tile of scores (accumulate), one task per (batch, head) into its own sums, adds the tasks'
/// sums over the batch in order and asks gradients() for the parameters' gradients: no atomics, the same bits for
/// any thread count. A bias without parameters is a constant, as score_bias.
class BiasTiles {
 public:
  virtual ~BiasTiles() = default;
  /// The heads it holds a bias for (fused_attention's H).
  virtual int64_t heads() const = 0;
  /// Adds head h's bias to the scores of `rows` queries at positions i0 .. i0 + rows - 1 over `cols` keys at
  /// positions j0 .. j0 + cols - 1: s[r * ld + c] += bias(h, i0 + r, j0 + c). Positions are absolute (a query row r
  /// of fused_attention sits at q_offset + r). Called concurrently from several threads.
  virtual void add(int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols, float* s, int64_t ld) const = 0;
  virtual void add(int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols, double* s, int64_t ld) const = 0;

  /// The tensors the bias is a function of, which take gradients through fused_attention (empty: a constant).
  virtual std::vector<Tensor> parameters() const { return {}; }
  /// The doubles one (batch, head) task sums its share of the gradient into (0 without parameters).
  virtual int64_t grad_slots() const { return 0; }
  /// Adds a tile's terms to `acc` (grad_slots() doubles, zero at the task's start): ds[r * ld + c] is the loss's
  /// gradient with respect to head h's score of the query at position i0 + r and the key at j0 + c (absolute
  /// positions, as add's). Called concurrently for distinct `acc`.
  virtual void accumulate(int64_t /*h*/, int64_t /*i0*/, int64_t /*rows*/, int64_t /*j0*/, int64_t /*cols*/,
                          const float* /*ds*/, int64_t /*ld*/, double* /*acc*/) const {}
  virtual void accumulate(int64_t /*h*/, int64_t /*i0*/, int64_t /*rows*/, int64_t /*j0*/, int64_t /*cols*/,
                          const double* /*ds*/, int64_t /*ld*/, double* /*acc*/) const {}
  /// The gradients of parameters(), in its order and each of its parameter's shape and dtype, from `acc`
  /// (heads(), grad_slots()): head h's tasks' sums added over the batch in order.
  virtual std::vector<Tensor> gradients(const std::vector<double>& /*acc*/) const { return {}; }
  /// The bias as a PiecewiseRatioBias, which the CUDA kernel computes (and whose gradient sums it makes in the
  /// accumulate layout: per head [G0 (2K + 1) | G1 (2K + 1) | A (q_len) | B (q_len)]); null when it has no such
  /// form (it then runs on the CPU only).
  virtual std::shared_ptr<const PiecewiseRatioBias> ratio_form() const { return nullptr; }
};

/// softmax(scale q k^T + bias + score_bias + masks) v, tiled over queries and keys with an online softmax: the
/// (Tq, Tk) scores, bias and probabilities are never stored; forward keeps O(Tq) per head (the row
/// log-sum-exp) and backward recomputes the tiles. Work over batch x heads runs on the pool of
/// core/parallel.h; results are bit-identical run to run and for any thread count.
///   q (B, H, Tq, dh); k, v (B, H, Tk, dh), one float dtype (or packed, see AttentionSpec).
///   bias: a RelativeBias or undefined; the gradient of its table is summed per column in a fixed order (no
///     atomics).
///   key_padding (B, Tk) or undefined: non-zero masks that key.
///   score_bias (G, Tq, Tk) float or undefined: a constant added to the scores of batch entry b from its
///     group b % G (e.g. a region mask shared by every G-th batch entry); no gradient.
/// A fully masked row gives zeros and zero gradients. Returns (B, H, Tq, dh).
Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, const RelativeBias& bias,
                       const Tensor& key_padding, const Tensor& score_bias, const AttentionSpec& spec);
/// True when fused_attention takes heads of `head_dim` in `dtype` on `device`: always on the CPU; on cuda, when a
/// block's tiles fit its shared memory (head_dim <= 125 in float32, <= 51 in float64). A model attends through the
/// composite path where not.
bool fused_attention_supported(Device device, DType dtype, int64_t head_dim);

// ---- loss.cpp ----
/// Fused log_softmax + negative log-likelihood over the last axis of `logits`
/// (..., C) with i64 `target` (...), averaged over targets != ignore_index
/// (0 when every target is ignored).
Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index = -100);

}  // namespace rpb

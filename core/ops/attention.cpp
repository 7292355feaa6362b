// Fused attention with a relative-position bias (flash-attention's tiling, FlashAttention-2's
// loop order): forward and backward side by side. One task per (batch, head) on the pool of
// core/parallel.h; each task owns its outputs, so results do not depend on the thread count.
//
// Forward, per query tile, over key tiles: S = scale Q K^T + bias + masks, then the online softmax
//   m' = max(m, rowmax S),  P = exp(S - m'),  l = l e^(m - m') + rowsum P,  acc = acc e^(m - m') + P V,
// and finally O = acc / l, lse = m + log l (the only per-row state kept for backward).
// Backward recomputes P = exp(S - lse) per tile, with D = rowsum(dO * O):
//   dV += P^T dO,  dS = P * (dO V^T - D),  dQ += scale dS K,  dK += scale dS^T Q,  dbias[offset] += dS;
// a bias computed by tiles that learns (FIRE's) gets each dS tile (BiasTiles::accumulate) into the task's own sums.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/ops.h"
#include "core/ops/attention_cuda.h"
#include "core/ops/kernels.h"
#include "core/parallel.h"

namespace rpb {

namespace {

constexpr int64_t kTileK = 128;  // keys per tile
// Queries per tile: 64, or 32 up to 256 queries, where a causal tile on the diagonal is a large share of the
// work and a smaller one skips more of its masked corner (model A, T = 64: attention 30% faster; no change
// at T = 256; 64 stays best at T = 1024 and 4096).
int64_t tile_q(int64_t Tq) { return Tq <= 256 ? 32 : 64; }

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using Mat = Eigen::Map<RowMat<T>>;
// Rows of q, k, v, out and their gradients sit `stride` elements apart (the packed layout interleaves them).
template <typename T>
using SMat = Eigen::Map<RowMat<T>, 0, Eigen::OuterStride<>>;
template <typename T>
using CSMat = Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>>;
// Tile buffers start on a 64-byte boundary: Eigen's vectorized row reductions peel unaligned leading
// elements, so the summation order (and the result's last bit) would otherwise follow the heap address.
template <typename T>
using TileBuffer = std::vector<T, Eigen::aligned_allocator<T>>;

// Shapes, positions and memory layout of one call.
struct Geometry {
  int64_t B = 0, H = 0, Tq = 0, Tk = 0, dh = 0, R = 0;
  int64_t G = 0;  // groups in score_bias (0: none)
  // The bias column of query i and key j is key_code[j] - query_code[i] (see RelativeBias): on a line
  // key_code[j] = j + Tq - 1 and query_code[i] = i, so along a row the columns are contiguous; a lattice
  // codes each cell as the dot product of its coordinates with the column strides.
  bool line = true;
  std::vector<int64_t> query_code, key_code;  // lattice only
  AttentionSpec spec;
  // Row strides: q, k and v (and their gradients) share one; out and its gradient another.
  int64_t in_row = 0, out_row = 0;

  int64_t rel_index(int64_t i, int64_t j) const { return line ? j - i + Tq - 1 : key_code[j] - query_code[i]; }
  // One past the last key a query tile ending (exclusive) at i_end may see.
  int64_t key_end(int64_t i_end) const { return spec.causal ? std::min(Tk, spec.q_offset + i_end) : Tk; }
  // The first key a query tile starting at i0 may see: 0, or under blockwise attention its first query's window.
  int64_t key_begin(int64_t i0) const { return std::min(Tk, block_first_key(spec.q_offset + i0, spec.block)); }

  // Offsets of head h of batch entry b's first row. Heads-first: (B, H, T, dh) each. Packed: q, k, v
  // interleaved in (B, T, 3, H, dh) and out in (B, T, H, dh).
  int64_t q_offset_of(int64_t b, int64_t h) const {
    return spec.packed_qkv ? b * Tq * 3 * H * dh + h * dh : (b * H + h) * Tq * dh;
  }
  int64_t k_offset_of(int64_t b, int64_t h) const {
    return spec.packed_qkv ? q_offset_of(b, h) + H * dh : (b * H + h) * Tk * dh;
  }
  int64_t v_offset_of(int64_t b, int64_t h) const {
    return spec.packed_qkv ? q_offset_of(b, h) + 2 * H * dh : (b * H + h) * Tk * dh;
  }
  int64_t out_offset_of(int64_t b, int64_t h) const {
    return spec.packed_qkv ? b * Tq * H * dh + h * dh : (b * H + h) * Tq * dh;
  }
};

// The inputs of one (batch, head) task.
template <typename T>
struct Task {
  const T* q;              // (Tq, dh), rows in_row apart
  const T* k;              // (Tk, dh), rows in_row apart
  const T* v;              // (Tk, dh), rows in_row apart
  const T* rel;            // (R) or null
  const BiasTiles* tiles;  // head `head`'s bias computed per tile, or null
  int64_t head;
  const uint8_t* padded;   // (Tk) or null
  const T* score;          // (Tq, Tk) or null
};

template <typename T>
Task<T> task_of(const Geometry& g, int64_t task, const T* q, const T* k, const T* v, const T* rel,
                const BiasTiles* tiles, const uint8_t* padded, const T* score) {
  const int64_t b = task / g.H, h = task % g.H;
  return {q + g.q_offset_of(b, h),
          k + g.k_offset_of(b, h),
          v + g.v_offset_of(b, h),
          rel ? rel + h * g.R : nullptr,
          tiles,
          h,
          padded ? padded + b * g.Tk : nullptr,
          score ? score + (b % g.G) * g.Tq * g.Tk : nullptr};
}

// S (bq, bk) = scale Q[i0:] K[j0:]^T + bias + masks; masked entries are -inf.
template <typename T>
void score_tile(const Geometry& g, const Task<T>& t, int64_t i0, int64_t bq, int64_t j0, int64_t bk, Mat<T>& S) {
  const int64_t dh = g.dh, row = g.in_row;
  S.noalias() = CSMat<T>(t.q + i0 * row, bq, dh, Eigen::OuterStride<>(row)) *
                CSMat<T>(t.k + j0 * row, bk, dh, Eigen::OuterStride<>(row)).transpose();
  if (g.spec.scale != 1.0) S *= static_cast<T>(g.spec.scale);
  if (t.rel) {
    if (g.line) {
      // Along a row the offset grows with the key: a contiguous slice of rel.
      for (int64_t r = 0; r < bq; ++r)
        S.row(r) += Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(t.rel + g.rel_index(i0 + r, j0), bk);
    } else {
      for (int64_t r = 0; r < bq; ++r)
        for (int64_t c = 0; c < bk; ++c) S(r, c) += t.rel[g.rel_index(i0 + r, j0 + c)];
    }
  }
  if (t.tiles) t.tiles->add(t.head, g.spec.q_offset + i0, bq, j0, bk, S.data(), bk);
  if (t.score) S += CSMat<T>(t.score + i0 * g.Tk + j0, bq, bk, Eigen::OuterStride<>(g.Tk));
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  if (t.padded)
    for (int64_t c = 0; c < bk; ++c)
      if (t.padded[j0 + c]) S.col(c).setConstant(kNegInf);
  if (g.spec.causal) {
    for (int64_t r = 0; r < bq; ++r) {
      const int64_t first_masked = g.spec.q_offset + i0 + r + 1 - j0;  // tile column of the first future key
      if (first_masked < bk) S.row(r).tail(bk - std::max<int64_t>(first_masked, 0)).setConstant(kNegInf);
    }
  }
  if (g.spec.block > 0) {
    for (int64_t r = 0; r < bq; ++r) {
      const int64_t first_seen = block_first_key(g.spec.q_offset + i0 + r, g.spec.block) - j0;  // tile column
      if (first_seen > 0) S.row(r).head(std::min(first_seen, bk)).setConstant(kNegInf);
    }
  }
}

// out (Tq, dh; rows out_row apart) and lse (Tq) of one task.
template <typename T>
void forward_task(const Geometry& g, const Task<T>& t, T* out, T* lse) {
  const int64_t dh = g.dh;
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const int64_t tq = tile_q(g.Tq);
  TileBuffer<T> s_buf(tq * kTileK), acc_buf(tq * dh);
  Eigen::Array<T, Eigen::Dynamic, 1> m(tq), l(tq);
  for (int64_t i0 = 0; i0 < g.Tq; i0 += tq) {
    const int64_t bq = std::min(tq, g.Tq - i0);
    Mat<T> acc(acc_buf.data(), bq, dh);
    acc.setZero();
    m.head(bq).setConstant(kNegInf);
    l.head(bq).setZero();
    const int64_t kend = g.key_end(i0 + bq);
    for (int64_t j0 = g.key_begin(i0); j0 < kend; j0 += kTileK) {
      const int64_t bk = std::min(kTileK, kend - j0);
      Mat<T> S(s_buf.data(), bq, bk);
      score_tile(g, t, i0, bq, j0, bk, S);
      for (int64_t r = 0; r < bq; ++r) {
        const T m_new = std::max(m[r], S.row(r).maxCoeff());
        if (m_new == kNegInf) {  // every key so far is masked
          S.row(r).setZero();
          continue;
        }
        S.row(r) = (S.row(r).array() - m_new).exp().matrix();
        const T corr = std::exp(m[r] - m_new);  // 0 when m was -inf
        l[r] = l[r] * corr + S.row(r).sum();
        if (corr != T(1)) acc.row(r) *= corr;
        m[r] = m_new;
      }
      acc.noalias() += S * CSMat<T>(t.v + j0 * g.in_row, bk, dh, Eigen::OuterStride<>(g.in_row));
    }
    for (int64_t r = 0; r < bq; ++r) {
      Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>> o(out + (i0 + r) * g.out_row, dh);
      if (l[r] > 0) {
        o = acc.row(r) / l[r];
        lse[i0 + r] = m[r] + std::log(l[r]);
      } else {  // a fully masked row
        o.setZero();
        lse[i0 + r] = kNegInf;
      }
    }
  }
}

// Gradients of one task: dq (Tq, dh), dk and dv (Tk, dh), rows in_row apart, written whole (uninitialized on
// entry); drel (R, double) or null; tile_acc (the tiles' grad_slots(), zeroed) or null. out and dout have rows
// out_row apart.
template <typename T>
void backward_task(const Geometry& g, const Task<T>& t, const T* out, const T* lse, const T* dout, T* dq, T* dk,
                   T* dv, double* drel, double* tile_acc) {
  const int64_t dh = g.dh, row = g.in_row;
  const Eigen::OuterStride<> in_stride(row), out_stride(g.out_row);
  const T scale = static_cast<T>(g.spec.scale);
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const int64_t tq = tile_q(g.Tq);
  TileBuffer<T> p_buf(tq * kTileK), dp_buf(tq * kTileK);
  Eigen::Array<T, Eigen::Dynamic, 1> D(tq);
  // This task's rows of dq, dk and dv start at zero (they are accumulated below); each task clears its own,
  // in parallel, instead of one serial pass over the whole gradient.
  SMat<T>(dq, g.Tq, dh, in_stride).setZero();
  SMat<T>(dk, g.Tk, dh, in_stride).setZero();
  SMat<T>(dv, g.Tk, dh, in_stride).setZero();
  for (int64_t i0 = 0; i0 < g.Tq; i0 += tq) {
    const int64_t bq = std::min(tq, g.Tq - i0);
    const CSMat<T> dO(dout + i0 * g.out_row, bq, dh, out_stride);
    const CSMat<T> Qb(t.q + i0 * row, bq, dh, in_stride);
    SMat<T> dQb(dq + i0 * row, bq, dh, in_stride);
    D.head(bq) = (dO.array() * CSMat<T>(out + i0 * g.out_row, bq, dh, out_stride).array()).rowwise().sum();
    const int64_t kend = g.key_end(i0 + bq);
    for (int64_t j0 = g.key_begin(i0); j0 < kend; j0 += kTileK) {
      const int64_t bk = std::min(kTileK, kend - j0);
      Mat<T> P(p_buf.data(), bq, bk);
      Mat<T> dS(dp_buf.data(), bq, bk);
      score_tile(g, t, i0, bq, j0, bk, P);
      for (int64_t r = 0; r < bq; ++r) {
        if (lse[i0 + r] == kNegInf) P.row(r).setZero();
        else P.row(r) = (P.row(r).array() - lse[i0 + r]).exp().matrix();
      }
      const CSMat<T> Kb(t.k + j0 * row, bk, dh, in_stride);
      const CSMat<T> Vb(t.v + j0 * row, bk, dh, in_stride);
      SMat<T>(dv + j0 * row, bk, dh, in_stride).noalias() += P.transpose() * dO;
      dS.noalias() = dO * Vb.transpose();
      dS = (P.array() * (dS.array().colwise() - D.head(bq))).matrix();
      if (drel) {
        for (int64_t r = 0; r < bq; ++r) {
          if (g.line) {
            double* d = drel + g.rel_index(i0 + r, j0);
            for (int64_t c = 0; c < bk; ++c) d[c] += dS(r, c);
          } else {
            for (int64_t c = 0; c < bk; ++c) drel[g.rel_index(i0 + r, j0 + c)] += dS(r, c);
          }
        }
      }
      if (tile_acc) t.tiles->accumulate(t.head, g.spec.q_offset + i0, bq, j0, bk, dS.data(), bk, tile_acc);
      dQb.noalias() += dS * Kb;
      SMat<T>(dk + j0 * row, bk, dh, in_stride).noalias() += dS.transpose() * Qb;
    }
    if (scale != T(1)) dQb *= scale;
  }
  if (scale != T(1)) SMat<T>(dk, g.Tk, dh, in_stride) *= scale;
}

// Non-zero entries of a (B, Tk) mask of any dtype, as bytes.
std::vector<uint8_t> padding_bytes(const Tensor& mask) {
  const Tensor m = mask.to(DType::f64);
  const double* p = m.data<double>();
  std::vector<uint8_t> out(m.numel());
  for (int64_t i = 0; i < m.numel(); ++i) out[i] = p[i] != 0;
  return out;
}

// B, H, Tq, Tk, dh and the row strides of q, k, v and out, checked.
void set_shapes(Geometry& g, const Tensor& q, const Tensor& k, const Tensor& v) {
  const AttentionSpec& spec = g.spec;
  if (spec.packed_qkv) {
    RPB_CHECK(q.dim() == 5 && q.size(2) == 3 && !k.defined() && !v.defined(), "fused_attention",
              "packed_qkv expects one (B, T, 3, H, dh) tensor and undefined k and v, got ", q.shape(),
              k.defined() ? " with k" : "", v.defined() ? " with v" : "");
    RPB_CHECK(spec.q_offset == 0, "fused_attention", "packed_qkv attends T queries to their own T keys: q_offset ",
              spec.q_offset, " must be 0");
    g.B = q.size(0), g.H = q.size(3), g.Tq = g.Tk = q.size(1), g.dh = q.size(4);
    g.in_row = 3 * g.H * g.dh, g.out_row = g.H * g.dh;
  } else {
    RPB_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "fused_attention",
              "expected (B, H, T, dh) tensors, got q ", q.shape(), " k ", k.shape(), " v ", v.shape());
    RPB_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), "fused_attention", "q, k and v need one dtype, got ",
              dtype_name(q.dtype()), ", ", dtype_name(k.dtype()), " and ", dtype_name(v.dtype()));
    RPB_CHECK(k.shape() == v.shape() && q.size(0) == k.size(0) && q.size(1) == k.size(1) && q.size(3) == k.size(3),
              "fused_attention", "q ", q.shape(), ", k ", k.shape(), " and v ", v.shape(), " do not fit");
    g.B = q.size(0), g.H = q.size(1), g.Tq = q.size(2), g.Tk = k.size(2), g.dh = q.size(3);
    g.in_row = g.out_row = g.dh;
  }
  RPB_CHECK(q.is_floating(), "fused_attention", "expected float tensors, got ", dtype_name(q.dtype()), " ", q.shape());
  RPB_CHECK(spec.q_offset >= 0, "fused_attention", "q_offset ", spec.q_offset, " must be >= 0");
  RPB_CHECK(spec.block >= 0 && (spec.block == 0 || spec.causal), "fused_attention", "block ", spec.block,
            " must be 0 or, with causal attention, positive");
}

// "[n_0, n_1]" for messages.
std::string extents_text(const std::vector<int64_t>& grid) {
  std::string s = "[";
  for (std::size_t a = 0; a < grid.size(); ++a) s += (a ? ", " : "") + std::to_string(grid[a]);
  return s + "]";
}

// The largest explicit position: 2 S - 1 columns and every code difference stay far inside int64.
constexpr int64_t kMaxExplicitPosition = int64_t{1} << 40;

// A line at explicit positions (RelativeBias::positions): token t's code positions[t], a key's shifted by S - 1, so
// that key_code - query_code = positions[j] - positions[i] + S - 1 over R = 2 S - 1 columns.
void set_position_codes(Geometry& g, const std::vector<int64_t>& positions) {
  RPB_CHECK(g.Tq == g.Tk && static_cast<int64_t>(positions.size()) == g.Tq && g.spec.q_offset == 0,
            "fused_attention", "explicit positions need Tq == Tk == their count and q_offset 0; got ",
            positions.size(), " positions, Tq ", g.Tq, ", Tk ", g.Tk, ", q_offset ", g.spec.q_offset);
  for (std::size_t t = 0; t < positions.size(); ++t)
    RPB_CHECK(positions[t] >= 0 && positions[t] <= kMaxExplicitPosition && (t == 0 || positions[t] > positions[t - 1]),
              "fused_attention", "explicit positions must ascend strictly from 0 up (at most ", kMaxExplicitPosition,
              "); position ", t, " is ", positions[t], t > 0 ? " after " + std::to_string(positions[t - 1]) : "");
  const int64_t span = positions.back() + 1;
  g.line = false;
  g.R = 2 * span - 1;
  g.query_code = positions;
  g.key_code = positions;
  for (int64_t& c : g.key_code) c += span - 1;
}

// R and, on a lattice, the cell codes whose differences are the columns (see Geometry).
void set_bias_layout(Geometry& g, const std::vector<int64_t>& grid, const std::vector<int64_t>& positions) {
  g.line = grid.empty();
  if (g.line) {
    g.R = g.Tq + g.Tk - 1;
    if (!positions.empty()) set_position_codes(g, positions);
    return;
  }
  RPB_CHECK(positions.empty(), "fused_attention", "explicit positions are a line's; a grid has its cells");
  int64_t cells = 1;
  for (int64_t n : grid) {
    RPB_CHECK(n >= 1 && n <= g.Tq / cells, "fused_attention", "bias grid ", extents_text(grid),
              " has an extent below 1 or more cells than the ", g.Tq, " queries");
    cells *= n;
  }
  RPB_CHECK(g.Tq == g.Tk && g.Tq == cells && g.spec.q_offset == 0, "fused_attention", "a bias over the grid ",
            extents_text(grid), " needs Tq == Tk == ", cells, " tokens and q_offset 0; got Tq ", g.Tq, ", Tk ", g.Tk,
            ", q_offset ", g.spec.q_offset);
  // stride_a = prod_{b > a} (2 n_b - 1); a cell's code is sum_a coord_a * stride_a, and a key's is shifted by
  // sum_a (n_a - 1) * stride_a, so that key_code - query_code = sum_a (o_a + n_a - 1) * stride_a.
  const int d = static_cast<int>(grid.size());
  std::vector<int64_t> stride(static_cast<std::size_t>(d));
  int64_t s = 1, shift = 0;
  for (int a = d - 1; a >= 0; --a) {
    stride[a] = s;
    shift += (grid[a] - 1) * s;
    s *= 2 * grid[a] - 1;
  }
  g.R = s;
  g.query_code.assign(static_cast<std::size_t>(cells), 0);
  for (int64_t p = 0; p < cells; ++p) {
    int64_t rest = p;
    for (int a = d - 1; a >= 0; --a) {
      g.query_code[p] += rest % grid[a] * stride[a];
      rest /= grid[a];
    }
  }
  g.key_code = g.query_code;
  for (int64_t& c : g.key_code) c += shift;
}

// The geometry of one call, with every input checked against it.
Geometry geometry_of(const Tensor& q, const Tensor& k, const Tensor& v, const RelativeBias& bias,
                     const Tensor& key_padding, const Tensor& score_bias, const AttentionSpec& spec) {
  Geometry g;
  g.spec = spec;
  set_shapes(g, q, k, v);
  set_bias_layout(g, bias.grid, bias.positions);
  if (bias.tiles) {
    RPB_CHECK(!bias.table.defined() && bias.grid.empty() && bias.positions.empty(), "fused_attention",
              "a bias computed by tiles holds the whole bias of a line: no table and no grid beside it");
    RPB_CHECK(bias.tiles->heads() == g.H, "fused_attention", "the bias tiles hold ", bias.tiles->heads(),
              " heads, the attention has ", g.H);
  } else if (bias.defined())
    RPB_CHECK(bias.table.dtype() == q.dtype() && bias.table.shape() == Shape({g.H, g.R}), "fused_attention",
              "rel_bias ", dtype_name(bias.table.dtype()), " ", bias.table.shape(), " is not ", dtype_name(q.dtype()),
              " (H, R) = (", g.H, ", ", g.R, ") for ", g.Tq, " queries and ", g.Tk, " keys",
              !bias.positions.empty() ? " at explicit positions (R = 2 S - 1)"
              : g.line                ? " (R = Tq + Tk - 1)"
                                      : " on a grid");
  if (key_padding.defined())
    RPB_CHECK(key_padding.shape() == Shape({g.B, g.Tk}), "fused_attention", "key_padding ", key_padding.shape(),
              " is not (B, Tk) = (", g.B, ", ", g.Tk, ")");
  if (score_bias.defined()) {
    RPB_CHECK(score_bias.dtype() == q.dtype() && score_bias.dim() == 3 && score_bias.size(0) > 0 &&
                  g.B % score_bias.size(0) == 0 && score_bias.size(1) == g.Tq && score_bias.size(2) == g.Tk,
              "fused_attention", "score_bias ", dtype_name(score_bias.dtype()), " ", score_bias.shape(),
              " is not (G, Tq, Tk) = (G, ", g.Tq, ", ", g.Tk, ") with G dividing B = ", g.B);
    RPB_CHECK(!score_bias.requires_grad(), "fused_attention", "score_bias ", score_bias.shape(),
              " is a constant: it takes no gradient");
    g.G = score_bias.size(0);
  }
  return g;
}

// What backward reads: the inputs (detached), the padding bytes, the output and the row log-sum-exp.
struct Saved {
  Geometry g;
  Tensor q, k, v, rel, score, out, lse;
  std::shared_ptr<const BiasTiles> tiles;
  std::vector<uint8_t> padded;
};

// Every task's sums (B H, n) added over the batch in order: (H, n).
std::vector<double> sum_over_batch(const std::vector<double>& tasks, int64_t B, int64_t H, int64_t n) {
  std::vector<double> acc(H * n, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < H * n; ++i) acc[i] += tasks[b * H * n + i];
  return acc;
}

// The backward rule: one task per (batch, head), as forward.
void attention_backward(const Saved& s, const Tensor& grad, InputGrads& gi) {
  const Geometry& g = s.g;
  const bool need_rel = gi.needed(3);
  // Packed: one (B, T, 3, H, dh) gradient holds dq, dk and dv, as the input held q, k and v.
  const bool packed = g.spec.packed_qkv;
  // Every element belongs to one task's q, k or v rows, which backward_task writes whole.
  Tensor dq = Tensor::empty(s.q.shape(), s.q.dtype());
  Tensor dk = packed ? dq : Tensor::empty(s.k.shape(), s.k.dtype());
  Tensor dv = packed ? dq : Tensor::empty(s.v.shape(), s.v.dtype());
  // One accumulator per task, summed over the batch in order afterwards: deterministic.
  std::vector<double> drel_tasks(need_rel ? g.B * g.H * g.R : 0, 0.0);
  const bool need_tiles = tile_grads_needed(s.tiles.get(), gi);
  const int64_t tile_slots = need_tiles ? s.tiles->grad_slots() : 0;
  std::vector<double> tile_tasks(g.B * g.H * tile_slots, 0.0);
  dispatch_float(s.q.dtype(), "fused_attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* prel = s.rel.defined() ? s.rel.data<T>() : nullptr;
    const T* pscore = s.score.defined() ? s.score.data<T>() : nullptr;
    const uint8_t* ppad = s.padded.empty() ? nullptr : s.padded.data();
    const T* pq = s.q.data<T>();
    const T* pk = packed ? pq : s.k.data<T>();
    const T* pv = packed ? pq : s.v.data<T>();
    const T *po = s.out.data<T>(), *pl = s.lse.data<T>(), *pg = grad.data<T>();
    T *pdq = dq.mutable_data<T>(), *pdk = dk.mutable_data<T>(), *pdv = dv.mutable_data<T>();
    parallel_for(g.B * g.H, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t b = task / g.H, h = task % g.H, oo = g.out_offset_of(b, h);
        backward_task(g, task_of(g, task, pq, pk, pv, prel, s.tiles.get(), ppad, pscore), po + oo, pl + task * g.Tq, pg + oo,
                      pdq + g.q_offset_of(b, h), pdk + g.k_offset_of(b, h), pdv + g.v_offset_of(b, h),
                      need_rel ? drel_tasks.data() + task * g.R : nullptr,
                      need_tiles ? tile_tasks.data() + task * tile_slots : nullptr);
      }
    });
  });
  if (gi.needed(0)) gi.set(0, dq);
  if (!packed && gi.needed(1)) gi.set(1, dk);
  if (!packed && gi.needed(2)) gi.set(2, dv);
  if (need_rel) {
    Tensor d = Tensor::from_vector<double>({g.H, g.R}, sum_over_batch(drel_tasks, g.B, g.H, g.R));
    gi.set(3, d.dtype() == s.q.dtype() ? d : d.to(s.q.dtype()));
  }
  if (need_tiles) set_tile_grads(*s.tiles, sum_over_batch(tile_tasks, g.B, g.H, tile_slots), gi);
}

// The shapes and flags of a call on CUDA (core/cuda/kernels/attention.h); a line only.
cuda::AttentionCall cuda_call(const Geometry& g) {
  RPB_CHECK(g.line, "fused_attention", "a bias over a grid has no CUDA kernel (nor one at explicit positions): on a "
            "GPU, window attention and randomized positions attend through the composite path "
            "(nn/window_attention.cpp, nn/attention.cpp)");
  cuda::AttentionCall c;
  c.B = g.B, c.H = g.H, c.Tq = g.Tq, c.Tk = g.Tk, c.dh = g.dh, c.R = g.R, c.G = g.G;
  c.in_row = g.in_row, c.out_row = g.out_row, c.q_offset = g.spec.q_offset, c.block = g.spec.block;
  c.packed = g.spec.packed_qkv, c.causal = g.spec.causal, c.scale = g.spec.scale;
  return c;
}

// q, k, v, the table, then the tiles' parameters: the inputs of the op on the tape.
std::vector<Tensor> tape_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const RelativeBias& bias) {
  std::vector<Tensor> inputs{q, k, v, bias.table};
  if (bias.tiles)
    for (const Tensor& p : bias.tiles->parameters()) inputs.push_back(p);
  return inputs;
}

}  // namespace

bool tile_grads_needed(const BiasTiles* tiles, const InputGrads& gi) {
  const int n = tiles ? static_cast<int>(tiles->parameters().size()) : 0;
  for (int i = 0; i < n; ++i)
    if (gi.needed(kFirstTileParameter + i)) return true;
  return false;
}

void set_tile_grads(const BiasTiles& tiles, const std::vector<double>& acc, InputGrads& gi) {
  const std::vector<Tensor> grads = tiles.gradients(acc);
  for (std::size_t i = 0; i < grads.size(); ++i)
    if (gi.needed(kFirstTileParameter + static_cast<int>(i))) gi.set(kFirstTileParameter + static_cast<int>(i), grads[i]);
}

Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, const RelativeBias& bias,
                       const Tensor& key_padding, const Tensor& score_bias, const AttentionSpec& spec) {
  const Geometry g = geometry_of(q, k, v, bias, key_padding, score_bias, spec);
  const std::vector<Tensor> inputs = tape_inputs(q, k, v, bias);
  bool record = false;
  for (const Tensor& t : inputs) record = record || autograd::should_record({&t});
  if (cuda::on_cuda("fused_attention", {&q, &k, &v, &bias.table, &key_padding, &score_bias})) {
    BackwardFn backward;
    Tensor out = fused_attention_cuda(q, k, v, bias, key_padding, score_bias, cuda_call(g), record ? &backward : nullptr);
    if (record) autograd::record(OpKind::FusedAttention, out, inputs, std::move(backward));
    return out;
  }
  const Tensor& rel = bias.table;
  std::vector<uint8_t> padded = key_padding.defined() ? padding_bytes(key_padding) : std::vector<uint8_t>();
  Tensor out = Tensor::empty(spec.packed_qkv ? Shape{g.B, g.Tq, g.H, g.dh} : q.shape(), q.dtype());
  Tensor lse = Tensor::empty({g.B, g.H, g.Tq}, q.dtype());
  dispatch_float(q.dtype(), "fused_attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* prel = rel.defined() ? rel.data<T>() : nullptr;
    const T* pscore = score_bias.defined() ? score_bias.data<T>() : nullptr;
    const uint8_t* ppad = padded.empty() ? nullptr : padded.data();
    const T* pq = q.data<T>();
    const T* pk = spec.packed_qkv ? pq : k.data<T>();
    const T* pv = spec.packed_qkv ? pq : v.data<T>();
    T* po = out.mutable_data<T>();
    T* pl = lse.mutable_data<T>();
    parallel_for(g.B * g.H, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task)
        forward_task(g, task_of(g, task, pq, pk, pv, prel, bias.tiles.get(), ppad, pscore),
                     po + g.out_offset_of(task / g.H, task % g.H), pl + task * g.Tq);
    });
  });

  if (record) {
    auto detached = [](const Tensor& t) { return t.defined() ? t.detach() : Tensor(); };
    auto saved = std::make_shared<const Saved>(Saved{g, q.detach(), detached(k), detached(v), detached(rel),
                                                     detached(score_bias), out.detach(), lse, bias.tiles,
                                                     std::move(padded)});
    autograd::record(OpKind::FusedAttention, out, inputs,
                     [saved](const Tensor& grad, InputGrads& gi) { attention_backward(*saved, grad, gi); });
  }
  return out;
}

}  // namespace rpb

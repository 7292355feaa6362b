// rpb/core/cuda/kernels/attention.h: fused attention with a relative-position bias on CUDA, the CPU kernel's
// algorithm (core/ops/attention.cpp: FlashAttention-2's tiling, the online softmax, the backward recomputing the
// probabilities from the saved log-sum-exp) as tile bodies: one thread block per (batch, head, tile), its tiles in
// shared memory, each product a 4 x 4 register micro-tile per thread.
//
//   forward (one block per query tile): S = scale Q K^T + bias + masks, online softmax, O = acc / l, lse.
//   backward, dK and dV (one block per key tile, over the query tiles that see it): P = exp(S - lse),
//     dV += P^T dO, dS = P (dO V^T - D), dK += scale dS^T Q.
//   backward, dQ and the bias (one block per query tile, over its key tiles): dQ += scale dS K; the table's
//     gradient per offset column summed along the tile's diagonals into the block's own row of partial sums;
//     a piecewise-ratio bias's (FIRE's) per-row sums.
// Every sum has one order fixed by the shapes: each output element belongs to one thread, and the partial sums
// of different blocks are added afterwards in block order (AttnRelSumBody, AttnRatioSumBody). No atomics: two runs
// give the same bits.
#pragma once

#include <cstdint>

#include "core/cuda/block_reduce.h"

namespace rpb::cuda {

/// Queries and keys per tile (each thread block owns a 64 x 64 score tile: kBlock threads of 4 x 4).
inline constexpr int64_t kAttnTile = 64;
/// The dynamic shared memory a block may take: an H100's or H200's 227 KB less the 4 KB of the tile launcher's
/// reduction scratch (core/cuda/exec_device.cuh k_tiles). AttnSmem's bytes must fit it.
inline constexpr int64_t kAttnMaxShared = 227 * 1024 - kBlock * 16;
/// The partial sums one chunk of the dQ pass may hold (AttnBackwardQBody): the memory stays O(L).
inline constexpr int64_t kAttnChunkBytes = int64_t{32} << 20;

/// The bias f_h(u[|i - j|] / w[i - q_offset]) with f_h piecewise linear in its argument (FIRE's, core/ops.h
/// PiecewiseRatioBias), as device arrays. The ratio is taken in float when `single` (the scheme's dtype).
struct RatioBiasArgs {
  const double* u = nullptr;          // (distances): u per |i - j|
  const double* w = nullptr;          // (Tq): w per query row
  const double* kinks = nullptr;      // (K) ascending
  const double* slope = nullptr;      // (2K + 1, H): per bucket
  const double* intercept = nullptr;  // (K + 1, H): per segment
  const double* du = nullptr;         // (distances): d u / d c, for the gradient
  int64_t K = 0;
  bool single = true;
  RPB_HD int64_t buckets() const { return 2 * K + 1; }
  /// Per (batch, head, row) in the backward's row sums: [G0 (buckets) | G1 (buckets) | A | B].
  RPB_HD int64_t row_slots() const { return 2 * buckets() + 2; }
  RPB_HD double ratio(int64_t i_row, int64_t d) const {
    return single ? static_cast<double>(static_cast<float>(u[d]) / static_cast<float>(w[i_row])) : u[d] / w[i_row];
  }
  /// The number of kinks <= x (its segment).
  RPB_HD int64_t segment(double x) const {
    int64_t lo = 0, hi = K;
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (kinks[mid] <= x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
  RPB_HD int64_t bucket(double x) const {
    const int64_t s = segment(x);
    return s > 0 && kinks[s - 1] == x ? K + s : s;
  }
  RPB_HD double value(int64_t h, int64_t H, double x) const {
    const int64_t s = segment(x);
    return slope[s * H + h] * x + intercept[s * H + h];
  }
};

/// The shapes, layout, masks and bias of one fused attention call (core/ops/attention.cpp Geometry's fields).
template <typename T>
struct AttnArgs {
  int64_t B = 0, H = 0, Tq = 0, Tk = 0, dh = 0, R = 0, G = 0;
  int64_t in_row = 0, out_row = 0;  // row strides of q, k, v (and their gradients) and of out (and dout)
  bool packed = false, causal = false;
  int64_t q_offset = 0, block = 0;
  T scale = T(1);
  const T* rel = nullptr;       // (H, R) or null
  const T* padded = nullptr;    // (B, Tk): non-zero masks the key; or null
  const T* score = nullptr;     // (G, Tq, Tk) or null
  RatioBiasArgs ratio;          // used when ratio.u is not null
  bool has_ratio = false;

  RPB_HD int64_t q_off(int64_t b, int64_t h) const { return packed ? b * Tq * 3 * H * dh + h * dh : (b * H + h) * Tq * dh; }
  RPB_HD int64_t k_off(int64_t b, int64_t h) const { return packed ? q_off(b, h) + H * dh : (b * H + h) * Tk * dh; }
  RPB_HD int64_t v_off(int64_t b, int64_t h) const { return packed ? q_off(b, h) + 2 * H * dh : (b * H + h) * Tk * dh; }
  RPB_HD int64_t o_off(int64_t b, int64_t h) const { return packed ? b * Tq * H * dh + h * dh : (b * H + h) * Tq * dh; }
  RPB_HD static int64_t first_key(int64_t p, int64_t blk) { return blk > 0 && p / blk > 0 ? (p / blk - 1) * blk : 0; }
  RPB_HD int64_t key_end(int64_t i_end) const {
    const int64_t e = q_offset + i_end;
    return causal && e < Tk ? e : Tk;
  }
  RPB_HD int64_t key_begin(int64_t i0) const {
    const int64_t f = first_key(q_offset + i0, block);
    return f < Tk ? f : Tk;
  }
  RPB_HD int64_t q_tiles() const { return (Tq + kAttnTile - 1) / kAttnTile; }
  RPB_HD int64_t k_tiles() const { return (Tk + kAttnTile - 1) / kAttnTile; }

  /// The score of query row i and key j of (b, h) from the product qk = q_i . k_j, as the CPU kernel adds it:
  /// scale, the table, the ratio bias, score_bias, then the masks (-inf).
  RPB_HD T score_of(int64_t b, int64_t h, int64_t i, int64_t j, T qk) const {
    T s = scale != T(1) ? qk * scale : qk;
    if (rel) s += rel[h * R + j - i + Tq - 1];
    if (has_ratio) {
      const int64_t d = q_offset + i - j;
      s += static_cast<T>(ratio.value(h, H, ratio.ratio(i, d < 0 ? -d : d)));
    }
    if (score) s += score[((b % G) * Tq + i) * Tk + j];
    if ((padded && padded[b * Tk + j] != T(0)) || (causal && j > q_offset + i) ||
        (block > 0 && j < first_key(q_offset + i, block)))
      s = -m_inf<T>();
    return s;
  }
};

/// acc(r, c) = sum over k < K of a(r, k) b(c, k) for r < M and c < N, in the order of k, written by out(r, c,
/// acc): thread t of each 64 x 64 block of the output owns rows t / 16 + 16 u and columns t % 16 + 16 v.
template <typename T, typename Ctx, typename A, typename Bf, typename Out>
RPB_HD void tile_product(Ctx& ctx, int64_t M, int64_t N, int64_t K, const A& a, const Bf& b, const Out& out) {
  const int64_t bn = (N + 63) / 64, blocks = ((M + 63) / 64) * bn;
  ctx.each(blocks * kBlock, [=](int64_t j) {
    const int64_t blk = j / kBlock, t = j % kBlock;
    const int64_t r0 = (blk / bn) * 64 + t / 16, c0 = (blk % bn) * 64 + t % 16;
    T acc[4][4];
    for (int u = 0; u < 4; ++u)
      for (int v = 0; v < 4; ++v) acc[u][v] = T(0);
    for (int64_t k = 0; k < K; ++k) {
      T av[4], bv[4];
      for (int u = 0; u < 4; ++u) av[u] = r0 + 16 * u < M ? a(r0 + 16 * u, k) : T(0);
      for (int v = 0; v < 4; ++v) bv[v] = c0 + 16 * v < N ? b(c0 + 16 * v, k) : T(0);
      for (int u = 0; u < 4; ++u)
        for (int v = 0; v < 4; ++v) acc[u][v] += av[u] * bv[v];
    }
    for (int u = 0; u < 4; ++u)
      for (int v = 0; v < 4; ++v)
        if (r0 + 16 * u < M && c0 + 16 * v < N) out(r0 + 16 * u, c0 + 16 * v, acc[u][v]);
  });
}

/// Shared memory of one block: six row tiles, rows padded to dh + 1 (conflict-free column reads), two score
/// tiles and three row vectors.
template <typename T>
struct AttnSmem {
  int64_t ld = 0;  // dh + 1
  T *a, *b, *c, *d, *e, *f;  // (64, ld) each
  T *s, *p;                  // (64, 65) each
  T *r0, *r1, *r2;           // (64) each
  static int64_t bytes(int64_t dh) {
    return static_cast<int64_t>(sizeof(T)) * (6 * 64 * (dh + 1) + 2 * 64 * 65 + 3 * 64);
  }
  RPB_HD AttnSmem(unsigned char* base, int64_t dh) : ld(dh + 1) {
    a = reinterpret_cast<T*>(base);
    b = a + 64 * ld, c = b + 64 * ld, d = c + 64 * ld, e = d + 64 * ld, f = e + 64 * ld;
    s = f + 64 * ld, p = s + 64 * 65;
    r0 = p + 64 * 65, r1 = r0 + 64, r2 = r1 + 64;
  }
};

/// The rows of the tile starting at `start` of a length-n axis: 64, or what is left.
RPB_HD inline int64_t tile_extent(int64_t n, int64_t start) { return n - start < kAttnTile ? n - start : kAttnTile; }

/// Which (batch, head) and which tile of its axis (of length `len`) block `blk` takes, the blocks of one (batch,
/// head) being `per_task` consecutive tiles from tile `first` on.
struct TileOf {
  int64_t task, b, h, start, n;  // n: the tile's rows
};
RPB_HD inline TileOf tile_of(int64_t blk, int64_t per_task, int64_t H, int64_t len, int64_t first = 0) {
  const int64_t task = blk / per_task, start = (first + blk % per_task) * kAttnTile;
  return {task, task / H, task % H, start, tile_extent(len, start)};
}

/// Zeroes n rows of dh of a tile (rows ld apart).
template <typename T, typename Ctx>
RPB_HD void zero_rows(Ctx& ctx, T* tile, int64_t n, int64_t dh, int64_t ld) {
  ctx.each(n * dh, [=](int64_t e) { tile[(e / dh) * ld + e % dh] = T(0); });
}

/// Copies n rows of dh from src (rows `stride` apart) into a tile (rows ld apart).
template <typename T, typename Ctx>
RPB_HD void load_rows(Ctx& ctx, const T* src, int64_t stride, int64_t n, int64_t dh, T* tile, int64_t ld) {
  ctx.each(n * dh, [=](int64_t e) { tile[(e / dh) * ld + e % dh] = src[(e / dh) * stride + e % dh]; });
}

/// Forward: one block per (b, h, query tile). Writes out and lse (B, H, Tq).
template <typename T>
struct AttnForwardBody {
  AttnArgs<T> a;
  const T *q, *k, *v;
  T *out, *lse;
  template <typename Ctx>
  RPB_HD void operator()(int64_t blk, Ctx& ctx, unsigned char* smem) const {
    const AttnArgs<T> g = a;
    const TileOf t = tile_of(blk, g.q_tiles(), g.H, g.Tq);
    const int64_t task = t.task, b = t.b, h = t.h, i0 = t.start, bq = t.n, dh = g.dh;
    AttnSmem<T> sm(smem, dh);
    T *Q = sm.a, *K = sm.b, *V = sm.c, *acc = sm.d, *S = sm.s, *m = sm.r0, *l = sm.r1, *corr = sm.r2;
    const int64_t ld = sm.ld, row = g.in_row;
    const T* qb = q + g.q_off(b, h) + i0 * row;
    load_rows(ctx, qb, row, bq, dh, Q, ld);
    zero_rows(ctx, acc, bq, dh, ld);
    ctx.each(bq, [=](int64_t r) {
      m[r] = -m_inf<T>();
      l[r] = T(0);
    });
    const int64_t kend = g.key_end(i0 + bq);
    for (int64_t j0 = g.key_begin(i0); j0 < kend; j0 += kAttnTile) {
      const int64_t bk = tile_extent(kend, j0);
      ctx.sync();
      load_rows(ctx, k + g.k_off(b, h) + j0 * row, row, bk, dh, K, ld);
      load_rows(ctx, v + g.v_off(b, h) + j0 * row, row, bk, dh, V, ld);
      ctx.sync();
      tile_product<T>(
          ctx, bq, bk, dh, [=](int64_t r, int64_t d) { return Q[r * ld + d]; },
          [=](int64_t c, int64_t d) { return K[c * ld + d]; },
          [=](int64_t r, int64_t c, T x) { S[r * 65 + c] = g.score_of(b, h, i0 + r, j0 + c, x); });
      ctx.sync();
      ctx.each(bq, [=](int64_t r) {
        T* sr = S + r * 65;
        T mx = m[r];
        for (int64_t c = 0; c < bk; ++c) mx = sr[c] > mx ? sr[c] : mx;
        if (mx == -m_inf<T>()) {  // every key so far is masked
          for (int64_t c = 0; c < bk; ++c) sr[c] = T(0);
          corr[r] = T(1);
          return;
        }
        T sum = T(0);
        for (int64_t c = 0; c < bk; ++c) {
          sr[c] = m_exp(sr[c] - mx);
          sum += sr[c];
        }
        corr[r] = m_exp(m[r] - mx);  // 0 when m was -inf
        l[r] = l[r] * corr[r] + sum;
        m[r] = mx;
      });
      ctx.sync();
      tile_product<T>(
          ctx, bq, dh, bk, [=](int64_t r, int64_t c) { return S[r * 65 + c]; },
          [=](int64_t d, int64_t c) { return V[c * ld + d]; },
          [=](int64_t r, int64_t d, T x) { acc[r * ld + d] = acc[r * ld + d] * corr[r] + x; });
    }
    ctx.sync();
    T* ob = out + g.o_off(b, h) + i0 * g.out_row;
    const int64_t orow = g.out_row;
    ctx.each(bq * dh, [=](int64_t e) {
      const int64_t r = e / dh, d = e % dh;
      ob[r * orow + d] = l[r] > T(0) ? acc[r * ld + d] / l[r] : T(0);
    });
    T* lb = lse + task * g.Tq + i0;
    ctx.each(bq, [=](int64_t r) { lb[r] = l[r] > T(0) ? m[r] + m_log(l[r]) : -m_inf<T>(); });
  }
};

/// D = rowsum(dO * O) per (b, h, query row), the term every backward tile subtracts.
template <typename T>
struct AttnRowDotBody {
  AttnArgs<T> a;
  const T *out, *dout;
  T* D;  // (B, H, Tq)
  RPB_HD void operator()(int64_t n) const {
    const int64_t task = n / a.Tq, i = n % a.Tq;
    const int64_t off = a.o_off(task / a.H, task % a.H) + i * a.out_row;
    T s = T(0);
    for (int64_t d = 0; d < a.dh; ++d) s += dout[off + d] * out[off + d];
    D[n] = s;
  }
};

/// P (bq, bk) = exp(S - lse) of one tile into P, from Q and K in shared memory (rows ld apart).
template <typename T, typename Ctx>
RPB_HD void attn_probs(Ctx& ctx, const AttnArgs<T>& g, int64_t b, int64_t h, int64_t i0, int64_t bq, int64_t j0,
                       int64_t bk, const T* Q, const T* K, int64_t ld, const T* lse, T* P) {
  tile_product<T>(
      ctx, bq, bk, g.dh, [=](int64_t r, int64_t d) { return Q[r * ld + d]; },
      [=](int64_t c, int64_t d) { return K[c * ld + d]; },
      [=](int64_t r, int64_t c, T x) {
        const T s = g.score_of(b, h, i0 + r, j0 + c, x);
        P[r * 65 + c] = lse[r] == -m_inf<T>() ? T(0) : m_exp(s - lse[r]);
      });
}

/// dS (bq, bk) = P (dO V^T - D) into dS, from dO and V in shared memory.
template <typename T, typename Ctx>
RPB_HD void attn_dscores(Ctx& ctx, int64_t bq, int64_t bk, int64_t dh, const T* dO, const T* V, int64_t ld,
                         const T* P, const T* D, T* dS) {
  tile_product<T>(
      ctx, bq, bk, dh, [=](int64_t r, int64_t d) { return dO[r * ld + d]; },
      [=](int64_t c, int64_t d) { return V[c * ld + d]; },
      [=](int64_t r, int64_t c, T x) { dS[r * 65 + c] = P[r * 65 + c] * (x - D[r]); });
}

/// Loads the query-side tiles of query rows i0 .. i0 + bq - 1: Q, dO, lse and D.
template <typename T, typename Ctx>
RPB_HD void load_query_side(Ctx& ctx, const AttnArgs<T>& g, int64_t b, int64_t h, int64_t i0, int64_t bq,
                            const T* q, const T* dout, const T* lse, const T* D, T* Q, T* dO, T* L, T* Dr,
                            int64_t ld) {
  const int64_t task = b * g.H + h;
  load_rows(ctx, q + g.q_off(b, h) + i0 * g.in_row, g.in_row, bq, g.dh, Q, ld);
  load_rows(ctx, dout + g.o_off(b, h) + i0 * g.out_row, g.out_row, bq, g.dh, dO, ld);
  const T* lt = lse + task * g.Tq + i0;
  const T* dt = D + task * g.Tq + i0;
  ctx.each(bq, [=](int64_t r) {
    L[r] = lt[r];
    Dr[r] = dt[r];
  });
}

/// Writes a tile's (n, dh) rows times `scale` to dst (rows `stride` apart).
template <typename T, typename Ctx>
RPB_HD void store_rows(Ctx& ctx, const T* tile, int64_t ld, int64_t n, int64_t dh, T scale, T* dst, int64_t stride) {
  ctx.each(n * dh, [=](int64_t e) { dst[(e / dh) * stride + e % dh] = tile[(e / dh) * ld + e % dh] * scale; });
}

/// Backward, dK and dV: one block per (b, h, key tile), over every query tile that sees one of its keys, in order.
template <typename T>
struct AttnBackwardKVBody {
  AttnArgs<T> a;
  const T *q, *k, *v, *dout, *lse, *D;
  T *dk, *dv;
  template <typename Ctx>
  RPB_HD void operator()(int64_t blk, Ctx& ctx, unsigned char* smem) const {
    const AttnArgs<T> g = a;
    const TileOf t = tile_of(blk, g.k_tiles(), g.H, g.Tk);
    const int64_t b = t.b, h = t.h, j0 = t.start, bk = t.n, dh = g.dh;
    AttnSmem<T> sm(smem, dh);
    T *K = sm.a, *V = sm.b, *dK = sm.c, *dV = sm.d, *Q = sm.e, *dO = sm.f, *P = sm.s, *dS = sm.p, *L = sm.r0,
      *Dr = sm.r1;
    const int64_t ld = sm.ld, row = g.in_row;
    load_rows(ctx, k + g.k_off(b, h) + j0 * row, row, bk, dh, K, ld);
    load_rows(ctx, v + g.v_off(b, h) + j0 * row, row, bk, dh, V, ld);
    zero_rows(ctx, dK, bk, dh, ld);
    zero_rows(ctx, dV, bk, dh, ld);
    for (int64_t i0 = 0; i0 < g.Tq; i0 += kAttnTile) {
      const int64_t bq = tile_extent(g.Tq, i0);
      // The keys this query tile reads (as the forward's loop): skip it when they miss this key tile.
      if (g.key_end(i0 + bq) <= j0 || g.key_begin(i0) >= j0 + bk) continue;
      ctx.sync();
      load_query_side(ctx, g, b, h, i0, bq, q, dout, lse, D, Q, dO, L, Dr, ld);
      ctx.sync();
      attn_probs(ctx, g, b, h, i0, bq, j0, bk, Q, K, ld, L, P);
      ctx.sync();
      tile_product<T>(
          ctx, bk, dh, bq, [=](int64_t c, int64_t r) { return P[r * 65 + c]; },
          [=](int64_t d, int64_t r) { return dO[r * ld + d]; },
          [=](int64_t c, int64_t d, T x) { dV[c * ld + d] += x; });
      attn_dscores(ctx, bq, bk, dh, dO, V, ld, P, Dr, dS);
      ctx.sync();
      tile_product<T>(
          ctx, bk, dh, bq, [=](int64_t c, int64_t r) { return dS[r * 65 + c]; },
          [=](int64_t d, int64_t r) { return Q[r * ld + d]; },
          [=](int64_t c, int64_t d, T x) { dK[c * ld + d] += x; });
    }
    ctx.sync();
    store_rows(ctx, dK, ld, bk, dh, g.scale, dk + g.k_off(b, h) + j0 * row, row);
    store_rows(ctx, dV, ld, bk, dh, T(1), dv + g.v_off(b, h) + j0 * row, row);
  }
};

/// Backward, dQ and the bias's sums: one block per (b, h, query tile) of the query tiles tile0 .. tile0 + tiles - 1
/// (a chunk; the partial sums of a chunk fit a fixed budget), over the tile's keys in order.
///   rel_part (chunk blocks, Tk + 63): the block's sums of dS per offset column, from its lowest column
///     key_begin - (i0 + bq - 1) + Tq - 1 on; null without a table.
///   ratio_rows (B, H, 64 tiles, row_slots): per query row, the ratio bias's sums; null without one.
template <typename T>
struct AttnBackwardQBody {
  AttnArgs<T> a;
  const T *q, *k, *v, *dout, *lse, *D;
  T* dq;
  double* rel_part;
  double* ratio_rows;
  int64_t tile0, tiles;
  template <typename Ctx>
  RPB_HD void operator()(int64_t blk, Ctx& ctx, unsigned char* smem) const {
    const AttnArgs<T> g = a;
    const TileOf t = tile_of(blk, tiles, g.H, g.Tq, tile0);
    const int64_t task = t.task, b = t.b, h = t.h, i0 = t.start, bq = t.n, dh = g.dh;
    AttnSmem<T> sm(smem, dh);
    T *Q = sm.a, *dO = sm.b, *dQ = sm.c, *K = sm.d, *V = sm.e, *P = sm.s, *dS = sm.p, *L = sm.r0, *Dr = sm.r1;
    const int64_t ld = sm.ld, row = g.in_row;
    load_query_side(ctx, g, b, h, i0, bq, q, dout, lse, D, Q, dO, L, Dr, ld);
    zero_rows(ctx, dQ, bq, dh, ld);
    const int64_t kbeg = g.key_begin(i0), kend = g.key_end(i0 + bq);
    const int64_t col0 = kbeg - (i0 + bq - 1) + g.Tq - 1;  // the block's lowest offset column
    double* part = rel_part ? rel_part + blk * (g.Tk + kAttnTile - 1) : nullptr;
    const int64_t width = g.Tk + kAttnTile - 1;
    if (part) ctx.each(width, [=](int64_t c) { part[c] = 0.0; });
    const int64_t slots = g.has_ratio ? g.ratio.row_slots() : 0;
    double* rows = ratio_rows ? ratio_rows + (task * kAttnTile * tiles + (blk % tiles) * kAttnTile) * slots : nullptr;
    if (rows) ctx.each(bq * slots, [=](int64_t e) { rows[e] = 0.0; });
    for (int64_t j0 = kbeg; j0 < kend; j0 += kAttnTile) {
      const int64_t bk = tile_extent(kend, j0);
      ctx.sync();
      load_rows(ctx, k + g.k_off(b, h) + j0 * row, row, bk, dh, K, ld);
      load_rows(ctx, v + g.v_off(b, h) + j0 * row, row, bk, dh, V, ld);
      ctx.sync();
      attn_probs(ctx, g, b, h, i0, bq, j0, bk, Q, K, ld, L, P);
      ctx.sync();
      attn_dscores(ctx, bq, bk, dh, dO, V, ld, P, Dr, dS);
      ctx.sync();
      tile_product<T>(
          ctx, bq, dh, bk, [=](int64_t r, int64_t c) { return dS[r * 65 + c]; },
          [=](int64_t d, int64_t c) { return K[c * ld + d]; },
          [=](int64_t r, int64_t d, T x) { dQ[r * ld + d] += x; });
      if (part) {
        // Diagonal o of the tile (c - r = o - (bq - 1)) is offset column j0 - i0 + Tq - 1 + o - (bq - 1).
        const int64_t base = j0 - i0 - (bq - 1) + g.Tq - 1 - col0;
        ctx.each(bq + bk - 1, [=](int64_t o) {
          double s = 0.0;
          for (int64_t r = 0; r < bq; ++r) {
            const int64_t c = o - (bq - 1) + r;
            if (c >= 0 && c < bk) s += static_cast<double>(dS[r * 65 + c]);
          }
          part[base + o] += s;
        });
      }
      if (rows) {
        const RatioBiasArgs f = g.ratio;
        const int64_t nb = f.buckets();
        ctx.each(bq, [=](int64_t r) {
          double* acc = rows + r * slots;
          const int64_t i = i0 + r;
          for (int64_t c = 0; c < bk; ++c) {
            const double gs = static_cast<double>(dS[r * 65 + c]);
            if (gs == 0.0) continue;  // a masked score, or no gradient
            int64_t d = g.q_offset + i - (j0 + c);
            d = d < 0 ? -d : d;
            const double x = f.ratio(i, d);
            const int64_t kb = f.bucket(x);
            acc[kb] += gs;
            acc[nb + kb] += gs * x;
            const double e = gs * f.slope[kb * g.H + h];
            acc[2 * nb] += e * f.du[d];
            acc[2 * nb + 1] += e * x;
          }
        });
      }
    }
    ctx.sync();
    store_rows(ctx, dQ, ld, bq, dh, g.scale, dq + g.q_off(b, h) + i0 * row, row);
  }
};

/// Adds a chunk's partial sums of the table's gradient to drel (H, R) in double: per column, over the batch and
/// then the chunk's query tiles, in order.
template <typename T>
struct AttnRelSumBody {
  AttnArgs<T> a;
  const double* part;  // (B, H, tiles, Tk + 63)
  double* drel;        // (H, R)
  int64_t tile0, tiles;
  RPB_HD void operator()(int64_t n) const {
    const int64_t h = n / a.R, col = n % a.R, width = a.Tk + kAttnTile - 1;
    double s = drel[n];
    for (int64_t b = 0; b < a.B; ++b)
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t i0 = (tile0 + t) * kAttnTile, bq = tile_extent(a.Tq, i0);
        const int64_t kbeg = a.key_begin(i0), kend = a.key_end(i0 + bq);
        if (kbeg >= kend) continue;
        const int64_t c = col - (kbeg - (i0 + bq - 1) + a.Tq - 1);
        if (c >= 0 && c < kend - kbeg + bq - 1) s += part[((b * a.H + h) * tiles + t) * width + c];
      }
    drel[n] = s;
  }
};

/// Adds a chunk's per-row sums of the ratio bias to acc (H, 2 buckets + 2 Tq), the layout of the tiles'
/// grad_slots: G0 and G1 summed over the batch and the rows in order, A and B per row over the batch.
template <typename T>
struct AttnRatioSumBody {
  AttnArgs<T> a;
  const double* rows;  // (B, H, tiles * 64, row_slots)
  double* acc;
  int64_t tile0, tiles;
  RPB_HD void operator()(int64_t n) const {
    const int64_t nb = a.ratio.buckets(), slots = a.ratio.row_slots(), head_slots = 2 * nb + 2 * a.Tq;
    const int64_t h = n / head_slots, e = n % head_slots, rows_in = tiles * kAttnTile;
    const int64_t first = tile0 * kAttnTile;
    const int64_t last = first + rows_in < a.Tq ? first + rows_in : a.Tq;  // rows first .. last - 1 are here
    double s = acc[n];
    if (e < 2 * nb) {
      for (int64_t b = 0; b < a.B; ++b)
        for (int64_t r = 0; r < last - first; ++r) s += rows[((b * a.H + h) * rows_in + r) * slots + e];
    } else {
      const int64_t which = (e - 2 * nb) / a.Tq, i = (e - 2 * nb) % a.Tq;
      if (i < first || i >= last) return;
      for (int64_t b = 0; b < a.B; ++b) s += rows[((b * a.H + h) * rows_in + i - first) * slots + 2 * nb + which];
    }
    acc[n] = s;
  }
};

}  // namespace rpb::cuda

// rpb/core/cuda/kernels/index.h: index_select (embedding and bias-table lookup) and gather with their backwards,
// and dropout's counter-based masks. The backwards sum repeated indices without atomics: index_select's sorts the
// positions by index (count, scan, place: each in a fixed order) and sums each row's positions in order, as the
// CPU's serial loop does, so the bits equal the CPU's and never change run to run.
#pragma once

#include <cstdint>

#include "core/cuda/backend.h"
#include "core/cuda/hd.h"

namespace rpb::cuda {

template <typename T>
struct IndexSelectBody {
  const T* table;
  const int64_t* idx;
  T* out;
  int64_t row;
  RPB_HD void operator()(int64_t e) const { out[e] = table[idx[e / row] * row + e % row]; }
};

/// count[v] = how many of the n indices equal v (one thread per table row).
struct IndexCountBody {
  const int64_t* idx;
  int64_t n;
  int64_t* count;
  RPB_HD void operator()(int64_t v) const {
    int64_t c = 0;
    for (int64_t i = 0; i < n; ++i) c += idx[i] == v;
    count[v] = c;
  }
};

/// start[v] = count[0] + ... + count[v - 1], start[rows] = n (one thread).
struct ExclusiveScanBody {
  const int64_t* count;
  int64_t rows;
  int64_t* start;
  RPB_HD void operator()(int64_t) const {
    int64_t s = 0;
    for (int64_t v = 0; v < rows; ++v) {
      start[v] = s;
      s += count[v];
    }
    start[rows] = s;
  }
};

/// pos[start[v] ...] = the positions i with idx[i] == v, ascending (one thread per table row).
struct IndexPlaceBody {
  const int64_t* idx;
  const int64_t* start;
  int64_t n;
  int64_t* pos;
  RPB_HD void operator()(int64_t v) const {
    int64_t k = start[v];
    for (int64_t i = 0; i < n; ++i)
      if (idx[i] == v) pos[k++] = i;
  }
};

/// gt[v, c] = sum of g[i, c] over the sorted positions i of row v, in order from 0.
template <typename T>
struct IndexSumBody {
  const T* g;
  const int64_t* start;
  const int64_t* pos;
  T* gt;
  int64_t row;
  RPB_HD void operator()(int64_t e) const {
    const int64_t v = e / row, c = e % row;
    T acc = T(0);
    for (int64_t k = start[v]; k < start[v + 1]; ++k) acc += g[pos[k] * row + c];
    gt[e] = acc;
  }
};

template <typename T>
struct GatherBody {
  const T* x;
  const int64_t* idx;
  T* out;
  GatherPlan plan;
  RPB_HD void operator()(int64_t i) const {
    int64_t rem = i, off = 0;
    for (int d = plan.nd - 1; d >= 0; --d) {
      const int64_t digit = rem % plan.ext[d];
      rem /= plan.ext[d];
      off += (d == plan.axis ? idx[i] : digit) * plan.xst[d];
    }
    out[i] = x[off];
  }
};

/// gx at each of x's positions: the sum of g over the index entries along the axis that point at it, in order.
template <typename T>
struct GatherBackwardBody {
  const T* g;
  const int64_t* idx;
  T* gx;
  GatherPlan plan;     // the index's extents
  int64_t xext[kMaxDims];  // x's extents
  RPB_HD void operator()(int64_t e) const {
    int64_t rem = e, base = 0, stride = 1, axis_stride = 0, j = 0;
    bool inside = true;
    for (int d = plan.nd - 1; d >= 0; --d) {  // the index offset of x's position with the axis coordinate 0
      const int64_t digit = rem % xext[d];
      rem /= xext[d];
      if (d == plan.axis) {
        j = digit;
        axis_stride = stride;
      } else {
        inside = inside && digit < plan.ext[d];
        base += digit * stride;
      }
      stride *= plan.ext[d];
    }
    T acc = T(0);
    if (inside)
      for (int64_t a = 0; a < plan.ext[plan.axis]; ++a) {
        const int64_t k = base + a * axis_stride;
        if (idx[k] == j) acc += g[k];
      }
    gx[e] = acc;
  }
};

// ---- Philox-4x32-10 (Salmon et al. 2011, "Parallel random numbers: as easy as 1, 2, 3"), as cuRAND and JAX ----
RPB_HD inline void philox_round(uint32_t c[4], const uint32_t k[2]) {
  const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c[0];
  const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c[2];
  const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
  const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
  const uint32_t c1 = c[1], c3 = c[3];
  c[0] = hi1 ^ c1 ^ k[0];
  c[1] = lo1;
  c[2] = hi0 ^ c3 ^ k[1];
  c[3] = lo0;
}

/// Philox-4x32-10 of counter c under key k, in place (the known-answer vectors of Random123's kat_vectors hold).
RPB_HD inline void philox4x32_10(uint32_t c[4], uint32_t k0, uint32_t k1) {
  uint32_t k[2] = {k0, k1};
  for (int r = 0; r < 10; ++r) {
    philox_round(c, k);
    k[0] += 0x9E3779B9u;
    k[1] += 0xBB67AE85u;
  }
}

/// Uniform in [0, 1) with 53 bits, from Philox keyed by `key` at counter `i`.
RPB_HD inline double philox_uniform(uint64_t key, uint64_t i) {
  uint32_t c[4] = {static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), 0u, 0u};
  philox4x32_10(c, static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
  const uint64_t bits = (static_cast<uint64_t>(c[0]) << 32 | c[1]) >> 11;
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);  // 2^-53
}

template <typename T>
struct DropoutBody {
  const T* x;
  T* out;
  T* mask;
  double p;
  T scale;
  uint64_t key;
  RPB_HD void operator()(int64_t i) const {
    const T m = philox_uniform(key, static_cast<uint64_t>(i)) >= p ? scale : T(0);
    mask[i] = m;
    out[i] = x[i] * m;
  }
};

}  // namespace rpb::cuda

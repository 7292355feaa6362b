// rpb/core/cuda/block_reduce.h: the fixed reduction order every CUDA kernel of rpb uses, shared by the GPU's thread
// blocks (core/cuda/exec_device.cuh) and the host launcher that replays them (core/cuda/exec_host.h).
//
// A block of kBlock threads reduces n terms: thread t first folds the terms t, t + kBlock, t + 2 kBlock, ... in
// that order, then the kBlock partials are combined by a tree, partial[t] op= partial[t + s] for s = kBlock / 2,
// ..., 1. The order depends on n alone, never on timing: no atomics, and the same inputs give the same bits on
// every run (llm.c's rule). Larger sums are split into such blocks and their partials reduced the same way.
#pragma once

#include <cstdint>

#include "core/cuda/hd.h"

namespace rpb::cuda {

/// A maximum with the position it was found at. Combining keeps the larger value, a NaN over any number (NaN
/// propagates, as torch.max), and the smaller position on ties: an order-independent rule, so the result is the
/// first maximal element (or the first NaN) whatever the tree's shape.
template <typename T>
struct ArgMax {
  T v;
  int64_t i;
};

template <typename T>
RPB_HD inline ArgMax<T> better(const ArgMax<T>& a, const ArgMax<T>& b) {
  const bool na = m_isnan(a.v), nb = m_isnan(b.v);
  if (na || nb) {
    if (na && nb) return a.i <= b.i ? a : b;
    return na ? a : b;
  }
  if (a.v != b.v) return a.v > b.v ? a : b;
  return a.i <= b.i ? a : b;
}

/// The reductions a row kernel's body asks of its block context.
struct SumOp {
  template <typename T>
  RPB_HD static T identity() {
    return T(0);
  }
  template <typename T>
  RPB_HD static T combine(T a, T b) {
    return a + b;
  }
};
/// NaN-propagating maximum.
struct MaxOp {
  template <typename T>
  RPB_HD static T identity() {
    return -m_inf<T>();
  }
  template <typename T>
  RPB_HD static T combine(T a, T b) {
    if (m_isnan(a)) return a;
    if (m_isnan(b)) return b;
    return a >= b ? a : b;
  }
};
/// Minimum of integers (the first position where a test holds).
struct MinIndexOp {
  template <typename T>
  RPB_HD static T identity() {
    return INT64_MAX;
  }
  template <typename T>
  RPB_HD static T combine(T a, T b) {
    return a <= b ? a : b;
  }
};
struct ArgMaxOp {
  template <typename A>
  RPB_HD static A identity() {
    return A{-m_inf<decltype(A{}.v)>(), INT64_MAX};
  }
  template <typename A>
  RPB_HD static A combine(const A& a, const A& b) {
    return better(a, b);
  }
};

/// The reductions a row body asks of its block context, written once over the context's `reduce<Op, T>(n, g)`
/// (the GPU's in shared memory, DeviceRowCtx; the host's replay, HostRowCtx).
template <typename Ctx>
struct RowReductions {
  template <typename T, typename G>
  RPB_HD T sum(int64_t n, const G& g) {
    return self().template reduce<SumOp, T>(n, g);
  }
  /// NaN-propagating maximum.
  template <typename T, typename G>
  RPB_HD T max(int64_t n, const G& g) {
    return self().template reduce<MaxOp, T>(n, g);
  }
  /// The first maximal g(j) (or the first NaN) and its j.
  template <typename T, typename G>
  RPB_HD ArgMax<T> argmax(int64_t n, const G& g) {
    return self().template reduce<ArgMaxOp, ArgMax<T>>(n, [&](int64_t j) { return ArgMax<T>{g(j), j}; });
  }
  /// The smallest j < n with pred(j), or n when none.
  template <typename G>
  RPB_HD int64_t first(int64_t n, const G& pred) {
    const int64_t r = self().template reduce<MinIndexOp, int64_t>(n, [&](int64_t j) { return pred(j) ? j : INT64_MAX; });
    return r == INT64_MAX ? n : r;
  }

 private:
  RPB_HD Ctx& self() { return static_cast<Ctx&>(*this); }
};

}  // namespace rpb::cuda

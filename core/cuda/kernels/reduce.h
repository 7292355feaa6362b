// rpb/core/cuda/kernels/reduce.h: reductions over axes (sum, max with its position, max's backward) and the
// whole-tensor sums of the optimizers (squares for gradient clipping, finiteness). One thread block per output
// element; its terms are added in core/cuda/block_reduce.h's fixed order.
#pragma once

#include <cstdint>

#include "core/cuda/backend.h"
#include "core/cuda/block_reduce.h"

namespace rpb::cuda {

/// The input offset of output `o` (kept axes) and of term `j` (reduced axes) of a ReducePlan.
RPB_HD inline int64_t plan_offset(int n, const int64_t* ext, const int64_t* st, int64_t i) {
  int64_t off = 0;
  for (int d = n - 1; d >= 0; --d) {
    off += (i % ext[d]) * st[d];
    i /= ext[d];
  }
  return off;
}

template <typename T>
struct ReduceSumBody {
  const T* x;
  T* out;
  ReducePlan plan;
  template <typename Ctx>
  RPB_HD void operator()(int64_t o, Ctx& ctx) const {
    const T* base = x + plan_offset(plan.nk, plan.kext, plan.kst, o);
    const ReducePlan* p = &plan;
    const T s = ctx.template sum<T>(plan.r, [=](int64_t j) { return base[plan_offset(p->nr, p->rext, p->rst, j)]; });
    T* dst = out + o;
    ctx.each(1, [=](int64_t) { *dst = s; });
  }
};

template <typename T>
struct ReduceMaxBody {
  const T* x;
  T* out;
  int64_t* arg;  // may be null
  ReducePlan plan;
  template <typename Ctx>
  RPB_HD void operator()(int64_t o, Ctx& ctx) const {
    const T* base = x + plan_offset(plan.nk, plan.kext, plan.kst, o);
    const ReducePlan* p = &plan;
    const ArgMax<T> m =
        ctx.template argmax<T>(plan.r, [=](int64_t j) { return base[plan_offset(p->nr, p->rext, p->rst, j)]; });
    T* dst = out + o;
    int64_t* a = arg ? arg + o : nullptr;
    ctx.each(1, [=](int64_t) {
      *dst = m.v;
      if (a) *a = m.i;
    });
  }
};

template <typename T>
struct MaxBackwardBody {
  const T* g;
  const int64_t* arg;
  T* gx;
  int64_t n, inner;
  RPB_HD void operator()(int64_t e) const {  // e over outer x inner
    const int64_t o = e / inner, i = e % inner;
    gx[(o * n + arg[e]) * inner + i] = g[e];
  }
};

/// Partial sums of squares in float64 over chunks of `chunk` elements (one block each), then one block adds the
/// partials in order: a whole-tensor sum in a fixed order.
template <typename T>
struct SquaresChunkBody {
  const T* x;
  int64_t n, chunk;
  double* part;
  template <typename Ctx>
  RPB_HD void operator()(int64_t b, Ctx& ctx) const {
    const int64_t begin = b * chunk, len = (n - begin) < chunk ? (n - begin) : chunk;
    const T* base = x + begin;
    const double s = ctx.template sum<double>(len, [=](int64_t j) {
      const double v = static_cast<double>(base[j]);
      return v * v;
    });
    double* dst = part + b;
    ctx.each(1, [=](int64_t) { *dst = s; });
  }
};

/// One block adds n float64 values (or int64 counts) into *out.
template <typename T>
struct SumAllBody {
  const T* x;
  int64_t n;
  T* out;
  template <typename Ctx>
  RPB_HD void operator()(int64_t, Ctx& ctx) const {
    const T* src = x;
    const T s = ctx.template sum<T>(n, [=](int64_t j) { return src[j]; });
    T* dst = out;
    ctx.each(1, [=](int64_t) { *dst = s; });
  }
};

/// One block writes 1 to *out when every element is finite, else 0.
template <typename T>
struct AllFiniteBody {
  const T* x;
  int64_t n;
  int64_t* out;
  template <typename Ctx>
  RPB_HD void operator()(int64_t, Ctx& ctx) const {
    const T* src = x;
    const int64_t bad = ctx.first(n, [=](int64_t j) { return !m_isfinite(src[j]); });
    int64_t* dst = out;
    const int64_t total = n;
    ctx.each(1, [=](int64_t) { *dst = bad == total ? 1 : 0; });
  }
};

}  // namespace rpb::cuda

// rpb/core/cuda/kernels/rows.h: the row kernels of the CUDA backend, one thread block per row: softmax and
// log_softmax over any axis, layer norm and its backward, cross-entropy and its backward. Each follows its CPU op
// (core/ops/softmax.cpp, norm.cpp, loss.cpp) formula for formula; the sums follow core/cuda/block_reduce.h.
#pragma once

#include <cstdint>

#include "core/cuda/block_reduce.h"

namespace rpb::cuda {

/// The first element of group `row` of an (outer, n, inner) tensor whose groups run along n at stride inner.
RPB_HD inline int64_t group_base(int64_t row, int64_t n, int64_t inner) { return (row / inner) * n * inner + row % inner; }

/// softmax over n elements at stride `inner`, for each of outer x inner groups. A group of only -inf gives zeros.
template <typename T>
struct SoftmaxBody {
  const T* x;
  T* y;
  int64_t n, inner;
  bool log;
  template <typename Ctx>
  RPB_HD void operator()(int64_t row, Ctx& ctx) const {
    const int64_t base = group_base(row, n, inner), st = inner;
    const T* xr = x + base;
    T* yr = y + base;
    const T m = ctx.template max<T>(n, [=](int64_t j) { return xr[j * st]; });
    if (m == -m_inf<T>()) {
      ctx.each(n, [=](int64_t j) { yr[j * st] = T(0); });
      return;
    }
    const T s = ctx.template sum<T>(n, [=](int64_t j) { return m_exp(xr[j * st] - m); });
    if (log) {
      const T lse = m + m_log(s);
      ctx.each(n, [=](int64_t j) { yr[j * st] = xr[j * st] - lse; });
    } else {
      const T inv = T(1) / s;
      ctx.each(n, [=](int64_t j) { yr[j * st] = m_exp(xr[j * st] - m) * inv; });
    }
  }
};

/// softmax: dx = y (g - sum(g y)); log_softmax: dx = g - exp(y) sum(g), zero for a group of all-zero outputs
/// (an all -inf input).
template <typename T>
struct SoftmaxBackwardBody {
  const T* g;
  const T* y;
  T* dx;
  int64_t n, inner;
  bool log;
  template <typename Ctx>
  RPB_HD void operator()(int64_t row, Ctx& ctx) const {
    const int64_t base = group_base(row, n, inner), st = inner;
    const T* gr = g + base;
    const T* yr = y + base;
    T* dr = dx + base;
    if (!log) {
      const T dot = ctx.template sum<T>(n, [=](int64_t j) { return gr[j * st] * yr[j * st]; });
      ctx.each(n, [=](int64_t j) { dr[j * st] = yr[j * st] * (gr[j * st] - dot); });
      return;
    }
    if (ctx.first(n, [=](int64_t j) { return yr[j * st] != T(0); }) == n) {
      ctx.each(n, [=](int64_t j) { dr[j * st] = T(0); });
      return;
    }
    const T gs = ctx.template sum<T>(n, [=](int64_t j) { return gr[j * st]; });
    ctx.each(n, [=](int64_t j) { dr[j * st] = gr[j * st] - m_exp(yr[j * st]) * gs; });
  }
};

/// Layer norm of each row of C: saves mean and rstd (biased variance, as torch).
template <typename T>
struct LayerNormBody {
  const T* x;
  const T* w;  // may be null
  const T* b;  // may be null
  T* y;
  T* mean;
  T* rstd;
  int64_t C;
  T eps;
  template <typename Ctx>
  RPB_HD void operator()(int64_t r, Ctx& ctx) const {
    const T* xr = x + r * C;
    T* yr = y + r * C;
    const T mu = ctx.template sum<T>(C, [=](int64_t j) { return xr[j]; }) / T(C);
    const T var = ctx.template sum<T>(C, [=](int64_t j) {
      const T d = xr[j] - mu;
      return d * d;
    }) / T(C);
    const T rs = T(1) / m_sqrt(var + eps);
    T *pm = mean + r, *pr = rstd + r;
    ctx.each(1, [=](int64_t) {
      *pm = mu;
      *pr = rs;
    });
    const T *pw = w, *pb = b;
    ctx.each(C, [=](int64_t j) {
      T v = (xr[j] - mu) * rs;
      if (pw) v = v * pw[j];
      if (pb) v = v + pb[j];
      yr[j] = v;
    });
  }
};

/// dx = rstd (dn - mean(dn) - xhat mean(dn xhat)) with dn = g w, per row.
template <typename T>
struct LayerNormDxBody {
  const T *g, *x, *w, *mean, *rstd;
  T* dx;
  int64_t C;
  template <typename Ctx>
  RPB_HD void operator()(int64_t r, Ctx& ctx) const {
    const T *gr = g + r * C, *xr = x + r * C, *pw = w;
    const T mu = mean[r], rs = rstd[r];
    T* dr = dx + r * C;
    const T a = ctx.template sum<T>(C, [=](int64_t j) { return pw ? gr[j] * pw[j] : gr[j]; }) / T(C);
    const T b = ctx.template sum<T>(C, [=](int64_t j) {
      const T dn = pw ? gr[j] * pw[j] : gr[j];
      return dn * ((xr[j] - mu) * rs);
    }) / T(C);
    ctx.each(C, [=](int64_t j) {
      const T dn = pw ? gr[j] * pw[j] : gr[j];
      dr[j] = rs * (dn - a - ((xr[j] - mu) * rs) * b);
    });
  }
};

/// dw[c] = sum over rows of g xhat, db[c] = sum over rows of g: one block per column, rows in order.
template <typename T>
struct LayerNormDwBody {
  const T *g, *x, *mean, *rstd;
  T *dw, *db;  // either may be null
  int64_t R, C;
  template <typename Ctx>
  RPB_HD void operator()(int64_t c, Ctx& ctx) const {
    const T *pg = g + c, *px = x ? x + c : nullptr, *pm = mean, *pr = rstd;
    const int64_t cols = C;
    if (dw) {
      const T s = ctx.template sum<T>(R, [=](int64_t r) { return pg[r * cols] * ((px[r * cols] - pm[r]) * pr[r]); });
      T* dst = dw + c;
      ctx.each(1, [=](int64_t) { *dst = s; });
    }
    if (db) {
      const T s = ctx.template sum<T>(R, [=](int64_t r) { return pg[r * cols]; });
      T* dst = db + c;
      ctx.each(1, [=](int64_t) { *dst = s; });
    }
  }
};

/// Per row: its log-sum-exp, its loss lse - x[target] in float64 and whether it counts (target != ignore).
template <typename T>
struct CrossEntropyRowBody {
  const T* x;
  const int64_t* target;
  T* lse;
  double* loss;
  int64_t* counted;
  int64_t C, ignore;
  template <typename Ctx>
  RPB_HD void operator()(int64_t r, Ctx& ctx) const {
    const int64_t t = target[r];
    T *pl = lse + r;
    double* ploss = loss + r;
    int64_t* pc = counted + r;
    if (t == ignore) {
      ctx.each(1, [=](int64_t) {
        *pl = T(0);
        *ploss = 0.0;
        *pc = 0;
      });
      return;
    }
    const T* xr = x + r * C;
    const T m = ctx.template max<T>(C, [=](int64_t j) { return xr[j]; });
    const T s = ctx.template sum<T>(C, [=](int64_t j) { return m_exp(xr[j] - m); });
    const T l = m + m_log(s);
    ctx.each(1, [=](int64_t) {
      *pl = l;
      *ploss = static_cast<double>(l) - static_cast<double>(xr[t]);
      *pc = 1;
    });
  }
};

/// One block: the mean of the counted rows' losses into *out (0 when none counts), their number into *count.
template <typename T>
struct CrossEntropyMeanBody {
  const double* loss;
  const int64_t* counted;
  int64_t R;
  T* out;
  int64_t* count;
  template <typename Ctx>
  RPB_HD void operator()(int64_t, Ctx& ctx) const {
    const double* pl = loss;
    const int64_t* pc = counted;
    const double total = ctx.template sum<double>(R, [=](int64_t j) { return pl[j]; });
    const int64_t n = ctx.template sum<int64_t>(R, [=](int64_t j) { return pc[j]; });
    T* po = out;
    int64_t* pn = count;
    ctx.each(1, [=](int64_t) {
      *po = static_cast<T>(n > 0 ? total / static_cast<double>(n) : 0.0);
      *pn = n;
    });
  }
};

template <typename T>
struct CrossEntropyBackwardBody {
  const T *x, *lse, *g;
  const int64_t *target, *count;
  T* dx;
  int64_t C, ignore;
  RPB_HD void operator()(int64_t e) const {
    const int64_t r = e / C, c = e % C, t = target[r], n = *count;
    if (t == ignore || n == 0) {
      dx[e] = T(0);
      return;
    }
    const T scale = static_cast<T>(static_cast<double>(*g) / static_cast<double>(n));
    T v = m_exp(x[e] - lse[r]) * scale;
    if (c == t) v -= scale;
    dx[e] = v;
  }
};

}  // namespace rpb::cuda

// rpb/core/cuda/kernels/optim.h: the optimizers' per-element updates (optim/adam.cpp and optim/sgd.cpp's
// arithmetic, constant for constant) and the host reference of the batched product that cuBLAS computes on a GPU.
#pragma once

#include <cstdint>

#include "core/cuda/backend.h"
#include "core/cuda/hd.h"

namespace rpb::cuda {

template <typename T>
struct AdamBody {
  T* p;
  const T* g;
  T* m;
  T* v;
  T b1, b2, ob1, ob2, wd, decay, step_size, sqrt_bc2, eps;  // decay = 1 - lr wd
  bool coupled, decoupled;
  RPB_HD void operator()(int64_t i) const {
    T gi = g[i];
    if (coupled) gi = gi + wd * p[i];
    const T mi = b1 * m[i] + ob1 * gi;
    const T vi = b2 * v[i] + ob2 * (gi * gi);
    m[i] = mi;
    v[i] = vi;
    T pi = p[i];
    if (decoupled) pi *= decay;
    p[i] = pi - step_size * mi / (m_sqrt(vi) / sqrt_bc2 + eps);
  }
};

template <typename T>
struct SgdBody {
  T* p;
  const T* g;
  T* vel;  // null without momentum
  T lr, wd, momentum;
  bool first;
  RPB_HD void operator()(int64_t i) const {
    T d = wd != T(0) ? g[i] + wd * p[i] : g[i];
    if (vel) {
      d = first ? d : momentum * vel[i] + d;
      vel[i] = d;
    }
    p[i] -= lr * d;
  }
};

/// One element of C = op(A) op(B) (+ C), row-major with strided batches: the host's reference for cuBLAS's
/// product, in the emulated backend (the K terms in order, from 0).
template <typename T>
struct GemmBody {
  Gemm s;
  const T* a;
  const T* b;
  T* c;
  RPB_HD void operator()(int64_t e) const {
    const int64_t mn = s.m * s.n, bi = e / mn, i = (e % mn) / s.n, j = e % s.n;
    const T* pa = a + bi * s.sa;
    const T* pb = b + bi * s.sb;
    T acc = T(0);
    for (int64_t k = 0; k < s.k; ++k) {
      const T x = s.ta ? pa[k * s.lda + i] : pa[i * s.lda + k];
      const T y = s.tb ? pb[j * s.ldb + k] : pb[k * s.ldb + j];
      acc += x * y;
    }
    T* pc = c + bi * s.sc + i * s.ldc + j;
    *pc = s.accumulate ? *pc + acc : acc;
  }
};

}  // namespace rpb::cuda

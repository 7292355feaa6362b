// rpb/core/cuda/backend_impl.h: the kernel entry points of cuda::Backend, written once over a launcher: the GPU's
// (DeviceExec, core/cuda/backend_gpu.cu) or the host's (HostExec, core/cuda/backend_emulated.cpp). Memory and the
// product (cuBLAS or its host reference) are the two backends' own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/cuda/backend.h"
#include "core/cuda/kernels/elementwise.h"
#include "core/cuda/kernels/index.h"
#include "core/cuda/kernels/optim.h"
#include "core/cuda/kernels/reduce.h"
#include "core/cuda/kernels/rows.h"
#include "core/dtype_dispatch.h"
#include "core/error.h"

namespace rpb::cuda {

/// A temporary device buffer for one call, returned to the cache when the call ends (kernels on one stream run
/// in order, so the next user of the block runs after the kernels that read it).
class Scratch {
 public:
  Scratch(Backend& b, std::size_t bytes) : b_(b), bytes_(bytes), p_(b.allocate(bytes)) {}
  ~Scratch() { b_.release(p_, bytes_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  Backend& b_;
  std::size_t bytes_;
  void* p_;
};

template <typename Exec>
class BackendImpl : public Backend {
 public:
  void fill(DType d, void* p, int64_t n, double value) override {
    dispatch_all(d, "fill", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.each(n, FillBody<T>{static_cast<T*>(p), static_cast<T>(value)});
    });
  }
  void cast(DType xd, const void* x, DType yd, void* y, int64_t n) override {
    dispatch_all(xd, "cast", [&](auto xt) {
      dispatch_all(yd, "cast", [&](auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        exec_.each(n, CastBody<X, Y>{static_cast<const X*>(x), static_cast<Y*>(y)});
      });
    });
  }
  void unary(UnaryFn f, double s, DType d, const void* x, void* y, int64_t n) override {
    dispatch_float(d, "unary", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.each(n, UnaryBody<T>{f, static_cast<T>(s), static_cast<const T*>(x), static_cast<T*>(y)});
    });
  }
  void unary_grad(UnaryFn f, DType d, const void* g, const void* saved, void* out, int64_t n) override {
    dispatch_float(d, "unary_grad", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.each(n, UnaryGradBody<T>{f, static_cast<const T*>(g), static_cast<const T*>(saved), static_cast<T*>(out)});
    });
  }
  void binary(BinaryFn f, DType d, const void* a, const void* b, void* out, const Strides& plan) override {
    dispatch_float(d, "binary", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.each(plan.numel(),
                 BinaryBody<T>{f, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), plan});
    });
  }
  void strided_copy(DType d, const void* src, int64_t src_off, void* dst, int64_t dst_off,
                    const Strides& plan) override {
    if (dtype_size(d) == 4)
      exec_.each(plan.numel(), StridedCopyBody<uint32_t>{static_cast<const uint32_t*>(src) + src_off,
                                                         static_cast<uint32_t*>(dst) + dst_off, plan});
    else
      exec_.each(plan.numel(), StridedCopyBody<uint64_t>{static_cast<const uint64_t*>(src) + src_off,
                                                         static_cast<uint64_t*>(dst) + dst_off, plan});
  }
  void masked_fill(DType d, const void* x, DType md, const void* mask, double value, void* out,
                   const Strides& plan) override {
    dispatch_float(d, "masked_fill", [&](auto t) {
      dispatch_all(md, "masked_fill", [&](auto mt) {
        using T = typename decltype(t)::type;
        using M = typename decltype(mt)::type;
        exec_.each(plan.numel(), MaskedFillBody<T, M>{static_cast<const T*>(x), static_cast<const M*>(mask),
                                                      static_cast<T>(value), static_cast<T*>(out), plan});
      });
    });
  }
  void where(DType d, DType cd, const void* cond, const void* a, const void* b, void* out,
             const Strides& plan) override {
    dispatch_float(d, "where", [&](auto t) {
      dispatch_all(cd, "where", [&](auto ct) {
        using T = typename decltype(t)::type;
        using C = typename decltype(ct)::type;
        exec_.each(plan.numel(), WhereBody<T, C>{static_cast<const C*>(cond), static_cast<const T*>(a),
                                                 static_cast<const T*>(b), static_cast<T*>(out), plan});
      });
    });
  }
  int64_t first_out_of_range(const int64_t* idx, int64_t n, int64_t bound, int64_t allowed) override {
    if (n == 0) return -1;
    Scratch s(*this, sizeof(int64_t));
    exec_.rows(1, FirstOutOfRangeBody{idx, n, bound, allowed, s.as<int64_t>()});
    return read_i64(s.as<int64_t>());
  }

  void reduce_sum(DType d, const void* x, void* out, const ReducePlan& plan) override {
    dispatch_float(d, "sum", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.rows(plan.outputs, ReduceSumBody<T>{static_cast<const T*>(x), static_cast<T*>(out), plan});
    });
  }
  void reduce_max(DType d, const void* x, void* out, int64_t* arg, const ReducePlan& plan) override {
    dispatch_float(d, "max", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.rows(plan.outputs, ReduceMaxBody<T>{static_cast<const T*>(x), static_cast<T*>(out), arg, plan});
    });
  }
  void max_backward(DType d, const void* g, const int64_t* arg, void* gx, int64_t outer, int64_t n,
                    int64_t inner) override {
    fill(d, gx, outer * n * inner, 0.0);
    dispatch_float(d, "max", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.each(outer * inner, MaxBackwardBody<T>{static_cast<const T*>(g), arg, static_cast<T*>(gx), n, inner});
    });
  }
  double sum_squares(DType d, const void* x, int64_t n) override {
    if (n == 0) return 0.0;
    constexpr int64_t kChunk = int64_t{kBlock} * 64;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    Scratch part(*this, sizeof(double) * (chunks + 1));
    double* pp = part.as<double>();
    dispatch_float(d, "sum_squares", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.rows(chunks, SquaresChunkBody<T>{static_cast<const T*>(x), n, kChunk, pp});
    });
    exec_.rows(1, SumAllBody<double>{pp, chunks, pp + chunks});
    double total = 0;
    copy(&total, Device::cpu, pp + chunks, Device::cuda, sizeof total);
    return total;
  }
  bool all_finite(DType d, const void* x, int64_t n) override {
    if (n == 0) return true;
    Scratch s(*this, sizeof(int64_t));
    dispatch_float(d, "all_finite", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.rows(1, AllFiniteBody<T>{static_cast<const T*>(x), n, s.as<int64_t>()});
    });
    return read_i64(s.as<int64_t>()) == 1;
  }

  void softmax(DType d, const void* x, void* y, int64_t outer, int64_t n, int64_t inner, bool log) override {
    dispatch_float(d, "softmax", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.rows(outer * inner, SoftmaxBody<T>{static_cast<const T*>(x), static_cast<T*>(y), n, inner, log});
    });
  }
  void softmax_backward(DType d, const void* g, const void* y, void* dx, int64_t outer, int64_t n, int64_t inner,
                        bool log) override {
    dispatch_float(d, "softmax", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.rows(outer * inner, SoftmaxBackwardBody<T>{static_cast<const T*>(g), static_cast<const T*>(y),
                                                       static_cast<T*>(dx), n, inner, log});
    });
  }
  void layer_norm(DType d, const void* x, const void* w, const void* b, void* y, void* mean, void* rstd,
                  int64_t rows, int64_t cols, double eps) override {
    dispatch_float(d, "layer_norm", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.rows(rows, LayerNormBody<T>{static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(b),
                                        static_cast<T*>(y), static_cast<T*>(mean), static_cast<T*>(rstd), cols,
                                        static_cast<T>(eps)});
    });
  }
  void layer_norm_backward(DType d, const void* g, const void* x, const void* w, const void* mean, const void* rstd,
                           void* dx, void* dw, void* db, int64_t rows, int64_t cols) override {
    dispatch_float(d, "layer_norm", [&](auto t) {
      using T = typename decltype(t)::type;
      const T *pg = static_cast<const T*>(g), *px = static_cast<const T*>(x), *pm = static_cast<const T*>(mean);
      const T* pr = static_cast<const T*>(rstd);
      if (dx) exec_.rows(rows, LayerNormDxBody<T>{pg, px, static_cast<const T*>(w), pm, pr, static_cast<T*>(dx), cols});
      if (dw || db)
        exec_.rows(cols, LayerNormDwBody<T>{pg, px, pm, pr, static_cast<T*>(dw), static_cast<T*>(db), rows, cols});
    });
  }
  void cross_entropy(DType d, const void* x, const int64_t* target, void* lse, void* out, int64_t* count,
                     int64_t rows, int64_t classes, int64_t ignore) override {
    Scratch loss(*this, sizeof(double) * (rows + 1)), counted(*this, sizeof(int64_t) * (rows + 1));
    dispatch_float(d, "cross_entropy", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.rows(rows, CrossEntropyRowBody<T>{static_cast<const T*>(x), target, static_cast<T*>(lse),
                                              loss.as<double>(), counted.as<int64_t>(), classes, ignore});
      exec_.rows(1, CrossEntropyMeanBody<T>{loss.as<double>(), counted.as<int64_t>(), rows, static_cast<T*>(out),
                                            count});
    });
  }
  void cross_entropy_backward(DType d, const void* x, const int64_t* target, const void* lse, const void* g,
                              const int64_t* count, void* dx, int64_t rows, int64_t classes,
                              int64_t ignore) override {
    dispatch_float(d, "cross_entropy", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.each(rows * classes, CrossEntropyBackwardBody<T>{static_cast<const T*>(x), static_cast<const T*>(lse),
                                                             static_cast<const T*>(g), target, count,
                                                             static_cast<T*>(dx), classes, ignore});
    });
  }

  void index_select(DType d, const void* table, const int64_t* idx, void* out, int64_t n, int64_t row) override {
    dispatch_float(d, "index_select", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.each(n * row, IndexSelectBody<T>{static_cast<const T*>(table), idx, static_cast<T*>(out), row});
    });
  }
  void index_select_backward(DType d, const void* g, const int64_t* idx, void* gt, int64_t n, int64_t rows,
                             int64_t row) override {
    Scratch count(*this, sizeof(int64_t) * (rows + 1)), start(*this, sizeof(int64_t) * (rows + 1)),
        pos(*this, sizeof(int64_t) * (n + 1));
    exec_.each(rows, IndexCountBody{idx, n, count.as<int64_t>()});
    exec_.each(1, ExclusiveScanBody{count.as<int64_t>(), rows, start.as<int64_t>()});
    exec_.each(rows, IndexPlaceBody{idx, start.as<int64_t>(), n, pos.as<int64_t>()});
    dispatch_float(d, "index_select", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.each(rows * row, IndexSumBody<T>{static_cast<const T*>(g), start.as<int64_t>(), pos.as<int64_t>(),
                                             static_cast<T*>(gt), row});
    });
  }
  void gather(DType d, const void* x, const int64_t* idx, void* out, const GatherPlan& plan) override {
    int64_t n = 1;
    for (int i = 0; i < plan.nd; ++i) n *= plan.ext[i];
    dispatch_float(d, "gather", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.each(n, GatherBody<T>{static_cast<const T*>(x), idx, static_cast<T*>(out), plan});
    });
  }
  void gather_backward(DType d, const void* g, const int64_t* idx, void* gx, const GatherPlan& plan,
                       const int64_t* gx_ext) override {
    int64_t n = 1;
    for (int i = 0; i < plan.nd; ++i) n *= gx_ext[i];
    dispatch_float(d, "gather", [&](auto t) {
      using T = typename decltype(t)::type;
      GatherBackwardBody<T> body{static_cast<const T*>(g), idx, static_cast<T*>(gx), plan, {}};
      for (int i = 0; i < plan.nd; ++i) body.xext[i] = gx_ext[i];
      exec_.each(n, body);
    });
  }
  void dropout(DType d, const void* x, void* out, void* mask, int64_t n, double p, uint64_t key) override {
    dispatch_float(d, "dropout", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.each(n, DropoutBody<T>{static_cast<const T*>(x), static_cast<T*>(out), static_cast<T*>(mask), p,
                                   static_cast<T>(1.0 / (1.0 - p)), key});
    });
  }

  void adam(DType d, void* p, const void* g, void* m, void* v, int64_t n, const AdamStep& s) override {
    dispatch_float(d, "adam", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.each(n, AdamBody<T>{static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(m), static_cast<T*>(v),
                                T(s.beta1), T(s.beta2), T(1.0 - s.beta1), T(1.0 - s.beta2), T(s.weight_decay),
                                T(1.0 - s.lr * s.weight_decay), T(s.step_size), T(s.sqrt_bc2), T(s.eps), s.coupled,
                                s.decoupled});
    });
  }
  void sgd(DType d, void* p, const void* g, void* vel, int64_t n, const SgdStep& s) override {
    dispatch_float(d, "sgd", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.each(n, SgdBody<T>{static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(vel), T(s.lr),
                               T(s.weight_decay), T(s.momentum), s.first});
    });
  }

  void attention_forward(DType d, const AttentionCall& c, const void* q, const void* k, const void* v, void* out,
                         void* lse) override {
    dispatch_float(d, "fused_attention", [&](auto t) {
      using T = typename decltype(t)::type;
      const AttnArgs<T> a = attn_args<T>(c);
      exec_.tiles(c.B * c.H * a.q_tiles(), AttnSmem<T>::bytes(c.dh),
                  AttnForwardBody<T>{a, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
                                     static_cast<T*>(out), static_cast<T*>(lse)});
    });
  }
  void attention_backward(DType d, const AttentionCall& c, const void* q, const void* k, const void* v,
                          const void* out, const void* lse, const void* dout, void* dq, void* dk, void* dv,
                          double* drel, double* ratio_acc) override {
    dispatch_float(d, "fused_attention", [&](auto t) {
      using T = typename decltype(t)::type;
      const AttnArgs<T> a = attn_args<T>(c);
      const T *pq = static_cast<const T*>(q), *pk = static_cast<const T*>(k), *pv = static_cast<const T*>(v);
      const T *po = static_cast<const T*>(out), *pl = static_cast<const T*>(lse), *pg = static_cast<const T*>(dout);
      const int64_t rows = c.B * c.H * c.Tq, smem = AttnSmem<T>::bytes(c.dh);
      Scratch dbuf(*this, sizeof(T) * static_cast<std::size_t>(rows));
      const T* D = dbuf.as<T>();
      exec_.each(rows, AttnRowDotBody<T>{a, po, pg, dbuf.as<T>()});
      exec_.tiles(c.B * c.H * a.k_tiles(), smem,
                  AttnBackwardKVBody<T>{a, pq, pk, pv, pg, pl, D, static_cast<T*>(dk), static_cast<T*>(dv)});
      // dQ and the bias's sums, in chunks of query tiles whose partial sums fit kAttnChunkBytes.
      const bool ratio = ratio_acc && c.has_ratio;
      const int64_t rel_width = c.Tk + kAttnTile - 1, slots = ratio ? c.ratio.row_slots() : 0;
      const int64_t head_slots = ratio ? 2 * c.ratio.buckets() + 2 * c.Tq : 0;
      if (drel) fill(DType::f64, drel, c.H * c.R, 0.0);
      if (ratio) fill(DType::f64, ratio_acc, c.H * head_slots, 0.0);
      const int64_t per_tile = c.B * c.H * 8 * ((drel ? rel_width : 0) + kAttnTile * slots);
      const int64_t chunk = per_tile > 0 ? std::max<int64_t>(1, kAttnChunkBytes / per_tile) : a.q_tiles();
      for (int64_t tile0 = 0; tile0 < a.q_tiles(); tile0 += chunk) {
        const int64_t tiles = std::min(chunk, a.q_tiles() - tile0);
        Scratch part(*this, drel ? 8 * static_cast<std::size_t>(c.B * c.H * tiles * rel_width) : 8);
        Scratch rowsum(*this, ratio ? 8 * static_cast<std::size_t>(c.B * c.H * tiles * kAttnTile * slots) : 8);
        double* pp = drel ? part.as<double>() : nullptr;
        double* pr = ratio ? rowsum.as<double>() : nullptr;
        exec_.tiles(c.B * c.H * tiles, smem,
                    AttnBackwardQBody<T>{a, pq, pk, pv, pg, pl, D, static_cast<T*>(dq), pp, pr, tile0, tiles});
        if (drel) exec_.each(c.H * c.R, AttnRelSumBody<T>{a, pp, drel, tile0, tiles});
        if (ratio) exec_.each(c.H * head_slots, AttnRatioSumBody<T>{a, pr, ratio_acc, tile0, tiles});
      }
    });
  }

 protected:
  template <typename T>
  static AttnArgs<T> attn_args(const AttentionCall& c) {
    RPB_CHECK(AttnSmem<T>::bytes(c.dh) <= kAttnMaxShared, "fused_attention", "head dim ", c.dh, " in ",
              sizeof(T) == 4 ? "float32" : "float64", " needs ", AttnSmem<T>::bytes(c.dh),
              " bytes of shared memory per block on CUDA, over the ", kAttnMaxShared, " a block may take");
    AttnArgs<T> a;
    a.B = c.B, a.H = c.H, a.Tq = c.Tq, a.Tk = c.Tk, a.dh = c.dh, a.R = c.R, a.G = c.G;
    a.in_row = c.in_row, a.out_row = c.out_row, a.packed = c.packed, a.causal = c.causal;
    a.q_offset = c.q_offset, a.block = c.block, a.scale = static_cast<T>(c.scale);
    a.rel = static_cast<const T*>(c.rel), a.padded = static_cast<const T*>(c.padded);
    a.score = static_cast<const T*>(c.score), a.ratio = c.ratio, a.has_ratio = c.has_ratio;
    return a;
  }
  int64_t read_i64(const int64_t* p) {
    int64_t v = 0;
    copy(&v, Device::cpu, p, Device::cuda, sizeof v);
    return v;
  }
  Exec exec_;
};

}  // namespace rpb::cuda

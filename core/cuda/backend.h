// rpb/core/cuda/backend.h: the kernels behind Device::cuda tensors, as one interface with two implementations of
// one source (core/cuda/backend_impl.h): the GPU's (core/cuda/backend_gpu.cu, when CMake's RPB_CUDA is on) and
// the host launcher's (core/cuda/backend_emulated.cpp, always built; CudaBackendKind::emulated).
//
// Every pointer is one the backend allocated (device memory on a GPU). Tensors are contiguous and row-major; each
// entry point takes what its op family needs and nothing else. The ops of core/ops/ call these through
// cuda_backend() when their inputs sit on Device::cuda; nothing here moves data to the host unasked, and an op
// without an entry here throws rather than computing elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/cuda/kernels/attention.h"
#include "core/device.h"
#include "core/shape.h"
#include "core/tensor.h"

namespace rpb::cuda {

/// The elementwise functions of one input (and a scalar `s` where they take one).
enum class UnaryFn : uint8_t {
  neg, add_scalar, mul_scalar, pow,  // x + s, x * s, x ^ s
  square, inverse,                   // pow's exact cases: x * x and 1 / x
  exp, log, sqrt, tanh, sigmoid, relu, gelu_erf, gelu_tanh,
};
/// The broadcasting binary functions.
enum class BinaryFn : uint8_t { add, sub, mul, div };

/// Up to three operands broadcast into one output shape: `ext` is the output's extents and st[k] operand k's strides
/// in elements (0 along an axis it is broadcast over). Built by broadcast_plan (core/cuda/plan.h).
struct Strides {
  int nd = 0;
  int64_t ext[kMaxDims] = {};
  int64_t st[3][kMaxDims] = {};
  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < nd; ++d) n *= ext[d];
    return n;
  }
};

/// A reduction of a tensor over some of its axes: each output element (numbered over the kept axes, row-major)
/// sums or maximizes the `r` elements over the reduced axes (numbered row-major too, the order of the terms).
struct ReducePlan {
  int nk = 0, nr = 0;
  int64_t kext[kMaxDims] = {}, kst[kMaxDims] = {};  // kept axes: extents and the input's strides
  int64_t rext[kMaxDims] = {}, rst[kMaxDims] = {};  // reduced axes
  int64_t outputs = 1, r = 1;
};

/// gather's layout: out (and index) has extents `ext`; x has strides `xst`, with the gathered axis `axis`.
struct GatherPlan {
  int nd = 0, axis = 0;
  int64_t ext[kMaxDims] = {}, xst[kMaxDims] = {};
  int64_t x_extent = 0;  // x's extent along the axis (the valid index range)
};

/// A row-major (batched) product C = op(A) op(B) (+ C when `accumulate`), as cblas_sgemm with strides per batch
/// entry (0: one matrix shared by every entry).
struct Gemm {
  bool ta = false, tb = false, accumulate = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0, sa = 0, sb = 0, sc = 0, batch = 1;

  /// One product of an (m, n) output with contiguous rows: A's rows hold lda elements, B's ldb.
  static Gemm rows(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb) {
    Gemm g;
    g.ta = ta;
    g.tb = tb;
    g.m = m;
    g.n = n;
    g.k = k;
    g.lda = lda;
    g.ldb = ldb;
    g.ldc = n;
    return g;
  }
};

/// A row-major Gemm as the column-major call cuBLAS takes: row-major C = op(A) op(B) is column-major
/// C^T = op(B)^T op(A)^T, so B comes first and m and n swap. The GPU backend calls cublas<t>gemmStridedBatched with
/// exactly these fields; tests/test_ops_matmul_index.cpp feeds them to OpenBLAS's column-major sgemm and checks the
/// product, so the mapping is tested on machines without a GPU.
struct ColumnMajorGemm {
  bool trans_first, trans_second;  // op of the first (B) and second (A) operand
  int64_t m, n, k;
  int64_t ld_first, stride_first, ld_second, stride_second, ldc, stride_c, batch;
  bool accumulate;
};
inline ColumnMajorGemm column_major(const Gemm& g) {
  return {g.tb, g.ta, g.n, g.m, g.k, g.ldb, g.sb, g.lda, g.sa, g.ldc, g.sc, g.batch, g.accumulate};
}

/// The hyperparameters of one Adam or AdamW update (optim/adam.cpp's arrangement, torch's).
struct AdamStep {
  double beta1, beta2, eps, step_size, sqrt_bc2, weight_decay, lr;  // step_size = lr / bc1
  bool coupled, decoupled;
};
struct SgdStep {
  double lr, weight_decay, momentum;
  bool first;  // the velocity's first step: it becomes the gradient
};

/// One fused attention call (core/ops/attention.cpp's Geometry and AttentionSpec) with its bias and masks as device
/// pointers of the call's dtype (the ratio bias's arrays in double).
struct AttentionCall {
  int64_t B = 0, H = 0, Tq = 0, Tk = 0, dh = 0, R = 0, G = 0, in_row = 0, out_row = 0, q_offset = 0, block = 0;
  bool packed = false, causal = false;
  double scale = 1.0;
  const void* rel = nullptr;     // (H, R) or null
  const void* padded = nullptr;  // (B, Tk), non-zero masks the key; or null
  const void* score = nullptr;   // (G, Tq, Tk) or null
  RatioBiasArgs ratio;           // with has_ratio
  bool has_ratio = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual CudaBackendKind kind() const = 0;
  virtual std::string describe() const = 0;

  // ---- memory: blocks come from and return to a caching allocator ----
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p, std::size_t bytes) = 0;
  /// Frees the idle cached blocks; returns their bytes.
  virtual std::size_t empty_cache() = 0;
  virtual std::size_t cached_bytes() const = 0;
  /// Copies between this device and the host (or within either); waits until done when it reaches the host.
  virtual void copy(void* dst, Device dst_dev, const void* src, Device src_dev, std::size_t bytes) = 0;
  /// Waits for every kernel launched so far.
  virtual void synchronize() = 0;

  // ---- element-by-element (core/cuda/kernels/elementwise.h) ----
  virtual void fill(DType d, void* p, int64_t n, double value) = 0;
  /// y = x converted from dtype xd to yd.
  virtual void cast(DType xd, const void* x, DType yd, void* y, int64_t n) = 0;
  virtual void unary(UnaryFn f, double s, DType d, const void* x, void* y, int64_t n) = 0;
  /// out = d f(x)/dx * g, from the saved tensor the CPU's backward reads (x, or y = f(x) for exp, sqrt, tanh,
  /// sigmoid and relu).
  virtual void unary_grad(UnaryFn f, DType d, const void* g, const void* saved, void* out, int64_t n) = 0;
  /// out = f(a, b) with a and b broadcast by plan.st[0] and plan.st[1].
  virtual void binary(BinaryFn f, DType d, const void* a, const void* b, void* out, const Strides& plan) = 0;
  /// dst[dst_off + map_1(i)] = src[src_off + map_0(i)] over the extents of plan (st[0] for src, st[1] for dst):
  /// permute, expand, concat, slice and its backward. Element size from d (any dtype).
  virtual void strided_copy(DType d, const void* src, int64_t src_off, void* dst, int64_t dst_off,
                            const Strides& plan) = 0;
  /// out = mask != 0 ? value : x (mask of dtype md broadcast by plan.st[1]; x by st[0]).
  virtual void masked_fill(DType d, const void* x, DType md, const void* mask, double value, void* out,
                           const Strides& plan) = 0;
  /// out = cond != 0 ? a : b (cond by st[0], a by st[1], b by st[2]).
  virtual void where(DType d, DType cd, const void* cond, const void* a, const void* b, void* out,
                     const Strides& plan) = 0;
  /// The first flat position i < n with idx[i] outside [0, bound) and idx[i] != allowed, or -1. Waits.
  virtual int64_t first_out_of_range(const int64_t* idx, int64_t n, int64_t bound, int64_t allowed) = 0;

  // ---- reductions (core/cuda/kernels/reduce.h) ----
  virtual void reduce_sum(DType d, const void* x, void* out, const ReducePlan& plan) = 0;
  /// out = the NaN-propagating maximum per output; arg (may be null) = the position of the first maximal element
  /// among the plan's r terms.
  virtual void reduce_max(DType d, const void* x, void* out, int64_t* arg, const ReducePlan& plan) = 0;
  /// gx (zeroed here, shape outer x n x inner) gets g[o, i] at gx[o, arg[o, i], i].
  virtual void max_backward(DType d, const void* g, const int64_t* arg, void* gx, int64_t outer, int64_t n,
                            int64_t inner) = 0;
  /// The sum of the squares of n elements in float64, in a fixed order (per-chunk block sums, then the chunks).
  virtual double sum_squares(DType d, const void* x, int64_t n) = 0;
  /// True when every element is finite.
  virtual bool all_finite(DType d, const void* x, int64_t n) = 0;

  // ---- rows (core/cuda/kernels/rows.h) ----
  virtual void softmax(DType d, const void* x, void* y, int64_t outer, int64_t n, int64_t inner, bool log) = 0;
  virtual void softmax_backward(DType d, const void* g, const void* y, void* dx, int64_t outer, int64_t n,
                                int64_t inner, bool log) = 0;
  virtual void layer_norm(DType d, const void* x, const void* w, const void* b, void* y, void* mean, void* rstd,
                          int64_t rows, int64_t cols, double eps) = 0;
  /// Any of dx, dw, db may be null (not needed); x may be null when neither dx nor dw is needed, w when absent.
  virtual void layer_norm_backward(DType d, const void* g, const void* x, const void* w, const void* mean,
                                   const void* rstd, void* dx, void* dw, void* db, int64_t rows, int64_t cols) = 0;
  /// Writes the mean loss over the rows whose target is not `ignore` into *out (dtype d, on the device), each
  /// row's log-sum-exp into lse (0 for ignored rows) and the count of counted rows into *count (int64, device).
  virtual void cross_entropy(DType d, const void* x, const int64_t* target, void* lse, void* out, int64_t* count,
                             int64_t rows, int64_t classes, int64_t ignore) = 0;
  /// dx = (softmax(x) - onehot(target)) * g / count per counted row, 0 on ignored rows (g and count on the device).
  virtual void cross_entropy_backward(DType d, const void* x, const int64_t* target, const void* lse, const void* g,
                                      const int64_t* count, void* dx, int64_t rows, int64_t classes,
                                      int64_t ignore) = 0;

  // ---- indexing (core/cuda/kernels/index.h) ----
  virtual void index_select(DType d, const void* table, const int64_t* idx, void* out, int64_t n, int64_t row) = 0;
  /// gt (rows x row, zeroed here) gets the sum of g's rows i with idx[i] == v in the order of i: the positions
  /// are sorted by index first (a counting sort without atomics), so the sum is deterministic.
  virtual void index_select_backward(DType d, const void* g, const int64_t* idx, void* gt, int64_t n, int64_t rows,
                                     int64_t row) = 0;
  virtual void gather(DType d, const void* x, const int64_t* idx, void* out, const GatherPlan& plan) = 0;
  /// gx (x's shape, zeroed here) gets, at each position, the sum of g over the index entries pointing at it, in
  /// the order of the gathered axis. gx_ext is x's extents (the plan's ext is the index's).
  virtual void gather_backward(DType d, const void* g, const int64_t* idx, void* gx, const GatherPlan& plan,
                               const int64_t* gx_ext) = 0;
  /// out = x * mask and mask = (uniform(key, i) >= p) / (1 - p), uniform from Philox-4x32-10 keyed by `key` with
  /// the element's position as its counter.
  virtual void dropout(DType d, const void* x, void* out, void* mask, int64_t n, double p, uint64_t key) = 0;

  // ---- products (core/cuda/kernels/gemm.h; cuBLAS on the GPU) ----
  virtual void gemm(DType d, const Gemm& g, const void* a, const void* b, void* c) = 0;

  // ---- fused attention (core/cuda/kernels/attention.h) ----
  /// out (the layout of c.packed) and lse (B, H, Tq).
  virtual void attention_forward(DType d, const AttentionCall& c, const void* q, const void* k, const void* v,
                                 void* out, void* lse) = 0;
  /// dq, dk, dv written whole (one buffer for all three when packed); drel (H, R) and ratio_acc (H, 2 buckets +
  /// 2 Tq) in double, written whole, or null when not wanted.
  virtual void attention_backward(DType d, const AttentionCall& c, const void* q, const void* k, const void* v,
                                  const void* out, const void* lse, const void* dout, void* dq, void* dk, void* dv,
                                  double* drel, double* ratio_acc) = 0;

  // ---- optimizers (core/cuda/kernels/optim.h) ----
  virtual void adam(DType d, void* p, const void* g, void* m, void* v, int64_t n, const AdamStep& s) = 0;
  virtual void sgd(DType d, void* p, const void* g, void* vel, int64_t n, const SgdStep& s) = 0;
};

/// The backend Device::cuda tensors use (see cuda_backend_kind); throws rpb::Error naming `op` and why when none
/// is available (CUDA not in this build, or no device answers).
Backend& backend(const char* op);

}  // namespace rpb::cuda

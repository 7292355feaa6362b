// Matrix products through OpenBLAS: forward and backward side by side.
#include <cblas.h>

#include <algorithm>
#include <climits>

#include "core/ops.h"
#include "core/ops/kernels.h"
#include "core/parallel.h"

namespace rpb {

namespace {

// The leading (batch) axes of a shape of rank >= 2.
Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

int as_blas_int(int64_t v, const Tensor& a, const Tensor& b) {
  RPB_CHECK(v <= INT_MAX, "matmul", "extent ", v, " exceeds the BLAS int range for shapes ", a.shape(), " and ",
            b.shape());
  return static_cast<int>(v);
}

// One BLAS call on the calling thread: OpenBLAS is kept single-threaded, since rpb's pool splits the work.
// C = op(A) op(B) + beta C, beta 0 or 1.
template <typename T>
void blas_gemm(bool ta, bool tb, int m, int n, int k, const T* pa, int lda, const T* pb, int ldb, T* pc,
               T beta = T(0)) {
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
  const CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE opb = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, opa, opb, m, n, k, 1.0f, pa, lda, pb, ldb, beta, pc, n);
  else
    cblas_dgemm(CblasRowMajor, opa, opb, m, n, k, 1.0, pa, lda, pb, ldb, beta, pc, n);
}

// Each of the `rows` rows of c (length n, contiguous) = the row `init`, or zeros when it is null.
template <typename T>
void fill_rows(T* c, int64_t rows, int n, const T* init) {
  for (int64_t i = 0; i < rows; ++i) {
    ArrayMap<T> row(c + i * n, n);
    if (init) row = ConstArrayMap<T>(init, n);
    else row.setZero();
  }
}

// Rows [i0, i0 + mb) of C (row stride n) = the row `init`, or left to the product (beta = 0) when it is null.
template <typename T>
void blas_gemm_rows(bool ta, bool tb, int i0, int mb, int n, int k, const T* pa, int lda, const T* pb, int ldb,
                    T* pc, const T* init) {
  T* c = pc + static_cast<int64_t>(i0) * n;
  if (init) fill_rows(c, mb, n, init);
  // Rows i0.. of op(A): rows of A, or columns when A is stored transposed.
  blas_gemm(ta, tb, mb, n, k, ta ? pa + i0 : pa + static_cast<int64_t>(i0) * lda, lda, pb, ldb, c,
            init ? T(1) : T(0));
}

// C (m x n, row stride n) = op(A) @ op(B), plus the row `init` on every row when it is given (a Linear's bias:
// each block fills its rows with it and the product adds into them, beta = 1, in place of BLAS zeroing C and a
// separate pass adding the bias); C needs no prior fill. Large products are split into
// blocks of rows that the pool of core/parallel.h shares out. The blocks depend on the shape alone: BLAS's
// micro-kernels round an element's sum differently at block edges, so a split that followed the thread count
// would change results with it (a test compares 1, 2 and 3 threads).
template <typename T>
void gemm(bool ta, bool tb, int m, int n, int k, const T* pa, int lda, const T* pb, int ldb, T* pc,
          const T* init = nullptr) {
  constexpr double kSplitFlops = 1 << 21;
  const double flops = 2.0 * m * n * k;
  if (flops < kSplitFlops || m < 32) {
    blas_gemm_rows(ta, tb, 0, m, n, k, pa, lda, pb, ldb, pc, init);
    return;
  }
  // Each block packs all of op(B) again, so blocks grow with the work: 2 up to 256 MFLOP (a small model's
  // products: 8 blocks made model A's step 3% slower on 2 cores), 4 up to 512, 8 beyond; rows a multiple of 16.
  const int blocks = flops <= 2.56e8 ? 2 : flops <= 5.12e8 ? 4 : 8;
  const int rows = ((m + blocks - 1) / blocks + 15) / 16 * 16;
  parallel_for((m + rows - 1) / rows, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int i0 = static_cast<int>(b) * rows;
      blas_gemm_rows(ta, tb, i0, std::min(rows, m - i0), n, k, pa, lda, pb, ldb, pc, init);
    }
  });
}

}  // namespace

namespace {

// The batch shape of the product: a's and b's leading axes, broadcast numpy-style.
Shape broadcast_batch(const Shape& sa, const Shape& sb, bool trans_a, bool trans_b) {
  const Shape ba = batch_of(sa), bb = batch_of(sb);
  Shape bo;
  const int n = std::max(ba.size(), bb.size());
  for (int i = 0; i < n; ++i) {
    const int ia = i - (n - ba.size()), ib = i - (n - bb.size());
    const int64_t da = ia >= 0 ? ba[ia] : 1, db = ib >= 0 ? bb[ib] : 1;
    RPB_CHECK(da == db || da == 1 || db == 1, "matmul", "batch dimensions of ", sa, " and ", sb,
              " do not broadcast (trans_a=", trans_a, ", trans_b=", trans_b, ")");
    bo.push_back(da == 1 ? db : da);
  }
  return bo;
}

// The CUDA path of multiply: one strided-batched product (cuBLAS on a GPU). An operand whose batch axes are the
// output's steps through them; one shared by every entry has stride 0; any other broadcast is expanded first.
void multiply_cuda(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, int64_t M, int64_t K, int64_t N,
                   Tensor& out) {
  cuda::Backend& be = cuda::backend("matmul");
  if (K == 0) {
    out.fill_(0.0);
    return;
  }
  const Shape bo = batch_of(out.shape());
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const int64_t ra = sa[sa.size() - 2], ca = sa.back(), rb = sb[sb.size() - 2], cb = sb.back();
  cuda::Gemm g = cuda::Gemm::rows(trans_a, trans_b, M, N, K, ca, cb);
  if (!trans_a && batch_of(sb).numel() == 1) {  // b shared by every entry and a's rows contiguous: fold the batch
    g.m = bo.numel() * M;
    be.gemm(a.dtype(), g, a.raw_data(), b.raw_data(), out.raw_mutable_data());
    return;
  }
  const auto operand = [&](const Tensor& t, int64_t rows, int64_t cols, int64_t& stride) {
    const Shape bt = batch_of(t.shape());
    if (bt.numel() == 1) {
      stride = 0;
      return t;
    }
    stride = rows * cols;
    if (bt == bo) return t;
    Shape full = bo;
    full.push_back(rows);
    full.push_back(cols);
    return expand(t, full);
  };
  const Tensor ea = operand(a, ra, ca, g.sa), eb = operand(b, rb, cb, g.sb);
  g.sc = M * N;
  g.batch = bo.numel();
  be.gemm(a.dtype(), g, ea.raw_data(), eb.raw_data(), out.raw_mutable_data());
}

// out (bo..., M, N) = op(a) @ op(b) for every batch entry; K is the contracted extent.
void multiply(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, int64_t M, int64_t K, int64_t N,
              Tensor& out) {
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const Shape ba = batch_of(sa), bb = batch_of(sb), bo = batch_of(out.shape());
  const int64_t ra = sa[sa.size() - 2], ca = sa.back(), rb = sb[sb.size() - 2], cb = sb.back();
  const int64_t batch = bo.numel();
  const int k = as_blas_int(K, a, b), lda = as_blas_int(std::max<int64_t>(ca, 1), a, b);
  const int ldb = as_blas_int(std::max<int64_t>(cb, 1), a, b), n = as_blas_int(N, a, b);
  (void)as_blas_int(M, a, b);  // checked here; the folded and per-batch paths convert it below
  if (out.is_cuda()) {
    multiply_cuda(a, b, trans_a, trans_b, M, K, N, out);
    return;
  }
  dispatch_float(a.dtype(), "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.mutable_data<T>();
    if (K == 0) {
      ArrayMap<T>(po, out.numel()).setZero();
    } else if (!trans_a && bb.numel() == 1) {
      // b is one matrix shared by every batch entry and a's rows are contiguous: fold the batch into M.
      gemm<T>(false, trans_b, as_blas_int(batch * M, a, b), n, k, pa, lda, pb, ldb, po);
    } else {
      const int m = static_cast<int>(M);
      const int64_t step_a = ra * ca, step_b = rb * cb, step_o = M * N;
      // One product per batch entry, spread over the pool (each entry's product then runs on one thread).
      std::vector<std::array<int64_t, 3>> entries;  // offsets of a, b and the output
      entries.reserve(static_cast<std::size_t>(batch));
      for_each_broadcast_run<2>(bo, {ba, bb}, [&](int64_t oo, const auto& off, const auto& st, int64_t run) {
        for (int64_t j = 0; j < run; ++j)
          entries.push_back({(off[0] + j * st[0]) * step_a, (off[1] + j * st[1]) * step_b, (oo + j) * step_o});
      });
      parallel_for(static_cast<int64_t>(entries.size()), [&](int64_t e0, int64_t e1) {
        for (int64_t e = e0; e < e1; ++e)
          gemm<T>(trans_a, trans_b, m, n, k, pa + entries[e][0], lda, pb + entries[e][1], ldb, po + entries[e][2]);
      });
    }
  });
}

// The backward rule. With A = op(a), B = op(b): dA = g B^T and dB = A^T g; a transposed operand receives the
// transpose, e.g. d(a) = (g B^T)^T = B g^T. a is read only by b's gradient and b only by a's.
void matmul_backward(const Tensor& saved_a, const Tensor& saved_b, const Shape& sa, const Shape& sb, bool trans_a,
                     bool trans_b, int64_t K, int64_t N, const Tensor& g, InputGrads& gi) {
  if (gi.needed(0)) {
    const Tensor ga = trans_a ? matmul(saved_b, g, trans_b, true) : matmul(g, saved_b, false, !trans_b);
    gi.set(0, sum_to(ga, sa));
  }
  if (!gi.needed(1)) return;
  Tensor gb;
  if (!trans_a && sb.size() == 2 && sa.size() > 2) {
    // Linear layer: contract over every batch row in one gemm instead of summing per-batch products.
    int64_t rows = 1;
    for (int d = 0; d + 1 < sa.size(); ++d) rows *= sa[d];
    const Tensor a2 = reshape(saved_a, {rows, K});
    const Tensor g2 = reshape(g, {rows, N});
    gb = trans_b ? matmul(g2, a2, true, false) : matmul(a2, g2, true, false);
  } else {
    gb = trans_b ? matmul(g, saved_a, true, trans_a) : matmul(saved_a, g, !trans_a, false);
  }
  gi.set(1, sum_to(gb, sb));
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  RPB_CHECK(a.dtype() == b.dtype(), "matmul", "dtype mismatch: ", dtype_name(a.dtype()), " ", a.shape(), " vs ",
            dtype_name(b.dtype()), " ", b.shape());
  RPB_CHECK(a.is_floating(), "matmul", "expected float tensors, got ", dtype_name(a.dtype()), " ", a.shape(), " and ",
            b.shape());
  RPB_CHECK(a.dim() >= 2 && b.dim() >= 2, "matmul", "operands need at least 2 dims (1-D is not supported), got ",
            a.shape(), " and ", b.shape());
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const int64_t ra = sa[sa.size() - 2], ca = sa.back();  // a's stored rows and columns
  const int64_t rb = sb[sb.size() - 2], cb = sb.back();
  const int64_t M = trans_a ? ca : ra, K = trans_a ? ra : ca;
  const int64_t Kb = trans_b ? cb : rb, N = trans_b ? rb : cb;
  RPB_CHECK(K == Kb, "matmul", "inner dimensions differ: ", sa, (trans_a ? " (transposed)" : ""), " @ ", sb,
            (trans_b ? " (transposed)" : ""), " contracts ", K, " with ", Kb, " (trans_a=", trans_a,
            ", trans_b=", trans_b, ")");
  Shape so = broadcast_batch(sa, sb, trans_a, trans_b);
  so.push_back(M);
  so.push_back(N);
  Tensor out = Tensor::empty(so, a.dtype(), cuda::op_device("matmul", {&a, &b}));
  if (out.numel() > 0) multiply(a, b, trans_a, trans_b, M, K, N, out);

  if (autograd::should_record({&a, &b})) {
    Tensor saved_a = b.requires_grad() ? a.detach() : Tensor();
    Tensor saved_b = a.requires_grad() ? b.detach() : Tensor();
    autograd::record(OpKind::Matmul, out, {&a, &b},
                     [saved_a, saved_b, sa, sb, trans_a, trans_b, K, N](const Tensor& g, InputGrads& gi) {
                       matmul_backward(saved_a, saved_b, sa, sb, trans_a, trans_b, K, N, g, gi);
                     });
  }
  return out;
}

namespace {

// The CUDA path of linear: the bias copied into every row of the output, then the product added onto it
// (accumulate, as the CPU's beta = 1).
void linear_cuda(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t rows, Tensor& out) {
  const int64_t n = weight.size(0), k = weight.size(1);
  const Shape out2{rows, n};
  if (bias.defined())
    cuda::backend("linear").strided_copy(bias.dtype(), bias.raw_data(), 0, out.raw_mutable_data(), 0,
                                         cuda::copy_plan(out2, Shape{0, 1}, Shape{n, 1}));
  else if (k == 0)
    out.fill_(0.0);
  if (k == 0) return;
  cuda::Gemm g = cuda::Gemm::rows(false, true, rows, n, k, k, k);
  g.accumulate = bias.defined();
  (void)as_blas_int(rows, x, weight);
  cuda::backend("linear").gemm(x.dtype(), g, x.raw_data(), weight.raw_data(), out.raw_mutable_data());
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  RPB_CHECK(x.is_floating() && x.dtype() == weight.dtype(), "linear", "expected float tensors of one dtype, got x ",
            dtype_name(x.dtype()), " ", x.shape(), " and weight ", dtype_name(weight.dtype()), " ", weight.shape());
  RPB_CHECK(weight.dim() == 2, "linear", "weight must be (out, in), got ", weight.shape());
  const int64_t out_features = weight.size(0), in_features = weight.size(1);
  RPB_CHECK(x.dim() >= 1 && x.size(-1) == in_features, "linear", "input ", x.shape(), " does not end in ",
            in_features, " features (weight ", weight.shape(), ")");
  if (bias.defined())
    RPB_CHECK(bias.dtype() == x.dtype() && bias.shape() == Shape{out_features}, "linear", "bias ",
              dtype_name(bias.dtype()), " ", bias.shape(), " is not ", dtype_name(x.dtype()), " [", out_features,
              "] for weight ", weight.shape());
  int64_t rows = 1;  // every leading axis of x
  for (int d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  Shape so = x.shape();
  so[so.size() - 1] = out_features;
  const Device dev = cuda::op_device("linear", {&x, &weight, &bias});
  Tensor out = Tensor::empty(so, x.dtype(), dev);
  if (dev == Device::cuda && out.numel() > 0) {
    linear_cuda(x, weight, bias, rows, out);
  } else if (out.numel() > 0) {
    const int m = as_blas_int(rows, x, weight), n = as_blas_int(out_features, x, weight);
    const int k = as_blas_int(in_features, x, weight);
    dispatch_float(x.dtype(), "linear", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* pb = bias.defined() ? bias.data<T>() : nullptr;
      T* po = out.mutable_data<T>();
      if (k == 0) {
        fill_rows(po, rows, n, pb);  // an empty product: the bias alone
      } else {
        gemm<T>(false, true, m, n, k, x.data<T>(), k, weight.data<T>(), k, po, pb);
      }
    });
  }
  if (autograd::should_record({&x, &weight, &bias})) {
    // x is read only by the weight's gradient, the weight only by x's; the bias's needs neither.
    Tensor saved_x = weight.requires_grad() ? x.detach() : Tensor();
    Tensor saved_w = x.requires_grad() ? weight.detach() : Tensor();
    autograd::record(OpKind::Linear, out, {&x, &weight, &bias},
                     [saved_x, saved_w, sx = x.shape(), rows, out_features, in_features](const Tensor& g,
                                                                                          InputGrads& gi) {
                       // y = x W^T + b over rows: dx = g W, dW = g^T x (one product over every row), db = sum_rows g.
                       const Tensor g2 = reshape(g, {rows, out_features});
                       if (gi.needed(0)) gi.set(0, reshape(matmul(g2, saved_w), to_dims(sx)));
                       if (gi.needed(1)) gi.set(1, matmul(g2, reshape(saved_x, {rows, in_features}), true, false));
                       if (gi.needed(2)) gi.set(2, sum_to(g2, Shape{out_features}));
                     });
  }
  return out;
}

}  // namespace rpb

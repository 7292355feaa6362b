// Forward values and errors of matmul, index_select, gather, masked_fill and where.
#include <cblas.h>
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/core.h"
#include "core/cuda/backend.h"
#include "test_util.h"

using namespace rpb;
using rpb::testing::contains;
using rpb::testing::error_of;

namespace {


// Naive reference for op(a) @ op(b) with numpy batch broadcasting, in double.
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb, Shape& out_shape) {
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const int64_t ra = sa[sa.size() - 2], ca = sa.back(), rb = sb[sb.size() - 2], cb = sb.back();
  const int64_t M = ta ? ca : ra, K = ta ? ra : ca, N = tb ? rb : cb;
  const int nba = sa.size() - 2, nbb = sb.size() - 2, nb = std::max(nba, nbb);
  Shape bo;
  for (int i = 0; i < nb; ++i) {
    const int ia = i - (nb - nba), ib = i - (nb - nbb);
    const int64_t da = ia >= 0 ? sa[ia] : 1, db = ib >= 0 ? sb[ib] : 1;
    bo.push_back(std::max(da, db));
  }
  out_shape = bo;
  out_shape.push_back(M);
  out_shape.push_back(N);
  const std::vector<double> va = a.to_vector(), vb = b.to_vector();
  std::vector<double> out(out_shape.numel());
  for (int64_t bi = 0; bi < bo.numel(); ++bi) {
    // Unravel bi into the output batch index and map it into each operand (size-1 dims stay 0).
    int64_t rem = bi, off_a = 0, off_b = 0, mul_a = 1, mul_b = 1;
    for (int d = nb - 1; d >= 0; --d) {
      const int64_t idx = rem % bo[d];
      rem /= bo[d];
      const int ia = d - (nb - nba), ib = d - (nb - nbb);
      if (ia >= 0) {
        off_a += (sa[ia] == 1 ? 0 : idx) * mul_a;
        mul_a *= sa[ia];
      }
      if (ib >= 0) {
        off_b += (sb[ib] == 1 ? 0 : idx) * mul_b;
        mul_b *= sb[ib];
      }
    }
    const double* pa = va.data() + off_a * ra * ca;
    const double* pb = vb.data() + off_b * rb * cb;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double x = ta ? pa[k * ca + i] : pa[i * ca + k];
          const double y = tb ? pb[j * cb + k] : pb[k * cb + j];
          s += x * y;
        }
        out[(bi * M + i) * N + j] = s;
      }
  }
  return out;
}

void check_against_naive(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  INFO("a ", a.shape(), " b ", b.shape(), " trans_a ", ta, " trans_b ", tb, " dtype ", dtype_name(a.dtype()));
  Shape expect_shape;
  const std::vector<double> ref = naive_matmul(a, b, ta, tb, expect_shape);
  const Tensor out = matmul(a, b, ta, tb);
  REQUIRE(out.shape() == expect_shape);
  CHECK(out.dtype() == a.dtype());
  const std::vector<double> got = out.to_vector();
  const double tol = a.dtype() == DType::f32 ? 1e-4 : 1e-11;
  int bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (!(std::abs(got[i] - ref[i]) <= tol * (1 + std::abs(ref[i])))) ++bad;
  CHECK(bad == 0);
}

Shape stored(Shape batch, int64_t r, int64_t c, bool t) {
  batch.push_back(t ? c : r);
  batch.push_back(t ? r : c);
  return batch;
}

}  // namespace

TEST_CASE("matmul 2-D matches naive loops for every transpose flag, float32 and float64") {
  Generator gen(1);
  for (DType dt : {DType::f32, DType::f64})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        check_against_naive(randn(stored({}, 5, 7, ta), gen, dt), randn(stored({}, 7, 3, tb), gen, dt), ta, tb);
        check_against_naive(randn(stored({}, 1, 9, ta), gen, dt), randn(stored({}, 9, 1, tb), gen, dt), ta, tb);
        check_against_naive(randn(stored({}, 17, 1, ta), gen, dt), randn(stored({}, 1, 11, tb), gen, dt), ta, tb);
      }
}

TEST_CASE("the column-major call the GPU makes of a row-major product computes it, checked through OpenBLAS") {
  // cuBLAS is column-major; GpuBackend::gemm passes column_major(g)'s fields to cublas<t>gemmStridedBatched as they
  // are. OpenBLAS's column-major sgemm takes the same fields, so the mapping is checked here without a GPU.
  Generator gen(31);
  const int64_t m = 3, n = 4, k = 5, batch = 3;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true})
      for (const bool shared_a : {false, true})
        for (const bool accumulate : {false, true}) {
          const std::string what = std::string("ta ") + std::to_string(ta) + " tb " + std::to_string(tb) +
                                   " shared a " + std::to_string(shared_a) + " accumulate " + std::to_string(accumulate);
          INFO(what);
          cuda::Gemm g = cuda::Gemm::rows(ta, tb, m, n, k, ta ? m : k, tb ? k : n);
          g.batch = batch;
          g.sa = shared_a ? 0 : m * k;
          g.sb = k * n;
          g.sc = m * n;
          g.accumulate = accumulate;
          const std::vector<double> a = rand({shared_a ? 1 : batch, m * k}, gen, DType::f64).to_vector();
          const std::vector<double> b = rand({batch, k * n}, gen, DType::f64).to_vector();
          std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end()), c(batch * m * n, 1.0f);
          const cuda::ColumnMajorGemm cm = cuda::column_major(g);
          for (int64_t e = 0; e < batch; ++e)
            cblas_sgemm(CblasColMajor, cm.trans_first ? CblasTrans : CblasNoTrans,
                        cm.trans_second ? CblasTrans : CblasNoTrans, int(cm.m), int(cm.n), int(cm.k), 1.0f,
                        bf.data() + e * cm.stride_first, int(cm.ld_first), af.data() + e * cm.stride_second,
                        int(cm.ld_second), cm.accumulate ? 1.0f : 0.0f, c.data() + e * cm.stride_c, int(cm.ldc));
          for (int64_t e = 0; e < batch; ++e)
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                double want = accumulate ? 1.0 : 0.0;
                for (int64_t p = 0; p < k; ++p) {
                  const double x = af[e * g.sa + (ta ? p * g.lda + i : i * g.lda + p)];
                  const double y = bf[e * g.sb + (tb ? j * g.ldb + p : p * g.ldb + j)];
                  want += x * y;
                }
                CHECK(c[e * m * n + i * n + j] == doctest::Approx(want).epsilon(1e-5));
              }
        }
}

TEST_CASE("matmul batched with broadcast batch axes matches naive loops") {
  Generator gen(2);
  struct S {
    Shape ba, bb;
  };
  const S batches[] = {{{2}, {2}},       {{2, 3}, {2, 3}}, {{1, 3}, {2, 3}}, {{2, 1}, {1, 3}},
                       {{2, 1}, {3}},    {{3}, {}},        {{}, {3}},        {{1}, {}},
                       {{}, {1}},        {{2, 3}, {1, 1}}, {{4}, {1}}};
  for (DType dt : {DType::f32, DType::f64})
    for (const S& s : batches)
      for (bool ta : {false, true})
        for (bool tb : {false, true})
          check_against_naive(randn(stored(s.ba, 4, 6, ta), gen, dt), randn(stored(s.bb, 6, 5, tb), gen, dt), ta, tb);
}

TEST_CASE("matmul folded (B,T,K) @ (K,N) path at non-trivial sizes") {
  Generator gen(3);
  for (DType dt : {DType::f32, DType::f64}) {
    check_against_naive(randn({3, 37, 53}, gen, dt), randn({53, 29}, gen, dt), false, false);
    check_against_naive(randn({3, 37, 53}, gen, dt), randn({29, 53}, gen, dt), false, true);
    check_against_naive(randn({2, 3, 37, 53}, gen, dt), randn({1, 53, 29}, gen, dt), false, false);
    check_against_naive(randn({3, 53, 37}, gen, dt), randn({53, 29}, gen, dt), true, false);
  }
}

TEST_CASE("matmul exact small examples") {
  const Tensor a = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  const Tensor b = Tensor::from_vector<float>({2, 2}, {5, 6, 7, 8});
  CHECK(matmul(a, b).to_vector() == std::vector<double>{19, 22, 43, 50});
  CHECK(matmul(a, b, true, false).to_vector() == std::vector<double>{26, 30, 38, 44});
  CHECK(matmul(a, b, false, true).to_vector() == std::vector<double>{17, 23, 39, 53});
  CHECK(matmul(a, b, true, true).to_vector() == std::vector<double>{23, 31, 34, 46});
  // (2,1,3) row vectors against a shared (3,2).
  const Tensor r = Tensor::from_vector<double>({2, 1, 3}, {1, 0, 2, -1, 1, 0});
  const Tensor w = Tensor::from_vector<double>({3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor y = matmul(r, w);
  CHECK(y.shape() == Shape{2, 1, 2});
  CHECK(y.to_vector() == std::vector<double>{11, 14, 2, 2});
  // K = 0 gives zeros, not garbage.
  const Tensor z = matmul(Tensor::ones({2, 0}), Tensor::ones({0, 3}));
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.to_vector() == std::vector<double>(6, 0.0));
}

TEST_CASE("matmul backward values on a Linear-shaped product") {
  // y = sum(x @ w): dx[b,t,k] = sum_n w[k,n], dw[k,n] = sum_{b,t} x[b,t,k].
  Tensor x = Tensor::from_vector<double>({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}).requires_grad_();
  Tensor w = Tensor::from_vector<double>({3, 2}, {1, -1, 2, 0.5, -3, 4}).requires_grad_();
  backward(sum(matmul(x, w)));
  CHECK(x.grad().to_vector() == std::vector<double>{0, 2.5, 1, 0, 2.5, 1, 0, 2.5, 1, 0, 2.5, 1});
  CHECK(w.grad().to_vector() == std::vector<double>{22, 22, 26, 26, 30, 30});
  // Same through trans_b: w stored as (N, K).
  Tensor wt = Tensor::from_vector<double>({2, 3}, {1, 2, -3, -1, 0.5, 4}).requires_grad_();
  x.zero_grad();
  backward(sum(matmul(x, wt, false, true)));
  CHECK(x.grad().to_vector() == std::vector<double>{0, 2.5, 1, 0, 2.5, 1, 0, 2.5, 1, 0, 2.5, 1});
  CHECK(wt.grad().to_vector() == std::vector<double>{22, 26, 30, 22, 26, 30});
}

TEST_CASE("matmul errors name the op, shapes and flags") {
  const std::string inner = error_of([] { matmul(Tensor::ones({2, 3}), Tensor::ones({4, 5})); });
  CHECK(contains(inner, "matmul"));
  CHECK(contains(inner, "[2, 3]"));
  CHECK(contains(inner, "[4, 5]"));
  const std::string inner_t = error_of([] { matmul(Tensor::ones({2, 3}), Tensor::ones({2, 3}), false, false); });
  CHECK(contains(inner_t, "trans_b=0"));
  CHECK(error_of([] { matmul(Tensor::ones({2, 3}), Tensor::ones({2, 3}), true, false); }) == "");
  const std::string batch = error_of([] { matmul(Tensor::ones({2, 3, 4}), Tensor::ones({3, 4, 5})); });
  CHECK(contains(batch, "matmul"));
  CHECK(contains(batch, "batch"));
  CHECK(contains(batch, "[2, 3, 4]"));
  CHECK(contains(batch, "[3, 4, 5]"));
  const std::string dtypes = error_of([] { matmul(Tensor::ones({2, 2}), Tensor::ones({2, 2}, DType::f64)); });
  CHECK(contains(dtypes, "matmul"));
  CHECK(contains(dtypes, "float64"));
  const std::string ints = error_of([] { matmul(Tensor::indices({1, 1}, {1}), Tensor::indices({1, 1}, {2})); });
  CHECK(contains(ints, "matmul"));
  CHECK(contains(ints, "int64"));
  const std::string vec = error_of([] { matmul(Tensor::ones({3}), Tensor::ones({3, 2})); });
  CHECK(contains(vec, "matmul"));
  CHECK(contains(vec, "[3]"));
}

TEST_CASE("linear equals its composite add(matmul(x, weight^T), bias), gradients included") {
  Generator gen(8);
  // Small products run as one BLAS call; (2048, 128) @ (384, 128)^T is split into row blocks that each start
  // from the bias (beta = 1); a 3-row input goes below the split; in = 0 leaves just the bias.
  struct Size { Shape x; int64_t out; };
  for (const Size& sz : {Size{{32, 64, 128}, 384}, Size{{3, 5}, 4}, Size{{2, 40, 16}, 8}, Size{{7}, 3}})
    for (DType dt : {DType::f32, DType::f64})
      for (bool with_bias : {true, false}) {
        INFO("x ", sz.x, " out ", sz.out, " ", dtype_name(dt), with_bias ? " with bias" : " without bias");
        const int64_t in = sz.x.back();
        const Tensor x = randn(sz.x, gen, dt).requires_grad_(), w = randn({sz.out, in}, gen, dt).requires_grad_();
        const Tensor b = with_bias ? randn({sz.out}, gen, dt).requires_grad_() : Tensor();
        Shape so = sz.x;
        so[so.size() - 1] = sz.out;
        const Tensor g = randn(so, gen, dt);
        const double tol = dt == DType::f32 ? 1e-5 : 1e-12;
        auto run = [&](bool fused) {
          for (const Tensor* t : {&x, &w, &b})
            if (t->defined()) t->zero_grad();
          const Tensor xx = x.dim() == 1 ? reshape(x, {1, in}) : x;
          Tensor y = fused ? linear(x, w, b) : matmul(xx, w, false, true);
          if (!fused) {
            if (b.defined()) y = add(y, b);
            y = reshape(y, {so.begin(), so.end()});
          }
          backward(y, g);
          std::vector<Tensor> r{y.detach(), x.grad(), w.grad()};
          if (b.defined()) r.push_back(b.grad());
          return r;
        };
        const std::vector<Tensor> fused = run(true), composite = run(false);
        for (std::size_t i = 0; i < fused.size(); ++i) {
          INFO("tensor ", i, " (output, dx, dweight, dbias)");
          REQUIRE(fused[i].shape() == composite[i].shape());
          const std::vector<double> f = fused[i].to_vector(), c = composite[i].to_vector();
          double worst = 0;
          for (std::size_t j = 0; j < f.size(); ++j) worst = std::max(worst, std::abs(f[j] - c[j]) / (1 + std::abs(c[j])));
          CHECK(worst <= tol);
        }
      }
  // in = 0: every output row is the bias.
  const Tensor y = linear(Tensor::ones({2, 0}), Tensor::ones({3, 0}), Tensor::from_vector<float>({3}, {1, 2, 3}));
  CHECK(y.to_vector() == std::vector<double>{1, 2, 3, 1, 2, 3});
  CHECK(linear(Tensor::ones({2, 0}), Tensor::ones({3, 0})).to_vector() == std::vector<double>(6, 0.0));
}

TEST_CASE("linear errors name the op and the shapes") {
  const std::string features = error_of([] { linear(Tensor::ones({2, 3}), Tensor::ones({4, 5})); });
  CHECK(contains(features, "linear: input [2, 3] does not end in 5 features (weight [4, 5])"));
  CHECK(contains(error_of([] { linear(Tensor::ones({2, 3}), Tensor::ones({3})); }), "weight must be (out, in), got [3]"));
  CHECK(contains(error_of([] { linear(Tensor::ones({2, 3}), Tensor::ones({4, 3}), Tensor::ones({3})); }),
                 "linear: bias float32 [3] is not float32 [4] for weight [4, 3]"));
  CHECK(contains(error_of([] { linear(Tensor::ones({2, 3}), Tensor::ones({4, 3}, DType::f64)); }),
                 "linear: expected float tensors of one dtype, got x float32 [2, 3] and weight float64 [4, 3]"));
}

TEST_CASE("index_select picks rows for any index shape") {
  for (DType dt : {DType::f32, DType::f64}) {
    const Tensor table = reshape(Tensor::arange(12, dt), {4, 3});
    const Tensor out = index_select(table, Tensor::indices({2, 2}, {3, 0, 3, 1}));
    CHECK(out.shape() == Shape{2, 2, 3});
    CHECK(out.dtype() == dt);
    CHECK(out.to_vector() == std::vector<double>{9, 10, 11, 0, 1, 2, 9, 10, 11, 3, 4, 5});
  }
  const Tensor t3 = reshape(Tensor::arange(12, DType::f64), {3, 2, 2});
  const Tensor o3 = index_select(t3, Tensor::indices({2}, {2, 2}));
  CHECK(o3.shape() == Shape{2, 2, 2});
  CHECK(o3.to_vector() == std::vector<double>{8, 9, 10, 11, 8, 9, 10, 11});
  const Tensor o1 = index_select(Tensor::arange(5, DType::f64), Tensor::indices({3}, {4, 0, 4}));
  CHECK(o1.to_vector() == std::vector<double>{4, 0, 4});
}

TEST_CASE("index_select backward sums repeated indices") {
  Tensor table = Tensor::zeros({3, 2}, DType::f64).requires_grad_();
  const Tensor out = index_select(table, Tensor::indices({2, 2}, {1, 1, 2, 1}));
  backward(out, reshape(Tensor::arange(8, DType::f64), {2, 2, 2}));
  // row 1 receives g rows 0, 1, 3; row 2 receives g row 2; row 0 nothing.
  CHECK(table.grad().to_vector() == std::vector<double>{0, 0, 0 + 2 + 6, 1 + 3 + 7, 4, 5});
}

TEST_CASE("index_select errors name the bad index, its position and the table size") {
  const Tensor table = Tensor::ones({4, 3});
  const std::string e = error_of([&] { index_select(table, Tensor::indices({3}, {0, 7, 1})); });
  CHECK(contains(e, "index_select"));
  CHECK(contains(e, "index 7"));
  CHECK(contains(e, "position 1"));
  CHECK(contains(e, "[0, 4)"));
  const std::string neg = error_of([&] { index_select(table, Tensor::indices({2, 2}, {0, 1, 2, -1})); });
  CHECK(contains(neg, "index -1"));
  CHECK(contains(neg, "position 3"));
  const std::string dt = error_of([&] { index_select(table, Tensor::ones({2})); });
  CHECK(contains(dt, "index_select"));
  CHECK(contains(dt, "int64"));
}

TEST_CASE("gather follows torch.gather semantics") {
  const Tensor x = Tensor::from_vector<double>({2, 2}, {1, 2, 3, 4});
  // torch.gather(t, 1, [[0, 0], [1, 0]]) = [[1, 1], [4, 3]]
  CHECK(gather(x, 1, Tensor::indices({2, 2}, {0, 0, 1, 0})).to_vector() == std::vector<double>{1, 1, 4, 3});
  // along axis 0: out[i][j] = x[index[i][j]][j]
  CHECK(gather(x, 0, Tensor::indices({2, 2}, {1, 0, 0, 0})).to_vector() == std::vector<double>{3, 2, 1, 2});
  // index smaller than x along a non-gathered dim, float32.
  const Tensor y = reshape(Tensor::arange(12), {3, 4});
  const Tensor g = gather(y, -1, Tensor::indices({2, 1}, {3, 0}));
  CHECK(g.shape() == Shape{2, 1});
  CHECK(g.dtype() == DType::f32);
  CHECK(g.to_vector() == std::vector<double>{3, 4});
  const Tensor z = reshape(Tensor::arange(24, DType::f64), {2, 3, 4});
  // out[i][j][k] = z[i][idx][k]
  CHECK(gather(z, 1, Tensor::indices({2, 1, 2}, {2, 0, 1, 1})).to_vector() == std::vector<double>{8, 1, 16, 17});
}

TEST_CASE("gather backward scatter-adds and errors name bad indices") {
  Tensor x = Tensor::zeros({2, 3}, DType::f64).requires_grad_();
  backward(gather(x, 1, Tensor::indices({2, 2}, {2, 2, 0, 1})), Tensor::from_vector<double>({2, 2}, {1, 2, 3, 4}));
  CHECK(x.grad().to_vector() == std::vector<double>{0, 0, 3, 3, 4, 0});
  const std::string e = error_of([] { gather(Tensor::ones({2, 3}), 1, Tensor::indices({2, 1}, {0, 3})); });
  CHECK(contains(e, "gather"));
  CHECK(contains(e, "index 3"));
  CHECK(contains(e, "position 1"));
  CHECK(contains(e, "[2, 3]"));
  const std::string rank = error_of([] { gather(Tensor::ones({2, 3}), 1, Tensor::indices({2}, {0, 1})); });
  CHECK(contains(rank, "gather"));
  CHECK(contains(rank, "rank"));
  const std::string big = error_of([] { gather(Tensor::ones({2, 3}), 1, Tensor::indices({3, 1}, {0, 1, 2})); });
  CHECK(contains(big, "gather"));
  CHECK(contains(big, "[3, 1]"));
}

TEST_CASE("masked_fill hand examples, -inf and lowest fills") {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor row_mask = Tensor::indices({3}, {0, 1, 0});
  const std::vector<double> o = masked_fill(x, row_mask, -inf).to_vector();
  CHECK(o == std::vector<double>{1, -inf, 3, 4, -inf, 6});
  // A (2, 1) float mask fills whole rows.
  CHECK(masked_fill(x, Tensor::from_vector<float>({2, 1}, {0, 1}), 9).to_vector() ==
        std::vector<double>{1, 2, 3, 9, 9, 9});
  const double low = std::numeric_limits<float>::lowest();
  CHECK(masked_fill(x, Tensor::from_vector<double>({2, 3}, {1, 0, 0, 0, 0, 0.5}), low).to_vector() ==
        std::vector<double>{low, 2, 3, 4, 5, low});
  // causal mask on (1, 3, 3) float64 scores
  const Tensor s = Tensor::ones({1, 3, 3}, DType::f64);
  const Tensor causal = Tensor::indices({3, 3}, {0, 1, 1, 0, 0, 1, 0, 0, 0});
  CHECK(masked_fill(s, causal, -1e9).to_vector() == std::vector<double>{1, -1e9, -1e9, 1, 1, -1e9, 1, 1, 1});
  // backward: g where not filled
  Tensor v = Tensor::ones({2, 3}, DType::f64).requires_grad_();
  backward(masked_fill(v, row_mask, -inf), Tensor::full({2, 3}, 2.0, DType::f64));
  CHECK(v.grad().to_vector() == std::vector<double>{2, 0, 2, 2, 0, 2});
  const std::string e = error_of([] { masked_fill(Tensor::ones({3}), Tensor::indices({2, 3}, {0, 0, 0, 0, 0, 0}), 0); });
  CHECK(contains(e, "masked_fill"));
  CHECK(contains(e, "[2, 3]"));
  CHECK(contains(e, "[3]"));
}

TEST_CASE("where hand examples with broadcasting") {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor cond = Tensor::indices({2, 1}, {1, 0});
  const Tensor a = Tensor::from_vector<double>({3}, {1, 2, 3});
  const Tensor b = Tensor::from_vector<double>({2, 3}, {-1, -2, -3, -4, -5, -6});
  CHECK(where(cond, a, b).to_vector() == std::vector<double>{1, 2, 3, -4, -5, -6});
  // elementwise float condition, -inf in b, float32
  const Tensor c2 = Tensor::from_vector<float>({4}, {0, 2.5, 0, -1});
  const Tensor x = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  const Tensor out = where(c2, x, Tensor::full({}, -inf));
  CHECK(out.dtype() == DType::f32);
  CHECK(out.to_vector() == std::vector<double>{-inf, 2, -inf, 4});
  // all three broadcast: (2,1,1), (1,2,1), (1,1,2) -> (2,2,2)
  const Tensor w = where(Tensor::indices({2, 1, 1}, {1, 0}), Tensor::from_vector<double>({1, 2, 1}, {10, 20}),
                         Tensor::from_vector<double>({1, 1, 2}, {-1, -2}));
  CHECK(w.shape() == Shape{2, 2, 2});
  CHECK(w.to_vector() == std::vector<double>{10, 10, 20, 20, -1, -2, -1, -2});
  // backward: gradients split by the condition, summed to each input's shape
  Tensor ga = a.clone().requires_grad_();
  Tensor gb = b.clone().requires_grad_();
  backward(where(cond, ga, gb), reshape(Tensor::arange(6, DType::f64), {2, 3}));
  CHECK(ga.grad().to_vector() == std::vector<double>{0, 1, 2});
  CHECK(gb.grad().to_vector() == std::vector<double>{0, 0, 0, 3, 4, 5});
  const std::string dt = error_of([] { where(Tensor::indices({1}, {1}), Tensor::ones({2}), Tensor::ones({2}, DType::f64)); });
  CHECK(contains(dt, "where"));
  CHECK(contains(dt, "float64"));
  const std::string sh = error_of([] { where(Tensor::indices({3}, {1, 0, 1}), Tensor::ones({2}), Tensor::ones({2})); });
  CHECK(contains(sh, "where"));
  CHECK(contains(sh, "[3]"));
  CHECK(contains(sh, "[2]"));
}

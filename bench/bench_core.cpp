// bench_core: the core engine's performance floor, as ratios measured in one run.
//   - float32 matmul against cblas_sgemm on the same buffers (target: >= 0.90);
//   - elementwise and reduction ops against hand-written Eigen loops (the vectorized floor);
//   - forward+backward of a small MLP: the tape's overhead per op beside the ops' own time.
// Every figure is the median of interleaved repetitions. Usage: bench_core [--quick]
#include <cblas.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/core.h"
#include "core/parallel.h"

using namespace rpb;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(const std::function<void()>& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs a and b alternately `reps` times (after a warm-up), returning the median time of each.
// OpenBLAS's idle threads spin for about 2^28 cycles after a threaded call; let them fall asleep (outside the
// timed region) so they do not take the cores from rpb's pool in the next measurement.
void settle_openblas() { std::this_thread::sleep_for(std::chrono::milliseconds(250)); }

// Median seconds of a and of b, run alternately; `after_b` (untimed) runs after each b.
std::pair<double, double> interleaved(int reps, const std::function<void()>& a, const std::function<void()>& b,
                                      const std::function<void()>& after_b = {}) {
  a();
  b();
  if (after_b) after_b();
  std::vector<double> ta, tb;
  for (int r = 0; r < reps; ++r) {
    ta.push_back(seconds(a));
    tb.push_back(seconds(b));
    if (after_b) after_b();
  }
  return {median(ta), median(tb)};
}

void bench_matmul(int reps) {
  std::printf("\n## matmul float32 (rpb::matmul vs cblas_sgemm, same inputs)\n");
  std::printf("%6s %12s %12s %10s %10s %8s\n", "n", "rpb ms", "sgemm ms", "rpb GF/s", "sgemm GF/s", "ratio");
  Generator gen(1);
  for (int n : {64, 128, 256, 512, 1024}) {
    const Tensor a = randn({n, n}, gen), b = randn({n, n}, gen);
    Tensor c_ref = Tensor::empty({n, n});
    Tensor c;
    const int inner = std::max(1, (1 << 27) / (n * n * n));  // repeat small sizes for timer resolution
    auto [t_rpb, t_blas] = interleaved(
        reps,
        [&] {
          for (int i = 0; i < inner; ++i) c = matmul(a, b);
        },
        [&] {
          // OpenBLAS at its best, on its own threads; rpb::matmul sets it back to one thread and splits the
          // product over rpb's pool instead.
          openblas_set_num_threads(num_threads());
          for (int i = 0; i < inner; ++i)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data<float>(), n, b.data<float>(), n,
                        0.0f, c_ref.mutable_data<float>(), n);
        },
        settle_openblas);
    t_rpb /= inner;
    t_blas /= inner;
    const double flop = 2.0 * n * n * n;
    std::printf("%6d %12.4f %12.4f %10.1f %10.1f %8.3f\n", n, 1e3 * t_rpb, 1e3 * t_blas, flop / t_rpb * 1e-9,
                flop / t_blas * 1e-9, t_blas / t_rpb);
  }
  // The batched attention shape and the folded Linear shape.
  const Tensor q = randn({16, 8, 128, 64}, gen), k = randn({16, 8, 128, 64}, gen);
  const Tensor xin = randn({32, 64, 128}, gen), w = randn({128, 512}, gen);
  auto [t_att, t_lin] = interleaved(
      reps, [&] { matmul(q, k, false, true); }, [&] { matmul(xin, w); });
  std::printf("batched (16,8,128,64)@(..)^T: %.2f GF/s; folded (32,64,128)@(128,512): %.2f GF/s\n",
              2.0 * 16 * 8 * 128 * 128 * 64 / t_att * 1e-9, 2.0 * 32 * 64 * 128 * 512 / t_lin * 1e-9);
}

void bench_elementwise(int reps) {
  std::printf("\n## elementwise and reductions, float32, 4M elements (rpb op vs a plain Eigen expression)\n");
  // One thread on both sides, so the ratio is the kernels' and not the pool's (which splits rpb's elementwise
  // ops and row-wise kernels over the cores).
  const int threads = num_threads();
  set_num_threads(1);
  std::printf("%-34s %10s %10s %8s\n", "op", "rpb ms", "eigen ms", "ratio");
  Generator gen(2);
  const int64_t rows = 2048, cols = 2048;
  const Tensor x = randn({rows, cols}, gen), y = randn({rows, cols}, gen), bias = randn({cols}, gen);
  Tensor out = Tensor::empty({rows, cols}), red = Tensor::empty({rows});
  const int64_t n = rows * cols;
  using A = Eigen::Map<Eigen::ArrayXf>;
  using CA = Eigen::Map<const Eigen::ArrayXf>;
  using M = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
  const float* px = x.data<float>();
  const float* py = y.data<float>();
  float* po = out.mutable_data<float>();
  struct Row {
    const char* name;
    std::function<void()> ours, eigen;
  };
  const std::vector<Row> table = {
      {"add (same shape)", [&] { add(x, y); }, [&] { A(po, n) = CA(px, n) + CA(py, n); }},
      {"mul (same shape)", [&] { mul(x, y); }, [&] { A(po, n) = CA(px, n) * CA(py, n); }},
      {"add (row broadcast: (R,C)+(C))", [&] { add(x, bias); },
       [&] {
         for (int64_t r = 0; r < rows; ++r) A(po + r * cols, cols) = CA(px + r * cols, cols) + CA(bias.data<float>(), cols);
       }},
      {"mul_scalar", [&] { mul_scalar(x, 1.5); }, [&] { A(po, n) = CA(px, n) * 1.5f; }},
      {"exp", [&] { exp(x); }, [&] { A(po, n) = CA(px, n).exp(); }},
      {"tanh", [&] { tanh(x); }, [&] { A(po, n) = CA(px, n).tanh(); }},
      {"relu", [&] { relu(x); }, [&] { A(po, n) = CA(px, n).max(0.0f); }},
      {"sum over last axis", [&] { sum(x, {1}); },
       [&] { Eigen::Map<Eigen::VectorXf>(red.mutable_data<float>(), rows) = M(px, rows, cols).rowwise().sum(); }},
      {"sum over first axis", [&] { sum(x, {0}); },
       [&] {
         Eigen::Map<Eigen::RowVectorXf>(po, cols) = M(px, rows, cols).colwise().sum();
       }},
      // rpb's max propagates NaN (as torch does); the baseline is Eigen's NaN-propagating max.
      {"max over last axis", [&] { max(x, {1}); },
       [&] {
         for (int64_t r = 0; r < rows; ++r) red.mutable_data<float>()[r] = CA(px + r * cols, cols).maxCoeff<Eigen::PropagateNaN>();
       }},
      {"softmax over last axis", [&] { softmax(x); },
       [&] {
         for (int64_t r = 0; r < rows; ++r) {
           auto row = CA(px + r * cols, cols);
           A o(po + r * cols, cols);
           o = (row - row.maxCoeff()).exp();
           o /= o.sum();
         }
       }},
  };
  for (const Row& r : table) {
    auto [t_ours, t_eigen] = interleaved(reps, r.ours, r.eigen);
    std::printf("%-34s %10.3f %10.3f %8.3f\n", r.name, 1e3 * t_ours, 1e3 * t_eigen, t_eigen / t_ours);
  }
  set_num_threads(threads);
}

// A 3-layer MLP step: 3 matmuls, 3 bias adds, 2 tanh, cross-entropy.
struct Mlp {
  Tensor w1, b1, w2, b2, w3, b3, x, y;
  Mlp(int64_t batch, int64_t in, int64_t hidden, int64_t classes, Generator& gen) {
    w1 = randn({in, hidden}, gen, DType::f32, 0, 0.1).requires_grad_();
    b1 = Tensor::zeros({hidden}).requires_grad_();
    w2 = randn({hidden, hidden}, gen, DType::f32, 0, 0.1).requires_grad_();
    b2 = Tensor::zeros({hidden}).requires_grad_();
    w3 = randn({hidden, classes}, gen, DType::f32, 0, 0.1).requires_grad_();
    b3 = Tensor::zeros({classes}).requires_grad_();
    x = randn({batch, in}, gen);
    y = randint({batch}, classes, gen);
  }
  Tensor loss() const {
    Tensor h = tanh(matmul(x, w1) + b1);
    h = tanh(matmul(h, w2) + b2);
    return cross_entropy(matmul(h, w3) + b3, y);
  }
  void zero() const {
    for (const Tensor* t : {&w1, &b1, &w2, &b2, &w3, &b3}) t->zero_grad();
  }
};

void bench_tape(int reps) {
  std::printf("\n## tape overhead: MLP forward+backward (3 matmul, 3 add, 2 tanh, cross_entropy = 9 ops)\n");
  std::printf("%-22s %10s %12s %12s %12s %12s\n", "size (B,in,H,C)", "ops", "fwd no-grad", "fwd taped", "backward",
              "record/op");
  Generator gen(3);
  struct Size {
    int64_t b, in, h, c;
  };
  for (Size s : {Size{1, 1, 1, 2}, Size{32, 64, 64, 10}, Size{256, 256, 256, 10}}) {
    const Mlp m(s.b, s.in, s.h, s.c, gen);
    tape().clear();
    m.loss();
    const double ops = static_cast<double>(tape().size());
    tape().clear();
    const int inner = s.b == 1 ? 2000 : (s.b == 32 ? 200 : 5);
    std::vector<double> t_nograd, t_fwd, t_bwd;
    for (int r = 0; r < reps; ++r) {
      t_nograd.push_back(seconds([&] {
        NoGradGuard g;
        for (int i = 0; i < inner; ++i) m.loss();
      }));
      double fwd = 0, bwd = 0;
      for (int i = 0; i < inner; ++i) {
        Tensor l;
        fwd += seconds([&] { l = m.loss(); });
        bwd += seconds([&] { backward(l); });
        m.zero();
      }
      t_fwd.push_back(fwd);
      t_bwd.push_back(bwd);
    }
    const double ng = median(t_nograd) / inner, f = median(t_fwd) / inner, b = median(t_bwd) / inner;
    char label[64];
    std::snprintf(label, sizeof label, "(%ld,%ld,%ld,%ld)", (long)s.b, (long)s.in, (long)s.h, (long)s.c);
    std::printf("%-22s %10.0f %10.2fus %10.2fus %10.2fus %10.0fns\n", label, ops, 1e6 * ng, 1e6 * f, 1e6 * b,
                1e9 * (f - ng) / ops);
  }
  std::printf("(record/op = (taped - no-grad forward) / ops: the cost of appending a node and its gradient slot.\n"
              " At size (1,1,1,2) every op is pure overhead: fwd no-grad/ops is the dispatch+allocation cost per op,\n"
              " backward/ops the per-node cost of the reverse loop.)\n");
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int reps = quick ? 3 : 9;
  std::printf("# rpb core benchmark (%s; median of %d interleaved repetitions)\n", quick ? "quick" : "full", reps);
  bench_matmul(reps);
  bench_elementwise(reps);
  bench_tape(reps);
  return 0;
}

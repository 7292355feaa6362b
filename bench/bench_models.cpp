// bench_models: rpb's side of bench/compare.py, one measurement per process (so ru_maxrss is that
// case's peak). Prints one JSON line. The PyTorch side is bench/torch_models.py.
//
//   bench_models --case A|B [--steps 20] [--warmup 3] [--impl fused|reference]
//       train steps (forward, backward, AdamW) of the decoder LM A or B: tokens/s
//   bench_models --case C --length 4096 [--scheme t5|fire|xpos] [--steps 1] [--warmup 1] [--impl fused|reference]
//       evaluation (no gradients, forward + loss) of model A on one sequence, with the t5 scheme (the default)
//       or with FIRE or xPos (issue 27; their fused path holds O(L) memory: FIRE's bias is computed tile by tile)
//   bench_models --case D --length 1024 [--steps 3] [--warmup 1] [--impl fused|reference]
//       t5-biased causal attention alone, forward + backward: 8 heads, head dim 64, batch 1
//   bench_models --case sgemm [--length 2048]
//       cblas_sgemm on (n, n) @ (n, n), the machine's float32 ceiling
//   bench_models --case parity --out DIR
//       model A from a fixed seed, written as an rpb checkpoint (DIR/model.h5) with a batch, rpb's
//       float32 and float64 losses on it and its gradients (DIR/parity.json), for torch_models.py
//
// FLOPs are counted analytically (bench/compare.py documents the same count): a matmul
// (M, K) @ (K, N) is 2 M N K; attention counts q k^T and p v over the full L x L (causal included);
// a train step or an attention backward is 3x the forward. A position scheme's own work (t5's bucket lookup,
// FIRE's MLP, xPos's rotation) is not counted, so model A counts the same FLOPs under every scheme.
#include <cblas.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "train/checkpoint/checkpoint.h"
#include "train/rpb.h"

using namespace rpb;
using Clock = std::chrono::steady_clock;

namespace {

struct ModelSize {
  int64_t d_model, heads, layers, d_ff, length, batch;
};
constexpr ModelSize kModelA{128, 4, 2, 512, 64, 32};
constexpr ModelSize kModelB{256, 8, 4, 1024, 256, 16};
constexpr int64_t kVocab = 64;
constexpr int64_t kAttnHeads = 8, kAttnHeadDim = 64;  // case D

// Model A's position schemes for case C: t5 (every other case's), and FIRE and xPos with their defaults
// (nn/position/scheme.h; python/rpb_torch.py builds the same from a config that leaves them unset).
const std::vector<std::string> kEvalSchemes{"t5", "fire", "xpos"};

// The [position] options of `scheme` for a model trained at `train_length` tokens: t5 with 32 buckets up to
// distance 128; fire with L0 = the train length (fire_length 0) and a 32-wide MLP; xpos with rope_base 10000 and
// scale base 512, not blockwise.
nn::PositionOptions position_options(const std::string& scheme, int64_t train_length) {
  nn::PositionOptions p;
  p.scheme = scheme;
  p.num_buckets = 32;
  p.max_distance = 128;
  p.train_length = train_length;
  return p;
}

nn::TransformerOptions model_options(const ModelSize& m, bool fused, const std::string& scheme = "t5") {
  nn::TransformerOptions o;
  o.vocab = kVocab;
  o.d_model = m.d_model;
  o.heads = m.heads;
  o.layers = m.layers;
  o.d_ff = m.d_ff;
  o.fused_attention = fused;
  o.position = position_options(scheme, m.length);
  return o;  // causal, tied head, one shared position module, tanh GELU, LayerNorm eps 1e-5: the defaults
}

// Forward FLOPs of the decoder LM on (batch, length) tokens.
double model_forward_flops(const ModelSize& m, int64_t batch, int64_t length) {
  const double t = static_cast<double>(batch * length), d = m.d_model, ff = m.d_ff;
  const double per_layer = 2 * t * d * (3 * d) + 2 * t * d * d + 2 * (2 * t * d * ff)  // qkv, out, fc1 + fc2
                           + 2 * (2.0 * batch * length * length * d);                  // q k^T and p v
  return m.layers * per_layer + 2 * t * d * kVocab;                                     // tied head
}

double attention_forward_flops(int64_t length) {
  return 2 * (2.0 * kAttnHeads * length * length * kAttnHeadDim);
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux: KiB
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// `warmup` untimed runs of f, then the mean seconds of `steps` timed ones.
double time_steps(int warmup, int steps, const std::function<void()>& f) {
  for (int i = 0; i < warmup; ++i) f();
  return seconds_of([&] {
           for (int i = 0; i < steps; ++i) f();
         }) /
         steps;
}

struct Result {
  std::string bench_case, impl, scheme = "t5";
  int64_t length = 0;
  double sec_per_step = 0, flops_per_step = 0, tokens_per_step = 0;
};

void print_json(const Result& r) {
  std::printf(
      "{\"side\": \"rpb\", \"case\": \"%s\", \"impl\": \"%s\", \"scheme\": \"%s\", \"length\": %lld, "
      "\"sec_per_step\": %.6g, \"tokens_per_s\": %.6g, \"flops_per_step\": %.6g, \"gflops\": %.6g, "
      "\"peak_rss_mb\": %.6g, \"tensor_peak_mb\": %.6g}\n",
      r.bench_case.c_str(), r.impl.c_str(), r.scheme.c_str(), static_cast<long long>(r.length), r.sec_per_step,
      r.tokens_per_step / r.sec_per_step, r.flops_per_step, r.flops_per_step / r.sec_per_step * 1e-9, peak_rss_mb(),
      static_cast<double>(peak_memory_bytes()) / (1024.0 * 1024.0));
  std::fflush(stdout);
}

Result bench_train(const ModelSize& m, bool fused, int warmup, int steps) {
  Generator gen(1);
  nn::LanguageModel model(model_options(m, fused), gen);
  optim::Adam opt(model.named_parameters(), {.weight_decay = 0.01});
  const Tensor tokens = randint({m.batch, m.length}, kVocab, gen);
  const Tensor targets = randint({m.batch, m.length}, kVocab, gen);
  const double sec = time_steps(warmup, steps, [&] {
    opt.zero_grad();
    const Tensor loss = model.loss(tokens, targets);
    backward(loss);
    opt.step(1e-3);
  });
  return {"", "", "t5", m.length, sec, 3 * model_forward_flops(m, m.batch, m.length),
          static_cast<double>(m.batch * m.length)};
}

Result bench_eval(int64_t length, const std::string& scheme, bool fused, int warmup, int steps) {
  Generator gen(1);
  nn::LanguageModel model(model_options(kModelA, fused, scheme), gen);
  model.eval();
  const Tensor tokens = randint({1, length}, kVocab, gen);
  const Tensor targets = randint({1, length}, kVocab, gen);
  NoGradGuard no_grad;
  const double sec = time_steps(warmup, steps, [&] { model.loss(tokens, targets).item(); });
  return {"", "", scheme, length, sec, model_forward_flops(kModelA, 1, length), static_cast<double>(length)};
}

Result bench_attention(int64_t length, bool fused, int warmup, int steps) {
  Generator gen(1);
  const Shape shape{1, kAttnHeads, length, kAttnHeadDim};
  const Tensor q = randn(shape, gen).requires_grad_(), k = randn(shape, gen).requires_grad_(),
               v = randn(shape, gen).requires_grad_();
  const Tensor g = randn(shape, gen);
  nn::PositionOptions po;
  po.scheme = "t5";
  po.heads = kAttnHeads;
  po.causal = true;
  const auto pos = nn::make_position_scheme(po, gen);
  const double scale = 1.0 / std::sqrt(static_cast<double>(kAttnHeadDim));
  const Tensor mask = fused ? Tensor() : nn::causal_mask(length, length, 0);
  const double sec = time_steps(warmup, steps, [&] {
    for (const Tensor* t : {&q, &k, &v}) t->zero_grad();
    pos->zero_grad();
    const Tensor out =
        fused ? fused_attention(q, k, v, pos->relative_bias(nn::Positions::line(length, length)), Tensor(), Tensor(),
                                AttentionSpec{scale, true, 0})
              : nn::scaled_dot_product_attention(q, k, v, pos->bias(nn::Positions::line(length, length)), mask, scale);
    backward(out, g);
  });
  return {"", "", "t5", length, sec, 3 * attention_forward_flops(length), static_cast<double>(length)};
}

Result bench_sgemm(int64_t n) {
  Generator gen(1);
  const Tensor a = randn({n, n}, gen), b = randn({n, n}, gen);
  Tensor c = Tensor::empty({n, n});
  auto run = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n), static_cast<int>(n),
                static_cast<int>(n), 1.0f, a.data<float>(), static_cast<int>(n), b.data<float>(), static_cast<int>(n),
                0.0f, c.mutable_data<float>(), static_cast<int>(n));
  };
  run();
  std::vector<double> t;
  for (int i = 0; i < 7; ++i) t.push_back(seconds_of(run));
  std::sort(t.begin(), t.end());
  return {"", "", "", n, t[t.size() / 2], 2.0 * n * n * n, 0};
}

// ---- parity: the checkpoint, batch and losses torch_models.py checks against ----

// Moves every parameter away from its initialisation (matrices and the bias table at a scale where
// attention is far from uniform, LayerNorm scales around 1), so that a wrong bucket, mask, scale or
// GELU in the other implementation moves the loss well past the tolerance.
void spread_parameters(nn::Module& model, Generator& gen) {
  for (const auto& [name, p] : model.named_parameters()) {
    const bool ln = name.find("ln") != std::string::npos;
    const bool bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    const double mean = ln && !bias ? 1.0 : 0.0;
    const double std = name == "pos.t5.table" ? 1.0 : (ln || bias) ? 0.2 : 0.15;
    init::normal_(p, gen, std, mean);
  }
}

std::string json_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

std::string json_numbers(const std::vector<double>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + json_number(v[i]);
  return s + "]";
}

void write_parity(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const ModelSize m = kModelA;
  Generator gen(20260601);
  nn::LanguageModel model(model_options(m, true), gen);
  spread_parameters(model, gen);
  const Tensor tokens = randint({m.batch, m.length}, kVocab, gen);
  const Tensor targets = randint({m.batch, m.length}, kVocab, gen);

  Checkpoint c;
  c.config_text = "# bench/bench_models --case parity: model A (vocab 64, d_model 128, 4 heads, 2 layers, d_ff 512, t5)\n";
  for (const auto& [name, p] : model.named_parameters()) c.params.emplace_back(name, p.detach().clone());
  save_checkpoint(dir + "/model.h5", c);

  const Tensor loss = model.loss(tokens, targets);
  const double loss32 = loss.item();
  backward(loss);
  std::string grad_norms;
  Tensor table_grad;
  for (const auto& [name, p] : model.named_parameters()) {
    const Tensor gr = p.grad();
    double s = 0;
    for (double x : gr.to_vector()) s += x * x;
    grad_norms += (grad_norms.empty() ? "\"" : ", \"") + name + "\": " + json_number(std::sqrt(s));
    if (name == "pos.t5.table") table_grad = gr;
  }
  double loss_reference = 0;
  {
    nn::LanguageModel ref(model_options(m, false), gen);  // the unfused path on the same weights
    NoGradGuard no_grad;
    const auto src = model.named_parameters(), dst = ref.named_parameters();
    for (std::size_t i = 0; i < src.size(); ++i) dst[i].second.copy_(src[i].second);
    loss_reference = ref.loss(tokens, targets).item();
  }
  model.zero_grad();
  model.to(DType::f64);
  double loss64 = 0;
  {
    NoGradGuard no_grad;
    loss64 = model.loss(tokens, targets).item();
  }

  std::ofstream out(dir + "/parity.json");
  out << "{\"checkpoint\": \"model.h5\", \"batch\": " << m.batch << ", \"length\": " << m.length
      << ",\n \"parameter_count\": " << model.parameter_count() << ",\n \"loss_f32\": " << json_number(loss32)
      << ",\n \"loss_f32_reference\": " << json_number(loss_reference) << ",\n \"loss_f64\": " << json_number(loss64)
      << ",\n \"grad_norms\": {" << grad_norms
      << "},\n \"table_grad\": " << json_numbers(table_grad.to_vector()) << ",\n \"tokens\": "
      << json_numbers(tokens.to_vector()) << ",\n \"targets\": " << json_numbers(targets.to_vector()) << "}\n";
  out.close();
  if (!out) throw Error("bench_models: cannot write " + dir + "/parity.json");
  std::printf("{\"side\": \"rpb\", \"case\": \"parity\", \"loss_f32\": %.9g, \"loss_f32_reference\": %.9g, "
              "\"loss_f64\": %.17g, \"parameter_count\": %lld}\n",
              loss32, loss_reference, loss64, static_cast<long long>(model.parameter_count()));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rpb's side of bench/compare.py: one case, one JSON line"};
  std::string bench_case, impl = "fused", scheme = "t5", out_dir;
  int64_t length = 0;
  int steps = -1, warmup = -1;
  app.add_option("--case", bench_case, "A, B, C, D, sgemm or parity")
      ->required()
      ->check(CLI::IsMember({"A", "B", "C", "D", "sgemm", "parity"}));
  app.add_option("--length", length, "C and D: sequence length; sgemm: n");
  app.add_option("--scheme", scheme, "C: model A's position scheme (t5, the other cases' scheme; fire; xpos)")
      ->check(CLI::IsMember(kEvalSchemes));
  app.add_option("--steps", steps, "timed steps");
  app.add_option("--warmup", warmup, "untimed steps first");
  app.add_option("--impl", impl, "fused (the default path) or reference (unfused attention)")
      ->check(CLI::IsMember({"fused", "reference"}));
  app.add_option("--out", out_dir, "parity: where to write model.h5 and parity.json");
  CLI11_PARSE(app, argc, argv);

  try {
    const bool fused = impl == "fused";
    auto need_length = [&] {
      if (length <= 0) throw Error("bench_models: --case " + bench_case + " needs --length");
    };
    if (scheme != "t5" && bench_case != "C") throw Error("bench_models: --scheme is for --case C only");
    Result r;
    if (bench_case == "A" || bench_case == "B") {
      r = bench_train(bench_case == "A" ? kModelA : kModelB, fused, warmup < 0 ? 3 : warmup, steps < 0 ? 20 : steps);
    } else if (bench_case == "C") {
      need_length();
      r = bench_eval(length, scheme, fused, warmup < 0 ? 1 : warmup, steps < 0 ? 2 : steps);
    } else if (bench_case == "D") {
      need_length();
      r = bench_attention(length, fused, warmup < 0 ? 1 : warmup, steps < 0 ? 3 : steps);
    } else if (bench_case == "sgemm") {
      r = bench_sgemm(length > 0 ? length : 2048);
    } else {
      if (out_dir.empty()) throw Error("bench_models: --case parity needs --out DIR");
      write_parity(out_dir);
      return 0;
    }
    r.bench_case = bench_case;
    r.impl = bench_case == "sgemm" ? "cblas" : impl;
    print_json(r);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_models: %s\n", e.what());
    return 1;
  }
  return 0;
}

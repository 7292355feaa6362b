// The engine before the infrastructure: a small language model with T5's relative bias learns an order-1 Markov
// chain, written with rpb's public API from top to bottom: the data, the model, AdamW, a loop of forward, backward
// and step, and a held-out evaluation. `rpb train` does the same with configs, checkpoints and logs around it
// (train/trainer.cpp). ctest runs it as example.train_lm; it exits 1 unless the model learns the chain.
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/core.h"
#include "nn/transformer.h"
#include "optim/adam.h"

using namespace rpb;

int main() {
  // Data: a chain over V tokens whose next-token rows are softmaxes of Gaussian logits.
  const int64_t V = 16, B = 16, T = 64, steps = 200;
  Generator data(1);
  const std::vector<double> P = softmax(mul_scalar(randn({V, V}, data, DType::f64), 2.0), -1).to_vector();
  auto draw = [&](int64_t rows, int64_t L, Generator& g) {  // (rows, L + 1) tokens: inputs [:, :L], targets [:, 1:]
    std::vector<int64_t> v(static_cast<std::size_t>(rows * (L + 1)));
    for (int64_t r = 0; r < rows; ++r) {
      int64_t s = static_cast<int64_t>(g.uniform() * V);
      for (int64_t t = 0; t <= L; ++t) {
        v[r * (L + 1) + t] = s;
        double u = g.uniform(), c = 0;
        int64_t next = 0;
        while (next < V - 1 && (c += P[s * V + next]) <= u) ++next;
        s = next;
      }
    }
    const Tensor x = Tensor::indices({rows, L + 1}, v);
    return std::pair{slice(x, 1, 0, L), slice(x, 1, 1, L + 1)};
  };
  // The model: 2 layers of 4 heads, T5's bucketed relative bias (any scheme of `rpb schemes` fits here).
  nn::TransformerOptions o;
  o.vocab = V, o.d_model = 64, o.heads = 4, o.layers = 2, o.d_ff = 128;
  o.position.scheme = "t5";
  Generator init(0);
  nn::LanguageModel model(o, init);
  optim::Adam adamw(model.named_parameters(), {.weight_decay = 0.01});
  // Training: forward, backward, step.
  Generator batches(2);
  for (int64_t step = 1; step <= steps; ++step) {
    const auto [x, y] = draw(B, T, batches);
    adamw.zero_grad();
    const Tensor loss = model.loss(x, y);  // mean cross-entropy over (B, T) next tokens
    backward(loss);
    adamw.step(3e-3);
    model.project_parameters();  // constrained parameters back in range (kerple_power's); a no-op for T5
    if (step % 50 == 0) std::printf("step %3lld  loss %.4f\n", static_cast<long long>(step), loss.item());
  }
  // Evaluation: held-out sequences at the train length and at 4x, without recording a tape.
  NoGradGuard no_grad;
  Generator held_out(3);
  double ppl = 0;
  for (const int64_t L : {T, 4 * T}) {
    const auto [x, y] = draw(8, L, held_out);
    ppl = std::exp(model.loss(x, y).item());
    std::printf("held-out perplexity at %lld tokens: %.3f (uniform guessing: %lld)\n", static_cast<long long>(L),
                ppl, static_cast<long long>(V));
  }
  return ppl < 0.75 * static_cast<double>(V) ? 0 : 1;  // learned the chain, and keeps it at 4x the train length
}

// rpb/nn/layers.h: Linear, Embedding, LayerNorm, Dropout, MLP.
#pragma once

#include "core/ops.h"
#include "core/rng.h"
#include "nn/module.h"

namespace rpb::nn {

/// y = x W^T + b, with W stored (out, in) as in PyTorch, so checkpoints map 1:1.
/// Weights are initialised normal(0, init_std) (GPT-2 style), biases zero.
///
/// @code
/// rpb::Generator gen(0);
/// rpb::nn::Linear fc(4, 3, true, gen);
/// CHECK(fc.named_parameters()[0].first == "weight");
/// CHECK(fc.forward(rpb::Tensor::ones({2, 5, 4})).shape() == rpb::Shape{2, 5, 3});
/// @endcode
class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, bool bias, Generator& gen, double init_std = 0.02);
  /// The parameters of Linear(in, out, bias), counted without building it (throws on overflow).
  static int64_t parameter_count(int64_t in, int64_t out, bool bias);
  using Module::parameter_count;
  /// (..., in) -> (..., out)
  Tensor forward(const Tensor& x) const;

  Tensor weight;  // (out, in)
  Tensor bias;    // (out), undefined without bias
};

/// Rows of a (num, dim) table picked by i64 indices.
class Embedding : public Module {
 public:
  /// Rows ~ N(0, init_std); forward multiplies them by `scale` (Vaswani et al.'s sqrt(d)), which a tied head does
  /// not read: it uses `weight` itself.
  Embedding(int64_t num, int64_t dim, Generator& gen, double init_std = 0.02, double scale = 1.0);
  static int64_t parameter_count(int64_t num, int64_t dim);
  using Module::parameter_count;
  /// (...) i64 -> (..., dim)
  Tensor forward(const Tensor& index) const;

  Tensor weight;  // (num, dim)
  double scale;
};

/// Layer normalization over the last axis, with a learned scale (ones) and shift (zeros).
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5);
  static int64_t parameter_count(int64_t dim);
  using Module::parameter_count;
  Tensor forward(const Tensor& x) const;

  Tensor weight;  // (dim)
  Tensor bias;    // (dim)
  double eps;
};

/// Dropout that is active only in training mode; draws from a generator the owner keeps
/// (the model's, whose state checkpoints save), so runs are reproducible.
class Dropout : public Module {
 public:
  Dropout(double p, Generator& gen);
  Tensor forward(const Tensor& x) const;
  double p() const { return p_; }

 private:
  double p_;
  Generator* gen_;
};

/// fc2(dropout(gelu(fc1(x)))): the transformer feed-forward block.
class MLP : public Module {
 public:
  MLP(int64_t d_model, int64_t d_ff, double dropout, Generator& init_gen, Generator& dropout_gen,
      GeluApprox gelu = GeluApprox::tanh, double init_std = 0.02, double out_init_std = 0.02);
  static int64_t parameter_count(int64_t d_model, int64_t d_ff);
  using Module::parameter_count;
  Tensor forward(const Tensor& x) const;

  std::shared_ptr<Linear> fc1;
  std::shared_ptr<Linear> fc2;
  std::shared_ptr<Dropout> drop;
  GeluApprox gelu;
};

}  // namespace rpb::nn

#include "nn/layers.h"

#include "core/checked.h"
#include "nn/init.h"

namespace rpb::nn {

namespace {
Tensor normal_tensor(const Shape& shape, Generator& gen, double std) {
  Tensor t = Tensor::empty(shape);
  init::normal_(t, gen, std);
  return t;
}
}  // namespace

int64_t Linear::parameter_count(int64_t in, int64_t out, bool bias) {
  return checked_add(checked_mul(in, out, "linear", "parameters"), bias ? out : 0, "linear", "parameters");
}

int64_t Embedding::parameter_count(int64_t num, int64_t dim) { return checked_mul(num, dim, "embedding", "parameters"); }

int64_t LayerNorm::parameter_count(int64_t dim) { return checked_mul(2, dim, "layer_norm", "parameters"); }

int64_t MLP::parameter_count(int64_t d_model, int64_t d_ff) {
  return checked_add(Linear::parameter_count(d_model, d_ff, true), Linear::parameter_count(d_ff, d_model, true), "mlp",
                     "parameters");
}

Linear::Linear(int64_t in, int64_t out, bool with_bias, Generator& gen, double init_std)
    : weight(register_parameter("weight", normal_tensor({out, in}, gen, init_std))),
      bias(with_bias ? register_parameter("bias", Tensor::zeros({out})) : Tensor()) {
  RPB_CHECK(in > 0 && out > 0, "linear", "features must be positive, got in=", in, " out=", out);
}

Tensor Linear::forward(const Tensor& x) const { return linear(x, weight, bias); }

Embedding::Embedding(int64_t num, int64_t dim, Generator& gen, double init_std, double scale_)
    : weight(register_parameter("weight", normal_tensor({num, dim}, gen, init_std))), scale(scale_) {}

Tensor Embedding::forward(const Tensor& index) const {
  const Tensor rows = index_select(weight, index);
  return scale == 1.0 ? rows : mul_scalar(rows, scale);
}

LayerNorm::LayerNorm(int64_t dim, double eps_)
    : weight(register_parameter("weight", Tensor::ones({dim}))),
      bias(register_parameter("bias", Tensor::zeros({dim}))),
      eps(eps_) {}

Tensor LayerNorm::forward(const Tensor& x) const { return layer_norm(x, weight, bias, eps); }

Dropout::Dropout(double p, Generator& gen) : p_(p), gen_(&gen) {
  RPB_CHECK(p >= 0 && p < 1, "dropout", "probability must lie in [0, 1), got ", p);
}

Tensor Dropout::forward(const Tensor& x) const { return dropout(x, p_, *gen_, is_training()); }

MLP::MLP(int64_t d_model, int64_t d_ff, double p, Generator& init_gen, Generator& dropout_gen, GeluApprox gelu_,
         double init_std, double out_init_std)
    : fc1(register_module("fc1", std::make_shared<Linear>(d_model, d_ff, true, init_gen, init_std))),
      fc2(register_module("fc2", std::make_shared<Linear>(d_ff, d_model, true, init_gen, out_init_std))),
      drop(register_module("drop", std::make_shared<Dropout>(p, dropout_gen))),
      gelu(gelu_) {}

Tensor MLP::forward(const Tensor& x) const { return drop->forward(fc2->forward(rpb::gelu(fc1->forward(x), gelu))); }

}  // namespace rpb::nn

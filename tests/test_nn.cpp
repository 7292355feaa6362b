// nn/: modules, layers, attention and the transformer models.
#include <doctest/doctest.h>

#include <cmath>

#include "core/core.h"
#include "gradcheck.h"
#include "nn/init.h"
#include "nn/transformer.h"
#include "test_util.h"

using namespace rpb;
using namespace rpb::nn;
using rpb::testing::contains;
using rpb::testing::error_of;

namespace {

struct Named : Module {
  Tensor add_param(const std::string& n) { return register_parameter(n, Tensor::ones({1})); }
  Tensor add_buffer(const std::string& n) { return register_buffer(n, Tensor::ones({1})); }
  void add_child(const std::string& n) { register_module(n, std::make_shared<Named>()); }
};

TransformerOptions tiny(const std::string& scheme, bool causal = true) {
  TransformerOptions o;
  o.vocab = 7;
  o.d_model = 8;
  o.heads = 2;
  o.layers = 2;
  o.d_ff = 12;
  o.causal = causal;
  o.position.scheme = scheme;
  o.position.num_buckets = 8;
  o.position.train_length = 16;  // fire's L0
  o.position.max_distance = 16;
  o.position.max_relative_position = 3;
  o.position.max_positions = 80;
  return o;
}

std::vector<std::string> names_of(const Module& m) {
  std::vector<std::string> n;
  for (const auto& [name, t] : m.named_parameters()) n.push_back(name);
  return n;
}

// Gradient-checks a module in float64: its parameters are the checked inputs.
void check_module_gradients(Module& m, const std::function<Tensor()>& f, const std::string& what,
                            OpKind op = OpKind::Linear) {
  m.to(DType::f64);
  rpb::testing::GradCase c{what, op, {}, [&f](const std::vector<Tensor>&) { return f(); }};
  for (const auto& [name, t] : m.named_parameters()) c.inputs.push_back(t);
  const rpb::testing::GradcheckResult r = rpb::testing::gradcheck(c);
  INFO(what);
  CHECK(r.op_recorded);
  CHECK_MESSAGE(r.ok, r.report);
}

}  // namespace

TEST_CASE("module names: empty, dotted and duplicate names throw") {
  Named m;
  m.add_param("w");
  CHECK(contains(error_of([&] { m.add_param(""); }), "empty"));
  CHECK(contains(error_of([&] { m.add_param("a.b"); }), "contains a dot"));
  CHECK(contains(error_of([&] { m.add_param("w"); }), "'w' is already registered"));
  CHECK(contains(error_of([&] { m.add_buffer("w"); }), "already registered"));
  CHECK(contains(error_of([&] { m.add_child("w"); }), "already registered"));
  m.add_child("c");
  CHECK(names_of(m) == std::vector<std::string>{"w"});
  CHECK(m.named_buffers().empty());
}

TEST_CASE("Module::to converts parameters and float buffers in place and drops gradients") {
  struct Leaf : Module {
    Tensor w = register_parameter("w", Tensor::from_vector<float>({2}, {1.5, -2}));
    Tensor table = register_buffer("table", Tensor::full({3}, 0.25));
    Tensor index = register_buffer("index", Tensor::indices({2}, {0, 1}));
  };
  struct Outer : Module {
    Tensor bias = register_parameter("bias", Tensor::ones({1}));
    std::shared_ptr<Leaf> leaf = register_module("leaf", std::make_shared<Leaf>());
  };
  Outer m;
  backward(sum(m.leaf->w * 2.0) + sum(m.bias));
  REQUIRE(m.leaf->w.grad().defined());
  m.to(DType::f64);
  // The members see the conversion: they share the handles the module's lists hold.
  CHECK(m.leaf->w.dtype() == DType::f64);
  CHECK(m.leaf->w.to_vector() == std::vector<double>{1.5, -2});
  CHECK(m.bias.dtype() == DType::f64);
  CHECK(m.leaf->table.dtype() == DType::f64);
  CHECK(m.leaf->table.to_vector() == std::vector<double>{0.25, 0.25, 0.25});
  CHECK(m.leaf->index.dtype() == DType::i64);  // index buffers stay int64
  for (const auto& named : m.named_parameters()) {  // not a structured binding: clang 14 cannot capture one (INFO)
    const Tensor& t = named.second;
    INFO(named.first);
    CHECK(t.dtype() == DType::f64);
    CHECK(t.requires_grad());
    CHECK_FALSE(t.grad().defined());
  }
  backward(sum(m.leaf->w * 3.0));  // gradients now arrive in float64
  CHECK(m.leaf->w.grad().dtype() == DType::f64);
  CHECK(m.leaf->w.grad().to_vector() == std::vector<double>{3, 3});
}

TEST_CASE("every parameter name of a tiny language model (renames break checkpoints)") {
  Generator gen(0);
  LanguageModel lm(tiny("t5"), gen);
  std::vector<std::string> expected = {"tok.weight", "pos.t5.table"};
  for (int i = 0; i < 2; ++i)
    for (const char* p : {"ln1.weight", "ln1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.out.weight",
                          "attn.out.bias", "ln2.weight", "ln2.bias", "mlp.fc1.weight", "mlp.fc1.bias",
                          "mlp.fc2.weight", "mlp.fc2.bias"})
      expected.push_back("blocks." + std::to_string(i) + "." + p);
  expected.push_back("ln_f.weight");
  expected.push_back("ln_f.bias");
  CHECK(names_of(lm) == expected);
  // tok + t5 table + 2 blocks (ln1, qkv, out, ln2, fc1, fc2) + ln_f
  CHECK(lm.parameter_count() == 7 * 8 + 8 * 2 + 2 * (16 + (24 * 8 + 24) + (8 * 8 + 8) + 16 + (12 * 8 + 12) + (8 * 12 + 8)) + 16);

  TransformerOptions o = tiny("t5");
  o.share_position = false;
  o.tie_head = false;
  LanguageModel per_layer(o, gen);
  const auto n = names_of(per_layer);
  CHECK(std::find(n.begin(), n.end(), "pos.t5.table") == n.end());
  CHECK(std::find(n.begin(), n.end(), "blocks.0.pos.t5.table") != n.end());
  CHECK(std::find(n.begin(), n.end(), "blocks.1.pos.t5.table") != n.end());
  CHECK(n.back() == "head.weight");
  // Fixed schemes have no parameters, only non-persistent buffers.
  LanguageModel alibi(tiny("alibi"), gen);
  CHECK(names_of(alibi).size() == expected.size() - 1);
  CHECK(alibi.named_buffers(true).empty());
  CHECK(alibi.named_buffers().size() == 1);
}

TEST_CASE("train and eval propagate to every child") {
  Generator gen(1);
  LanguageModel lm(tiny("rope"), gen);
  lm.eval();
  CHECK_FALSE(lm.blocks->at<TransformerBlock>(1).mlp->drop->is_training());
  lm.train();
  CHECK(lm.blocks->at<TransformerBlock>(1).attn->attn_drop->is_training());
}

TEST_CASE("linear, embedding and layer norm compute what they say") {
  Generator gen(2);
  Linear fc(3, 2, true, gen);
  fc.weight.copy_(Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  fc.bias.copy_(Tensor::from_vector<float>({2}, {0.5, -1}));
  const Tensor y = fc.forward(Tensor::from_vector<float>({1, 3}, {1, 0, -1}));
  CHECK(y.to_vector() == std::vector<double>{-1.5, -3});
  CHECK(contains(error_of([&] { fc.forward(Tensor::ones({2, 4})); }), "linear: input [2, 4] does not end in 3"));
  Embedding emb(5, 2, gen);
  const Tensor e = emb.forward(Tensor::indices({2}, {4, 0}));
  CHECK(e.at({0, 1}) == emb.weight.at({4, 1}));
  CHECK(contains(error_of([&] { emb.forward(Tensor::indices({1}, {5})); }), "index_select"));
  LayerNorm ln(4);
  const Tensor z = ln.forward(Tensor::from_vector<float>({4}, {1, 2, 3, 4}));
  CHECK(z.at({0}) == doctest::Approx(-1.3416355).epsilon(1e-6));
}

TEST_CASE("modules pass the float64 gradient check") {
  Generator gen(3);
  SUBCASE("linear") {
    Linear fc(3, 4, true, gen);
    const Tensor x = randn({2, 5, 3}, gen, DType::f64);
    check_module_gradients(fc, [&] { return fc.forward(x); }, "linear");
  }
  SUBCASE("layer norm") {
    LayerNorm ln(5);
    init::normal_(ln.weight, gen, 1.0);
    const Tensor x = randn({3, 5}, gen, DType::f64);
    check_module_gradients(ln, [&] { return ln.forward(x); }, "layer norm", OpKind::LayerNorm);
  }
  SUBCASE("mlp") {
    MLP mlp(4, 6, 0.0, gen, gen);
    const Tensor x = randn({2, 3, 4}, gen, DType::f64);
    check_module_gradients(mlp, [&] { return mlp.forward(x); }, "mlp");
  }
  for (const std::string& scheme : nn::scheme_names(1)) {
    SUBCASE(scheme.c_str()) {
      TransformerOptions o = tiny(scheme);
      o.position.learnable_lambda = true;
      LanguageModel lm(o, gen);
      const Tensor tokens = randint({2, 5}, 7, gen);
      check_module_gradients(lm, [&] { return lm.loss(tokens, tokens); }, std::string("language model, ") + scheme);
    }
  }
  SUBCASE("per-layer t5 tables and an untied head") {
    TransformerOptions o = tiny("t5");
    o.share_position = false;
    o.tie_head = false;
    LanguageModel lm(o, gen);
    const Tensor tokens = randint({1, 6}, 7, gen);
    check_module_gradients(lm, [&] { return lm.loss(tokens, tokens); }, "per-layer t5");
  }
  SUBCASE("bidirectional encoder with padding") {
    Encoder enc(tiny("t5", false), gen);
    const Tensor tokens = randint({2, 5}, 7, gen);
    const Tensor pad = Tensor::indices({2, 5}, {0, 0, 0, 1, 1, 0, 0, 0, 0, 0});
    const Tensor w = randn({2, 5, 8}, gen, DType::f64);
    check_module_gradients(enc, [&] { return sum(mul(enc.forward(tokens, pad), w)); }, "encoder");
  }
}

TEST_CASE("a shared t5 table's gradient is the sum of what each layer sends it") {
  Generator gen(4);
  TransformerOptions o = tiny("t5");
  LanguageModel shared(o, gen);
  o.share_position = false;
  LanguageModel per_layer(o, gen);
  // Same weights everywhere, each layer's table a copy of the shared one.
  const auto sp = shared.named_parameters();
  for (const auto& [name, t] : per_layer.named_parameters()) {
    const bool is_table = name.find("pos.t5.table") != std::string::npos;
    for (const auto& [sname, st] : sp)
      if ((is_table && sname == "pos.t5.table") || sname == name) t.copy_(st);
  }
  const Tensor tokens = randint({2, 6}, 7, gen);
  backward(shared.loss(tokens, tokens));
  backward(per_layer.loss(tokens, tokens));
  Tensor sum_of_layers;
  for (const auto& [name, t] : per_layer.named_parameters())
    if (name.find("pos.t5.table") != std::string::npos) sum_of_layers = sum_of_layers.defined() ? add(sum_of_layers, t.grad()) : t.grad();
  const Tensor g = shared.named_parameters()[1].second.grad();
  REQUIRE(g.defined());
  const std::vector<double> a = g.to_vector(), b = sum_of_layers.to_vector();
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-4));
}

TEST_CASE("incremental decoding with a KV cache matches the full forward for every scheme") {
  for (const std::string& scheme : scheme_names(1)) {
    INFO("scheme: ", scheme);
    Generator gen(5);
    TransformerOptions o = tiny(scheme);
    o.d_model = 16;
    o.heads = 4;
    o.position.learnable_lambda = true;
    LanguageModel lm(o, gen);
    lm.eval();
    NoGradGuard no_grad;
    const int64_t T = 64;
    const Tensor tokens = randint({2, T}, 7, gen);
    const Tensor full = lm.forward(tokens);  // (2, T, V)
    KVCache cache;
    double worst = 0;
    for (int64_t t = 0; t < T; ++t) {
      const Tensor step = lm.forward(slice(tokens, 1, t, t + 1), &cache);  // (2, 1, V)
      const Tensor want = slice(full, 1, t, t + 1);
      const std::vector<double> a = step.to_vector(), b = want.to_vector();
      for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    }
    CHECK(cache.length() == T);
    CHECK(worst <= 1e-5);
  }
}

TEST_CASE("padding keys do not change the encoder's outputs at real positions") {
  Generator gen(6);
  Encoder enc(tiny("t5", false), gen);
  enc.eval();
  NoGradGuard no_grad;
  const Tensor tokens = Tensor::indices({1, 6}, {1, 2, 3, 4, 5, 6});
  const Tensor pad = Tensor::indices({1, 6}, {0, 0, 0, 0, 1, 1});
  const Tensor padded = enc.forward(tokens, pad);
  const Tensor shorter = enc.forward(slice(tokens, 1, 0, 4));
  const std::vector<double> a = slice(padded, 1, 0, 4).to_vector(), b = shorter.to_vector();
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-5));
}

TEST_CASE("a bidirectional language model reads later tokens, a causal one does not: every scheme with both forms") {
  for (const SchemeInfo& s : schemes()) {
    if (!s.fits(1) || !s.bidirectional) continue;
    INFO("scheme: ", s.name);
    for (const bool causal : {true, false}) {
      Generator gen(9);
      LanguageModel lm(tiny(s.name, causal), gen);
      lm.eval();
      NoGradGuard no_grad;
      const Tensor a = Tensor::indices({1, 5}, {1, 2, 3, 4, 5}), b = Tensor::indices({1, 5}, {1, 2, 3, 4, 6});
      // The logits at the first four positions: the last token changed.
      const std::vector<double> la = slice(lm.forward(a), 1, 0, 4).to_vector();
      const std::vector<double> lb = slice(lm.forward(b), 1, 0, 4).to_vector();
      if (causal) CHECK(la == lb);
      else CHECK(la != lb);
    }
  }
}

TEST_CASE("dropout is active in training and off in evaluation") {
  Generator gen(7);
  TransformerOptions o = tiny("alibi");
  o.dropout = 0.3;
  LanguageModel lm(o, gen);
  const Tensor tokens = randint({2, 5}, 7, gen);
  NoGradGuard no_grad;
  const std::vector<double> t1 = lm.forward(tokens).to_vector(), t2 = lm.forward(tokens).to_vector();
  CHECK(t1 != t2);
  lm.eval();
  CHECK(lm.forward(tokens).to_vector() == lm.forward(tokens).to_vector());
}

TEST_CASE("model options are validated with the key named") {
  Generator gen(8);
  TransformerOptions o = tiny("t5");
  o.heads = 3;
  CHECK(contains(error_of([&] { LanguageModel lm(o, gen); }), "heads 3 must divide d_model 8"));
  o = tiny("t5");
  o.dropout = 1.0;
  CHECK(contains(error_of([&] { LanguageModel lm(o, gen); }), "dropout"));
  // A bidirectional language model (the encoder framing) refuses a scheme without a bidirectional form, and a cache.
  o = tiny("fire", false);
  CHECK(contains(error_of([&] { LanguageModel lm(o, gen); }),
                 "model: position.scheme fire has no bidirectional form (causal = false): its normaliser"));
  LanguageModel bidirectional(tiny("t5", false), gen);
  KVCache cache;
  CHECK(contains(error_of([&] { bidirectional.forward(randint({1, 4}, 7, gen), &cache); }),
                 "a KV cache needs causal attention"));
  LanguageModel lm(tiny("learned"), gen);
  NoGradGuard no_grad;
  CHECK(contains(error_of([&] { lm.forward(randint({1, 81}, 7, gen)); }), "beyond the table"));
}

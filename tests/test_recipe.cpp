// Each position method trains with its published recipe (issue 15): model.embedding = "scheme" gives the absolute
// schemes Vaswani et al.'s scaled token embeddings (N(0, d^-1/2) times sqrt(d); fairseq's learned positions at
// N(0, d^-1/2)) and every other scheme GPT-2's; configs stored before the key existed read as gpt2, and a run's
// identity holds the recipe the key resolves to.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "nn/grid_model.h"
#include "nn/position.h"
#include "nn/transformer.h"
#include "test_util.h"
#include "train/config/config.h"
#include "train/config/run_identity.h"

using namespace rpb;
using namespace rpb::testing;  // contains, error_of

namespace {

double std_of(const Tensor& t) {
  const std::vector<double> v = t.to_vector();
  double m = 0, s = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size()));
}

nn::TransformerOptions small(const std::string& scheme) {
  nn::TransformerOptions o;
  o.vocab = 512; o.d_model = 64; o.heads = 4; o.layers = 2; o.d_ff = 128;
  o.position.scheme = scheme;
  o.position.max_positions = 64;
  return o;
}

// A stored config of `scheme` as rpb wrote it before model.embedding existed.
std::string stored_without_embedding(const std::string& scheme) {
  const RunConfig c = parse_config("[position]\nscheme = \"" + scheme + "\"\n", "<test>");
  std::string text = c.text;
  const std::string line = "embedding = 'scheme'\n";
  REQUIRE(contains(text, line));
  text.erase(text.find(line), line.size());
  return text;
}

}  // namespace

TEST_CASE("recipe: the sinusoids are published with scaled embeddings, every other scheme with GPT-2's") {
  for (const nn::SchemeInfo& s : nn::schemes()) {
    CAPTURE(s.name);
    const bool sinusoids = s.name == std::string("sinusoidal") || s.name == std::string("sinusoidal2d");
    CHECK(s.embedding == (sinusoids ? nn::EmbeddingRecipe::scaled : nn::EmbeddingRecipe::gpt2));
    const int64_t dims = s.dims == 0 ? 1 : s.dims;
    CHECK(nn::resolve_recipe(nn::EmbeddingRecipe::scheme, s.name, dims) == s.embedding);
    CHECK(nn::resolve_recipe(nn::EmbeddingRecipe::gpt2, s.name, dims) == nn::EmbeddingRecipe::gpt2);
    CHECK(nn::resolve_recipe(nn::EmbeddingRecipe::scaled, s.name, dims) == nn::EmbeddingRecipe::scaled);
  }
}

TEST_CASE("recipe: scaled token embeddings start at std d^-1/2 and enter times sqrt(d), learned positions too") {
  Generator g1(3), g2(3);
  const nn::LanguageModel sin(small("sinusoidal"), g1), t5(small("t5"), g2);
  CHECK(sin.tok->scale == doctest::Approx(8.0));  // sqrt(64)
  CHECK(std_of(sin.tok->weight) == doctest::Approx(0.125).epsilon(0.03));
  CHECK(t5.tok->scale == 1.0);
  CHECK(std_of(t5.tok->weight) == doctest::Approx(0.02).epsilon(0.03));

  nn::TransformerOptions scaled = small("learned");
  scaled.embedding = nn::EmbeddingRecipe::scaled;
  Generator g3(4);
  const nn::LanguageModel learned(scaled, g3);  // fairseq's learned positions
  CHECK(learned.named_parameters()[1].first == "pos.learned.table");
  CHECK(std_of(learned.named_parameters()[1].second) == doctest::Approx(0.125).epsilon(0.05));
  Generator g4(4);
  const nn::LanguageModel learned_gpt2(small("learned"), g4);  // its own recipe: GPT-2's
  CHECK(learned_gpt2.tok->scale == 1.0);
  CHECK(std_of(learned_gpt2.named_parameters()[1].second) == doctest::Approx(0.02).epsilon(0.05));

  Generator g5(5);
  nn::TransformerOptions grid = small("sinusoidal2d");
  grid.causal = false;
  const nn::GridModel gm(grid, nn::WindowOptions{}, g5);
  CHECK(gm.tok->scale == doctest::Approx(8.0));
}

TEST_CASE("recipe: a scaled model computes what a GPT-2 one does with its token rows multiplied by sqrt(d)") {
  nn::TransformerOptions o = small("sinusoidal");
  Generator g1(7), g2(7);
  const nn::LanguageModel scaled(o, g1);  // model.tie_head = true: the scaled recipe's projection is its own
  CHECK(!nn::ties_head(o));
  REQUIRE(scaled.head);
  CHECK(std_of(scaled.head->weight) == doctest::Approx(0.125).epsilon(0.03));  // fairseq: d^-1/2
  CHECK(scaled.parameter_count() == nn::LanguageModel::parameter_count(o));
  o.embedding = nn::EmbeddingRecipe::gpt2;
  CHECK(nn::ties_head(o));
  o.tie_head = false;
  const nn::LanguageModel plain(o, g2);
  NoGradGuard no_grad;
  REQUIRE(plain.named_parameters().size() == scaled.named_parameters().size());
  for (std::size_t i = 0; i < plain.named_parameters().size(); ++i)
    plain.named_parameters()[i].second.copy_(scaled.named_parameters()[i].second);
  const Tensor tokens = randint({2, 12}, o.vocab, g1);
  const Tensor a = scaled.forward(tokens);
  plain.tok->weight.copy_(mul_scalar(scaled.tok->weight, 8.0));
  CHECK(a.to_vector() == plain.forward(tokens).to_vector());  // the same products, in the same order
}

TEST_CASE("recipe: model.embedding in configs, stored configs without it and run identities") {
  const RunConfig c = parse_config("[position]\nscheme = \"sinusoidal\"\n", "<test>");
  CHECK(c.model.embedding == nn::EmbeddingRecipe::scheme);
  CHECK(contains(c.text, "embedding = 'scheme'"));
  CHECK(parse_config(c.text, "<again>").model.embedding == nn::EmbeddingRecipe::scheme);
  const std::string bad = error_of([] { parse_config("[model]\nembedding = \"scaledd\"\n", "cfg.toml"); });
  CHECK(contains(bad, "cfg.toml:2:13"));
  CHECK(contains(bad, "did you mean \"scaled\""));

  // Before model.embedding, every scheme trained with GPT-2's embeddings: a stored config without it reads so.
  const std::string old_sin = stored_without_embedding("sinusoidal");
  CHECK(parse_stored_config(old_sin, "old").model.embedding == nn::EmbeddingRecipe::gpt2);
  CHECK(parse_config(old_sin, "a new config").model.embedding == nn::EmbeddingRecipe::scheme);

  // Identity holds the resolved recipe: an old sinusoidal run is not today's; an old t5 run is.
  const std::vector<ConfigChange> changes = identity_changes(parse_stored_config(old_sin, "old"), c);
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].line() == "model.embedding: 'gpt2' -> 'scaled'");
  const RunConfig t5 = parse_config("[position]\nscheme = \"t5\"\n", "<test>");
  CHECK(identity_changes(parse_stored_config(stored_without_embedding("t5"), "old"), t5).empty());
  CHECK(config_digest(parse_stored_config(stored_without_embedding("t5"), "old")) == config_digest(t5));
  const RunConfig explicit_scaled =
      parse_config("[model]\nembedding = \"scaled\"\n[position]\nscheme = \"sinusoidal\"\n", "<test>");
  CHECK(config_digest(explicit_scaled) == config_digest(c));
  CHECK(config_digest(parse_stored_config(old_sin, "old")) != config_digest(c));
}

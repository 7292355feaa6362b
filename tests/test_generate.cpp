// nn/generate.h: incremental decoding with the KV cache against the full forward for every 1-D scheme, past the
// lengths the position tables reach; sampling, greedy decoding and determinism.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "core/core.h"
#include "nn/generate.h"
#include "nn/transformer.h"
#include "scheme_cases.h"
#include "test_util.h"
#include "tensor_checks.h"

using namespace rpb;
using rpb::testing::max_abs_diff;
using rpb::testing::randomize;
using namespace rpb::nn;
using rpb::testing::contains;
using rpb::testing::error_of;

namespace {

// A model whose positions matter: every parameter redrawn with std 0.5 (the init's 0.02 would leave position
// tables and so any error in their offsets almost invisible).
TransformerOptions decoding_model_options(const std::string& scheme, bool fused, bool share) {
  TransformerOptions o;
  o.vocab = 11;
  o.d_model = 16;
  o.heads = 4;
  o.layers = 2;
  o.d_ff = 24;
  o.fused_attention = fused;
  o.share_position = share;
  o.position.scheme = scheme;
  o.position.num_buckets = 8;
  o.position.max_distance = 20;
  o.position.max_relative_position = 5;
  o.position.max_positions = 128;
  o.position.learnable_lambda = true;
  o.position.fire_length = 16;  // fire: queries past 16 read the tiles (fused) or their own normaliser
  return o;
}

}  // namespace

TEST_CASE("KV-cache decoding gives the full forward's logits at every position, for every 1-D scheme") {
  // 96 positions: past t5's max_distance 20, Shaw's clip 5, and what a model trained at 16 or 32 saw; a prompt of 10,
  // a chunk of 5 at an offset, then one token per forward. Both attention paths, shared and per-layer positions.
  const int64_t T = 96;
  for (const std::string& scheme : scheme_names(1))
    for (const bool fused : {true, false})
      for (const bool share : {true, false}) {
        CAPTURE(scheme);
        CAPTURE(fused);
        CAPTURE(share);
        Generator gen(11);
        LanguageModel lm(decoding_model_options(scheme, fused, share), gen);
        randomize(lm, gen);
        lm.eval();
        NoGradGuard no_grad;
        const Tensor tokens = randint({2, T}, 11, gen);
        const Tensor full = lm.forward(tokens);  // (2, T, V)
        KVCache cache;
        std::vector<std::pair<int64_t, int64_t>> chunks = {{0, 10}, {10, 15}};
        for (int64_t t = 15; t < T; ++t) chunks.push_back({t, t + 1});
        double worst = 0, spread = 0;
        for (const auto& [b, e] : chunks) {
          const Tensor step = lm.forward(slice(tokens, 1, b, e), &cache);  // (2, e - b, V)
          worst = std::max(worst, max_abs_diff(step, slice(full, 1, b, e)));
        }
        // The logits must depend on position (else the comparison proves little): the same token's logits differ.
        spread = max_abs_diff(slice(full, 1, T - 1, T), lm.forward(slice(tokens, 1, T - 1, T)));
        CHECK(cache.length() == T);
        CHECK(worst <= 1e-5);
        if (scheme != "none") CHECK(spread > 1e-3);
      }
}

TEST_CASE("greedy generation picks the argmax of the full forward at every step, with or without the cache") {
  for (const std::string& name : rpb::testing::one_scheme_per_kind(1)) {  // absolute, rotary, additive, none
    const char* scheme = name.c_str();
    CAPTURE(scheme);
    Generator gen(3);
    LanguageModel lm(decoding_model_options(scheme, true, true), gen);
    randomize(lm, gen);
    GenerateOptions o;
    o.tokens = 40;
    o.sampling.temperature = 0;
    const std::vector<int64_t> prompt = {1, 4, 2, 8, 5};
    std::vector<int64_t> streamed;
    const std::vector<int64_t> seq = generate(lm, prompt, o, [&](int64_t t) { streamed.push_back(t); });
    REQUIRE(seq.size() == 45);
    CHECK(std::equal(prompt.begin(), prompt.end(), seq.begin()));
    CHECK(streamed == std::vector<int64_t>(seq.begin() + 5, seq.end()));
    NoGradGuard no_grad;
    for (std::size_t n = prompt.size(); n < seq.size(); ++n) {
      const std::vector<int64_t> head(seq.begin(), seq.begin() + static_cast<std::ptrdiff_t>(n));
      const Tensor logits = lm.forward(Tensor::indices({1, static_cast<int64_t>(n)}, head));
      const std::vector<double> last = slice(logits, 1, n - 1, n).to_vector();
      CHECK(std::max_element(last.begin(), last.end()) - last.begin() == seq[n]);
    }
    o.use_cache = false;
    CHECK(generate(lm, prompt, o) == seq);
  }
}

TEST_CASE("sampled generation is deterministic for a seed, the same with and without the cache") {
  Generator gen(4);
  LanguageModel lm(decoding_model_options("t5", true, true), gen);
  randomize(lm, gen);
  GenerateOptions o;
  o.tokens = 60;
  o.sampling = {1.0, 0, 42};
  const std::vector<int64_t> a = generate(lm, {3}, o), b = generate(lm, {3}, o);
  CHECK(a == b);
  o.use_cache = false;
  CHECK(generate(lm, {3}, o) == a);
  o.use_cache = true;
  o.sampling.seed = 43;
  CHECK(generate(lm, {3}, o) != a);
  o.sampling.top_k = 1;  // top-1 sampling is greedy
  const std::vector<int64_t> top1 = generate(lm, {3}, o);
  o.sampling = {0.0, 0, 0};
  CHECK(generate(lm, {3}, o) == top1);
}

TEST_CASE("sample_token: argmax at temperature 0, only the top k, frequencies of the softmax") {
  Generator gen(9);
  const std::vector<double> logits = {0.0, 2.0, 2.0, -1.0, 1.0};
  CHECK(sample_token(logits, 0, 0, gen) == 1);  // ties: the lower id
  for (int i = 0; i < 200; ++i) {
    const int64_t t = sample_token(logits, 5.0, 2, gen);
    CHECK((t == 1 || t == 2));
  }
  // p = (1/4, 3/4) at temperature 1 for logits (0, log 3): 4000 draws land within 0.03 of 3/4.
  int ones = 0;
  for (int i = 0; i < 4000; ++i) ones += sample_token({0.0, std::log(3.0)}, 1.0, 0, gen) == 1;
  CHECK(std::abs(ones / 4000.0 - 0.75) < 0.03);
  CHECK(contains(error_of([&] { sample_token({}, 1.0, 0, gen); }), "no logits"));
  CHECK(contains(error_of([&] { sample_token({1.0}, -1.0, 0, gen); }), "temperature must be >= 0"));
}

TEST_CASE("generate refuses an empty prompt, ids outside the vocabulary and lengths past the scheme's table") {
  Generator gen(5);
  TransformerOptions opt = decoding_model_options("learned", true, true);
  opt.position.max_positions = 16;
  LanguageModel lm(opt, gen);
  GenerateOptions o;
  o.tokens = 7;
  CHECK(contains(error_of([&] { generate(lm, {}, o); }), "the prompt is empty"));
  CHECK(contains(error_of([&] { generate(lm, {1, 11}, o); }), "prompt token 1 is 11, outside the vocabulary [0, 11)"));
  CHECK(contains(error_of([&] { generate(lm, std::vector<int64_t>(10, 1), o); }),
                 "make 17 positions, past the 16 the learned scheme runs at (position.max_positions = 16)"));
  CHECK(generate(lm, std::vector<int64_t>(9, 1), o).size() == 16);  // exactly the table
}

TEST_CASE("KV-cache decoding with rope scaling: linear, ntk and yarn equal the full forward, dynamic follows HF") {
  // L0 16, factor 4, 40 positions. dynamic (nn/position/rope.cpp): each forward rotates its new queries and keys with
  // the frequencies of its total length (cache + new), and cached keys keep theirs, as HF's generate does.
  const int64_t T = 40, L0 = 16;
  for (const RopeScaling scaling : {RopeScaling::linear, RopeScaling::ntk, RopeScaling::yarn, RopeScaling::dynamic}) {
    CAPTURE(rope_scaling_name(scaling));
    TransformerOptions opt = decoding_model_options("rope", true, true);
    opt.position.rope_scaling = scaling;
    opt.position.rope_factor = 4;
    opt.position.train_length = L0;
    Generator gen(12);
    LanguageModel lm(opt, gen);
    randomize(lm, gen);
    lm.eval();
    NoGradGuard no_grad;
    const Tensor tokens = randint({2, T}, 11, gen);
    // Decoding from a prefill of `prefill` tokens, then one token per forward: the logits of every position.
    const auto decode = [&](int64_t prefill) {
      KVCache cache;
      std::vector<Tensor> steps = {lm.forward(slice(tokens, 1, 0, prefill), &cache)};
      for (int64_t t = prefill; t < T; ++t) steps.push_back(lm.forward(slice(tokens, 1, t, t + 1), &cache));
      return concat(steps, 1);  // (2, T, V)
    };
    const Tensor one_by_one = decode(1);
    if (scaling != RopeScaling::dynamic) {
      CHECK(max_abs_diff(one_by_one, lm.forward(tokens)) <= 1e-5);
      continue;
    }
    // Up to L0 every rotation is the unscaled one: the full forward of each prefix.
    CHECK(max_abs_diff(slice(one_by_one, 1, 0, L0), lm.forward(slice(tokens, 1, 0, L0))) <= 1e-5);
    // A prefill of L0 then single tokens is the same decoding (keys up to L0 rotate unscaled either way) ...
    CHECK(max_abs_diff(decode(L0), one_by_one) <= 1e-6);
    // ... but past L0 the step at total n is not the full forward of the n tokens (whose keys all rotate for n),
    const Tensor prefix = lm.forward(slice(tokens, 1, 0, 30));
    CHECK(max_abs_diff(slice(one_by_one, 1, 29, 30), slice(prefix, 1, 29, 30)) > 1e-4);
    // and a prefill of 24 (keys 16..23 rotated for 24, not for their own totals) decodes differently afterwards,
    // its own rows being the full forward of those 24.
    const Tensor from24 = decode(24);
    CHECK(max_abs_diff(slice(from24, 1, 0, 24), lm.forward(slice(tokens, 1, 0, 24))) <= 1e-5);
    CHECK(max_abs_diff(slice(from24, 1, 24, T), slice(one_by_one, 1, 24, T)) > 1e-4);
  }
}

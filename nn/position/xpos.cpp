// xpos: the Extrapolatable Position Embedding of Sun et al. 2022 ("A Length-Extrapolatable Transformer"), as the
// paper's code computes it: microsoft/torchscale torchscale/component/xpos_relative_position.py (class XPOS) at
// 776b070d68aef2aca447dc3e1adb64682fbec126, called from torchscale/component/multihead_attention.py at
// 0cb96955010a93818b3dafb99708f465bcbcc651.
//
//   out = x * cos' + rotate_every_two(x) * sin',  rotate_every_two(x)[2k] = -x[2k+1], [2k+1] = x[2k]
// on interleaved pairs (x[2k], x[2k+1]) (GPT-J's pairs, not rope's halves); cos' and sin' are cos and sin of the
// angle p * inv_freq[k], inv_freq[k] = 1 / base^(k / (d/2)) (base = position.rope_base, torchscale's 10000), times
// the scale zeta_k^(s/B), zeta_k = (2k + 0.4 d) / (1.4 d), B = position.xpos_scale_base (torchscale's 512), each
// value duplicated into columns 2k and 2k+1 (duplicate_interleave). Queries take zeta^(s/B), keys its inverse
// 1 / zeta^(s/B) (downscale), so the score of query n and key m decays as zeta^((n - m)/B).
//
// Positions, as XPOS.forward(x, offset) has them for N = offset + T positions: the angle's position is p itself
// (fixed_pos_embedding's rows 0 .. N-1, of which the last T), while the scale's position is centred,
// s = p + min_pos with min_pos = floor(-N / 2) (Python's -(length + offset) // 2), so that |s| <= N/2 and the
// scales stay finite twice as far (zeta_0 = 2/7: float32 overflows past |s| of about 70 B).
//
// Decoding: the centre depends on N, so a key's scale changes as the sequence grows. As torchscale's attention
// (which caches the keys before XPOS and applies it to all of them at every step, offset 0), a KV cache keeps the
// keys unrotated and every forward rotates all N keys (rotates_all_keys), the queries at offset N - T: each step
// computes exactly the scales of a full forward over its N positions, and decoding equals the full forward up to
// the attention's summation order.
//
// Blockwise causal attention (the paper's section 3.3, evaluation only): with position.blockwise, a model in
// evaluation attends the query at p to the keys of its block p / w and the one before, w = the train length
// (attention_block; core/ops.h AttentionSpec::block). Training ignores it.
//
// Dtypes: in float32, every step is float32 as the reference computes it (zeta, inv_freq, the exponent s/B, the
// power, the reciprocal, the angle, cos and sin, and their product with the scale); in float64 (gradient checks)
// every step is double, where the reference would still form the angle in float32.
#include <cmath>

#include "nn/last_value_cache.h"
#include "nn/position/common.h"

namespace rpb::nn {

namespace {

using position_detail::from_doubles;

// floor(-n / 2), Python's -(n) // 2, for n >= 0.
int64_t centre_shift(int64_t n) { return -((n + 1) / 2); }

class XposScheme final : public PositionScheme {
 public:
  explicit XposScheme(const PositionOptions& o) : o_(o) {}

  Tensor rotate(const Tensor& x, int64_t offset) const override { return apply(x, offset, false); }
  Tensor rotate_key(const Tensor& x, int64_t offset) const override { return apply(x, offset, true); }
  // Randomized positions: angles and scales at `at`, the scales' centre that of their span (at.back() + 1 positions).
  Tensor rotate_at(const Tensor& x, const std::vector<int64_t>& at) const override { return apply(x, 0, false, &at); }
  Tensor rotate_key_at(const Tensor& x, const std::vector<int64_t>& at) const override {
    return apply(x, 0, true, &at);
  }
  bool rotates_all_keys() const override { return true; }
  int64_t attention_block() const override { return o_.blockwise && !is_training() ? o_.train_length : 0; }
  std::string title_options() const override {
    return "scale_base " + std::to_string(o_.xpos_scale_base) + (o_.blockwise ? ", blockwise in evaluation" : "");
  }

 private:
  Tensor apply(const Tensor& x, int64_t offset, bool key, const std::vector<int64_t>* at = nullptr) const {
    RPB_CHECK(x.defined(), "xpos", "x is undefined");
    RPB_CHECK(x.dim() >= 2 && x.size(-1) == o_.head_dim, "xpos", "x ", x.shape(),
              " must end in (T, head_dim) with head_dim ", o_.head_dim, " (expected (B, heads, T, head_dim))");
    RPB_CHECK(x.dtype() == zeta.dtype(), "xpos", "x is ", dtype_name(x.dtype()), " but the scheme is ",
              dtype_name(zeta.dtype()), " (convert one with Module::to)");
    RPB_CHECK(offset >= 0, "xpos", "offset ", offset, " must be at least 0");
    const int64_t t = x.size(-2), d = o_.head_dim;
    RPB_CHECK(t >= 1, "xpos", "x ", x.shape(), " has no positions (T = 0)");
    RPB_CHECK(!at || static_cast<int64_t>(at->size()) == t, "xpos", at ? at->size() : 0, " positions for x ", x.shape());
    const std::vector<int64_t> cache_key{t, d, offset, static_cast<int64_t>(x.dtype())};
    const Caches& c = key ? key_caches_ : query_caches_;
    const Tensor cos_t = at ? table(t, offset, key, false, at)
                            : c.cos.get(cache_key, [&] { return table(t, offset, key, false, nullptr); });
    const Tensor sin_t = at ? table(t, offset, key, true, at)
                            : c.sin.get(cache_key, [&] { return table(t, offset, key, true, nullptr); });
    // rotate_every_two: the pairs (x[2k], x[2k+1]) -> (-x[2k+1], x[2k]).
    const std::vector<int64_t> shape(x.shape().begin(), x.shape().end());
    std::vector<int64_t> pairs(shape.begin(), shape.end() - 1);
    pairs.push_back(d / 2);
    pairs.push_back(2);
    const std::vector<Tensor> parts = split(reshape(x, pairs), {1, 1}, -1);  // x[2k], x[2k+1]: (..., d/2, 1)
    const Tensor rotated = reshape(concat({neg(parts[1]), parts[0]}, -1), shape);
    return add(mul(x, cos_t), mul(rotated, sin_t));  // (..., T, d)
  }

  // (T, head_dim): cos (or sin) of p inv_freq[k] times zeta_k^(s/B) (keys: its inverse) at columns 2k and 2k+1, for
  // p = offset .. offset + T - 1 and s = p + centre_shift(offset + T) (see the file comment).
  Tensor table(int64_t t, int64_t offset, bool key, bool sine, const std::vector<int64_t>* at) const {
    std::vector<double> v(static_cast<std::size_t>(t * o_.head_dim));
    if (zeta.dtype() == DType::f32) fill<float>(v, t, offset, key, sine, at);
    else fill<double>(v, t, offset, key, sine, at);
    return from_doubles({t, o_.head_dim}, v, zeta.dtype()).to(zeta.device());
  }

  // Every step in F, as torchscale computes it in F = float32.
  template <typename F>
  void fill(std::vector<double>& v, int64_t t, int64_t offset, bool key, bool sine,
            const std::vector<int64_t>* at) const {
    const int64_t d = o_.head_dim, half = d / 2, shift = centre_shift(at ? at->back() + 1 : offset + t);
    for (int64_t k = 0; k < half; ++k) {
      // fixed_pos_embedding's 1 / (10000 ** (arange(dim) / dim))
      const F z = zeta_of<F>(k, d);
      const F inv = F(1) / std::pow(static_cast<F>(o_.rope_base), static_cast<F>(k) / static_cast<F>(half));
      for (int64_t r = 0; r < t; ++r) {
        const int64_t p = at ? (*at)[static_cast<std::size_t>(r)] : offset + r;
        F scale = std::pow(z, static_cast<F>(p + shift) / static_cast<F>(o_.xpos_scale_base));
        if (key) scale = F(1) / scale;
        const F angle = static_cast<F>(p) * inv;
        const F value = (sine ? std::sin(angle) : std::cos(angle)) * scale;
        v[static_cast<std::size_t>(r * d + 2 * k)] = v[static_cast<std::size_t>(r * d + 2 * k + 1)] = value;
      }
    }
  }

  // XPOS's buffer, (arange(0, d, 2) + 0.4 d) / (1.4 d), at pair k, in F.
  template <typename F>
  static F zeta_of(int64_t k, int64_t d) {
    const double width = static_cast<double>(d);
    return (static_cast<F>(2 * k) + static_cast<F>(0.4 * width)) / static_cast<F>(1.4 * width);
  }

  static std::vector<double> zetas(int64_t d) {
    std::vector<double> z(static_cast<std::size_t>(d / 2));
    for (int64_t k = 0; k < d / 2; ++k) z[k] = zeta_of<double>(k, d);
    return z;
  }

  struct Caches {
    LastValueCache cos, sin;  // keyed (T, head_dim, offset, dtype)
  };

  PositionOptions o_;
  Caches query_caches_, key_caches_;  // apart: a layer rotates queries and keys in turn, at other offsets

 public:
  // zeta_k = (2k + 0.4 head_dim) / (1.4 head_dim), k = 0 .. head_dim/2 - 1: the per-pair decay (its dtype is the
  // scheme's; the tables recompute it in that dtype as torchscale does).
  Tensor zeta = register_buffer("zeta", from_doubles({o_.head_dim / 2}, zetas(o_.head_dim), o_.dtype),
                                /*persistent=*/false);  // (head_dim / 2)
};

}  // namespace

namespace {

void validate_xpos(const PositionOptions& o) {
  RPB_CHECK_OPTION(o.head_dim >= 2 && o.head_dim % 2 == 0, "xpos", "head_dim", "head_dim ", o.head_dim,
                   " must be even and at least 2 (rotate_every_two pairs neighbouring dimensions)");
  RPB_CHECK_OPTION(std::isfinite(o.rope_base) && o.rope_base > 0, "xpos", "rope_base", "rope_base ", o.rope_base,
                   " must be positive");
  RPB_CHECK_OPTION(o.xpos_scale_base >= 1, "xpos", "xpos_scale_base", "xpos_scale_base ", o.xpos_scale_base,
                   " must be at least 1");
  RPB_CHECK_OPTION(!o.blockwise || o.causal, "xpos", "blockwise",
                   "blockwise = true needs causal attention (a query attends its block and the one before)");
  RPB_CHECK_OPTION(!o.blockwise || o.train_length >= 1, "xpos", "blockwise",
                   "blockwise = true needs the train length (the block), found ", o.train_length);
}
std::shared_ptr<PositionScheme> make_xpos(const PositionOptions& o, Generator&) {
  return std::make_shared<XposScheme>(o);
}

// The registry row (nn/position/scheme.h).
const SchemeRegistrar xpos_row({.name = "xpos", .dims = 1, .kind = PositionKind::rotary, .label = "xPos",
     .description = "rotary embeddings on interleaved pairs with a per-pair decay (Sun et al.)", .per_layer = false,
     .parameters = position_detail::no_parameters, .max_length = position_detail::unbounded, .length_option = nullptr,
     .validate = validate_xpos, .make = make_xpos, .window_bias = WindowBias::none, .rank = 80,
     .reads = {"rope_base", "xpos_scale_base", "blockwise"},
     .bidirectional = "unchanged, as torchscale's encoder applies it: a key after its query scores zeta^((n - m)/B), "
                      "which grows with the distance"});

}  // namespace

}  // namespace rpb::nn

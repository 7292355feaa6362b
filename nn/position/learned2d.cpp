// learned2d: one learned vector per cell of a (max_side, max_side) grid (ViT-style, truncated-normal init),
// added to the tokens; an H x W grid reads the table's top-left H x W corner, and a larger grid is an error.
#include "nn/init.h"
#include "nn/last_value_cache.h"
#include "nn/position/common.h"

namespace rpb::nn {

namespace {

class Learned2D final : public PositionScheme {
 public:
  Learned2D(const PositionOptions& o, Generator& gen) : o_(o) { init::trunc_normal_(table, gen, o.init_std); }

  Tensor embed(const Positions& p) const override {
    check(p, "learned2d");
    const int64_t H = p.height, W = p.width, side = o_.max_side;
    RPB_CHECK(H <= side, "learned2d", "grid height ", H, " is beyond the table's max_side ", side,
              "; this scheme cannot extrapolate");
    RPB_CHECK(W <= side, "learned2d", "grid width ", W, " is beyond the table's max_side ", side,
              "; this scheme cannot extrapolate");
    const Tensor idx = cache_.get({H, W, static_cast<int64_t>(DType::i64)}, [&] {
      std::vector<int64_t> v(static_cast<std::size_t>(H * W));
      for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c) v[r * W + c] = r * side + c;
      return Tensor::indices({H * W}, v);
    });
    return index_select(reshape(table, {side * side, o_.d_model}), idx.to(table.device()));  // (H * W, d_model)
  }

 private:
  PositionOptions o_;
  LastValueCache cache_;

 public:
  Tensor table = register_parameter("table", Tensor::zeros({o_.max_side, o_.max_side, o_.d_model},
                                                           o_.dtype));  // (max_side, max_side, d_model)
};

}  // namespace

namespace {

void validate_learned2d(const PositionOptions& o) {
  RPB_CHECK_OPTION(o.d_model >= 1, "learned2d", "d_model", "d_model ", o.d_model, " must be at least 1");
  RPB_CHECK_OPTION(o.max_side >= 1, "learned2d", "max_side", "max_side ", o.max_side, " must be at least 1");
  position_detail::check_at_most("learned2d", "max_side", o.max_side, limits::max_side.hi);
  position_detail::check_init_std(o);
}
std::shared_ptr<PositionScheme> make_learned2d(const PositionOptions& o, Generator& gen) {
  return std::make_shared<Learned2D>(o, gen);
}

// The registry row (nn/position/scheme.h).
const SchemeRegistrar learned2d_row({.name = "learned2d", .dims = 2, .kind = PositionKind::absolute, .label = "Learned 2-D (global)",
     .description = "a learned vector per grid cell added to the tokens", .per_layer = false,
     .parameters = [](const PositionOptions& o) {
       return checked_mul(checked_mul(o.max_side, o.max_side, "position", "learned2d table"), o.d_model, "position",
                          "learned2d table");
     },
     .max_length = [](const PositionOptions& o) { return o.max_side; }, .length_option = "max_side",
     .validate = validate_learned2d, .make = make_learned2d, .window_bias = WindowBias::none, .rank = 120,
     .reads = {"max_side", "init_std"}});

}  // namespace

}  // namespace rpb::nn

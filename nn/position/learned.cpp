// learned: a (max_positions, d_model) table added to the token embeddings; positions past the table are an
// error (the scheme cannot extrapolate). Init normal(0, init_std).
#include "nn/init.h"
#include "nn/position/common.h"

namespace rpb::nn {

namespace {

class LearnedScheme final : public PositionScheme {
 public:
  LearnedScheme(const PositionOptions& o, Generator& gen) : o_(o) { init::normal_(table, gen, o.init_std); }

  Tensor embed(const Positions& p) const override {
    check(p, "learned");
    const int64_t last = p.q_offset + p.q_len - 1;
    RPB_CHECK(last < o_.max_positions, "learned", "position ", last, " is beyond the table of ", o_.max_positions,
              " positions (max_positions); this scheme cannot extrapolate");
    std::vector<int64_t> pos(static_cast<std::size_t>(p.q_len));
    for (int64_t i = 0; i < p.q_len; ++i) pos[i] = p.q_offset + i;
    return index_select(table, Tensor::indices({p.q_len}, pos).to(table.device()));  // (q_len, d_model)
  }

 private:
  PositionOptions o_;

 public:
  Tensor table =
      register_parameter("table", Tensor::zeros({o_.max_positions, o_.d_model}, o_.dtype));  // (max_positions, d_model)
};

}  // namespace

namespace {

void validate_learned(const PositionOptions& o) {
  RPB_CHECK_OPTION(o.d_model >= 1, "learned", "d_model", "d_model ", o.d_model, " must be at least 1");
  RPB_CHECK_OPTION(o.max_positions >= 1, "learned", "max_positions", "max_positions ", o.max_positions,
                   " must be at least 1");
  position_detail::check_at_most("learned", "max_positions", o.max_positions, limits::max_positions.hi);
  RPB_CHECK_OPTION(!o.randomized || o.max_positions >= o.randomized_max, "learned", "max_positions",
                   "max_positions ", o.max_positions, " must hold every position randomized positions draw, "
                   "randomized_max = ", o.randomized_max);
  position_detail::check_init_std(o);
}
std::shared_ptr<PositionScheme> make_learned(const PositionOptions& o, Generator& gen) {
  return std::make_shared<LearnedScheme>(o, gen);
}

// The registry row (nn/position/scheme.h).
const SchemeRegistrar learned_row({.name = "learned", .dims = 1, .kind = PositionKind::absolute, .label = "Learned PE",
     .description = "a learned table of absolute positions added to the tokens", .per_layer = false,
     .parameters = [](const PositionOptions& o) { return checked_mul(o.max_positions, o.d_model, "position", "learned table"); },
     .max_length = [](const PositionOptions& o) { return o.max_positions; }, .length_option = "max_positions",
     .validate = validate_learned, .make = make_learned, .window_bias = WindowBias::none, .rank = 10,
     .reads = {"max_positions", "init_std"},
     .bidirectional = "unchanged: absolute positions added to the tokens"});

}  // namespace

}  // namespace rpb::nn

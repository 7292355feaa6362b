// none: no position information (a 1-D or a 2-D model).
#include "nn/position/common.h"
#include "nn/position/scheme.h"

namespace rpb::nn {

namespace {
class NoneScheme final : public PositionScheme {};
}  // namespace

namespace {

std::shared_ptr<PositionScheme> make_none(const PositionOptions&, Generator&) { return std::make_shared<NoneScheme>(); }

// The registry row (nn/position/scheme.h).
const SchemeRegistrar none_row({.name = "none", .dims = 0, .kind = PositionKind::none, .label = "NoPE (none)",
     .description = "no position information", .per_layer = false, .parameters = position_detail::no_parameters,
     .max_length = position_detail::unbounded, .length_option = nullptr, .validate = position_detail::no_options,
     .make = make_none, .window_bias = WindowBias::none, .rank = 160,
     .bidirectional = "unchanged: no positions (a bidirectional model without them sees its input as a set)"});

}  // namespace

}  // namespace rpb::nn

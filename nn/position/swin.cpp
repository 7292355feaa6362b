// swin and swin_v2: the registry rows of Swin's window attention biases. Their bias is no module of its own: it
// belongs to the window attention (nn/window_attention.h: Swin V1's learned table of the offsets inside a window,
// Swin V2's continuous bias MLP), which reads the window options of [grid] and checks them in the grid model.
#include "nn/position/common.h"

namespace rpb::nn {

namespace {

const SchemeRegistrar swin_row({.name = "swin", .dims = 2, .kind = PositionKind::window,
                                .label = "Swin V1 table (windows)",
                                .description = "Swin V1 window attention with a learned bias table",
                                .per_layer = false, .parameters = position_detail::no_parameters,
                                .max_length = position_detail::unbounded, .length_option = nullptr,
                                .validate = position_detail::no_options, .make = nullptr,
                                .window_bias = WindowBias::table, .rank = 100});

const SchemeRegistrar swin_v2_row({.name = "swin_v2", .dims = 2, .kind = PositionKind::window,
                                   .label = "Swin V2 continuous (windows)",
                                   .description = "Swin V2 window attention with a continuous bias MLP",
                                   .per_layer = false, .parameters = position_detail::no_parameters,
                                   .max_length = position_detail::unbounded, .length_option = nullptr,
                                   .validate = position_detail::no_options, .make = nullptr,
                                   .window_bias = WindowBias::continuous, .rank = 110});

}  // namespace

}  // namespace rpb::nn

// The 2-D position schemes of global attention over a flattened grid (nn/position.h): hand-computed biases and
// embeddings, float64 gradient checks and error messages. Each scheme's golden and gradient-check case is listed
// in position_2d_scheme_cases() (tests/scheme_cases.h), which tests/test_scheme_registry.cpp runs.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/core.h"
#include "nn/position.h"
#include "scheme_cases.h"
#include "tensor_checks.h"
#include "test_util.h"

using namespace rpb;
using namespace rpb::nn;
using rpb::testing::check_values;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::flat;
using rpb::testing::Matrix;

namespace {

std::shared_ptr<PositionScheme> make2d(PositionOptions o, uint64_t seed = 0) {
  Generator gen(seed);
  return make_position_scheme(o, gen);
}

PositionOptions opts2d(const std::string& name, int64_t heads = 2, int64_t d_model = 8) {
  PositionOptions o;
  o.scheme = name;
  o.dims = 2;
  o.heads = heads;
  o.d_model = d_model;
  return o;
}

Positions grid(int64_t h, int64_t w) { return Positions::grid(h, w); }

// alibi2d: -slope * Euclidean distance on a 2 x 2 grid, by hand
void golden_alibi2d() {
  const auto p = make2d(opts2d("alibi2d", 2));
  // Cells (0,0), (0,1), (1,0), (1,1); slopes for 2 heads: 2^-4, 2^-8.
  const double r2 = std::sqrt(2.0);
  const Matrix d = {{0, 1, 1, r2}, {1, 0, r2, 1}, {1, r2, 0, 1}, {r2, 1, 1, 0}};
  std::vector<double> want;
  for (double s : {0.0625, 0.00390625})
    for (double v : flat(d)) want.push_back(-s * v);
  const Tensor b = p->bias(grid(2, 2));
  CHECK(b.shape() == Shape{2, 4, 4});
  check_values(b, want, 1e-7);
  p->to(DType::f64);
  CHECK(p->bias(grid(2, 2)).dtype() == DType::f64);
  check_values(p->bias(grid(2, 2)), want, 1e-15);
}

// sinusoidal2d: the row half and the column half of a cell, by hand
void golden_sinusoidal2d() {
  const Tensor e = make2d(opts2d("sinusoidal2d", 1, 8))->embed(grid(3, 4));
  REQUIRE(e.shape() == Shape{12, 8});
  // Cell (2, 3): [sin 2, cos 2, sin .02, cos .02 | sin 3, cos 3, sin .03, cos .03] (frequencies 1 and 1/100).
  const std::vector<double> want = {0.9092974268256817,  -0.4161468365471424, 0.01999866669333308,  0.9998000066665778,
                                    0.1411200080598672, -0.9899924966004454, 0.029995500202495664, 0.9995500337489875};
  check_values(slice(e, 0, 11, 12), want, 1e-7);
}

// learned2d: cell (r, c) reads the table's vector (r, c)
void golden_learned2d() {
  PositionOptions o = opts2d("learned2d", 1, 2);
  o.max_side = 3;
  const auto p = make2d(o);
  const Tensor table = p->named_parameters()[0].second;  // (3, 3, 2)
  const Tensor e = p->embed(grid(2, 3));
  CHECK(e.shape() == Shape{6, 2});
  for (int64_t cell = 0; cell < 6; ++cell)
    for (int64_t k = 0; k < 2; ++k) CHECK(e.at({cell, k}) == table.at({cell / 3, cell % 3, k}));
}

// clipped2d: the clipped query - key offsets per axis, by hand
void golden_clipped2d() {
  // 1 x 4 grid, K = 1: dy = 0 -> row group 1; dx = q - k clipped to [-1, 1].
  check_values(clipped_relative_index_2d(1, 4, 1), flat({{4, 3, 3, 3}, {5, 4, 3, 3}, {5, 5, 4, 3}, {5, 5, 5, 4}}));
  // 3 x 1 grid, K = 1: dy = q - k clipped, dx = 0.
  check_values(clipped_relative_index_2d(3, 1, 1), flat({{4, 1, 1}, {7, 4, 1}, {7, 7, 4}}));
  PositionOptions o = opts2d("clipped2d", 2);
  o.max_relative_position = 1;
  const auto p = make2d(o);
  const Tensor table = p->named_parameters()[0].second;
  CHECK(table.shape() == Shape{9, 2});
  const Tensor b = p->bias(grid(2, 3));
  CHECK(b.shape() == Shape{2, 6, 6});
  // query (1, 2), key (0, 0): dy = 1, dx = 2 -> clipped (1, 1) -> row 2 * 3 + 2 = 8.
  CHECK(b.at({1, 5, 0}) == table.at({8, 1}));
  CHECK(b.at({0, 0, 5}) == table.at({0, 0}));
}

testing::GradCase gradcheck_learned2d() {
  PositionOptions o = opts2d("learned2d", 1, 2);
  o.max_side = 3;
  const auto p = make2d(o);
  return testing::module_case(*p, [p] { return p->embed(grid(2, 3)); }, "learned2d", OpKind::IndexSelect);
}

testing::GradCase gradcheck_clipped2d() {
  PositionOptions o = opts2d("clipped2d", 2);
  o.max_relative_position = 1;
  const auto p = make2d(o);
  return testing::module_case(*p, [p] { return p->bias(grid(2, 3)); }, "clipped2d", OpKind::IndexSelect);
}

// A fixed scheme: the gradient of what its output is added to flows through.
testing::GradCase gradcheck_alibi2d() {
  const auto p = make2d(opts2d("alibi2d", 2));
  p->to(DType::f64);
  Generator gen(41);
  return {"alibi2d bias", OpKind::Add, {testing::input(gen, {2, 6, 6})},
          [p](const std::vector<Tensor>& in) { return softmax(add(in[0], p->bias(grid(2, 3))), -1); }};
}

testing::GradCase gradcheck_sinusoidal2d() {
  const auto p = make2d(opts2d("sinusoidal2d", 1, 4));
  p->to(DType::f64);
  Generator gen(42);
  return {"sinusoidal2d embeddings", OpKind::Add, {testing::input(gen, {6, 4})},
          [p](const std::vector<Tensor>& in) { return tanh(add(in[0], p->embed(grid(3, 2)))); }};
}

}  // namespace

TEST_CASE("position2d alibi2d and clipped2d: additive biases of their own dtype, nothing persistent") {
  const auto p = make2d(opts2d("alibi2d", 2));
  CHECK(p->name() == "alibi2d");
  CHECK(p->kind() == PositionKind::additive_bias);
  CHECK(p->named_buffers(true).empty());
  CHECK(make2d(opts2d("clipped2d", 2))->kind() == PositionKind::additive_bias);
}

TEST_CASE("position2d sinusoidal2d: row half varies with the row, column half with the column") {
  const auto p = make2d(opts2d("sinusoidal2d", 1, 8));
  CHECK(p->kind() == PositionKind::absolute);
  const Tensor e = p->embed(grid(3, 4));
  for (int64_t a = 0; a < 12; ++a)
    for (int64_t b = 0; b < 12; ++b) {
      bool row_half_equal = true, col_half_equal = true;
      for (int64_t c = 0; c < 4; ++c) row_half_equal &= e.at({a, c}) == e.at({b, c});
      for (int64_t c = 4; c < 8; ++c) col_half_equal &= e.at({a, c}) == e.at({b, c});
      CHECK(row_half_equal == (a / 4 == b / 4));
      CHECK(col_half_equal == (a % 4 == b % 4));
    }
  CHECK(contains(error_of([] { make2d(opts2d("sinusoidal2d", 1, 6)); }), "d_model 6 must be a positive multiple of 4"));
  CHECK(contains(error_of([&] { p->bias(grid(2, 2)); }), "sinusoidal2d' (kind absolute) has no bias()"));
}

TEST_CASE("position2d learned2d: one vector per cell, an error past the table") {
  PositionOptions o = opts2d("learned2d", 1, 2);
  o.max_side = 3;
  const auto p = make2d(o);
  const auto params = p->named_parameters();
  REQUIRE(params.size() == 1);
  CHECK(params[0].first == "table");
  CHECK(params[0].second.shape() == Shape{3, 3, 2});
  CHECK(contains(error_of([&] { p->embed(grid(4, 1)); }), "grid height 4 is beyond the table's max_side 3"));
  CHECK(contains(error_of([&] { p->embed(grid(1, 5)); }), "grid width 5 is beyond the table's max_side 3"));
  o.max_side = 0;
  CHECK(contains(error_of([&] { make2d(o); }), "max_side 0"));
}

TEST_CASE("position2d names, none and errors") {
  const auto none = make2d(opts2d("none"));
  CHECK(none->kind() == PositionKind::none);
  CHECK(none->parameter_count() == 0);
  CHECK(contains(error_of([&] { none->bias(grid(2, 2)); }), "'none' (kind none) has no bias()"));
  CHECK(contains(error_of([&] { none->embed(grid(2, 2)); }), "'none' (kind none) has no embed()"));
  const std::string unknown = error_of([] { make2d(opts2d("rope2d")); });
  CHECK(contains(unknown, "unknown 2-D scheme 'rope2d'"));
  CHECK(contains(unknown, "swin, swin_v2, learned2d, sinusoidal2d, alibi2d, clipped2d, none"));
  CHECK(contains(error_of([] { make2d(opts2d("t5")); }), "unknown 2-D scheme 't5'"));
  CHECK(contains(error_of([] { make2d(opts2d("alibi2d", 0)); }), "heads 0"));
  CHECK(contains(error_of([] { make2d(opts2d("learned2d", 1, 0)); }), "d_model 0"));
  CHECK(contains(error_of([] { make2d(opts2d("alibi2d"))->bias(grid(0, 3)); }), "grid 0 x 3"));
  CHECK(contains(error_of([] { make2d(opts2d("alibi2d"))->bias(Positions::line(3, 3)); }),
                 "a 2-D scheme given a line of positions"));
  // The window schemes live in the window attention, not in a module of their own.
  CHECK(contains(error_of([] { make2d(opts2d("swin")); }), "window attention"));
}

RPB_SCHEME_CASE(learned2d, golden_learned2d, gradcheck_learned2d);
RPB_SCHEME_CASE(sinusoidal2d, golden_sinusoidal2d, gradcheck_sinusoidal2d);
RPB_SCHEME_CASE(alibi2d, golden_alibi2d, gradcheck_alibi2d);
RPB_SCHEME_CASE(clipped2d, golden_clipped2d, gradcheck_clipped2d);

// Never-trained table rows (issue 15): the table schemes record the rows training read, and with
// position.untrained = "nearest" evaluation reads each never-trained row's nearest trained row, exactly.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "nn/grid_model.h"
#include "nn/position.h"
#include "nn/position/table_scheme.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/config/config.h"

namespace fs = std::filesystem;
using namespace rpb;
using namespace rpb::nn;
using namespace rpb::testing;  // contains, error_of, run_rpb, TempDir, tiny_t5_overrides, file_text

namespace {

PositionOptions t5_options(bool causal) {
  PositionOptions o;
  o.scheme = "t5";
  o.heads = 3;
  o.causal = causal;
  return o;  // 32 buckets, max_distance 128
}

// The rows that T5 buckets give the relative positions key - query in [lo, hi].
std::set<int64_t> t5_rows(int64_t lo, int64_t hi, bool causal) {
  std::set<int64_t> rows;
  for (int64_t r = lo; r <= hi; ++r) rows.insert(t5_bucket(r, !causal, 32, 128));
  return rows;
}

std::set<int64_t> marked(const PositionScheme& s) {
  std::set<int64_t> rows;
  const std::vector<double> v = dynamic_cast<const TableScheme&>(s).trained.to_vector();
  for (std::size_t r = 0; r < v.size(); ++r)
    if (v[r] != 0.0) rows.insert(static_cast<int64_t>(r));
  return rows;
}

// The row spans of a T5 table (32 buckets, max_distance 128).
std::vector<report::RowSpan> t5_spans(bool causal) {
  Generator gen(0);
  const auto s = make_position_scheme(t5_options(causal), gen);
  return dynamic_cast<const TableScheme&>(*s).row_spans();
}

}  // namespace

TEST_CASE("untrained rows: 1-D nearest trained row on the same side of the query, by relative position") {
  // Causal T5 (32, 128) trained at length 64: distances 0..63 read rows 0..26; rows 27..31 (distances >= 67) take
  // row 26, the farthest trained one.
  const std::vector<report::RowSpan> spans = t5_spans(true);
  std::vector<bool> trained(32, false);
  for (const int64_t r : t5_rows(-63, 0, true)) trained[static_cast<std::size_t>(r)] = true;
  REQUIRE(t5_rows(-63, 0, true) == t5_rows(-66, 0, true));  // 64..66 share row 26
  const std::vector<int64_t> near = nearest_trained_rows(spans, trained);
  for (int64_t r = 0; r < 32; ++r) CHECK(near[static_cast<std::size_t>(r)] == (r <= 26 ? r : 26));

  // Bidirectional: each side keeps to itself; a gap takes its nearer neighbour, a tie the row nearer the query.
  const std::vector<report::RowSpan> bi = t5_spans(false);
  std::vector<bool> some(32, false);
  for (const int64_t r : {0, 1, 2, 5, 17, 18}) some[static_cast<std::size_t>(r)] = true;
  const std::vector<int64_t> nb = nearest_trained_rows(bi, some);
  CHECK(nb[3] == 2);    // distance 3: 2 is 1 away, 5 is 2 away
  CHECK(nb[4] == 5);    // distance 4: 5 is 1 away
  CHECK(nb[15] == 5);   // the far past: its nearest trained row
  CHECK(nb[19] == 18);  // the future side reads only future rows
  CHECK(nb[31] == 18);
  CHECK(nb[16] == 16);  // bucket 16 holds no position (key - query > 0 starts at 17): kept
  std::vector<bool> tie(32, false);
  tie[1] = tie[3] = true;
  CHECK(nearest_trained_rows(bi, tie)[2] == 1);  // distance 2 is 1 from both: the one nearer the query

  // Shaw (K = 4) trained at length 3: rows of key - query -2..0 (rows 2..4); -3 and the clipped <= -4 take row 2.
  PositionOptions shaw;
  shaw.scheme = "shaw";
  shaw.max_relative_position = 4;
  Generator gen(0);
  const auto s = make_position_scheme(shaw, gen);
  const std::vector<report::RowSpan> ss = dynamic_cast<const TableScheme&>(*s).row_spans();
  std::vector<bool> t(9, false);
  t[2] = t[3] = t[4] = true;
  const std::vector<int64_t> ns = nearest_trained_rows(ss, t);
  CHECK(ns == std::vector<int64_t>{2, 2, 2, 3, 4, 5, 6, 7, 8});  // the future rows have no trained row: kept
}

TEST_CASE("untrained rows: 2-D nearest trained offset, a box of trained offsets clamps to the box") {
  const int64_t R = 8, side = 2 * R + 1;
  std::vector<bool> trained(static_cast<std::size_t>(side * side), false);
  for (int64_t dy = -7; dy <= 7; ++dy)
    for (int64_t dx = -7; dx <= 7; ++dx) trained[static_cast<std::size_t>((dy + R) * side + dx + R)] = true;
  const std::vector<int64_t> near = nearest_trained_rows_2d(R, trained);
  for (int64_t dy = -R; dy <= R; ++dy)
    for (int64_t dx = -R; dx <= R; ++dx) {
      const int64_t cy = std::clamp<int64_t>(dy, -7, 7), cx = std::clamp<int64_t>(dx, -7, 7);
      CHECK(near[static_cast<std::size_t>((dy + R) * side + dx + R)] == (cy + R) * side + cx + R);
    }
  CHECK(nearest_trained_rows_2d(1, std::vector<bool>(9, false)) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(contains(error_of([] { nearest_trained_rows_2d(2, std::vector<bool>(9)); }), "(2R + 1)^2"));
}

TEST_CASE("untrained rows: training forwards mark the rows unmasked scores read, evaluation reads nearest rows") {
  for (const bool reference : {false, true}) {
    CAPTURE(reference);
    PositionOptions o = t5_options(true);
    Generator gen(2);
    const auto s = make_position_scheme(o, gen);
    const Positions train = Positions::line(64, 64);
    {
      NoGradGuard no_grad;  // no gradient: nothing is trained
      if (reference) s->bias(train);
      else s->relative_bias(train);
      CHECK(marked(*s).empty());
    }
    if (reference) s->bias(train);
    else s->relative_bias(train);
    CHECK(marked(*s) == t5_rows(-63, 0, true));  // the future keys (bucket 0 too) are masked: not counted
    s->eval();
    s->bias(Positions::line(256, 256));  // evaluation marks nothing
    CHECK(marked(*s) == t5_rows(-63, 0, true));

    // keep: the bias reads the table as it is; nearest: every distance past the trained ones reads row 26.
    const Tensor& table = dynamic_cast<const TableScheme&>(*s).table;
    const Tensor keep = s->bias(Positions::line(256, 256));  // (H, q, k)
    o.untrained = Untrained::nearest;
    Generator same(2);
    const auto n = make_position_scheme(o, same);
    dynamic_cast<const TableScheme&>(*n).trained.copy_(dynamic_cast<const TableScheme&>(*s).trained);
    n->eval();
    const Tensor near = n->bias(Positions::line(256, 256));
    const RelativeBias rel = n->relative_bias(Positions::line(256, 256));
    for (int64_t h = 0; h < 3; ++h)
      for (const int64_t d : {0, 5, 63, 66, 67, 100, 255}) {
        CAPTURE(h);
        CAPTURE(d);
        const int64_t row = t5_bucket(-d, false, 32, 128);
        CHECK(keep.at({h, 255, 255 - d}) == table.at({row, h}));
        CHECK(near.at({h, 255, 255 - d}) == table.at({std::min<int64_t>(row, 26), h}));
        CHECK(rel.table.at({h, 255 - d}) == table.at({std::min<int64_t>(row, 26), h}));  // column m: m - 255
      }
    n->train();
    CHECK(n->bias(Positions::line(256, 256)).at({0, 255, 0}) == table.at({31, 0}));  // training reads the table
  }
}

TEST_CASE("untrained rows: clipped2d on a grid model marks the trained offsets, nearest clamps at larger grids") {
  TransformerOptions o;
  o.vocab = 3; o.d_model = 8; o.heads = 2; o.layers = 1; o.d_ff = 8; o.causal = false;
  o.position.scheme = "clipped2d";
  o.position.max_relative_position = 4;
  Generator gen(0);
  GridModel m(o, WindowOptions{}, gen);
  const Tensor tokens = randint({1, 3, 3}, 3, gen);
  backward(m.loss(tokens, tokens));
  const TableScheme* clipped = nullptr;
  for (const auto& [path, mod] : m.named_modules())
    if (path == "pos.clipped2d") clipped = dynamic_cast<const TableScheme*>(mod);
  REQUIRE(clipped);
  const std::vector<double> marks = clipped->trained.to_vector();
  for (int64_t dy = -4; dy <= 4; ++dy)
    for (int64_t dx = -4; dx <= 4; ++dx)
      CHECK(marks[static_cast<std::size_t>((dy + 4) * 9 + dx + 4)] == (std::abs(dy) <= 2 && std::abs(dx) <= 2 ? 1.0 : 0.0));
  const std::vector<int64_t> rows = clipped->nearest_rows(clipped->trained_rows());
  CHECK(rows[static_cast<std::size_t>((4 + 4) * 9 + (-3 + 4))] == (2 + 4) * 9 + (-2 + 4));  // (4, -3) -> (2, -2)
}

TEST_CASE("untrained rows: options, a missing record, checkpoints, rpb eval --untrained and sweep methods") {
  PositionOptions alibi;
  alibi.scheme = "alibi";
  alibi.untrained = Untrained::nearest;
  CHECK(contains(error_of([&] { validate(alibi); }), "untrained = \"nearest\" applies to the schemes with a table row "
                                                     "per relative position (t5, shaw, clipped2d); alibi has none"));
  PositionOptions swin = alibi;
  swin.scheme = "swin";
  swin.dims = 2;
  CHECK(contains(error_of([&] { validate(swin); }),
                 "swin reads its bias only inside a window, where every training window reads every offset"));
  const std::string cfg_error = error_of([] { parse_config("[position]\nscheme = \"rope\"\nuntrained = \"nearest\"\n", "u.toml"); });
  CHECK(contains(cfg_error, "u.toml:3:13"));
  CHECK(contains(cfg_error, "position.untrained"));

  PositionOptions o = t5_options(true);
  o.untrained = Untrained::nearest;
  Generator gen(0);
  const auto fresh = make_position_scheme(o, gen);
  fresh->eval();
  CHECK(contains(error_of([&] { fresh->bias(Positions::line(4, 4)); }), "records none"));

  // A tiny t5 run (length 16, 8 buckets, max_distance 32): distances 0..15 train rows 0..6; row 7 never.
  TempDir dir("untrained");
  std::string set;
  for (const std::string& s : tiny_t5_overrides(dir.path, "t5", 20)) set += " --set '" + s + "'";
  REQUIRE(run_rpb("train " + std::string(RPB_SOURCE_DIR) + "/configs/t5.toml" + set).code == 0);
  const fs::path ckpt = dir.path / "t5" / "step_00000020.h5";
  const Checkpoint c = load_checkpoint(ckpt.string());
  bool found = false;
  for (const auto& [name, t] : c.buffers)
    if (name == "pos.t5.trained") {
      found = true;
      CHECK(t.to_vector() == std::vector<double>{1, 1, 1, 1, 1, 1, 1, 0});
    }
  CHECK(found);
  const CommandResult inspect = run_rpb("inspect " + ckpt.string());
  CHECK(contains(inspect.out, "pos.t5.trained: 1 of 8 rows never read in training: 7; position.untrained = keep"));

  const CommandResult keep = run_rpb("eval " + ckpt.string() + " --lengths 16,64 --json --no-record");
  const CommandResult near = run_rpb("eval " + (dir.path / "t5").string() + " --lengths 16,64 --json --untrained nearest");
  REQUIRE(keep.code == 0);
  REQUIRE(near.code == 0);
  CHECK(contains(near.out, "\"untrained\": \"nearest\""));
  CHECK(contains(keep.out, "\"untrained\": \"keep\""));
  CHECK(fs::exists(dir.path / "t5" / "eval" / "step_00000020-256-L16_64-nearest.json"));
  const auto nll_at = [](const std::string& json, int64_t length) {
    const auto at = json.find("\"length\": " + std::to_string(length) + ",");
    const auto nll = json.find("\"nll\": ", at);
    return json.substr(nll + 7, json.find(',', nll) - nll - 7);
  };
  CHECK(nll_at(keep.out, 16) == nll_at(near.out, 16));  // at the train length no untrained row is read
  CHECK(nll_at(keep.out, 64) != nll_at(near.out, 64));
  const CommandResult bad = run_rpb("eval " + ckpt.string() + " --untrained closest");
  CHECK(bad.code == 2);

  // Sweep methods: an evaluation-only setting evaluates the scheme's runs; any other trains runs of its own.
  const RunConfig sweep = parse_config(
      "[sweep]\nmethods = [\"t5\", \"t5@untrained=nearest\", \"t5@max_distance=16@optim.lr=0.01\"]\n", "s.toml");
  REQUIRE(sweep.sweep.methods.size() == 3);
  REQUIRE(sweep.sweep.methods[1].settings.size() == 1);
  CHECK(sweep.sweep.methods[1].settings[0].key == "position.untrained");
  CHECK(std::get<std::string>(sweep.sweep.methods[1].settings[0].value.value) == "nearest");
  REQUIRE(sweep.sweep.methods[2].settings.size() == 2);
  CHECK(std::get<int64_t>(sweep.sweep.methods[2].settings[0].value.value) == 16);
  CHECK(std::get<double>(sweep.sweep.methods[2].settings[1].value.value) == 0.01);
  CHECK(sweep.sweep.methods[1].label() == "T5 bias, untrained nearest");
  CHECK(sweep.sweep.methods[2].label() == "T5 bias, max_distance 16, optim.lr 0.01");
  CHECK(contains(error_of([] { parse_config("[sweep]\nmethods = [\"t5@nearest\"]\n", "s.toml"); }),
                 "expected <scheme>@<key>=<value>"));
  CHECK(contains(error_of([] { parse_config("[sweep]\nmethods = [\"t5@scheme=rope\"]\n", "s.toml"); }),
                 "the scheme is the part before the first '@'"));
  const std::string wrong = error_of([&] {
    run_config(sweep, {"markov", parse_config("[sweep]\nmethods = [\"rope@untrained=nearest\"]\n", "s.toml").sweep.methods[0],
                       0, dir.path.string(), "x"});
  });
  CHECK(contains(wrong, "sweep method \"rope@untrained=nearest\": position.untrained = \"nearest\": invalid for scheme rope"));
}

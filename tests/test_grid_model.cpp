// nn/grid_model and the 2-D runs: names, gradients, windows, configs and the 2-D sweep.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gradcheck.h"
#include "nn/grid_model.h"
#include "scheme_cases.h"
#include "test_util.h"
#include "tiny_grid.h"
#include "train/config/config.h"

namespace fs = std::filesystem;
using namespace rpb;
using namespace rpb::nn;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::run_rpb;
using rpb::testing::tiny_grid;
using rpb::testing::tiny_windows;

TEST_CASE("grid model: parameter names follow the module paths") {
  Generator gen(0);
  GridModel swin(tiny_grid("swin"), tiny_windows(), gen);
  std::vector<std::string> names;
  for (const auto& [n, t] : swin.named_parameters()) names.push_back(n);
  CHECK(names.front() == "tok.weight");
  CHECK(std::find(names.begin(), names.end(), "blocks.1.window_attn.relative_position_bias_table") != names.end());
  CHECK(names.back() == "head.bias");
  GridModel clipped(tiny_grid("clipped2d"), tiny_windows(), gen);
  CHECK(clipped.named_parameters()[1].first == "pos.clipped2d.table");
  CHECK(contains(error_of([&] { GridModel m(tiny_grid("t5"), tiny_windows(), gen); }), "unknown 2-D scheme 't5'"));
}

TEST_CASE("grid model: float64 gradient check through windows, shifts, padding and 2-D biases") {
  for (const nn::SchemeInfo& info : nn::schemes()) {
    if (info.dims != 2) continue;  // every 2-D scheme (none is the 1-D tests')
    const char* scheme = info.name;
    INFO("scheme: ", scheme);
    Generator gen(1);
    GridModel m(tiny_grid(scheme), tiny_windows(), gen);
    m.to(DType::f64);
    const int64_t side = std::string(scheme) == "learned2d" ? 4 : 3;  // 3 x 3 pads to the 2 x 2 windows
    const Tensor x = randint({1, side, side}, 3, gen), y = randint({1, side, side}, 3, gen);
    rpb::testing::GradCase c{scheme, OpKind::Linear, {}, [&](const std::vector<Tensor>&) { return m.loss(x, y); }};
    for (const auto& [n, t] : m.named_parameters()) c.inputs.push_back(t);
    const auto r = rpb::testing::gradcheck(c);
    CHECK(r.op_recorded);
    CHECK_MESSAGE(r.ok, r.report);
  }
}

TEST_CASE("grid model: swin_v2 runs with a larger window, learned2d stops at its table") {
  Generator gen(2);
  GridModel v2(tiny_grid("swin_v2"), tiny_windows(), gen);
  v2.eval();
  NoGradGuard no_grad;
  const Tensor x = randint({1, 8, 8}, 3, gen);
  const std::vector<double> a = v2.forward(x).to_vector();
  v2.set_window(4);
  const std::vector<double> b = v2.forward(x).to_vector();
  CHECK(a.size() == b.size());
  CHECK(a != b);  // another window, another attention pattern
  GridModel learned(tiny_grid("learned2d"), tiny_windows(), gen);
  CHECK(learned.max_side() == 4);
  CHECK(contains(error_of([&] { learned.forward(randint({1, 5, 5}, 3, gen)); }), "learned2d"));
  CHECK(contains(error_of([&] { learned.set_window(4); }), "has no windows"));
}

TEST_CASE("grid model: configs for 2-D runs are checked") {
  const std::string base = "[task]\nkind = \"grid2d\"\n[run]\nlength = 8\n";
  CHECK(parse_config(base, "g.toml").model.position.scheme == "swin");
  CHECK(contains(error_of([&] { parse_config(base + "[position]\nscheme = \"t5\"\n", "g.toml"); }),
                 "position.scheme = \"t5\": expected one of swin, swin_v2"));
  CHECK(contains(error_of([&] { parse_config(base + "[grid]\neval_window = 4\n[position]\nscheme = \"alibi2d\"\n", "g.toml"); }),
                 "grid.eval_window"));
  CHECK(contains(error_of([&] { parse_config(base + "[sweep]\nmethods = [\"t5\"]\n", "g.toml"); }),
                 "\"t5\": expected one of"));
  CHECK(contains(error_of([&] { parse_config(base + "[sweep]\nmethods = [\"alibi2d@window4\"]\n", "g.toml"); }),
                 "swin_v2@window<N>"));
  CHECK(contains(error_of([&] { parse_config(base + "[sweep]\ntasks = [\"grid2d\", \"lag\"]\n", "g.toml"); }),
                 "sweep it on its own"));
  CHECK(parse_config(base + "[sweep]\nmethods = [\"swin_v2@window16\", \"none\"]\n", "g.toml").sweep.methods.size() == 2);
}

TEST_CASE("grid model: rpb extrapolate prints the 2-D table") {
  const rpb::testing::TempDir tmp("grid");
  const fs::path& dir = tmp.path;
  std::ofstream(dir / "g.toml") << "[run]\nname = \"g\"\nout_dir = \"" << dir.string()
                                << "\"\nsteps = 6\nbatch = 2\nlength = 4\nlog_every = 3\neval_multipliers = [1, 2]\n"
                                   "eval_tokens = 64\n[model]\nd_model = 8\nheads = 2\nlayers = 2\nd_ff = 8\n"
                                   "[grid]\nwindow = 2\ncpb_hidden = 8\nmax_side = 4\n[task]\nkind = \"grid2d\"\nvocab = 3\n"
                                   "[optim]\nlr = 1e-2\n[sweep]\nmethods = [\"swin\", \"swin_v2\", \"swin_v2@window4\", \"learned2d\"]\n"
                                   "figures = false\n";
  const auto r = run_rpb("extrapolate " + (dir / "g.toml").string());
  CHECK(r.code == 0);
  CHECK(contains(r.out, "Task: grid2d"));
  CHECK(contains(r.out, "| Swin V1 table (windows) |"));
  CHECK(contains(r.out, "| Swin V2 continuous (windows), eval window 4 |"));
  CHECK(contains(r.out, "| Learned 2-D (global) | 128 |"));
  CHECK(contains(r.out, "n/a"));
  CHECK(contains(r.out, "[3/4] grid2d / swin_v2@window4 / seed 0: finished earlier, reusing"));
}

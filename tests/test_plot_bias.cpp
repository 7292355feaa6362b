// The bias request of `rpb inspect --plot` (cli/plot_bias.h): the values per head against d = query - key, the
// trained flags of table rows, the 2-D offsets, and the CLI that hands them to the plotting module (here the
// stand-in tests/plot_stub/rpb_plot/, which copies the request for the test to read).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/plot_bias.h"
#include "core/autograd.h"
#include "nn/position/table_scheme.h"
#include "test_util.h"
#include "train/config/config.h"
#include "train/workload.h"

namespace rpb_test_plot_bias {

namespace fs = std::filesystem;
using nlohmann::ordered_json;
using rpb::testing::contains;
using rpb::testing::run_rpb;
using rpb::testing::ScopedEnv;
using rpb::testing::TempDir;

rpb::RunConfig config_of(const std::string& position, const std::string& task = "") {
  const std::string grid =
      task.empty() ? "" : "[grid]\nwindow = 2\nmax_side = 4\n[task]\nkind = \"" + task + "\"\nvocab = 3\n";
  return rpb::parse_config("[model]\nd_model = 8\nheads = 2\nlayers = 1\nd_ff = 8\n[position]\n" + position +
                               "[run]\nlength = 4\neval_multipliers = [1]\n" + grid,
                           "plot_bias");
}

// Marks the rows `rows` of the model's table scheme as trained (as a training forward would).
void mark_trained(const rpb::nn::Module& model, const std::vector<int64_t>& rows) {
  for (const auto& [path, m] : model.named_modules())
    if (const auto* t = dynamic_cast<const rpb::nn::TableScheme*>(m)) {
      std::vector<float> flags(static_cast<std::size_t>(t->trained.numel()), 0.0f);
      for (const int64_t r : rows) flags[static_cast<std::size_t>(r)] = 1.0f;
      rpb::NoGradGuard no_grad;
      const_cast<rpb::nn::TableScheme*>(t)->trained.copy_(
          rpb::Tensor::from_vector<float>({static_cast<int64_t>(flags.size())}, flags));
    }
}

// Sets table row r of the model's table scheme to r + 0.5 * head (a table that tells each offset's sign).
void number_rows(const rpb::nn::Module& model) {
  for (const auto& [path, m] : model.named_modules())
    if (const auto* t = dynamic_cast<const rpb::nn::TableScheme*>(m)) {
      const int64_t rows = t->table.size(0), heads = t->table.size(1);
      std::vector<float> v;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t h = 0; h < heads; ++h) v.push_back(static_cast<float>(r) + 0.5f * static_cast<float>(h));
      rpb::NoGradGuard no_grad;
      const_cast<rpb::nn::TableScheme*>(t)->table.copy_(rpb::Tensor::from_vector<float>({rows, heads}, v));
    }
}

}  // namespace rpb_test_plot_bias

using namespace rpb_test_plot_bias;

TEST_CASE("plot bias: ALiBi's values fall linearly with d = query - key, one row per head, every distance trained") {
  const rpb::RunConfig cfg = config_of("scheme = \"alibi\"\n");
  const auto model = rpb::make_model(cfg, 1);
  const ordered_json b = rpb::bias_block(*model, cfg, "--plot", "title");
  CHECK(b.at("dims") == 1);
  CHECK(b.at("scheme") == "alibi");
  CHECK(b.at("train_length") == 4);
  REQUIRE(b.at("modules").size() == 1);
  const ordered_json& m = b.at("modules")[0];
  CHECK(m.at("distances").size() == 16);  // 4 x the train length, at least 16
  CHECK(m.at("distances")[5] == 5);
  CHECK(m.at("query") == 15);  // one query, at the last position, over keys 0 .. 15
  REQUIRE(m.at("values").size() == 2);
  for (const ordered_json& head : m.at("values")) {
    REQUIRE(head.size() == 16);
    CHECK(head[0].get<double>() == 0.0);
    CHECK(head[1].get<double>() < 0.0);
    CHECK(head[9].get<double>() == doctest::Approx(9 * head[1].get<double>()));  // key 9 back: 9 x the slope
  }
  for (const ordered_json& t : m.at("trained")) CHECK(t == true);  // nothing of ALiBi is untrained
  CHECK(m.at("untrained_rows").is_null());
  CHECK(contains(m.at("head_notes")[0].get<std::string>(), "slope"));
}

TEST_CASE("plot bias: a T5 table marks the distances whose bucket training never read, and names position.untrained") {
  const rpb::RunConfig cfg = config_of("scheme = \"t5\"\nnum_buckets = 32\nmax_distance = 128\nuntrained = \"keep\"\n");
  const auto model = rpb::make_model(cfg, 1);
  mark_trained(*model, {0, 1, 2, 3});  // the exact buckets of d = 0 .. 3 (causal T5: one bucket per small distance)
  const ordered_json m = rpb::bias_block(*model, cfg, "--plot", "t").at("modules")[0];
  CHECK(m.at("untrained_rows") == "keep");
  const ordered_json& trained = m.at("trained");
  REQUIRE(trained.size() == 16);
  for (int d = 0; d < 16; ++d) CHECK_MESSAGE(trained[d] == (d < 4), "d = " << d);
}

TEST_CASE("plot bias: a 2-D table gives dy, dx = query - key, a heatmap per head and the trained offsets") {
  const rpb::RunConfig cfg = config_of("scheme = \"clipped2d\"\nmax_relative_position = 2\n", "grid2d");
  const auto model = rpb::make_model(cfg, 1);
  // Row (dy + 2) x 5 + dx + 2 of clipped2d's table holds the query - key offset (dy, dx): 12 is (0, 0), 17 (1, 0).
  mark_trained(*model, {12, 17});
  number_rows(*model);
  const ordered_json b = rpb::bias_block(*model, cfg, "--plot", "t");
  CHECK(b.at("dims") == 2);
  const ordered_json& m = b.at("modules")[0];
  CHECK(m.at("dy") == ordered_json({-3, -2, -1, 0, 1, 2, 3}));  // a 4 x 4 grid: offsets -3 .. 3
  CHECK(m.at("dx") == m.at("dy"));
  REQUIRE(m.at("values").size() == 2);
  CHECK(m.at("values")[0].size() == 7);
  CHECK(m.at("values")[0][0].size() == 7);
  const ordered_json& trained = m.at("trained");
  for (int y = 0; y < 7; ++y)
    for (int x = 0; x < 7; ++x) CHECK(trained[y][x] == ((y == 3 || y == 4) && x == 3));  // dy = 0 and dy = +1
  // values[h][dy + 3][dx + 3] is the row of the offset (dy, dx), clipped to K = 2 per axis: (-3, -3) reads the row
  // of (-2, -2); (2, -1) reads row 4 x 5 + 1 = 21, (-2, 1) row 0 x 5 + 3 = 3.
  CHECK(m.at("values")[1][0][0] == m.at("values")[1][1][1]);
  CHECK(m.at("values")[0][5][2].get<double>() == 21.0);
  CHECK(m.at("values")[0][1][4].get<double>() == 3.0);
  CHECK(m.at("values")[1][5][2].get<double>() == 21.5);
}

TEST_CASE("plot bias: rope adds no bias: the flag's message names the schemes that do, and no file is written") {
  const rpb::RunConfig cfg = config_of("scheme = \"rope\"\n");
  const auto model = rpb::make_model(cfg, 1);
  CHECK(rpb::testing::error_of([&] { rpb::bias_block(*model, cfg, "--svg", "t"); }) ==
        "inspect --svg: position scheme rope enters the model as rotary and adds no bias to draw (--svg draws the "
        "schemes t5, shaw, log_decay, kerple_power, alibi, fire, alibi2d, clipped2d); no file written");
}

TEST_CASE("plot bias: rpb inspect --plot hands the checkpoint's bias to the module and writes the figure atomically") {
  TempDir dir("plot_bias_cli");
  const ScopedEnv stub("RPB_PYTHON_DIR", rpb::testing::kPlotStubDir);
  const ScopedEnv log("RPB_PLOT_STUB_LOG", dir.file("request.json").c_str());
  std::string args = std::string(RPB_SOURCE_DIR) + "/configs/t5.toml";
  for (const std::string& o : rpb::testing::tiny_t5_overrides(dir.path, "t5", 4)) args += " --set '" + o + "'";
  REQUIRE(run_rpb("train " + args).code == 0);
  const std::string run = dir.file("t5"), figure = dir.file("bias.svg");
  auto r = run_rpb("inspect " + run + " --plot " + figure);
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK(contains(r.out, "bias plot: " + figure));
  CHECK(contains(rpb::testing::file_text(figure), "<svg"));
  const ordered_json request = ordered_json::parse(rpb::testing::file_text(dir.file("request.json")));
  CHECK(request.at("kind") == "bias");
  CHECK(request.at("outputs")[0].at("format") == "svg");
  CHECK(fs::path(request.at("outputs")[0].at("path").get<std::string>()).parent_path() == fs::canonical(dir.path));
  CHECK(contains(request.at("bias").at("title").get<std::string>(), "T5 bias (t5)"));
  const ordered_json& m = request.at("bias").at("modules")[0];
  CHECK(m.at("name") == "pos.t5");
  CHECK(m.at("trained")[0] == true);  // d = 0 is read by every query in training
  for (const auto& e : fs::directory_iterator(dir.path)) CHECK(!contains(e.path().filename().string(), ".tmp."));

  // The alias --svg draws the same; matplotlib missing: exit 1 with the install hint, the old figure untouched.
  const std::string before = rpb::testing::file_text(figure);
  const ScopedEnv missing("RPB_PLOT_STUB_EXIT", "3");
  r = run_rpb("inspect " + run + " --svg " + figure);
  CHECK(r.code == 1);
  CHECK(contains(r.out, "matplotlib is missing: install it with `apt-get install python3-matplotlib`"));
  CHECK(rpb::testing::file_text(figure) == before);
  for (const auto& e : fs::directory_iterator(dir.path)) CHECK(!contains(e.path().filename().string(), ".tmp."));
}

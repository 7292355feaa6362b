// rpb's plots: the tick generator and text escaping of cli/svg.h, results.svg (cli/results_svg.h) and
// `rpb inspect --svg` (cli/inspect_svg.h), each SVG rendered to PNG by rsvg-convert (librsvg2-bin) when present.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli/results_svg.h"
#include "cli/svg.h"
#include "test_util.h"

namespace fs = std::filesystem;
using rpb::testing::contains;
using rpb::testing::file_text;
using rpb::testing::run_rpb;
using rpb::testing::TempDir;

namespace {

/// Renders `svg` to PNG with rsvg-convert and checks it succeeded and wrote an image; a MESSAGE says when
/// rsvg-convert is missing (Debian package librsvg2-bin, scripts/deps.sh).
void check_renders(const std::string& svg) {
  if (std::system("command -v rsvg-convert > /dev/null 2>&1") != 0) {
    MESSAGE("SKIPPED rendering " << svg << ": rsvg-convert is missing (Debian: librsvg2-bin)");
    return;
  }
  const std::string png = svg + ".png", log = svg + ".log";
  const int status = std::system(("rsvg-convert '" + svg + "' -o '" + png + "' > '" + log + "' 2>&1").c_str());
  CHECK_MESSAGE(status == 0, file_text(log));
  REQUIRE(fs::exists(png));
  CHECK(fs::file_size(png) > 1000);
  CHECK(file_text(png).substr(1, 3) == "PNG");
}

rpb::SweepResult sweep() {
  rpb::SweepResult r;
  r.name = "s";
  r.train_length = 64;
  r.multipliers = {1, 2, 4, 8};
  r.seeds = {0, 1};
  auto row = [&](const char* scheme, std::vector<std::vector<std::optional<double>>> ppl) {
    rpb::MethodResult m;
    m.task = "markov";
    m.method = {scheme, scheme, {}};
    m.lengths = {64, 128, 256, 512};
    m.ppl = std::move(ppl);
    m.optimal_ppl = 7.7;
    r.rows.push_back(m);
  };
  row("t5", {{8.0, 8.5, 9.0, 10.0}, {8.2, 8.7, 9.4, 11.0}});
  row("learned", {{8.1, std::nullopt, std::nullopt, std::nullopt}, {8.3, std::nullopt, std::nullopt, std::nullopt}});
  return r;
}

}  // namespace

TEST_CASE("svg: log ticks read as 1-2-5 or whole numbers, never 7.72 or 9.27") {
  using V = std::vector<double>;
  CHECK(rpb::svg::log_ticks(7.7, 11.1).major == V{8, 9, 10});
  CHECK(rpb::svg::log_ticks(2, 300).major == V{2, 5, 10, 20, 50, 100, 200});
  CHECK(rpb::svg::log_ticks(0.03, 0.7).major == V{0.05, 0.1, 0.2, 0.5});
  const rpb::svg::Ticks wide = rpb::svg::log_ticks(1, 1e8);  // many decades: powers of ten, minor ticks between
  CHECK(wide.major.size() == 9);
  CHECK(wide.minor.size() == 8 * 8);
  CHECK(rpb::svg::log_ticks(4.62, 4.9).major == V{4.65, 4.7, 4.75, 4.8, 4.85, 4.9});  // narrow: linear steps
  CHECK(rpb::svg::linear_ticks(-0.41, 0.29) == V{-0.4, -0.3, -0.2, -0.1, 0, 0.1, 0.2});
  for (const double t : rpb::svg::log_ticks(1.3, 77).major) CHECK(rpb::svg::tick_label(t).size() <= 3);
  CHECK(rpb::svg::tick_label(0.3) == "0.3");
  CHECK(rpb::svg::tick_label(-0.0578984, 3) == "-0.0579");
  CHECK(rpb::svg::escape("a<b & 'c' \"d\">\x1b") == "a&lt;b &amp; &apos;c&apos; &quot;d&quot;&gt;?");
}

TEST_CASE("svg: results.svg has a y label, readable log ticks, bands, the optimum and n/a in its legend") {
  const std::string svg = rpb::results_svg(sweep());
  CHECK(contains(svg, ">perplexity</text>"));
  std::set<std::string> y_labels;  // the tick labels left of the y axis
  const std::regex tick("text-anchor=\"end\">([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick); it != std::sregex_iterator(); ++it)
    y_labels.insert((*it)[1]);
  CHECK(y_labels == std::set<std::string>{"8", "9", "10"});  // over 7.4 .. 11.6
  CHECK(contains(svg, "<polygon"));                      // the t5 band: mean ± std over the two seeds
  CHECK(contains(svg, "stroke-dasharray=\"6 4\""));      // the optimum, in the plot and in the legend
  CHECK(contains(svg, ">optimal perplexity (7.700)</text>"));
  CHECK(contains(svg, ">T5 bias</text>"));
  CHECK(contains(svg, ">Learned PE (n/a: 2x 4x 8x)</text>"));
  CHECK(contains(svg, ">band: mean ± std over seeds</text>"));
  CHECK(contains(svg, ">1x</text>"));
  CHECK(contains(svg, ">512</text>"));
  CHECK(contains(svg, "r=\"6.0\""));  // learned's lone point: a larger marker (with an error bar)
  TempDir dir("svg");
  std::ofstream(dir.file("results.svg")) << svg;
  check_renders(dir.file("results.svg"));
}

TEST_CASE("svg: attention.svg draws the mean attention distance per method with bands and n/a, no optimum") {
  rpb::SweepResult r = sweep();
  auto diag = [](double d) {  // one layer of two heads whose mean is d
    rpb::AttentionDiagnostics a;
    a.mean_distance = {{d - 1, d + 1}};
    a.entropy = {{1.0, 2.0}};
    return a;
  };
  r.rows[0].attention = {{diag(3), diag(6), diag(12), diag(24)}, {diag(4), diag(7), diag(14), diag(30)}};
  r.rows[1].attention = {{diag(3), {}, {}, {}}, {diag(3.5), {}, {}, {}}};
  const std::string svg = rpb::attention_svg(r);
  CHECK(contains(svg, ">mean attention distance (mean over layers and heads)</text>"));
  CHECK(contains(svg, "Mean attention distance vs evaluation length, task markov"));
  CHECK(contains(svg, ">5</text>"));  // 1-2-5 ticks of a log axis over 2.9 .. 31
  CHECK(contains(svg, "<polygon"));
  CHECK(contains(svg, ">Learned PE (n/a: 2x 4x 8x)</text>"));
  CHECK(!contains(svg, "optimal perplexity"));
  CHECK(svg != rpb::results_svg(r));
  TempDir dir("attention_svg");
  std::ofstream(dir.file("attention.svg")) << svg;
  check_renders(dir.file("attention.svg"));
}

TEST_CASE("svg: rpb inspect --svg draws each head's bias, a scheme without one gets a message and no file") {
  TempDir dir("inspect_svg");
  const std::string common = " --set run.out_dir=" + dir.path.string() +
                             " --set run.steps=4 --set run.batch=2 --set run.length=16 --set run.eval_multipliers=[1]"
                             " --set run.checkpoint_every=4 --set model.d_model=16 --set model.d_ff=32"
                             " --set optim.warmup_steps=1";
  for (const char* scheme : {"t5", "log_decay", "rope"}) {
    CAPTURE(scheme);
    const std::string train = "train " RPB_SOURCE_DIR "/configs/t5.toml --set run.name=" + std::string(scheme) +
                              " --set position.scheme=" + scheme + common;
    REQUIRE(run_rpb(train).code == 0);
    const std::string ckpt = (dir.path / scheme / "step_00000004.h5").string(), svg = dir.file(std::string(scheme) + ".svg");
    const rpb::testing::CommandResult r = run_rpb("inspect " + ckpt + " --svg " + svg);
    if (std::string(scheme) == "rope") {
      CHECK(r.code == 1);
      CHECK(contains(r.out, "inspect --svg: position scheme rope enters the model as rotary and adds no bias to draw "
                            "(--svg draws the schemes t5, shaw, log_decay, alibi, alibi2d, clipped2d); no file written"));
      CHECK(!fs::exists(svg));
      continue;
    }
    CHECK_MESSAGE(r.code == 0, r.out);
    CHECK(contains(r.out, "bias plot: " + svg));
    const std::string text = file_text(svg);
    CHECK(contains(text, ">head 3"));                    // a curve and legend entry per head (t5.toml: 4 heads)
    CHECK(contains(text, ">trained: d &lt; 16</text>"));  // the trained range, shaded
    CHECK(contains(text, ">distance d = query - key (positions)</text>"));
    check_renders(svg);
  }
}

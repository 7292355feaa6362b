// The sweep's exports: results.tex (train/sweep/results_tex.h) checked without LaTeX by a small lexer, results.csv's
// aggregated rows and the terminal table's layout (train/sweep/results.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "test_util.h"
#include "train/run/output_file.h"
#include "train/io/version.h"
#include "train/sweep/results.h"
#include "train/sweep/results_json.h"
#include "train/sweep/results_tex.h"

namespace results_export_test {

using namespace rpb;
using rpb::testing::contains;
using rpb::testing::file_text;
using rpb::testing::TempDir;

// A label with every character LaTeX treats specially.
const std::string kHostile = "x_y@z%&#${}~^\\<>|";

// One line of LaTeX as the tabular reads it: its cells (split at '&') and what would not typeset as plain text.
struct Lexed {
  std::vector<std::string> cells;
  std::vector<std::string> problems;  // "unescaped %", "_ outside math", ...
};

// Lexes `line`: a backslash starts a command (a word of letters, or one other character); outside a command,
// % # and ~ are problems (a comment, a macro parameter, a tie), as are _ and ^ outside math, a $ left open, a brace
// that closes nothing or is left open, and an & inside braces or math.
Lexed lex(const std::string& line) {
  Lexed out;
  out.cells.emplace_back();
  int depth = 0;
  bool math = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\\') {
      std::size_t end = i + 1;
      while (end < line.size() && std::isalpha(static_cast<unsigned char>(line[end]))) ++end;
      if (end == i + 1 && end < line.size()) ++end;  // a control symbol: \_ \% \\ ...
      out.cells.back() += line.substr(i, end - i);
      i = end - 1;
      continue;
    }
    if (c == '&') {
      if (depth != 0 || math) out.problems.push_back("& inside braces or math");
      out.cells.emplace_back();
      continue;
    }
    if (c == '%' || c == '#' || c == '~') out.problems.push_back(std::string("unescaped ") + c);
    if ((c == '_' || c == '^') && !math) out.problems.push_back(std::string(1, c) + " outside math");
    if (c == '$') math = !math;
    if (c == '{') ++depth;
    if (c == '}' && --depth < 0) out.problems.push_back("} closes nothing");
    out.cells.back() += c;
  }
  if (depth > 0) out.problems.push_back("{ left open");
  if (math) out.problems.push_back("$ left open");
  for (std::string& cell : out.cells) {
    cell.erase(0, cell.find_first_not_of(' '));
    cell.erase(cell.find_last_not_of(' ') + 1);
  }
  return out;
}

SweepResultsRow row(const std::string& task, const std::string& label, std::vector<std::vector<std::optional<double>>> ppl) {
  SweepResultsRow m;
  m.task = task;
  m.method = label;
  m.label = label;
  m.position_params = 16;
  m.optimal_perplexity = task == "markov" ? std::optional<double>(7.7) : std::nullopt;
  m.perplexity = std::move(ppl);
  return m;
}

SweepResults sample() {
  SweepResults r;
  r.name = "my_sweep";
  r.train_length = 64;
  r.multipliers = {1, 2, 4};
  r.seeds = {0, 1};
  const std::optional<double> na;
  r.rows = {row("markov", "T5 bias, max_distance 64", {{8.0, 8.5, 9.0}, {8.2, 8.7, 9.4}}),  // 9.20 at 4x
            row("markov", kHostile, {{8.3, 8.4, 9.3}, {8.3, 8.4, 9.1}}),  // best at 2x, ties at 4x (9.20)
            row("markov", "Learned PE", {{8.05, na, na}, {8.05, na, na}}),  // best at 1x, n/a beyond
            row("grid2d", "Swin V1 table (windows)", {{3.0, 3.5, 120.25}, {3.0, 3.5, 120.75}})};
  return r;
}

// The lines of `text` between the first line holding `from` (after `start`) and the next holding `to`.
std::vector<std::string> lines_between(const std::string& text, const std::string& from, const std::string& to,
                                       std::size_t start = 0) {
  std::vector<std::string> out;
  std::istringstream in(text.substr(text.find(from, start)));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && !contains(line, to)) out.push_back(line);
  return out;
}

TEST_CASE("results.tex: latex_escape prints LaTeX's special characters verbatim") {
  CHECK(latex_escape(kHostile) ==
        "x\\_y{@}z\\%\\&\\#\\$\\{\\}\\textasciitilde{}\\textasciicircum{}\\textbackslash{}\\textless{}"
        "\\textgreater{}\\textbar{}");
  CHECK(latex_escape("T5 bias, untrained nearest") == "T5 bias, untrained nearest");
  CHECK(latex_escape("a\nb\tc") == "a b c");
  CHECK(lex(latex_escape(kHostile)).problems.empty());
  CHECK(lex(latex_escape(kHostile)).cells.size() == 1);
}

TEST_CASE("results.tex: a booktabs table per task, cells mean ± std, the best of each column bold") {
  const SweepResults r = sample();
  const std::string tex = results_tex(r);
  CAPTURE(tex);
  // Every line typesets as plain text where it is not a command (comments aside, and the two lines of the box that
  // scales a table down to the line's width, which open and close a brace around the tabular).
  const std::string box = "  \\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%";
  std::istringstream in(tex);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("%", 0) != 0 && line != box && line != "  \\end{tabular}}")
      CHECK_MESSAGE(lex(line).problems.empty(), line);
  // One table per task, in order, each with its rules in booktabs order.
  std::size_t at = 0;
  for (const std::string task : {"markov", "grid2d"}) {
    CAPTURE(task);
    const std::size_t begin = tex.find("\\begin{table}", at), end = tex.find("\\end{table}", begin);
    REQUIRE(begin != std::string::npos);
    REQUIRE(end != std::string::npos);
    const std::string table = tex.substr(begin, end - begin);
    CHECK(contains(table, "\\label{tab:my-sweep-" + task + "}"));
    CHECK(contains(table, box + "\n  \\begin{tabular}{lrrrr}"));
    CHECK(contains(table, "\\end{tabular}}\n"));
    const std::size_t top = table.find("\\toprule"), mid = table.find("\\midrule"), bottom = table.find("\\bottomrule");
    CHECK((top < mid && mid < bottom && bottom < table.find("\\end{tabular}")));
    CHECK(contains(table, "Method & Position params & 64 & 128 & 256 \\\\"));
    CHECK(contains(table, "\\cmidrule(l){3-5}"));
    at = end + 1;
  }
  CHECK(tex.find("\\begin{table}", at) == std::string::npos);
  CHECK(contains(tex, "\\usepackage{booktabs} and \\usepackage{graphicx}"));

  // markov's body: a row per method, 5 cells each, the label escaped.
  const std::vector<std::string> body = lines_between(tex, "\\midrule", "\\bottomrule");
  REQUIRE(body.size() == 3);
  std::vector<std::vector<std::string>> cells;
  for (const std::string& line : body) {
    CHECK(line.size() > 3);
    CHECK(line.substr(line.size() - 3) == " \\\\");
    cells.push_back(lex(line.substr(0, line.size() - 3)).cells);
    CHECK(cells.back().size() == 5);
  }
  REQUIRE(cells.size() == 3);
  // Bold only where the best leads the second by more than the larger std: at 2x (8.40 against 8.60 +- 0.14); not
  // at 1x (8.05 against 8.10 +- 0.14, within the spread) nor at 4x (a tie).
  CHECK(cells[0] == std::vector<std::string>{"T5 bias, max\\_distance 64", "16", "$8.10 \\pm 0.14$", "$8.60 \\pm 0.14$",
                                             "$9.20 \\pm 0.28$"});
  CHECK(cells[1] == std::vector<std::string>{latex_escape(kHostile), "16", "$8.30 \\pm 0.00$",
                                             "$\\mathbf{8.40 \\pm 0.00}$", "$9.20 \\pm 0.14$"});
  CHECK(cells[2] == std::vector<std::string>{"Learned PE", "16", "$8.05 \\pm 0.00$", "n/a", "n/a"});
  CHECK(!contains(tex, kHostile));

  const std::string markov_caption = lines_between(tex, "\\small", "\\label")[0];
  CHECK(contains(markov_caption, "\\caption{markov (trained at 64 tokens): perplexity against evaluation length; "
                                 "mean $\\pm$ std over 2 seeds. Lower is better; bold: the best of a column, where it "
                                 "leads the second by more than the larger of their stds."));
  CHECK(contains(tex, "\\multicolumn{3}{c}{Perplexity at evaluation length (tokens)}"));
  CHECK(contains(markov_caption, "n/a: the method cannot run at that length."));
  CHECK(contains(markov_caption, "Optimal perplexity 7.700."));
  // The 2-D task: grid sides, one decimal from 100 on, no n/a, no optimal perplexity.
  const std::size_t grid = tex.find("\\begin{table}", tex.find("\\end{table}"));
  CHECK(contains(tex.substr(grid), "\\multicolumn{3}{c}{Perplexity at evaluation grid side (cells)}"));
  CHECK(contains(tex.substr(grid), "trained on 64 $\\times$ 64 grids"));
  CHECK(contains(tex.substr(grid),  // the one row: nothing it is better than, none bold
                 "Swin V1 table (windows) & 16 & $3.00 \\pm 0.00$ & $3.50 \\pm 0.00$ & $120.5 \\pm 0.35$ \\\\\n"));
  CHECK(!contains(tex.substr(grid), "n/a"));
  CHECK(!contains(tex.substr(grid), "Optimal"));
}

TEST_CASE("results.tex: one seed prints the mean alone") {
  SweepResults r = sample();
  r.seeds = {0};
  for (SweepResultsRow& m : r.rows) m.perplexity.resize(1);
  const std::string tex = results_tex(r);
  CHECK(contains(tex, "T5 bias, max\\_distance 64 & 16 & $8.00$ & $8.50$ & $9.00$ \\\\\n"));  // no spread: none bold
  CHECK(contains(tex, "against evaluation length; 1 seed. Lower is better."));
  CHECK(!contains(tex, "\\mathbf"));
  CHECK(!contains(tex, "\\pm 0"));
}

// A sweep of two methods and two seeds on markov, as run_sweep returns it.
SweepResult sweep() {
  SweepResult r;
  r.name = "s";
  r.train_length = 64;
  r.multipliers = {1, 2};
  r.seeds = {0, 1};
  auto add = [&](const char* scheme, std::vector<std::vector<std::optional<double>>> ppl) {
    MethodResult m;
    m.task = "markov";
    m.method = {scheme, scheme, {}};
    m.position_params = 16;
    m.lengths = {64, 128};
    m.ppl = ppl;
    m.nll = ppl;
    for (auto& seed : m.nll)
      for (auto& x : seed)
        if (x) x = std::log(*x);
    m.tokens = {{1024, 1024}, {1024, 1024}};
    m.optimal_ppl = 7.7;
    r.rows.push_back(m);
  };
  add("t5", {{8.0, 9.0}, {8.5, 10.0}});
  add("learned", {{8.1, std::nullopt}, {8.3, std::nullopt}});
  return r;
}

TEST_CASE("results.csv: the per-seed rows, then a mean and a std row per task x method x length") {
  TempDir dir("export_csv");
  const SweepResult r = sweep();
  write_results(r, dir.path.string());
  const std::string csv = file_text(dir.path / "results.csv");
  CAPTURE(csv);
  std::vector<std::string> lines;
  std::istringstream in(csv);
  std::vector<std::string> provenance;  // each line's provenance columns (results.h), after the 11 of the numbers,
                                        // the 2 of the protocol and the 3 of bytes, bits per byte and accuracy
  for (std::string line; std::getline(in, line);) {
    std::size_t cut = 0;
    for (int commas = 0; commas < 16 && cut != std::string::npos; ++commas) cut = line.find(',', cut + (commas > 0));
    provenance.push_back(cut == std::string::npos ? "" : line.substr(cut));
    lines.push_back(line.substr(0, cut));
  }
  REQUIRE(lines.size() == 1 + 8 + 8);  // header, 2 methods x 2 seeds x 2 lengths, 2 methods x 2 lengths x {mean, std}
  const auto fields = [](const std::string& line) { return std::count(line.begin(), line.end(), ',') + 1; };
  CHECK(lines[0] == "task,method,position_params,seed,multiplier,length,perplexity,optimal_perplexity,nll,tokens,"
                    "mean_attention_distance,protocol,eval_stride,bytes,bits_per_byte,accuracy");
  for (std::size_t i = 1; i < lines.size(); ++i) CHECK(lines[i].substr(lines[i].size() - 19) == ",nonoverlapping,,,,");
  for (const std::string& line : lines) CHECK_MESSAGE(fields(line) == fields(lines[0]), line);
  // The aggregated rows name no run (the run columns empty) but what wrote the file, as the per-seed rows do.
  CHECK(provenance[0] ==
        ",run_folder,config_digest,checkpoint,checkpoint_sha256,rpb_version,commit,command,date,label,"
        "accuracy_every_seed,token_accuracy");
  // The label: the method as the tables name it; then accuracy_every_seed and token_accuracy, empty for a task
  // without either.
  const auto without_last = [](const std::string& p) {
    const std::string q = p.substr(0, p.rfind(','));
    return q.substr(0, q.rfind(','));
  };
  const auto label_of = [&](const std::string& p) { return without_last(p).substr(without_last(p).rfind(',') + 1); };
  const auto before_label = [&](const std::string& p) { return without_last(without_last(p)); };
  for (std::size_t i = 1; i <= 16; ++i) CHECK(provenance[i].back() == ',');
  for (std::size_t i = 1; i <= 16; ++i)
    CHECK(label_of(provenance[i]) == (contains(lines[i], "markov,t5,") ? "T5 bias" : "Learned PE"));
  for (std::size_t i = 9; i <= 16; ++i) {
    CHECK(provenance[i].rfind(",,,,," + std::string(version()) + "," + build_commit() + ",", 0) == 0);
    // this sweep's runs have no records: its per-seed run columns are empty
    CHECK(before_label(provenance[i]) == before_label(provenance[1]));
  }
  for (std::size_t i = 1; i <= 8; ++i) CHECK(std::regex_search(lines[i], std::regex("^markov,[a-z0-9]+,16,[01],")));
  // t5 at 1x: 8.0 and 8.5; at 2x: 9.0 and 10.0 (std sqrt(0.5)); learned: n/a at 2x, empty values.
  std::ostringstream nll_mean;
  nll_mean.precision(10);
  nll_mean << (std::log(8.0) + std::log(8.5)) / 2;
  CHECK(lines[9] == "markov,t5,16,mean,1,64,8.25,7.7," + nll_mean.str() + ",1024,,nonoverlapping,,,,");
  CHECK(std::regex_search(lines[10],
                          std::regex("^markov,t5,16,std,1,64,0\\.3535533906,7\\.7,0\\.04[0-9]+,0,,nonoverlapping,,,,$")));
  CHECK(std::regex_search(lines[11], std::regex("^markov,t5,16,mean,2,128,9\\.5,7\\.7,")));
  CHECK(std::regex_search(lines[12], std::regex("^markov,t5,16,std,2,128,0\\.7071067812,7\\.7,")));
  CHECK(std::regex_search(lines[13], std::regex("^markov,learned,16,mean,1,64,8\\.2,7\\.7,")));
  CHECK(lines[15] == "markov,learned,16,mean,2,128,,7.7,,,,nonoverlapping,,,,");
  CHECK(lines[16] == "markov,learned,16,std,2,128,,7.7,,,,nonoverlapping,,,,");
  // results.tex beside it, the table of results.json's values.
  CHECK(file_text(dir.path / "results.tex") == results_tex(sweep_results(r)));
  CHECK(contains(file_text(dir.path / "results.tex"), "$8.20 \\pm 0.14$"));  // within t5's spread: not bold
  // An output flag may not write over it.
  CHECK_THROWS_WITH_AS(check_output_file((dir.path / "results.tex").string(), {"--out", {}}),
                       doctest::Contains("is a result file of the sweep folder"), UsageError);
}

TEST_CASE("sweep table: the task's line is under its table") {
  SweepResult r = sweep();
  r.rows.push_back(r.rows[0]);
  r.rows.back().task = "lag";
  r.rows.back().optimal_ppl = 1.5;
  const std::string table = format_table(r);
  CAPTURE(table);
  const std::size_t markov = table.find("Task: markov (train length 64, 2 seeds, perplexity mean ± std); optimal "
                                        "perplexity 7.700\n");
  const std::size_t lag = table.find("Task: lag (train length 64, 2 seeds, perplexity mean ± std); optimal "
                                     "perplexity 1.500\n");
  REQUIRE(markov != std::string::npos);
  REQUIRE(lag != std::string::npos);
  const std::size_t first_header = table.find("| Method |"), second_header = table.find("| Method |", first_header + 1);
  const std::size_t learned = table.find("| Learned PE | 16 | 8.20 ± 0.14 | n/a |\n");
  CHECK(first_header < learned);
  CHECK(learned < markov);  // under the markov table's last row
  CHECK(markov < second_header);
  CHECK(second_header < lag);
  CHECK(table.substr(lag).find('|') == std::string::npos);  // the last thing printed
}

TEST_CASE("rpb results: the sweep's tables again from its results.json, as markdown and as results.tex") {
  TempDir dir("export_results_command");
  const SweepResult r = sweep();
  write_results(r, dir.path.string());
  const std::string json = (dir.path / "results.json").string();
  auto ran = rpb::testing::run_rpb("results " + json);
  CHECK(ran.code == 0);
  CHECK(ran.out == format_table(r));  // what `rpb extrapolate` printed
  CHECK(contains(ran.out, "| Learned PE | 16 | 8.20 ± 0.14 | n/a |\n"));
  ran = rpb::testing::run_rpb("results " + json + " --format latex");
  CHECK(ran.code == 0);
  CHECK(ran.out == file_text(dir.path / "results.tex"));
  // A file that is not sweep results is named; a format rpb does not write is a usage error.
  ran = rpb::testing::run_rpb("results " + (dir.path / "results.csv").string());
  CHECK(ran.code == 1);
  CHECK(contains(ran.out, "sweep results " + (dir.path / "results.csv").string()));
  CHECK(rpb::testing::run_rpb("results " + json + " --format csv").code == 2);
}

}  // namespace results_export_test

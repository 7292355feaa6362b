// rpb/train/sweep/results_tex.cpp: see results_tex.h.
#include "train/sweep/results_tex.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <vector>

#include "train/data/task.h"
#include "train/sweep/labels.h"

namespace rpb {

std::string latex_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '\\': out += "\\textbackslash{}"; break;
      case '~': out += "\\textasciitilde{}"; break;
      case '^': out += "\\textasciicircum{}"; break;
      case '<': out += "\\textless{}"; break;
      case '>': out += "\\textgreater{}"; break;
      case '|': out += "\\textbar{}"; break;
      case '@': out += "{@}"; break;
      case '_': case '%': case '&': case '#': case '$': case '{': case '}':
        out += '\\';
        out += c;
        break;
      default:
        const auto u = static_cast<unsigned char>(c);
        out += u < 0x20 || u == 0x7f ? ' ' : c;
    }
  }
  return out;
}

namespace {

// x with `decimals` decimals.
std::string with_decimals(double x, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

// x as the terminal table prints it (train/sweep/results_table.cpp): a perplexity with 2 decimals below 100, else 1;
// bits per byte with 3; an accuracy as a percentage with 1.
std::string fixed(double x) { return with_decimals(x, x < 100 ? 2 : 1); }
std::string three_decimals(double x) { return with_decimals(x, 3); }
std::string percent_text(double x) { return with_decimals(100 * x, 1); }

// A \label key: letters, digits and '-'.
std::string label_key(const std::string& text) {
  std::string out = text;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) || static_cast<unsigned char>(c) >= 0x80) c = '-';
  return out;
}

// The rows of r on `task`, in results order.
std::vector<const SweepResultsRow*> rows_of(const SweepResults& r, const std::string& task) {
  std::vector<const SweepResultsRow*> out;
  for (const SweepResultsRow& row : r.rows)
    if (row.task == task) out.push_back(&row);
  return out;
}

// One number cell of a table: its mean and std as printed (std "" with one seed), or what it says without a number.
struct Cell {
  std::optional<double> mean;  // nullopt: `missing` is printed
  double sd = 0;               // the std over the seeds (0 with one seed)
  std::string mean_text, std_text;
  std::string missing = "n/a";
};

// The cells of a table's row, [length]: `mean` and `sd` printed by `print` (a value as text); "n/a" where `mean` is
// nullopt.
std::vector<Cell> cells_of(const std::vector<std::optional<double>>& mean, const std::vector<std::optional<double>>& sd,
                           std::size_t columns, bool with_std, std::string (*print)(double)) {
  std::vector<Cell> out(columns);
  for (std::size_t j = 0; j < columns; ++j)
    if (j < mean.size() && mean[j]) {
      out[j].mean = mean[j];
      out[j].mean_text = print(*mean[j]);
      out[j].sd = j < sd.size() && sd[j] ? *sd[j] : 0.0;
      if (with_std) out[j].std_text = print(out[j].sd);
    }
  return out;
}

// The row whose mean is bold in column j of `cells`: the best (the lowest, or the highest when `higher_is_better`),
// only when it leads the second best by more than the spread, the larger of the two's std over the seeds (so that a
// difference the seeds' variation could make is not marked), never with one seed (`with_std` false: no spread is
// known) or one row; nullopt when no row is.
std::optional<std::size_t> bold_row(const std::vector<std::vector<Cell>>& cells, std::size_t j, bool higher_is_better,
                                    bool with_std) {
  if (!with_std) return std::nullopt;
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < cells.size(); ++i)
    if (cells[i][j].mean) order.push_back(i);
  const auto better = [&](std::size_t a, std::size_t b) {
    return higher_is_better ? *cells[a][j].mean > *cells[b][j].mean : *cells[a][j].mean < *cells[b][j].mean;
  };
  std::sort(order.begin(), order.end(), better);
  if (order.size() < 2) return std::nullopt;  // nothing it is better than
  const Cell &first = cells[order[0]][j], &second = cells[order[1]][j];
  const double spread = std::max(first.sd, second.sd);
  return std::abs(*first.mean - *second.mean) > spread ? std::optional(order[0]) : std::nullopt;
}

// A table's body: a line per row, "label & params & lead... & cell & ... \\"; in each column the bold_row's mean
// bold. Sets `any_na` when a cell says n/a.
std::string body(const std::vector<const SweepResultsRow*>& rows, const std::vector<std::vector<std::string>>& lead,
                 const std::vector<std::vector<Cell>>& cells, bool higher_is_better, bool with_std, bool& any_na) {
  const std::size_t columns = cells.empty() ? 0 : cells.front().size();
  std::vector<std::optional<std::size_t>> best(columns);
  for (std::size_t j = 0; j < columns; ++j) best[j] = bold_row(cells, j, higher_is_better, with_std);
  std::string out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::string line(4, ' ');  // built piecewise: GCC 12 warns (-Wstringop-overflow, a false positive) on " " + ...
    line += escape_label(rows[i]->label, LabelFormat::latex) + " & " + std::to_string(rows[i]->position_params);
    for (const std::string& c : lead[i]) {
      line += " & ";
      line += c;
    }
    for (std::size_t j = 0; j < columns; ++j) {
      const Cell& c = cells[i][j];
      line += " & ";
      if (!c.mean) {
        line += c.missing;
        any_na = any_na || c.missing == "n/a";
        continue;
      }
      const std::string value = c.std_text.empty() ? c.mean_text : c.mean_text + " \\pm " + c.std_text;
      line += best[j] == i ? "$\\mathbf{" + value + "}$" : "$" + value + "$";
    }
    out += line + " \\\\\n";
  }
  return out;
}

// The protocol of the rows' numbers: "Nonoverlapping evaluation." when every row shares it, else each row's.
std::string protocol_sentence(const std::vector<const SweepResultsRow*>& rows) {
  const auto text = [](int64_t stride) {
    return stride > 0 ? "sliding-window evaluation, stride " + std::to_string(stride)
                      : std::string("nonoverlapping evaluation");
  };
  bool same = true;
  for (const SweepResultsRow* row : rows) same = same && row->eval_stride == rows.front()->eval_stride;
  if (rows.empty() || same) {
    std::string s = text(rows.empty() ? 0 : rows.front()->eval_stride);
    s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    return s + ".";
  }
  std::string s = "Protocol by row:";
  for (const SweepResultsRow* row : rows) {  // appended piecewise: GCC 12 warns (-Wstringop-overflow, a false positive)
    s += ' ';
    s += escape_label(row->label, LabelFormat::latex) + ", " + text(row->eval_stride) + ";";
  }
  s.back() = '.';
  return s;
}

// What a table shows: its measure ("perplexity"), a sentence on it after the seeds ("" for none), its \label's
// suffix, its columns before the lengths (their header) and each row's cells.
struct TableSpec {
  std::string measure, about, label_suffix;
  std::string header;  // the measure as the length columns' header names it, with its unit ("Accuracy (\\%)")
  bool higher_is_better = false;
  std::vector<std::string> lead_headers;
  std::vector<std::vector<std::string>> lead;  // [row]
  std::vector<std::vector<Cell>> cells;        // [row][length]
};

std::string caption(const SweepResults& r, const std::string& task, const std::vector<const SweepResultsRow*>& rows,
                    const TableSpec& spec, bool any_na) {
  const bool grid = data::task_dims(task) == 2;
  std::ostringstream os;
  os << escape_label(task_label(r.task_labels, task), LabelFormat::latex) << " (trained ";
  if (grid) os << "on " << r.train_length << " $\\times$ " << r.train_length << " grids";
  else os << "at " << r.train_length << " tokens";
  os << "): " << spec.measure << " against evaluation " << (grid ? "grid side" : "length");
  const std::size_t n = r.seeds.size();
  os << "; " << (n > 1 ? "mean $\\pm$ std over " : "") << n << " seed" << (n == 1 ? "" : "s") << "." << spec.about
     << (spec.higher_is_better ? " Higher" : " Lower") << " is better"
     << (n > 1 ? "; bold: the best of a column, where it leads the second by more than the larger of their stds."
               : ".");
  if (any_na) os << " n/a: the method cannot run at that " << (grid ? "size" : "length") << ".";
  os << " " << protocol_sentence(rows);
  if (spec.label_suffix.empty() && !rows.empty() && rows.front()->optimal_perplexity) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", *rows.front()->optimal_perplexity);
    os << " Optimal perplexity " << buf << ".";
  }
  return os.str();
}

std::string table(const SweepResults& r, const std::string& task, const std::vector<const SweepResultsRow*>& rows,
                  const TableSpec& spec) {
  const std::size_t columns = r.multipliers.size(), lead = spec.lead_headers.size();
  bool any_na = false;
  const std::string rows_text = body(rows, spec.lead, spec.cells, spec.higher_is_better, r.seeds.size() > 1, any_na);
  const bool grid = data::task_dims(task) == 2;
  std::ostringstream os;
  // \small, and the tabular scaled down to the line's width only when it is wider (\width: its natural width).
  os << "\\begin{table}[htbp]\n  \\centering\n  \\small\n  \\caption{" << caption(r, task, rows, spec, any_na) << "}\n"
     << "  \\label{tab:" << label_key(r.name) << "-" << label_key(task) << spec.label_suffix << "}\n"
     << "  \\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%\n"
     << "  \\begin{tabular}{lr" << std::string(lead + columns, 'r') << "}\n    \\toprule\n"
     << "     &";
  for (std::size_t k = 0; k <= lead; ++k) os << " &";
  os << " \\multicolumn{" << columns << "}{c}{" << spec.header << " at evaluation "
     << (grid ? "grid side (cells)" : "length (tokens)") << "} \\\\\n"
     << "    \\cmidrule(l){" << lead + 3 << "-" << lead + columns + 2 << "}\n    Method & Position params";
  for (std::size_t k = 0; k < lead; ++k) os << " & " << spec.lead_headers[k];
  for (const int64_t m : r.multipliers) os << " & " << r.train_length * m;
  os << " \\\\\n    \\midrule\n" << rows_text << "    \\bottomrule\n  \\end{tabular}}\n\\end{table}\n";
  return os.str();
}

// An algorithmic task's tables: per-token accuracy with the score (its mean past the training length) as a lead
// column, then exact match, both over every seed.
std::string algorithmic_tables(const SweepResults& r, const std::string& task,
                               const std::vector<const SweepResultsRow*>& rows) {
  const std::size_t columns = r.multipliers.size();
  const bool with_std = r.seeds.size() > 1;
  TableSpec tokens{"per-token accuracy (\\%)",
                   " Score: the mean over the lengths past the training length (Del\\'etang et al.'s range "
                   "evaluation). Every seed counts.",
                   "-token-accuracy", "Token accuracy (\\%)", true, {"Score"}, {}, {}};
  TableSpec exact{"exact match (\\%, greedy decoding of the answer)", " Every seed counts.", "-exact-match",
                  "Exact match (\\%)", true, {}, std::vector<std::vector<std::string>>(rows.size()), {}};
  for (const SweepResultsRow* row : rows) {
    const auto score = row->score_stats(r.multipliers);
    tokens.lead.push_back({!score ? std::string("n/a")
                           : with_std ? "$" + percent_text(score->first) + " \\pm " + percent_text(score->second) + "$"
                                      : "$" + percent_text(score->first) + "$"});
    tokens.cells.push_back(cells_of(row->token_accuracy_mean(), row->token_accuracy_std(), columns, with_std,
                                    percent_text));
    exact.cells.push_back(cells_of(row->accuracy_every_seed_mean(), row->accuracy_every_seed_std(), columns, with_std,
                                   percent_text));
  }
  return '\n' + table(r, task, rows, tokens) + '\n' + table(r, task, rows, exact);
}

// A task's tables: perplexity, then bits per byte when a row has text bytes, and accuracy when a row has one.
std::string task_tables(const SweepResults& r, const std::string& task) {
  const std::vector<const SweepResultsRow*> rows = rows_of(r, task);
  const std::size_t columns = r.multipliers.size();
  const bool with_std = r.seeds.size() > 1;
  bool bytes = false, accuracy = false;
  TableSpec ppl{"perplexity", "", "", "Perplexity", false, {}, std::vector<std::vector<std::string>>(rows.size()), {}};
  TableSpec bpb{"bits per byte",
                " Bits per byte of the text the scored tokens stand for, NLL $\\times$ tokens / (bytes $\\times "
                "\\ln 2$): comparable across tokenizers.",
                "-bits-per-byte", "Bits per byte", false, {}, ppl.lead, {}};
  char threshold[32];
  std::snprintf(threshold, sizeof threshold, "%g", 100 * r.learned_threshold);
  TableSpec acc{"accuracy (\\%, greedy decoding of the answer)", "", "-accuracy", "Accuracy (\\%)", true, {"Learned"}, {}, {}};
  acc.about = std::string(" At the training length over every seed, past it over the seeds that learned the task "
                          "(accuracy $\\geq$ ") + threshold + "\\% at the training length; Learned: how many did).";
  for (const SweepResultsRow* row : rows) {
    bytes = bytes || row->has_bytes();
    accuracy = accuracy || row->has_accuracy();
    ppl.cells.push_back(cells_of(row->perplexity_mean(), row->perplexity_std(), columns, with_std, fixed));
    bpb.cells.push_back(cells_of(row->bits_per_byte_mean(), row->bits_per_byte_std(), columns, with_std,
                                 three_decimals));
    const std::vector<bool> learned = row->learned();
    const auto k = std::count(learned.begin(), learned.end(), true);
    acc.lead.push_back({std::to_string(k) + "/" + std::to_string(r.seeds.size())});
    acc.cells.push_back(cells_of(row->accuracy_mean(), row->accuracy_std(), columns, with_std, percent_text));
    for (std::size_t j = 1; j < columns && k == 0; ++j) acc.cells.back()[j].missing = "not learned";
  }
  TableSpec every{"accuracy over every seed, learned or not (\\%)",
                 " Every seed counts, learned or not: where a seed did not learn the task, not a claim of "
                 "extrapolation (the table above counts past the training length the seeds that learned it).",
                 "-accuracy-every-seed", "Accuracy, every seed (\\%)", true, {}, ppl.lead, {}};
  bool unlearned = false;
  for (const SweepResultsRow* row : rows) {
    unlearned = unlearned || row->has_unlearned_seed();
    every.cells.push_back(cells_of(row->accuracy_every_seed_mean(), row->accuracy_every_seed_std(), columns, with_std,
                                   percent_text));
  }
  if (accuracy) ppl.measure = "perplexity of the answer tokens";
  std::string out = table(r, task, rows, ppl);
  if (bytes) out += '\n' + table(r, task, rows, bpb);
  if (std::any_of(rows.begin(), rows.end(), [](const SweepResultsRow* m) { return m->has_token_accuracy(); }))
    return out + algorithmic_tables(r, task, rows);
  if (accuracy) out += '\n' + table(r, task, rows, acc);
  if (accuracy && unlearned) out += '\n' + table(r, task, rows, every);
  return out;
}

}  // namespace

std::string results_tex(const SweepResults& r) {
  std::vector<std::string> tasks;
  for (const SweepResultsRow& row : r.rows)
    if (std::find(tasks.begin(), tasks.end(), row.task) == tasks.end()) tasks.push_back(row.task);
  std::string comment = r.name;
  for (char& c : comment)
    if (c == '\n' || c == '\r') c = ' ';
  std::ostringstream os;
  os << "% results.tex of the sweep " << comment << ", written by `rpb extrapolate`: one table per task.\n"
     << "% Needs \\usepackage{booktabs} and \\usepackage{graphicx}; \\input{results.tex} or paste a table.\n";
  for (const std::string& task : tasks) os << "\n" << task_tables(r, task);
  return os.str();
}

}  // namespace rpb

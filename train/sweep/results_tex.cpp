// rpb/train/sweep/results_tex.cpp: see results_tex.h.
#include "train/sweep/results_tex.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <sstream>
#include <vector>

#include "train/data/task.h"

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

// x as the terminal table prints it (train/sweep/results.cpp): 2 decimals below 100, else 1.
std::string fixed(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", x < 100 ? 2 : 1, x);
  return buf;
}

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

// The best (lowest) mean of column j as printed, or "" when no row has one.
std::string best_in_column(const std::vector<const SweepResultsRow*>& rows, std::size_t j) {
  std::optional<double> best;
  for (const SweepResultsRow* row : rows) {
    const auto mean = row->perplexity_mean();
    if (j < mean.size() && mean[j] && (!best || *mean[j] < *best)) best = mean[j];
  }
  return best ? fixed(*best) : std::string();
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
    s += latex_escape(row->label) + ", " + text(row->eval_stride) + ";";
  }
  s.back() = '.';
  return s;
}

std::string caption(const SweepResults& r, const std::string& task, const std::vector<const SweepResultsRow*>& rows,
                    bool any_na) {
  const bool grid = data::task_dims(task) == 2;
  std::ostringstream os;
  os << latex_escape(task) << ": perplexity against evaluation " << (grid ? "grid side" : "length") << ", trained ";
  if (grid) os << "on " << r.train_length << " $\\times$ " << r.train_length << " grids";
  else os << "at length " << r.train_length;
  const std::size_t n = r.seeds.size();
  os << "; " << (n > 1 ? "mean $\\pm$ std over " : "") << n << " seed" << (n == 1 ? "" : "s")
     << ". Lower is better; the best of each column in bold.";
  if (any_na) os << " n/a: the method cannot run at that " << (grid ? "size" : "length") << ".";
  os << " " << protocol_sentence(rows);
  if (!rows.empty() && rows.front()->optimal_perplexity) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", *rows.front()->optimal_perplexity);
    os << " Optimal perplexity " << buf << ".";
  }
  return os.str();
}

// One method's row: "label & params & cell & ... \\".
std::string body_row(const SweepResultsRow& row, const std::vector<std::string>& best, bool with_std, bool& any_na) {
  const auto mean = row.perplexity_mean(), sd = row.perplexity_std();
  std::string line = latex_escape(row.label) + " & " + std::to_string(row.position_params);
  for (std::size_t j = 0; j < best.size(); ++j) {
    line += " & ";
    if (j >= mean.size() || !mean[j]) {
      line += "n/a";
      any_na = true;
      continue;
    }
    std::string value = fixed(*mean[j]);
    if (with_std) value += " \\pm " + fixed(sd[j].value_or(0.0));
    line += fixed(*mean[j]) == best[j] ? "$\\mathbf{" + value + "}$" : "$" + value + "$";
  }
  return line + " \\\\\n";
}

std::string task_table(const SweepResults& r, const std::string& task) {
  const std::vector<const SweepResultsRow*> rows = rows_of(r, task);
  const std::size_t columns = r.multipliers.size();
  std::vector<std::string> best;
  for (std::size_t j = 0; j < columns; ++j) best.push_back(best_in_column(rows, j));
  bool any_na = false;
  std::string body;
  for (const SweepResultsRow* row : rows) body += "    " + body_row(*row, best, r.seeds.size() > 1, any_na);

  const bool grid = data::task_dims(task) == 2;
  std::ostringstream os;
  os << "\\begin{table}[htbp]\n  \\centering\n  \\caption{" << caption(r, task, rows, any_na) << "}\n"
     << "  \\label{tab:" << label_key(r.name) << "-" << label_key(task) << "}\n"
     << "  \\begin{tabular}{lr" << std::string(columns, 'r') << "}\n    \\toprule\n"
     << "     & & \\multicolumn{" << columns << "}{c}{Evaluation " << (grid ? "grid side" : "length") << "} \\\\\n"
     << "    \\cmidrule(l){3-" << columns + 2 << "}\n    Method & Position params";
  for (const int64_t m : r.multipliers) os << " & " << r.train_length * m;
  os << " \\\\\n    \\midrule\n" << body << "    \\bottomrule\n  \\end{tabular}\n\\end{table}\n";
  return os.str();
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
     << "% Needs \\usepackage{booktabs}; \\input{results.tex} or paste a table.\n";
  for (const std::string& task : tasks) os << "\n" << task_table(r, task);
  return os.str();
}

}  // namespace rpb

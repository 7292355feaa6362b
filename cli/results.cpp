// rpb/cli/results.cpp: the sweep's table and its results.csv, results.json and results.svg.
#include "cli/results.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "train/atomic_file.h"
#include "train/data.h"

namespace fs = std::filesystem;

namespace rpb {

namespace {

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

std::string cell(const std::optional<std::pair<double, double>>& ms, bool with_std) {
  if (!ms) return "n/a";
  std::ostringstream os;
  os << std::fixed << std::setprecision(ms->first < 100 ? 2 : 1) << ms->first;
  if (with_std) os << " ± " << std::setprecision(ms->second < 100 ? 2 : 1) << ms->second;
  return os.str();
}

}  // namespace

std::string format_table(const SweepResult& r) {
  std::ostringstream os;
  std::string current_task;
  for (const MethodResult& m : r.rows) {
    if (m.task != current_task) {
      current_task = m.task;
      const bool grid = data::task_dims(m.task) == 2;
      os << "\nTask: " << m.task << " (train " << (grid ? "grid " : "length ") << r.train_length;
      if (grid) os << " x " << r.train_length << ", columns: grid side";
      os << ", " << r.seeds.size() << " seed" << (r.seeds.size() == 1 ? "" : "s") << ", perplexity mean ± std)";
      if (m.optimal_ppl) os << "; optimal perplexity " << std::fixed << std::setprecision(3) << *m.optimal_ppl;
      os << "\n\n| Method | Position params | PPL at train " << (grid ? "size" : "length");
      for (std::size_t j = 1; j < r.multipliers.size(); ++j) os << " | " << r.multipliers[j] << "x";
      os << " |\n|---|---|---";
      for (std::size_t j = 1; j < r.multipliers.size(); ++j) os << "|---";
      os << "|\n";
    }
    os << "| " << m.method.label() << " | " << m.position_params;
    for (std::size_t j = 0; j < r.multipliers.size(); ++j) os << " | " << cell(mean_std(m.column(j)), r.seeds.size() > 1);
    os << " |\n";
  }
  return os.str();
}

namespace {

std::string csv(const SweepResult& r) {
  std::ostringstream os;
  os << "task,method,position_params,seed,multiplier,length,perplexity,optimal_perplexity,nll,tokens\n";
  for (const MethodResult& m : r.rows)
    for (std::size_t s = 0; s < m.ppl.size(); ++s)
      for (std::size_t j = 0; j < m.ppl[s].size(); ++j) {
        os << m.task << "," << m.method.name() << "," << m.position_params << "," << r.seeds[s] << "," << r.multipliers[j]
           << "," << m.lengths[j] << ",";
        if (m.ppl[s][j]) os << std::setprecision(10) << *m.ppl[s][j];
        os << ",";
        if (m.optimal_ppl) os << std::setprecision(10) << *m.optimal_ppl;
        os << ",";
        if (m.ppl[s][j]) os << std::setprecision(10) << *m.nll[s][j] << "," << m.tokens[s][j];
        else os << ",";
        os << "\n";
      }
  return os.str();
}

std::string json_number(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return "null";
  std::ostringstream os;
  os << std::setprecision(10) << *v;
  return os.str();
}

// "[[a, b], [c, d]]": cell(seed, length) for each seed of the row and each length.
template <typename Cell>
std::string per_seed(const MethodResult& m, Cell cell) {
  std::string out = "[";
  for (std::size_t s = 0; s < m.ppl.size(); ++s) {
    out += s ? ", [" : "[";
    for (std::size_t j = 0; j < m.ppl[s].size(); ++j) out += (j ? ", " : "") + cell(s, j);
    out += "]";
  }
  return out + "]";
}

std::string json(const SweepResult& r) {
  std::ostringstream os;
  os << "{\n  \"name\": " << quoted(r.name) << ",\n  \"train_length\": " << r.train_length << ",\n  \"multipliers\": [";
  for (std::size_t j = 0; j < r.multipliers.size(); ++j) os << (j ? ", " : "") << r.multipliers[j];
  os << "],\n  \"seeds\": [";
  for (std::size_t j = 0; j < r.seeds.size(); ++j) os << (j ? ", " : "") << r.seeds[j];
  os << "],\n  \"rows\": [\n";
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const MethodResult& m = r.rows[i];
    os << "    {\"task\": " << quoted(m.task) << ", \"method\": " << quoted(m.method.name()) << ", \"label\": "
       << quoted(m.method.label()) << ", \"position_params\": " << m.position_params
       << ", \"optimal_perplexity\": " << json_number(m.optimal_ppl) << ",\n     \"perplexity\": "
       << per_seed(m, [&](std::size_t s, std::size_t j) { return json_number(m.ppl[s][j]); }) << ",\n     \"nll\": "
       << per_seed(m, [&](std::size_t s, std::size_t j) { return json_number(m.nll[s][j]); }) << ",\n     \"tokens\": "
       << per_seed(m, [&](std::size_t s, std::size_t j) {
            return m.nll[s][j] ? std::to_string(m.tokens[s][j]) : std::string("null");
          });
    os << ",\n     \"mean\": [";
    for (std::size_t j = 0; j < r.multipliers.size(); ++j) {
      const auto ms = mean_std(m.column(j));
      os << (j ? ", " : "") << json_number(ms ? std::optional<double>(ms->first) : std::nullopt);
    }
    os << "],\n     \"std\": [";
    for (std::size_t j = 0; j < r.multipliers.size(); ++j) {
      const auto ms = mean_std(m.column(j));
      os << (j ? ", " : "") << json_number(ms ? std::optional<double>(ms->second) : std::nullopt);
    }
    os << "]}" << (i + 1 < r.rows.size() ? "," : "") << "\n";
  }
  os << "  ]\n}\n";
  return os.str();
}

// Perplexity against length on log axes, one panel per task, a line per method.
std::string svg(const SweepResult& r) {
  static const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  std::vector<std::string> tasks;
  for (const auto& m : r.rows)
    if (std::find(tasks.begin(), tasks.end(), m.task) == tasks.end()) tasks.push_back(m.task);
  const double pw = 520, ph = 340, ml = 70, mt = 40, mb = 50, legend_w = 340;
  const double W = ml + pw + legend_w, H = tasks.size() * (ph + mt + mb);
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
     << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (std::size_t ti = 0; ti < tasks.size(); ++ti) {
    const double top = ti * (ph + mt + mb) + mt;
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& m : r.rows)
      if (m.task == tasks[ti]) {
        for (std::size_t j = 0; j < r.multipliers.size(); ++j)
          if (auto ms = mean_std(m.column(j))) lo = std::min(lo, ms->first), hi = std::max(hi, ms->first);
        if (m.optimal_ppl) lo = std::min(lo, *m.optimal_ppl);
      }
    if (!std::isfinite(lo)) continue;
    const double ylo = std::log10(lo * 0.95), yhi = std::log10(std::max(hi * 1.05, lo * 1.2));
    const double xlo = std::log2(static_cast<double>(r.multipliers.front())),
                 xhi = std::log2(static_cast<double>(r.multipliers.back()));
    auto X = [&](double mult) { return ml + (xhi > xlo ? (std::log2(mult) - xlo) / (xhi - xlo) : 0.5) * pw; };
    auto Y = [&](double ppl) { return top + ph - (std::log10(ppl) - ylo) / (yhi - ylo) * ph; };
    os << "<text x=\"" << ml << "\" y=\"" << top - 15 << "\" font-size=\"14\">Perplexity vs evaluation size, task "
       << tasks[ti] << " (trained at " << r.train_length << ")</text>\n";
    os << "<rect x=\"" << ml << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
       << "\" fill=\"none\" stroke=\"#333\"/>\n";
    for (int64_t mult : r.multipliers) {
      const double x = X(static_cast<double>(mult));
      os << "<line x1=\"" << x << "\" y1=\"" << top << "\" x2=\"" << x << "\" y2=\"" << top + ph
         << "\" stroke=\"#ddd\"/><text x=\"" << x << "\" y=\"" << top + ph + 16 << "\" text-anchor=\"middle\">"
         << mult * r.train_length << "</text>\n";
    }
    os << "<text x=\"" << ml + pw / 2 << "\" y=\"" << top + ph + 36 << "\" text-anchor=\"middle\">"
       << (data::task_dims(tasks[ti]) == 2 ? "evaluation grid side (cells, log scale)" : "evaluation length (tokens, log scale)")
       << "</text>\n";
    for (int k = 0; k <= 4; ++k) {
      const double v = std::pow(10.0, ylo + (yhi - ylo) * k / 4.0), y = Y(v);
      os << "<line x1=\"" << ml << "\" y1=\"" << y << "\" x2=\"" << ml + pw << "\" y2=\"" << y
         << "\" stroke=\"#eee\"/><text x=\"" << ml - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">"
         << std::setprecision(v < 10 ? 2 : 1) << v << std::setprecision(1) << "</text>\n";
    }
    int ci = 0;
    double ly = top + 10;
    for (const auto& m : r.rows) {
      if (m.task != tasks[ti]) continue;
      const char* c = colors[ci++ % 8];
      std::string path;
      for (std::size_t j = 0; j < r.multipliers.size(); ++j)
        if (auto ms = mean_std(m.column(j))) {
          std::ostringstream p;
          p << std::fixed << std::setprecision(1) << (path.empty() ? "M" : " L") << X(static_cast<double>(r.multipliers[j]))
            << " " << Y(ms->first);
          path += p.str();
          os << "<circle cx=\"" << X(static_cast<double>(r.multipliers[j])) << "\" cy=\"" << Y(ms->first)
             << "\" r=\"3\" fill=\"" << c << "\"/>\n";
        }
      if (!path.empty()) os << "<path d=\"" << path << "\" fill=\"none\" stroke=\"" << c << "\" stroke-width=\"2\"/>\n";
      os << "<line x1=\"" << ml + pw + 15 << "\" y1=\"" << ly << "\" x2=\"" << ml + pw + 35 << "\" y2=\"" << ly
         << "\" stroke=\"" << c << "\" stroke-width=\"2\"/><text x=\"" << ml + pw + 40 << "\" y=\"" << ly + 4 << "\">"
         << m.method.label() << "</text>\n";
      ly += 18;
    }
    for (const auto& m : r.rows)
      if (m.task == tasks[ti] && m.optimal_ppl) {
        const double y = Y(*m.optimal_ppl);
        os << "<line x1=\"" << ml << "\" y1=\"" << y << "\" x2=\"" << ml + pw << "\" y2=\"" << y
           << "\" stroke=\"#000\" stroke-dasharray=\"4 3\"/><text x=\"" << ml + pw + 15 << "\" y=\"" << ly + 4
           << "\">optimal (" << std::setprecision(2) << *m.optimal_ppl << std::setprecision(1) << ")</text>\n";
        break;
      }
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace

void write_results(const SweepResult& r, const std::string& dir) {
  fs::create_directories(dir);
  write_file_atomically((fs::path(dir) / "results.csv").string(), csv(r));
  write_file_atomically((fs::path(dir) / "results.json").string(), json(r));
  write_file_atomically((fs::path(dir) / "results.svg").string(), svg(r));
}

}  // namespace rpb

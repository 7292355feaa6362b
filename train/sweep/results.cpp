// rpb/train/sweep/results.cpp: the sweep's table and its results.csv and results.json.
#include "train/sweep/results.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "train/data/task.h"
#include "train/io/atomic_file.h"

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

// The diagnostics of seed s at length j (empty where none were recorded).
const AttentionDiagnostics& attention_of(const MethodResult& m, std::size_t s, std::size_t j) {
  static const AttentionDiagnostics none;
  return s < m.attention.size() && j < m.attention[s].size() ? m.attention[s][j] : none;
}

std::string csv(const SweepResult& r) {
  std::ostringstream os;
  os << "task,method,position_params,seed,multiplier,length,perplexity,optimal_perplexity,nll,tokens,"
        "mean_attention_distance\n";
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
        os << ",";
        if (const auto d = attention_of(m, s, j).mean_distance_overall()) os << std::setprecision(10) << *d;
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

// [[layer 0's heads], [layer 1's heads], ...].
std::string per_layer_json(const std::vector<std::vector<double>>& v) {
  std::string out = "[";
  for (std::size_t l = 0; l < v.size(); ++l) {
    out += l ? ", [" : "[";
    for (std::size_t h = 0; h < v[l].size(); ++h) out += (h ? ", " : "") + json_number(v[l][h]);
    out += "]";
  }
  return out + "]";
}

// {"mean_distance": [[...]], "entropy": [[...]], "mean_distance_overall": x, "entropy_overall": y}, or null.
std::string attention_json(const AttentionDiagnostics& a) {
  if (a.empty()) return "null";
  return "{\"mean_distance\": " + per_layer_json(a.mean_distance) + ", \"entropy\": " + per_layer_json(a.entropy) +
         ", \"mean_distance_overall\": " + json_number(a.mean_distance_overall()) +
         ", \"entropy_overall\": " + json_number(a.entropy_overall()) + "}";
}

// "[x0, x1, ...]": the mean (or the std) over the seeds of column(j) at each length j.
template <typename Column>
std::string over_seeds(const SweepResult& r, Column column, bool std_dev) {
  std::string out = "[";
  for (std::size_t j = 0; j < r.multipliers.size(); ++j) {
    const auto ms = mean_std(column(j));
    out += (j ? ", " : "") + json_number(ms ? std::optional<double>(std_dev ? ms->second : ms->first) : std::nullopt);
  }
  return out + "]";
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
    const auto ppl = [&](std::size_t j) { return m.column(j); };
    const auto distance = [&](std::size_t j) { return m.distance_column(j); };
    os << ",\n     \"mean\": " << over_seeds(r, ppl, false) << ",\n     \"std\": " << over_seeds(r, ppl, true)
       << ",\n     \"attention\": "
       << per_seed(m, [&](std::size_t s, std::size_t j) { return attention_json(attention_of(m, s, j)); })
       << ",\n     \"mean_attention_distance\": {\"mean\": " << over_seeds(r, distance, false)
       << ", \"std\": " << over_seeds(r, distance, true) << "}}" << (i + 1 < r.rows.size() ? "," : "") << "\n";
  }
  os << "  ]\n}\n";
  return os.str();
}

}  // namespace

void write_results(const SweepResult& r, const std::string& dir) {
  fs::create_directories(dir);
  write_file_atomically((fs::path(dir) / "results.csv").string(), csv(r));
  write_file_atomically((fs::path(dir) / "results.json").string(), json(r));
}

}  // namespace rpb

// rpb/train/sweep/results.cpp: the sweep's table and its results.csv, results.json and results.tex.
#include "train/sweep/results.h"

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <set>
#include <sstream>

#include "train/data/task.h"
#include "train/io/atomic_file.h"
#include "train/io/provenance.h"
#include "train/run/eval_record.h"
#include "train/run/run_folder.h"
#include "train/sweep/results_json.h"
#include "train/sweep/results_tex.h"

namespace fs = std::filesystem;

namespace rpb {

namespace {

std::string cell(const std::optional<std::pair<double, double>>& ms, bool with_std) {
  if (!ms) return "n/a";
  std::ostringstream os;
  os << std::fixed << std::setprecision(ms->first < 100 ? 2 : 1) << ms->first;
  if (with_std) os << " ± " << std::setprecision(ms->second < 100 ? 2 : 1) << ms->second;
  return os.str();
}

// "Protocol: ..." under a task's table when a row of it was scored by sliding windows (rows without say
// "nonoverlapping"); "" when every row was scored nonoverlapping, the table as it always was.
std::string protocol_line(const SweepResult& r, const std::string& task) {
  std::set<int64_t> strides;
  for (const MethodResult& m : r.rows)
    if (m.task == task) strides.insert(m.eval_stride);
  if (strides == std::set<int64_t>{0}) return "";
  if (strides.size() == 1) return "Protocol: " + eval_protocol_text(*strides.begin()) + " (every row)\n";
  std::string line = "Protocol: by row:";
  for (const MethodResult& m : r.rows)
    if (m.task == task) {  // appended piecewise: GCC 12 warns (-Wstringop-overflow, a false positive) on " " + ...
      line += ' ';
      line += m.method.name() + " " + eval_protocol_text(m.eval_stride) + ";";
    }
  line.back() = '\n';
  return line;
}

// The line under a task's table: "Task: markov (train length 64, 2 seeds, perplexity mean ± std); optimal ...".
std::string task_line(const SweepResult& r, const MethodResult& m) {
  std::ostringstream os;
  const bool grid = data::task_dims(m.task) == 2;
  os << "Task: " << m.task << " (train " << (grid ? "grid " : "length ") << r.train_length;
  if (grid) os << " x " << r.train_length << ", columns: grid side";
  os << ", " << r.seeds.size() << " seed" << (r.seeds.size() == 1 ? "" : "s") << ", perplexity mean ± std)";
  if (m.optimal_ppl) os << "; optimal perplexity " << std::fixed << std::setprecision(3) << *m.optimal_ppl;
  os << "\n" << protocol_line(r, m.task);
  return os.str();
}

}  // namespace

std::string format_table(const SweepResult& r) {
  std::ostringstream os;
  std::string current_task;
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const MethodResult& m = r.rows[i];
    if (m.task != current_task) {
      current_task = m.task;
      const bool grid = data::task_dims(m.task) == 2;
      os << "\n| Method | Position params | PPL at train " << (grid ? "size" : "length");
      for (std::size_t j = 1; j < r.multipliers.size(); ++j) os << " | " << r.multipliers[j] << "x";
      os << " |\n|---|---|---";
      for (std::size_t j = 1; j < r.multipliers.size(); ++j) os << "|---";
      os << "|\n";
    }
    os << "| " << m.method.label() << " | " << m.position_params;
    for (std::size_t j = 0; j < r.multipliers.size(); ++j) os << " | " << cell(mean_std(m.column(j)), r.seeds.size() > 1);
    os << " |\n";
    if (i + 1 == r.rows.size() || r.rows[i + 1].task != m.task) os << "\n" << task_line(r, m);  // under its table
  }
  return os.str();
}

namespace {

// `text` as one CSV field (RFC 4180): in double quotes, a quote doubled, when it holds a comma, quote or line break.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string q = "\"";
  for (const char ch : text) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

// The provenance columns of a row: where seed `s`'s run lives and what wrote the file.
std::string provenance_cells(const MethodResult& m, std::size_t s, const Provenance& p) {
  const SweepRunRecord run = s < m.runs.size() ? m.runs[s] : SweepRunRecord{};
  std::string out;
  for (const std::string* cell : {&run.folder, &run.config_digest, &run.checkpoint, &run.checkpoint_sha256,
                                  &p.rpb_version, &p.commit, &p.command, &p.date}) {
    out += ',';
    out += csv_field(*cell);
  }
  return out;
}

// The protocol columns of a row: ",nonoverlapping," or ",sliding_window,32".
std::string protocol_cells(const MethodResult& m) {
  std::string cells(1, ',');  // appended piecewise: GCC 12 warns (-Wstringop-overflow, a false positive) on "," + ...
  cells += eval_protocol_name(m.eval_stride);
  cells += ',';
  if (m.eval_stride > 0) cells += std::to_string(m.eval_stride);
  return cells;
}

std::string csv(const SweepResult& r, const Provenance& p) {
  std::ostringstream os;
  os << "task,method,position_params,seed,multiplier,length,perplexity,optimal_perplexity,nll,tokens,"
        "mean_attention_distance,protocol,eval_stride";
  for (const char* column : kResultsCsvProvenanceColumns) os << "," << column;
  os << "\n";
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
        if (const auto d = m.attention_at(s, j).mean_distance_overall()) os << std::setprecision(10) << *d;
        os << protocol_cells(m) << provenance_cells(m, s, p) << "\n";
      }
  return os.str();
}

// An aggregated value: mean (second: false) or std (second: true) of `column` over the seeds; "" when none.
std::string aggregate(const std::vector<std::optional<double>>& column, bool second) {
  const auto ms = mean_std(column);
  if (!ms) return "";
  std::ostringstream os;
  os << std::setprecision(10) << (second ? ms->second : ms->first);
  return os.str();
}

// The aggregated rows (results.h): per task x method x length a row with seed "mean", then one with seed "std",
// after every per-seed row; their provenance columns name what wrote the file, the run columns are empty.
std::string csv_aggregate_rows(const SweepResult& r, const Provenance& p) {
  constexpr std::size_t kNoRun = std::numeric_limits<std::size_t>::max();
  std::ostringstream os;
  for (const MethodResult& m : r.rows)
    for (std::size_t j = 0; j < m.lengths.size() && j < r.multipliers.size(); ++j) {
      std::vector<std::optional<double>> nll, tokens;
      for (std::size_t s = 0; s < m.nll.size(); ++s) {
        nll.push_back(j < m.nll[s].size() ? m.nll[s][j] : std::nullopt);
        const bool scored = j < m.nll[s].size() && m.nll[s][j] && s < m.tokens.size() && j < m.tokens[s].size();
        tokens.push_back(scored ? std::optional<double>(static_cast<double>(m.tokens[s][j])) : std::nullopt);
      }
      for (const bool second : {false, true}) {
        os << m.task << "," << m.method.name() << "," << m.position_params << "," << (second ? "std" : "mean") << ","
           << r.multipliers[j] << "," << m.lengths[j] << "," << aggregate(m.column(j), second) << ",";
        if (m.optimal_ppl) os << std::setprecision(10) << *m.optimal_ppl;
        os << "," << aggregate(nll, second) << "," << aggregate(tokens, second) << ","
           << aggregate(m.distance_column(j), second) << protocol_cells(m) << provenance_cells(m, kNoRun, p) << "\n";
      }
    }
  return os.str();
}

}  // namespace

void write_results(const SweepResult& r, const std::string& dir) {
  fs::create_directories(dir);
  const Provenance provenance = current_provenance();  // one date for all three files
  write_file_atomically((fs::path(dir) / kResultsCsvName).string(), csv(r, provenance) + csv_aggregate_rows(r, provenance));
  const SweepResults results = sweep_results(r, provenance);
  write_file_atomically((fs::path(dir) / kResultsJsonName).string(), json_text(sweep_results_object(results)));
  write_file_atomically((fs::path(dir) / kResultsTexName).string(), results_tex(results));
}

}  // namespace rpb

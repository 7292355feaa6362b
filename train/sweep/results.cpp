// rpb/train/sweep/results.cpp: the sweep's results.csv, results.json and results.tex (its terminal table:
// results_table.cpp).
#include "train/sweep/results.h"

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <sstream>

#include "train/io/atomic_file.h"
#include "train/io/provenance.h"
#include "train/run/eval_record.h"
#include "train/run/run_folder.h"
#include "train/sweep/results_json.h"
#include "train/sweep/results_tex.h"

namespace fs = std::filesystem;

namespace rpb {

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

// A number cell: the value with 10 significant digits, "" where there is none.
std::string number_cell(const std::optional<double>& x) {
  if (!x) return "";
  std::ostringstream os;
  os << std::setprecision(10) << *x;
  return os.str();
}

// The metric columns of seed s's row at length j: ",bytes,bits_per_byte,accuracy", each empty where not defined.
std::string metric_cells(const MethodResult& m, std::size_t s, std::size_t j) {
  const int64_t bytes = m.bits_per_byte(s, j) ? m.bytes_at(s, j) : 0;
  std::string cells(1, ',');
  if (bytes > 0) cells += std::to_string(bytes);
  cells += ',';
  cells += number_cell(m.bits_per_byte(s, j));
  cells += ',';
  return cells + number_cell(m.accuracy_at(s, j));
}

std::string csv(const SweepResult& r, const Provenance& p) {
  std::ostringstream os;
  os << "task,method,position_params,seed,multiplier,length,perplexity,optimal_perplexity,nll,tokens,"
        "mean_attention_distance,protocol,eval_stride,bytes,bits_per_byte,accuracy";
  for (const char* column : kResultsCsvProvenanceColumns) os << "," << column;
  os << ",label,accuracy_every_seed,token_accuracy\n";
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
        os << protocol_cells(m) << metric_cells(m, s, j) << provenance_cells(m, s, p) << ","
           << csv_field(m.shown_label()) << ",," << number_cell(m.token_accuracy_at(s, j)) << "\n";
      }
  return os.str();
}

// An aggregated value: mean (second: false) or std (second: true) of `ms`; "" when none.
std::string aggregate(const std::optional<std::pair<double, double>>& ms, bool second) {
  return number_cell(ms ? std::optional<double>(second ? ms->second : ms->first) : std::nullopt);
}

// An aggregated value of `column` over the seeds (mean_std).
std::string aggregate(const std::vector<std::optional<double>>& column, bool second) {
  return aggregate(mean_std(column), second);
}

// The aggregated metric columns at length j: the mean or std of bytes and bits per byte over the seeds with them,
// and of the accuracy as the table reports it (accuracy_stats: past the first length over the learned seeds).
std::string aggregate_metric_cells(const MethodResult& m, std::size_t j, bool second) {
  std::vector<std::optional<double>> bytes;
  for (std::size_t s = 0; s < m.ppl.size(); ++s)
    bytes.push_back(m.bits_per_byte(s, j) ? std::optional<double>(static_cast<double>(m.bytes_at(s, j)))
                                          : std::nullopt);
  const auto accuracy = accuracy_stats(m.accuracy, m.trained_accuracy, m.threshold());
  std::string cells(1, ',');
  cells += aggregate(bytes, second);
  cells += ',';
  cells += aggregate(m.bits_per_byte_column(j), second);
  cells += ',';
  return cells + aggregate(j < accuracy.size() ? accuracy[j] : std::nullopt, second);
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
           << aggregate(m.distance_column(j), second) << protocol_cells(m) << aggregate_metric_cells(m, j, second)
           << provenance_cells(m, kNoRun, p) << "," << csv_field(m.shown_label()) << ","
           << aggregate(m.has_accuracy() ? m.accuracy_column(j) : std::vector<std::optional<double>>{}, second) << ","
           << aggregate(m.token_accuracy_column(j), second) << "\n";
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

// rpb/train/sweep/results_table.cpp: the sweep's terminal table (format_table, train/sweep/results.h).
#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <set>
#include <sstream>

#include "train/data/task.h"
#include "train/run/eval_record.h"
#include "train/sweep/labels.h"
#include "train/sweep/results.h"

namespace rpb {

namespace {

// The mean and std at length j of a row's [length] means and stds (SweepResultsRow::perplexity_mean ...), or none.
std::optional<std::pair<double, double>> at(const std::vector<std::optional<double>>& mean,
                                            const std::vector<std::optional<double>>& std_dev, std::size_t j) {
  if (j >= mean.size() || !mean[j]) return std::nullopt;
  return std::pair(*mean[j], j < std_dev.size() && std_dev[j] ? *std_dev[j] : 0.0);
}

// A cell of the perplexity table: 2 decimals below 100, else 1.
std::string cell(const std::optional<std::pair<double, double>>& ms, bool with_std) {
  if (!ms) return "n/a";
  std::ostringstream os;
  os << std::fixed << std::setprecision(ms->first < 100 ? 2 : 1) << ms->first;
  if (with_std) os << " ± " << std::setprecision(ms->second < 100 ? 2 : 1) << ms->second;
  return os.str();
}

// A cell of fixed `decimals`, its values times `scale` (100: percent).
std::string fixed_cell(const std::optional<std::pair<double, double>>& ms, bool with_std, int decimals,
                       double scale = 1) {
  if (!ms) return "n/a";
  std::ostringstream os;
  os << std::fixed << std::setprecision(decimals) << ms->first * scale;
  if (with_std) os << " ± " << ms->second * scale;
  return os.str();
}

// "Protocol: ..." under a task's table when a row of it was scored by sliding windows (rows without say
// "nonoverlapping"); "" when every row was scored nonoverlapping, the table as it always was.
std::string protocol_line(const SweepResults& r, const std::string& task) {
  std::set<int64_t> strides;
  for (const SweepResultsRow& m : r.rows)
    if (m.task == task) strides.insert(m.eval_stride);
  if (strides == std::set<int64_t>{0}) return "";
  if (strides.size() == 1) return "Protocol: " + eval_protocol_text(*strides.begin()) + " (every row)\n";
  std::string line = "Protocol: by row:";
  for (const SweepResultsRow& m : r.rows)
    if (m.task == task) {  // appended piecewise: GCC 12 warns (-Wstringop-overflow, a false positive) on " " + ...
      line += ' ';
      line += m.method + " " + eval_protocol_text(m.eval_stride) + ";";
    }
  line.back() = '\n';
  return line;
}

// The rows of one task's tables: consecutive rows of r with the same task.
struct TaskRows {
  std::vector<const SweepResultsRow*> rows;
  bool bytes = false, accuracy = false;  // whether a row has text bytes, an accuracy
  bool tokens = false;                   // whether a row has a per-token accuracy (an algorithmic task)
};

// The line under a task's table: "Task: markov (train length 64, 2 seeds, perplexity mean ± std); optimal ...".
std::string task_line(const SweepResults& r, const TaskRows& t) {
  const SweepResultsRow& m = *t.rows.back();
  std::ostringstream os;
  const bool grid = data::task_dims(m.task) == 2;
  os << "Task: " << task_label(r.task_labels, m.task) << " (train " << (grid ? "grid " : "length ") << r.train_length;
  if (grid) os << " x " << r.train_length << ", columns: grid side";
  os << ", " << r.seeds.size() << " seed" << (r.seeds.size() == 1 ? "" : "s") << ", perplexity "
     << (t.accuracy ? "of the answer tokens, " : "") << "mean ± std)";
  if (m.optimal_perplexity)
    os << "; optimal perplexity " << std::fixed << std::setprecision(3) << *m.optimal_perplexity;
  os << "\n" << protocol_line(r, m.task);
  return os.str();
}

// A table's header: "| Method | Position params | <lead> | <first> at train length | 2x | ... |" and its rule.
std::string table_head(const SweepResults& r, const std::string& task, const std::vector<std::string>& lead,
                       const std::string& first) {
  std::ostringstream os;
  os << "\n| Method | Position params";
  for (const std::string& column : lead) os << " | " << column;
  os << " | " << first << " at train " << (data::task_dims(task) == 2 ? "size" : "length");
  for (std::size_t j = 1; j < r.multipliers.size(); ++j) os << " | " << r.multipliers[j] << "x";
  os << " |\n|---|---";
  for (std::size_t j = 0; j < lead.size() + r.multipliers.size(); ++j) os << "|---";
  os << "|\n";
  return os.str();
}

// A table of the task's rows under table_head: "| <label> | <params> | <cells_of(row)...> |" per row.
template <typename Cells>
std::string rows_table(const SweepResults& r, const TaskRows& t, const std::vector<std::string>& lead,
                       const std::string& first, Cells cells_of) {
  std::string out = table_head(r, t.rows.front()->task, lead, first);
  for (const SweepResultsRow* m : t.rows) {
    out += "| ";  // built piecewise: GCC 12 warns (-Wstringop-overflow, a false positive) on "| " + ...
    out += escape_label(m->label, LabelFormat::markdown);
    out += " | ";
    out += std::to_string(m->position_params);
    for (const std::string& c : cells_of(*m)) {
      out += " | ";
      out += c;
    }
    out += " |\n";
  }
  return out;
}

std::string perplexity_table(const SweepResults& r, const TaskRows& t) {
  const auto cells = [&](const SweepResultsRow& m) {
    const auto mean = m.perplexity_mean(), std_dev = m.perplexity_std();
    std::vector<std::string> out;
    for (std::size_t j = 0; j < r.multipliers.size(); ++j)
      out.push_back(cell(at(mean, std_dev, j), r.seeds.size() > 1));
    return out;
  };
  return rows_table(r, t, {}, "PPL", cells) + "\n" + task_line(r, t);
}

// A row's cells at every length of fixed_cell's `decimals` and `scale`, from its [length] means and stds.
std::vector<std::string> fixed_cells(const SweepResults& r, const std::vector<std::optional<double>>& mean,
                                     const std::vector<std::optional<double>>& std_dev, int decimals, double scale = 1) {
  std::vector<std::string> out;
  for (std::size_t j = 0; j < r.multipliers.size(); ++j)
    out.push_back(fixed_cell(at(mean, std_dev, j), r.seeds.size() > 1, decimals, scale));
  return out;
}

// Bits per byte (3 decimals) of a text task, and the line under it.
std::string bits_per_byte_table(const SweepResults& r, const TaskRows& t) {
  const auto cells = [&](const SweepResultsRow& m) {
    return fixed_cells(r, m.bits_per_byte_mean(), m.bits_per_byte_std(), 3);
  };
  std::string out = rows_table(r, t, {}, "Bits per byte", cells);
  out += "\nBits per byte: ";
  out += task_label(r.task_labels, t.rows.front()->task);
  return out + " (of the text the scored tokens stand for: NLL x tokens / (bytes x ln 2), mean ± std; comparable "
               "across tokenizers)\n";
}

// Passkey accuracy in percent, with the seeds that learned the task (kLearnedAccuracy at the train length), past
// which only they count; a row where none did says "not learned" there, never a number.
std::string accuracy_table(const SweepResults& r, const TaskRows& t) {
  const auto cells = [&](const SweepResultsRow& m) {
    const std::vector<bool> learned = m.learned();
    const auto k = std::count(learned.begin(), learned.end(), true);
    const auto mean = m.accuracy_mean(), std_dev = m.accuracy_std();
    std::vector<std::string> out{std::to_string(k) + "/" + std::to_string(r.seeds.size())};
    for (std::size_t j = 0; j < r.multipliers.size(); ++j) {
      out.push_back(j > 0 && k == 0 ? "not learned" : fixed_cell(at(mean, std_dev, j), r.seeds.size() > 1, 1, 100));
    }
    return out;
  };
  std::string out = rows_table(r, t, {"Learned"}, "Accuracy", cells);
  char threshold[32];
  std::snprintf(threshold, sizeof threshold, "%g", 100 * r.learned_threshold);
  out += "\nAccuracy: ";
  out += task_label(r.task_labels, t.rows.front()->task);
  out += " (accuracy of greedy decoding of the answer, % mean ± std; past the train length over the seeds that "
         "learned the task (>= ";
  return out + threshold + "% at the train length))\n";
}

// Where a seed did not learn the task, the accuracy over every seed, learned or not, marked as such: a pilot's read
// past the train length, which the table above leaves to the learned seeds.
std::string every_seed_table(const SweepResults& r, const TaskRows& t) {
  const auto cells = [&](const SweepResultsRow& m) {
    return fixed_cells(r, m.accuracy_every_seed_mean(), m.accuracy_every_seed_std(), 1, 100);
  };
  std::string out = rows_table(r, t, {}, "Accuracy, every seed,", cells);
  out += "\nAccuracy, every seed: ";
  out += task_label(r.task_labels, t.rows.front()->task);
  return out + " (every seed's accuracy, learned or not, % mean ± std: not a claim of extrapolation where a seed did "
               "not learn the task; the table above counts past the train length the seeds that did)\n";
}

// An algorithmic task's per-token accuracy in percent over every seed, its score first (the mean over the lengths
// past the train length, Delétang et al.'s), then its exact match.
std::string algorithmic_tables(const SweepResults& r, const TaskRows& t) {
  const bool spread = r.seeds.size() > 1;
  const auto tokens = [&](const SweepResultsRow& m) {
    std::vector<std::string> out{fixed_cell(m.score_stats(r.multipliers), spread, 1, 100)};
    for (std::string& c : fixed_cells(r, m.token_accuracy_mean(), m.token_accuracy_std(), 1, 100))
      out.push_back(std::move(c));
    return out;
  };
  const auto exact = [&](const SweepResultsRow& m) {
    return fixed_cells(r, m.accuracy_every_seed_mean(), m.accuracy_every_seed_std(), 1, 100);
  };
  const std::string task = task_label(r.task_labels, t.rows.front()->task);
  return rows_table(r, t, {"Score"}, "Token accuracy", tokens) + "\nToken accuracy: " + task +
         " (per-token accuracy of the scored targets, % mean ± std over every seed; Score: its mean over the lengths "
         "past the train length)\n" + rows_table(r, t, {}, "Exact match", exact) + "\nExact match: " + task +
         " (the samples whose scored targets are all right: greedy decoding's answer, % mean ± std over every seed)\n";
}

}  // namespace

std::string format_table(const SweepResult& r) { return format_table(sweep_results(r)); }

std::string format_table(const SweepResults& r) {
  std::vector<TaskRows> tasks;
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const SweepResultsRow& m = r.rows[i];
    if (i == 0 || m.task != r.rows[i - 1].task) tasks.emplace_back();
    tasks.back().rows.push_back(&m);
    tasks.back().bytes = tasks.back().bytes || m.has_bytes();
    tasks.back().accuracy = tasks.back().accuracy || m.has_accuracy();
    tasks.back().tokens = tasks.back().tokens || m.has_token_accuracy();
  }
  std::string out;
  for (const TaskRows& t : tasks) {
    out += perplexity_table(r, t);
    if (t.bytes) out += bits_per_byte_table(r, t);
    if (t.tokens) {
      out += algorithmic_tables(r, t);
      continue;
    }
    if (t.accuracy) out += accuracy_table(r, t);
    if (t.accuracy && std::any_of(t.rows.begin(), t.rows.end(),
                                  [](const SweepResultsRow* m) { return m->has_unlearned_seed(); }))
      out += every_seed_table(r, t);
  }
  return out;
}

}  // namespace rpb

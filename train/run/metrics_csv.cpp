// rpb/train/run/metrics_csv.cpp: see metrics_csv.h.
#include "train/run/metrics_csv.h"

#include <fcntl.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

#include "train/io/atomic_file.h"

namespace rpb {

namespace {

std::string number(double v) { return std::isnan(v) ? std::string() : fmt::format("{}", v); }

// The cells of `values` at `lengths`, each after a comma (empty where the row has none).
std::string cells(const std::vector<std::pair<int64_t, double>>& values, const std::vector<int64_t>& lengths) {
  std::string s;
  for (const int64_t l : lengths) {
    s += ',';
    for (const auto& [length, v] : values)
      if (length == l) s += number(v);
  }
  return s;
}

// `lengths` and those of `column` in `rows`, sorted and distinct.
std::vector<int64_t> with_rows(std::vector<int64_t> lengths, const std::vector<MetricsRow>& rows,
                               std::vector<std::pair<int64_t, double>> MetricsRow::*column) {
  for (const MetricsRow& r : rows)
    for (const auto& v : r.*column) lengths.push_back(v.first);
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  return lengths;
}

}  // namespace

std::string metrics_csv_header(const std::vector<int64_t>& valid_lengths,
                               const std::vector<int64_t>& accuracy_lengths) {
  std::string h = "step,train_loss";
  for (const int64_t l : valid_lengths) h += ",valid_loss@" + std::to_string(l);
  for (const int64_t l : accuracy_lengths) h += ",valid_accuracy@" + std::to_string(l);
  return h + ",lr,grad_norm,tokens,tokens_per_sec,elapsed_s\n";
}

std::string metrics_csv_line(const MetricsRow& row, const std::vector<int64_t>& valid_lengths, int64_t batch_tokens,
                             const std::vector<int64_t>& accuracy_lengths) {
  std::string s = std::to_string(row.step) + "," + number(row.loss);
  s += cells(row.valid_loss, valid_lengths);
  s += cells(row.valid_accuracy, accuracy_lengths);
  return s + "," + number(row.lr) + "," + number(row.grad_norm) + "," + std::to_string(row.step * batch_tokens) + "," +
         number(row.tokens_per_sec) + "," + number(row.elapsed_s) + "\n";
}

MetricsCsv::MetricsCsv(const std::string& path, const std::vector<int64_t>& valid_lengths,
                       const std::vector<MetricsRow>& rows, int64_t batch_tokens,
                       const std::vector<int64_t>& accuracy_lengths)
    : path_(path),
      lengths_(with_rows(valid_lengths, rows, &MetricsRow::valid_loss)),
      accuracy_lengths_(with_rows(accuracy_lengths, rows, &MetricsRow::valid_accuracy)),
      batch_tokens_(batch_tokens) {
  std::string text = metrics_csv_header(lengths_, accuracy_lengths_);
  for (const MetricsRow& r : rows) text += metrics_csv_line(r, lengths_, batch_tokens_, accuracy_lengths_);
  write_file_atomically(path_, text, "write metrics " + path_);
  fd_ = open_own_file(path_, O_WRONLY | O_APPEND, "metrics " + path_);
}

void MetricsCsv::append(const MetricsRow& row) {
  write_all(fd_.get(), metrics_csv_line(row, lengths_, batch_tokens_, accuracy_lengths_), path_, "metrics " + path_);
}

}  // namespace rpb

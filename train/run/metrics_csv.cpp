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

}  // namespace

std::string metrics_csv_header(const std::vector<int64_t>& valid_lengths) {
  std::string h = "step,train_loss";
  for (const int64_t l : valid_lengths) h += ",valid_loss@" + std::to_string(l);
  return h + ",lr,grad_norm,tokens,tokens_per_sec,elapsed_s\n";
}

std::string metrics_csv_line(const MetricsRow& row, const std::vector<int64_t>& valid_lengths, int64_t batch_tokens) {
  std::string s = std::to_string(row.step) + "," + number(row.loss);
  for (const int64_t l : valid_lengths) {
    s += ",";
    for (const auto& [length, nll] : row.valid_loss)
      if (length == l) s += number(nll);
  }
  return s + "," + number(row.lr) + "," + number(row.grad_norm) + "," + std::to_string(row.step * batch_tokens) + "," +
         number(row.tokens_per_sec) + "," +
         number(row.elapsed_s) + "\n";
}

MetricsCsv::MetricsCsv(const std::string& path, const std::vector<int64_t>& valid_lengths,
                       const std::vector<MetricsRow>& rows, int64_t batch_tokens)
    : path_(path), lengths_(valid_lengths), batch_tokens_(batch_tokens) {
  for (const MetricsRow& r : rows)
    for (const auto& v : r.valid_loss) lengths_.push_back(v.first);
  std::sort(lengths_.begin(), lengths_.end());
  lengths_.erase(std::unique(lengths_.begin(), lengths_.end()), lengths_.end());
  std::string text = metrics_csv_header(lengths_);
  for (const MetricsRow& r : rows) text += metrics_csv_line(r, lengths_, batch_tokens_);
  write_file_atomically(path_, text, "write metrics " + path_);
  fd_ = open_own_file(path_, O_WRONLY | O_APPEND, "metrics " + path_);
}

void MetricsCsv::append(const MetricsRow& row) {
  write_all(fd_.get(), metrics_csv_line(row, lengths_, batch_tokens_), path_, "metrics " + path_);
}

}  // namespace rpb

// rpb/train/checkpoint/checkpoint_metrics.cpp: a checkpoint's /metrics, one column per MetricsRow field and one per
// validation length (see checkpoint.h for the layout), written and read back.
#include "train/checkpoint/checkpoint_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "core/text.h"
#include "train/checkpoint/hdf5_util.h"

namespace rpb {

void check_step(int64_t step, const std::string& what, const std::string& op) {
  CKPT_CHECK(step >= 0, what, " is ", step, "; a step is never negative (the file is damaged)");
}

namespace {

using namespace hdf5;

// The validation columns of /metrics: (length, value) pairs of a MetricsRow, each length a column <prefix><length>.
struct ValidColumn {
  const char* prefix;
  std::vector<std::pair<int64_t, double>> MetricsRow::*values;
};
constexpr ValidColumn kValidColumns[] = {{"valid_loss@", &MetricsRow::valid_loss},
                                         {"valid_accuracy@", &MetricsRow::valid_accuracy}};

// The sorted lengths of `column` in `rows`; each becomes a column /metrics/<prefix><length>.
std::vector<int64_t> valid_lengths_of(const std::vector<MetricsRow>& rows, const ValidColumn& column) {
  std::vector<int64_t> lengths;
  for (const MetricsRow& r : rows)
    for (const auto& v : r.*column.values) lengths.push_back(v.first);
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  return lengths;
}

/// A 1-D dataset of `n` values of `cls` (its length is checked against the other columns).
template <typename T>
std::vector<T> read_column(SafeReader& r, hid_t metrics, const char* name, H5T_class_t cls, hid_t mem_type,
                           std::size_t* n) {
  const std::string& op = r.op();
  const std::string full = std::string("/metrics/") + name;
  CKPT_CHECK(H5Lexists(metrics, name, H5P_DEFAULT) > 0, "dataset ", full, " is missing");
  Hid dset = r.open_dataset(metrics, name, full);
  Hid type = must(H5Dget_type(dset.get()), H5Tclose, op, "cannot read the type of " + full);
  CKPT_CHECK(H5Tget_class(type.get()) == cls, "dataset ", full, ": expected ", type_name(mem_type), ", found ",
             type_name(type.get()));
  const DatasetExtent e = r.extent(dset.get(), sizeof(T), full);
  CKPT_CHECK(e.shape.size() == 1, "dataset ", full, ": expected a 1-D dataset, found shape ", e.shape);
  if (*n == SIZE_MAX) *n = e.numel;
  CKPT_CHECK(e.numel == *n, "dataset ", full, ": expected shape [", *n, "] like /metrics/step, found ", e.shape);
  std::vector<T> values(e.numel);
  read_dataset(dset.get(), full, mem_type, values.data(), e.numel * sizeof(T), op);
  return values;
}

// The length of a /metrics/<prefix><length> column (ValidColumn); nullopt for a name without the prefix. A length
// that is not a positive number is an error naming the dataset.
std::optional<int64_t> valid_column_length(const std::string& name, const std::string& prefix, const std::string& op) {
  if (name.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string digits = name.substr(prefix.size());
  const bool ok = !digits.empty() && digits.size() <= 9 &&
                  std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  CKPT_CHECK(ok && std::stoll(digits) > 0, "dataset /metrics/", printable(name), ": expected ", prefix,
             "<length> with a positive length");
  return std::stoll(digits);
}

}  // namespace

void write_metrics(hid_t root, const std::vector<MetricsRow>& rows, const std::string& op) {
  Hid metrics = create_group(root, "metrics", "/metrics", op);
  const std::size_t n = rows.size();
  std::vector<int64_t> steps(n);
  std::map<std::string, std::vector<double>> columns;  // the float64 columns by name
  for (const char* name : {"loss", "lr", "grad_norm", "tokens_per_sec", "elapsed_s"}) columns[name].resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const MetricsRow& r = rows[i];
    steps[i] = r.step;
    columns["loss"][i] = r.loss;
    columns["lr"][i] = r.lr;
    columns["grad_norm"][i] = r.grad_norm;
    columns["tokens_per_sec"][i] = r.tokens_per_sec;
    columns["elapsed_s"][i] = r.elapsed_s;
  }
  const Shape dims{static_cast<int64_t>(n)};
  write_dataset(metrics.get(), "step", "/metrics/step", H5T_NATIVE_INT64, dims, steps.data(), n * 8, op);
  for (const char* name : {"loss", "lr", "grad_norm", "tokens_per_sec", "elapsed_s"})
    write_dataset(metrics.get(), name, std::string("/metrics/") + name, H5T_NATIVE_DOUBLE, dims, columns[name].data(),
                  n * 8, op);
  for (const ValidColumn& column : kValidColumns)
    for (const int64_t l : valid_lengths_of(rows, column)) {
      const std::string name = column.prefix + std::to_string(l);
      std::vector<double> values(n, std::nan(""));
      for (std::size_t i = 0; i < n; ++i)
        for (const auto& [length, v] : rows[i].*column.values)
          if (length == l) values[i] = v;
      write_dataset(metrics.get(), name, "/metrics/" + name, H5T_NATIVE_DOUBLE, dims, values.data(), n * 8, op);
    }
}

std::vector<MetricsRow> read_metrics(SafeReader& r, hid_t root) {
  const std::string& op = r.op();
  Hid metrics = r.open_group(root, "metrics", "/metrics");
  const hid_t m = metrics.get();
  std::size_t n = SIZE_MAX;
  const auto steps = read_column<int64_t>(r, m, "step", H5T_INTEGER, H5T_NATIVE_INT64, &n);
  for (std::size_t i = 0; i < n; ++i) check_step(steps[i], "entry " + std::to_string(i) + " of /metrics/step", op);
  const auto loss = read_column<double>(r, m, "loss", H5T_FLOAT, H5T_NATIVE_DOUBLE, &n);
  const auto lr = read_column<double>(r, m, "lr", H5T_FLOAT, H5T_NATIVE_DOUBLE, &n);
  const auto grad_norm = read_column<double>(r, m, "grad_norm", H5T_FLOAT, H5T_NATIVE_DOUBLE, &n);
  const auto tps = read_column<double>(r, m, "tokens_per_sec", H5T_FLOAT, H5T_NATIVE_DOUBLE, &n);
  std::vector<double> elapsed(n, 0.0);  // files of before elapsed_s lack it
  if (H5Lexists(m, "elapsed_s", H5P_DEFAULT) > 0)
    elapsed = read_column<double>(r, m, "elapsed_s", H5T_FLOAT, H5T_NATIVE_DOUBLE, &n);
  std::vector<MetricsRow> rows;
  for (std::size_t i = 0; i < n; ++i) rows.push_back({steps[i], loss[i], lr[i], grad_norm[i], tps[i], elapsed[i]});
  for (const ValidColumn& c : kValidColumns) {
    std::vector<std::pair<int64_t, std::vector<double>>> valid;  // sorted by length, as written
    for (const std::string& name : link_names(m, "/metrics", op))
      if (const auto length = valid_column_length(name, c.prefix, op))
        valid.emplace_back(*length, read_column<double>(r, m, name.c_str(), H5T_FLOAT, H5T_NATIVE_DOUBLE, &n));
    std::sort(valid.begin(), valid.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 0; i < n; ++i)
      for (const auto& [length, column] : valid)
        if (!std::isnan(column[i])) (rows[i].*c.values).emplace_back(length, column[i]);
  }
  return rows;
}

}  // namespace rpb

#include "nn/position/table_scheme.h"

#include <algorithm>
#include <cmath>

#include "core/autograd.h"
#include "nn/init.h"
#include "nn/position/common.h"
#include "nn/position/untrained.h"

namespace rpb::nn {

TableScheme::TableScheme(const PositionOptions& o, int64_t rows, Generator& gen, bool truncated)
    : o_(o),
      table(register_parameter("table", Tensor::zeros({rows, o.heads}, o.dtype))),
      trained(register_buffer("trained", Tensor::zeros({rows}, o.dtype))) {
  if (truncated) init::trunc_normal_(table, gen, o.init_std);
  else init::normal_(table, gen, o.init_std);
}

Tensor TableScheme::index(const Positions& p) const {
  check(p, name().c_str());
  return cache_.get({p.q_len, p.k_len, p.q_offset, p.height, p.width}, [&] { return make_index(p); }).clone();
}

std::vector<bool> TableScheme::trained_rows() const {
  std::vector<bool> flags;
  for (const double v : trained.to_vector()) flags.push_back(v != 0.0);
  return flags;
}

void TableScheme::note_trained(const Positions& p) const {
  if (!is_training() || !grad_enabled()) return;
  const std::vector<int64_t> rows = relative_rows(p);  // column m: key - query = m - (q_offset + q_len - 1)
  const std::size_t unmasked =
      !p.is_grid() && o_.causal ? std::min(rows.size(), static_cast<std::size_t>(p.q_offset + p.q_len)) : rows.size();
  mark_trained(std::vector<int64_t>(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(unmasked)));
}

void TableScheme::mark_trained(const std::vector<int64_t>& rows) const {
  std::vector<double> marks = trained.to_vector();
  bool changed = false;
  for (const int64_t r : rows) {
    double& mark = marks[static_cast<std::size_t>(r)];
    changed = changed || mark == 0.0;
    mark = 1.0;
  }
  if (changed) trained.copy_(position_detail::from_doubles(trained.shape(), marks, trained.dtype()));
}

RelativeBias TableScheme::relative_bias_at(const Positions& p) const {
  check(p, name().c_str(), true);
  const Positions span = Positions::line(p.span(), p.span());
  const std::vector<int64_t> rows = relative_rows(span);  // column m: key - query = m - (S - 1)
  if (is_training() && grad_enabled()) {  // the rows of the offsets the unmasked pairs read
    const std::vector<int64_t>& at = *p.at;
    std::vector<bool> read(rows.size(), false);
    for (std::size_t i = 0; i < at.size(); ++i)
      for (std::size_t j = 0; j < (o_.causal ? i + 1 : at.size()); ++j)
        read[static_cast<std::size_t>(at[j] - at[i] + span.k_len - 1)] = true;
    std::vector<int64_t> marked;
    for (std::size_t m = 0; m < rows.size(); ++m)
      if (read[m]) marked.push_back(rows[m]);
    mark_trained(marked);
  }
  const Tensor t = read_table();
  const Tensor index = Tensor::indices({static_cast<int64_t>(rows.size())}, rows);
  RelativeBias b(permute(index_select(t, index.to(t.device())), {1, 0}));  // (2 S - 1, H) -> (H, 2 S - 1)
  b.positions = *p.at;
  return b;
}

std::vector<int64_t> TableScheme::nearest_rows(const std::vector<bool>& flags) const {
  if (info().dims != 2) return nearest_trained_rows(row_spans(), flags);
  const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(flags.size()))));
  return nearest_trained_rows_2d(side / 2, flags);
}

Tensor TableScheme::read_table() const {
  if (is_training() || o_.untrained == Untrained::keep) return table;
  const std::vector<bool> flags = trained_rows();
  RPB_CHECK(std::find(flags.begin(), flags.end(), true) != flags.end(), name().c_str(),
            "position.untrained = \"nearest\" needs the rows training read, and this model records none (a checkpoint "
            "written before rpb recorded them, or an untrained model); evaluate it with position.untrained = \"keep\"");
  const Tensor rows = nearest_cache_.get(std::vector<int64_t>(flags.begin(), flags.end()), [&] {
    const std::vector<int64_t> v = nearest_rows(flags);
    return Tensor::indices({static_cast<int64_t>(v.size())}, v);
  });                                   // (rows) i64, rebuilt only when the trained rows change
  return index_select(table, rows.to(table.device()));  // (rows, heads)
}

Tensor TableScheme::bias(const Positions& p) const {
  check(p, name().c_str());
  note_trained(p);
  const Tensor idx = cache_.get({p.q_len, p.k_len, p.q_offset, p.height, p.width}, [&] { return make_index(p); });
  const Tensor t = read_table();
  return permute(index_select(t, idx.to(t.device())), {2, 0, 1});  // (q, k, H) -> (H, q, k)
}

RelativeBias TableScheme::relative_bias(const Positions& p) const {
  check(p, name().c_str());
  note_trained(p);
  const Tensor rows = rel_cache_.get({p.q_len, p.k_len, p.q_offset, p.height, p.width}, [&] {
    const std::vector<int64_t> v = relative_rows(p);
    return Tensor::indices({static_cast<int64_t>(v.size())}, v);
  });                                                                     // (R) i64: the table row of each offset
  const Tensor t = read_table();
  const Tensor values = permute(index_select(t, rows.to(t.device())), {1, 0});  // (R, H) -> (H, R)
  if (p.is_grid()) return RelativeBias(values, {p.height, p.width});
  return RelativeBias(values);
}

std::vector<report::RowSpan> TableScheme::row_spans() const { return {}; }

std::string TableScheme::report(const std::string& prefix) const {
  const std::string tables = info().dims == 2 ? report::heatmaps(prefix + "table", table, report_title())
                                              : report::table_per_head(prefix + "table", table, row_spans(), report_title());
  const std::vector<bool> flags = trained_rows();
  std::string never;
  int64_t count = 0;
  for (std::size_t r = 0; r < flags.size(); ++r)
    if (!flags[r] && ++count <= 64) {
      if (!never.empty()) never += ' ';
      never += std::to_string(r);
    }
  std::string line = "\n" + prefix + "trained: ";
  if (count == static_cast<int64_t>(flags.size()))
    line += "no row recorded as trained (a checkpoint written before rpb recorded them, or an untrained model)";
  else if (count == 0)
    line += "every row was read in training";
  else
    line += std::to_string(count) + " of " + std::to_string(flags.size()) + " rows never read in training: " + never +
            (count > 64 ? " ..." : "") + "; position.untrained = " + untrained_name(o_.untrained) +
            (o_.untrained == Untrained::nearest ? " (evaluation reads each one's nearest trained row)" : "");
  return tables + line + "\n";
}

}  // namespace rpb::nn

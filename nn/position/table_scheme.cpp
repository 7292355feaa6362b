#include "nn/position/table_scheme.h"

#include "nn/init.h"

namespace rpb::nn {

TableScheme::TableScheme(const PositionOptions& o, int64_t rows, Generator& gen, bool truncated)
    : o_(o), table(register_parameter("table", Tensor::zeros({rows, o.heads}, o.dtype))) {
  if (truncated) init::trunc_normal_(table, gen, o.init_std);
  else init::normal_(table, gen, o.init_std);
}

Tensor TableScheme::index(const Positions& p) const {
  check(p, name().c_str());
  return cache_.get({p.q_len, p.k_len, p.q_offset, p.height, p.width}, [&] { return make_index(p); }).clone();
}

Tensor TableScheme::bias(const Positions& p) const {
  check(p, name().c_str());
  const Tensor idx = cache_.get({p.q_len, p.k_len, p.q_offset, p.height, p.width}, [&] { return make_index(p); });
  return permute(index_select(table, idx), {2, 0, 1});  // (q, k, H) -> (H, q, k)
}

RelativeBias TableScheme::relative_bias(const Positions& p) const {
  check(p, name().c_str());
  const Tensor rows = rel_cache_.get({p.q_len, p.k_len, p.q_offset, p.height, p.width}, [&] {
    const std::vector<int64_t> v = relative_rows(p);
    return Tensor::indices({static_cast<int64_t>(v.size())}, v);
  });                                                              // (R) i64: the table row of each offset
  const Tensor values = permute(index_select(table, rows), {1, 0});  // (R, H) -> (H, R)
  if (p.is_grid()) return RelativeBias(values, {p.height, p.width});
  return RelativeBias(values);
}

std::vector<report::RowSpan> TableScheme::row_spans() const { return {}; }

std::string TableScheme::report(const std::string& prefix) const {
  if (info().dims == 2) return report::heatmaps(prefix + "table", table, report_title());
  return report::table_per_head(prefix + "table", table, row_spans(), report_title());
}

}  // namespace rpb::nn

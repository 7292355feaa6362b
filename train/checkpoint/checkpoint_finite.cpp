#include "train/checkpoint/checkpoint_finite.h"

#include <cmath>
#include <sstream>

#include "core/text.h"

namespace rpb {

namespace {

// "[i, j, ...]" of the row-major flat index `flat` in `shape`.
std::string index_text(const Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(static_cast<std::size_t>(shape.size()));
  for (int d = shape.size(); d-- > 0;) {
    idx[static_cast<std::size_t>(d)] = flat % shape[d];
    flat /= shape[d];
  }
  std::string s = "[";
  for (std::size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

template <typename T>
void scan(const Tensor& t, const std::string& dataset, std::vector<NonFiniteDataset>& out) {
  const T* p = t.data<T>();
  NonFiniteDataset found{dataset, "", 0, 0, t.numel()};
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(p[i]) && found.count++ == 0) {
      found.index = index_text(t.shape(), i);
      found.value = static_cast<double>(p[i]);
    }
  if (found.count > 0) out.push_back(found);
}

void scan_group(const nn::NamedTensors& tensors, const std::string& group, std::vector<NonFiniteDataset>& out) {
  for (const auto& [name, t] : tensors) {
    const std::string dataset = group + "/" + printable(name);
    if (t.dtype() == DType::f32) scan<float>(t, dataset, out);
    else if (t.dtype() == DType::f64) scan<double>(t, dataset, out);
  }
}

}  // namespace

std::string NonFiniteDataset::line() const {
  std::ostringstream os;
  os << dataset << index << " is " << (std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf") << " (" << count
     << " of " << numel << " values non-finite)";
  return os.str();
}

std::vector<NonFiniteDataset> non_finite_datasets(const Checkpoint& c) {
  std::vector<NonFiniteDataset> out;
  scan_group(c.params, "/params", out);
  scan_group(c.buffers, "/buffers", out);
  scan_group(c.optim.tensors, "/optim", out);
  return out;
}

void check_finite(const Checkpoint& c, const std::string& file) {
  const std::vector<NonFiniteDataset> bad = non_finite_datasets(c);
  if (bad.empty()) return;
  const std::size_t more = bad.size() - 1;
  throw Error("checkpoint " + printable(file) + ": " + bad.front().line() +
              (more ? "; and " + std::to_string(more) + " more dataset" + (more > 1 ? "s" : "") : std::string()) +
              "; a model with non-finite numbers is not evaluated, resumed or sampled (a diverged run or a damaged "
              "file: `rpb inspect " + printable(file) + "` lists every non-finite dataset)");
}

}  // namespace rpb

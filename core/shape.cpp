#include "core/shape.h"

#include <algorithm>
#include <sstream>

namespace rpb {

Shape::Shape(std::initializer_list<int64_t> dims) {
  for (int64_t v : dims) push_back(v);
}

void Shape::push_back(int64_t v) {
  RPB_CHECK(n_ < kMaxDims, "shape", "at most ", kMaxDims, " dimensions are supported");
  RPB_CHECK(v >= 0, "shape", "negative extent ", v);
  d_[n_++] = v;
}

void Shape::insert(int pos, int64_t v) {
  RPB_CHECK(pos >= 0 && pos <= n_, "shape", "insert position ", pos, " outside [0, ", n_, "]");
  push_back(0);
  for (int i = n_ - 1; i > pos; --i) d_[i] = d_[i - 1];
  d_[pos] = v;
}

void Shape::erase(int pos) {
  RPB_CHECK(pos >= 0 && pos < n_, "shape", "erase position ", pos, " outside [0, ", n_, ")");
  for (int i = pos; i + 1 < n_; ++i) d_[i] = d_[i + 1];
  --n_;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < n_; ++i) n *= d_[i];
  return n;
}

int Shape::axis(int a) const {
  int r = a < 0 ? a + n_ : a;
  RPB_CHECK(r >= 0 && r < n_, "shape", "axis ", a, " out of range for shape ", to_string());
  return r;
}

std::string Shape::to_string() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

bool operator==(const Shape& a, const Shape& b) {
  return a.n_ == b.n_ && std::equal(a.begin(), a.end(), b.begin());
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  os << '[';
  for (int i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  return os << ']';
}

Shape contiguous_strides(const Shape& s) {
  Shape st = s;
  int64_t acc = 1;
  for (int i = s.size() - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const int n = std::max(a.size(), b.size());
  Shape out;
  for (int i = 0; i < n; ++i) {
    const int ia = i - (n - a.size()), ib = i - (n - b.size());
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    RPB_CHECK(da == db || da == 1 || db == 1, op, "shapes ", a, " and ", b, " do not broadcast");
    out.push_back(da == 1 ? db : da);
  }
  return out;
}

Shape broadcast_strides(const Shape& in, const Shape& out) {
  RPB_CHECK(in.size() <= out.size(), "broadcast", "input shape ", in, " has more dims than output ", out);
  Shape st = out;
  int64_t acc = 1;
  for (int d = out.size() - 1; d >= 0; --d) {
    const int sd = d - (out.size() - in.size());
    const int64_t e = sd >= 0 ? in[sd] : 1;
    RPB_CHECK(e == out[d] || e == 1, "broadcast", "input shape ", in, " does not broadcast to ", out);
    st[d] = e == 1 ? 0 : acc;
    acc *= e;
  }
  return st;
}

}  // namespace rpb
